"""Compares triax-report's prediction with a training run's measurement.

usage: compare.py NAME RUN_OUT REPORT_OUT

RUN_OUT is rank 0's stdout of a run with -v and --steps 1: its lines
"step     1 | KIND over AXES: B bytes sent by this rank in C calls" and
"peak bytes: params N grads N optim N ...". REPORT_OUT is triax-report's
text report of the same module: "KIND over AXES: B bytes sent by this rank
in C calls" and "predicted peak bytes: params N grads N optim N". The
traffic must be equal line for line; params + grads + optim within 2%;
the measured peak of activations ("activ N" of the same line) within 15%
of the report's [A9] ("... from the IR's liveness: N").
"""
import re
import sys

from ir_liveness import LIVENESS

TRAFFIC = re.compile(r"(\w+) over ([\w,]+): (\d+) bytes (?:sent|received) by this rank "
                     r"in (\d+) calls")
PEAK = re.compile(r"peak bytes: params (\d+) grads (\d+) optim (\d+)")
ACTIV = re.compile(r"peak bytes: .* activ (\d+)")


def first(path, pattern):
    for line in open(path):
        m = pattern.search(line)
        if m:
            return int(m[1])
    return None


def read(path, prefix):
    traffic, peak = {}, None
    for line in open(path):
        m = PEAK.search(line)
        if m and peak is None:
            peak = tuple(int(g) for g in m.groups())
        body = line.strip()
        if prefix == "step":
            if not body.startswith("step"):
                continue
            body = body.split("|", 1)[1].strip()
        m = TRAFFIC.fullmatch(body)
        if m:
            traffic[(m[1], m[2])] = (int(m[3]), int(m[4]))
    return traffic, peak


def main():
    name, run, report = sys.argv[1:4]
    measured, mpeak = read(run, "step")
    predicted, ppeak = read(report, "report")
    if mpeak is None or ppeak is None:
        sys.exit(f"{name}: no peak bytes line (run with -v?)")
    failed = 0
    for key in sorted(set(measured) | set(predicted)):
        m, p = measured.get(key), predicted.get(key)
        ok = m == p
        failed += not ok
        print(f"{name}: {key[0]} over {key[1]}: measured {m} predicted {p} "
              f"{'equal' if ok else 'MISMATCH'}")
    ms, ps = sum(mpeak), sum(ppeak)
    rel = abs(ps - ms) / ms
    ok = rel <= 0.02
    failed += not ok
    print(f"{name}: params+grads+optim measured {ms} predicted {ps} "
          f"({rel * 100:.2f}% off) {'ok' if ok else 'MISMATCH'}")
    ma, pa = first(run, ACTIV), first(report, LIVENESS)
    if ma is None or pa is None:
        sys.exit(f"{name}: no activation peak (measured {ma}, predicted {pa})")
    rel = abs(pa - ma) / ma
    ok = rel <= 0.15
    failed += not ok
    print(f"{name}: activations measured {ma} predicted {pa} "
          f"({rel * 100:.1f}% off) {'ok' if ok else 'MISMATCH'}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
