#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A job whose shared memory is full, on one GPU, in a private mount namespace (root only): a tmpfs of
# 64 KiB is mounted and filled, then the ranks run.
#
#   run_full_shm.sh WHERE NRANKS LIMIT LOGDIR PLUGIN -- COMMAND [ARG...]
#
# WHERE: plugin-dir  the tmpfs covers only the plugin's directory (/dev/shm/nccl-symmem-<uid>): the
#                    plugin cannot reserve its agreement segment, says so, and every rank stays on
#                    NCCL together; NCCL (whose own segments are elsewhere in /dev/shm) runs; exact.
#        all         the tmpfs covers all of /dev/shm: NCCL itself cannot run there (its proxy needs
#                    tens of MB of /dev/shm per rank and fails with "No space left on device"), so the
#                    job fails, as it does without the plugin. Checked: no rank died of a signal (a
#                    store into an unreserved segment raised SIGBUS before), every rank's plugin said
#                    why it cannot take part, and the failure is NCCL's own.
# Exit status: 77 (skipped) without a GPU, root or unshare; 1 when a check fails.
set -uo pipefail

if (( $# < 7 )) || [[ "$6" != "--" ]]; then
  echo "usage: $0 plugin-dir|all NRANKS LIMIT LOGDIR PLUGIN -- COMMAND [ARG...]" >&2
  exit 2
fi
where="$1" nranks="$2" limit="$3" logs="$4" plugin="$5"
shift 6
case "$where" in plugin-dir|all) ;; *) echo "run_full_shm: WHERE must be plugin-dir or all: $where" >&2; exit 2 ;; esac
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
if ! nvidia-smi -L 2> /dev/null | grep -q '^GPU '; then
  echo "run_full_shm: SKIPPED: nvidia-smi -L lists no GPU"
  exit 77
fi
if (( $(id -u) != 0 )) || ! command -v unshare > /dev/null; then
  echo "run_full_shm: SKIPPED: needs root and unshare(1) to mount a small tmpfs in a private namespace"
  exit 77
fi
exec unshare --mount --propagation private -- bash -c '
  here="$1" where="$2" nranks="$3" limit="$4" logs="$5" plugin="$6"
  shift 6
  if [[ "$where" == plugin-dir ]]; then
    target="/dev/shm/nccl-symmem-$(id -u)" mode=0700
    mkdir -p -m 0700 "$target" || { echo "run_full_shm: SKIPPED: cannot make $target"; exit 77; }
  else
    target=/dev/shm mode=1777
  fi
  mount -t tmpfs -o size=64k,mode=$mode symmem-full-shm "$target" || { echo "run_full_shm: SKIPPED: mount on $target failed"; exit 77; }
  dd if=/dev/zero of="$target/filler" bs=4096 > /dev/null 2>&1
  echo "run_full_shm: $target is a tmpfs of 64 KiB, filled: $(df -k --output=avail "$target" | tail -n 1 | tr -d " ") KiB free"
  if [[ "$where" == plugin-dir ]]; then
    export RUN_RANKS_EXPECT_LINES="cannot reserve"
    exec bash "$here/run_ranks_check.sh" "$nranks" nccl "$limit" "$logs" --env NCCL_TUNER_PLUGIN="$plugin" -- "$@"
  fi
  rm -rf -- "$logs"
  mkdir -p -- "$logs" || exit 1
  export NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,COLL
  export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
  status=0
  python3 "$here/launch_ranks.py" --nranks "$nranks" --timeout "$limit" --logs "$logs" \
    --env NCCL_TUNER_PLUGIN="$plugin" -- "$@" > "$logs/launcher.out" 2>&1 || status=$?
  echo "run_full_shm: the job ended with status $status (a failure is expected: NCCL needs /dev/shm)"
  failed=0
  for (( r = 0; r < nranks; r++ )); do
    log="$logs/rank-$r.log"
    problems=""
    grep -qE "Bus error|SIGBUS|Segmentation fault|SIGSEGV|core dumped" "$log" && problems+=" died of a signal;"
    grep -q "cannot reserve" "$log" || problems+=" no \"cannot reserve\" line from the plugin;"
    grep -q "symmetric path on" "$log" && problems+=" took the symmetric path;"
    grep -qiE "No space left on device" "$log" || problems+=" no ENOSPC from NCCL (so the job failed elsewhere);"
    if [[ -n "$problems" ]]; then
      echo "run_full_shm: FAIL: rank $r:$problems"
      grep -E "symmem|NCCL WARN|rror" "$log" | tail -n 8 | sed "s/^/  | /"
      failed=1
    fi
  done
  grep -E "signal|killed|timed out" "$logs/launcher.out" | head -n 4 | sed "s/^/  launcher | /"
  if grep -qE "signal (7|11)|SIGBUS|SIGSEGV" "$logs/launcher.out"; then
    echo "run_full_shm: FAIL: the launcher reports a rank ended by SIGBUS or SIGSEGV"
    failed=1
  fi
  (( failed == 0 )) && echo "run_full_shm: PASS: every rank said why it stays off, none died of a signal, and the failure is NCCL'"'"'s own (no /dev/shm for its proxy)"
  exit "$failed"
' run_full_shm "$here" "$where" "$nranks" "$limit" "$logs" "$plugin" "$@"
