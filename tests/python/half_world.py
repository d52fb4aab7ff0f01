"""A world of two Gloo processes training small bfloat16 and float16 models under
reduce_verify's hooks (one recorded step each), and an exact accumulator over bfloat16
gradients split unevenly over the ranks. Each rank writes what it saw to
results-half-rank<R>.json; test_half.py compares it with single-process references."""

import json
import os
import pathlib

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn.parallel.distributed as ddp_module

import reduce_verify
from reduce_verify.ddp import HookState, exact_hook, fixed_order_hook, register

STEPS = 3
RECORD_STEP = 1
DTYPES = {"bf16": torch.bfloat16, "f16": torch.float16}
CONFIGS = [{"name": f"{hook}-{dtype}", "hook": hook, "dtype": dtype}
           for dtype in DTYPES for hook in ("fixed-order", "exact")]


class Elementwise(torch.nn.Module):
    """y = Σ_i x_i · w_i + b: only elementwise products and sums, which torch 1.13's CPU
    kernels have for float16 (its matrix products have not)."""

    def __init__(self, dtype):
        super().__init__()
        generator = torch.Generator().manual_seed(77)
        self.w = torch.nn.Parameter(torch.randn(24, 300, generator=generator).to(dtype))
        self.b = torch.nn.Parameter(torch.zeros(300, dtype=dtype))

    def forward(self, x):
        return (x[:, :, None] * self.w[None]).sum(1) + self.b


def batch(step, rank, dtype):
    generator = torch.Generator().manual_seed(1000 * step + rank)
    return (torch.randn(4, 24, generator=generator).to(dtype),
            torch.randn(4, 300, generator=generator).to(dtype))


def loss_of(model, step, rank, dtype):
    x, y = batch(step, rank, dtype)
    return ((model(x) - y) ** 2).mean()


def flat(tensors):
    return torch.cat([t.detach().reshape(-1) for t in tensors])


def train(config, rank, directory):
    dtype = DTYPES[config["dtype"]]
    model = torch.nn.parallel.DistributedDataParallel(Elementwise(dtype), bucket_cap_mb=0.01)
    recorder = reduce_verify.Recorder(directory / f"recording-{config['name']}",
                                      steps=[RECORD_STEP])
    hook = fixed_order_hook if config["hook"] == "fixed-order" else exact_hook
    register(model, hook, HookState(op="mean", recorder=recorder))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    for step in range(STEPS):
        optimizer.zero_grad(set_to_none=False)
        loss_of(model, step, rank, dtype).backward()
        optimizer.step()
    recorder.close()
    return {"name": config["name"], "digest": reduce_verify.digest(flat(model.parameters())),
            "grad_dtype": str(model.module.w.grad.dtype), "recorded": recorder.local}


def accumulate(rank):
    """Micro-batches 0 and 1 on rank 0, 2 on rank 1: the mean over all three."""
    model = Elementwise(torch.bfloat16)
    acc = reduce_verify.ExactGradAccumulator(model, dist.group.WORLD)
    for micro_batch in ((0, 1) if rank == 0 else (2,)):
        loss_of(model, 0, micro_batch, torch.bfloat16).backward()
        acc.add()
    total = acc.reduce(mean_over=3)
    return {"total": total, "dtype": str(model.w.grad.dtype),
            "digest": reduce_verify.digest(flat([model.w.grad, model.b.grad]))}


def _main(rank, world, store, directory):
    torch.set_num_threads(1)
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    # torch 1.13's Gloo cannot broadcast bfloat16, which DDP's constructor does to make the
    # ranks' parameters equal: they are equal here already (seeded), so the broadcast is
    # skipped. Nothing else of DDP moves bfloat16 through Gloo: the hooks move bytes.
    ddp_module._sync_module_states = lambda *args, **kwargs: None
    dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=world)
    directory = pathlib.Path(directory)
    results = {"train": [train(config, rank, directory) for config in CONFIGS],
               "accumulate": accumulate(rank)}
    dist.barrier()
    dist.destroy_process_group()
    (directory / f"results-half-rank{rank}.json").write_text(json.dumps(results))


def run(directory, world=2):
    mp.set_forkserver_preload(["torch", "torch.distributed", "reduce_verify", "half_world"])
    directory = pathlib.Path(directory)
    mp.start_processes(_main, args=(world, str(directory / "store-half"), str(directory)),
                       nprocs=world, join=True, start_method="forkserver")
    return [json.loads((directory / f"results-half-rank{r}.json").read_text())
            for r in range(world)]


def replay(config, world=2):
    """The same training in one process: every rank's gradients computed here and reduced
    through reduce_verify.reduce in the model's dtype. The digest of the final parameters."""
    torch.set_num_threads(1)
    dtype = DTYPES[config["dtype"]]
    model = Elementwise(dtype)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    for step in range(STEPS):
        per_rank = []
        for rank in range(world):
            model.zero_grad(set_to_none=step == 0)
            loss_of(model, step, rank, dtype).backward()
            per_rank.append(flat([p.grad for p in model.parameters()]))
        reduced = reduce_verify.reduce(torch.stack(per_rank), "mean", config["hook"])
        offset = 0
        for p in model.parameters():
            p.grad.copy_(reduced[offset:offset + p.numel()].view_as(p))
            offset += p.numel()
        optimizer.step()
    return reduce_verify.digest(flat(model.parameters()))
