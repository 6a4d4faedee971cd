#!/usr/bin/env bash
# Builds triax-fuzz with ASan and UBSan in a build directory of its own and
# fuzzes Triax's parser, verifier, pass pipelines and cost model for a while
# (docs/fuzzing.md). The seed corpus is made here from test/ and triax-model.
#   utils/fuzz.sh [--seconds N] [--jobs N] [--libfuzzer] [--seed N]
#                 [--build-only] [--no-build]
#   --seconds N   how long to fuzz (default 120)
#   --jobs N      fuzzing processes (default 1; libFuzzer: -fork=N)
#   --libfuzzer   clang-22 and libFuzzer, in build-fuzz-clang (installs
#                 clang-22 and libclang-rt-22-dev when missing); without it
#                 g++ and triax-fuzz's own mutation driver, in build-fuzz
#   --seed N      the g++ driver's random seed (default 1)
#   --build-only, --no-build   build without fuzzing, fuzz what is built
# Environment: FUZZ_BUILD_DIR (the build directory), TRIAX_SKIP_INSTALL=1.
# Writes under $FUZZ_BUILD_DIR/fuzz: corpus/ (the seeds), findings/ (this
# run's crash-* and timeout-* inputs with their reports, .log), fuzz.log,
# and summary (the last line printed); libFuzzer's corpus, libfuzzer-corpus/,
# grows from run to run. Exit status 1 when a crash has a frame in
# Triax code or an input timed out; crashes wholly in upstream MLIR/LLVM are
# listed but do not fail the run.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"

seconds=120 jobs=1 libfuzzer=0 seed=1 build=1 fuzz=1
while (($#)); do
  case "$1" in
    --seconds) seconds="$2"; shift 2 ;;
    --jobs) jobs="$2"; shift 2 ;;
    --libfuzzer) libfuzzer=1; shift ;;
    --seed) seed="$2"; shift 2 ;;
    --build-only) fuzz=0; shift ;;
    --no-build) build=0; shift ;;
    *) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 2 ;;
  esac
done

if ((libfuzzer)); then
  build_dir="${FUZZ_BUILD_DIR:-$root/build-fuzz-clang}"
  compilers=(-DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22)
  debug=-gline-tables-only
else
  build_dir="${FUZZ_BUILD_DIR:-$root/build-fuzz}"
  compilers=(-DCMAKE_C_COMPILER=gcc -DCMAKE_CXX_COMPILER=g++)
  debug=-g1
fi

# No summary until this run writes one (CI's test reads it).
rm -f "$build_dir/fuzz/summary"

if ((build)); then
  if ((libfuzzer)) && [[ "${TRIAX_SKIP_INSTALL:-0}" != 1 ]] &&
     ! dpkg-query -W -f='${Status}\n' clang-22 libclang-rt-22-dev 2>/dev/null |
       grep -c "ok installed" | grep -q 2; then
    echo "== installing clang-22 libclang-rt-22-dev"
    sudo=""; [[ $(id -u) -ne 0 ]] && sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq clang-22 \
      libclang-rt-22-dev >/dev/null
  fi
  echo "== configuring $build_dir"
  # -O1 with line tables for the reports' stacks; no -DNDEBUG, so that the
  # asserts of Triax and of the MLIR templates it instantiates are findings.
  cmake -S "$root" -B "$build_dir" -G Ninja "${compilers[@]}" \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 $debug" \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 $debug" \
    -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
    -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit \
    -DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache \
    -DTRIAX_FUZZ=ON -DTRIAX_BUILD_RUNTIME=OFF \
    >"$build_dir.configure.log" 2>&1 || { cat "$build_dir.configure.log"; exit 1; }
  echo "== building triax-fuzz, triax-model, triax-opt"
  start=$(date +%s)
  nice ninja -C "$build_dir" triax-fuzz triax-model triax-opt
  echo "== built in $(( $(date +%s) - start )) s"
fi
((fuzz)) || exit 0

bin="$build_dir/bin"
out="$build_dir/fuzz"
corpus="$out/corpus"
findings="$out/findings"
# The seeds and the findings are this run's (copy findings away first).
rm -rf "$corpus" "$findings"
mkdir -p "$corpus" "$findings"

# Sanitizers: every report is fatal; leaks are not findings here (MLIR
# keeps what a context uniques until it dies); stacks symbolized.
export ASAN_OPTIONS="detect_leaks=0:abort_on_error=0:detect_odr_violation=0:allocator_may_return_null=0:symbolize=1"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:symbolize=1"
export ASAN_SYMBOLIZER_PATH=/usr/lib/llvm-22/bin/llvm-symbolizer
export UBSAN_SYMBOLIZER_PATH=$ASAN_SYMBOLIZER_PATH

