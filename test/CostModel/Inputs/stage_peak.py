"""Compares a pipeline stage's planned activations with the IR's [A9].

usage: stage_peak.py PLAN_JSON REPORT TOLERANCE

PLAN_JSON is `triaxc --plan ... --report-json` (its top plan's fullest
stage: "activation_peak", what of the stage's planned peak is not state:
[A8] x the micro-batches in flight [P2], [A6], [A7], [A10], [A11], [A12] and
the backward's working set, as the planner adds them); REPORT is `triaxc --mesh
... --report --report-rank R` of the rank holding that stage (its [A9]
walks the stage's schedule). Prints both and exits 1 unless they agree
within TOLERANCE (relative).
"""
import json
import sys

from ir_liveness import liveness

plan, report, tolerance = sys.argv[1], sys.argv[2], float(sys.argv[3])
memory = json.load(open(plan))["plans"][0]["memory"]
planned = memory["activation_peak"]
measured = liveness(open(report).read())
off = planned / measured - 1
ok = abs(off) <= tolerance
print(f"stage {memory['stage']}: planned {round(planned)}, [A9] {measured} "
      f"({off * 100:+.1f}%): {'ok' if ok else 'NOT within'} {tolerance * 100:g}%")
sys.exit(0 if ok else 1)
