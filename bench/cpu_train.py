#!/usr/bin/env python3
"""CPU benchmark: training throughput of Triax binaries and triaxc compile time.

Every figure is a median over --repeats runs and is reported next to a
baseline measured in the same invocation:

  * training throughput (tokens/s) of `tiny` and a larger config, against the
    numpy reference implementation of the same model (test/reference), run on
    the same shapes, same machine, same thread count;
  * triaxc's front half (parse, autodiff, lowering to the LLVM dialect) for
    gpt2 and gpt3-175b, against a plain parse + verify + print round trip of
    the same IR with triax-opt.

Usage: bench/cpu_train.py [--build build] [--repeats 3] [--steps 20] [--json out.json]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CONFIGS = {
    # name: (triax-model args, reference args)
    "tiny": (["tiny"], dict(layers=2, hidden=64, heads=4, vocab=256, seq=64, batch=8)),
    "small": (["tiny", "--layers", "4", "--hidden", "256", "--heads", "4"],
              dict(layers=4, hidden=256, heads=4, vocab=256, seq=64, batch=8)),
}


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw)


def timed(cmd):
    start = time.perf_counter()
    run(cmd)
    return time.perf_counter() - start


def train_tokens_per_s(binary, steps, threads, workdir):
    log = os.path.join(workdir, "log.jsonl")
    if os.path.exists(log):
        os.remove(log)
    run([binary, "--steps", str(steps), "--threads", str(threads), "--log-json", log])
    rows = [json.loads(line) for line in open(log) if '"loss"' in line]
    # Skip the first steps (page faults, BLAS warm-up).
    rates = [r["tok_per_s"] for r in rows[len(rows) // 4:]]
    return statistics.median(rates)


def reference_tokens_per_s(cfg, steps, workdir, corpus):
    init = os.path.join(workdir, "ref-init.safetensors")
    ref = os.path.join(ROOT, "test", "reference", "gpt_numpy.py")
    common = ["--layers", str(cfg["layers"]), "--hidden", str(cfg["hidden"]),
              "--heads", str(cfg["heads"]), "--vocab", str(cfg["vocab"]),
              "--seq", str(cfg["seq"])]
    run([sys.executable, ref, "--write-init", init, "--init-seed", "0"] + common)
    start = time.perf_counter()
    run([sys.executable, ref, "--init", init, "--data", corpus, "--batch", str(cfg["batch"]),
         "--steps", str(steps), "--dtype", "float32", "--lr", "1e-3", "--log-every", "0",
         "--losses-out", os.path.join(workdir, "ref.json")] + common)
    return cfg["batch"] * cfg["seq"] * steps / (time.perf_counter() - start)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--skip-gpt3", action="store_true", help="skip the gpt3-175b compile")
    ap.add_argument("--json", help="write all figures here")
    args = ap.parse_args()
    binary = lambda name: os.path.join(args.build, "bin", name)
    results = {"threads": args.threads, "repeats": args.repeats, "train": {}, "compile": {}}

    with tempfile.TemporaryDirectory() as work:
        corpus = os.path.join(work, "corpus.bin")
        run([sys.executable, os.path.join(ROOT, "tools", "triax-gen-corpus.py"), "--seed", "1",
             "--bytes", "200000", "--out", os.path.join(work, "corpus.txt"), "--emit-bin", corpus])
        for name, (model_args, cfg) in CONFIGS.items():
            mlir = os.path.join(work, name + ".mlir")
            exe = os.path.join(work, name)
            run([binary("triax-model")] + model_args + ["-o", mlir])
            run([binary("triaxc"), mlir, "-o", exe])
            triax = statistics.median(train_tokens_per_s(exe, args.steps, args.threads, work)
                                      for _ in range(args.repeats))
            numpy_rate = statistics.median(reference_tokens_per_s(cfg, max(3, args.steps // 4), work, corpus)
                                           for _ in range(args.repeats))
            results["train"][name] = {"triax_tok_per_s": triax, "numpy_tok_per_s": numpy_rate,
                                      "ratio": triax / numpy_rate}
            print(f"train {name:6s}: triax {triax:10.0f} tok/s | numpy reference {numpy_rate:10.0f} tok/s"
                  f" | ratio {triax / numpy_rate:6.1f}x", flush=True)

        models = ["gpt2"] + ([] if args.skip_gpt3 else ["gpt3-175b"])
        for name in models:
            mlir = os.path.join(work, name + ".mlir")
            run([binary("triax-model"), name, "-o", mlir])
            front = statistics.median(
                timed([binary("triaxc"), mlir, "--emit=mlir-after=reconcile-unrealized-casts", "-o", os.devnull])
                for _ in range(args.repeats))
            parse = statistics.median(timed([binary("triax-opt"), mlir, "-o", os.devnull])
                                      for _ in range(args.repeats))
            results["compile"][name] = {"front_half_s": front, "parse_verify_print_s": parse,
                                        "ratio": front / parse}
            print(f"compile {name:10s}: triaxc front half {front:7.2f} s | triax-opt parse+print {parse:6.3f} s"
                  f" | ratio {front / parse:6.1f}x", flush=True)

    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)


if __name__ == "__main__":
    main()
