"""DDP communication hooks whose all-reduce bits depend only on the addends and W.

    from reduce_verify.ddp import HookState, fixed_order_hook, register
    model = torch.nn.parallel.DistributedDataParallel(model)
    register(model, fixed_order_hook, HookState(op="mean"))   # or model.register_comm_hook
"""

from .hooks import exact_hook, fixed_order_hook, register, shard_length
from .state import HookState

__all__ = ["HookState", "exact_hook", "fixed_order_hook", "register", "shard_length"]