# The seeds: every .mlir under test/ but the XFAIL ones (known upstream
# crashes, which each run would find again first), split at its "// -----"
# lines, without its comment lines (RUN, CHECK: text the parser skips); a
# tiny model, the same after triax-autodiff and as kernel IR. Each seed
# starts with the byte that picks its plan: the test files take the plans
# in turn, the models every plan.
echo "== seed corpus"
nplans=$("$bin/triax-fuzz" --list-plans | grep -c '^plan ')
n=0
add_seed() { # selector byte, file
  printf "\\$(printf %03o "$1")" >"$corpus/seed-$(printf %04d $n)"
  cat "$2" >>"$corpus/seed-$(printf %04d $n)"
  n=$((n + 1))
}
split_dir=$(mktemp -d)
trap 'rm -rf "$split_dir"' EXIT
while IFS= read -r file; do
  awk -v dir="$split_dir" -v base="$(echo "$file" | tr / _)" '
    /^\/\/ -----/ { part++; next }
    /^[ \t]*\/\// { next }
    { print > (dir "/" base "." part) }' "$root/$file"
done < <(cd "$root" && git ls-files 'test/*.mlir' | xargs grep -L '^// XFAIL:')
for piece in "$split_dir"/*; do
  [[ -s "$piece" ]] && add_seed $((n % nplans)) "$piece"
done
"$bin/triax-model" tiny --layers 2 --micro-batch 2 -o "$split_dir/model.mlir"
"$bin/triax-opt" --triax-autodiff "$split_dir/model.mlir" -o "$split_dir/trained.mlir"
"$bin/triax-opt" --triax-autodiff --triax-fuse-elementwise \
  --convert-triax-to-kernels --triax-outline-kernels "$split_dir/model.mlir" \
  -o "$split_dir/kernels.mlir"
for ((p = 0; p < nplans; p++)); do
  for stage in model trained kernels; do add_seed $p "$split_dir/$stage.mlir"; done
done
echo "$n seeds in $corpus"

echo "== fuzzing for $seconds s (logs: $out/fuzz.log)"
if ((libfuzzer)); then
  # MLIR's words for libFuzzer's insertions: op names and keywords of the
  # seeds.
  cat "$corpus"/* | grep -aoE '[a-z_]+\.[a-z_.]+|[a-z_]+<|#[a-z_]+\.[a-z_]+|->|\^bb[0-9]' |
    sort -u | sed 's/\\/\\\\/g; s/"/\\"/g; s/.*/"&"/' >"$out/mlir.dict"
  mkdir -p "$out/libfuzzer-corpus"
  nice "$bin/triax-fuzz" -fork="$jobs" -ignore_crashes=1 -ignore_timeouts=1 \
    -ignore_ooms=1 -max_total_time="$seconds" -timeout=60 -rss_limit_mb=4096 \
    -dict="$out/mlir.dict" -artifact_prefix="$findings/" \
    "$out/libfuzzer-corpus" "$corpus" >"$out/fuzz.log" 2>&1 || true
  # The last progress line counts the inputs run ("#N ...").
  runs=$(grep -aoE '^#[0-9]+' "$out/fuzz.log" | tail -1 | tr -d '#')
  summary="libFuzzer: ${runs:-0} inputs run in $seconds s x $jobs jobs"
  # Its artifacts come without their reports: replaying one prints it.
  for f in "$findings"/crash-* "$findings"/timeout-*; do
    [[ -f "$f" && "$f" != *.log && ! -f "$f.log" ]] || continue
    timeout 120 "$bin/triax-fuzz" "$f" >"$f.log" 2>&1 || true
  done
else
  pids=()
  for ((j = 0; j < jobs; j++)); do
    mkdir -p "$findings/job$j"
    nice "$bin/triax-fuzz" --seconds "$seconds" --seed $((seed + j)) \
      --artifacts "$findings/job$j" "$corpus" >"$out/fuzz.$j.log" 2>&1 &
    pids+=($!)
  done
  for pid in "${pids[@]}"; do wait "$pid" || true; done
  cat "$out"/fuzz.*.log >"$out/fuzz.log"
  runs=$(grep -h 'inputs run in' "$out"/fuzz.*.log |
    awk '{s += $2} END {print s + 0}')
  summary="triax-fuzz: $runs inputs run in $seconds s x $jobs jobs"
fi

# A finding is in Triax code when its report has a stack frame in Triax's
# sources, or UBSan names a line of them (the driver's own frames aside);
# otherwise it is upstream's.
triax=0 upstream=0 timeouts=0
while IFS= read -r f; do
  log="$f.log"
  case "$(basename "$f")" in
    timeout-*) timeouts=$((timeouts + 1)); echo "timeout: $f"; continue ;;
  esac
  what=$(grep -am1 -E 'SUMMARY|LLVM ERROR|runtime error' "$log" 2>/dev/null || echo "see $log")
  if grep -aE "^ +#[0-9]+ .* in .*$root/(lib|include|runtime)/|^$root/(lib|include|runtime)/[^ ]*: runtime error" \
       "$log" >/dev/null 2>&1; then
    triax=$((triax + 1)); echo "crash in Triax code: $f: $what"
  else
    upstream=$((upstream + 1)); echo "crash in upstream code: $f: $what"
  fi
done < <(find "$findings" -type f \( -name 'crash-*' -o -name 'timeout-*' \) ! -name '*.log' | sort)
summary="$summary; crashes: $triax in Triax code, $upstream upstream; $timeouts timeouts"
echo "$summary" | tee "$out/summary"
((triax == 0 && timeouts == 0))
