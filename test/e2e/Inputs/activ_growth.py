#!/usr/bin/env python3
"""activ_growth.py A.out B.out --min X [--max Y]: the ratio of the activation
peaks ("peak bytes: ... activ N", a training binary's -v output) of two runs,
B over A; exits 1 unless it lies in [X, Y]."""
import argparse
import math
import re
import sys


def activ(path):
    with open(path) as f:
        for line in f:
            m = re.search(r"peak bytes:.*\bactiv (\d+)", line)
            if m:
                return int(m.group(1))
    sys.exit("activ_growth.py: %s has no 'peak bytes: ... activ N' line" % path)


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("a")
    p.add_argument("b")
    p.add_argument("--min", type=float, required=True)
    p.add_argument("--max", type=float, default=math.inf)
    args = p.parse_args()
    a, b = activ(args.a), activ(args.b)
    ratio = b / a
    ok = args.min <= ratio <= args.max
    print("activ peak %d -> %d bytes: x%.2f %s [%g, %g]" %
          (a, b, ratio, "within" if ok else "OUTSIDE", args.min, args.max))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
