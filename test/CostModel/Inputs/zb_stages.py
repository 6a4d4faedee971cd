"""ZB-H1's planned stage peaks against the IR's [A9], stage by stage.

usage: zb_stages.py LLAMA_MLIR GELU_MLIR

For each configuration, plans the mesh with `triaxc --plan ... --report-json`
(its fullest stage) and compares it with `triaxc --mesh ... --report
--report-rank R` of that stage's first rank, as stage_peak.py does; then
checks that no other stage's [A9] is above the planned peak by more than the
tolerance (the planner's fullest stage is the IR's). Exits 1 on a miss.
"""
import json
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
llama, gelu = sys.argv[1], sys.argv[2]
TOLERANCE = 0.02
# (name, model, plan keys, triaxc mesh flags, tp x cp ranks per stage)
CONFIGS = [
    ("swiglu", llama, "recompute=none", [], 1),
    ("swiglu full", llama, "recompute=full", ["--recompute", "full"], 1),
    ("swiglu tp2 sp", llama, "recompute=none,tp=2,sp=on",
     ["--sequence-parallel"], 2),
    ("swiglu bf16", llama, "recompute=none,precision=bf16",
     ["--precision", "bf16"], 1),
    ("swiglu cp2", llama, "recompute=none,cp=2", [], 2),
    ("gelu full tp2 sp", gelu, "recompute=full,tp=2,sp=on",
     ["--recompute", "full", "--sequence-parallel"], 2),
]


def triaxc(*args):
    return subprocess.run(["triaxc", *args], check=True, capture_output=True,
                          text=True).stdout


def a9(model, mesh, flags, rank):
    report = triaxc(model, "--mesh", mesh, "--schedule", "zb-h1", *flags,
                    "--report", "--report-rank", str(rank))
    return int(re.search(r"from the IR's liveness: (\d+)", report)[1])


failed = False
for name, model, keys, flags, per in CONFIGS:
    pp = 4
    plan = json.loads(triaxc(model, "--plan",
                             f"gpus={pp * per},gpu=h100-80g,pp={pp},"
                             f"schedule=zb-h1,micro-batch=2,top=1,{keys}",
                             "--report-json"))
    memory = plan["plans"][0]["memory"]
    mesh = f"pp={pp}" + ("" if per == 1 else
                         (",cp=2" if "cp=2" in keys else ",tp=2"))
    planned = max(memory["weight_copies"] + memory["activations"] +
                  memory["hand_over"] + memory["moe_buffers"] +
                  memory["working"] +
                  max(memory["logits"], memory["recomputed"]),
                  memory["table_scratch"])
    peaks = [a9(model, mesh, flags, stage * per) for stage in range(pp)]
    stage = memory["stage"]
    off = planned / peaks[stage] - 1
    ok = abs(off) <= TOLERANCE and max(peaks) <= planned * (1 + TOLERANCE)
    failed |= not ok
    print(f"{name}: stage {stage} ({memory['deferred']:g} deferred): planned "
          f"{round(planned)}, [A9] {peaks[stage]} ({off * 100:+.1f}%), "
          f"stages' [A9] {' '.join(map(str, peaks))}: "
          f"{'ok' if ok else 'NOT within'} {TOLERANCE * 100:g}%")
sys.exit(1 if failed else 0)
