#!/usr/bin/env python3
"""Compare two training runs: loss curves (JSON) or parameters (safetensors).

    compare.py A.json B.json [--rtol 1e-5] [--atol 0]
        A and B hold {"losses": [...], "grad_norms": [...]}; every list
        present in either file must be present in both, with equal lengths.
    compare.py --params A.safetensors B.safetensors [--rtol 1e-5] [--atol 1e-7]
        same tensor names and shapes; any float/int dtypes (compared in
        float64).  --include REGEX (repeatable) compares only the tensors
        whose name matches.  --exclude REGEX (repeatable) skips tensors whose name
        matches (re.search), e.g. --exclude 'attn\.k\.bias$': that bias has
        an exactly-zero gradient, so after AdamW its value is rounding noise
        amplified by the 1/sqrt(v) normalization and differs between any two
        float32 implementations.

    compare.py --params A B --norm l2 [--rtol 1e-5] [--atol 0]
        per tensor instead of per element: ||a - b||_2 <= atol + rtol *
        ||b||_2. Elementwise comparison of two float32 trainings fails on
        elements whose gradient is near zero, where AdamW's m / sqrt(v)
        turns rounding differences into full-size updates; the tensor norm
        is what "the same parameters" means there.

An element passes when |a - b| <= atol + rtol * |b| (B is the reference side,
as numpy.isclose).  NaN or Inf anywhere fails.  The worst mismatch (largest
|a - b| / (atol + rtol * |b|)) is printed with its location.

Exit codes: 0 all within tolerance, 1 mismatch, 2 usage or file error.
"""

import argparse
import json
import math
import os
import re
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_io  # noqa: E402

JSON_KEYS = ("losses", "grad_norms")


class UsageError(Exception):
    pass


def load_json(path):
    try:
        with open(path) as f:
            obj = json.load(f)
    except OSError as e:
        raise UsageError(f"{path}: cannot read: {e.strerror}")
    except json.JSONDecodeError as e:
        raise UsageError(f"{path}: invalid JSON: {e}")
    if not isinstance(obj, dict):
        raise UsageError(f"{path}: expected a JSON object with {' / '.join(JSON_KEYS)}")
    out = {}
    for k in JSON_KEYS:
        if k in obj:
            v = obj[k]
            if not isinstance(v, list) or not all(
                    isinstance(x, (int, float)) and not isinstance(x, bool) or x is None
                    for x in v):
                raise UsageError(f"{path}: '{k}' must be a list of numbers")
            out[k] = np.array([math.nan if x is None else x for x in v], dtype=np.float64)
    if not out:
        raise UsageError(f"{path}: has none of the keys {', '.join(JSON_KEYS)}")
    return out


def worst(a, b, rtol, atol):
    """Return (ok, index, a, b, abs_err, rel_err, ratio) for the worst element."""
    a = np.asarray(a, dtype=np.float64).reshape(-1)
    b = np.asarray(b, dtype=np.float64).reshape(-1)
    if a.size == 0:
        return True, None, None, None, 0.0, 0.0, 0.0
    finite = np.isfinite(a) & np.isfinite(b)
    diff = np.where(finite, np.abs(a - b), np.inf)
    tol = atol + rtol * np.abs(np.where(finite, b, 0.0))
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(diff == 0, 0.0, diff / tol)
    i = int(np.argmax(ratio))
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = float(diff[i] / abs(b[i])) if b[i] != 0 else (0.0 if diff[i] == 0 else math.inf)
    ok = bool(np.all(finite) and np.all(diff <= tol))
    return ok, i, float(a[i]), float(b[i]), float(diff[i]), rel, float(ratio[i])


def fmt_index(i, shape):
    if i is None:
        return "-"
    return (str([int(j) for j in np.unravel_index(i, shape)]) if len(shape) > 1
            else f"[{i}]")


def compare_json(pa, pb, rtol, atol):
    A, B = load_json(pa), load_json(pb)
    keys = sorted(set(A) | set(B))
    problems = []
    rows = []
    for k in keys:
        if k not in A or k not in B:
            problems.append(f"'{k}' present in only {pa if k in A else pb}")
            continue
        if A[k].shape != B[k].shape:
            problems.append(f"'{k}' has {A[k].size} entries in {pa} but "
                            f"{B[k].size} in {pb}")
            continue
        rows.append((k, A[k].shape) + worst(A[k], B[k], rtol, atol))
    return report(rows, problems, rtol, atol, "step")


def worst_l2(a, b, rtol, atol):
    """Per-tensor L2 comparison, in the same row format as worst()."""
    a = np.asarray(a, dtype=np.float64).ravel()
    b = np.asarray(b, dtype=np.float64).ravel()
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        return (False, 0, float("nan"), float("nan"), float("nan"), float("nan"), math.inf)
    d = float(np.linalg.norm(a - b))
    nb = float(np.linalg.norm(b))
    bound = atol + rtol * nb
    ratio = d / bound if bound > 0 else (0.0 if d == 0 else math.inf)
    rel = d / nb if nb > 0 else (0.0 if d == 0 else math.inf)
    return (d <= bound, 0, float(np.linalg.norm(a)), nb, d, rel, ratio)


