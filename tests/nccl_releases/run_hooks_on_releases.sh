#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The code hooks on the real libnccl.so.2 of every release in releases.txt (CPU; no GPU needed):
# fetches what the cache lacks (fetch_libnccl.py), then runs PluginHooks.EveryNcclReleaseTakesTheHooks
# (the plugin's unit tests) and CodeHookReleases.* (the code patcher's own tests) over the cache.
#
#   run_hooks_on_releases.sh UNIT_TEST_BINARY HOOKS_TEST_BINARY
#
# Exit status: 77 (skipped) where nothing could be fetched (no network, no pip) or the tests skipped
# (a build without the code hooks), else the tests'.
set -uo pipefail
if (( $# != 2 )); then
  echo "usage: $0 UNIT_TEST_BINARY HOOKS_TEST_BINARY" >&2
  exit 2
fi
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
status=0
cache="$(python3 "$here/fetch_libnccl.py" | tail -n 1)" || status=$?
if (( status != 0 )); then
  echo "run_hooks_on_releases: some releases could not be fetched (above); retrying once"
  status=0
  cache="$(python3 "$here/fetch_libnccl.py" | tail -n 1)" || status=$?
fi
if [[ -z "$cache" ]] || ! compgen -G "$cache/*/libnccl.so.2" > /dev/null; then
  echo "run_hooks_on_releases: SKIPPED: no release could be fetched from PyPI (no network or no pip?)"
  exit 77
fi
(( status != 0 )) && echo "run_hooks_on_releases: WARNING: checking only the releases in the cache: $(ls "$cache" | tr '\n' ' ')"
status=0
out="$(NCCL_SYMMEM_TEST_RELEASES="$cache" "$1" --gtest_filter=PluginHooks.EveryNcclReleaseTakesTheHooks 2>&1)" || status=$?
printf '%s\n' "$out"
hooks_status=0
hooks_out="$(NCCL_SYMMEM_TEST_RELEASES="$cache" "$2" --gtest_filter='CodeHookReleases.*' 2>&1)" || hooks_status=$?
printf '%s\n' "$hooks_out"
(( status == 0 )) && status=$hooks_status
out="$out"$'\n'"$hooks_out"
# A test that skipped (a build without the code hooks) is a skip here too, never a pass.
if (( status == 0 )) && grep -q '^\[  SKIPPED \]' <<< "$out"; then
  echo "run_hooks_on_releases: SKIPPED: the tests above skipped"
  exit 77
fi
exit "$status"
