#!/usr/bin/env bash
# The CUDA target on one NVIDIA GPU (issue 5, docs/cuda.md), in two halves:
#
#   bench/gpu/run.sh prepare [--build DIR] [--bundle DIR] [--arch sm_90]
#       On the build machine (MLIR, MPI, CUDA toolkit; no GPU needed):
#       compiles tiny and gpt2 with `triaxc --target cuda`, the kernel test
#       (test/cuda/kernel_check.py) and the CPU references (tiny's first 10
#       losses from the CPU binary, every kernel's CPU result), and copies
#       Open MPI's shared libraries into DIR/lib (the GPU machine has none),
#       and a single-rank stand-in libmpi (mpi_stub.c) into DIR/lib-stub for
#       a machine whose glibc is too old for them. The bundle is what
#       travels (about 30 MB; a warning above 60 MiB).
#   bench/gpu/run.sh run [--bundle DIR] [--out DIR] [--gpt2-steps N]
#                        [--torch-steps N] [--no-torch] [--peak-tflops F]
#       On the GPU machine (CUDA driver + cuBLAS 13, Python with PyTorch;
#       no MLIR, no MPI), single rank, no launcher, under 8 minutes:
#        0. the CUDA runtime's tests: the GEMM family on cuBLASLt against a
#           double-precision reference, the NCCL transport on one-rank
#           communicators (every collective, exact values), and an abort;
#        1. the kernel test: every generated kernel on the GPU against the
#           CPU target's result on the same inputs, for the row-wise kernels
#           one block per row (the default) and one thread per row
#           (--cuda-rows thread), and the bf16 kernels (--precision
#           bf16; relative 8e-3: one bf16 ulp);
#        2. tiny, 10 steps, losses against the CPU binary's: fp32 (both
#           row forms; relative 1e-4) and bf16 (--precision bf16, against
#           the CPU's bf16 binary; relative 5e-3, see run_gpu);
#           the bf16 run also shows the one-rank NCCL communicator (-v);
#        3. gpt2 (124M, seq 1024, batch 8), bf16 and fp32: --gpt2-steps
#           steps (30), ms/step, tokens/s, MFU against the bf16 peak; and
#           bf16 without the GELU epilogues (--gelu-epilogue=false), the
#           baseline of their speedup;
#        4. PyTorch on the same shapes: eager and torch.compile, bf16
#           autocast and fp32;
#       and writes OUT/gpu-bench.json with every figure and check. Exits 1
#       when a check fails.
#   --dry-run (before prepare/run): print the commands instead of running
#       them (prepare and run); checks that the bundle has what run needs.
#
# With the device tool: run `prepare` here, then on the GPU machine
#   bash bench/gpu/run.sh run --bundle bench/gpu/bundle --out "$OUT"
# carrying bench/gpu/bundle (git-ignored).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
dry=0
if [[ "${1:-}" == "--dry-run" ]]; then
  dry=1
  shift
fi
cmd="${1:-}"
[[ -n "$cmd" ]] && shift

build="$root/build"
bundle="$here/bundle"
out="$here/results"
arch="sm_90"
gpt2_steps=30
torch_steps=20
torch=1
peak_tflops=989.4
# tiny bf16 (GPU) against tiny bf16 (CPU): see the comment in run_gpu.
bf16_rtol=5e-3
while (($#)); do
  case "$1" in
    --build) build="$2"; shift 2 ;;
    --bundle) bundle="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --arch) arch="$2"; shift 2 ;;
    --gpt2-steps) gpt2_steps="$2"; shift 2 ;;
    --torch-steps) torch_steps="$2"; shift 2 ;;
    --no-torch) torch=0; shift ;;
    --peak-tflops) peak_tflops="$2"; shift 2 ;;
    *) echo "run.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done

# The dry run's listing goes to fd 3, the original stderr, whatever the
# command's own redirections.
exec 3>&2
say() { printf '== %s\n' "$*" >&2; }
# logto FILE: where a command's output goes (/dev/null with --dry-run).
logto() {
  if ((dry)); then echo /dev/null; else echo "$1"; fi
}
# run CMD...: runs it, or prints it with --dry-run.
run() {
  if ((dry)); then
    printf '+ %s\n' "$*" >&3
  else
    "$@"
  fi
}

