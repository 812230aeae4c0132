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

  for mode in stock plugin; do
    tuner=none
    [[ "$mode" == plugin ]] && tuner="$plugin"
    log="$out/$name.$mode.log"
    echo "== $name ($mode)"
    if ! run_one "$log" env ${case_env[@]+"${case_env[@]}"} NCCL_TUNER_PLUGIN="$tuner" "$binary" "${args[@]}"; then
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
python3 "$here/compare.py" report --csv "$out/results.csv" "${report_args[@]}" | tee "$out/summary.txt" || report_rc=$?
echo
echo "logs, summary.txt and results.csv in $out"
if (( failures || report_rc )); then
  echo "run.sh: FAILED ($failures run(s) did not exit cleanly; report status $report_rc)"
  exit 1
fi
echo "run.sh: all runs passed"
