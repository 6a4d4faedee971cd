#!/usr/bin/env bash
# Times `triaxc --plan` (dist-plan, docs/cost-model.md) against its budgets:
# gpt3-175b on 1024 x h100-80g (< 1 s) and gpt2 on 8 x h100-80g (< 0.2 s),
# and issue 18's scale: gpt3-175b on 16,384 and 131,072 GPUs and tiny on
# 1,048,576 (< 1 s each), and --report of gpt3-175b (vocabulary padded to 50,304) with tp=8 (< 1 s). Prints the median of 5 runs, wall clock
# and CPU (user + sys: what the machine's load does not inflate), next to
# parsing the same IR with triax-opt. The figures go to docs/performance.md;
# this prints them, it does not fail on them.
#   bench/plan.sh [build-dir]        (default: build)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-$root/build}"
bin="$build/bin"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
"$bin/triax-model" gpt3-175b -o "$tmp/gpt3.mlir"
"$bin/triax-model" gpt2 -o "$tmp/gpt2.mlir"
"$bin/triax-model" tiny -o "$tmp/tiny.mlir"
"$bin/triax-model" gpt3-175b --vocab 50304 -o "$tmp/gpt3-v.mlir"

# "wall cpu": the medians of 5 runs, in seconds.
measure() {
  local walls=() cpus=() line
  for _ in 1 2 3 4 5; do
    line=$( { TIMEFORMAT='%R %U %S'; time "$@" > /dev/null; } 2>&1 | tail -1)
    read -r w u s <<< "$line"
    walls+=("$w")
    cpus+=("$(python3 -c "print($u + $s)")")
  done
  printf '%s %s\n' "$(printf '%s\n' "${walls[@]}" | sort -g | sed -n 3p)" \
    "$(printf '%s\n' "${cpus[@]}" | sort -g | sed -n 3p)"
}

row() { # name budget wall cpu
  python3 -c "
name, budget, wall, cpu = '$1', $2, $3, $4
print(f'{name:<44} wall {wall:6.3f} s  cpu {cpu:6.3f} s   budget {budget:.2f} s: '
      f'wall {100 * wall / budget:5.1f}%, cpu {100 * cpu / budget:5.1f}%')"
}

echo "$(date -u +'%Y-%m-%d %H:%M UTC'), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
read -r g3w g3c <<< "$(measure "$bin/triaxc" "$tmp/gpt3.mlir" --plan gpus=1024,gpu=h100-80g)"
read -r g2w g2c <<< "$(measure "$bin/triaxc" "$tmp/gpt2.mlir" --plan gpus=8,gpu=h100-80g)"
# The baseline: parse, verify and print the same IR, nothing else.
read -r p3w p3c <<< "$(measure "$bin/triax-opt" "$tmp/gpt3.mlir")"
read -r p2w p2c <<< "$(measure "$bin/triax-opt" "$tmp/gpt2.mlir")"
read -r g16w g16c <<< "$(measure "$bin/triaxc" "$tmp/gpt3.mlir" --plan gpus=16384,gpu=h100-80g)"
read -r g131w g131c <<< "$(measure "$bin/triaxc" "$tmp/gpt3.mlir" --plan gpus=131072,gpu=h100-80g)"
read -r t1mw t1mc <<< "$(measure "$bin/triaxc" "$tmp/tiny.mlir" --plan gpus=1048576,gpu=h100-80g)"
read -r rtw rtc <<< "$(measure "$bin/triaxc" "$tmp/gpt3-v.mlir" --mesh tp=8 --report)"
row "triaxc --plan gpt3-175b gpus=1024,h100-80g" 1 "$g3w" "$g3c"
row "triaxc --plan gpt3-175b gpus=16384,h100-80g" 1 "$g16w" "$g16c"
row "triaxc --plan gpt3-175b gpus=131072,h100-80g" 1 "$g131w" "$g131c"
row "triaxc --plan tiny gpus=1048576,h100-80g" 1 "$t1mw" "$t1mc"
row "triaxc --report gpt3-175b (vocab 50304) tp=8" 1 "$rtw" "$rtc"
row "triaxc --plan gpt2 gpus=8,h100-80g" 0.2 "$g2w" "$g2c"
row "triax-opt gpt3-175b (parse+verify+print)" 1 "$p3w" "$p3c"
row "triax-opt gpt2 (parse+verify+print)" 0.2 "$p2w" "$p2c"
"$bin/triaxc" "$tmp/gpt3.mlir" --plan gpus=1024,gpu=h100-80g | sed -n 2p
"$bin/triaxc" "$tmp/gpt2.mlir" --plan gpus=8,gpu=h100-80g | sed -n 2p
