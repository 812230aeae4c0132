#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# One multi-rank case on one GPU for ctest: runs COMMAND through launch_ranks.py with NCCL's INFO log on,
# then checks each rank's log for the plugin's path line. Ranks time-slice the GPU: correctness only, no
# latency figures.
#
#   run_ranks_check.sh NRANKS EXPECT TIMEOUT LOGDIR [LAUNCHER OPTION...] -- COMMAND [ARG...]
#
# EXPECT: symmetric  every rank's log has 'symmetric path on' and no 'all-reduces stay on NCCL'
#         nccl       every rank's log has 'all-reduces stay on NCCL' and no 'symmetric path on'
#         any        no check of the path
# RUN_RANKS_MIN_ON=N: each rank's log must also have at least N 'symmetric path on' lines.
# RUN_RANKS_EXPECT_LINES=RE[,RE...]: each rank's log must match every extended regular expression.
# Exit status: 77 (skipped) without a GPU (nvidia-smi -L lists none), else the launcher's status, or 1
# when a path check fails.
set -uo pipefail

if (( $# < 6 )); then
  echo "usage: $0 NRANKS EXPECT TIMEOUT LOGDIR [LAUNCHER OPTION...] -- COMMAND [ARG...]" >&2
  exit 2
fi
nranks="$1" expect="$2" limit="$3" logs="$4"
shift 4
case "$expect" in symmetric|nccl|any) ;; *) echo "run_ranks_check: EXPECT must be symmetric, nccl or any: $expect" >&2; exit 2 ;; esac
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
note="shared GPU: correctness only, no latency figures"

if ! command -v nvidia-smi > /dev/null 2>&1; then
  echo "run_ranks_check: SKIPPED: no nvidia-smi, so no GPU to share ($note)"
  exit 77
fi
if ! nvidia-smi -L 2> /dev/null | grep -q '^GPU '; then
  echo "run_ranks_check: SKIPPED: nvidia-smi -L lists no GPU ($note)"
  exit 77
fi

rm -rf -- "$logs"
mkdir -p -- "$logs" || exit 1
export NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,COLL
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
status=0
python3 "$here/launch_ranks.py" --nranks "$nranks" --timeout "$limit" --logs "$logs" "$@" || status=$?
if (( status != 0 )); then
  exit "$status"
fi

failed=0
for (( r = 0; r < nranks; r++ )); do
  log="$logs/rank-$r.log"
  on=$(grep -c 'symmetric path on' "$log")
  off=$(grep -c 'all-reduces stay on NCCL' "$log")
  case "$expect" in
    symmetric) ok=$(( on > 0 && off == 0 )) ;;
    nccl) ok=$(( off > 0 && on == 0 )) ;;
    *) ok=1 ;;
  esac
  # RUN_RANKS_MIN_ON: at least this many 'symmetric path on' lines in each rank's log (one per
  # communicator that agreed on the path for itself).
  if (( on < ${RUN_RANKS_MIN_ON:-0} )); then
    ok=0
    echo "run_ranks_check: rank $r: 'symmetric path on' x$on, expected at least ${RUN_RANKS_MIN_ON}"
  fi
  # RUN_RANKS_EXPECT_LINES: comma-separated extended regular expressions each rank's log must match
  # (the routes its all-reduces took, as the summary lines name them).
  if [[ -n "${RUN_RANKS_EXPECT_LINES:-}" ]]; then
    IFS=',' read -r -a wanted <<< "$RUN_RANKS_EXPECT_LINES"
    for want in "${wanted[@]}"; do
      if ! grep -qE -- "$want" "$log"; then
        ok=0
        echo "run_ranks_check: rank $r: no line matches '$want'"
      fi
    done
  fi
  if (( ok )); then
    echo "run_ranks_check: rank $r: path $expect as expected ('symmetric path on' x$on, 'all-reduces stay on NCCL' x$off)"
  else
    failed=1
    echo "run_ranks_check: rank $r: expected path $expect, but 'symmetric path on' x$on, 'all-reduces stay on NCCL' x$off; the plugin's lines:"
    grep -E 'symmem' "$log" | grep -vE 'AllReduce: opCount' | tail -n 8 | sed 's/^/  | /'
    if (( off > 0 )); then
      echo "run_ranks_check: rank $r: the 'stay on NCCL' lines:"
      grep -E 'all-reduces stay on NCCL' "$log" | head -n 8 | sed 's/^/  | /'
    fi
  fi
done
if (( failed )); then
  echo "run_ranks_check: FAIL: path check ($note)"
  exit 1
fi
echo "run_ranks_check: PASS: $nranks ranks, path $expect ($note)"
