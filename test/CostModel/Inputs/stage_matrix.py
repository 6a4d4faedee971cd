"""Every pipeline stage the planner costs against the IR's [A9], over a matrix.

usage: stage_matrix.py [NAME...]

NAME... runs only the configurations whose name contains one of them.

For each model shape, parallelism and schedule below, plans the mesh with
`triaxc --plan ... --report-json` and compares every stage's planned
activations (its "stage_peaks") with `triaxc --mesh ... --report
--report-rank R` of that stage's first rank. The planner must never be
under [A9] by more than 2% (a plan it says fits must fit); it may be over
by at most 2%, or by the bound a configuration names, which says what the
planner over-counts (docs/cost-model.md). Prints one line per schedule and
the worst of all; exits 1 on a miss.
"""
import json
import subprocess
import sys
import tempfile

from ir_liveness import stage_a9

UNDER = 0.02

LLAMA = ("llama2-7b --hidden 64 --heads 4 --vocab 256 --layers 8 --ffn 256 "
         "--seq 64 --batch 16 --micro-batch 2")
# Unequal stages and chunks: 10 blocks on pp = 4 are 3,3,2,2 (or, as
# interleaved's 8 chunks, 1,1,1,1,1,2,2,1), 12 are 1,1,1,2,2,2,2,1.
LLAMA10 = LLAMA.replace("--layers 8", "--layers 10")
LLAMA12 = LLAMA.replace("--layers 8", "--layers 12")
GELU = "tiny --layers 8 --seq 32 --batch 16 --micro-batch 2"
GELU5 = GELU.replace("--layers 8", "--layers 5")
LLAMA5 = LLAMA.replace("--layers 8", "--layers 5")
MOE = "tiny-moe --layers 8 --seq 32 --batch 16 --micro-batch 2"
GPT2 = "gpt2 --layers 4 --seq 128 --batch 8 --micro-batch 2"

# (name, model, plan keys, mesh axes beyond pp, triaxc flags, ranks a stage,
# {schedule: over-prediction bound where it is not 2%}[, the schedules it
# runs under where not all]).
FULL = ["--recompute", "full"]
SP = ["--sequence-parallel"]
CARRY = ["--carry-gathered"]
CONFIGS = [
    ("llama", LLAMA, "recompute=none", "", [], 1, {}),
    ("llama selective", LLAMA, "recompute=selective", "",
     ["--recompute", "selective"], 1, {}),
    # Interleaved under full recomputation with one block a chunk: the
    # rebuilt layer counts an incoming gradient such a chunk does not hold.
    ("llama full", LLAMA, "recompute=full", "", FULL, 1,
     {"interleaved": 0.04}),
    # (Interleaved's last stage: its peak is in a chunk without the head,
    # whose logits [A6] counts.)
    ("llama 12 blocks", LLAMA12, "recompute=none", "", [], 1,
     {"interleaved": 0.03}),
    ("llama 10 blocks full", LLAMA10, "recompute=full", "", FULL, 1,
     {"interleaved": 0.03}),
    ("gelu", GELU, "recompute=none", "", [], 1, {}),
    ("gelu full", GELU, "recompute=full", "", FULL, 1, {"interleaved": 0.04}),
    ("llama tp2", LLAMA, "recompute=none,tp=2,sp=off", ",tp=2", [], 2, {}),
    ("llama tp2 sp", LLAMA, "recompute=none,tp=2,sp=on,carry-gathered=off", ",tp=2", SP, 2,
     {}),
    ("llama tp2 sp full", LLAMA,
     "recompute=full,tp=2,sp=on,carry-gathered=off", ",tp=2",
     SP + FULL, 2, {"interleaved": 0.04}),
    ("gelu tp2 sp full", GELU,
     "recompute=full,tp=2,sp=on,carry-gathered=off", ",tp=2",
     SP + FULL, 2, {"interleaved": 0.04}),
    ("gpt2", GPT2, "recompute=none", "", [], 1, {}),
    ("llama cp2", LLAMA, "recompute=none,cp=2", ",cp=2", [], 2, {}),
    ("llama bf16", LLAMA, "recompute=none,precision=bf16", "",
     ["--precision", "bf16"], 1, {}),
    ("llama bf16 params", LLAMA.replace("--seq 64", "--seq 64 --dtype bf16"),
     "recompute=none", "", [], 1, {}),
    ("moe", MOE, "recompute=none", "", [], 1, {}),
    ("moe full", MOE, "recompute=full", "", FULL, 1, {}),
    # (ZB-H1's B pass in bf16 holds every weight copy and the first MoE
    # layer's expert gradients at once; within 2% since 2026-12-07.)
    ("moe bf16", MOE, "recompute=none,precision=bf16", "",
     ["--precision", "bf16"], 1, {}),
    # ep's exchange: the gradient on both sides and the all_to_all's
    # scratch, or the experts' MLP gradients beside the exchanged one.
    ("moe ep2", MOE, "recompute=none,ep=2", ",ep=2", [], 2, {}),
    ("moe ep2 full", MOE, "recompute=full,ep=2", ",ep=2", FULL, 2, {}),
    # Sequence parallelism around the experts: the dispatch gathers the
    # tokens, the combine's sum is reduce-scattered.
    ("moe tp2 sp", MOE, "recompute=none,tp=2,sp=on,carry-gathered=off",
     ",tp=2", SP, 2, {}),
    ("moe tp2 sp full", MOE, "recompute=full,tp=2,sp=on,carry-gathered=off",
     ",tp=2", SP + FULL, 2, {"interleaved": 0.04}),
    # [A10] under ZB-H1 with one block on a stage (5 blocks on pp = 4 are
    # 1,1,2,1): B's first layer holds every copy beside the ffn-wide
    # gradient its first GEMM makes, then (once the output projection's
    # copy is freed) GELU's two or SwiGLU's three; the first stage's
    # backward, its W pass, the same (-5.0% and -2.8% until 2026-12-07).
    ("gelu 5 blocks bf16", GELU5, "recompute=none,precision=bf16", "",
     ["--precision", "bf16"], 1, {}, ["1f1b", "zb-h1"]),
    ("llama 5 blocks bf16", LLAMA5, "recompute=none,precision=bf16", "",
     ["--precision", "bf16"], 1, {}, ["1f1b", "zb-h1"]),
    # ZB-H1's B pass hands W what it gathered whole (carry-gathered).
    ("llama tp2 sp carry", LLAMA, "recompute=none,tp=2,sp=on,carry-gathered=on",
     ",tp=2", SP + CARRY, 2, {}, ["zb-h1"]),
    ("gelu tp2 sp full carry", GELU,
     "recompute=full,tp=2,sp=on,carry-gathered=on", ",tp=2",
     SP + FULL + CARRY, 2, {}, ["zb-h1"]),
    # (A MoE layer's second norm output is handed over as the shard: its
    # router runs on it, the experts' weight gradients read buffers; +4.3%,
    # +3.6% and +3.4% on stages 1-3 when the planner counted it whole.
    # Stage 1 is still +2.1% over, not traced yet.)
    ("moe tp2 sp full carry", MOE,
     "recompute=full,tp=2,sp=on,carry-gathered=on", ",tp=2",
     SP + FULL + CARRY, 2, {"zb-h1": 0.03}, ["zb-h1"]),
]
if len(sys.argv) > 1:
    CONFIGS = [c for c in CONFIGS if any(n in c[0] for n in sys.argv[1:])]
