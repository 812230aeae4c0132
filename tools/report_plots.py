#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""symmem-report-plots DIR: the plots of a symmem-report folder, made from its CSVs.

  DIR/latency.csv (symmem-tune)  -> DIR/latency-<N>ranks.png, one per world size: median latency
                                    against message size, log-log; stock NCCL bold, each symmetric
                                    kernel variant, NCCL's forced algorithm/protocol configurations
                                    thin, and the path the tuned table picks at each size marked.
  DIR/health.csv (symmem-health) -> DIR/health-bandwidth.png: write and read bandwidth of every
                                    ordered GPU pair alone, and per GPU with all GPUs at once.

Exit 0 when the plots were drawn or there was nothing to plot (said on stdout), 3 when matplotlib is
missing (python3 -m pip install matplotlib, or apt-get install python3-matplotlib), 2 for a bad
command line. Existing PNGs are never replaced. symmem-report runs this as its last step; run it
again on a folder whose report says the plots were not drawn.
"""
import csv
import os
import sys

LATENCY_HEADER = ["ranks", "link", "cc", "bytes", "path", "median_us", "min_us", "max_us", "chosen"]
HEALTH_HEADER = ["record", "gpu_a", "gpu_b", "field", "value"]

# symmem-tune's path column: stock NCCL, NCCL forced to one algorithm/protocol, our kernel variants.
STOCK = "nccl"
NCCL_CONFIGS = ["nccl-ring-ll", "nccl-ring-ll128", "nccl-ring-simple", "nccl-tree-ll", "nccl-tree-ll128",
                "nccl-tree-simple"]
VARIANTS = ["oneshot-push", "oneshot-pull", "oneshot-staged", "twoshot-push", "twoshot-pull", "twoshot-staged"]
VARIANT_COLOURS = {"oneshot-push": "#1f77b4", "oneshot-pull": "#17becf", "oneshot-staged": "#9467bd",
                   "twoshot-push": "#d62728", "twoshot-pull": "#ff7f0e", "twoshot-staged": "#8c564b"}


def number(text):
    """The float in a CSV cell, or None for an empty or unreadable one (not measured)."""
    try:
        value = float(text)
    except (TypeError, ValueError):
        return None
    return value if value == value else None  # NaN: not measured


def read_csv(path, header):
    """The rows of path as dicts, or (None, why) when it is missing or not the expected CSV."""
    if not os.path.isfile(path):
        return None, f"{os.path.basename(path)}: not in the folder"
    with open(path, newline="", encoding="utf-8", errors="replace") as f:
        reader = csv.reader(f)
        first = next(reader, None)
        if first is None:
            return None, f"{os.path.basename(path)}: empty"
        if [c.strip() for c in first] != header:
            return None, f"{os.path.basename(path)}: header is not {','.join(header)}"
        rows = [dict(zip(header, (c.strip() for c in r))) for r in reader if r]
    return rows, None


def size_label(b):
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if b >= 1 << shift and b % (1 << shift) == 0:
            return f"{b >> shift} {unit}"
    return f"{int(b)} B"


def latency_series(rows):
    """{(ranks, link, cc): {path: {bytes: median_us}}} and {(ranks, link, cc): {bytes: chosen path}}."""
    series, chosen = {}, {}
    for r in rows:
        ranks, size, median = number(r["ranks"]), number(r["bytes"]), number(r["median_us"])
        if ranks is None or size is None or size <= 0:
            continue
        key = (int(ranks), r["link"], r["cc"])
        if median is not None and median > 0:
            series.setdefault(key, {}).setdefault(r["path"], {})[int(size)] = median
            if r["chosen"] == "1":
                chosen.setdefault(key, {})[int(size)] = r["path"]
    return series, chosen


def health_series(rows):
    """{(a, b): {field: value}} for pairs and {gpu: {field: value}} for all-at-once rows."""
    pairs, everyone = {}, {}
    for r in rows:
        value = number(r["value"])
        if value is None:
            continue
        if r["record"] == "pair" and r["field"] in ("writeGBs", "readGBs"):
            pairs.setdefault((r["gpu_a"], r["gpu_b"]), {})[r["field"]] = value
        elif r["record"] == "all" and r["field"] in ("writeGBsPerGpu", "readGBsPerGpu"):
            everyone.setdefault(r["gpu_a"], {})[r["field"]] = value
    return pairs, everyone


def sort_key(text):
    n = number(text)
    return (0, n, "") if n is not None else (1, 0, text)


def new_png(folder, name, written):
    path = os.path.join(folder, name)
    if os.path.exists(path):
        print(f"symmem-report-plots: {name} exists, not replaced")
        return None
    written.append(name)
    return path


def plot_latency(plt, folder, series, chosen, written):
    ranks_seen = {}
    for key in series:
        ranks_seen[key[0]] = ranks_seen.get(key[0], 0) + 1
    for key in sorted(series):
        ranks, link, cc = key
        name = f"latency-{ranks}ranks.png" if ranks_seen[ranks] == 1 else f"latency-{ranks}ranks-{link}-cc{cc}.png"
        path = new_png(folder, name, written)
        if path is None:
            continue
        fig, ax = plt.subplots(figsize=(8, 5))
        paths = series[key]
        for p in NCCL_CONFIGS + sorted(set(paths) - set(NCCL_CONFIGS) - set(VARIANTS) - {STOCK}):
            if p in paths:
                xs = sorted(paths[p])
                ax.plot(xs, [paths[p][x] for x in xs], color="0.6", linewidth=0.8, linestyle="--", label=p)
        for p in VARIANTS:
            if p in paths:
                xs = sorted(paths[p])
                ax.plot(xs, [paths[p][x] for x in xs], color=VARIANT_COLOURS[p], linewidth=1.5, marker=".",
                        label=p)
        if STOCK in paths:
            xs = sorted(paths[STOCK])
            ax.plot(xs, [paths[STOCK][x] for x in xs], color="black", linewidth=2.8, label="stock NCCL")
        picks = chosen.get(key, {})
        marked = [(x, paths[p][x]) for x, p in sorted(picks.items()) if x in paths.get(p, {})]
        if marked:
            ax.scatter([m[0] for m in marked], [m[1] for m in marked], s=90, facecolors="none", edgecolors="green",
                       linewidths=1.8, zorder=5, label="chosen by the table")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ticks = sorted({x for p in paths.values() for x in p})
        if ticks:
            step = max(1, len(ticks) // 8)
            ax.set_xticks(ticks[::step])
            ax.set_xticklabels([size_label(t) for t in ticks[::step]], rotation=30)
        ax.set_xlabel("message size")
        ax.set_ylabel("median latency (us)")
        ax.set_title(f"all-reduce, {ranks} ranks, {link}, cc {cc}")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7, ncol=2)
        fig.tight_layout()
        fig.savefig(path, dpi=90)
        plt.close(fig)


def plot_health(plt, folder, pairs, everyone, written):
    path = new_png(folder, "health-bandwidth.png", written)
    if path is None:
        return
    panels = [p for p in (pairs, everyone) if p]
    fig, axes = plt.subplots(len(panels), 1, figsize=(max(6, 0.35 * len(pairs) + 3), 3.6 * len(panels)), squeeze=False)
    width = 0.4
    row = 0
    if pairs:
        ax = axes[row][0]
        row += 1
        keys = sorted(pairs, key=lambda k: (sort_key(k[0]), sort_key(k[1])))
        xs = range(len(keys))
        for offset, field, colour in ((-width / 2, "writeGBs", "#1f77b4"), (width / 2, "readGBs", "#ff7f0e")):
            ax.bar([x + offset for x in xs], [pairs[k].get(field, float("nan")) for k in keys], width, color=colour,
                   label=field.replace("GBs", ""))
        ax.set_xticks(list(xs))
        ax.set_xticklabels([f"{a}\u2192{b}" for a, b in keys], rotation=60, fontsize=7)
        ax.set_ylabel("GB/s")
        ax.set_title("each ordered GPU pair alone (a writes to / reads from b)")
        ax.legend(fontsize=8)
        ax.grid(True, axis="y", alpha=0.3)
    if everyone:
        ax = axes[row][0]
        keys = sorted(everyone, key=sort_key)
        xs = range(len(keys))
        for offset, field, colour in ((-width / 2, "writeGBsPerGpu", "#1f77b4"),
                                      (width / 2, "readGBsPerGpu", "#ff7f0e")):
            ax.bar([x + offset for x in xs], [everyone[k].get(field, float("nan")) for k in keys], width, color=colour,
                   label=field.replace("GBsPerGpu", ""))
        ax.set_xticks(list(xs))
        ax.set_xticklabels([f"GPU {k}" for k in keys], fontsize=8)
        ax.set_ylabel("GB/s per GPU")
        ax.set_title("all GPUs at once (each to every peer)")
        ax.legend(fontsize=8)
        ax.grid(True, axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def main(argv):
    if len(argv) != 2 or argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if len(argv) == 2 else 2
    folder = argv[1]
    if not os.path.isdir(folder):
        print(f"symmem-report-plots: {folder} is not a folder", file=sys.stderr)
        return 2
    latency, why_latency = read_csv(os.path.join(folder, "latency.csv"), LATENCY_HEADER)
    health, why_health = read_csv(os.path.join(folder, "health.csv"), HEALTH_HEADER)
    series, chosen = latency_series(latency or [])
    pairs, everyone = health_series(health or [])
    if not series and not pairs and not everyone:
        reasons = "; ".join(w for w in (why_latency, why_health) if w) or "no measured values in the CSVs"
        print(f"symmem-report-plots: nothing to plot in {folder} ({reasons})")
        return 0
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print(f"symmem-report-plots: matplotlib is not installed for {sys.executable}: install it "
              "(python3 -m pip install matplotlib, or apt-get install python3-matplotlib) and run "
              f"symmem-report-plots {folder} again; the CSVs are in the folder", file=sys.stderr)
        return 3
    written = []
    if series:
        plot_latency(plt, folder, series, chosen, written)
    if pairs or everyone:
        plot_health(plt, folder, pairs, everyone, written)
    for reason in (why_latency, why_health):
        if reason:
            print(f"symmem-report-plots: {reason}")
    print(f"symmem-report-plots: wrote {', '.join(written) if written else 'nothing new'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
