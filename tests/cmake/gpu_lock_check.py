#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Checks that every ctest test labelled gpu holds the "gpu" resource lock, so that `ctest -j` never
runs two GPU tests at once. Usage: gpu_lock_check.py CTEST BUILD_DIR"""
import json
import subprocess
import sys


def properties(test):
    return {p["name"]: p["value"] for p in test.get("properties", [])}


def main(argv):
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    ctest, build = argv[1], argv[2]
    listed = subprocess.run([ctest, "--test-dir", build, "--show-only=json-v1"], capture_output=True, text=True,
                            check=True)
    tests = json.loads(listed.stdout)["tests"]
    gpu = [t for t in tests if "gpu" in properties(t).get("LABELS", [])]
    if not gpu:
        print("no test is labelled gpu (were the GPU test binaries built?)")
        return 1
    unlocked = [t["name"] for t in gpu if "gpu" not in properties(t).get("RESOURCE_LOCK", [])]
    for name in unlocked:
        print(f"{name}: labelled gpu but does not take RESOURCE_LOCK gpu")
    print(f"{len(gpu) - len(unlocked)} of {len(gpu)} GPU tests take the gpu lock")
    return 1 if unlocked else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
