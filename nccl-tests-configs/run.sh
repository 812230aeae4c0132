#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs every case of cases.txt twice, stock NCCL and with the symmem tuner plugin, checks both runs
# and prints a per-size comparison (CSV alongside). Exit status: 0 only if every run passed.
#
#   NCCL_TESTS_DIR=/path/to/nccl-tests/build  nccl-tests-configs/run.sh [CASE...]
#
# NCCL_TESTS_DIR       an existing nccl-tests build (the folder with all_reduce_perf, or its parent
#                      holding build/); this script never builds nccl-tests
# SYMMEM_PLUGIN        the plugin .so (default: <source>/build/lib/libnccl-tuner-symmem.so)
# NCCL_TESTS_CASES     the case file (default: cases.txt next to this script)
# NCCL_TESTS_TIMEOUT   seconds per run before it counts as hung (default 300)
# NCCL_TESTS_OUT       where logs, results.csv and summary.txt go (default ./nccl-tests-out/<time>)
# CASE...              only these case names (default: all)
#
# Many processes on one GPU (testing only): with NCCL_TESTS_MPI=N each run is
#   mpirun --allow-run-as-root -np N --oversubscribe --bind-to none -x ... mpi_rank_env.sh all_reduce_perf ...
# N processes, one rank each, all on GPU 0: mpi_rank_env.sh gives each its own NCCL_HOSTID (NCCL refuses
# two ranks on one GPU only when their host hashes match), NCCL_TESTS_DEVICE=0, NCCL_SOCKET_IFNAME=lo,
# NCCL_IB_DISABLE=1 and SYMMEM_TEST_SHARED_GPU=1. nccl-tests must then be built with MPI:
#   make MPI=1 MPI_HOME=/usr/lib/x86_64-linux-gnu/openmpi
# Each process drives one GPU with one thread, so a case's -g K and -t K run as -g 1 and -t 1 (a case
# with -g 2 becomes N processes of -g 1), and -G K above 2 runs as -G 2. The processes time-slice the
# GPU: the runs show correctness only, and the times in the comparison are not latency figures.
# NCCL_TESTS_MPI         N, the processes (ranks) per run; unset: the mode above is off
# MPIRUN                 the mpirun to use (default: mpirun)
# NCCL_TESTS_MPI_ARGS    appended to every case's arguments in that mode, overriding the case's (default
#                        "-e 1M -n 1 -w 1": NCCL's all-reduce over loopback takes ~5-30 ms a call here)
# NCCL_TESTS_MPIRUN_ARGS more mpirun options, e.g. "--mca btl_vader_single_copy_mechanism none"
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
: "${NCCL_TESTS_DIR:?set NCCL_TESTS_DIR to an nccl-tests build (the folder holding all_reduce_perf)}"
plugin="${SYMMEM_PLUGIN:-$here/../build/lib/libnccl-tuner-symmem.so}"
cases_file="${NCCL_TESTS_CASES:-$here/cases.txt}"
timeout_s="${NCCL_TESTS_TIMEOUT:-300}"
out="${NCCL_TESTS_OUT:-$PWD/nccl-tests-out/$(date +%Y%m%d-%H%M%S)}"

[[ -f "$plugin" ]] || { echo "run.sh: plugin not found: $plugin (set SYMMEM_PLUGIN)" >&2; exit 2; }
[[ -f "$cases_file" ]] || { echo "run.sh: case file not found: $cases_file" >&2; exit 2; }
plugin="$(cd "$(dirname "$plugin")" && pwd)/$(basename "$plugin")"  # NCCL dlopens it from any cwd
mkdir -p "$out"

mpi_np="${NCCL_TESTS_MPI:-}"
no_latency="shared GPU: correctness only; nothing measured this way is a latency figure"
if [[ -n "$mpi_np" ]]; then
  if ! [[ "$mpi_np" =~ ^[1-9][0-9]*$ ]] || (( mpi_np > 64 )); then
    echo "run.sh: NCCL_TESTS_MPI must be a number of processes in [1, 64]: $mpi_np" >&2
    exit 2
  fi
  mpirun="${MPIRUN:-mpirun}"
  command -v "$mpirun" > /dev/null || { echo "run.sh: $mpirun not found (set MPIRUN)" >&2; exit 2; }
  read -r -a mpi_case_extra <<< "${NCCL_TESTS_MPI_ARGS--e 1M -n 1 -w 1}"
  read -r -a mpirun_extra <<< "${NCCL_TESTS_MPIRUN_ARGS:-}"
  echo "run.sh: NCCL_TESTS_MPI=$mpi_np: every run is $mpi_np processes on GPU 0 ($no_latency)"
fi

# NVLink SHARP / multicast paths are off in every run, stock and plugin alike, so both sides use
# the same transports and a machine without multicast support does not fail on them.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1

find_binary() {
  local name="$1" dir
  for dir in "$NCCL_TESTS_DIR" "$NCCL_TESTS_DIR/build"; do
    if [[ -x "$dir/$name" ]]; then echo "$dir/$name"; return 0; fi
  done
  return 1
}