prepare() {
  local bin="$build/bin" rt="$build/runtime"
  for f in "$bin/triaxc" "$bin/triax-model" "$bin/triax-opt" \
           "$bin/triax-rt-gemm-cuda-test" "$bin/triax-rt-nccl-test" \
           "$rt/libtriax_rt.a" "$rt/libtriax_rt_cuda.a"; do
    if [[ ! -e "$f" ]]; then
      echo "run.sh prepare: $f is missing: build with the CUDA toolkit" \
           "present (docs/cuda.md)" >&2
      exit 1
    fi
  done
  run mkdir -p "$bundle/lib" "$bundle/ref"
  say "the CUDA runtime's own tests"
  run cp "$bin/triax-rt-gemm-cuda-test" "$bin/triax-rt-nccl-test" "$bundle/"
  say "models"
  run "$bin/triax-model" tiny -o "$bundle/tiny.mlir"
  run "$bin/triax-model" gpt2 -o "$bundle/gpt2.mlir"
  if ((dry)); then
    echo "+ $bin/triax-model gpt2 --print-param-count > $bundle/gpt2.params" >&2
  else
    "$bin/triax-model" gpt2 --print-param-count | grep -o '[0-9]\+' | head -1 \
      > "$bundle/gpt2.params"
  fi
  say "CPU references: tiny, 10 steps, fp32 and bf16"
  local prec
  for prec in fp32 bf16; do
    run "$bin/triaxc" "$bundle/tiny.mlir" --precision "$prec" \
        -o "$bundle/ref/train-tiny-cpu"
    run rm -f "$bundle/ref/tiny-cpu-$prec.jsonl"
    run "$bundle/ref/train-tiny-cpu" --steps 10 \
        --log-json "$bundle/ref/tiny-cpu-$prec.jsonl"
    run rm -f "$bundle/ref/train-tiny-cpu"
  done
  say "CUDA binaries ($arch)"
  # name: triaxc flags (see `variants` in run_gpu for what each checks)
  local spec name flags
  for spec in "tiny-fp32:tiny --precision fp32" \
              "tiny-fp32-thread:tiny --precision fp32 --cuda-rows thread" \
              "tiny-bf16:tiny --precision bf16" \
              "gpt2-bf16:gpt2 --precision bf16" \
              "gpt2-fp32:gpt2 --precision fp32" \
              "gpt2-bf16-nogelu:gpt2 --precision bf16 --gelu-epilogue=false"; do
    name="${spec%%:*}"
    flags=(${spec#*:})
    run "$bin/triaxc" "$bundle/${flags[0]}.mlir" --target cuda --cuda-arch "$arch" \
        "${flags[@]:1}" -o "$bundle/train-$name"
  done
  say "kernel test: tiny's kernels, CPU results"
  run python3 "$root/test/cuda/kernel_check.py" build "$bundle/tiny.mlir" \
      "$bundle/kernel-check" --rows block --tools-dir "$bin" --runtime-dir "$rt" \
      --runtime-include "$root/runtime/include" --arch "$arch"
  run mkdir -p "$bundle/kernel-check/cpu"
  run "$bundle/kernel-check/kernel-check-cpu" "$bundle/kernel-check/cpu"
  # One thread per row: the same kernel IR and inputs, so the same CPU
  # results; only the CUDA harness is kept.
  run python3 "$root/test/cuda/kernel_check.py" build "$bundle/tiny.mlir" \
      "$bundle/kernel-check-thread" --rows thread --tools-dir "$bin" \
      --runtime-dir "$rt" --runtime-include "$root/runtime/include" --arch "$arch"
  run find "$bundle/kernel-check-thread" -type f ! -name kernel-check-cuda -delete
  # The bf16 kernels (--precision bf16): their own IR and CPU results.
  run python3 "$root/test/cuda/kernel_check.py" build "$bundle/tiny.mlir" \
      "$bundle/kernel-check-bf16" --precision bf16 --tools-dir "$bin" \
      --runtime-dir "$rt" --runtime-include "$root/runtime/include" --arch "$arch"
  run mkdir -p "$bundle/kernel-check-bf16/cpu"
  run "$bundle/kernel-check-bf16/kernel-check-cpu" "$bundle/kernel-check-bf16/cpu"
  # Only what `run` needs travels.
  local kcd
  for kcd in kernel-check kernel-check-bf16; do
    run rm -f "$bundle/$kcd/kernel-check-cpu" "$bundle/$kcd/"*.ll \
        "$bundle/$kcd/"*.o "$bundle/$kcd/"*.mlir
  done
  say "shared libraries the GPU machine lacks"
  local exe lib
  for exe in "$bundle"/train-* "$bundle"/kernel-check*/kernel-check-cuda \
             "$bundle"/triax-rt-*-test; do
    if ((dry)); then
      echo "+ ldd $exe | copy the non-system, non-CUDA libraries to $bundle/lib" >&2
      continue
    fi
    # glibc, libstdc++ and the CUDA driver/toolkit libraries (cuBLAS,
    # cuBLASLt, NCCL: 760 MB, over what the device tool carries) are the
    # GPU machine's own: what is left is Open MPI and what it needs.
    while read -r lib; do
      cp -L "$lib" "$bundle/lib/"
    done < <(ldd "$exe" | awk '$3 ~ /^\// {print $3}' |
             grep -Ev '/(libc|libm|libdl|librt|libpthread|ld-linux[^/]*|libcuda|libcublas[^/]*|libcublasLt|libnccl|libstdc\+\+|libgcc_s|libz|libudev)\.so' || true)
  done
  # Open MPI from Debian 12 needs glibc 2.36 (libevent); a machine with an
  # older one gets a stand-in libmpi for single-rank runs instead.
  run mkdir -p "$bundle/lib-stub"
  run cc -shared -fPIC -O2 -Wl,-soname,libmpi.so.40 -o "$bundle/lib-stub/libmpi.so.40" \
      "$here/mpi_stub.c"
  if ((!dry)); then
    git -C "$root" rev-parse HEAD > "$bundle/commit" 2>/dev/null || true
    du -sh "$bundle" >&2
    # The device tool carries at most 64 MiB.
    if (($(du -sm "$bundle" | cut -f1) > 60)); then
      echo "run.sh prepare: warning: the bundle is over 60 MiB" >&2
    fi
  fi
}

# The GPU machine's cuBLAS, cuBLASLt and NCCL: the toolkit's, else
# PyTorch's wheels (nvidia-cublas, nvidia-nccl).
cuda_libs() {
  local dirs=() d m
  for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib \
           /usr/local/cuda/lib; do
    if [[ -e "$d/libcublas.so.13" || -e "$d/libnccl.so.2" ]]; then
      dirs+=("$d")
    fi
  done
  for m in cublas nccl; do
    d="$(python3 -c "import nvidia.$m, os; print(os.path.join(list(nvidia.$m.__path__)[0], 'lib'))" 2>/dev/null || true)"
    [[ -n "$d" && -d "$d" ]] && dirs+=("$d")
  done
  local IFS=:
  echo "${dirs[*]}"
}

check_bundle() {
  local f missing=0
  for f in train-tiny-fp32 train-tiny-fp32-thread train-tiny-bf16 \
           train-gpt2-bf16 train-gpt2-fp32 train-gpt2-bf16-nogelu gpt2.params \
           ref/tiny-cpu-fp32.jsonl ref/tiny-cpu-bf16.jsonl \
           kernel-check/kernel-check-cuda kernel-check/kernels.json \
           kernel-check/cpu kernel-check-thread/kernel-check-cuda \
           kernel-check-bf16/kernel-check-cuda kernel-check-bf16/cpu \
           triax-rt-gemm-cuda-test triax-rt-nccl-test lib-stub/libmpi.so.40; do
    if [[ ! -e "$bundle/$f" ]]; then
      echo "run.sh run: $bundle/$f is missing (run \`bench/gpu/run.sh prepare\` on the build machine)" >&2
      missing=1
    fi
  done
  return "$missing"
}

run_gpu() {
  if ((!dry)); then
    check_bundle
  elif ! check_bundle; then
    echo "(dry run: the bundle is incomplete; the commands follow anyway)" >&2
  fi
  run mkdir -p "$out"
  local status=0 libs mpi="$bundle/lib"
  libs="$(cuda_libs)"
  # The bundled Open MPI when it loads here, else the single-rank stand-in.
  if ((!dry)) && LD_LIBRARY_PATH="$mpi${libs:+:$libs}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
      ldd "$bundle/train-tiny-fp32" 2>&1 | grep "not found" |
      grep -Eq "lib(mpi|open-pal|open-rte|event|hwloc)"; then
    mpi="$bundle/lib-stub"
    echo "run.sh: the bundled Open MPI does not load here; using lib-stub/libmpi.so.40 (one rank)" >&2
  fi
  export LD_LIBRARY_PATH="$mpi${libs:+:$libs}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  if ((!dry)) && ldd "$bundle/train-tiny-fp32" 2>&1 | grep "not found" >&2; then
    echo "run.sh: libraries missing (above): CUDA 13's libcuda.so.1, libcublas.so.13, libcublasLt.so.13 and NCCL's libnccl.so.2 must be installed" >&2
    status=1
  fi
  local t0=$SECONDS
  if ((!dry)); then
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader \
      > "$out/gpu.txt" 2>&1 || true
    python3 - "$out/gpu.txt" "$out/gpu.json" <<'PY'
import json, sys
text = open(sys.argv[1]).read().strip()
parts = [p.strip() for p in text.split(",")]
keys = ["name", "memory", "driver"]
json.dump(dict(zip(keys, parts)) if len(parts) == 3 else {"nvidia_smi": text},
          open(sys.argv[2], "w"))
PY
  fi

  # The runtime's GEMM family on cuBLASLt against a double-precision loop
  # (runtime/test/kernel_test.cpp), the NCCL transport on one-rank
  # communicators (runtime/test/nccl_test.cpp: every collective, exact
  # values), and an abort that must end the process, not hang it.
  say "0. runtime tests: GEMM family (cuBLASLt), NCCL one rank, NCCL abort"
  if ! run timeout 120 "$bundle/triax-rt-gemm-cuda-test" gemm \
      > "$(logto "$out/gemm-cuda.log")" 2>&1; then
    echo "triax-rt-gemm-cuda-test failed: see $out/gemm-cuda.log" >&2
    tail -20 "$out/gemm-cuda.log" >&2 || true
    status=1
  fi
  if ! run timeout 120 "$bundle/triax-rt-nccl-test" \
      > "$(logto "$out/nccl.log")" 2>&1; then
    echo "triax-rt-nccl-test failed: see $out/nccl.log" >&2
    tail -20 "$out/nccl.log" >&2 || true
    status=1
  fi
  local rc=0
  run timeout 60 "$bundle/triax-rt-nccl-test" abort \
      > "$(logto "$out/nccl-abort.log")" 2>&1 || rc=$?
  if ((!dry && rc != 1)); then
    echo "triax-rt-nccl-test abort: exit status $rc, expected 1 (124: it hung)" >&2
    status=1
  fi
  if ((!dry)); then
    python3 "$here/report.py" runtime "$out/gemm-cuda.log" "$out/nccl.log" \
      "$out/nccl-abort.log" --abort-status "$rc" > "$out/runtime.json" || status=1
  fi

  # "" and -thread: the fp32 kernels (one block, one thread per row) against
  # the same CPU results; -bf16: the bf16 kernels against theirs.
  local v kc ref
  for v in "" "-thread" "-bf16"; do
    kc="$bundle/kernel-check${v}/kernel-check-cuda"
    ref="$bundle/kernel-check"
    [[ $v == -bf16 ]] && ref="$bundle/kernel-check-bf16"
    say "1${v}. kernel test (every generated kernel, GPU vs CPU)"
    run mkdir -p "$out/kernel-check-cuda$v"
    if ! run timeout 60 "$kc" "$out/kernel-check-cuda$v" \
        > "$(logto "$out/kernel-check$v.log")" 2>&1; then
      echo "kernel-check-cuda$v failed: see $out/kernel-check$v.log" >&2
      tail -20 "$out/kernel-check$v.log" >&2 || true
      status=1
    fi
    if ! run python3 "$root/test/cuda/kernel_check.py" compare \
        "$ref/kernels.json" "$ref/cpu" \
        "$out/kernel-check-cuda$v" --json "$out/kernel-check$v.json"; then
      status=1
    fi
  done

  # name:reference:relative tolerance. fp32 against fp32: libdevice ulps
  # and summation order only. bf16 against the CPU's bf16 binary: the same
  # roundings to bf16 at the same places, but cuBLASLt's and the kernels'
  # summation orders decide which way a value near a rounding boundary
  # goes, one bf16 ulp (2^-8 relative) at a time (report.py).
  local spec name ref rtol
  for spec in "tiny-fp32:fp32:1e-4" "tiny-fp32-thread:fp32:1e-4" \
              "tiny-bf16:bf16:$bf16_rtol"; do
    IFS=: read -r name ref rtol <<< "$spec"
    say "2. $name: 10 steps against the CPU binary ($ref, rtol $rtol)"
    run rm -f "$out/$name.jsonl"
    if ! run timeout 60 "$bundle/train-$name" --steps 10 -v \
        --log-json "$out/$name.jsonl" > "$(logto "$out/$name.log")" 2>&1; then
      echo "train-$name failed: see $out/$name.log" >&2
      tail -20 "$out/$name.log" >&2 || true
      status=1
    fi
    if ((dry)); then
      echo "+ python3 $here/report.py tiny $bundle/ref/tiny-cpu-$ref.jsonl $out/$name.jsonl --rtol $rtol > $out/$name.json" >&2
    elif ! python3 "$here/report.py" tiny "$bundle/ref/tiny-cpu-$ref.jsonl" \
        "$out/$name.jsonl" --rtol "$rtol" --precision "$ref" \
        --log "$out/$name.log" > "$out/$name.json"; then
      echo "$name: the CUDA losses differ from the CPU's: $out/$name.json" >&2
      status=1
    fi
  done

  for name in gpt2-bf16 gpt2-fp32 gpt2-bf16-nogelu; do
    say "3. $name: $gpt2_steps steps"
    run rm -f "$out/$name.jsonl"
    if ! run timeout 150 "$bundle/train-$name" --steps "$gpt2_steps" \
        --log-json "$out/$name.jsonl" > "$(logto "$out/$name.log")" 2>&1; then
      echo "train-$name failed or ran out of time: see $out/$name.log" >&2
      tail -20 "$out/$name.log" >&2 || true
      status=1
    fi
    if ((dry)); then
      echo "+ python3 $here/report.py gpt2 $out/$name.jsonl --params \$(cat $bundle/gpt2.params) > $out/$name.json" >&2
    elif [[ -s "$out/$name.jsonl" ]]; then
      python3 "$here/report.py" gpt2 "$out/$name.jsonl" \
        --params "$(cat "$bundle/gpt2.params")" --peak-tflops "$peak_tflops" \
        --precision "$([[ $name == *bf16* ]] && echo bf16 || echo fp32)" \
        > "$out/$name.json"
    fi
  done

  if ((torch)); then
    say "4. PyTorch on the same shapes (eager, torch.compile; bf16, fp32)"
    # What is left of the 8 minutes, less a margin.
    local left=$((450 - (SECONDS - t0)))
    if ((left < 60)); then
      echo "no time left for PyTorch ($left s)" >&2
    elif ((dry)); then
      echo "+ timeout $left python3 $here/torch_gpt2.py --steps $torch_steps --peak-tflops $peak_tflops > $out/torch.json" >&2
    elif ! timeout "$left" python3 "$here/torch_gpt2.py" --steps "$torch_steps" \
        --peak-tflops "$peak_tflops" > "$out/torch.json" 2> "$out/torch.log"; then
      echo "PyTorch reference failed or ran out of time: $out/torch.log" >&2
      tail -5 "$out/torch.log" >&2 || true
    fi
  fi

  if ((dry)); then
    echo "+ python3 $here/report.py combine $out/gpu-bench.json ..." >&2
    return 0
  fi
  python3 - "$out/checks.json" "$status" "$((SECONDS - t0))" <<'PY'
import json, sys
json.dump({"passed": sys.argv[2] == "0", "seconds": int(sys.argv[3])},
          open(sys.argv[1], "w"))
PY
  local parts=("$out/checks.json" "$out/gpu.json" "$out/runtime.json"
               "$out/kernel-check.json"
               "$out/kernel-check-thread.json" "$out/kernel-check-bf16.json"
               "$out/tiny-fp32.json"
               "$out/tiny-fp32-thread.json" "$out/tiny-bf16.json"
               "$out/gpt2-bf16.json" "$out/gpt2-fp32.json"
               "$out/gpt2-bf16-nogelu.json")
  [[ -e "$out/torch.json" ]] && parts+=("$out/torch.json")
  [[ -e "$bundle/commit" ]] && cp "$bundle/commit" "$out/commit.txt"
  python3 "$here/report.py" combine "$out/gpu-bench.json" "${parts[@]}"
  say "done in $((SECONDS - t0)) s: $out/gpu-bench.json (checks $( ((status)) && echo FAILED || echo passed))"
  return "$status"
}

case "$cmd" in
  prepare) prepare ;;
  run) run_gpu ;;
  *)
    sed -n '2,30p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
    ;;
esac
