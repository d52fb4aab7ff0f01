#!/usr/bin/env python3
"""Markdown tables from a bench_cuda fold JSON (BM_FoldVsCopy, run with repetitions).

Prints, per W, how the default shape's realigned layouts compare with the aligned (vector)
figure of the same run (the issue's target: >= 0.95 of aligned at every alignment), then
every median row. Reads only the JSON; writes to stdout.

    bench/fold_table.py bench/results/cuda-fold-h200.json
"""
import json
import re
import sys
from collections import defaultdict


def medians(path):
    data = json.load(open(path))
    rows = []
    for b in data["benchmarks"]:
        if b.get("aggregate_name") != "median":
            continue
        args = dict(re.findall(r"(\w+):(\d+)", b["run_name"].split("/iterations")[0]))
        rows.append({
            "name": b["run_name"].split("/iterations")[0],
            "W": int(args["W"]),
            "label": b.get("label", ""),
            "fold": b["fold_GBps"],
            "copy": b["copy_GBps"],
            "fraction": b["copy_fraction"],
        })
    return data.get("context", {}), rows


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    context, rows = medians(sys.argv[1])
    print(f"GPU: {context.get('gpu')}; driver {context.get('nvidia_driver')}; "
          f"CUDA {context.get('cuda_runtime')}; run {context.get('date')}\n")

    by_world = defaultdict(list)
    for row in rows:
        if row["label"].endswith("(default)"):
            by_world[row["W"]].append(row)
    print("| W | aligned (vector) | realigned layouts, default shape | ÷ aligned |")
    print("|---|---|---|---|")
    for world in sorted(by_world):
        aligned = [r["fraction"] for r in by_world[world] if " vector " in r["label"]]
        realigned = [r["fraction"] for r in by_world[world] if " realigned/" in r["label"]]
        if not aligned or not realigned:
            continue
        low, high = min(realigned), max(realigned)
        print(f"| {world} | {aligned[0]:.3f} | {low:.3f}–{high:.3f} | "
              f"{low / aligned[0]:.3f}–{high / aligned[0]:.3f} |")

    print("\n| benchmark | label | fold GB/s | copy GB/s | copy_fraction |")
    print("|---|---|---|---|---|")
    for row in rows:
        print(f"| `{row['name']}` | {row['label']} | {row['fold']:.0f} | "
              f"{row['copy']:.0f} | {row['fraction']:.3f} |")


if __name__ == "__main__":
    main()
