#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Checks nccl-tests logs and compares a stock run with a plugin run.

The format is what nccl-tests prints (src/util.cu): one data row per size, dtype and op,

    size(B)  count(elements)  type  redop  root   time algbw busbw #wrong   time algbw busbw #wrong

out-of-place first, then in-place; #wrong is "N/A" without checking (-c 0); a timestamp may follow.
The footer carries "# Out of bounds values : N OK|FAILED" and "# Avg bus bandwidth : X".
A run passes when it has data rows, every #wrong is 0 or N/A, the footer says OK and is complete,
and no failure line (a "Test ... failure", a timeout, anything FAILED) appears.

  compare.py check LOG...                        problems of each log; exit 1 if any
  compare.py report [--csv FILE] CASE STOCK PLUGIN [CASE STOCK PLUGIN ...]
                                                 check all, print a per-size comparison, write CSV
  compare.py --self-test                         run on testdata/ with known answers
Standard library only.
"""
from __future__ import annotations

import argparse
import csv
import math
import statistics
import sys
from dataclasses import dataclass, field
from pathlib import Path

# Columns before the two timing blocks, and the width of one block (time, algbw, busbw, #wrong).
PREAMBLE_COLUMNS = 5
BLOCK_COLUMNS = 4

# Lines nccl-tests (and NCCL under it) print when something went wrong.
FAILURE_MARKERS = ("FAILED", "Test failure", "Test NCCL failure", "Test CUDA failure", "Test timeout")


@dataclass(frozen=True)
class RowKey:
    size_bytes: int
    dtype: str
    redop: str


@dataclass
class Timing:
    time_us: float
    algbw: float
    busbw: float
    wrong: float | None  # None: not checked (-c 0)


@dataclass
class Row:
    key: RowKey
    count: int
    out_of_place: Timing
    in_place: Timing


@dataclass
class ParsedLog:
    rows: list[Row] = field(default_factory=list)
    out_of_bounds: int | None = None
    out_of_bounds_failed: bool = False
    avg_busbw: float | None = None
    failure_lines: list[str] = field(default_factory=list)


def _number(text: str) -> float:
    value = float(text)  # nccl-tests shortens wide values to 1.2e+03 style; float() reads both
    if math.isnan(value):
        raise ValueError(text)
    return value


def _timing(tokens: list[str]) -> Timing:
    time_us, algbw, busbw, wrong = tokens
    return Timing(_number(time_us), _number(algbw), _number(busbw), None if wrong == "N/A" else _number(wrong))


def parse_row(line: str) -> Row | None:
    """One data row, or None for anything else (comments, NCCL INFO lines, blank lines)."""
    tokens = line.split()
    if len(tokens) < PREAMBLE_COLUMNS + 2 * BLOCK_COLUMNS:
        return None
    if not (tokens[0].isdigit() and tokens[1].isdigit()):
        return None
    out_start = PREAMBLE_COLUMNS
    in_start = out_start + BLOCK_COLUMNS
    try:
        out_of_place = _timing(tokens[out_start:in_start])
        in_place = _timing(tokens[in_start:in_start + BLOCK_COLUMNS])
    except ValueError:
        return None
    return Row(RowKey(int(tokens[0]), tokens[2], tokens[3]), int(tokens[1]), out_of_place, in_place)


def parse_log(text: str) -> ParsedLog:
    log = ParsedLog()
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("#"):
            body = stripped.lstrip("#").strip()
            name, _, value = body.partition(":")
            name = name.strip()
            if name == "Out of bounds values":
                parts = value.split()
                log.out_of_bounds = int(parts[0]) if parts and parts[0].isdigit() else None
                log.out_of_bounds_failed = "FAILED" in parts
                continue
            if name == "Avg bus bandwidth":
                parts = value.split()
                try:
                    log.avg_busbw = _number(parts[0])
                except (ValueError, IndexError):
                    log.avg_busbw = None
                if "FAILED" in parts:
                    log.failure_lines.append(stripped)
                continue
        if any(marker in line for marker in FAILURE_MARKERS):
            log.failure_lines.append(stripped)
            continue
        row = parse_row(line)
        if row is not None:
            log.rows.append(row)
    return log


def problems_of(log: ParsedLog) -> list[str]:
    problems = []
    if not log.rows:
        problems.append("no result rows")
    for row in log.rows:
        for place, timing in (("out-of-place", row.out_of_place), ("in-place", row.in_place)):
            if timing.wrong:
                problems.append(f"#wrong {timing.wrong:g} at {row.key.size_bytes} B {row.key.dtype} "
                                f"{row.key.redop} ({place})")
    if log.out_of_bounds is None:
        problems.append("no 'Out of bounds values' line (run truncated?)")
    elif log.out_of_bounds or log.out_of_bounds_failed:
        problems.append(f"Out of bounds values: {log.out_of_bounds} FAILED")
    if log.avg_busbw is None:
        problems.append("no 'Avg bus bandwidth' line (run truncated or hung?)")
    problems.extend(f"failure line: {line}" for line in log.failure_lines)
    return problems


def _by_key(log: ParsedLog) -> dict[RowKey, list[Row]]:
    rows: dict[RowKey, list[Row]] = {}
    for row in log.rows:
        rows.setdefault(row.key, []).append(row)  # -N repeats a size: several rows, one key
    return rows


def _mean_time(rows: list[Row], in_place: bool) -> float:
    return statistics.fmean(r.in_place.time_us if in_place else r.out_of_place.time_us for r in rows)


def _ratio(plugin: float, stock: float) -> float | None:
    return plugin / stock if stock > 0 else None


CSV_COLUMNS = ["case", "size_bytes", "dtype", "redop", "stock_oop_us", "plugin_oop_us", "oop_ratio",
               "stock_ip_us", "plugin_ip_us", "ip_ratio"]


def comparison_rows(case: str, stock: ParsedLog, plugin: ParsedLog) -> list[dict]:
    """One row per (size, dtype, op) present in both runs; ratio = plugin / stock (below 1: faster)."""
    stock_rows, plugin_rows = _by_key(stock), _by_key(plugin)
    out = []
    for key in sorted(stock_rows.keys() & plugin_rows.keys(), key=lambda k: (k.dtype, k.redop, k.size_bytes)):
        s, p = stock_rows[key], plugin_rows[key]
        s_oop, p_oop = _mean_time(s, False), _mean_time(p, False)
        s_ip, p_ip = _mean_time(s, True), _mean_time(p, True)
        out.append({"case": case, "size_bytes": key.size_bytes, "dtype": key.dtype, "redop": key.redop,
                    "stock_oop_us": s_oop, "plugin_oop_us": p_oop, "oop_ratio": _ratio(p_oop, s_oop),
                    "stock_ip_us": s_ip, "plugin_ip_us": p_ip, "ip_ratio": _ratio(p_ip, s_ip)})
    return out


def _cell(key: str, value) -> str:
    if value is None:
        return "-"
    if key.endswith("_ratio"):
        return f"{value:.3f}"
    if key.endswith("_us"):
        return f"{value:.2f}"
    return str(value)


def format_table(rows: list[dict]) -> str:
    header = ["size(B)", "dtype", "redop", "oop stock", "oop plugin", "ratio", "ip stock", "ip plugin", "ratio"]
    keys = ["size_bytes", "dtype", "redop", "stock_oop_us", "plugin_oop_us", "oop_ratio",
            "stock_ip_us", "plugin_ip_us", "ip_ratio"]
    cells = [header] + [[_cell(k, r[k]) for k in keys] for r in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    lines = ["  ".join(c.rjust(w) for c, w in zip(row, widths)) for row in cells]
    return "\n".join(lines)


def _load(path: str) -> ParsedLog:
    return parse_log(Path(path).read_text(errors="replace"))


def command_check(paths: list[str]) -> int:
    failed = False
    for path in paths:
        problems = problems_of(_load(path))
        for p in problems:
            print(f"{path}: {p}")
        failed |= bool(problems)
    return 1 if failed else 0


def command_report(csv_path: str | None, triples: list[str]) -> int:
    if not triples or len(triples) % 3:
        print("report needs CASE STOCK_LOG PLUGIN_LOG triples", file=sys.stderr)
        return 2
    failed = False
    all_rows = []
    for i in range(0, len(triples), 3):
        case, stock_path, plugin_path = triples[i:i + 3]
        stock, plugin = _load(stock_path), _load(plugin_path)
        for label, path, log in (("stock", stock_path, stock), ("plugin", plugin_path, plugin)):
            for p in problems_of(log):
                print(f"FAIL {case} ({label}, {path}): {p}")
                failed = True
        rows = comparison_rows(case, stock, plugin)
        all_rows.extend(rows)
        print(f"\n== {case}: time in us, ratio = plugin / stock (below 1: plugin faster)")
        print(format_table(rows) if rows else "(no sizes in common)")
    if csv_path:
        with open(csv_path, "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=CSV_COLUMNS)
            writer.writeheader()
            for row in all_rows:
                writer.writerow({k: ("" if row[k] is None else row[k]) for k in CSV_COLUMNS})
    return 1 if failed else 0


def self_test() -> int:
    """Known answers for the recorded logs in testdata/; exit 1 on the first mismatch."""
    data = Path(__file__).resolve().parent / "testdata"
    checks = []

    def expect(name: str, condition: bool) -> None:
        checks.append((name, condition))

    clean = _load(data / "clean.log")
    expect("clean: no problems", problems_of(clean) == [])
    expect("clean: every dtype/op row of -d all -o all", len(clean.rows) == 12)
    expect("clean: rows keyed by size, dtype and op",
           {(r.key.dtype, r.key.redop) for r in clean.rows} == {("float", "sum"), ("float", "max"),
                                                               ("half", "sum"), ("half", "max")})
    expect("clean: average bus bandwidth read", clean.avg_busbw is not None and abs(clean.avg_busbw - 0.1835) < 1e-9)
    first = clean.rows[0]
    expect("clean: out-of-place and in-place times read",
           (first.key.size_bytes, first.out_of_place.time_us, first.in_place.time_us) == (8, 21.46, 20.93))

    wrong = problems_of(_load(data / "wrong.log"))
    expect("wrong: #wrong reported", any(p.startswith("#wrong 32 at 1024 B float sum (in-place)") for p in wrong))
    expect("wrong: out of bounds reported", any(p.startswith("Out of bounds values: 1 FAILED") for p in wrong))

    truncated = problems_of(_load(data / "truncated.log"))
    expect("truncated: missing footer reported", any("Avg bus bandwidth" in p for p in truncated))
    expect("truncated: failure line reported", any("Test NCCL failure" in p for p in truncated))

    stock, plugin = _load(data / "latency-stock.log"), _load(data / "latency-plugin.log")
    expect("latency: unchecked runs (#wrong N/A) pass", problems_of(stock) == [] and problems_of(plugin) == [])
    rows = comparison_rows("ar-latency", stock, plugin)
    expect("latency: one comparison per size", [r["size_bytes"] for r in rows] == [8, 16, 32, 64])
    expect("latency: ratio is plugin over stock", abs(rows[0]["oop_ratio"] - 6.12 / 18.36) < 1e-9)

    expect("a NCCL INFO line is not a row", parse_row("host:1:1 [0] NCCL INFO 8 coll channels, 8 p2p") is None)
    expect("wide values in e-notation parse",
           parse_row("  67108864  16777216  float  sum  -1  1.2e+03  55.10  55.10  0  1.2e+03  55.2  55.2  0")
           is not None)

    failures = [name for name, ok in checks if not ok]
    for name in failures:
        print(f"self-test FAILED: {name}")
    print(f"self-test: {len(checks) - len(failures)}/{len(checks)} checks passed")
    return 1 if failures else 0


def main(argv: list[str]) -> int:
    if argv == ["--self-test"]:
        return self_test()
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    check = sub.add_parser("check", help="problems of each log")
    check.add_argument("logs", nargs="+")
    report = sub.add_parser("report", help="check and compare stock/plugin pairs")
    report.add_argument("--csv")
    report.add_argument("triples", nargs="+", metavar="CASE STOCK_LOG PLUGIN_LOG")
    args = parser.parse_args(argv)
    if args.command == "check":
        return command_check(args.logs)
    return command_report(args.csv, args.triples)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
