#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A job SIGKILLed inside the plugin's agreement, then a job with the same NCCL_COMM_ID, on one GPU.
#
#   run_after_killed_job.sh NRANKS LIMIT LOGDIR PLUGIN PORT -- COMMAND [ARG...]
#
# Job A: every rank but rank 0 reaches its first all-reduce and waits in the agreement while rank 0
# sleeps (COMMAND gets --delay-first 0:600); rank 1 is SIGKILLed at 20 s and the launcher ends the rest
# at 40 s (SIGTERM, then SIGKILL), so no destructor removes their segment. Job B: the same COMMAND with
# the same NCCL_COMM_ID (so the same communicator id) must take the symmetric path on every rank, exact,
# agreeing for itself.
#
# Whether job A leaves a named segment depends on where it was killed: a segment loses its name once
# every rank has declared (in the tuner's init), so a job killed later, in the agreement, leaves none;
# one killed between two ranks' declarations does (the unit tests cover that case on the CPU). The
# count is reported; where there is one, job B must not be fooled by it and it must be gone afterwards.
# Exit status: 77 (skipped) without a GPU, 1 when job B fails or job A's segment outlives job B.
set -uo pipefail

if (( $# < 7 )) || [[ "$6" != "--" ]]; then
  echo "usage: $0 NRANKS LIMIT LOGDIR PLUGIN PORT -- COMMAND [ARG...]" >&2
  exit 2
fi
nranks="$1" limit="$2" logs="$3" plugin="$4" port="$5"
shift 6
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
if ! nvidia-smi -L 2> /dev/null | grep -q '^GPU '; then
  echo "run_after_killed_job: SKIPPED: nvidia-smi -L lists no GPU"
  exit 77
fi
segments() { ls -1 /dev/shm/nccl-symmem-"$(id -u)"*/rdv-* 2> /dev/null | sort; }

rm -rf -- "$logs"
mkdir -p -- "$logs/killed-job" || exit 1
before="$(segments)"
export NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,COLL
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
echo "run_after_killed_job: job A ($nranks ranks, NCCL_COMM_ID=127.0.0.1:$port): rank 1 SIGKILLed at 20 s in the agreement, the rest ended at 40 s"
python3 "$here/launch_ranks.py" --nranks "$nranks" --timeout 40 --kill-grace 2 --logs "$logs/killed-job" \
  --env NCCL_TUNER_PLUGIN="$plugin" --env NCCL_COMM_ID="127.0.0.1:$port" --kill-rank 1 --kill-after 20 \
  -- "$@" --delay-first 0:600 > "$logs/killed-job.out" 2>&1
echo "run_after_killed_job: job A ended (status $?, as expected: it was killed)"
left="$(comm -13 <(printf '%s\n' "$before") <(segments) | sed '/^$/d')"
if [[ -z "$left" ]]; then
  echo "run_after_killed_job: job A left no named segment (every rank had declared before the kill); job A's last plugin lines:"
  grep -h symmem "$logs"/killed-job/rank-*.log | tail -n 6 | sed 's/^/  | /'
else
  echo "run_after_killed_job: job A left $(wc -l <<< "$left") segment(s): $(tr '\n' ' ' <<< "$left")"
fi

echo "run_after_killed_job: job B: the same command and NCCL_COMM_ID"
status=0
RUN_RANKS_MIN_ON=1 bash "$here/run_ranks_check.sh" "$nranks" symmetric "$limit" "$logs/next-job" \
  --env NCCL_TUNER_PLUGIN="$plugin" --env NCCL_COMM_ID="127.0.0.1:$port" -- "$@" || status=$?
if (( status != 0 )); then
  echo "run_after_killed_job: FAIL: job B (status $status)"
  exit "$status"
fi
still=""
[[ -n "$left" ]] && still="$(comm -12 <(printf '%s\n' "$left") <(segments) | sed '/^$/d')"
if [[ -n "$still" ]]; then
  echo "run_after_killed_job: FAIL: job A's segment is still there after job B: $still"
  exit 1
fi
echo "run_after_killed_job: PASS: job B agreed for itself (symmetric path, exact); job A left $( [[ -n "$left" ]] && wc -l <<< "$left" || echo 0) named segment(s), none remain"
