#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Does every kind of NCCL client reach the plugin with only NCCL_TUNER_PLUGIN set? Runs each client
# found on this machine once with the plugin (NCCL_DEBUG=INFO, nothing preloaded) and once without,
# and reports per run: its own verdict (exact results), whether the plugin hooked libnccl, and
# whether its communicators passed the interposer (the `symmem: comm ... rank R/N` INFO line).
#
#   tests/clients/reach_check.sh [OUT_DIR]
#
# SYMMEM_PLUGIN    the plugin .so (default: <source>/build/lib/libnccl-tuner-symmem.so)
# NCCL_TESTS_DIR   an nccl-tests build (folder holding all_reduce_perf, or its parent); skipped if unset
# PYTHON           python with torch for the PyTorch client (default: python3); skipped without torch
# REACH_TIMEOUT    seconds per run (default 300)
# Exit status: 0 when every client that ran passed and reached the plugin.
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
src="$here/../.."
plugin="${SYMMEM_PLUGIN:-$src/build/lib/libnccl-tuner-symmem.so}"
out="${1:-$PWD/reach-check-out}"
py="${PYTHON:-python3}"
limit="${REACH_TIMEOUT:-300}"
[[ -f "$plugin" ]] || { echo "reach_check: plugin not found: $plugin (set SYMMEM_PLUGIN)" >&2; exit 2; }
plugin="$(cd "$(dirname "$plugin")" && pwd)/$(basename "$plugin")"
mkdir -p "$out"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1

failed=0
printf '%-34s %-7s %-5s %-6s %-6s %s\n' "client" "plugin" "exit" "hooked" "comms" "verdict" | tee "$out/summary.txt"

# run NAME WITH_PLUGIN(0|1) COMMAND...: one run, its log in $out/NAME.log, one summary row.
run() {
  local name="$1" with="$2"; shift 2
  local log="$out/$name.log" rc
  if [[ "$with" == 1 ]]; then
    env NCCL_TUNER_PLUGIN="$plugin" NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,TUNING \
      timeout -k 10 "$limit" "$@" >"$log" 2>&1
  else
    env -u NCCL_TUNER_PLUGIN timeout -k 10 "$limit" "$@" >"$log" 2>&1
  fi
  rc=$?
  local hooked comms verdict
  hooked=$(grep -c "hooked [0-9]* libnccl entry points" "$log")
  comms=$(grep -cE "symmem: comm 0x[0-9a-f]+ rank [0-9]+/[0-9]+" "$log")
  verdict=$(grep -aE "pynccl_client: [0-9]+ checks|Out of bounds values|# Avg bus bandwidth|allreduce_check: " "$log" |
            tail -n 1 | tr -s ' ' | cut -c1-60)
  local ok=1
  [[ $rc == 0 ]] || ok=0
  grep -qE "# Out of bounds values : [1-9]|[1-9][0-9]* wrong|FAILED" "$log" && ok=0
  if [[ "$with" == 1 ]]; then [[ $hooked -ge 1 && $comms -ge 1 ]] || ok=0; fi
  [[ $ok == 1 ]] || { failed=1; verdict="FAIL: $verdict"; }
  printf '%-34s %-7s %-5s %-6s %-6s %s\n' "$name" "$([[ $with == 1 ]] && echo on || echo off)" "$rc" "$hooked" \
    "$comms" "$verdict" | tee -a "$out/summary.txt"
}

# 1. A pynccl-style ctypes client (vLLM, SGLang), against each libnccl.so.2 this machine has.
client="$here/pynccl_client.py"
declare -a ncclLibs=()
for lib in /usr/lib/x86_64-linux-gnu/libnccl.so.2 /usr/local/cuda/lib64/libnccl.so.2; do
  [[ -e "$lib" ]] && ncclLibs+=("$lib")
done
torchNccl=$("$py" - 2>/dev/null <<'PY'
import os
try:
    import nvidia.nccl
    for p in nvidia.nccl.__path__:
        f = os.path.join(p, "lib", "libnccl.so.2")
        if os.path.exists(f):
            print(f)
            break
except Exception:
    pass
PY
)
[[ -n "$torchNccl" ]] && ncclLibs+=("$torchNccl")
i=0
for lib in "${ncclLibs[@]}"; do
  i=$((i + 1))
  # The plugin depends on libnccl.so.2: it must bind to the copy the client loaded, which it does by
  # soname when that copy is loaded first (as here: the client loads it before any communicator).
  run "pynccl-$i-stock" 0 "$py" "$client" --nccl "$lib"
  run "pynccl-$i" 1 "$py" "$client" --nccl "$lib"
  echo "  pynccl-$i: $lib" >>"$out/summary.txt"
done

# 2. nccl-tests, one rank (one GPU): eager, CUDA-graph and grouped, with its bit-exact check.
if [[ -n "${NCCL_TESTS_DIR:-}" ]]; then
  bin=""
  for d in "$NCCL_TESTS_DIR" "$NCCL_TESTS_DIR/build"; do [[ -x "$d/all_reduce_perf" ]] && bin="$d/all_reduce_perf"; done
  if [[ -n "$bin" ]]; then
    run nccl-tests-eager-stock 0 "$bin" -b 8 -e 8M -f 8 -g 1 -c 1 -n 5 -w 2
    run nccl-tests-eager 1 "$bin" -b 8 -e 8M -f 8 -g 1 -c 1 -n 5 -w 2
    run nccl-tests-graph 1 "$bin" -b 8 -e 8M -f 8 -g 1 -c 1 -n 5 -w 2 -G 10
    # -m 2: two all-reduces per ncclGroupStart/End (the grouped path; setup follows the first group).
    run nccl-tests-grouped 1 "$bin" -b 8 -e 8M -f 8 -g 1 -c 1 -n 5 -w 2 -m 2
  fi
fi

# 3. PyTorch ProcessGroupNCCL, one rank.
if "$py" -c "import torch, torch.distributed; assert torch.cuda.is_available()" 2>/dev/null; then
  run torch-stock 0 "$py" "$src/tests/torch/allreduce_check.py" --world 1 --out "$out/torch-stock.json"
  run torch 1 "$py" "$src/tests/torch/allreduce_check.py" --world 1 --out "$out/torch.json"
fi

[[ $failed == 0 ]] && echo "reach_check: every client passed and reached the plugin" | tee -a "$out/summary.txt" ||
  echo "reach_check: FAILED (see $out/*.log)" | tee -a "$out/summary.txt"
exit $failed
