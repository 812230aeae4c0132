#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""symmem-report-plots DIR: the plots of a symmem-report folder, made from its CSVs.

  DIR/latency.csv (symmem-tune)  -> DIR/latency-<N>ranks.png, one per world size: median latency
                                    against message size, log-log; stock NCCL bold, each symmetric
                                    kernel variant, NCCL's forced algorithm/protocol configurations
                                    thin, and the path the tuned table picks at each size marked.
  DIR/health.csv (symmem-health) -> DIR/health-bandwidth.png: write and read bandwidth of every
                                    ordered GPU pair alone, and per GPU with all GPUs at once.

Exit 0 when the plots were drawn or there was nothing to plot (said on stdout; a row with an
impossible value is skipped and named, a plot that cannot be drawn is named with why), 3 when
matplotlib is missing (python3 -m pip install matplotlib, or apt-get install python3-matplotlib), 2 for
a bad command line or a folder it cannot read. Existing PNGs are never replaced. symmem-report runs
this as its last step; run it again on a folder whose report says the plots were not drawn.

Every file is opened relative to the folder, held open from the start, without following links: a
PNG is only ever created new inside DIR, and the parts of its name that come from the data (the link
class, the capability) keep only letters, digits and ". _ -".
"""
import csv
import io
import math
import os
import re
import stat
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


CSV_MAX_BYTES = 16 << 20
MAX_RANKS = 1024           # symmem-tune's world sizes
MAX_BYTES = 1 << 40        # a message size
MAX_LATENCY_US = 3.6e9     # an hour: no latency of one call
MAX_GBS = 1e5              # 100 TB/s: no GPU link
MAX_GPU = 63               # --gpus takes 0-63
BARS_UP_TO_GPUS = 8        # more GPUs: the pairs as a matrix, not one bar each
NAME_PART_CHARS = re.compile(r"[^A-Za-z0-9._-]")


def number(text):
    """The finite float in a CSV cell, or None for an empty, unreadable or infinite one."""
    try:
        value = float(text)
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) else None


def whole(text, low, high):
    """The whole number low..high in a CSV cell, or None."""
    value = number(text)
    if value is None or value != int(value) or not low <= value <= high:
        return None
    return int(value)


def name_part(text):
    """A part of a file name taken from the data: letters, digits and ". _ -" only, and short."""
    return NAME_PART_CHARS.sub("_", text)[:40] or "_"


def label(text):
    """Text from the data as a plot shows it: printable and short ($ would start matplotlib's math)."""
    return "".join(c if c.isprintable() else "?" for c in text)[:40]


def read_csv(dir_fd, name, header):
    """The rows of DIR/name as (line number, dict), or (None, why) when it is missing or not that CSV."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=dir_fd)
    except FileNotFoundError:
        return None, f"{name}: not in the folder"
    except OSError as e:
        return None, f"{name}: cannot open: {e.strerror}"
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            return None, f"{name}: not a regular file"
        data = f.read(CSV_MAX_BYTES + 1)
    if len(data) > CSV_MAX_BYTES:
        return None, f"{name}: larger than {CSV_MAX_BYTES} bytes"
    text = data.decode("utf-8", errors="replace").replace("\0", "")
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        first = next(reader, None)
        if first is None:
            return None, f"{name}: empty"
        if [c.strip() for c in first] != header:
            return None, f"{name}: header is not {','.join(header)}"
        rows = [(reader.line_num, dict(zip(header, (c.strip() for c in r)))) for r in reader if r]
    except csv.Error as e:
        return None, f"{name}: not a CSV ({e})"
    return [(n, r) for n, r in rows if len(r) == len(header)], None


class Skipped:
    """Rows left out for an impossible value: counted, the first one named."""

    def __init__(self, name):
        self.name, self.count, self.first = name, 0, None

    def add(self, line, why):
        self.count += 1
        if self.first is None:
            self.first = f"line {line}: {why}"

    def text(self):
        if not self.count:
            return None
        return f"{self.name}: {self.count} row{'s' if self.count > 1 else ''} skipped ({self.first})"


def size_label(b):
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if b >= 1 << shift and b % (1 << shift) == 0:
            return f"{b >> shift} {unit}"
    return f"{int(b)} B"


def latency_series(rows, skipped):
    """{(ranks, link, cc): {path: {bytes: median_us}}} and {(ranks, link, cc): {bytes: chosen path}}."""
    series, chosen = {}, {}
    for line, r in rows:
        ranks, size = whole(r["ranks"], 1, MAX_RANKS), whole(r["bytes"], 1, MAX_BYTES)
        if ranks is None:
            skipped.add(line, f"ranks '{label(r['ranks'])}' is not a world size (1-{MAX_RANKS})")
            continue
        if size is None:
            skipped.add(line, f"bytes '{label(r['bytes'])}' is not a message size (1-{MAX_BYTES})")
            continue
        if r["median_us"] == "":
            continue  # not measured
        median = number(r["median_us"])
        if median is None or not 0 < median <= MAX_LATENCY_US:
            skipped.add(line, f"median_us '{label(r['median_us'])}' is not a latency")
            continue
        key = (ranks, r["link"], r["cc"])
        series.setdefault(key, {}).setdefault(r["path"], {})[size] = median
        if r["chosen"] == "1":
            chosen.setdefault(key, {})[size] = r["path"]
    return series, chosen


def health_series(rows, skipped):
    """{(a, b): {field: value}} for pairs and {gpu: {field: value}} for all-at-once rows; GPUs as ints."""
    pairs, everyone, loops = {}, {}, {}
    for line, r in rows:
        pair = r["record"] == "pair" and r["field"] in ("writeGBs", "readGBs")
        every = r["record"] == "all" and r["field"] in ("writeGBsPerGpu", "readGBsPerGpu")
        if not (pair or every) or r["value"] == "":
            continue
        value = number(r["value"])
        if value is None or not 0 < value <= MAX_GBS:
            skipped.add(line, f"{r['field']} '{label(r['value'])}' is not a bandwidth")
            continue
        a = whole(r["gpu_a"], 0, MAX_GPU)
        b = whole(r["gpu_b"], 0, MAX_GPU) if pair else None
        if a is None or (pair and b is None):
            skipped.add(line, f"'{label(r['gpu_a'])}', '{label(r['gpu_b'])}' are not GPUs (0-{MAX_GPU})")
            continue
        if pair:
            pairs.setdefault((a, b), {})[r["field"]] = value
            if a == b:
                loops.setdefault((a, b), line)
        else:
            everyone.setdefault(a, {})[r["field"]] = value
    # A GPU with itself is only the loopback check of a one-GPU node.
    if len({g for pair in pairs for g in pair}) > 1:
        for key, line in loops.items():
            skipped.add(line, f"pair {key[0]}->{key[1]} is not two different GPUs")
            del pairs[key]
    return pairs, everyone


def new_png(dir_fd, name, written):
    """A new file DIR/name opened for the PNG, or None when the name is taken (never replaced)."""
    try:
        fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644, dir_fd=dir_fd)
    except FileExistsError:
        print(f"symmem-report-plots: {name} exists, not replaced")
        return None
    except OSError as e:
        print(f"symmem-report-plots: {name}: cannot create: {e.strerror}")
        return None
    written.append(name)
    return os.fdopen(fd, "wb")


def save(plt, fig, dir_fd, name, written, problems):
    """Writes the figure as DIR/name; a failure is named (and the half-written file removed)."""
    out = new_png(dir_fd, name, written)
    if out is None:
        plt.close(fig)
        return
    try:
        with out:
            fig.savefig(out, format="png", dpi=90)
    except Exception as e:  # matplotlib's own errors, a full disk
        written.remove(name)
        problems.append(f"{name}: not drawn: {label(str(e))}")
        try:
            os.unlink(name, dir_fd=dir_fd)
        except OSError:
            pass
    finally:
        plt.close(fig)


def plot_latency(plt, dir_fd, series, chosen, written, problems):
    ranks_seen = {}
    for key in series:
        ranks_seen[key[0]] = ranks_seen.get(key[0], 0) + 1
    for key in sorted(series):
        ranks, link, cc = key
        name = (f"latency-{ranks}ranks.png" if ranks_seen[ranks] == 1
                else f"latency-{ranks}ranks-{name_part(link)}-cc{name_part(cc)}.png")
        try:
            fig = latency_figure(plt, key, series[key], chosen.get(key, {}))
        except Exception as e:  # a figure matplotlib cannot lay out
            problems.append(f"{name}: not drawn: {label(str(e))}")
            continue
        save(plt, fig, dir_fd, name, written, problems)


def latency_figure(plt, key, paths, picks):
    ranks, link, cc = key
    fig, ax = plt.subplots(figsize=(8, 5))
    for p in NCCL_CONFIGS + sorted(set(paths) - set(NCCL_CONFIGS) - set(VARIANTS) - {STOCK}):
        if p in paths:
            xs = sorted(paths[p])
            ax.plot(xs, [paths[p][x] for x in xs], color="0.6", linewidth=0.8, linestyle="--", label=label(p))
    for p in VARIANTS:
        if p in paths:
            xs = sorted(paths[p])
            ax.plot(xs, [paths[p][x] for x in xs], color=VARIANT_COLOURS[p], linewidth=1.5, marker=".",
                    label=p)
    if STOCK in paths:
        xs = sorted(paths[STOCK])
        ax.plot(xs, [paths[STOCK][x] for x in xs], color="black", linewidth=2.8, label="stock NCCL")
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
    ax.set_title(f"all-reduce, {ranks} ranks, {label(link)}, cc {label(cc)}")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    return fig


def plot_health(plt, dir_fd, pairs, everyone, written, problems):
    name = "health-bandwidth.png"
    try:
        fig = health_figure(plt, pairs, everyone)
    except Exception as e:  # a figure matplotlib cannot lay out
        problems.append(f"{name}: not drawn: {label(str(e))}")
        return
    save(plt, fig, dir_fd, name, written, problems)


def health_figure(plt, pairs, everyone):
    """Each pair alone (bars up to 8 GPUs, write and read matrices above), then per GPU all at once."""
    gpus = sorted({g for pair in pairs for g in pair})
    as_matrix = len(gpus) > BARS_UP_TO_GPUS
    panels = (1 if pairs else 0) + (1 if everyone else 0)
    width_in = min(20, max(6, 0.35 * len(pairs) + 3)) if not as_matrix else 13
    heights = ([5.5 if as_matrix else 3.6] if pairs else []) + ([3.6] if everyone else [])
    fig = plt.figure(figsize=(width_in, sum(heights)))
    grid = fig.add_gridspec(panels, 2 if as_matrix else 1, height_ratios=heights)
    width = 0.4
    row = 0
    if pairs and not as_matrix:
        ax = fig.add_subplot(grid[row, 0])
        row += 1
        keys = sorted(pairs)
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
    elif pairs:
        # One bar per ordered pair would be 4032 bars for 64 GPUs: a matrix per direction instead.
        position = {g: i for i, g in enumerate(gpus)}
        step = max(1, len(gpus) // 16)
        for column, field in enumerate(("writeGBs", "readGBs")):
            ax = fig.add_subplot(grid[row, column])
            cells = [[float("nan")] * len(gpus) for _ in gpus]
            for (a, b), values in pairs.items():
                cells[position[a]][position[b]] = values.get(field, float("nan"))
            image = ax.imshow(cells, cmap="viridis", interpolation="nearest")
            fig.colorbar(image, ax=ax, fraction=0.046, pad=0.04, label="GB/s")
            ticks = list(range(0, len(gpus), step))
            ax.set_xticks(ticks)
            ax.set_xticklabels([str(gpus[i]) for i in ticks], fontsize=7)
            ax.set_yticks(ticks)
            ax.set_yticklabels([str(gpus[i]) for i in ticks], fontsize=7)
            ax.set_xlabel("GPU b")
            ax.set_ylabel("GPU a")
            ax.set_title(f"{field.replace('GBs', '')}: each ordered pair alone (a to b)", fontsize=9)
        row += 1
    if everyone:
        ax = fig.add_subplot(grid[row, :])
        keys = sorted(everyone)
        xs = range(len(keys))
        for offset, field, colour in ((-width / 2, "writeGBsPerGpu", "#1f77b4"),
                                      (width / 2, "readGBsPerGpu", "#ff7f0e")):
            ax.bar([x + offset for x in xs], [everyone[k].get(field, float("nan")) for k in keys], width, color=colour,
                   label=field.replace("GBsPerGpu", ""))
        step = max(1, len(keys) // 32)
        ax.set_xticks(list(xs)[::step])
        ax.set_xticklabels([f"GPU {k}" for k in keys][::step], fontsize=7, rotation=60 if len(keys) > 16 else 0)
        ax.set_ylabel("GB/s per GPU")
        ax.set_title("all GPUs at once (each to every peer)")
        ax.legend(fontsize=8)
        ax.grid(True, axis="y", alpha=0.3)
    fig.tight_layout()
    return fig


def plots(folder):
    """Draws what the folder's CSVs hold; the exit code."""
    try:
        dir_fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    except OSError as e:
        print(f"symmem-report-plots: {folder} is not a folder it can read ({e.strerror})", file=sys.stderr)
        return 2
    try:
        latency, why_latency = read_csv(dir_fd, "latency.csv", LATENCY_HEADER)
        health, why_health = read_csv(dir_fd, "health.csv", HEALTH_HEADER)
        skipped_latency, skipped_health = Skipped("latency.csv"), Skipped("health.csv")
        series, chosen = latency_series(latency or [], skipped_latency)
        pairs, everyone = health_series(health or [], skipped_health)
        reasons = [w for w in (why_latency, why_health, skipped_latency.text(), skipped_health.text()) if w]
        if not series and not pairs and not everyone:
            print(f"symmem-report-plots: nothing to plot in {folder} "
                  f"({'; '.join(reasons) or 'no measured values in the CSVs'})")
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
        if "text.parse_math" in matplotlib.rcParams:
            matplotlib.rcParams["text.parse_math"] = False  # a '$' in the data is text, not math
        written, problems = [], []
        if series:
            plot_latency(plt, dir_fd, series, chosen, written, problems)
        if pairs or everyone:
            plot_health(plt, dir_fd, pairs, everyone, written, problems)
        for reason in reasons + problems:
            print(f"symmem-report-plots: {reason}")
        print(f"symmem-report-plots: wrote {', '.join(written) if written else 'nothing new'}")
        return 0
    finally:
        os.close(dir_fd)


def main(argv):
    if len(argv) != 2 or argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if len(argv) == 2 else 2
    if argv[1] == "":
        print("symmem-report-plots: the folder name is empty", file=sys.stderr)
        return 2
    return plots(argv[1])


if __name__ == "__main__":
    sys.exit(main(sys.argv))
