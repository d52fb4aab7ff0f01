"""What reduce_verify's DDP hooks cost on a GPU, and whether their bits are the CPU's.

On one CUDA device (an H200 or H100), with the device's own torch (2.x):

1. Logical-rank replay: the real gradients of a ~100 M-parameter MLP for W logical ranks
   (W different batches) stacked on the GPU and reduced there by the C ABI's CUDA fold and
   exact kernels (reduce_verify.reduce); the same bytes reduced on the host by the core; both
   ops, both contracts, W = 1, 2, 4, 8 (and each GPU reduction timed with CUDA events).
2. Overhead: step time (zero_grad, forward, MSE loss, backward, SGD step; synchronised) of
   DDP on an NCCL world of one with its default all-reduce, torch's Python allreduce_hook,
   fixed_order_hook and exact_hook, interleaved in rounds; the ratio to DDP's default.
   The issue's target: fixed_order_hook ≤ 1.3× at W = 1.
3. Recorded steps: a smaller model trained on the NCCL world of one under each hook with a
   Recorder; every recorded bucket replayed on the host through the core (and through
   `reduce-verify digest --inputs` when --tool is given) must give the digest the GPU got.

With --processes W (W GPUs, one process each, an NCCL world of W), sections 2 and 3 run in
that real world instead: every rank times its own steps (rank 0's are the figures; every
rank's medians are kept) and every rank trains on its own batches; the recorded buckets hold
the W ranks' real gradients, replayed on rank 0's host. Section 1 is one device's and is
left out.

Benchmarks measure; the replays are checks: the script writes its JSON either way and exits
1 when a replay disagrees.

    python3 python/bench/ddp_hook_overhead.py --out "$OUT"   (REDUCE_VERIFY_LIB set)
    python3 python/bench/ddp_hook_overhead.py --out "$OUT" --processes 2
"""

import argparse
import datetime
import json
import os
import pathlib
import platform
import socket
import statistics
import subprocess
import sys
import tempfile
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
import reduce_verify  # noqa: E402
from reduce_verify.ddp import HookState, exact_hook, fixed_order_hook  # noqa: E402


def parse_arguments():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=os.environ.get("OUT", "."), help="folder for the JSON")
    parser.add_argument("--width", type=int, default=4096)
    parser.add_argument("--depth", type=int, default=6, help="hidden width×width layers")
    parser.add_argument("--batches", default="256,1024,4096", help="batch sizes timed")
    # 8 × 8 steps per hook and batch: at small batches, where the hooks' cost is host time,
    # fewer steps moved the ratio between runs (docs/results.md, "Decisions behind the code").
    parser.add_argument("--rounds", type=int, default=8, help="interleaved rounds per batch")
    parser.add_argument("--steps", type=int, default=8, help="timed steps per config and round")
    parser.add_argument("--warmup", type=int, default=4)
    parser.add_argument("--bucket-cap-mb", type=float, default=25.0)
    parser.add_argument("--worlds", default="1,2,4,8", help="logical worlds replayed")
    parser.add_argument("--replay-elements", type=int, default=16_777_259,
                        help="gradient elements per logical rank in the replay (odd: tails)")
    parser.add_argument("--tool", default=None, help="reduce-verify, for CLI replays")
    parser.add_argument("--skip", default="", help="comma list of sections to skip: "
                        "replay,overhead,recorded")
    parser.add_argument("--device", default="cuda", choices=("cuda", "cpu"),
                        help="cpu: a smoke run of the script's logic on a Gloo world")
    parser.add_argument("--processes", type=int, default=1,
                        help="ranks of the real world (one GPU each; sections 2 and 3)")
    args = parser.parse_args()
    if args.tool:
        args.tool = os.path.abspath(args.tool)  # the replays run in the recording's folder
    return args


def make_model(width, depth, inputs=1024, outputs=1024, seed=1):
    torch.manual_seed(seed)
    layers = [torch.nn.Linear(inputs, width), torch.nn.ReLU()]
    for _ in range(depth):
        layers += [torch.nn.Linear(width, width), torch.nn.ReLU()]
    layers.append(torch.nn.Linear(width, outputs))
    return torch.nn.Sequential(*layers)


