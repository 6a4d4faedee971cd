#!/bin/sh
# usage: kept-check.sh PYTHON MODEL GPUS PLAN HEAD [TRIAXC OPTIONS...]
# Plans MODEL2.mlir (L blocks) and MODEL1.mlir (L - 1 blocks) with --plan
# gpus=GPUS,gpu=h100-80g,PLAN,top=1 and compiles MODEL2.mlir and MODEL1.mlir (L - 1 blocks) with the same
# options for --report; kept_per_layer.py compares [A8] and [A6] with the
# IR's liveness [A9] (HEAD = head: [A6] too; layers: [A8] only). Prints
# the options, then the comparison.
set -e
python=$1 model=$2 gpus=$3 plan=$4 head=$5
shift 5
here=$(dirname "$0")
triaxc "$model"2.mlir --plan "gpus=$gpus,gpu=h100-80g,$plan,top=1" --report-json > plan.json
triaxc "$model"1.mlir --plan "gpus=$gpus,gpu=h100-80g,$plan,top=1" --report-json > plan1.json
triaxc "$model"2.mlir "$@" --report > report2.txt
triaxc "$model"1.mlir "$@" --report > report1.txt
printf '%s %s: ' "$model" "$plan"
$python "$here/kept_per_layer.py" plan.json plan1.json report2.txt report1.txt $([ "$head" = head ] && echo --head) | paste -s -d ' '
