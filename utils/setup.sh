#!/usr/bin/env bash
# Installs what Triax needs on Debian 12 (LLVM/MLIR 22, Ninja, ccache, OpenMPI,
# OpenBLAS from Debian; numpy from PyPI), then configures and builds into build/.
#   utils/setup.sh            # idempotent; a rebuild from a warm ccache is seconds
# Environment: BUILD_DIR (default build), TRIAX_SKIP_INSTALL=1 to skip apt/pip.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${BUILD_DIR:-$root/build}"

apt_packages=(libmlir-22-dev mlir-22-tools llvm-22-dev llvm-22-tools ninja-build
              ccache libopenmpi-dev openmpi-bin libopenblas-dev libblas3 cmake g++ python3-pip
              clang-format git libomp-dev)

if [[ "${TRIAX_SKIP_INSTALL:-0}" != 1 ]]; then
  missing=()
  for p in "${apt_packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
  done
  if ((${#missing[@]})); then
    echo "== installing: ${missing[*]}"
    sudo=""; [[ $(id -u) -ne 0 ]] && sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
  fi
  python3 -c "import numpy" 2>/dev/null ||
    python3 -m pip install -q numpy 2>/dev/null ||
    python3 -m pip install -q --break-system-packages numpy
fi

echo "== configuring $build"
cmake -S "$root" -B "$build" -G Ninja \
  -DCMAKE_BUILD_TYPE=Release \
  -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
  -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit \
  -DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache \
  >"$build.configure.log" 2>&1 || { cat "$build.configure.log"; exit 1; }
echo "== building"
ninja -C "$build"
