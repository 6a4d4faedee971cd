# -*- Python -*-
# The Triax lit suite: FileCheck tests of every dialect, pass and tool, the
# runtime's tests and the reference checks.

import os
import shutil
import subprocess

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "TRIAX"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.excludes = ["lit.cfg.py", "lit.site.cfg.py", "CMakeLists.txt",
                   "README.md", "Inputs"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.triax_obj_root, "test")

config.substitutions.append(("%PATH%", config.environment["PATH"]))
config.substitutions.append(("%triax_src", config.triax_src_root))
config.substitutions.append(("%triax_obj", config.triax_obj_root))
python = config.python_executable or shutil.which("python3")
config.substitutions.append(("%python", python))

llvm_config.with_system_environment(["HOME", "INCLUDE", "LIB", "TMP", "TEMP",
                                     "OMPI_ALLOW_RUN_AS_ROOT",
                                     "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM",
                                     "OMPI_MCA_rmaps_base_oversubscribe",
                                     "PYTHONPATH"])
llvm_config.use_default_substitutions()

tool_dirs = [config.triax_tools_dir, config.llvm_tools_dir]
tools = ["triax-opt", "triax-model", "triaxc"]
llvm_config.add_tool_substitutions(tools, tool_dirs)
llvm_config.with_environment("PATH", config.triax_tools_dir, append_path=True)
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)

# Optional tools: tests that need them say REQUIRES.
if shutil.which("clang-format"):
    config.available_features.add("clang-format")

# MLIR's JIT runner and its runtime libraries (they come with MLIR's tools
# and libraries): tests that run lowered MLIR directly say REQUIRES:
# mlir-runner and pass %mlir_runner_libs.
mlir_lib_dir = os.path.join(os.path.dirname(config.llvm_tools_dir), "lib")
runner_libs = [os.path.join(mlir_lib_dir, lib) for lib in
               ("libmlir_c_runner_utils.so", "libmlir_runner_utils.so")]
if os.path.exists(os.path.join(config.llvm_tools_dir, "mlir-runner")) and \
        all(os.path.exists(lib) for lib in runner_libs):
    config.available_features.add("mlir-runner")
    config.substitutions.append(("%mlir_runner_libs", ",".join(runner_libs)))

# PyTorch and transformers, for the round trips through transformers itself
# (test/e2e/hf-transformers.test): the venv utils/setup.sh makes
# ($TRIAX_HF_VENV, default ~/.cache/triax/hf-venv), or TRIAX_HF_PYTHON.
hf_python = os.environ.get("TRIAX_HF_PYTHON") or os.path.join(
    os.environ.get("TRIAX_HF_VENV") or
    os.path.join(os.path.expanduser("~"), ".cache", "triax", "hf-venv"),
    "bin", "python")
if os.path.exists(hf_python) and subprocess.run(
        [hf_python, "-c", "import torch, transformers, safetensors"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0:
    config.available_features.add("transformers")
    config.substitutions.append(("%hfpython", hf_python))

# A reference BLAS (Debian's libblas3: netlib's loops, not OpenBLAS's
# kernels), the independent sgemm that test/e2e/blas.test checks --blas
# against; utils/setup.sh installs it.
reference_blas = "/usr/lib/x86_64-linux-gnu/blas/libblas.so.3"
if os.path.exists(reference_blas):
    config.available_features.add("reference-blas")
    config.substitutions.append(("%reference_blas", reference_blas))

# The CUDA target's runtime was built (CUDA toolkit found at configure time,
# docs/cuda.md): CUDA compile tests say REQUIRES: cuda. No test needs a GPU.
if os.path.exists(os.path.join(config.triax_obj_root, "runtime",
                               "libtriax_rt_cuda.a")):
    config.available_features.add("cuda")
    # cuDNN's fused attention compiled in (runtime/CMakeLists.txt found
    # cuDNN 9's and the cudnn-frontend's headers; without them
    # libtriax_rt_cudnn.a declines every attention).
    cache = os.path.join(config.triax_obj_root, "CMakeCache.txt")
    found = {}
    if os.path.exists(cache):
        for line in open(cache):
            for key in ("TRIAX_RT_CUDNN_INCLUDE_DIR",
                        "TRIAX_RT_CUDNN_FRONTEND_INCLUDE_DIR"):
                if line.startswith(key + ":"):
                    value = line.strip().split("=", 1)[1]
                    found[key] = bool(value) and not value.endswith("NOTFOUND")
    if len(found) == 2 and all(found.values()):
        config.available_features.add("cudnn")
