#!/usr/bin/env python3
"""Draws the plots of docs/results.md from the committed JSON in bench/results.

    python3 bench/plot_results.py [--results bench/results] [--out docs/img]

writes four PNGs, each titled with the JSON files it was drawn from:
- fold-copy-fraction.png: the CUDA fold kernel's copy_fraction (its bandwidth ÷ that of
  cudaMemcpy D2D) against W, one line per slot layout, the default shape of each
  (cuda-fold-h200.json);
- gloo-ratio.png: fixed-order over Gloo and exact over Gloo, each ÷ Gloo's ring allreduce,
  against arena size, one line per W (gloo-epyc-2vcpu-vm.json,
  gloo-exact-epyc-2vcpu-vm-rerun.json);
- exact-kernels.png: the exact contract's CUDA kernels' copy_fraction, and the stacked exact
  reduction against W (cuda-exact-h200.json);
- ddp-hook-overhead.png: the DDP hooks' step time ÷ DDP's default all-reduce against batch,
  one marker per run (ddp-hook-h200*.json).
Benchmarks measure; this only draws what they wrote (the medians of their repetitions).
It is not run in CI: the PNGs are committed. Needs matplotlib (Debian: python3-matplotlib).
"""
import argparse
import collections
import glob
import json
import os
import re

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def load(results, name):
    with open(os.path.join(results, name)) as f:
        return json.load(f)


def medians(data, prefix):
    return [b for b in data["benchmarks"]
            if b["name"].startswith(prefix) and b.get("aggregate_name") == "median"]


def save(figure, out, name, sources):
    figure.text(0.99, 0.005, "from bench/results/" + ", ".join(sources), ha="right",
                va="bottom", fontsize=7, color="grey")
    figure.tight_layout(rect=(0, 0.03, 1, 1))
    path = os.path.join(out, name)
    figure.savefig(path, dpi=110)
    plt.close(figure)
    print("wrote", path)


def plot_fold(results, out):
    source = "cuda-fold-h200.json"
    data = load(results, source)
    lines = collections.defaultdict(dict)  # layout -> {W: copy_fraction}
    for b in medians(data, "BM_FoldVsCopy/"):
        label = b.get("label", "")
        if "(default)" not in label:
            continue
        w = int(re.search(r"W:(\d+)", b["name"]).group(1))
        layout = "aligned" if "vector aligned" in label else \
            label.split("overlapping-loads ")[1].replace(" (default)", "")
        lines[layout][w] = b["copy_fraction"]
    figure, axes = plt.subplots(figsize=(8, 4.8))
    for layout in sorted(lines, key=lambda k: (k != "aligned", k)):
        points = sorted(lines[layout].items())
        axes.plot([w for w, _ in points], [f for _, f in points], marker="o",
                  linewidth=2.2 if layout == "aligned" else 1, label=layout)
    axes.axhline(1.0, color="grey", linewidth=0.8)
    axes.set_xscale("log", base=2)
    axes.set_xticks([2, 3, 4, 5, 6, 7, 8, 16], ["2", "3", "4", "5", "6", "7", "8", "16"])
    axes.set_ylim(0.85, 1.03)
    axes.set_xlabel("W (slots folded)")
    axes.set_ylabel("copy_fraction: cudaMemcpy D2D time ÷ fold time")
    axes.set_title("CUDA fold kernel, 256 MiB per slot, default shape per W: "
                   + data["context"].get("gpu", "GPU").split(" (")[0], fontsize=10)
    axes.grid(True, alpha=0.3)
    axes.legend(title="slot layout (16-byte phase)", fontsize=8, ncol=2)
    save(figure, out, "fold-copy-fraction.png", [source])


def ratio_lines(data, family, key):
    lines = collections.defaultdict(list)
    for b in medians(data, family + "/"):
        m = re.search(r"W:(\d+)/MiB:(\d+)", b["name"])
        lines[int(m.group(1))].append((int(m.group(2)), b[key]))
    return {w: sorted(p) for w, p in sorted(lines.items())}


def plot_gloo(results, out):
    fixed_source, exact_source = "gloo-epyc-2vcpu-vm.json", "gloo-exact-epyc-2vcpu-vm-rerun.json"
    panels = [
        (ratio_lines(load(results, fixed_source), "BM_FixedOrderVsGlooRing",
                     "ratio_fixed_over_ring"), "fixed-order ÷ Gloo ring", [(1.0, "target ≤ 1.0 from 16 MiB"), (1.1, "target ≤ 1.1 at 1 MiB")]),
        (ratio_lines(load(results, exact_source), "BM_ExactVsGlooRing", "ratio_exact_over_ring"),
         "exact ÷ Gloo ring (normal data)", [(3.0, "target ≤ 3 at W = 4")]),
    ]
    figure, all_axes = plt.subplots(1, 2, figsize=(11, 4.6))
    for axes, (lines, title, targets) in zip(all_axes, panels):
        for w, points in lines.items():
            axes.plot([m for m, _ in points], [r for _, r in points], marker="o", label=f"W = {w}")
            for mib, ratio in points:
                axes.annotate(f"{ratio:.2f}", (mib, ratio), textcoords="offset points",
                              xytext=(0, 5), ha="center", fontsize=7)
        for value, label in targets:
            axes.axhline(value, color="grey", linestyle="--", linewidth=0.8, label=label)
        axes.set_xscale("log", base=2)
        sizes = sorted({m for p in lines.values() for m, _ in p})
        axes.set_xticks(sizes, [str(s) for s in sizes])
        axes.set_xlabel("arena size per rank (MiB)")
        axes.set_ylabel("time ratio (median of 5)")
        axes.set_title(title, fontsize=10)
        axes.grid(True, alpha=0.3)
        axes.legend(fontsize=8)
    figure.suptitle("Over Gloo, thread per rank, loopback TCP, 2-vCPU VM", fontsize=10)
    save(figure, out, "gloo-ratio.png", [fixed_source, exact_source])