def batch(size, step, salt, device, inputs=1024, outputs=1024):
    generator = torch.Generator(device=device).manual_seed(1_000_003 * step + salt)
    x = torch.randn(size, inputs, device=device, generator=generator)
    y = torch.randn(size, outputs, device=device, generator=generator)
    return x, y


def _nccl_version():
    version = torch.cuda.nccl.version()
    return ".".join(map(str, version)) if isinstance(version, tuple) else str(version)


def machine(device):
    info = {
        "host": socket.gethostname(),
        "torch": torch.__version__,
        "python": platform.python_version(),
        "library": reduce_verify.library_info(),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }
    if device.type != "cuda":
        info["device"] = "cpu (a smoke run: no figures)"
        return info
    properties = torch.cuda.get_device_properties(device)
    info.update({
        "gpu": properties.name,
        "multiprocessors": properties.multi_processor_count,
        "gpu_memory_gib": round(properties.total_memory / 2**30, 1),
        "cuda_torch": torch.version.cuda,
        "nccl": _nccl_version(),
        "tf32_matmul": torch.backends.cuda.matmul.allow_tf32,
    })
    try:
        smi = subprocess.run(["nvidia-smi", "--query-gpu=driver_version,clocks.max.sm",
                              "--format=csv,noheader"], capture_output=True, text=True,
                             timeout=20)
        info["nvidia_smi"] = smi.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        pass
    return info


# 1. Logical-rank replay ------------------------------------------------------------------------

def gradients_of(model, x, y):
    model.zero_grad(set_to_none=True)
    torch.nn.functional.mse_loss(model(x), y).backward()
    return torch.cat([p.grad.reshape(-1) for p in model.parameters()])