def compare_params(pa, pb, rtol, atol, exclude=(), norm=None, include=()):
    try:
        A = safetensors_io.load(pa)
        B = safetensors_io.load(pb)
    except safetensors_io.SafetensorsError as e:
        raise UsageError(str(e))
    skipped = sorted(n for n in set(A) | set(B)
                     if any(r.search(n) for r in exclude)
                     or (include and not any(r.search(n) for r in include)))
    if skipped:
        print(f"excluded {len(skipped)} tensor(s): {', '.join(skipped)}")
    A = {n: v for n, v in A.items() if n not in skipped}
    B = {n: v for n, v in B.items() if n not in skipped}
    problems = []
    for n in sorted(set(A) - set(B)):
        problems.append(f"tensor {n} only in {pa}")
    for n in sorted(set(B) - set(A)):
        problems.append(f"tensor {n} only in {pb}")
    rows = []
    for n in sorted(set(A) & set(B)):
        if A[n].shape != B[n].shape:
            problems.append(f"tensor {n}: shape {list(A[n].shape)} vs {list(B[n].shape)}")
            continue
        if norm == "l2":
            rows.append((n, (1,)) + worst_l2(A[n], B[n], rtol, atol))
        else:
            rows.append((n, A[n].shape) + worst(A[n], B[n], rtol, atol))
    return report(rows, problems, rtol, atol, "L2 norms" if norm == "l2" else "index")


def report(rows, problems, rtol, atol, what):
    for p in problems:
        print(f"MISMATCH: {p}")
    nbad = 0
    for name, shape, ok, i, a, b, d, rel, ratio in rows:
        if not ok:
            nbad += 1
            print(f"MISMATCH: {name} {what} {fmt_index(i, shape)}: "
                  f"{a!r} vs {b!r} (abs {d:.3e}, rel {rel:.3e})")
    if rows:
        name, shape, ok, i, a, b, d, rel, ratio = max(rows, key=lambda r: r[8])
        if i is None:
            print("worst: all compared arrays are empty")
        else:
            print(f"worst: {name} {what} {fmt_index(i, shape)}: {a!r} vs {b!r} "
                  f"abs err {d:.3e} rel err {rel:.3e} "
                  f"({ratio:.3g}x tolerance atol={atol:g} rtol={rtol:g})")
    failed = bool(problems) or nbad > 0
    n = len(rows)
    print(f"{'FAIL' if failed else 'OK'}: {n - nbad}/{n} arrays within tolerance"
          + (f", {len(problems)} structural mismatch(es)" if problems else ""))
    return 1 if failed else 0


def main(argv=None):
    p = argparse.ArgumentParser(prog="compare", description=__doc__.split("\n")[0])
    p.add_argument("json_files", nargs="*", metavar="FILE.json",
                   help="two losses JSON files")
    p.add_argument("--params", nargs=2, metavar=("A.safetensors", "B.safetensors"),
                   help="compare two parameter files instead")
    p.add_argument("--include", action="append", default=[], metavar="REGEX",
                   help="with --params: compare only tensors whose name matches")
    p.add_argument("--exclude", action="append", default=[], metavar="REGEX",
                   help="with --params: skip tensors whose name matches")
    p.add_argument("--norm", choices=["l2"], default=None,
                   help="with --params: compare each tensor's L2 norm of the difference")
    p.add_argument("--rtol", type=float, default=1e-5)
    p.add_argument("--atol", type=float, default=None,
                   help="absolute tolerance (default 0 for JSON, 1e-7 for --params)")
    args = p.parse_args(argv)
    try:
        if args.rtol < 0 or (args.atol is not None and args.atol < 0):
            raise UsageError("--rtol and --atol must be >= 0")
        try:
            exclude = [re.compile(r) for r in args.exclude]
            include = [re.compile(r) for r in args.include]
        except re.error as e:
            raise UsageError(f"bad --exclude regex: {e}")
        if (exclude or include or args.norm) and not args.params:
            raise UsageError("--include, --exclude and --norm apply only to --params")
        if args.params:
            if args.json_files:
                raise UsageError("give either two JSON files or --params A B, not both")
            default_atol = 0.0 if args.norm else 1e-7
            atol = default_atol if args.atol is None else args.atol
            return compare_params(args.params[0], args.params[1], args.rtol, atol,
                                  exclude, args.norm, include)
        if len(args.json_files) != 2:
            raise UsageError("expected two JSON files (or --params A B)")
        atol = 0.0 if args.atol is None else args.atol
        return compare_json(args.json_files[0], args.json_files[1], args.rtol, atol)
    except UsageError as e:
        print(f"compare: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
