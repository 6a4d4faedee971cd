"""The planner's stage peaks against the IR's [A9] at real model shapes.

usage: real_shapes.py HARDWARE_JSON

GPT-3 175B (vocabulary padded to 50,304), LLaMA-2 7B and Mixtral 8x7B
with their presets' layers, widths and sequences, 16 sequences a step in
micro-batches of one (the shapes are the models'; the step is short so
that `triaxc --report` unrolls few micro-batches), pipelines of 8 x tp 8
and 4 x tp 2, 4 x 1 or 4 x ep 2 under every schedule, and meshes without a
pipeline (tp 8, ep 8), bf16 compute, recomputation and sequence parallelism. For each configuration the planner's
`stage_peaks` (planned on HARDWARE_JSON, an H100 with unbounded HBM, so
that plans an H100 would not hold are costed too) against `triaxc
--report --report-rank` of the first, a middle and the last stage. The
planner must never be more than 2% under [A9] and at most 4% over.
Prints one line per configuration; exits 1 on a miss.
"""
import json
import subprocess
import sys
import tempfile

from ir_liveness import stage_a9

UNDER, OVER = 0.02, 0.04
hardware = sys.argv[1]

MODELS = {
    "gpt3": "gpt3-175b --vocab 50304 --batch 16 --micro-batch 1",
    "llama": "llama2-7b --batch 16 --micro-batch 1",
    "mixtral": "mixtral-8x7b --batch 16 --micro-batch 1",
}
BF16 = ["--precision", "bf16"]
SP = ["--sequence-parallel"]
# (model, pp, tp, schedule, plan keys, triaxc flags); pp 1: no pipeline;
# tp the mesh's other axis (ep for Mixtral).
CONFIGS = [
    ("gpt3", 1, 8, None, "recompute=selective,sp=off,precision=bf16",
     BF16 + ["--recompute", "selective"]),
    ("llama", 1, 8, None, "recompute=full,sp=on,precision=bf16",
     BF16 + SP + ["--recompute", "full"]),
    ("mixtral", 1, 8, None, "recompute=none,precision=bf16", BF16),
    ("gpt3", 8, 8, "gpipe", "recompute=none,sp=off,precision=bf16", BF16),
    ("gpt3", 8, 8, "1f1b", "recompute=selective,sp=on,precision=bf16",
     BF16 + SP + ["--recompute", "selective"]),
    ("gpt3", 8, 8, "interleaved",
     "recompute=none,sp=off,precision=bf16,virtual-stages=2",
     BF16 + ["--virtual-stages", "2"]),
    ("gpt3", 8, 8, "interleaved",
     "recompute=full,sp=off,precision=fp32,virtual-stages=3",
     ["--recompute", "full", "--virtual-stages", "3"]),
    ("gpt3", 8, 8, "zb-h1",
     "recompute=full,sp=on,precision=bf16,carry-gathered=off",
     BF16 + SP + ["--recompute", "full"]),
    ("gpt3", 8, 8, "zb-h1",
     "recompute=none,sp=on,precision=bf16,carry-gathered=on",
     BF16 + SP + ["--carry-gathered"]),
    ("llama", 4, 2, "zb-h1",
     "recompute=selective,sp=on,precision=bf16,carry-gathered=off",
     BF16 + SP + ["--recompute", "selective"]),
    ("llama", 4, 2, "interleaved",
     "recompute=none,sp=off,precision=bf16,virtual-stages=2",
     BF16 + ["--virtual-stages", "2"]),
    ("mixtral", 4, 1, "1f1b", "recompute=full,precision=bf16",
     BF16 + ["--recompute", "full"]),
    ("mixtral", 4, 1, "zb-h1", "recompute=none,precision=bf16", BF16),
    ("mixtral", 4, 2, "1f1b", "recompute=none,precision=bf16", BF16),
]


def run(*args):
    return subprocess.run(args, check=True, capture_output=True,
                          text=True).stdout


failed = False
with tempfile.TemporaryDirectory() as tmp:
    paths = {}
    for name, spec in MODELS.items():
        paths[name] = f"{tmp}/{name}.mlir"
        run("triax-model", *spec.split(), "-o", paths[name])
    for name, pp, tp, schedule, keys, flags in CONFIGS:
        axis = "ep" if name == "mixtral" and tp > 1 else "tp"
        mesh = f"pp={pp},{axis}={tp}" if pp > 1 else f"{axis}={tp}"
        plan = json.loads(run(
            "triaxc", paths[name], "--plan",
            f"gpus={pp * tp},gpu={hardware},pp={pp},{axis}={tp},"
            + (f"schedule={schedule}," if schedule else "") +
            f"micro-batch=1,top=1,{keys}", "--report-json"))["plans"][0]
        peaks = {st["stage"]: st["activation_peak"]
                 for st in plan["stage_peaks"]}
        stages = sorted({0, pp // 2, pp - 1})
        offs = [peaks[stage] / stage_a9(paths[name], mesh, schedule, flags,
                                        stage * tp) - 1 for stage in stages]
        ok = all(-UNDER <= off <= OVER for off in offs)
        failed |= not ok
        print(f"{name} {mesh} {schedule or 'no pipeline'} {keys}: stages "
              + ", ".join(map(str, stages)) + " " +
              " ".join(f"{off * 100:+.1f}%" for off in offs) +
              (": ok" if ok else ": NOT within -2%..+4%"))
sys.exit(1 if failed else 0)
