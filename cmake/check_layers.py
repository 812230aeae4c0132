#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Fails (exit 1) when a source file includes a header of a folder its library does not depend on.

The layers, linked one way:  core <- topology, kernels <- plugin <- tools.  core also uses neither CUDA
nor NCCL. Run by the build (target symmem_layers) before any library compiles.

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
    "tools": {"core", "topology", "kernels", "plugin", "tools", "symmem"},
}
FORBIDDEN_SYSTEM = {"core": re.compile(r"^(cuda|cuda_runtime|cuda_runtime_api|nccl|nvml|hwloc)[._/]")}
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')
SOURCES = (".h", ".hpp", ".cpp", ".cc", ".cu", ".cuh", ".c")


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "."
    problems = []
    for layer, allowed in MAY_INCLUDE.items():
        for folder, _, files in os.walk(os.path.join(root, layer)):
            for name in sorted(files):
                if not name.endswith(SOURCES):
                    continue
                path = os.path.join(folder, name)
                with open(path, encoding="utf-8", errors="replace") as f:
                    for number, line in enumerate(f, 1):
                        m = INCLUDE.match(line)
                        if not m:
                            continue
                        kind, target = m.groups()
                        rel = os.path.relpath(path, root)
                        if kind == '"':
                            top = target.split("/")[0] if "/" in target else layer
                            if top not in allowed:
                                problems.append(f"{rel}:{number}: includes {target}, but {layer}/ may only use "
                                                f"{', '.join(sorted(allowed))}")
                        elif layer in FORBIDDEN_SYSTEM and FORBIDDEN_SYSTEM[layer].match(target):
                            problems.append(f"{rel}:{number}: includes <{target}>: {layer}/ uses no CUDA, NCCL, "
                                            f"NVML or hwloc")
    for p in problems:
        print(p, file=sys.stderr)
    if problems:
        print(f"check_layers: {len(problems)} include(s) against the layers (docs/architecture.md)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
