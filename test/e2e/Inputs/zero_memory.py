"""Checks the per-rank peaks of ZeRO against the factors ZeRO promises.

usage: zero_memory.py ONE_RANK_OUT dp STAGE:OUT [STAGE:OUT ...]

Each OUT is the stdout of a training run with -v ("peak bytes: params N
grads N optim N ..."; rank 0's). With f32 AdamW every parameter costs 4
bytes of parameter, 4 of gradient and 8 of moments (16 in all) on one rank;
over dp ranks ZeRO keeps (Rajbhandari et al., 2020, section 5.1):
  stage 1: 4 + 4 + 8/dp      stage 2: 4 + (4 + 8)/dp      stage 3: 16/dp
bytes per parameter. tiny's tensor sizes all divide by 2 and 4, so there is
no padding and the figures are exact.
"""
import re
import sys


def peaks(path):
    text = open(path).read()
    m = re.search(r"peak bytes: params (\d+) grads (\d+) optim (\d+)", text)
    if not m:
        sys.exit(f"{path}: no 'peak bytes' line (run with -v)")
    return tuple(int(g) for g in m.groups())


def main():
    p1, g1, o1 = peaks(sys.argv[1])
    dp = int(sys.argv[2])
    n = p1 // 4
    assert (p1, g1, o1) == (4 * n, 4 * n, 8 * n), (p1, g1, o1)
    expected = {1: (4 * n, 4 * n, 8 * n // dp),
                2: (4 * n, 4 * n // dp, 8 * n // dp),
                3: (4 * n // dp, 4 * n // dp, 8 * n // dp)}
    failed = 0
    for item in sys.argv[3:]:
        stage, path = item.split(":", 1)
        got = peaks(path)
        want = expected[int(stage)]
        total = sum(got)
        print(f"dp={dp} zero-{stage}: params {got[0]} grads {got[1]} "
              f"optim {got[2]} = {total} bytes, {total / (16 * n):.4f} of one "
              f"rank's {16 * n}; expected {sum(want)} "
              f"({sum(want) / (16 * n):.4f}) "
              f"{'ok' if got == want else 'MISMATCH'}")
        failed += got != want
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
