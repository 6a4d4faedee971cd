#!/usr/bin/env python3
"""The checks and figures of bench/gpu/run.sh, as one JSON.

  report.py tiny REF.jsonl GPU.jsonl [--rtol R]   # exit 1 when a loss differs
  report.py gpt2 GPU.jsonl --params N --layers L --seq T --hidden D --batch B
                [--steps S]
  report.py runtime GEMM.log NCCL.log ABORT.log --abort-status S
  report.py sanitizer TOOL LOG --status S | --unavailable
  report.py attention IMPL LOG --status S  # the attention kernels vs numpy
  report.py kernels NCU.csv [--top N]   # where one step's device time goes
  report.py combine OUT.json [--steps STEPS.jsonl --status S --seconds T
                             --deadline D] PART.json...   # one file

tiny: the first losses of the CUDA binary against the CPU binary's (same
model, data, seed, precision): |gpu - cpu| <= rtol * |cpu|. In fp32 (rtol
1e-4) the kernels differ from the CPU's by libdevice ulps and summation
order only. In bf16 both targets round to bf16 at the same places, but a
value near a rounding boundary may go either way depending on the GEMM's
and the reductions' summation order: one bf16 ulp (2^-8 relative) at a
time, amplified over the steps (run.sh states the bound it passes). With
--log, the lines of the binary's -v output about its communicator are
kept ("comm" lines: the transport, NCCL's version and the world size).

gpt2: median ms/step over the steps after the first --skip (start-up:
module load, first-touch of managed memory), tokens/s = batch * seq /
(ms/1000), MFU = (6 N + 12 L T D) * tokens / s / (peak bf16 FLOP/s).
A run killed at run.sh's deadline leaves fewer steps than --steps, and
maybe half a last line: the figures are the whole lines' ("complete":
false, "partial_lines" counts what was dropped).

sanitizer: compute-sanitizer's "ERROR SUMMARY: N errors" line (racecheck's
"RACECHECK SUMMARY: H hazards displayed (N errors, W warnings)"); ok when N
is 0 and the program under it exited 0. No summary (killed, or it did
not start) is not ok; --unavailable (no compute-sanitizer on the
machine) records "unavailable" and is not a failure.

tiny also checks gpt2 at batch 1 (--model gpt2-b1 --steps 5).

attention: the last "attention-check: N of M outputs over tolerance" line
of attention_reference.py --run-only (the attention kernels and their
gradients against numpy in float64); ok when N is 0 and it exited 0.

kernels: ncu's gpu__time_duration.sum of every kernel of one training
step (`ncu --metrics gpu__time_duration.sum --csv --log-file NCU.csv`):
the launches and their total time, the time by owner (the generated
kernels of each entry, named <entry>_kernel..., and the libraries'
kernels: cuBLASLt, NCCL) and the --top (20) launches with their grid,
block and time. No CSV rows (ncu killed early, or no kernels) is an error.

combine: each PART under its file name (a missing or unreadable one as
an error; a torch_gpt2.py file as it is, "complete": false when the run
was cut short), run.sh's step records (STEPS.jsonl: name, status ok /
failed / killed / skipped, why, seconds) under "steps", and "checks":
passed (run.sh's status 0), the seconds taken against the deadline, and
the steps killed or skipped.
"""

import argparse
import csv
import json
import re
import sys


def read_jsonl(path, dropped=None):
    """The file's JSON lines; a line that does not parse (a program killed
    while writing it) is left out and counted in dropped[0]."""
    rows = []
    try:
        f = open(path)
    except OSError:
        return rows  # the run failed before its first step
    with f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            try:
                rows.append(json.loads(line))
            except ValueError:
                if dropped is not None:
                    dropped[0] += 1
    return rows


