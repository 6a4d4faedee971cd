#!/usr/bin/env bash
# Copies the generated reference (dialects and passes, from the ODS and
# Passes.td files) from build/docs into docs/dialects and docs/passes.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${BUILD_DIR:-$root/build}"
ninja -C "$build" mlir-doc >/dev/null
mkdir -p "$root/docs/dialects" "$root/docs/passes"
cp "$build"/docs/Dialects/*.md "$root/docs/dialects/"
cp "$build"/docs/Passes/*.md "$root/docs/passes/"
echo "updated: $(cd "$root/docs" && ls dialects/*.md passes/*.md | tr '\n' ' ')"
