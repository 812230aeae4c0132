#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A job whose /dev/shm is full, on one GPU: a tmpfs of a few pages is mounted over /dev/shm in a private
# mount namespace (root only) and filled, then the ranks run in it. Expected: no crash (before, the
# first store into the plugin's segment raised SIGBUS), every rank on NCCL together, the cause said.
#
#   run_full_shm.sh NRANKS LIMIT LOGDIR PLUGIN -- COMMAND [ARG...]
#
# Exit status: 77 (skipped) without a GPU, without root or without unshare; else run_ranks_check.sh's.
set -uo pipefail

if (( $# < 6 )) || [[ "$5" != "--" ]]; then
  echo "usage: $0 NRANKS LIMIT LOGDIR PLUGIN -- COMMAND [ARG...]" >&2
  exit 2
fi
nranks="$1" limit="$2" logs="$3" plugin="$4"
shift 5
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
if ! nvidia-smi -L 2> /dev/null | grep -q '^GPU '; then
  echo "run_full_shm: SKIPPED: nvidia-smi -L lists no GPU"
  exit 77
fi
if (( $(id -u) != 0 )) || ! command -v unshare > /dev/null; then
  echo "run_full_shm: SKIPPED: needs root and unshare(1) to mount a small tmpfs over /dev/shm in a private namespace"
  exit 77
fi
export RUN_RANKS_EXPECT_LINES="${RUN_RANKS_EXPECT_LINES:-cannot reserve}"
exec unshare --mount --propagation private -- bash -c '
  here="$1" nranks="$2" limit="$3" logs="$4" plugin="$5"
  shift 5
  mount -t tmpfs -o size=64k,mode=1777 symmem-full-shm /dev/shm || { echo "run_full_shm: SKIPPED: mount failed"; exit 77; }
  dd if=/dev/zero of=/dev/shm/filler bs=4096 > /dev/null 2>&1
  echo "run_full_shm: /dev/shm is a tmpfs of 64 KiB, filled: $(df -k --output=avail /dev/shm | tail -n 1 | tr -d " ") KiB free"
  exec bash "$here/run_ranks_check.sh" "$nranks" nccl "$limit" "$logs" --env NCCL_TUNER_PLUGIN="$plugin" -- "$@"
' run_full_shm "$here" "$nranks" "$limit" "$logs" "$plugin" "$@"
