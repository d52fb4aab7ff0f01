"""reduce_verify: bit-reproducible gradient reduction for PyTorch.

- digest(tensor): the XXH3-128 digest `reduce-verify digest` prints for the same bytes;
- reduce(stacked, op, contract): a W × n table reduced under fixed-order or exact;
- ddp.fixed_order_hook / ddp.exact_hook with ddp.HookState: DDP communication hooks;
- ddp.register(model, hook, state): registers a hook after checking the model;
- Recorder: dumps recorded steps' per-rank buckets, which `reduce-verify replay DIR` checks
  against their manifest and reduces again (Recorder.wrap(hook), or HookState(recorder=...));
- Trail: an always-on digest trail of a DDP run (Trail.wrap(hook)), for `reduce-verify audit`;
- ExactGradAccumulator: exact gradient accumulation over micro-batches and ranks;
- fsdp.register(model, contract): FSDP2's reduce-scatter under a contract, exact accumulation;
- clip_grad_norm_: gradient clipping by the exact global norm (plain, DDP and FSDP gradients);
- tool_path(): the reduce-verify binary the wheel carries (also `python -m reduce_verify`).

The package reaches the core through libreduce_verify_c.so's C ABI (ctypes) only."""

from . import ddp, fsdp
from .accumulate import ExactGradAccumulator
from .clip import clip_grad_norm_
from ._library import built_with_cuda, library_info, library_path
from .errors import (InputError, InternalError, LibraryNotFound, ReduceVerifyError,
                     RuntimeFailure, Unsupported, WorldDisagreement, WorldTimeout)
from .recorder import Recorder, read_manifest
from ._tool import tool_path
from .trail import Trail
from .tensors import digest, reduce

__version__ = "0.1.0"

__all__ = [
    "ExactGradAccumulator", "InputError", "InternalError", "LibraryNotFound", "Recorder",
    "ReduceVerifyError", "RuntimeFailure", "Trail", "Unsupported", "WorldDisagreement",
    "WorldTimeout", "built_with_cuda", "clip_grad_norm_", "ddp", "digest", "fsdp",
    "library_info", "library_path",
    "read_manifest", "reduce", "tool_path",
]
