#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Draws symmem_floor_bench's CSV (tests/bench/shared_gpu_floor.cu): per-call time against message size
for each path under CUDA graphs, with the empty kernel's floor, one panel per rank count. With
--before, a second CSV of the same bench (an earlier build, measured in the same run) is drawn beside
it in grey, dashed, its paths marked "(before)".

    tools/bench/plot_floor.py floor.csv floor.png [--before earlier.csv]
Exit codes: 0 drawn, 2 usage or unreadable CSV, 3 matplotlib missing.
"""
import csv
import math
import sys


def read_rows(path):
    """The measured rows of one CSV (None if it cannot be read), kernels that did not run left out."""
    try:
        with open(path, newline="") as f:
            rows = list(csv.DictReader(f))
    except OSError as e:
        print(f"plot_floor: cannot read {path}: {e}", file=sys.stderr)
        return None
    good = []
    for r in rows:
        try:
            r["ranks"], r["bytes"], r["us"] = int(r["ranks"]), int(r["bytes"]), float(r["us_median"])
        except (KeyError, ValueError, TypeError):
            continue
        if math.isfinite(r["us"]) and r["us"] > 0:
            good.append(r)
    # A call faster than half an empty kernel did not run (its communicator timed out earlier and its
    # kernels exit at once): not a measurement.
    empties = {(r["ranks"], r["mode"]): r["us"] for r in good if r["path"] == "empty-kernel"}
    dropped = [r for r in good if r["path"] != "empty-kernel" and r["us"] < 0.5 * empties.get((r["ranks"], r["mode"]), 0)]
    if dropped:
        print(f"plot_floor: {path}: {len(dropped)} rows faster than half an empty kernel left out "
              "(kernels that did not run)", file=sys.stderr)
    return [r for r in good if r not in dropped]


def graph_points(rows, n, path, ordered):
    return sorted((r["bytes"], r["us"]) for r in rows
                  if r["ranks"] == n and r["path"] == path and r["mode"] == "graph" and r["ordered"] == ordered)


def main(argv):
    args = argv[1:]
    before_csv = None
    if "--before" in args:
        i = args.index("--before")
        if i + 1 >= len(args):
            print(__doc__.strip(), file=sys.stderr)
            return 2
        before_csv = args[i + 1]
        del args[i:i + 2]
    if len(args) != 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    good = read_rows(args[0])
    before = read_rows(before_csv) if before_csv else []
    if good is None or before is None:
        return 2
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("plot_floor: matplotlib is not installed (apt-get install python3-matplotlib)", file=sys.stderr)
        return 3
    ranks = sorted({r["ranks"] for r in good if r["path"] not in ("nccl-1rank", "flag-round-trip")})
    if not ranks:
        print(f"plot_floor: no symmetric rows in {args[0]}", file=sys.stderr)
        return 2
    fig, axes = plt.subplots(1, len(ranks), figsize=(5 * len(ranks), 4), squeeze=False)
    for ax, n in zip(axes[0], ranks):
        for path in sorted({r["path"] for r in good if r["ranks"] == n and r["mode"] == "graph"}):
            for ordered in ("1", "0"):
                pts = graph_points(good, n, path, ordered)
                if not pts or path.startswith("empty-kernel"):
                    continue
                label = path + ("" if ordered == "1" else " (order off)")
                ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", linestyle="-" if ordered == "1" else ":",
                        label=label)
        for path in sorted({r["path"] for r in before if r["ranks"] == n and r["mode"] == "graph"}):
            pts = graph_points(before, n, path, "1")
            if pts and not path.startswith("empty-kernel"):
                ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="x", linestyle="--", color="grey",
                        label=path + " (before)")
        empty = [r["us"] for r in good if r["ranks"] == n and r["path"] == "empty-kernel" and r["mode"] == "graph"]
        if empty:
            ax.axhline(empty[0], color="black", linewidth=1, label="empty kernel")
        empty = [r["us"] for r in good
                 if r["ranks"] == n and r["path"] == "empty-kernel-programmatic" and r["mode"] == "graph"]
        if empty:
            ax.axhline(empty[0], color="black", linewidth=1, linestyle="--", label="empty kernel, programmatic launch")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("bytes")
        ax.set_ylabel("us per call (graph)")
        ax.set_title(f"{n} ranks sharing one GPU")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=6)
    fig.tight_layout()
    fig.savefig(args[1], dpi=110)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