def plot_exact(results, out):
    source = "cuda-exact-h200.json"
    data = load(results, source)
    bars = []
    for family in ("BM_ExactAgreement/", "BM_ExactEncode/", "BM_ExactRound/",
                   "BM_ExactRoundMeanOfThree/", "BM_ReadOnlyProbe/"):
        for b in medians(data, family):
            bars.append((b["label"], b["copy_fraction"]))
    stacked = collections.defaultdict(list)
    for b in medians(data, "BM_ExactStacked/"):
        w = int(re.search(r"world:(\d+)", b["name"]).group(1))
        op = "mean" if "mean:1" in b["name"] else "sum"
        stacked[op].append((w, b["copy_fraction"]))
    figure, (left, right) = plt.subplots(1, 2, figsize=(12, 5.2),
                                         gridspec_kw={"width_ratios": [1.6, 1]})
    labels = [label.replace(" (default)", " *") for label, _ in bars]
    colours = ["tab:blue" if "(default)" in label else
               ("tab:green" if "probe" in label else "tab:grey") for label, _ in bars]
    y = range(len(bars))
    left.barh(list(y), [f for _, f in bars], color=colours)
    for i, (_, f) in enumerate(bars):
        left.text(f + 0.01, i, f"{f:.3f}", va="center", fontsize=7)
    left.set_yticks(list(y), labels, fontsize=7)
    left.invert_yaxis()
    left.axvline(0.8, color="grey", linestyle="--", linewidth=0.8)
    left.set_xlim(0, 1.12)
    left.set_xlabel("copy_fraction: cudaMemcpy time ÷ kernel time, same bytes")
    left.set_title(f"exact kernels, {data['context'].get('values', '')}, W = "
                   f"{data['context'].get('world', '?')} (* default; grey: variants)",
                   fontsize=9)
    left.grid(True, axis="x", alpha=0.3)
    for op, points in sorted(stacked.items(), reverse=True):
        points.sort()
        right.plot([w for w, _ in points], [f for _, f in points], marker="o", label=op)
    right.set_ylim(0.8, 1.03)
    right.set_xticks([2, 3, 4, 6, 8])
    right.set_xlabel("W (slots)")
    right.set_ylabel("copy_fraction ((W + 1) · 4 B per element)")
    right.set_title("stacked exact reduction, one launch", fontsize=9)
    right.grid(True, alpha=0.3)
    right.legend(fontsize=8)
    figure.suptitle(data["context"].get("gpu", "GPU"), fontsize=10)
    save(figure, out, "exact-kernels.png", [source])


def plot_hooks(results, out):
    runs = []
    for path in sorted(glob.glob(os.path.join(results, "ddp-hook-h200*.json"))):
        with open(path) as f:
            data = json.load(f)
        commit = re.search(r"commit (\w+)", data["machine"]["library"]).group(1)[:7]
        steps = data["overhead"][0]["steps_per_hook"]
        runs.append((os.path.basename(path), f"{commit}, {steps} steps/hook", data["overhead"]))
    figure, axes = plt.subplots(figsize=(8, 4.8))
    markers = ["o", "s", "^", "D"]
    colours = {"fixed_order_hook": "tab:blue", "exact_hook": "tab:orange",
               "allreduce_hook": "tab:grey"}
    for k, (_, run_label, overhead) in enumerate(runs):
        for hook, colour in colours.items():
            points = [(o["batch"], o["ratio_to_ddp_default"][hook]) for o in overhead]
            axes.plot([b for b, _ in points], [r for _, r in points], color=colour,
                      marker=markers[k % len(markers)], linewidth=0.8, alpha=0.85,
                      label=f"{hook} ({run_label})")
    axes.axhline(1.3, color="grey", linestyle="--", linewidth=0.8, label="target ≤ 1.3×")
    axes.axhline(1.0, color="grey", linewidth=0.6)
    axes.set_xscale("log", base=2)
    axes.set_xticks([256, 1024, 4096], ["256", "1024", "4096"])
    axes.set_xlabel("batch (MLP width 4096, depth 6: 109 M parameters)")
    axes.set_ylabel("step time ÷ DDP's default all-reduce (median)")
    axes.set_title("DDP hooks on an NCCL world of one (H200)", fontsize=10)
    axes.grid(True, alpha=0.3)
    axes.legend(fontsize=7)
    save(figure, out, "ddp-hook-overhead.png", [r[0] for r in runs])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    parser.add_argument("--results", default=os.path.join(root, "bench", "results"))
    parser.add_argument("--out", default=os.path.join(root, "docs", "img"))
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    plot_fold(args.results, args.out)
    plot_gloo(args.results, args.out)
    plot_exact(args.results, args.out)
    plot_hooks(args.results, args.out)


if __name__ == "__main__":
    main()