def synchronize(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def time_ms(function, device, repeats=3):
    function()  # warm (workspace growth, first launch)
    if device.type != "cuda":
        times = []
        for _ in range(repeats):
            began = time.perf_counter()
            function()
            times.append((time.perf_counter() - began) * 1e3)
        return statistics.median(times)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(repeats):
        start.record()
        function()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def logical_replay(args, device):
    model = make_model(args.width, args.depth).to(device)
    worlds = [int(w) for w in args.worlds.split(",")]
    n = min(args.replay_elements, sum(p.numel() for p in model.parameters()))
    rows = [gradients_of(model, *batch(64, 0, r, device))[:n].clone() for r in range(max(worlds))]
    del model
    results = []
    for world in worlds:
        stacked = torch.stack(rows[:world])
        host = stacked.cpu()
        for contract in ("fixed-order", "exact"):
            for op in ("sum", "mean"):
                gpu = reduce_verify.digest(reduce_verify.reduce(stacked, op, contract))
                began = time.perf_counter()
                cpu = reduce_verify.digest(reduce_verify.reduce(host, op, contract))
                host_seconds = time.perf_counter() - began
                ms = time_ms(lambda t=stacked, o=op, c=contract: reduce_verify.reduce(t, o, c),
                             device)
                moved = (world + 1) * n * 4
                results.append({"world": world, "n": n, "contract": contract, "op": op,
                                "gpu_digest": gpu, "cpu_digest": cpu, "agree": gpu == cpu,
                                "device_ms": round(ms, 3),
                                "device_gbps_w_plus_1": round(moved / ms / 1e6, 1),
                                "cpu_seconds": round(host_seconds, 3)})
                print(f"replay W={world} {contract:11s} {op:4s} gpu {gpu} cpu {cpu} "
                      f"{'agree' if gpu == cpu else 'DIFFER'}  {ms:.2f} ms on {device}",
                      flush=True)
        del stacked, host
    return results


# 2. Overhead -----------------------------------------------------------------------------------

def ddp_model(args, device, hook):
    model = make_model(args.width, args.depth).to(device)
    ddp = torch.nn.parallel.DistributedDataParallel(model, device_ids=device_ids(device),
                                                    bucket_cap_mb=args.bucket_cap_mb)
    if hook == "allreduce_hook":
        from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
        ddp.register_comm_hook(None, default_hooks.allreduce_hook)
    elif hook == "fixed_order_hook":
        ddp.register_comm_hook(HookState(), fixed_order_hook)
    elif hook == "exact_hook":
        ddp.register_comm_hook(HookState(), exact_hook)
    return ddp, torch.optim.SGD(ddp.parameters(), lr=1e-4)


def device_ids(device):
    return [device.index] if device.type == "cuda" else None


def train_step(ddp, optimizer, x, y):
    optimizer.zero_grad(set_to_none=False)
    torch.nn.functional.mse_loss(ddp(x), y).backward()
    optimizer.step()


def overhead(args, device):
    hooks = ["ddp_default", "allreduce_hook", "fixed_order_hook", "exact_hook"]
    parameters = sum(p.numel() for p in make_model(args.width, args.depth).parameters())
    results = []
    for size in (int(b) for b in args.batches.split(",")):
        models = {hook: ddp_model(args, device, hook) for hook in hooks}
        x, y = batch(size, 0, 0, device)
        for hook, (ddp, optimizer) in models.items():
            for _ in range(args.warmup):
                train_step(ddp, optimizer, x, y)
        synchronize(device)
        times = {hook: [] for hook in hooks}
        for _ in range(args.rounds):  # interleaved, so drift hits every hook alike
            for hook, (ddp, optimizer) in models.items():
                for _ in range(args.steps):
                    synchronize(device)
                    began = time.perf_counter()
                    train_step(ddp, optimizer, x, y)
                    synchronize(device)
                    times[hook].append((time.perf_counter() - began) * 1e3)
        base = statistics.median(times["ddp_default"])
        entry = {"batch": size, "parameters": parameters, "steps_per_hook": len(times[hooks[0]]),
                 "step_ms": {}, "ratio_to_ddp_default": {}}
        for hook in hooks:
            ordered = sorted(times[hook])
            entry["step_ms"][hook] = {
                "median": round(statistics.median(ordered), 3),
                "p10": round(ordered[len(ordered) // 10], 3),
                "p90": round(ordered[(len(ordered) * 9) // 10], 3)}
            entry["ratio_to_ddp_default"][hook] = round(statistics.median(ordered) / base, 3)
        entry["fixed_order_meets_1_3x"] = entry["ratio_to_ddp_default"]["fixed_order_hook"] <= 1.3
        if dist.get_world_size() > 1:
            medians = [None] * dist.get_world_size()
            dist.all_gather_object(medians, {h: entry["step_ms"][h]["median"] for h in hooks})
            entry["world"] = dist.get_world_size()
            entry["median_ms_per_rank"] = medians
        results.append(entry)
        if dist.get_rank() == 0:
            print(f"batch {size}: " + ", ".join(
                f"{h} {entry['step_ms'][h]['median']:.2f} ms ({entry['ratio_to_ddp_default'][h]}x)"
                for h in hooks), flush=True)
        del models, x, y
    return results


# 3. Recorded steps ---------------------------------------------------------------------------

def recorded(args, device, scratch):
    results = []
    for hook_name, hook in (("fixed_order_hook", fixed_order_hook), ("exact_hook", exact_hook)):
        folder = pathlib.Path(scratch) / hook_name
        model = make_model(1024, 3).to(device)
        ddp = torch.nn.parallel.DistributedDataParallel(model, device_ids=device_ids(device),
                                                        bucket_cap_mb=4)
        recorder = reduce_verify.Recorder(folder, steps=[2])
        ddp.register_comm_hook(HookState(recorder=recorder), hook)
        optimizer = torch.optim.SGD(ddp.parameters(), lr=1e-3)
        rank = dist.get_rank()
        for step in range(4):  # step 2: after DDP's bucket rebuild
            train_step(ddp, optimizer, *batch(128, step, rank, device))
        synchronize(device)
        dist.barrier()  # the writer (rank 0) has written every bucket
        if rank != 0:
            del ddp, model
            continue
        for entry in recorder.entries():
            stacked = torch.stack([
                torch.frombuffer(bytearray((folder / f).read_bytes()), dtype=torch.float32)
                for f in entry["inputs"]])
            host = reduce_verify.digest(reduce_verify.reduce(stacked, entry["op"],
                                                             entry["contract"]))
            row = {"hook": hook_name, "step": entry["step"], "bucket": entry["bucket"],
                   "world": entry["world"], "count": entry["count"],
                   "gpu_digest": entry["result_digest"], "host_digest": host,
                   "agree": host == entry["result_digest"]}
            if args.tool:
                command = [args.tool, "digest", "--op", entry["op"], "--inputs", *entry["inputs"]]
                if entry["contract"] == "exact":
                    command[2:2] = ["--contract", "exact"]
                done = subprocess.run(command, cwd=folder, capture_output=True, text=True)
                row["tool_digest"] = done.stdout.split()[0] if done.returncode == 0 else \
                    f"exit {done.returncode}: {done.stderr.strip()}"
                row["agree"] = row["agree"] and row["tool_digest"] == entry["result_digest"]
            results.append(row)
            print(f"recorded {hook_name} bucket {entry['bucket']} W={entry['world']}: gpu "
                  f"{entry['result_digest']} host {host} {'agree' if row['agree'] else 'DIFFER'}",
                  flush=True)
        del ddp, model
    dist.barrier()  # the other ranks wait for rank 0's replays before the next section
    return results


def run_world(rank, args, scratch, world):
    """One rank: its device, the process group, the sections; rank 0 writes the JSON."""
    if args.device == "cuda":
        device = torch.device("cuda", rank)
        torch.cuda.set_device(device)
    else:
        device = torch.device("cpu")
    skip = set(filter(None, args.skip.split(",")))
    report = {"format": "reduce-verify ddp hook overhead 1", "machine": machine(device),
              "arguments": vars(args), "world": world}
    backend = "nccl" if device.type == "cuda" else "gloo"
    dist.init_process_group(backend, init_method=f"file://{scratch}/store", rank=rank,
                            world_size=world)
    try:
        if "replay" not in skip and world == 1:
            report["logical_replay"] = logical_replay(args, device)
        if "overhead" not in skip:
            report["overhead"] = overhead(args, device)
        if "recorded" not in skip:
            report["recorded"] = recorded(args, device, scratch)
    finally:
        dist.destroy_process_group()
    if rank != 0:
        return
    checks = report.get("logical_replay", []) + report.get("recorded", [])
    report["all_replays_agree"] = all(row["agree"] for row in checks)
    path = pathlib.Path(args.out) / "ddp-hook-overhead.json"
    path.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {path}; replays agree: {report['all_replays_agree']}")


def main():
    args = parse_arguments()
    for name in ("NCCL_NVLS_ENABLE", "TORCH_SYMM_MEM_DISABLE_MULTICAST", "NVSHMEM_DISABLE_NVLS"):
        os.environ.setdefault(name, "0" if name == "NCCL_NVLS_ENABLE" else "1")
    if args.device == "cuda":
        if not torch.cuda.is_available():
            raise SystemExit("ddp_hook_overhead: no CUDA device")
        if torch.cuda.device_count() < args.processes:
            raise SystemExit(f"ddp_hook_overhead: --processes {args.processes} needs as many "
                             f"GPUs; this machine has {torch.cuda.device_count()}")
        if not reduce_verify.built_with_cuda():
            raise SystemExit(f"ddp_hook_overhead: {reduce_verify.library_info()}: no CUDA")
    pathlib.Path(args.out).mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="rv-ddp-bench-") as scratch:
        if args.processes == 1:
            run_world(0, args, scratch, 1)
        else:
            mp.start_processes(run_world, args=(args, scratch, args.processes),
                               nprocs=args.processes, join=True, start_method="spawn")
    report = json.loads((pathlib.Path(args.out) / "ddp-hook-overhead.json").read_text())
    return 0 if report["all_replays_agree"] else 1


if __name__ == "__main__":
    sys.exit(main())
