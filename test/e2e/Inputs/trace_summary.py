"""Summarizes a training binary's --trace (Chrome trace JSON) for tests.

Prints, per rank (pid), the compute thread's events in time order, the
number of events on the send / recv / collectives threads with their names,
and checks the pipeline's causality across ranks: a stage's F<mb> starts
after the previous stage's F<mb> ended, and its B<mb> ends before the
previous stage's B<mb> starts (the ranks share one monotonic clock); with
the interleaved schedule's chunks (F<mb>.<chunk>) over the virtual stages.
  trace_summary.py TRACE [STAGE_RANKS...]   (ranks of stages 0, 1, ...)
"""
import json
import sys


def main():
    with open(sys.argv[1]) as f:
        trace = json.load(f)
    stage_ranks = [int(r) for r in sys.argv[2:]]
    events = [e for e in trace["traceEvents"] if e.get("ph") == "X"]
    ranks = sorted({e["pid"] for e in events})
    for rank in ranks:
        mine = sorted((e for e in events if e["pid"] == rank),
                      key=lambda e: e["ts"])
        compute = [e["name"] for e in mine if e["tid"] == 1]
        print(f"rank {rank} compute: {' '.join(compute)}")
        for tid, what in ((2, "send"), (3, "recv"), (4, "collectives")):
            names = sorted({e["name"] for e in mine if e["tid"] == tid})
            count = sum(1 for e in mine if e["tid"] == tid)
            print(f"rank {rank} {what}: {count} ({', '.join(names)})")
        if any(e["dur"] < 0 or e["ts"] < 0 for e in mine):
            print(f"rank {rank}: negative time")
    # Causality over the virtual stages: chunk c of the stage on rank
    # stage_ranks[s] is virtual stage c * len(stage_ranks) + s (the
    # interleaved schedule's F<mb>.<c>; one chunk without the suffix).
    bad = 0
    p = len(stage_ranks)
    passes = {}
    for s, rank in enumerate(stage_ranks):
        for e in events:
            if e["pid"] != rank or e["tid"] != 1 or e["name"][0] not in "FB":
                continue
            name, _, chunk = e["name"].partition(".")
            passes[(name, int(chunk or 0) * p + s)] = e
    for (name, v), e in sorted(passes.items()):
        prev = passes.get((name, v - 1))
        if prev is None:
            continue
        if name.startswith("F") and e["ts"] < prev["ts"] + prev["dur"]:
            bad += 1
            print(f"virtual stage {v} {name} starts before stage {v-1}'s ends")
        if name.startswith("B") and prev["ts"] < e["ts"] + e["dur"]:
            bad += 1
            print(f"virtual stage {v-1} {name} starts before stage {v}'s ends")
    if stage_ranks:
        print("causal: ok" if bad == 0 else f"causal: {bad} violations")


if __name__ == "__main__":
    main()
