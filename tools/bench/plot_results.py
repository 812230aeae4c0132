#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Latency-versus-size plots for docs/, made from the benchmark CSVs (never typed in by hand).

  tools/bench/plot_results.py kernels  docs/results/kernels_bf16_h200x2.csv  --oneshot 1MiB --twoshot 8MiB \
      --title "2x H200 NVLink, bf16 sum, CUDA graph" --out docs/results/kernels_bf16_h200x2.png
  tools/bench/plot_results.py nccl-tests docs/results/nccl-tests-latency-threads_h200x2.csv \
      --title "nccl-tests all_reduce_perf -G 20 -t 2 -g 1, float sum" --out docs/results/nccl-tests_h200x2.png
  tools/bench/plot_results.py torch docs/results/torch-allreduce-graph_h200x2.csv \
      --title "PyTorch dist.all_reduce, bf16, CUDA graph" --out docs/results/torch_h200x2.png
  tools/bench/plot_results.py nccl-tests docs/results/nccl-tests-latency-tuned-table_h200x2.csv \
      --title "nccl-tests -G 20 -t 2 -g 1, float sum, plugin with symmem-tune's table" \
      --out docs/results/nccl-tests-tuned-table_h200x2.png

`kernels` reads symmem-bench CSV (columns bytes,path,mode,median_us) and draws stock NCCL, NCCL symmetric
windows, both kernels in every variant the CSV has (one-shot, two-shot: push; one-shot-pull, ...), and the
plugin (the path the table picks at each size, given its limits, in the variant --variant names).
`nccl-tests` reads nccl-tests-configs/run.sh's results.csv; `torch` reads tests/torch's CSV.
Needs matplotlib (Debian: python3-matplotlib).
"""
import argparse
import csv
import sys


def parse_size(text):
    units = {"": 1, "b": 1, "k": 1024, "kib": 1024, "m": 1 << 20, "mib": 1 << 20, "g": 1 << 30, "gib": 1 << 30}
    digits = text.rstrip("bBkKmMgGiI")
    return int(digits) * units[text[len(digits):].lower()]


def size_label(b):
    for unit, shift in (("MiB", 20), ("KiB", 10)):
        if b >= 1 << shift and b % (1 << shift) == 0:
            return f"{b >> shift} {unit}"
    return f"{b} B"


def load(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


# symmem-bench's path column: the push kernels keep the names they had before the variants.
KERNEL_NAMES = {"nccl": "stock NCCL", "nccl-win": "NCCL symmetric windows", "one-shot": "one-shot kernel",
                "two-shot": "two-shot kernel", "one-shot-pull": "one-shot pull kernel",
                "two-shot-pull": "two-shot pull kernel", "one-shot-staged": "one-shot staged kernel",
                "two-shot-staged": "two-shot staged kernel", "one-shot-halves": "one-shot halves kernel",
                "two-shot-halves": "two-shot halves kernel"}


def kernel_path(algorithm, variant):
    return algorithm if variant == "push" else f"{algorithm}-{variant}"


def kernels_series(rows, mode, oneshot, twoshot, variant="push"):
    series = {}
    for r in rows:
        if r.get("mode") != mode or r["path"] not in KERNEL_NAMES:
            continue
        series.setdefault(r["path"], {})[int(r["bytes"])] = float(r["median_us"])
    one, two = series.get(kernel_path("one-shot", variant), {}), series.get(kernel_path("two-shot", variant), {})
    plugin = {}
    for b, t in series.get("nccl", {}).items():
        if b <= oneshot and b in one:
            plugin[b] = one[b]
        elif b <= twoshot and b in two:
            plugin[b] = two[b]
        else:
            plugin[b] = t
    out = {KERNEL_NAMES[k]: series[k] for k in KERNEL_NAMES if k in series}
    out["nccl-symmem (table's choice)"] = plugin
    return out


def pair_series(rows, stock_col, plugin_col):
    stock, plugin = {}, {}
    for r in rows:
        b = int(r.get("size_bytes") or r.get("bytes"))
        stock[b] = float(r[stock_col])
        plugin[b] = float(r[plugin_col])
    return {"stock NCCL": stock, "nccl-symmem (NCCL_TUNER_PLUGIN)": plugin}


def draw(series, title, out):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9, 5.5))
    styles = {"stock NCCL": "k-o", "NCCL symmetric windows": "b--s", "one-shot kernel": "g:^",
              "two-shot kernel": "m:v", "one-shot pull kernel": "g-.>", "two-shot pull kernel": "m-.<",
              "one-shot staged kernel": "y:^", "two-shot staged kernel": "c:v", "one-shot halves kernel": "r--^",
              "two-shot halves kernel": "r-.v"}
    for name, points in series.items():
        xs = sorted(points)
        if "symmem" in name:  # wide and pale underneath, so the kernel it picked stays visible on top
            ax.plot(xs, [points[x] for x in xs], "r-", label=name, linewidth=6, alpha=0.35, zorder=1)
        else:
            ax.plot(xs, [points[x] for x in xs], styles.get(name, "c-D"), label=name, linewidth=1.2, markersize=4,
                    zorder=2)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ticks = [x for x in sorted({x for p in series.values() for x in p}) if (x.bit_length() - 1) % 2 == 1]
    ax.set_xticks(ticks)
    ax.set_xticklabels([size_label(t) for t in ticks], rotation=45, ha="right")
    ax.set_xlabel("message size")
    ax.set_ylabel("time per all-reduce (us, log scale)")
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    print(f"wrote {out}")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("kind", choices=["kernels", "nccl-tests", "torch"])
    p.add_argument("csv")
    p.add_argument("--out", required=True)
    p.add_argument("--title", default="")
    p.add_argument("--mode", default="graph", help="kernels: graph or eager")
    p.add_argument("--oneshot", default="0", help="kernels: the table's one-shot limit, e.g. 1MiB")
    p.add_argument("--twoshot", default="0", help="kernels: the table's two-shot limit, e.g. 8MiB")
    p.add_argument("--variant", default="push", choices=["push", "pull", "staged"],
                   help="kernels: the variant of the table's symmetric bands (default push)")
    args = p.parse_args()
    rows = load(args.csv)
    if not rows:
        sys.exit(f"{args.csv}: no rows")
    if args.kind == "kernels":
        series = kernels_series(rows, args.mode, parse_size(args.oneshot), parse_size(args.twoshot), args.variant)
    elif args.kind == "nccl-tests":
        series = pair_series(rows, "stock_oop_us", "plugin_oop_us")
    else:
        series = pair_series(rows, "stock_us", "plugin_us")
    draw(series, args.title, args.out)


if __name__ == "__main__":
    main()
