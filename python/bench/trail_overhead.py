"""What an always-on reduce_verify.Trail costs a training step, and whether its GPU digests
are the host reference's bits.

On one CUDA device (an NCCL world of one, the device's own torch), the model of
ddp_hook_overhead.py (a 4096-wide MLP, ~100 M parameters) trained with DDP under a hook, with
and without a Trail wrapping it (every bucket's input and result digested, the parameters
after every step, and with --optimizer-state the SGD-momentum state; one record appended per
step), interleaved in
rounds at each batch size. The issue's targets: the trail's overhead ≤ 3 % of the step time
at batch 1024 and ≤ 10 % at batch 256.

Before timing, the GPU digest tree (rv_cuda_digest_tree_leaves) is checked against the host
reference (trail.tree_digest) on random tensors of several sizes and alignments, a short
run's trail against the host reference's digests of the same run (every bucket's input and
result, the parameters; under allreduce_hook, fixed_order_hook and a hook that changes the
bucket in place), and the trail files of two identical runs are audited with
`reduce-verify audit` (--tool) when given.

    python3 python/bench/trail_overhead.py --out "$OUT"            (REDUCE_VERIFY_LIB set)
    python3 python/bench/trail_overhead.py --device cpu --width 256 --depth 2 --batches 64
        (a smoke run of the logic on a Gloo world of one: no figures)

Benchmarks measure; the digest check is a check: the JSON is written either way and the
script exits 1 when a GPU digest differs from the reference."""

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

import torch
import torch.distributed as dist
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import reduce_verify  # noqa: E402
from reduce_verify import trail as trail_module  # noqa: E402
from reduce_verify.ddp import HookState, fixed_order_hook  # noqa: E402
from ddp_hook_overhead import batch, machine, make_model, synchronize  # noqa: E402

HOOKS = ("allreduce_hook", "fixed_order_hook")


def parse_arguments():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=os.environ.get("OUT", "."), help="folder for the JSON")
    parser.add_argument("--width", type=int, default=4096)
    parser.add_argument("--depth", type=int, default=6, help="hidden width×width layers")
    parser.add_argument("--batches", default="256,1024,4096", help="batch sizes timed")
    parser.add_argument("--rounds", type=int, default=8, help="interleaved rounds per batch")
    parser.add_argument("--steps", type=int, default=8, help="timed steps per config and round")
    parser.add_argument("--warmup", type=int, default=4)
    parser.add_argument("--bucket-cap-mb", type=float, default=25.0)
    parser.add_argument("--hooks", default=",".join(HOOKS), help="comma list of " +
                        ", ".join(HOOKS))
    parser.add_argument("--optimizer-state", action="store_true",
                        help="also digest the SGD-momentum state every step (off by default, "
                        "as in Trail)")
    parser.add_argument("--tool", default=None, help="reduce-verify, to audit two trails")
    parser.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    parser.add_argument("--profile", default="", help="comma list of batch sizes to run "
                        "torch.profiler over (3 steps of each configuration), its tables "
                        "written to trail-profile-BATCH.txt")
    parser.add_argument("--skip-checks", action="store_true",
                        help="time only (no digest, reference or audit check)")
    return parser.parse_args()


def digest_check(device):
    """The GPU tree against the host reference, bit for bit."""
    rows = []
    if device.type != "cuda":
        return rows
    function = trail_module._cuda_leaf_function()
    generator = torch.Generator().manual_seed(5)
    for n in (0, 1, 1023, 1024, 1025, 262_147, 6_553_600):
        for offset in (0, 1, 3):
            host = torch.randn(n + offset, generator=generator)
            on_device = host.to(device)[offset:]
            expected = trail_module.tree_digest(host[offset:])
            got = trail_module.finish_trees([trail_module.tree_digest_cuda(on_device, function)])
            rows.append({"n": n, "offset_floats": offset, "gpu": got[0].hex(),
                         "cpu": expected.hex(), "agree": got[0] == expected})
            print(f"tree n={n} offset={offset}: gpu {got[0].hex()} cpu {expected.hex()} "
                  f"{'agree' if got[0] == expected else 'DIFFER'}", flush=True)
    pieces = trail_module._cuda_pieces_function()
    for sizes in ((1, 1023, 5), (4096, 7, 0, 1_000_003), (3,) * 500):
        host = [torch.randn(n, generator=generator) for n in sizes]
        expected = trail_module.tree_digest(torch.cat(host))
        pending = trail_module.tree_digest_cuda_pieces([h.to(device) for h in host], pieces)
        got = trail_module.finish_trees([pending])
        rows.append({"pieces": list(sizes)[:8], "piece_count": len(sizes), "gpu": got[0].hex(),
                     "cpu": expected.hex(), "agree": got[0] == expected})
        print(f"tree of {len(sizes)} pieces: gpu {got[0].hex()} cpu {expected.hex()} "
              f"{'agree' if got[0] == expected else 'DIFFER'}", flush=True)
    return rows


