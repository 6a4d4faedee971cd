"""Compares the planner's [A8] with the IR's liveness [A9], per layer.

usage: kept_per_layer.py PLAN_JSON PLAN_JSON_L1 REPORT_L REPORT_L1 [--head]

PLAN_JSON is `triaxc --plan ... --report-json` of a model of L blocks on
one pipeline stage (its top plan's memory: "activations" = L x [A8],
"logits" = [A6], "weight_copies" = [A10]), PLAN_JSON_L1 the same of the
model with L - 1 blocks (the difference of their [A10] is a block's bf16
weight copies under bf16 compute over f32 parameters; 0 otherwise).
REPORT_L and REPORT_L1 are `triaxc --report` of the same models compiled
with that plan's options: the difference of their [A9] lines is what one
block holds. Prints both and exits 1 unless they are equal. With --head,
also compares what [A9] holds beyond the L blocks with [A6] (the logits,
their gradient written over them, and the final norm's h-wide tensors)
or, under full recomputation, with the layer the backward rebuilds, the
larger of the two, plus [A10] of what is not a block's: within 5%.
"""
import json
import sys

from ir_liveness import LIVENESS



def liveness(path):
    for line in open(path):
        m = LIVENESS.search(line)
        if m:
            return int(m[1])
    sys.exit(f"{path}: no [A9] line")


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    plan, plan1, full, fewer = args
    memory = json.load(open(plan))["plans"][0]["memory"]
    memory1 = json.load(open(plan1))["plans"][0]["memory"]
    layers = memory["layers"]
    kept = memory["activations"] / layers / memory["in_flight"]
    copies = memory["weight_copies"] - memory1["weight_copies"]
    planned = kept + copies
    whole, less = liveness(full), liveness(fewer)
    measured = whole - less
    ok = round(planned) == measured
    label = f"[A8] {round(kept)}"
    if copies:
        label += f" + [A10] {round(copies)} = {round(planned)}"
    print(f"per layer: {label}, [A9] {measured}: "
          f"{'equal' if ok else 'DIFFERENT'}")
    if "--head" in sys.argv:
        rest = whole - layers * measured
        outside = memory["weight_copies"] - layers * copies
        head = max(memory["logits"], memory["recomputed"]) + outside
        within = abs(head / rest - 1) <= 0.05
        label = f"[A6] {round(memory['logits'])}, recomputed " + \
            f"{round(memory['recomputed'])}"
        if outside:
            label += f", [A10] {round(outside)}"
        print(f"head: {label}, [A9] beyond the blocks "
              f"{rest}: {'within 5%' if within else 'NOT within 5%'}")
        ok = ok and within
    sys.exit(0 if ok else 1)


main()