wanted() {
  local name="$1" w
  (( ${#selected[@]} == 0 )) && return 0
  for w in "${selected[@]}"; do [[ "$w" == "$name" ]] && return 0; done
  return 1
}

# A case's arguments for one process with one GPU and one thread (NCCL_TESTS_MPI mode): -g and -t
# become 1, -G above 2 becomes 2, then NCCL_TESTS_MPI_ARGS (nccl-tests takes the last of a repeated option).
one_gpu_args() {
  local -a in=("$@") res=()
  local i=0 word
  while (( i < ${#in[@]} )); do
    word="${in[i]}"
    case "$word" in
      -g|--ngpus|-t|--nthreads)
        res+=("$word" 1); i=$((i + 2)); continue ;;
      -G|--cudagraph)
        if (( i + 1 < ${#in[@]} )) && [[ "${in[i+1]}" =~ ^[0-9]+$ ]] && (( in[i+1] > 2 )); then
          res+=("$word" 2)
        else
          res+=("$word" "${in[i+1]:-}")
        fi
        i=$((i + 2)); continue ;;
    esac
    res+=("$word")
    i=$((i + 1))
  done
  printf '%s\0' "${res[@]}" ${mpi_case_extra[@]+"${mpi_case_extra[@]}"}
}

# One run: returns 0 when the process exited 0 in time, and writes why not into the log otherwise.
run_one() {
  local log="$1"; shift
  local rc=0
  echo "+ $*" > "$log"
  timeout --kill-after=10 "$timeout_s" "$@" < /dev/null >> "$log" 2>&1 || rc=$?  # stdin: not the case file
  if (( rc == 124 || rc == 137 )); then
    echo "run.sh: FAILED: timed out after ${timeout_s}s (hang?)" >> "$log"
  elif (( rc != 0 )); then
    echo "run.sh: FAILED: exit status $rc" >> "$log"
  fi
  return "$rc"
}

selected=("$@")
report_args=()
failures=0
while read -r name rest; do
  [[ -z "$name" || "$name" == \#* ]] && continue
  wanted "$name" || continue
  read -r -a words <<< "$rest"
  case_env=()
  while (( ${#words[@]} )) && [[ "${words[0]}" == *=* ]]; do case_env+=("${words[0]}"); words=("${words[@]:1}"); done
  binary="$(find_binary "${words[0]}")" || { echo "run.sh: ${words[0]} not found under $NCCL_TESTS_DIR" >&2; exit 2; }
  args=("${words[@]:1}")

  launch=()
  if [[ -n "$mpi_np" ]]; then
    mapfile -d '' args < <(one_gpu_args "${args[@]}")
    launch=("$mpirun" --allow-run-as-root -np "$mpi_np" --oversubscribe --bind-to none
            -x NCCL_TUNER_PLUGIN -x NCCL_NVLS_ENABLE -x TORCH_SYMM_MEM_DISABLE_MULTICAST -x NVSHMEM_DISABLE_NVLS)
    for assignment in ${case_env[@]+"${case_env[@]}"}; do launch+=(-x "${assignment%%=*}"); done
    launch+=(${mpirun_extra[@]+"${mpirun_extra[@]}"} "$here/mpi_rank_env.sh")
  fi

  for mode in stock plugin; do
    tuner=none
    [[ "$mode" == plugin ]] && tuner="$plugin"
    log="$out/$name.$mode.log"
    echo "== $name ($mode)${mpi_np:+, $mpi_np processes on GPU 0}"
    if ! run_one "$log" env ${case_env[@]+"${case_env[@]}"} NCCL_TUNER_PLUGIN="$tuner" \
        ${launch[@]+"${launch[@]}"} "$binary" "${args[@]}"; then
      failures=$((failures + 1))
      tail -n 5 "$log" | sed 's/^/   /'
    fi
  done
  report_args+=("$name" "$out/$name.stock.log" "$out/$name.plugin.log")
done < "$cases_file"

if (( ${#report_args[@]} == 0 )); then
  echo "run.sh: no case selected" >&2
  exit 2
fi

# The report checks every log (#wrong, out of bounds, missing summary, failure lines) and compares.
report_rc=0
if [[ -n "$mpi_np" ]]; then
  echo "NCCL_TESTS_MPI=$mpi_np: $mpi_np processes on one GPU; $no_latency" | tee "$out/summary.txt"
  python3 "$here/compare.py" report --csv "$out/results.csv" "${report_args[@]}" | tee -a "$out/summary.txt" || report_rc=$?
else
  python3 "$here/compare.py" report --csv "$out/results.csv" "${report_args[@]}" | tee "$out/summary.txt" || report_rc=$?
fi
echo
echo "logs, summary.txt and results.csv in $out"
[[ -z "$mpi_np" ]] || echo "run.sh: NCCL_TESTS_MPI=$mpi_np: $no_latency"
if (( failures || report_rc )); then
  echo "run.sh: FAILED ($failures run(s) did not exit cleanly; report status $report_rc)"
  exit 1
fi
echo "run.sh: all runs passed"
