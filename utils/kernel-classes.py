#!/usr/bin/env python3
"""Groups a kernel report by kernel class: the per-step calls, bytes moved
and predicted time of every kernel and library call that one layer op (or
the optimizer) runs, forward and backward together.

    triaxc model.mlir --target cuda --kernel-report=json [...] > report.json
    utils/kernel-classes.py report.json model.mlir

A report item names its source location in model.mlir; autodiff gives a
gradient's kernels the location of the op they differentiate, so the class
of an item is the Triax op written at that location (`triax.attention`:
the attention kernels of the forward and the backward), GEMMs apart, and
the optimizer step's kernels as AdamW (located at the parameters) or the
gradient norm and clipping (located at the model); the step's other kernels
located at a parameter accumulate its gradient. Prints a markdown table,
largest predicted time first, and the totals.
"""
import argparse
import collections
import json
import re
import sys


def op_at(lines, location):
    m = re.match(r".*:(\d+):(\d+)$", location or "")
    if not m or int(m.group(1)) > len(lines):
        return "(no location)"
    line, col = lines[int(m.group(1)) - 1], int(m.group(2))
    found = re.search(r"\b(triax|dist)\.[a-z_]+", line[col - 1:]) or \
        re.search(r"\b(triax|dist)\.[a-z_]+", line)
    return found.group(0) if found else "(no op)"


def class_of(item, lines):
    op = op_at(lines, item.get("location"))
    if item["kind"] == "gemm":
        return "GEMMs of %s" % op
    if item["kind"] != "kernel":
        return item["kind"]
    if (item.get("function") or "").startswith("triax_optimizer_step"):
        return "optimizer: AdamW" if op == "triax.param" else "optimizer: gradient norm, clipping"
    if op == "triax.get_param":
        return "bf16 copies of the parameters"
    if op == "triax.param":
        return "gradients accumulated into their buffers"
    return "kernels of %s" % op


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("report", help="triaxc --kernel-report=json output")
    p.add_argument("model", help="the model's MLIR file (the items' locations)")
    args = p.parse_args()
    try:
        report = json.load(open(args.report))
        lines = open(args.model).read().split("\n")
    except (OSError, ValueError) as e:
        print("kernel-classes.py: %s" % e, file=sys.stderr)
        return 2
    groups = collections.defaultdict(lambda: {"calls": 0, "bytes": 0, "seconds": 0.0})
    for item in report["items"]:
        if item["kind"] not in ("kernel", "gemm"):
            continue
        g = groups[class_of(item, lines)]
        g["calls"] += item["calls_per_step"]
        g["bytes"] += (item["bytes_read"] + item["bytes_written"]) * item["calls_per_step"]
        g["seconds"] += item["seconds_per_step"]
    total = sum(g["seconds"] for g in groups.values()) or 1.0
    print("| class | calls per step | bytes per step | predicted time | share |")
    print("|---|---|---|---|---|")
    for name, g in sorted(groups.items(), key=lambda kv: -kv[1]["seconds"]):
        print("| %s | %d | %.2f GB | %.3f ms | %.1f%% |" % (
            name, round(g["calls"]), g["bytes"] / 1e9, g["seconds"] * 1e3, 100 * g["seconds"] / total))
    t = report["totals"]
    print("\nkernels and GEMMs %.3f ms; step %.3f ms; launches %d; MFU %.3f" % (
        total * 1e3, t["step_seconds"] * 1e3, t["kernel_launches"], t["mfu"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