def tiny(a):
    ref, gpu = read_jsonl(a.ref), read_jsonl(a.gpu)
    n = min(len(ref), len(gpu), a.steps)
    rows, ok = [], n == a.steps
    for r, g in zip(ref[:n], gpu[:n]):
        d = abs(g["loss"] - r["loss"])
        good = d <= a.rtol * abs(r["loss"])
        ok &= good
        rows.append({"step": r["step"], "cpu": r["loss"], "cuda": g["loss"],
                     "abs_diff": d, "ok": good})
    out = {"check": "%s losses, cuda vs cpu" % a.model,
           "precision": a.precision,
           "steps": n, "expected_steps": a.steps, "rtol": a.rtol,
           "tolerance_note": "%s on both targets; bound |d| <= rtol*|cpu|"
                             % a.precision,
           "ok": ok, "losses": rows}
    if a.log:
        try:
            with open(a.log, errors="replace") as f:
                out["comm"] = [l.strip() for l in f
                               if "comm" in l.lower() or "nccl" in l.lower()][:20]
        except OSError as e:
            out["comm"] = ["%s" % e]
    print(json.dumps(out))
    return 0 if ok else 1


def gpt2(a):
    dropped = [0]
    rows = read_jsonl(a.gpu, dropped)
    timed = [r["ms"] for r in rows[a.skip:]] or [r["ms"] for r in rows]
    timed.sort()
    ms = timed[len(timed) // 2] if timed else float("nan")
    tokens = a.batch * a.seq
    flops = tokens * (6 * a.params + 12 * a.layers * a.seq * a.hidden)
    out = {"model": "gpt2", "precision": a.precision, "params": a.params, "batch": a.batch,
           "seq": a.seq, "steps": len(rows), "expected_steps": a.steps,
           "complete": a.steps is None or len(rows) >= a.steps,
           "partial_lines": dropped[0], "skipped_steps": a.skip,
           "ms_per_step": ms, "tokens_per_s": tokens / (ms / 1e3),
           "flops_per_step": flops,
           "mfu": flops / (ms / 1e3) / (a.peak_tflops * 1e12),
           "peak_tflops_bf16": a.peak_tflops,
           "losses": [r["loss"] for r in rows],
           "peak_bytes": max((r.get("peak_bytes", 0) for r in rows), default=0)}
    print(json.dumps(out))
    return 0


def runtime(a):
    """The CUDA runtime's own tests: each passes when its log ends with the
    test harness's "<suite>: all N checks passed" (runtime/test/check.h);
    the abort passes with exit status 1 and the injected message. With
    --attention, cuDNN's fused attention against float64 too."""
    def text(path):
        try:
            with open(path, errors="replace") as f:
                return f.read()
        except OSError as e:
            return "(%s)" % e

    def suite(path, name):
        t = text(path)
        m = re.search(r"^%s: all (\d+) checks passed$" % name, t, re.M)
        return {"ok": bool(m), "checks": int(m.group(1)) if m else 0,
                "tail": t.strip().splitlines()[-5:]}

    out = {"gemm_cublaslt": suite(a.gemm, "gemm"),
           "nccl_one_rank": suite(a.nccl, "nccl")}
    if a.attention:
        out["attention_cudnn"] = suite(a.attention, "attention-cudnn")
        # Which cuDNN, and what it took or declined (the runtime's lines).
        out["attention_cudnn"]["cudnn"] = [
            l for l in text(a.attention).splitlines()
            if l.startswith("triax runtime: attention")][:8]
    out["nccl_one_rank"]["comm"] = [l for l in text(a.nccl).splitlines()
                                    if l.startswith(("comm:", "nccl:",
                                                     "device:"))][:5]
    t = text(a.abort)
    out["nccl_abort"] = {
        "ok": a.abort_status == 1 and "injected failure" in t,
        "exit_status": a.abort_status, "tail": t.strip().splitlines()[-5:]}
    out["ok"] = all(v["ok"] for v in out.values() if isinstance(v, dict))
    print(json.dumps(out))
    return 0 if out["ok"] else 1


def sanitizer(a):
    """One compute-sanitizer tool's verdict on the tiny binary."""
    if a.unavailable:
        print(json.dumps({"tool": a.tool, "result": "unavailable",
                          "ok": None}))
        return 0
    try:
        with open(a.log, errors="replace") as f:
            text = f.read()
    except OSError as e:
        text = "(%s)" % e
    # memcheck (and the other tools) end with "ERROR SUMMARY: N errors";
    # racecheck with "RACECHECK SUMMARY: H hazards displayed (N errors, W
    # warnings)".
    m = re.findall(r"ERROR SUMMARY: (\d+) errors?", text) or \
        re.findall(r"RACECHECK SUMMARY: \d+ hazards? displayed \((\d+) errors?",
                   text)
    errors = int(m[-1]) if m else None
    ok = errors == 0 and a.status == 0
    out = {"tool": a.tool, "result": ("%d errors" % errors if m else
                                      "no ERROR SUMMARY line"),
           "errors": errors, "exit_status": a.status, "ok": ok,
           "summary": [l.strip() for l in text.splitlines()
                       if "SUMMARY" in l][-3:],
           "tail": text.strip().splitlines()[-8:]}
    print(json.dumps(out))
    return 0 if ok else 1


def attention(a):
    """attention_reference.py --run-only's verdict on the CUDA kernels."""
    try:
        with open(a.log, errors="replace") as f:
            text = f.read()
    except OSError as e:
        text = "(%s)" % e
    m = re.findall(r"attention-check: (\d+) of (\d+) outputs over tolerance",
                   text)
    over, outputs = (int(m[-1][0]), int(m[-1][1])) if m else (None, None)
    ok = over == 0 and outputs > 0 and a.status == 0
    print(json.dumps({"check": "attention (%s) against numpy, float64"
                      % a.impl, "over_tolerance": over, "outputs": outputs,
                      "exit_status": a.status, "ok": ok,
                      "tail": text.strip().splitlines()[-4:]}))
    return 0 if ok else 1


def kernels(a):
    """ncu's per-launch durations of one step, summed by owner."""
    try:
        with open(a.csv, errors="replace") as f:
            lines = [l for l in f if l.startswith('"')]
    except OSError as e:
        print(json.dumps({"error": str(e)}))
        return 1
    scale = {"ns": 1e-3, "nsecond": 1e-3, "us": 1.0, "usecond": 1.0,
             "ms": 1e3, "msecond": 1e3}
    launches = []
    for r in csv.DictReader(lines):
        if r.get("Metric Name") != "gpu__time_duration.sum":
            continue
        us = float(r["Metric Value"].replace(",", "")) * \
            scale.get(r["Metric Unit"], 1.0)
        launches.append({"kernel": r["Kernel Name"], "grid": r["Grid Size"],
                         "block": r["Block Size"], "us": round(us, 1)})
    if not launches:
        print(json.dumps({"error": "no gpu__time_duration.sum rows in "
                          + a.csv}))
        return 1
    owners = {}
    for l in launches:
        m = re.match(r"(triax_\w+?)_kernel", l["kernel"])
        owner = m.group(1) if m else "libraries (cuBLASLt, NCCL)"
        owners[owner] = owners.get(owner, 0.0) + l["us"]
    total = sum(l["us"] for l in launches)
    print(json.dumps({
        "launches": len(launches), "total_ms": round(total / 1e3, 2),
        "by_owner_ms": {k: round(v / 1e3, 2) for k, v in
                        sorted(owners.items(), key=lambda kv: -kv[1])},
        "top": sorted(launches, key=lambda l: -l["us"])[:a.top]}, indent=1))
    return 0


def combine(a):
    out = {}
    steps = read_jsonl(a.steps) if a.steps else []
    if a.status is not None:
        out["checks"] = {
            "passed": a.status == 0, "seconds": a.seconds,
            "deadline_s": a.deadline,
            "killed": [s["name"] for s in steps if s["status"] == "killed"],
            "skipped": [s["name"] for s in steps if s["status"] == "skipped"]}
    for path in a.parts:
        name = path.rsplit("/", 1)[-1].rsplit(".", 1)[0]
        try:
            with open(path) as f:
                text = f.read().strip()
            try:
                out[name] = json.loads(text) if text else None
            except ValueError:  # a log whose last line is the JSON
                out[name] = json.loads(text.splitlines()[-1])
        except FileNotFoundError:
            out[name] = {"missing": "no %s: the run ended before this step's "
                                    "result (see steps)" % path}
        except (OSError, ValueError) as e:
            out[name] = {"error": "%s: %s" % (path, e)}
    def speedup(key, run, baseline, baseline_field):
        """out[key]: run's ms/step against baseline's (both of this call)."""
        r, b = out.get(run), out.get(baseline)
        if (isinstance(r, dict) and isinstance(b, dict)
                and r.get("ms_per_step") and b.get("ms_per_step")):
            out[key] = {"ms_per_step": r["ms_per_step"],
                        baseline_field: b["ms_per_step"],
                        "speedup": b["ms_per_step"] / r["ms_per_step"]}
    # The GELU epilogues against the same binary without them, this run.
    speedup("gelu_epilogue", "gpt2-bf16", "gpt2-bf16-nogelu",
            "ms_per_step_without")
    # One warp per row kernel (--cuda-rows warp) against one block per row.
    speedup("rows_warp", "gpt2-bf16-warp", "gpt2-bf16", "ms_per_step_block")
    # The vocabulary padded to 50,304 (the cuda default) against unpadded.
    speedup("pad_vocab", "gpt2-bf16", "gpt2-bf16-nopad",
            "ms_per_step_unpadded")
    # cuDNN's fused attention (--attention=cudnn) against flash-mma, the
    # generated tensor-core kernels (issue 14 item 1's choice).
    speedup("cudnn_attention", "gpt2-bf16-cudnn", "gpt2-bf16",
            "ms_per_step_flash_mma")
    # The query, key and value projections as one GEMM (fuse-projections,
    # the cuda default) against three.
    speedup("fuse_projections", "gpt2-bf16", "gpt2-bf16-unfused",
            "ms_per_step_unfused")
    if a.steps:
        out["steps"] = steps
    with open(a.out, "w") as f:
        json.dump(out, f, indent=1)
    print("report: %s" % a.out)
    return 0


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("tiny")
    t.add_argument("ref")
    t.add_argument("gpu")
    t.add_argument("--steps", type=int, default=10)
    t.add_argument("--rtol", type=float, default=1e-4)
    t.add_argument("--precision", default="fp32", choices=["fp32", "bf16"])
    t.add_argument("--log", help="the binary's -v output")
    t.add_argument("--model", default="tiny",
                   help="the model's name, for the check's label")
    g = sub.add_parser("gpt2")
    g.add_argument("gpu")
    g.add_argument("--params", type=int, required=True)
    g.add_argument("--layers", type=int, default=12)
    g.add_argument("--hidden", type=int, default=768)
    g.add_argument("--seq", type=int, default=1024)
    g.add_argument("--batch", type=int, default=8)
    g.add_argument("--skip", type=int, default=3)
    g.add_argument("--peak-tflops", type=float, default=989.4)
    g.add_argument("--precision", default="fp32", choices=["fp32", "bf16"])
    g.add_argument("--steps", type=int, help="the steps asked for")
    r = sub.add_parser("runtime")
    r.add_argument("gemm")
    r.add_argument("nccl")
    r.add_argument("abort")
    r.add_argument("--abort-status", type=int, required=True)
    r.add_argument("--attention", metavar="LOG",
                   help="the cuDNN attention test's log "
                        "(triax-rt-attention-cudnn-test)")
    z = sub.add_parser("sanitizer")
    z.add_argument("tool")
    z.add_argument("log", nargs="?")
    z.add_argument("--status", type=int, default=0,
                   help="compute-sanitizer's exit status")
    z.add_argument("--unavailable", action="store_true")
    at = sub.add_parser("attention")
    at.add_argument("impl")
    at.add_argument("log")
    at.add_argument("--status", type=int, default=0,
                    help="attention_reference.py's exit status")
    k = sub.add_parser("kernels")
    k.add_argument("csv")
    k.add_argument("--top", type=int, default=20)
    c = sub.add_parser("combine")
    c.add_argument("out")
    c.add_argument("parts", nargs="+")
    c.add_argument("--steps", help="run.sh's step records (JSON lines)")
    c.add_argument("--status", type=int, help="run.sh's check status")
    c.add_argument("--seconds", type=int)
    c.add_argument("--deadline", type=int)
    a = p.parse_args()
    return {"tiny": tiny, "gpt2": gpt2, "runtime": runtime,
            "sanitizer": sanitizer, "attention": attention,
            "kernels": kernels,
            "combine": combine}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())
