#!/usr/bin/env bash
# Runs every Triax test suite (lit: dialects, passes, tools, runtime,
# reference checks) and ends with one line "N passed, N failed".
#   utils/setup.sh && utils/test.sh
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${BUILD_DIR:-$root/build}"
ninja -C "$build" >/dev/null || { ninja -C "$build"; echo "0 passed, 1 failed"; exit 1; }

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1
log="$build/test.log"
/usr/lib/llvm-22/bin/lit -sv "$build/test" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}

# lit pads the kinds' names to one width when several occur
# ("Passed           : 234").
count_or_zero() { local n; n=$(grep -E "^ *$1 *: +[0-9]+" "$log" | awk -F: '{print $2}' | awk '{print $1}'); echo "${n:-0}"; }
passed=$(( $(count_or_zero Passed) + $(count_or_zero "Expectedly Failed") ))
failed=$(( $(count_or_zero Failed) + $(count_or_zero "Unresolved") + $(count_or_zero "Timed Out") + $(count_or_zero "Unexpectedly Passed") ))
if [[ $status -ne 0 && $failed -eq 0 ]]; then failed=1; fi
echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
