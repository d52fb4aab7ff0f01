#!/usr/bin/env python3
"""Plots the time ratio fixed-order / Gloo ring against arena size, one line per W, from the
JSON bench_gloo writes (the BM_FixedOrderVsGlooRing medians), with the issue's targets
(1.0 from 16 MiB, 1.1 at 1 MiB) drawn in.

    build/bench/gloo/bench_gloo --benchmark_filter=BM_FixedOrderVsGlooRing \\
        --benchmark_repetitions=5 --benchmark_report_aggregates_only=true \\
        --benchmark_out=bench/results/gloo-epyc-2vcpu-vm.json --benchmark_out_format=json
    python3 bench/plot_ratio.py bench/results/gloo-epyc-2vcpu-vm.json \\
        -o bench/results/gloo-fixed-order-over-ring.png

Needs matplotlib (Debian: python3-matplotlib).
"""
import argparse
import collections
import json
import re

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

NAME = re.compile(r"BM_FixedOrderVsGlooRing/W:(\d+)/MiB:(\d+)/")


def medians(path):
    """{W: [(MiB, ratio), ...]} from the median aggregates of one bench_gloo JSON file."""
    with open(path) as f:
        data = json.load(f)
    lines = collections.defaultdict(list)
    for bench in data["benchmarks"]:
        match = NAME.match(bench["name"])
        if not match or bench.get("aggregate_name") != "median":
            continue
        lines[int(match.group(1))].append((int(match.group(2)), bench["ratio_fixed_over_ring"]))
    return {w: sorted(points) for w, points in sorted(lines.items())}, data.get("context", {})


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("input", help="bench_gloo JSON file (run with --benchmark_repetitions)")
    parser.add_argument("-o", "--output", required=True, help="the PNG to write")
    args = parser.parse_args()

    lines, context = medians(args.input)
    if not lines:
        raise SystemExit(f"{args.input}: no BM_FixedOrderVsGlooRing medians (run with "
                         "--benchmark_repetitions >= 2)")
    figure, axes = plt.subplots(figsize=(8, 5))
    for w, points in lines.items():
        sizes = [mib for mib, _ in points]
        axes.plot(sizes, [ratio for _, ratio in points], marker="o", label=f"W = {w}")
        for mib, ratio in points:
            axes.annotate(f"{ratio:.2f}", (mib, ratio), textcoords="offset points",
                          xytext=(0, 6), ha="center", fontsize=8)
    axes.axhline(1.0, color="grey", linestyle="--", linewidth=1, label="target from 16 MiB")
    axes.axhline(1.1, color="grey", linestyle=":", linewidth=1, label="target at 1 MiB")
    axes.set_xscale("log", base=2)
    axes.set_xlabel("arena size (MiB)")
    axes.set_ylabel("time ratio: fixed-order / Gloo ring (median)")
    cpus = context.get("num_cpus", "?")
    axes.set_title(f"fixed-order over Gloo vs Gloo's ring allreduce ({cpus} CPUs, loopback TCP)")
    axes.grid(True, which="both", alpha=0.3)
    axes.legend()
    figure.tight_layout()
    figure.savefig(args.output, dpi=120)
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
