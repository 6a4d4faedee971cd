#!/usr/bin/env bash
# The main job: generate the tiny GPT, compile it to a native training binary
# with triaxc, and train it on the built-in corpus (a toy grammar generated
# by tools/triax-gen-corpus.py, byte tokens) — the loss falls from ~5.5.
#   utils/setup.sh && utils/demo.sh [--steps N] [other training flags]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bin="${BUILD_DIR:-$root/build}/bin"
work="${DEMO_DIR:-$root/build/demo}"
mkdir -p "$work"
cd "$work"
echo "== triax-model tiny > tiny.mlir   ($("$bin/triax-model" tiny --print-param-count) parameters)"
"$bin/triax-model" tiny -o tiny.mlir
echo "== triaxc tiny.mlir --target cpu -o train"
"$bin/triaxc" tiny.mlir --target cpu -o train -v 2>&1 | grep '^\[triaxc\] [a-zA-Z]' || true
echo "== ./train --steps 300 --log-every 25"
./train --steps 300 --log-every 25 "$@"
