"""The training loop of PyTorch's DDP tutorial with a reduce_verify hook, for torchrun:

    torchrun --standalone --nproc_per_node 2 --redirects 2 --tee 2 \
        -m reduce_verify.example --record recording

Every rank prints the digest of its final parameters (the same on every rank, and the same
on every run of the same W, bucket layout or not); --record DIR records step 2's buckets for
`reduce-verify digest --inputs` replays (docs/pytorch.md). Gloo on CPU tensors."""

import argparse
import os
from typing import List, Optional

import torch
import torch.distributed as dist

import reduce_verify
from reduce_verify.ddp import HookState, exact_hook, fixed_order_hook, register


class ToyModel(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.net1 = torch.nn.Linear(10, 10)
        self.relu = torch.nn.ReLU()
        self.net2 = torch.nn.Linear(10, 5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net2(self.relu(self.net1(x)))


def main(argv: Optional[List[str]] = None) -> None:
    parser = argparse.ArgumentParser(description="DDP with a reduce_verify hook (torchrun)")
    parser.add_argument("--hook", choices=("fixed-order", "exact"), default="fixed-order")
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--record", metavar="DIR", help="record step 2's buckets into DIR")
    args = parser.parse_args(argv)
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")  # torchrun --standalone: one host
    torch.set_num_threads(1)
    dist.init_process_group("gloo")  # RANK, WORLD_SIZE, MASTER_ADDR/PORT from torchrun
    rank = dist.get_rank()
    torch.manual_seed(0)  # the same initial parameters on every rank
    model = torch.nn.parallel.DistributedDataParallel(ToyModel())
    recorder = reduce_verify.Recorder(args.record, steps=2) if args.record else None
    hook = fixed_order_hook if args.hook == "fixed-order" else exact_hook
    register(model, hook if recorder is None else recorder.wrap(hook), HookState(op="mean"))
    loss_fn = torch.nn.MSELoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.001)
    for step in range(args.steps):
        generator = torch.Generator().manual_seed(1000 * step + rank)
        optimizer.zero_grad()
        outputs = model(torch.randn(20, 10, generator=generator))
        loss_fn(outputs, torch.randn(20, 5, generator=generator)).backward()
        optimizer.step()
    if recorder is not None:
        recorder.close()
    flat = torch.cat([p.detach().flatten() for p in model.parameters()])
    print(f"rank {rank}: {args.hook} parameters {reduce_verify.digest(flat)}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
