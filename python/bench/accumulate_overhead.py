"""What exact gradient accumulation costs (docs/DESIGN.md §11): the step time of
ExactGradAccumulator against DDP with float accumulation, on the model of ddp_hook_overhead.py
(a ~100 M-parameter MLP), one CUDA device, an NCCL world of one.

A step: zero_grad, K micro-batches of batch / K samples (forward, MSE, backward; every one
under no_sync() but, for DDP's float accumulation, the last, whose backward all-reduces the
float sums), then for the exact path acc.add() after each backward and acc.reduce(mean_over=K)
before the SGD step; synchronised. The variants are interleaved in rounds; the figure is the
ratio of the medians (the issue's target: <= 1.2x at batch 1024 and above).

    python3 python/bench/accumulate_overhead.py --out "$OUT"   (REDUCE_VERIFY_LIB set)
    python3 python/bench/accumulate_overhead.py --device cpu --width 256 --depth 2 --batches 64
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

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import reduce_verify  # noqa: E402
from ddp_hook_overhead import batch, make_model, synchronize  # noqa: E402


DTYPES = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16}


def parse_arguments():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=os.environ.get("OUT", "."), help="folder for the JSON")
    parser.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    parser.add_argument("--width", type=int, default=4096)
    parser.add_argument("--depth", type=int, default=6)
    parser.add_argument("--batches", default="256,1024,4096", help="global batch sizes")
    parser.add_argument("--micro-batches", type=int, default=4, help="K per step")
    parser.add_argument("--dtype", default="f32", choices=sorted(DTYPES),
                        help="the model's parameters and gradients (bf16/f16: the half finish)")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--steps", type=int, default=6, help="steps per variant and round")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--phases", action="store_true",
                        help="also time each phase of the exact path's step (synchronised, so "
                        "slower than the step itself) and each C ABI call, into the JSON")
    parser.add_argument("--profile", action="store_true",
                        help="also run torch.profiler over a few steps of each variant and "
                        "write its tables (host calls and GPU kernels) to profile-BATCH.txt")
    return parser.parse_args()


def make(args, device, exact):
    model = make_model(args.width, args.depth).to(device=device, dtype=DTYPES[args.dtype])
    ddp = torch.nn.parallel.DistributedDataParallel(
        model, device_ids=[device.index] if device.type == "cuda" else None)
    accumulator = reduce_verify.ExactGradAccumulator(ddp, dist.group.WORLD) if exact else None
    return ddp, torch.optim.SGD(ddp.parameters(), lr=1e-4), accumulator


def step(ddp, optimizer, accumulator, micro_batches):
    optimizer.zero_grad(set_to_none=True)
    k = len(micro_batches)
    for index, (x, y) in enumerate(micro_batches):
        if accumulator is not None:
            with ddp.no_sync():
                torch.nn.functional.mse_loss(ddp(x), y).backward()
            accumulator.add()
        elif index < k - 1:
            with ddp.no_sync():
                (torch.nn.functional.mse_loss(ddp(x), y) / k).backward()
        else:
            (torch.nn.functional.mse_loss(ddp(x), y) / k).backward()
    if accumulator is not None:
        accumulator.reduce(mean_over=k)
    optimizer.step()


def phases(args, device, micro):
    """Where an exact step's time goes: each C ABI call of the accumulator and each phase of
    the step, synchronised before and after (a diagnosis, not the step time)."""
    from reduce_verify import accumulate
    lib = accumulate._lib()
    spent = {}

    def timed(name, function):
        def call(*arguments, **options):
            synchronize(device)
            began = time.perf_counter()
            result = function(*arguments, **options)
            synchronize(device)
            spent[name] = spent.get(name, 0.0) + (time.perf_counter() - began) * 1e3
            return result
        return call
    originals = {name: getattr(lib, name) for name in accumulate._SIGNATURES}
    ddp, optimizer, acc = make(args, device, True)
    for _ in range(args.warmup):
        step(ddp, optimizer, acc, micro)
    for name, function in originals.items():
        setattr(lib, name, timed(name, function))
    all_reduce = dist.all_reduce
    dist.all_reduce = timed("dist.all_reduce", all_reduce)
    steps = 4
    try:
        for _ in range(steps):
            optimizer.zero_grad(set_to_none=True)
            for x, y in micro:
                with ddp.no_sync():
                    timed("forward+backward", lambda: torch.nn.functional.mse_loss(
                        ddp(x), y).backward())()
                timed("add()", acc.add)()
            timed("reduce()", lambda: acc.reduce(mean_over=len(micro)))()
            timed("optimizer.step()", optimizer.step)()
    finally:
        for name, function in originals.items():
            setattr(lib, name, function)
        dist.all_reduce = all_reduce
    return {name: round(ms / steps, 3) for name, ms in sorted(spent.items())}


def profile(args, device, variants, micro, size):
    """torch.profiler over 3 steps of each variant: where the host and the GPU spend a step
    (the synchronisations and copies the host waits in show as runtime calls)."""
    from torch.profiler import ProfilerActivity, profile as run_profiler
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA]
                                           if device.type == "cuda" else [])
    lines = []
    for name, (ddp, optimizer, acc) in variants.items():
        synchronize(device)
        with run_profiler(activities=activities) as prof:
            for _ in range(3):
                step(ddp, optimizer, acc, micro)
            synchronize(device)
        averages = prof.key_averages()
        lines.append(f"== {name}, batch {size}, 3 steps: by host time")
        lines.append(averages.table(sort_by="self_cpu_time_total", row_limit=30))
        if device.type == "cuda":
            lines.append(f"== {name}, batch {size}, 3 steps: by GPU time")
            lines.append(averages.table(sort_by="self_cuda_time_total", row_limit=20))
    path = pathlib.Path(args.out) / f"profile-{size}.txt"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    print(f"wrote {path}", flush=True)


def main():
    args = parse_arguments()
    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
    device = torch.device("cuda", 0) if args.device == "cuda" else torch.device("cpu")
    if device.type == "cuda":
        if not torch.cuda.is_available():
            raise SystemExit("accumulate_overhead: no CUDA device")
        torch.cuda.set_device(device)
    with tempfile.TemporaryDirectory(prefix="rv-accumulate-bench-") as scratch:
        dist.init_process_group("nccl" if device.type == "cuda" else "gloo",
                                init_method=f"file://{scratch}/store", rank=0, world_size=1)
        results = []
        for size in (int(b) for b in args.batches.split(",")):
            per = size // args.micro_batches
            micro = [tuple(t.to(DTYPES[args.dtype]) for t in batch(per, 0, j, device))
                     for j in range(args.micro_batches)]
            variants = {"ddp_float_accumulation": make(args, device, False),
                        "exact_accumulator": make(args, device, True)}
            for ddp, optimizer, acc in variants.values():
                for _ in range(args.warmup):
                    step(ddp, optimizer, acc, micro)
            times = {name: [] for name in variants}
            for _ in range(args.rounds):
                for name, (ddp, optimizer, acc) in variants.items():
                    for _ in range(args.steps):
                        synchronize(device)
                        began = time.perf_counter()
                        step(ddp, optimizer, acc, micro)
                        synchronize(device)
                        times[name].append((time.perf_counter() - began) * 1e3)
            medians = {name: statistics.median(t) for name, t in times.items()}
            entry = {"batch": size, "micro_batches": args.micro_batches, "dtype": args.dtype,
                     "parameters": sum(p.numel() for p in variants["exact_accumulator"][0].parameters()),
                     "step_ms_median": {k: round(v, 3) for k, v in medians.items()},
                     "ratio": round(medians["exact_accumulator"] /
                                    medians["ddp_float_accumulation"], 3),
                     "accumulator_footprint": variants["exact_accumulator"][2].footprint()}
            if args.profile:
                profile(args, device, variants, micro, size)
            if args.phases:
                entry["phases_ms_per_step"] = phases(args, device, micro)
                print(f"batch {size} phases (ms per step): {entry['phases_ms_per_step']}",
                      flush=True)
            results.append(entry)
            print(f"batch {size} (K = {args.micro_batches}, {args.dtype}): DDP float "
                  f"{medians['ddp_float_accumulation']:.2f} ms, exact "
                  f"{medians['exact_accumulator']:.2f} ms: {entry['ratio']}x", flush=True)
            del variants, micro
        dist.destroy_process_group()
    pathlib.Path(args.out).mkdir(parents=True, exist_ok=True)
    report = {"device": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
              "torch": torch.__version__, "library": reduce_verify.library_info(),
              "results": results}
    name = "accumulate-overhead.json" if args.dtype == "f32" else \
        f"accumulate-overhead-{args.dtype}.json"
    (pathlib.Path(args.out) / name).write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
