#!/usr/bin/env python3
"""Compares a bf16 training run with a reference run (log_to_losses.py JSON).

    bf16_compare.py REF.json RUN.json --loss-rtol R --norm-rtol N [--differ]
        [--decrease D] [--steps S] [--final-loss-rtol F] [--same]

Passes when every step's loss is within R (relative, |a-b| <= R |ref|) and
every gradient norm within N of the reference, when RUN's loss fell by at
least D from the first step to the last, and, with --differ, when the two
runs are not identical (a bf16 run that equals the fp32 one bit for bit
computed nothing in bf16). --steps compares the first S steps only (the
rest may drift apart: training is chaotic over hundreds of steps);
--final-loss-rtol compares the mean loss of the last 10 steps of the whole
runs; --same asks for identical losses and norms. Prints the worst relative
differences.
"""

import argparse
import json
import sys


def main():
    p = argparse.ArgumentParser()
    p.add_argument("ref")
    p.add_argument("run")
    p.add_argument("--loss-rtol", type=float, required=True)
    p.add_argument("--norm-rtol", type=float, required=True)
    p.add_argument("--decrease", type=float, default=0.0)
    p.add_argument("--differ", action="store_true")
    p.add_argument("--steps", type=int, default=0)
    p.add_argument("--final-loss-rtol", type=float, default=None)
    p.add_argument("--same", action="store_true")
    a = p.parse_args()
    ref, run = json.load(open(a.ref)), json.load(open(a.run))
    ok = True
    if a.final_loss_rtol is not None:
        x = sum(ref["losses"][-10:]) / len(ref["losses"][-10:])
        y = sum(run["losses"][-10:]) / len(run["losses"][-10:])
        rel = abs(x - y) / abs(x)
        good = len(ref["losses"]) == len(run["losses"]) and \
            rel <= a.final_loss_rtol
        ok &= good
        print(f"{'ok' if good else 'FAIL'}: final loss (mean of the last "
              f"10 of {len(run['losses'])} steps) {y:.4f} vs {x:.4f}: rel "
              f"{rel:.2e} (tolerance {a.final_loss_rtol:g})")
    if a.same:
        good = ref["losses"] == run["losses"] and \
            ref["grad_norms"] == run["grad_norms"]
        ok &= good
        print(f"{'ok' if good else 'FAIL'}: identical losses and norms")
    for key, rtol in (("losses", a.loss_rtol), ("grad_norms", a.norm_rtol)):
        x, y = ref[key], run[key]
        if a.steps:
            x, y = x[:a.steps], y[:a.steps]
        if len(x) != len(y) or not x:
            print(f"FAIL: {key}: {len(x)} vs {len(y)} steps")
            return 1
        rel = [abs(u - v) / abs(u) for u, v in zip(x, y)]
        worst = max(range(len(rel)), key=lambda i: rel[i])
        good = rel[worst] <= rtol
        ok &= good
        print(f"{'ok' if good else 'FAIL'}: {key}: worst rel "
              f"{rel[worst]:.2e} at step {worst + 1} (tolerance {rtol:g})")
    fall = run["losses"][0] - run["losses"][-1]
    if fall < a.decrease:
        print(f"FAIL: the loss fell by {fall:.4f} < {a.decrease}")
        ok = False
    if a.differ and ref["losses"] == run["losses"]:
        print("FAIL: the runs are identical")
        ok = False
    print("OK" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
