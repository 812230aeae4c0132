#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Fails (exit 1) when a source file includes a header of a folder its library does not depend on.

The layers, linked one way:  core <- topology, kernels <- plugin <- tools.  core also uses neither CUDA
nor NCCL. plugin/ is rooms, each a library of one job (docs/architecture.md, "The floors"):

    plugin/hooks      the code patcher: code hooks, GOT rebinding, the pin, the attach policy; it
                      includes nothing else of the project and no CUDA, NCCL, NVML or hwloc header
    plugin/nccl       NCCL's own interfaces as the plugin sees them: the tuner ABI, the real entry points
    plugin/stats      the live statistics writer
    plugin/process    settings, topology and decision table of the process
    plugin/interpose  the interposer, communicator setup, the agreement, the NCCL copies served
    plugin/tuner      the tuner
    plugin/entry      the exported symbols alone

A room includes only the rooms listed for it below; a source directly in plugin/ belongs to no room
and is refused. Inside tools/ every folder is one
tool's library (info, bench, tune, health, report, stat, and any tool added later) except tools/common/,
the parts two or more tools share: a tool uses common/, the layers below and of plugin/ only what a
tool needs without the patcher (plugin/nccl, plugin/process), never another tool; common/ uses no tool.
A source directly in tools/ belongs to no tool and is refused. A project header included with <...>
is checked as one included with "...". Run by the build (target symmem_layers) before any library
compiles.

    python3 cmake/check_layers.py SOURCE_DIR
"""
import os
import re
import sys

ROOMS = {
    "plugin/hooks": set(),
    "plugin/nccl": {"core"},
    "plugin/stats": {"core", "symmem"},
    "plugin/process": {"core", "topology", "plugin/nccl", "symmem"},
    "plugin/interpose": {"core", "topology", "kernels", "plugin/hooks", "plugin/nccl", "plugin/stats", "plugin/process",
                         "symmem"},
    "plugin/tuner": {"core", "topology", "plugin/nccl", "plugin/process", "plugin/interpose", "symmem"},
    "plugin/entry": {"core", "topology", "kernels", "plugin/hooks", "plugin/nccl", "plugin/stats", "plugin/process",
                     "plugin/interpose", "plugin/tuner", "symmem"},
}
MAY_INCLUDE = {
    "core": {"core"},
    "topology": {"core", "topology"},
    "kernels": {"core", "kernels"},
}
MAY_INCLUDE.update({room: uses | {room} for room, uses in ROOMS.items()})
BELOW_TOOLS = {"core", "topology", "kernels", "plugin/nccl", "plugin/process", "symmem"}
TOOLS_COMMON = "tools/common"
TOP = ["core", "topology", "kernels", "plugin", "tools"]
PROJECT = set(TOP) | {"symmem"}
NO_DRIVERS = re.compile(r"^(cuda|cuda_runtime|cuda_runtime_api|nccl|nvml|hwloc)[._/]")
FORBIDDEN_SYSTEM = {"core": NO_DRIVERS, "plugin/hooks": NO_DRIVERS}
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')
SOURCES = (".h", ".hpp", ".cpp", ".cc", ".cu", ".cuh", ".c")


def unit_of(path):
    """The library a header or source belongs to: its top folder; tools/<folder> inside tools/ and
    plugin/<room> inside plugin/. "tools" alone for a file directly in tools/ (part of no tool),
    "plugin" alone for one directly in plugin/."""
    parts = path.split("/")
    if parts[0] in ("tools", "plugin"):
        return parts[0] + "/" + parts[1] if len(parts) > 2 else parts[0]
    return parts[0]


def may_include(unit):
    if unit in MAY_INCLUDE:
        return MAY_INCLUDE[unit]
    if unit == TOOLS_COMMON:
        return BELOW_TOOLS | {TOOLS_COMMON}
    return BELOW_TOOLS | {TOOLS_COMMON, unit}  # a tool: common, the layers below, itself


def sources(root):
    for top in TOP:
        for folder, dirs, files in os.walk(os.path.join(root, top)):
            dirs.sort()
            for name in sorted(files):
                if name.endswith(SOURCES):
                    path = os.path.join(folder, name)
                    yield path, os.path.relpath(path, root).replace(os.sep, "/")


def file_problem(rel, unit):
    """Why a file is in no library that may be built, or None."""
    if unit == "tools":
        return f"{rel}: a tool's file goes in tools/<tool>/, or in tools/common/ when two or more tools use it"
    if unit == "plugin":
        return f"{rel}: a source of the plugin goes in one of its rooms (rooms: {', '.join(sorted(ROOMS))})"
    if unit.startswith("plugin/") and unit not in ROOMS:
        return f"{rel}: {unit}/ is no room of the plugin (rooms: {', '.join(sorted(ROOMS))})"
    return None


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "."
    problems = []
    for path, rel in sources(root):
        unit = unit_of(rel)
        problem = file_problem(rel, unit)
        if problem:
            problems.append(problem)
            continue
        allowed = may_include(unit)
        with open(path, encoding="utf-8", errors="replace") as f:
            for number, line in enumerate(f, 1):
                m = INCLUDE.match(line)
                if not m:
                    continue
                kind, target = m.groups()
                # A name without a folder is the including file's own folder; <x/...> of a project
                # folder is the project's header all the same.
                ours = "/" in target and (kind == '"' or target.split("/")[0] in PROJECT)
                if ours:
                    if unit_of(target) not in allowed:
                        problems.append(f"{rel}:{number}: includes {target}, but {unit}/ may only use "
                                        f"{', '.join(sorted(allowed))}")
                elif unit in FORBIDDEN_SYSTEM and FORBIDDEN_SYSTEM[unit].match(target):
                    problems.append(f"{rel}:{number}: includes <{target}>: {unit}/ uses no CUDA, NCCL, "
                                    f"NVML or hwloc")
    for p in problems:
        print(p, file=sys.stderr)
    if problems:
        print(f"check_layers: {len(problems)} include(s) or file(s) against the layers (docs/architecture.md)",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
