#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Keep the libnccl.so.2 of every release in releases.txt in a cache outside the clone.

    fetch_libnccl.py [--cache DIR] [--list FILE]

Each release's wheel is downloaded from PyPI with pip (no dependencies), its libnccl.so.2 kept as
DIR/<version>-<wheel>/libnccl.so.2, and the wheel deleted; a release already in the cache is not
downloaded again. Prints DIR last, for NCCL_SYMMEM_TEST_RELEASES. Exit status 1 when a release could
not be fetched (the others are kept), 2 on a bad argument.
"""
import argparse
import os
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

MEMBER = "nvidia/nccl/lib/libnccl.so.2"


def default_cache() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "nccl-symmem" / "nccl-releases"


def read_list(path: Path):
    releases = []
    for number, line in enumerate(path.read_text().splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        fields = line.split()
        if len(fields) != 2 or not fields[0].startswith("nvidia-nccl-"):
            raise ValueError(f"{path}:{number}: expected 'nvidia-nccl-cuXX VERSION', got {line!r}")
        releases.append((fields[0], fields[1]))
    return releases


def fetch(wheel: str, version: str, target: Path) -> str:
    """"" when target holds the release's libnccl.so.2, else why not."""
    with tempfile.TemporaryDirectory(prefix="nccl-wheel-") as tmp:
        cmd = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:",
               "--dest", tmp,
               f"{wheel}=={version}"]
        run = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=900)
        if run.returncode != 0:
            return "pip download failed: " + run.stdout.strip().splitlines()[-1] if run.stdout.strip() else "pip download failed"
        wheels = list(Path(tmp).glob("*.whl"))
        if len(wheels) != 1:
            return f"pip left {len(wheels)} wheels"
        with zipfile.ZipFile(wheels[0]) as z:
            if MEMBER not in z.namelist():
                return f"{wheels[0].name} has no {MEMBER}"
            target.mkdir(parents=True, exist_ok=True)
            partial = target / "libnccl.so.2.partial"
            with z.open(MEMBER) as src, open(partial, "wb") as dst:
                while True:
                    block = src.read(1 << 20)
                    if not block:
                        break
                    dst.write(block)
            partial.replace(target / "libnccl.so.2")
    return ""


def main() -> int:
    here = Path(__file__).resolve().parent
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cache", type=Path, default=default_cache(), help="folder for the libraries (default: %(default)s)")
    p.add_argument("--list", type=Path, default=here / "releases.txt", help="releases (default: %(default)s)")
    args = p.parse_args()
    try:
        releases = read_list(args.list)
    except (OSError, ValueError) as e:
        print(f"fetch_libnccl: {e}", file=sys.stderr)
        return 2
    failed = 0
    for i, (wheel, version) in enumerate(releases, 1):
        target = args.cache / f"{version}-{wheel.rsplit('-', 1)[-1]}"
        progress = f"fetch_libnccl: [{i}/{len(releases)}] {wheel} {version}"
        if (target / "libnccl.so.2").is_file():
            print(f"{progress}: in the cache", flush=True)
            continue
        print(f"{progress}: downloading", flush=True)
        try:
            why = fetch(wheel, version, target)
        except (OSError, subprocess.SubprocessError, zipfile.BadZipFile) as e:
            why = str(e)
        if why:
            failed += 1
            print(f"{progress}: FAILED: {why}", file=sys.stderr, flush=True)
    print(args.cache)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
