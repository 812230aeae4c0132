#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Draws symmem_floor_bench's CSV (tests/bench/shared_gpu_floor.cu): per-call time against message size
for each path under CUDA graphs, with the empty kernel's floor, one panel per rank count.

    tools/bench/plot_floor.py floor.csv floor.png
Exit codes: 0 drawn, 2 usage or unreadable CSV, 3 matplotlib missing.
"""
import csv
import math
import sys


def main(argv):
    if len(argv) != 3:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    try:
        with open(argv[1], newline="") as f:
            rows = list(csv.DictReader(f))
    except OSError as e:
        print(f"plot_floor: cannot read {argv[1]}: {e}", file=sys.stderr)
        return 2
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("plot_floor: matplotlib is not installed (apt-get install python3-matplotlib)", file=sys.stderr)
        return 3
    good = []
    for r in rows:
        try:
            r["ranks"], r["bytes"], r["us"] = int(r["ranks"]), int(r["bytes"]), float(r["us_median"])
        except (KeyError, ValueError):
            continue
        if math.isfinite(r["us"]) and r["us"] > 0:
            good.append(r)
    # A call faster than half an empty kernel did not run (its communicator timed out earlier and its
    # kernels exit at once): not a measurement.
    empties = {(r["ranks"], r["mode"]): r["us"] for r in good if r["path"] == "empty-kernel"}
    dropped = [r for r in good if r["path"] != "empty-kernel" and r["us"] < 0.5 * empties.get((r["ranks"], r["mode"]), 0)]
    if dropped:
        print(f"plot_floor: {len(dropped)} rows faster than half an empty kernel left out (kernels that did not run)",
              file=sys.stderr)
    good = [r for r in good if r not in dropped]
    ranks = sorted({r["ranks"] for r in good if r["path"] not in ("nccl-1rank", "flag-round-trip")})
    if not ranks:
        print(f"plot_floor: no symmetric rows in {argv[1]}", file=sys.stderr)
        return 2
    fig, axes = plt.subplots(1, len(ranks), figsize=(5 * len(ranks), 4), squeeze=False)
    for ax, n in zip(axes[0], ranks):
        for path in sorted({r["path"] for r in good if r["ranks"] == n and r["mode"] == "graph"}):
            for ordered in ("1", "0"):
                pts = sorted((r["bytes"], r["us"]) for r in good
                             if r["ranks"] == n and r["path"] == path and r["mode"] == "graph" and r["ordered"] == ordered)
                if not pts or path == "empty-kernel":
                    continue
                label = path + ("" if ordered == "1" else " (order off)")
                ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", linestyle="-" if ordered == "1" else ":",
                        label=label)
        empty = [r["us"] for r in good if r["ranks"] == n and r["path"] == "empty-kernel" and r["mode"] == "graph"]
        if empty:
            ax.axhline(empty[0], color="black", linewidth=1, label="empty kernel")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("bytes")
        ax.set_ylabel("us per call (graph)")
        ax.set_title(f"{n} ranks sharing one GPU")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=6)
    fig.tight_layout()
    fig.savefig(argv[2], dpi=110)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