SCHEDULES = ["gpipe", "1f1b", "interleaved", "zb-h1"]


def run(*args):
    return subprocess.run(args, check=True, capture_output=True,
                          text=True).stdout


failed = False
worst_under = (0.0, "")
worst_over = (0.0, "")
stages = 0
with tempfile.TemporaryDirectory() as tmp:
    models = {}
    for name, model, *_ in CONFIGS:
        if model not in models:
            path = f"{tmp}/m{len(models)}.mlir"
            run("triax-model", *model.split(), "-o", path)
            models[model] = path
    for schedule in SCHEDULES:
        misses = []
        configs = [c for c in CONFIGS if schedule in (c[7:] or [SCHEDULES])[0]]
        for name, model, keys, axes, flags, per, over, *_ in configs:
            pp = 4 if "gpt2" not in model else 2
            extra, flags_v = "", list(flags)
            if schedule == "interleaved":
                extra, flags_v = ",virtual-stages=2", flags + [
                    "--virtual-stages", "2"]
            plan = json.loads(
                run("triaxc", models[model], "--plan",
                    f"gpus={pp * per},gpu=h100-80g,pp={pp},"
                    f"schedule={schedule},micro-batch=2,top=1,{keys}{extra}",
                    "--report-json"))
            bound = over.get(schedule, 0.02)
            if plan["plans"][0]["carry_gathered"]:
                flags_v = flags_v + CARRY
            for st in plan["plans"][0]["stage_peaks"]:
                measured = stage_a9(models[model], f"pp={pp}{axes}", schedule,
                              flags_v, st["stage"] * per)
                off = st["activation_peak"] / measured - 1
                stages += 1
                where = f"{name} {schedule} stage {st['stage']}"
                if off < worst_under[0]:
                    worst_under = (off, where)
                if off > worst_over[0]:
                    worst_over = (off, where)
                if off < -UNDER or off > bound:
                    misses.append(f"{where}: {off * 100:+.1f}%")
        failed |= bool(misses)
        print(f"{schedule}: " + ("; ".join(misses) if misses else
                                 f"{len(configs)} configurations ok"))
print(f"{stages} stages: worst under {worst_under[0] * 100:+.1f}% "
      f"({worst_under[1]}), worst over {worst_over[0] * 100:+.1f}% "
      f"({worst_over[1]})")
sys.exit(1 if failed else 0)
