# equiv.sh PYTHON SRC NAME NP: trains ./NAME on NP ranks (20 steps at a
# constant lr from init.safetensors, the settings of the one-rank run in
# one.json and ckpt1/) and writes
#   NAME.check: its comparisons with the one-rank run, one line each: the
#     loss and gradient norm of every step within 1e-5 relative; the
#     parameters after step 20 (gathered into the checkpoint) per tensor
#     within 1e-5 (L2 of the difference over the L2 of the reference); the
#     fused q/k/v bias element by element within 2e-5 absolute: it holds
#     the key bias, whose gradient is exactly zero (softmax shift
#     invariance), so its values are f32 rounding noise in both runs that
#     AdamW turns into steps of the learning rate's size (up to 1.2e-5 in
#     recompute.test's 20 steps with the flash kernels, 1.1e-5 apart);
#   NAME.bytes: a 1-step -v run (mesh, shards, traffic, peak bytes).
# Environment: EQUIV_ARGS, more flags for both runs of NAME (--data FILE:
# the one-rank run must have used the same); EQUIV_PARAM_RTOL, the
# parameters' tolerance (default 1e-5; second-stream.test says when
# another one is right).
set -eu
py=$1 src=$2 name=$3 np=$4
extra=${EQUIV_ARGS:-}
prtol=${EQUIV_PARAM_RTOL:-1e-5}
mpi="timeout 300 mpirun --allow-run-as-root --oversubscribe -np $np"
$mpi ./$name --steps 20 --threads 1 --lr-schedule constant $extra \
  --init-from init.safetensors --log-json $name.jsonl --ckpt-dir ckpt-$name \
  > $name.out
$py "$src/test/runtime/Inputs/log_to_losses.py" $name.jsonl $name.json
cmp="$py $src/test/reference/compare.py"
one=ckpt1/step-00000020/model.safetensors
mine=ckpt-$name/step-00000020/model.safetensors
{
  echo "$name losses: $($cmp one.json $name.json --rtol 1e-5 | tail -1)"
  echo "$name params: $($cmp --params $one $mine --norm l2 --rtol $prtol \
    --exclude 'c_attn\.bias$' | tail -1)"
  echo "$name bias: $($cmp --params $one $mine --rtol 1e-5 --atol 2e-5 \
    --include 'c_attn\.bias$' | tail -1)"
} > $name.check
$mpi ./$name --steps 1 --threads 1 -v $extra > $name.bytes