def halve_hook(state, bucket):
    """Halves the bucket in place and returns a completed plain future, as torch's noop hook
    does: an all-reduce at W = 1 leaves the values as they were and this does not, so a
    trail that hashed a bucket's input after its hook, or its result before, shows here."""
    buffer = bucket.buffer()
    buffer.mul_(0.5)
    future = torch.futures.Future()
    future.set_result(buffer)
    return future


def _hook_and_state(hook):
    if hook == "allreduce_hook":
        return default_hooks.allreduce_hook, None
    if hook == "halve_hook":
        return halve_hook, None
    return fixed_order_hook, HookState()


def _delay_digests(trail, cycles=2_000_000):
    """Every digest the trail enqueues first waits about a millisecond of GPU time on the
    stream it is enqueued on: a missing wait between the trail's streams and the training's
    would let the training overwrite what is still to be hashed (or use a result before the
    hook's work), and the check below would see another digest or other parameters."""
    for name in ("_digest", "_digest_many"):
        original = getattr(trail, name)

        def delayed(*args, original=original, **kwargs):
            torch.cuda._sleep(cycles)
            return original(*args, **kwargs)
        setattr(trail, name, delayed)


def reference_check(device, scratch, steps=3, size=64):
    """A short run's trail (many small buckets) against the host reference's digests of the
    same run, computed synchronously from host copies: every bucket's input and result and
    the parameters, step by step, for each hook. The trail hashes on a side stream beside the
    backward pass and the next step's forward; this is where an ordering mistake would show,
    and every digest is delayed on the GPU so that one would."""
    rows = []
    for hook in ("allreduce_hook", "fixed_order_hook", "halve_hook"):
        expected = []
        for with_trail in (False, True):
            model = make_model(1024, 3).to(device)
            ddp = torch.nn.parallel.DistributedDataParallel(
                model, device_ids=[device.index] if device.type == "cuda" else None,
                bucket_cap_mb=1)
            function, state = _hook_and_state(hook)
            trail, current = None, {}
            if with_trail:
                path = pathlib.Path(scratch) / f"reference-{hook}.trail"
                trail = reduce_verify.Trail(path, digest="tree")
                if device.type == "cuda":
                    _delay_digests(trail)
                ddp.register_comm_hook(state, trail.wrap(function))
            else:
                def reference(state, bucket, function=function):
                    before = trail_module.tree_digest(bucket.buffer())

                    def after(done):
                        value = done.value()
                        result = value[0] if isinstance(value, (list, tuple)) else value
                        current[bucket.index()] = (before.hex(),
                                                   trail_module.tree_digest(result).hex())
                        return result
                    return function(state, bucket).then(after)
                ddp.register_comm_hook(state, reference)
            optimizer = torch.optim.SGD(ddp.parameters(), lr=1e-3)
            for step in range(steps):
                x, y = batch(size, step, 0, device)
                optimizer.zero_grad(set_to_none=False)
                torch.nn.functional.mse_loss(ddp(x), y).backward()
                optimizer.step()
                if trail is not None:
                    # With the optimizer: the parameters are hashed on the side stream, and
                    # the next step's optimizer waits for it.
                    trail.end_step(model.parameters(), optimizer)
                else:
                    params = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
                    expected.append({"buckets": dict(current),
                                     "params": trail_module.tree_digest(params).hex()})
                    current.clear()
            if trail is not None:
                trail.close()
                records = [json.loads(line) for line in path.read_text().splitlines()][1:-1]
                for step, (record, want) in enumerate(zip(records, expected)):
                    got = {"buckets": {b["index"]: (b["inputs"][0], b["results"][0])
                                       for b in record["buckets"]},
                           "params": record["params"][0]}
                    agree = got == want
                    rows.append({"hook": hook, "step": step, "buckets": len(want["buckets"]),
                                 "agree": agree})
                    print(f"trail against the host reference, {hook} step {step} "
                          f"({len(want['buckets'])} buckets): {'agree' if agree else 'DIFFER'}",
                          flush=True)
                if len(records) != steps:
                    rows.append({"hook": hook, "records": len(records), "agree": False})
            del model, ddp, optimizer
    return rows


def ddp_run(args, device, hook, trail_path):
    model = make_model(args.width, args.depth).to(device)
    ddp = torch.nn.parallel.DistributedDataParallel(
        model, device_ids=[device.index] if device.type == "cuda" else None,
        bucket_cap_mb=args.bucket_cap_mb)
    function, state = _hook_and_state(hook)
    trail = None
    if trail_path is not None:
        trail = reduce_verify.Trail(trail_path, optimizer_state=args.optimizer_state)
        function = trail.wrap(function)
    ddp.register_comm_hook(state, function)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=1e-4, momentum=0.9)
    return model, ddp, optimizer, trail


def train_step(run, x, y):
    model, ddp, optimizer, trail = run
    optimizer.zero_grad(set_to_none=False)
    torch.nn.functional.mse_loss(ddp(x), y).backward()
    optimizer.step()
    if trail is not None:
        trail.end_step(model.parameters(), optimizer)


