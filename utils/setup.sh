#!/usr/bin/env bash
# Installs what Triax needs on Debian 12 (LLVM/MLIR 22, Ninja, ccache, OpenMPI,
# OpenBLAS from Debian; numpy from PyPI), then configures and builds into build/.
#   utils/setup.sh            # idempotent; a rebuild from a warm ccache is seconds
# Environment: BUILD_DIR (default build), TRIAX_SKIP_INSTALL=1 to skip apt/pip,
# TRIAX_SKIP_HF=1 to skip the PyTorch/transformers test venv (below).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${BUILD_DIR:-$root/build}"

apt_packages=(libmlir-22-dev mlir-22-tools llvm-22-dev llvm-22-tools ninja-build
              ccache libopenmpi-dev openmpi-bin libopenblas-dev libblas3 cmake g++ python3-pip
              clang-format git libomp-dev python3-venv)

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

# PyTorch, transformers and safetensors for the round trips through
# transformers itself (test/e2e/hf-transformers.test), in a venv cached
# across checkouts and builds: $TRIAX_HF_VENV (default
# ~/.cache/triax/hf-venv). The CPU wheel index is tried first; where only
# PyPI is reachable its torch is a CUDA build (about 5 GB installed, 1.5
# minutes here). TRIAX_SKIP_HF=1 skips it (that test is then unsupported);
# with TRIAX_REQUIRE_HF=1 (CI) a failed install is an error.
hf_venv="${TRIAX_HF_VENV:-$HOME/.cache/triax/hf-venv}"
if [[ "${TRIAX_SKIP_INSTALL:-0}" != 1 && "${TRIAX_SKIP_HF:-0}" != 1 ]] &&
   ! "$hf_venv/bin/python" -c "import torch, transformers, safetensors" 2>/dev/null; then
  echo "== installing torch, transformers and safetensors into $hf_venv"
  if python3 -m venv "$hf_venv" &&
     { "$hf_venv/bin/pip" install -q --timeout 15 --retries 0 \
         --index-url https://download.pytorch.org/whl/cpu torch 2>/dev/null ||
       "$hf_venv/bin/pip" install -q torch; } &&
     "$hf_venv/bin/pip" install -q transformers safetensors numpy; then
    :
  elif [[ "${TRIAX_REQUIRE_HF:-0}" == 1 ]]; then
    echo "error: could not install torch and transformers into $hf_venv" >&2
    exit 1
  else
    echo "warning: could not install torch and transformers into $hf_venv;" \
         "test/e2e/hf-transformers.test will be unsupported" >&2
  fi
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
