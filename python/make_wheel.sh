#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds the nccl-symmem wheel from a CMake build, offline, with Debian's python3-build,
# python3-setuptools and python3-wheel (nothing is downloaded: --no-isolation).
#
#   python/make_wheel.sh BUILD_DIR OUT_DIR      (or: cmake --build BUILD_DIR --target wheel)
#
# It installs BUILD_DIR into a staging prefix (the layout of `cmake --install`, stripped), copies this
# folder next to it, puts the prefix's bin/ and lib/ inside the package as nccl_symmem/bin and
# nccl_symmem/lib and its share/doc/nccl-symmem as nccl_symmem/docs, copies the system's Zydis (libZydis.so.4.0, libZycore.so.1.4) beside the plugin,
# whose RUNPATH is $ORIGIN and whose decoder looks there first, and writes
# OUT_DIR/nccl_symmem-<version>-py3-none-linux_<machine>.whl. The source tree is not written to.
# WHEEL_PYTHON (default /usr/bin/python3) and WHEEL_ZYDIS_DIR (default /usr/lib/x86_64-linux-gnu) name
# the interpreter that builds and where the Zydis libraries are taken from.
set -euo pipefail

if [ $# -ne 2 ]; then
  echo "usage: $0 BUILD_DIR OUT_DIR" >&2
  exit 2
fi
build=$(cd "$1" && pwd)
mkdir -p "$2"
out=$(cd "$2" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
# Debian's interpreter: python3-build and python3-wheel are installed for it, not for another python3
# on PATH (pyenv, conda).
python=${WHEEL_PYTHON:-/usr/bin/python3}
zydis_dir=${WHEEL_ZYDIS_DIR:-/usr/lib/x86_64-linux-gnu}

version=$(sed -n 's/^CMAKE_PROJECT_VERSION:STATIC=//p' "$build/CMakeCache.txt")
if [ -z "$version" ]; then
  echo "make_wheel: no CMAKE_PROJECT_VERSION in $build/CMakeCache.txt (is $build a configured build?)" >&2
  exit 1
fi
for lib in libZydis.so.4.0 libZycore.so.1.4; do
  if [ ! -e "$zydis_dir/$lib" ]; then
    echo "make_wheel: $zydis_dir/$lib not found (apt-get install libzydis4.0 libzycore1.4)" >&2
    exit 1
  fi
done
if ! "$python" -c 'import build, setuptools, wheel' 2>/dev/null; then
  echo "make_wheel: $python lacks build, setuptools or wheel" \
    "(apt-get install python3-build python3-setuptools python3-wheel)" >&2
  exit 1
fi

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
cmake --install "$build" --prefix "$stage/prefix" --strip >/dev/null
src=$stage/src
mkdir -p "$src/nccl_symmem"
cp "$here/pyproject.toml" "$here/setup.py" "$src/"
cp "$here"/nccl_symmem/*.py "$src/nccl_symmem/"
cp "$here/../README.md" "$here/../LICENSE" "$src/"
echo "$version" >"$src/VERSION"
cp -a "$stage/prefix/bin" "$stage/prefix/lib" "$src/nccl_symmem/"
# The docs the .deb carries in share/doc/nccl-symmem (README.md and docs/), inside the package.
cp -a "$stage/prefix/share/doc/nccl-symmem" "$src/nccl_symmem/docs"
cp -a "$stage/prefix/share/nccl-symmem/topologies" "$src/nccl_symmem/topologies"
# The libraries themselves (cp -L), under the names the loader asks for, and their licences (MIT).
cp -L "$zydis_dir/libZydis.so.4.0" "$zydis_dir/libZycore.so.1.4" "$src/nccl_symmem/lib/"
mkdir -p "$src/nccl_symmem/licenses"
cp "$here/../LICENSE" "$src/nccl_symmem/licenses/LICENSE.nccl-symmem"
for pkg in libzydis4.0 libzycore1.4; do
  if [ -f "/usr/share/doc/$pkg/copyright" ]; then
    cp "/usr/share/doc/$pkg/copyright" "$src/nccl_symmem/licenses/copyright.$pkg"
  else
    echo "make_wheel: /usr/share/doc/$pkg/copyright not found: the wheel must carry Zydis' licence" >&2
    exit 1
  fi
done

rm -f "$out"/nccl_symmem-"$version"-*.whl
(cd "$src" && "$python" -m build --wheel --no-isolation --outdir "$out" . >"$stage/build.log" 2>&1) || {
  cat "$stage/build.log" >&2
  echo "make_wheel: the wheel build failed (above)" >&2
  exit 1
}
ls "$out"/nccl_symmem-"$version"-*.whl
