# usage: measure.sh PYTHON COMPARE NAME RANKS [triaxc options...]
# Compiles tiny.mlir with the options, runs one step on RANKS ranks with -v,
# reports the same module with triax-report and compares (NAME.cmp).
set -e
python=$1 compare=$2 name=$3 ranks=$4
shift 4
triaxc tiny.mlir "$@" -o "$name"
triaxc tiny.mlir "$@" --emit=mlir > "$name.mlir"
triax-report "$name.mlir" > "$name.report"
if [ "$ranks" = 1 ]; then
  ./"$name" --steps 1 --threads 1 -v > "$name.out"
else
  timeout 120 mpirun --allow-run-as-root --oversubscribe -np "$ranks" \
    ./"$name" --steps 1 --threads 1 -v > "$name.out"
fi
"$python" "$compare" "$name" "$name.out" "$name.report" > "$name.cmp"
