#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Fails (exit 1) when a source file includes a header of a folder its library does not depend on.

The layers, linked one way:  core <- topology, kernels <- plugin <- tools.  core also uses neither CUDA
nor NCCL. Inside tools/ every folder is one tool's library (info, bench, tune, health, report, and any
tool added later) except tools/common/, the parts two or more tools share: a tool uses common/ and the
layers below, never another tool; common/ uses no tool. A source directly in tools/ belongs to no tool
and is refused. Run by the build (target symmem_layers) before any library compiles.

    python3 cmake/check_layers.py SOURCE_DIR
"""
import os
import re
import sys

MAY_INCLUDE = {
    "core": {"core"},
    "topology": {"core", "topology"},
    "kernels": {"core", "kernels"},
    "plugin": {"core", "topology", "kernels", "plugin", "symmem"},
}
BELOW_TOOLS = {"core", "topology", "kernels", "plugin", "symmem"}
TOOLS_COMMON = "tools/common"
FORBIDDEN_SYSTEM = {"core": re.compile(r"^(cuda|cuda_runtime|cuda_runtime_api|nccl|nvml|hwloc)[._/]")}
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')
SOURCES = (".h", ".hpp", ".cpp", ".cc", ".cu", ".cuh", ".c")


def unit_of(path):
    """The library a header or source belongs to: its top folder, or tools/<folder> inside tools/.
    "tools" alone for a file directly in tools/ (part of no tool)."""
    parts = path.split("/")
    if parts[0] == "tools":
        return "tools/" + parts[1] if len(parts) > 2 else "tools"
    return parts[0]


def may_include(unit):
    if unit in MAY_INCLUDE:
        return MAY_INCLUDE[unit]
    if unit == TOOLS_COMMON:
        return BELOW_TOOLS | {TOOLS_COMMON}
    return BELOW_TOOLS | {TOOLS_COMMON, unit}  # a tool: common, the layers below, itself


def sources(root):
    for layer in list(MAY_INCLUDE) + ["tools"]:
        for folder, dirs, files in os.walk(os.path.join(root, layer)):
            dirs.sort()
            for name in sorted(files):
                if name.endswith(SOURCES):
                    path = os.path.join(folder, name)
                    yield path, os.path.relpath(path, root).replace(os.sep, "/")


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "."
    problems = []
    for path, rel in sources(root):
        unit = unit_of(rel)
        if unit == "tools":
            problems.append(f"{rel}: a tool's file goes in tools/<tool>/, or in tools/common/ when two or more tools "
                            f"use it")
            continue
        allowed = may_include(unit)
        layer = rel.split("/")[0]
        with open(path, encoding="utf-8", errors="replace") as f:
            for number, line in enumerate(f, 1):
                m = INCLUDE.match(line)
                if not m:
                    continue
                kind, target = m.groups()
                if kind == '"':
                    # A name without a folder is the including file's own folder.
                    if "/" in target and unit_of(target) not in allowed:
                        problems.append(f"{rel}:{number}: includes {target}, but {unit}/ may only use "
                                        f"{', '.join(sorted(allowed))}")
                elif layer in FORBIDDEN_SYSTEM and FORBIDDEN_SYSTEM[layer].match(target):
                    problems.append(f"{rel}:{number}: includes <{target}>: {layer}/ uses no CUDA, NCCL, "
                                    f"NVML or hwloc")
    for p in problems:
        print(p, file=sys.stderr)
    if problems:
        print(f"check_layers: {len(problems)} include(s) or file(s) against the layers (docs/architecture.md)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
