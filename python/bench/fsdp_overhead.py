"""What reduce_verify.fsdp costs (docs/fsdp.md): the step time of FSDP2 with our reduce-scatter
against FSDP2's default reduce-scatter, on the model of ddp_hook_overhead.py (a ~100 M-parameter
MLP, each Linear its own FSDPModule), W processes over NCCL, one GPU each (W = the visible GPUs;
FSDP2 calls no reduce-scatter in a world of one, so W >= 2).

A step: zero_grad, K micro-batches of batch / (W K) samples a rank (forward, MSE, backward), the
SGD step; synchronised. Variants: "default" (FSDP's reduce-scatter; K > 1: float accumulation,
set_requires_gradient_sync on the last micro-batch only), "fixed-order" and "exact" (ours,
register(); K > 1: exact only, micro_batch()). They are interleaved in rounds; the figure is the
ratio of the medians, rank 0's (the issue's goal: <= 1.10 at batch 1024 and above). It measures,
never asserts.

    python3 python/bench/fsdp_overhead.py --out "$OUT"      (REDUCE_VERIFY_LIB set)
    python3 python/bench/fsdp_overhead.py --device cpu --world 2 --width 256 --depth 2 \
        --batches 64 --rounds 2 --steps 2                   (a smoke run over Gloo)
"""

import argparse
import json
import os
import pathlib
import statistics
import sys
import tempfile
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import reduce_verify  # noqa: E402
from ddp_hook_overhead import batch, make_model, synchronize  # noqa: E402

DTYPES = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16}


def parse_arguments():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=os.environ.get("OUT", "."), help="folder for the JSON")
    parser.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    parser.add_argument("--world", type=int, default=0, help="ranks (0: the visible GPUs)")
    parser.add_argument("--width", type=int, default=4096)
    parser.add_argument("--depth", type=int, default=6)
    parser.add_argument("--batches", default="256,1024,4096", help="global batch sizes")
    parser.add_argument("--micro-batches", type=int, default=1, help="K per step and rank")
    parser.add_argument("--reduce-dtype", default="f32", choices=sorted(DTYPES),
                        help="MixedPrecisionPolicy(param_dtype=reduce_dtype=...) unless f32")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--steps", type=int, default=6, help="steps per variant and round")
    parser.add_argument("--warmup", type=int, default=3)
    return parser.parse_args()


def make(args, device, world, variant):
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
    model = make_model(args.width, args.depth).to(device)
    mesh = init_device_mesh(device.type, (world,))
    policy = MixedPrecisionPolicy()
    if args.reduce_dtype != "f32":
        dtype = DTYPES[args.reduce_dtype]
        policy = MixedPrecisionPolicy(param_dtype=dtype, reduce_dtype=dtype)
    for layer in model:
        if isinstance(layer, torch.nn.Linear):
            fully_shard(layer, mesh=mesh, mp_policy=policy)
    fully_shard(model, mesh=mesh, mp_policy=policy)
    reduction = None
    if variant != "default":
        reduction = reduce_verify.fsdp.register(model, contract=variant)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-4)
    return model, optimizer, reduction


def step(model, optimizer, reduction, micro):
    optimizer.zero_grad(set_to_none=True)
    for k, (x, y) in enumerate(micro):
        last = k == len(micro) - 1
        if reduction is not None and len(micro) > 1:
            reduction.micro_batch(last=last)
        elif len(micro) > 1:
            model.set_requires_gradient_sync(last)
        torch.nn.functional.mse_loss(model(x).float(), y).backward()
    optimizer.step()


def rank_main(rank, world, args, store, out):
    device = torch.device("cpu")
    if args.device == "cuda":
        device = torch.device("cuda", rank)
        torch.cuda.set_device(device)
    dist.init_process_group("nccl" if device.type == "cuda" else "gloo",
                            init_method=f"file://{store}", rank=rank, world_size=world)
    variants = ["default", "fixed-order", "exact"] if args.micro_batches == 1 else \
        ["default", "exact"]
    results = []
    for size in (int(b) for b in args.batches.split(",")):
        per = size // (world * args.micro_batches)
        micro = [batch(per, 0, world * j + rank, device) for j in range(args.micro_batches)]
        made = {name: make(args, device, world, name) for name in variants}
        for model, optimizer, reduction in made.values():
            for _ in range(args.warmup):
                step(model, optimizer, reduction, micro)
        times = {name: [] for name in made}
        for _ in range(args.rounds):
            for name, (model, optimizer, reduction) in made.items():
                for _ in range(args.steps):
                    synchronize(device)
                    dist.barrier()
                    began = time.perf_counter()
                    step(model, optimizer, reduction, micro)
                    synchronize(device)
                    times[name].append((time.perf_counter() - began) * 1e3)
        medians = {name: statistics.median(t) for name, t in times.items()}
        entry = {"batch": size, "world": world, "micro_batches": args.micro_batches,
                 "reduce_dtype": args.reduce_dtype,
                 "parameters": sum(p.numel() for p in make_model(args.width, args.depth)
                                   .parameters()),
                 "step_ms_median": {k: round(v, 3) for k, v in medians.items()},
                 "ratio_to_default": {k: round(v / medians["default"], 3)
                                      for k, v in medians.items() if k != "default"}}
        results.append(entry)
        if rank == 0:
            print(f"batch {size}, W = {world}, K = {args.micro_batches}, {args.reduce_dtype}: "
                  f"{entry['step_ms_median']} ms; ours / default {entry['ratio_to_default']}",
                  flush=True)
        del made, micro
    if rank == 0:
        report = {"device": torch.cuda.get_device_name(device) if device.type == "cuda"
                  else "cpu", "torch": torch.__version__,
                  "library": reduce_verify.library_info(), "results": results}
        name = f"fsdp-overhead-w{world}-k{args.micro_batches}-{args.reduce_dtype}.json"
        pathlib.Path(out).mkdir(parents=True, exist_ok=True)
        (pathlib.Path(out) / name).write_text(json.dumps(report, indent=1))
    dist.barrier()
    os._exit(0)  # no teardown to wait on: the report is written


def main():
    args = parse_arguments()
    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
    world = args.world or (torch.cuda.device_count() if args.device == "cuda" else 2)
    if world < 2:
        print(f"fsdp_overhead: FSDP2 calls no reduce-scatter in a world of {world}: needs two "
              "GPUs or more (or --device cpu)", file=sys.stderr)
        return 77
    with tempfile.TemporaryDirectory(prefix="rv-fsdp-bench-") as scratch:
        mp.start_processes(rank_main, args=(world, args, f"{scratch}/store", args.out),
                           nprocs=world, join=True, start_method="spawn")
    return 0


if __name__ == "__main__":
    sys.exit(main())
