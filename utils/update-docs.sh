#!/usr/bin/env bash
# Copies the generated dialect reference (build/docs/Dialects) into docs/dialects.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${BUILD_DIR:-$root/build}"
ninja -C "$build" mlir-doc >/dev/null
cp "$build"/docs/Dialects/*.md "$root/docs/dialects/"
echo "updated: $(ls "$root"/docs/dialects)"
