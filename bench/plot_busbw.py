#!/usr/bin/env python3
"""Plots busbw against message size for fixed-order and ncclAllReduce, from the JSON files
bench_nccl writes (ci/device/run-nccl-bench.sh). One line per contract and file.

    python3 bench/plot_busbw.py bench/results/nccl-bench-W2-*.json -o bench/results/busbw.png

Needs matplotlib (Debian: python3-matplotlib). For a world of one busbw is 0 by definition
(2(W-1)/W = 0), so algbw is plotted instead and the axis says so.
"""
import argparse
import json
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("inputs", nargs="+", help="bench_nccl JSON files")
    parser.add_argument("-o", "--output", required=True, help="the PNG to write")
    args = parser.parse_args()

    figure, axes = plt.subplots(figsize=(9, 5.5))
    measure = "busbw"
    for path in args.inputs:
        with open(path) as f:
            data = json.load(f)
        context = data["context"]
        world = context.get("world", 0)
        if world < 2:
            measure = "algbw"
        sizes = [r["bytes"] for r in data["results"]]
        label = f"W={world}, {context.get('nccl', '?').split(' (')[0]}"
        for key, name, style in (("fixed_order", "fixed-order", "-o"),
                                 ("nccl_allreduce", "ncclAllReduce", "--s")):
            values = [r[f"{key}_{measure}_GBps"] for r in data["results"]]
            axes.plot(sizes, values, style, markersize=3, label=f"{name} ({label})")
    axes.set_xscale("log", base=2)
    axes.set_xlabel("message size (bytes)")
    axes.set_ylabel(f"{measure} (GB/s)")
    gpu = context.get("gpu", "?")
    axes.set_title(f"fixed-order vs ncclAllReduce: {measure} against size\n{gpu}, "
                   f"driver {context.get('nvidia_driver', '?')}")
    axes.grid(True, which="both", alpha=0.3)
    axes.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(args.output, dpi=120)
    print(f"wrote {os.path.abspath(args.output)}")


if __name__ == "__main__":
    main()
