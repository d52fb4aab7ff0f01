"""The CI accumulation test's runs over NCCL, one GPU per process (docs/DESIGN.md §11): the
transformer block trained 10 steps on 8 micro-batches as W × K = 1 × 8, 2 × 4, 4 × 2, 8 × 1
(the W that fit the GPUs; 3 ranks shuffled when 3 fit), with ExactGradAccumulator (asserted:
one final digest) and with DDP's default all-reduce and float accumulation (reported). Run by
ci/device/multi-gpu-proof.sh; exits 77 without CUDA, 1 when the exact digests differ.

  python3 tests/python/accumulate_nccl_worlds.py [--out DIR]"""

import argparse
import json
import os
import pathlib
import sys
import tempfile
import time

try:
    import torch
except ImportError:
    print("torch is not installed: skipped")
    sys.exit(77)

sys.path.insert(0, os.path.dirname(__file__))
import accumulation_training as training  # noqa: E402


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default=None, help="write accumulate-nccl.json there")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("no CUDA device: skipped")
        return 77
    gpus = torch.cuda.device_count()
    training.prepare_forkserver()
    digests = {}
    with tempfile.TemporaryDirectory(prefix="rv-accumulate-nccl-") as temp:
        for world in [w for w in (1, 2, 3, 4, 8) if w <= gpus]:
            shuffled = world == 3
            label = "shuffled-3" if shuffled else f"{world}x{8 // world}"
            runs = [dict(name=f"exact-{label}", mode="exact", shuffled=shuffled,
                         use_ddp=world in (2, 8)),
                    dict(name=f"float-{label}", mode="ddp-float", shuffled=shuffled)]
            begun = time.monotonic()
            per_rank = training.run_world(world, runs, pathlib.Path(temp) / f"w{world}",
                                          backend="nccl")
            for run in runs:
                seen = {ranks[run["name"]] for ranks in per_rank}
                if len(seen) != 1:
                    print(f"FAILED: {run['name']}: the ranks disagree: {seen}")
                    return 1
                digests[run["name"]] = seen.pop()
            print(f"W = {world}: {time.monotonic() - begun:.1f} s", flush=True)
    exact = {k: v for k, v in digests.items() if k.startswith("exact")}
    floats = {k: v for k, v in digests.items() if k.startswith("float")}
    for name, value in digests.items():
        print(f"  {name}: {value}")
    print(f"exact: {len(set(exact.values()))} distinct digest(s) over {len(exact)} runs; "
          f"DDP float accumulation: {len(set(floats.values()))} over {len(floats)}")
    if args.out:
        pathlib.Path(args.out).mkdir(parents=True, exist_ok=True)
        (pathlib.Path(args.out) / "accumulate-nccl.json").write_text(
            json.dumps({"gpus": gpus, "torch": torch.__version__, "digests": digests}, indent=1))
    if len(set(exact.values())) != 1:
        print("FAILED: the exact runs differ")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
