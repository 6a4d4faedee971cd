# zero_run.sh PYTHON SRC STAGE: trains ./zeroSTAGE on 2 ranks (20 steps,
# the settings of zero.test) and writes zeroSTAGE.check (the comparisons
# with the one-rank run, one line each) and zeroSTAGE.bytes (a 1-step -v
# run: traffic, shards and peak bytes).
set -eu
py=$1 src=$2 s=$3
mpi="timeout 120 mpirun --allow-run-as-root --oversubscribe -np 2"
$mpi ./zero$s --steps 20 --threads 1 --lr-schedule constant \
  --init-from init.safetensors --log-json zero$s.jsonl --ckpt-dir ckpt$s \
  > zero$s.out
$py "$src/test/runtime/Inputs/log_to_losses.py" zero$s.jsonl zero$s.json
cmp="$py $src/test/reference/compare.py"
one=ckpt1/step-00000020/model.safetensors
mine=ckpt$s/step-00000020/model.safetensors
{
  echo "zero-$s losses: $($cmp one.json zero$s.json --rtol 1e-5 | tail -1)"
  echo "zero-$s params: $($cmp --params $one $mine --norm l2 --rtol 1e-5 \
    --exclude 'c_attn\.bias$' | tail -1)"
  echo "zero-$s bias: $($cmp --params $one $mine --norm l2 --rtol 1e-5 \
    --atol 1e-5 --include 'c_attn\.bias$' | tail -1)"
} > zero$s.check
$mpi ./zero$s --steps 1 --threads 1 -v > zero$s.bytes