def overhead(args, device, scratch):
    hooks = [h for h in args.hooks.split(",") if h]
    results = []
    for size in (int(b) for b in args.batches.split(",")):
        runs = {}
        for hook in hooks:
            runs[(hook, False)] = ddp_run(args, device, hook, None)
            runs[(hook, True)] = ddp_run(args, device, hook,
                                         pathlib.Path(scratch) / f"{hook}-{size}.trail")
        x, y = batch(size, 0, 0, device)
        for run in runs.values():
            for _ in range(args.warmup):
                train_step(run, x, y)
        synchronize(device)
        times = {key: [] for key in runs}
        for _ in range(args.rounds):  # interleaved, so drift hits every configuration alike
            for key, run in runs.items():
                for _ in range(args.steps):
                    synchronize(device)
                    began = time.perf_counter()
                    train_step(run, x, y)
                    synchronize(device)
                    times[key].append((time.perf_counter() - began) * 1e3)
        if str(size) in args.profile.split(","):
            profile(args, device, runs, x, y, size)
        entry = {"batch": size, "steps_per_config": args.rounds * args.steps, "hooks": {}}
        for hook in hooks:
            plain = statistics.median(times[(hook, False)])
            trailed = statistics.median(times[(hook, True)])
            entry["hooks"][hook] = {"step_ms": round(plain, 3),
                                    "step_ms_with_trail": round(trailed, 3),
                                    "overhead_fraction": round(trailed / plain - 1, 4)}
            print(f"batch {size} {hook}: {plain:.2f} ms, with trail {trailed:.2f} ms "
                  f"({100 * (trailed / plain - 1):+.1f} %)", flush=True)
        for run in runs.values():
            if run[3] is not None:
                run[3].close()
        results.append(entry)
        del runs, x, y
    return results


def profile(args, device, runs, x, y, size):
    """torch.profiler over 3 steps of each configuration: where the host and the GPU spend a
    step with and without the trail."""
    from torch.profiler import ProfilerActivity, profile as run_profiler
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA]
                                           if device.type == "cuda" else [])
    lines = []
    for (hook, trailed), run in runs.items():
        synchronize(device)
        began = time.perf_counter()
        with run_profiler(activities=activities) as prof:
            for _ in range(3):
                train_step(run, x, y)
            synchronize(device)
        name = f"{hook}{' with trail' if trailed else ''}, batch {size}, 3 steps " \
               f"({(time.perf_counter() - began) * 1e3:.1f} ms profiled)"
        averages = prof.key_averages()
        lines += [f"== {name}: by host time", averages.table(sort_by="self_cpu_time_total",
                                                            row_limit=30)]
        if device.type == "cuda":
            lines += [f"== {name}: by GPU time",
                      averages.table(sort_by="self_cuda_time_total", row_limit=15)]
    path = pathlib.Path(args.out) / f"trail-profile-{size}.txt"
    path.write_text("\n".join(lines) + "\n")
    print(f"wrote {path}", flush=True)


def audit_pair(args, device, scratch):
    """Two identical short runs' trails, audited: they must agree (exit 0)."""
    if not args.tool:
        return None
    paths = []
    for name in ("a", "b"):
        path = pathlib.Path(scratch) / f"audit-{name}.trail"
        run = ddp_run(args, device, "fixed_order_hook", path)
        for step in range(3):
            train_step(run, *batch(64, step, 0, device))
        run[3].close()
        paths.append(path)
    done = subprocess.run([args.tool, "audit", str(paths[0]), str(paths[1])],
                          capture_output=True, text=True, timeout=120)
    print(done.stdout + done.stderr, flush=True)
    return {"exit": done.returncode, "stdout": done.stdout, "stderr": done.stderr}


def main():
    args = parse_arguments()
    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
    if args.device == "cuda" and not torch.cuda.is_available():
        raise SystemExit("trail_overhead: no CUDA device")
    device = torch.device("cuda", 0) if args.device == "cuda" else torch.device("cpu")
    if device.type == "cuda":
        torch.cuda.set_device(device)
    pathlib.Path(args.out).mkdir(parents=True, exist_ok=True)
    report = {"format": "reduce-verify trail overhead 1", "machine": machine(device),
              "arguments": vars(args)}
    with tempfile.TemporaryDirectory(prefix="rv-trail-bench-") as scratch:
        dist.init_process_group("nccl" if device.type == "cuda" else "gloo",
                                init_method=f"file://{scratch}/store", rank=0, world_size=1)
        try:
            checks = not args.skip_checks
            report["digest_check"] = digest_check(device) if checks else []
            report["reference_check"] = reference_check(device, scratch) if checks else []
            report["audit"] = audit_pair(args, device, scratch) if checks else None
            report["overhead"] = overhead(args, device, scratch)
        finally:
            dist.destroy_process_group()
    report["gpu_digests_agree"] = all(row["agree"] for row in
                                      report["digest_check"] + report["reference_check"])
    path = pathlib.Path(args.out) / "trail-overhead.json"
    path.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {path}; GPU digests agree with the reference: {report['gpu_digests_agree']}")
    audit_ok = report["audit"] is None or report["audit"]["exit"] == 0
    return 0 if report["gpu_digests_agree"] and audit_ok else 1


if __name__ == "__main__":
    sys.exit(main())
