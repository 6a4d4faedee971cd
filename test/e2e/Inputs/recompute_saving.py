#!/usr/bin/env python3
"""Measured against predicted activation memory of triax-recompute's modes.

    recompute_saving.py [--tol 0.15] MODE=RUN.out,REPORT.txt ...

The first MODE is the reference (none). RUN.out is a `./train --steps 1 -v`
run: its "peak bytes: ... activ N" is the measured peak of the compiled
code's buffers. REPORT.txt is `triaxc --report` of the same program: its
"activation peak ... : N  [A9]" is the cost model's prediction from the
IR's liveness (docs/cost-model.md [A9]). Prints, per mode, both peaks and
the saving against the reference, measured and predicted, with OK or FAIL
(off by more than --tol of the prediction); exit 1 on any FAIL.
"""

import argparse
import re
import sys

MEASURED = re.compile(r"peak bytes: .*activ (\d+)")
PREDICTED = re.compile(r"activation peak .*: (\d+)\s+\[A9\]")


def find(path, pattern):
    with open(path, encoding="utf-8") as f:
        for line in f:
            m = pattern.search(line)
            if m:
                return int(m.group(1))
    sys.exit(f"{path}: no line matching {pattern.pattern}")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--tol", type=float, default=0.15)
    p.add_argument("runs", nargs="+")
    a = p.parse_args()
    rows = []
    for spec in a.runs:
        mode, files = spec.split("=", 1)
        run, report = files.split(",")
        rows.append((mode, find(run, MEASURED), find(report, PREDICTED)))
    ok = True

    def check(what, got, want):
        nonlocal ok
        err = abs(got - want) / want if want else float(got != want)
        good = err <= a.tol
        ok = ok and good
        return (f"{what} measured {got} predicted {want} "
                f"(off {err:.1%}): {'OK' if good else 'FAIL'}")

    base_mode, base_got, base_want = rows[0]
    for mode, got, want in rows:
        line = f"{mode}: " + check("activ peak", got, want)
        if mode != base_mode:
            line += "; " + check("saved", base_got - got, base_want - want)
        print(line)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
