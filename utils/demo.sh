#!/usr/bin/env bash
# The main job, as far as Triax goes today: generate the GPT models, verify
# them with triax-opt and show the IR of one transformer block of gpt2.
#   utils/setup.sh && utils/demo.sh
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bin="${BUILD_DIR:-$root/build}/bin"
for m in tiny gpt2 gpt3-175b llama2-7b; do
  printf '%-10s %15s parameters, IR verifies: ' "$m" "$("$bin/triax-model" "$m" --print-param-count)"
  "$bin/triax-model" "$m" | "$bin/triax-opt" >/dev/null && echo yes
done
echo
echo "== gpt2, block h.0 (triax-model gpt2 | triax-opt):"
"$bin/triax-model" gpt2 | "$bin/triax-opt" | sed -n '/triax.block "h.0"/,/triax.yield/p'
