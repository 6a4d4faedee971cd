#!/usr/bin/env bash
# bench-fake-bundle.sh DIR CUDA: a bundle for `bench/gpu/run.sh run` whose
# programs are shell scripts (bench-scripts.test), and a toolkit folder
# CUDA with lib/ (empty files named as cuBLAS's and NCCL's libraries) and
# bin/compute-sanitizer (a script) for TRIAX_CUDA_LIB_DIRS and
# TRIAX_CUDA_BIN_DIRS: run.sh's own rules (its deadline, its step records,
# the combined JSON) run without a GPU.
#
# Every program passes its check: the runtime tests print their harness's
# last line, the abort exits 1 with its message, the kernel tests have no
# kernels, tiny's losses are the CPU references', gpt2 logs 100 ms steps.
# FAKE_HANG=NAME (in the environment of run.sh) makes the program NAME
# hang instead; FAKE_HANG_TERM=ignore makes it ignore SIGTERM too, so only
# timeout's KILL ends it. The fake compute-sanitizer runs the program and
# reports 0 errors, or 2 for the tool FAKE_SANITIZER_ERRORS_IN names.
set -euo pipefail
b="$1"
cuda="$2"
mkdir -p "$cuda/lib" "$cuda/bin"
touch "$cuda/lib/libcublas.so.13" "$cuda/lib/libcublasLt.so.13" \
  "$cuda/lib/libnccl.so.2"
cat > "$cuda/bin/compute-sanitizer" <<'EOF'
#!/usr/bin/env bash
tool=memcheck
while [[ "$1" == --* ]]; do
  case "$1" in
    --tool) tool="$2"; shift 2 ;;
    *) shift 2 ;;
  esac
done
"$@" > /dev/null
rc=$?
errors=0
[[ "$tool" == "${FAKE_SANITIZER_ERRORS_IN:-}" ]] && errors=2
echo "========= ERROR SUMMARY: $errors errors"
exit "$rc"
EOF
chmod +x "$cuda/bin/compute-sanitizer"
mkdir -p "$b/ref" "$b/lib" "$b/lib-stub" "$b/kernel-check/cpu" \
  "$b/kernel-check-warp" "$b/kernel-check-bf16/cpu"

cat > "$b/fake-program" <<'EOF'
#!/usr/bin/env bash
name="$(basename "$0")"
if [[ "${FAKE_HANG:-}" == "$name" ]]; then
  [[ "${FAKE_HANG_TERM:-}" == ignore ]] && trap '' TERM
  for ((i = 0; i < 120; i++)); do sleep 1; done  # 2 minutes at most
  exit 1
fi
case "$name" in
  triax-rt-gemm-cuda-test) echo "gemm: all 3 checks passed" ;;
  triax-rt-attention-cudnn-test)
    echo "triax runtime: attention forward [B 2, S 128, heads 4, kv 4, d 64] by cuDNN 9.0.0 (stand-in)"
    echo "attention-cudnn: all 3 checks passed" ;;
  triax-rt-nccl-test)
    if [[ "${1:-}" == abort ]]; then
      echo "triax runtime: rank 0: injected failure after a NCCL all_reduce"
      exit 1
    fi
    printf 'comm: nccl, world 1\nnccl: all 2 checks passed\n' ;;
  kernel-check-cuda) mkdir -p "$1" ;;
  train-*)
    steps=0 log=/dev/null
    while (($#)); do
      case "$1" in
        --steps) steps="$2"; shift 2 ;;
        --log-json) log="$2"; shift 2 ;;
        *) shift ;;
      esac
    done
    for ((i = 1; i <= steps; i++)); do
      printf '{"step": %d, "loss": %d.5, "ms": 100}\n' "$i" "$((100 - i))"
    done > "$log"
    echo "comm: nccl, world 1" ;;
esac
EOF
chmod +x "$b/fake-program"
for p in triax-rt-gemm-cuda-test triax-rt-nccl-test \
         triax-rt-attention-cudnn-test train-tiny-fp32 \
         train-tiny-fp32-warp train-tiny-bf16 train-tiny-bf16-cudnn \
         train-tiny-moe-fp32 \
         train-tiny-moe-bf16 train-tiny-true16 \
         train-gpt2-b1-fp32 \
         train-gpt2-b1-bf16 train-gpt2-b8-bf16 \
         train-gpt2-bf16 train-gpt2-bf16-cudnn train-gpt2-bf16-unfused \
         train-gpt2-fp32 \
         train-gpt2-bf16-nopad; do
  ln -sf fake-program "$b/$p"
done
for d in kernel-check kernel-check-warp kernel-check-bf16; do
  ln -sf ../fake-program "$b/$d/kernel-check-cuda"
done
echo '{"kernels": []}' > "$b/kernel-check/kernels.json"
echo '{"kernels": []}' > "$b/kernel-check-bf16/kernels.json"
for prec in fp32 bf16; do
  for ((i = 1; i <= 10; i++)); do
    printf '{"step": %d, "loss": %d.5}\n' "$i" "$((100 - i))"
  done > "$b/ref/tiny-cpu-$prec.jsonl"
  cp "$b/ref/tiny-cpu-$prec.jsonl" "$b/ref/tiny-moe-cpu-$prec.jsonl"
  cp "$b/ref/tiny-cpu-$prec.jsonl" "$b/ref/tiny-true16-cpu-$prec.jsonl"
  head -5 "$b/ref/tiny-cpu-$prec.jsonl" > "$b/ref/gpt2-b1-cpu-$prec.jsonl"
done
# The attention check: its built program, and a stand-in for its runner
# (TRIAX_BENCH_ATTENTION_CHECK) that passes.
for impl in flash batched-gemm flash-mma cudnn; do
  mkdir -p "$b/attention-$impl"
  ln -sf ../fake-program "$b/attention-$impl/attention-check-cuda"
done
cat > "$b/fake-attention-check" <<'EOF'
#!/usr/bin/env bash
echo "attention-check: 0 of 28 outputs over tolerance (stand-in)"
EOF
chmod +x "$b/fake-attention-check"
echo 124439808 > "$b/gpt2.params"
: > "$b/lib-stub/libmpi.so.40"
