#!/usr/bin/env python3
"""Triax against PyTorch eager, torch.compile and JAX jit, training the same
GPT on the CPU (fp32): milliseconds per full training step (forward,
backward, gradient clipping, AdamW) and tokens/s, per model and thread count.

Models (Triax's own IR from triax-model, compiled with `triaxc --target cpu`;
the peers, bench/cpu/peers.py, are the same model written in PyTorch and JAX):
  small  4 layers, hidden 256, 4 heads, vocab 256, seq 64, batch 8
  gpt2   GPT-2 124M: 12 layers, hidden 768, 12 heads, vocab 50257, seq 64, batch 4
--quick shrinks both to 2 layers, hidden 64, 4 heads, seq 32, batch 4 (gpt2
keeps its vocabulary) and defaults to 1 round of 3 steps: a smoke run.

Same model, checked: the shapes and the optimizer settings (lr, betas, eps,
weight decay, gradient clipping) are read from the train_config and the
parameters of the MLIR that triax-model wrote; the Triax binary writes its
initial parameters (--save-init) and every peer loads them, and all programs
read the same batches from one llm.c token file (random tokens, seed 0), so
the losses of the first steps agree to float rounding (printed for each
program, with its parameter count; the first is ~ln(vocab)). Learning rate
constant (Triax: --lr-schedule constant).

Timing, the same for every program: the wall time of a step runs from the
moment the previous step's loss was on the host to the moment this one's
is. Triax logs exactly this interval per step (--log-every 1 --log-json;
runtime/lib/cpu/driver.cpp; the logger's own time excluded), the peers take
time.perf_counter() after each loss.item() / float(loss). Program start-up,
loading, compilation (triaxc, torch.compile, jax.jit) and --warmup steps are
outside it. A round's figure for a program is the mean over its --steps timed
steps (the wall time of those steps / steps); the reported figure is the
median over --rounds rounds. Logged per-step times were chosen over timing N
and 2N steps of whole processes and differencing: they need one run per round,
they leave out Triax's start-up (reading 0.5 GB of safetensors for gpt2) without
having to assume it is the same in both runs, and the peers' timestamps
measure the very same interval.

Rounds alternate the programs: round r runs Triax, eager, compile and JAX
(in an order rotated by r), each for --warmup + --steps steps. Triax is a
new process each round (its binary runs --steps and exits); each peer is
one long-lived process per (model, threads), started and compiled before
round 1, told to run the next steps each round.

Threads: every program is pinned to the first n CPUs of this process's
affinity mask (os.sched_setaffinity) and told n threads:
  Triax    --threads n (one pool of OpenMP threads runs the kernels' parallel
           loops and the GEMMs' pieces), OMP_NUM_THREADS=n,
           OPENBLAS_NUM_THREADS=n
  PyTorch  torch.set_num_threads(n), torch.set_num_interop_threads(n),
           OMP_NUM_THREADS=n; torch.compile's C++ kernels use
           torch.get_num_threads()
  JAX      the affinity mask: XLA sizes its CPU thread pool by the CPUs the
           process may run on (jax-ml/jax#1539), which no flag changes;
           for n = 1 also XLA_FLAGS="--xla_cpu_multi_thread_eigen=false
           intra_op_parallelism_threads=1" (Eigen's own threading off)
The peers' CPU time over wall time during the timed steps is reported, so
a reader sees how many cores each really used.

Triax runs twice each round: `Triax` with the BLAS its binary links
(Debian's OpenBLAS) and `Triax + MKL` with the same binary's GEMMs through
Intel MKL's cblas_sgemm (`--blas .venv/lib/libmkl_rt.so.N`, pip's `mkl`,
sequential: the OpenMP threads cut the GEMMs as before), the sgemm that
PyTorch's x86 wheels call; both Triax rows get their ratios to every peer.

The peers run in bench/cpu/.venv (git-ignored), which this script creates
and fills when torch or jax is missing: pip install torch from the PyTorch
CPU index, falling back to PyPI's torch (a CUDA build with its libraries,
several GB, that runs on the CPU just the same) when that index cannot be
reached, and jax[cpu], and pip's mkl for `Triax + MKL`. A program that cannot be installed, built or
compiled is reported as n/a with the reason.

Usage:
  bench/cpu/run.py --quick                                   # smoke run
  bench/cpu/run.py --models small,gpt2 --threads 1,2 --rounds 5 --steps 10 \\
      --json bench/cpu/results.json > bench/cpu/results.md   # the measurement
"""

import argparse
import json
import math
import os
import platform
import queue
import random
import re
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
CPU_INDEX = "https://download.pytorch.org/whl/cpu"
PROGRAMS = ["triax", "triax-mkl", "eager", "compile", "jax"]
LABEL = {"triax": "Triax", "triax-mkl": "Triax + MKL", "eager": "PyTorch eager",
         "compile": "torch.compile", "jax": "JAX jit"}
TRIAX = ("triax", "triax-mkl")   # the Triax binary: with the linked OpenBLAS, with --blas MKL

MODELS = {
    "small": ["tiny", "--layers", "4", "--hidden", "256", "--heads", "4", "--vocab", "256",
              "--seq", "64", "--batch", "8"],
    "gpt2": ["gpt2", "--seq", "64", "--batch", "4"],
}
QUICK_MODELS = {
    "small": ["tiny", "--layers", "2", "--hidden", "64", "--heads", "4", "--vocab", "256",
              "--seq", "32", "--batch", "4"],
    "gpt2": ["gpt2", "--layers", "2", "--hidden", "64", "--heads", "4", "--seq", "32",
             "--batch", "4"],
}


def note(msg):
    print(msg, file=sys.stderr, flush=True)


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw)


# --------------------------------------------------------------------------
# The model: shapes and train_config read from Triax's MLIR
# --------------------------------------------------------------------------

def read_model(mlir_text):
    cfg_m = re.search(r"#triax\.train_config<([^>]*)>", mlir_text)
    if not cfg_m:
        raise ValueError("no #triax.train_config in the model IR")
    tc = {}
    for field in cfg_m.group(1).split(","):
        k, v = (s.strip() for s in field.split("="))
        tc[k] = v
    shape = lambda name: [int(x) for x in re.search(
        r"triax\.param @%s : tensor<([0-9x]+)xf32>" % re.escape(name), mlir_text).group(1).split("x")]
    vocab, hidden = shape("wte.weight")
    heads = int(re.search(r"triax\.attention [^\n]*heads = (\d+)", mlir_text).group(1))
    layers = len(set(re.findall(r"triax\.param @h\.(\d+)\.ln_1\.weight", mlir_text)))
    ffn = shape("h.0.mlp.c_fc.weight")[1]
    m = {"layers": layers, "hidden": hidden, "heads": heads, "ffn": ffn, "vocab": vocab,
         "seq": int(tc["seq"]), "batch": int(tc["global_batch"]),
         "micro_batch": int(tc["micro_batch"]), "optimizer": tc["optimizer"],
         "lr": float(tc["lr"]), "beta1": float(tc["beta1"]), "beta2": float(tc["beta2"]),
         "eps": float(tc["eps"]), "weight_decay": float(tc["weight_decay"]),
         "grad_clip": float(tc["grad_clip"]), "compute": tc["compute"], "master": tc["master"]}
    if m["optimizer"] != "adamw" or m["compute"] != "f32" or m["micro_batch"] != m["batch"]:
        raise ValueError("the peers implement adamw, f32, one micro-batch per step; got %s" % tc)
    return m


def write_tokens(path, vocab, count, seed=0):
    """An llm.c .bin token file (runtime/README.md) of uniform random tokens."""
    rng = random.Random(seed)
    header = [20240520, 1, count] + [0] * 253
    with open(path, "wb") as f:
        f.write(struct.pack("<256i", *header))
        f.write(struct.pack("<%dH" % count, *(rng.randrange(vocab) for _ in range(count))))


# --------------------------------------------------------------------------
# The peers' environment
# --------------------------------------------------------------------------

def venv_python(venv):
    return os.path.join(venv, "bin", "python")


def importable(py, module):
    if not os.path.exists(py):
        return False
    return subprocess.run([py, "-c", "import %s" % module], capture_output=True).returncode == 0


def ensure_peers(venv, want_torch, want_jax, install):
    """Creates and fills the venv as needed; returns {module: None or reason}."""
    py = venv_python(venv)
    missing = [m for m, want in (("torch", want_torch), ("jax", want_jax))
               if want and not importable(py, m)]
    if missing and install:
        if not os.path.exists(py):
            note("creating %s" % venv)
            subprocess.run([sys.executable, "-m", "venv", venv], check=True)
        pip = [py, "-m", "pip", "install", "--quiet"]
        if "torch" in missing:
            note("installing torch (CPU wheel from %s) into %s" % (CPU_INDEX, venv))
            r = subprocess.run(pip + ["--timeout", "15", "--retries", "0", "--index-url", CPU_INDEX,
                                      "torch"], capture_output=True, text=True)
            if r.returncode != 0:
                note("  the CPU index cannot be reached; installing PyPI's torch (a CUDA build, "
                     "several GB of libraries; it runs on the CPU)")
                subprocess.run(pip + ["torch"])
        if "jax" in missing:
            note("installing jax[cpu] into %s" % venv)
            subprocess.run(pip + ["jax[cpu]"])
    status = {}
    for m, want in (("torch", want_torch), ("jax", want_jax)):
        if want:
            status[m] = None if importable(py, m) else (
                "%s is not importable in %s%s" % (m, venv, "" if install else " (--no-install)"))
    return status


def ensure_mkl(venv, install):
    """MKL's libmkl_rt for `triax-mkl` (the sgemm PyTorch's x86 wheels use),
    pip-installed into the venv as needed; returns (path, None) or (None, reason)."""
    def find():
        lib = os.path.join(venv, "lib")
        names = sorted(f for f in os.listdir(lib) if re.fullmatch(r"libmkl_rt\.so(\.\d+)*", f)) \
            if os.path.isdir(lib) else []
        return os.path.join(lib, names[-1]) if names else None
    path = find()
    if not path and install:
        py = venv_python(venv)
        if not os.path.exists(py):
            note("creating %s" % venv)
            subprocess.run([sys.executable, "-m", "venv", venv], check=True)
        note("installing mkl (for Triax --blas) into %s" % venv)
        subprocess.run([py, "-m", "pip", "install", "--quiet", "mkl"])
        path = find()
    if path:
        return path, None
    return None, "no libmkl_rt.so in %s/lib%s" % (venv, "" if install else " (--no-install)")


def peer_versions(py):
    code = ("import json, importlib\nout = {}\n"
            "for m in ('torch', 'jax', 'jaxlib', 'numpy'):\n"
            "    try: out[m] = importlib.import_module(m).__version__\n"
            "    except Exception: pass\nprint(json.dumps(out))")
    try:
        return json.loads(run([py, "-c", code]).stdout)
    except Exception:
        return {}


class Peer:
    """One long-lived peer process (bench/cpu/peers.py) speaking JSON lines."""

    def __init__(self, py, program, cfg, cpus, n, log_path, timeout):
        env = dict(os.environ)
        env.update(OMP_NUM_THREADS=str(n), MKL_NUM_THREADS=str(n), OPENBLAS_NUM_THREADS=str(n),
                   JAX_PLATFORMS="cpu", TF_CPP_MIN_LOG_LEVEL="1", PYTHONUNBUFFERED="1")
        env.pop("XLA_FLAGS", None)
        if program == "jax" and n == 1:
            env["XLA_FLAGS"] = "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
        self.program, self.log_path = program, log_path
        self.log = open(log_path, "w")
        self.proc = subprocess.Popen(
            [py, os.path.join(HERE, "peers.py"), json.dumps(dict(cfg, program=program))],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log, text=True, env=env,
            preexec_fn=lambda: os.sched_setaffinity(0, cpus))
        self.lines = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self.ready = self._reply(timeout)

    def _read(self):
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def _reply(self, timeout):
        try:
            line = self.lines.get(timeout=timeout)
        except queue.Empty:
            self.close()
            return {"error": "no answer within %d s" % timeout}
        if line is None:
            return {"error": "the process ended (exit %s); see %s: %s" % (
                self.proc.wait(), self.log_path, self.tail())}
        return json.loads(line)

    def tail(self):
        self.log.flush()
        try:
            lines = [l for l in open(self.log_path).read().splitlines() if l.strip()]
            return lines[-1][:300] if lines else ""
        except OSError:
            return ""

    def run(self, warmup, steps, timeout):
        try:
            self.proc.stdin.write(json.dumps({"cmd": "run", "warmup": warmup, "steps": steps}) + "\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError) as e:
            return {"error": "cannot reach the process: %s" % e}
        return self._reply(timeout)

    def close(self):
        if self.proc.poll() is None:
            try:
                self.proc.stdin.write(json.dumps({"cmd": "quit"}) + "\n")
                self.proc.stdin.flush()
                self.proc.wait(timeout=30)
            except Exception:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


# --------------------------------------------------------------------------
# Triax
# --------------------------------------------------------------------------

def run_triax(exe, data, init, n, cpus, warmup, steps, work, timeout, blas=None):
    log = os.path.join(work, "triax-log.jsonl")
    if os.path.exists(log):
        os.remove(log)
    env = dict(os.environ, OPENBLAS_NUM_THREADS=str(n), OMP_NUM_THREADS=str(n))
    cmd = [exe, "--steps", str(warmup + steps), "--threads", str(n), "--data", data,
           "--init-from", init, "--lr-schedule", "constant", "--log-every", "1", "--log-json", log]
    if blas:
        cmd += ["--blas", blas]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout,
                           preexec_fn=lambda: os.sched_setaffinity(0, cpus))
    except subprocess.TimeoutExpired:
        return {"error": "no end within %d s" % timeout}
    if r.returncode != 0:
        return {"error": "exit %d: %s" % (r.returncode, (r.stderr or r.stdout).strip()[-300:])}
    rows = [json.loads(l) for l in open(log) if '"loss"' in l]
    if len(rows) != warmup + steps:
        return {"error": "logged %d steps, expected %d" % (len(rows), warmup + steps)}
    m = re.search(r"(\d+) parameters", r.stdout)
    return {"step_ms": [row["ms"] for row in rows[warmup:]], "losses": [row["loss"] for row in rows],
            "params": int(m.group(1)) if m else None}


# --------------------------------------------------------------------------
# The report
# --------------------------------------------------------------------------

def fmt_ms(p):
    if p.get("median_ms") is None:
        return "n/a"
    return "%.1f ms (%s tok/s)" % (p["median_ms"], format(round(p["tokens_per_s"]), ","))


def report(results, programs):
    out = []
    w = out.append
    a = results["args"]
    w("# Triax vs PyTorch eager, torch.compile and JAX jit: CPU training step, fp32")
    w("")
    w("%s; %s; %s. Triax %s; %s." % (
        results["host"]["cpu"], "%d CPUs" % results["host"]["cpus"], results["date"],
        results["triax_commit"], ", ".join("%s %s" % kv for kv in results["peer_versions"].items())
        or "no peers"))
    w("Median over %d rounds of the mean ms per training step (forward + backward + clipping + "
      "AdamW) over %d timed steps after %d warm-up steps; programs alternated round by round. "
      "Ratio = Triax tokens/s / peer tokens/s (> 1: Triax is faster)." % (
          a["rounds"], a["steps"], a["warmup"]))
    w("")
    peers = [p for p in programs if p not in TRIAX]
    ours = [p for p in programs if p in TRIAX]
    head = ["model", "threads"] + [LABEL[p] for p in programs]
    head += ["%s ÷ %s" % (LABEL[t], LABEL[p]) for t in ours for p in peers]
    w("| " + " | ".join(head) + " |")
    w("|" + "---|" * len(head))
    reasons = []
    for name, mres in results["models"].items():
        for n, tres in mres["threads"].items():
            progs = tres["programs"]
            row = [name, str(n)] + [fmt_ms(progs[p]) for p in programs]
            row += ["%.2fx" % tres["ratios"][t][p] if tres["ratios"][t].get(p) else "n/a"
                    for t in ours for p in peers]
            w("| " + " | ".join(row) + " |")
            for p in programs:
                if progs[p].get("reason"):
                    reasons.append("%s, %s threads, %s: n/a, %s" % (name, n, LABEL[p], progs[p]["reason"]))
    w("")
    for r in reasons:
        w("- " + r)
    if reasons:
        w("")
    w("Same model: parameter count and the losses of the first steps from the same initial "
      "parameters on the same batches (ln(vocab) is the loss of a uniform prediction); set-up: "
      "triaxc's compile for Triax, for a peer its start, build, compile and first steps (at the "
      "first thread count).")
    w("")
    w("| model | program | parameters | loss step 1 | step 2 | step 3 | ln(vocab) | set-up s |")
    w("|---|---|---|---|---|---|---|---|")
    for name, mres in results["models"].items():
        first = mres.get("first_steps", {})
        for p in programs:
            f = first.get(p)
            if not f:
                w("| %s | %s | n/a | | | | | |" % (name, LABEL[p]))
                continue
            losses = ["%.6f" % x for x in f["losses"][:3]] + [""] * (3 - len(f["losses"][:3]))
            w("| %s | %s | %s | %s | %.6f | %.1f |" % (
                name, LABEL[p], format(f["params"], ",") if f["params"] else "?", " | ".join(losses),
                math.log(mres["shape"]["vocab"]), f["setup_s"]))
    w("")
    if peers:
        w("Cores the peers used: their CPU time / wall time over the timed steps (median over rounds).")
        w("")
        w("| model | threads | " + " | ".join(LABEL[p] for p in peers) + " |")
        w("|---|---|" + "---|" * len(peers))
        for name, mres in results["models"].items():
            for n, tres in mres["threads"].items():
                cells = [("%.2f" % tres["programs"][p]["cpu_per_wall"])
                         if tres["programs"][p].get("cpu_per_wall") is not None else "n/a" for p in peers]
                w("| %s | %s | %s |" % (name, n, " | ".join(cells)))
        w("")
    w("Load average (1 min) before / after each (model, threads): " + "; ".join(
        "%s/%s: %.2f / %.2f" % (name, n, t["loadavg_before"], t["loadavg_after"])
        for name, m in results["models"].items() for n, t in m["threads"].items()))
    return "\n".join(out)


def cpu_name():
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


# --------------------------------------------------------------------------
# Main
# --------------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default="small,gpt2", help="comma-separated: small, gpt2")
    ap.add_argument("--threads", default="1,2", help="comma-separated thread counts")
    ap.add_argument("--programs", default=",".join(PROGRAMS), help="comma-separated subset of "
                    + ",".join(PROGRAMS))
    ap.add_argument("--rounds", type=int, help="rounds (default 5; --quick: 1)")
    ap.add_argument("--steps", type=int, help="timed steps per program per round (default 10; --quick: 3)")
    ap.add_argument("--warmup", type=int, help="untimed steps before them, each round (default 3; --quick: 1)")
    ap.add_argument("--quick", action="store_true", help="tiny model sizes and few steps: a smoke run")
    ap.add_argument("--json", help="write all figures here")
    ap.add_argument("--build", default=os.path.join(ROOT, "build"), help="Triax build (its bin/)")
    ap.add_argument("--venv", default=os.path.join(HERE, ".venv"), help="the peers' venv")
    ap.add_argument("--no-install", action="store_true", help="do not create or fill the venv")
    ap.add_argument("--workdir", help="keep the models, binaries and logs here (default: a temporary directory)")
    ap.add_argument("--timeout", type=int, default=3600, help="seconds allowed for one setup or one round's run")
    args = ap.parse_args()
    for k, full, quick in (("rounds", 5, 1), ("steps", 10, 3), ("warmup", 3, 1)):
        if getattr(args, k) is None:
            setattr(args, k, quick if args.quick else full)
    models = [m for m in args.models.split(",") if m]
    threads = [int(t) for t in args.threads.split(",") if t]
    programs = [p for p in PROGRAMS if p in args.programs.split(",")]
    for m in models:
        if m not in MODELS:
            ap.error("unknown model %s (small, gpt2)" % m)
    if set(args.programs.split(",")) - set(PROGRAMS):
        ap.error("unknown program in --programs (%s)" % ",".join(PROGRAMS))
    if args.steps < 1 or args.rounds < 1 or args.warmup < 0:
        ap.error("--steps and --rounds must be >= 1, --warmup >= 0")
    affinity = sorted(os.sched_getaffinity(0))
    for n in threads:
        if n < 1 or n > len(affinity):
            ap.error("--threads %d: this process may run on %d CPUs" % (n, len(affinity)))
    binary = lambda name: os.path.join(args.build, "bin", name)

    status = ensure_peers(args.venv, "eager" in programs or "compile" in programs,
                          "jax" in programs, not args.no_install)
    unavailable = {}
    mkl = None
    if "triax-mkl" in programs:
        mkl, why = ensure_mkl(args.venv, not args.no_install)
        if why:
            unavailable["triax-mkl"] = why
    for p in programs:
        mod = {"eager": "torch", "compile": "torch", "jax": "jax"}.get(p)
        if mod and status.get(mod):
            unavailable[p] = status[mod]
    py = venv_python(args.venv)
    try:
        commit = run(["git", "-C", ROOT, "describe", "--always", "--dirty"]).stdout.strip()
    except Exception:
        commit = "?"
    results = {"date": time.strftime("%Y-%m-%d %H:%M %Z"),
               "host": {"cpu": cpu_name(), "cpus": os.cpu_count(), "affinity": affinity},
               "triax_commit": commit, "build": args.build,
               "peer_versions": peer_versions(py) if os.path.exists(py) else {},
               "args": {"models": models, "threads": threads, "programs": programs, "rounds": args.rounds,
                        "steps": args.steps, "warmup": args.warmup, "quick": args.quick},
               "models": {}}

    work_ctx = tempfile.TemporaryDirectory(prefix="triax-bench-cpu-") if not args.workdir else None
    work_root = args.workdir or work_ctx.name
    os.makedirs(work_root, exist_ok=True)
    try:
        for name in models:
            work = os.path.join(work_root, name)
            os.makedirs(work, exist_ok=True)
            model_args = (QUICK_MODELS if args.quick else MODELS)[name]
            mlir = os.path.join(work, "model.mlir")
            exe = os.path.join(work, "train")
            run([binary("triax-model")] + model_args + ["-o", mlir])
            shape = read_model(open(mlir).read())
            params_ir = int(run([binary("triax-model")] + model_args + ["--print-param-count"])
                            .stdout.strip().split()[0].replace(",", ""))
            note("[%s] %s: %s parameters; compiling with triaxc" % (name, " ".join(model_args),
                                                                   format(params_ir, ",")))
            t0 = time.perf_counter()
            run([binary("triaxc"), mlir, "--target", "cpu", "-o", exe])
            compile_s = time.perf_counter() - t0
            data, init = os.path.join(work, "tokens.bin"), os.path.join(work, "init.safetensors")
            bt = shape["batch"] * shape["seq"]
            write_tokens(data, shape["vocab"], 16 * bt + 1)
            run([exe, "--steps", "0", "--save-init", init, "--log-every", "0"])
            mres = results["models"][name] = {
                "triax_model_args": model_args, "shape": shape, "params_ir": params_ir,
                "triaxc_s": compile_s, "threads": {}, "first_steps": {}}
            n_first = min(3, args.warmup + args.steps)
            for n in threads:
                cpus = set(affinity[:n])
                tres = mres["threads"][n] = {"cpus": sorted(cpus), "loadavg_before": os.getloadavg()[0],
                                             "programs": {p: {} for p in programs}}
                peers = {}
                for p in programs:
                    if p in TRIAX:
                        if p in unavailable:
                            tres["programs"][p]["reason"] = unavailable[p]
                        continue
                    if p in unavailable:
                        tres["programs"][p]["reason"] = unavailable[p]
                        continue
                    note("[%s, %d threads] starting %s (builds, compiles, runs %d steps)"
                         % (name, n, LABEL[p], n_first))
                    cfg = dict(shape, threads=n, init=init, data=data, first_steps=n_first)
                    peer = Peer(py, p, cfg, cpus, n, os.path.join(work, "%s-%d.log" % (p, n)), args.timeout)
                    if "error" in peer.ready:
                        tres["programs"][p]["reason"] = peer.ready["error"]
                        note("  %s: n/a, %s" % (LABEL[p], peer.ready["error"]))
                        peer.close()
                        continue
                    peers[p] = peer
                    tres["programs"][p].update(setup_s=peer.ready["setup_s"], info=peer.ready["info"])
                    mres["first_steps"].setdefault(p, {"params": peer.ready["params"],
                                                       "losses": peer.ready["losses"],
                                                       "setup_s": peer.ready["setup_s"]})
                    note("  ready in %.1f s; losses %s" % (peer.ready["setup_s"], ", ".join(
                        "%.6f" % x for x in peer.ready["losses"])))
                rounds = {p: [] for p in programs}
                live = [p for p in programs if (p in TRIAX and p not in unavailable) or p in peers]
                for r in range(args.rounds):
                    order = live[r % len(live):] + live[:r % len(live)] if live else []
                    for p in order:
                        if p not in TRIAX and p not in peers:
                            continue
                        if p in TRIAX:
                            res = run_triax(exe, data, init, n, cpus, args.warmup, args.steps, work,
                                            args.timeout, blas=mkl if p == "triax-mkl" else None)
                            if "error" not in res:
                                mres["first_steps"].setdefault(p, {"params": res["params"],
                                                                         "losses": res["losses"][:n_first],
                                                                         "setup_s": compile_s})
                        else:
                            res = peers[p].run(args.warmup, args.steps, args.timeout)
                        if "error" in res:
                            tres["programs"][p]["reason"] = "round %d: %s" % (r + 1, res["error"])
                            note("  %s: n/a, %s" % (LABEL[p], res["error"]))
                            if p in peers:
                                peers.pop(p).close()
                            if p in live:
                                live.remove(p)
                            rounds[p] = []
                            continue
                        ms = sum(res["step_ms"]) / len(res["step_ms"])
                        entry = {"ms": ms, "step_ms": res["step_ms"]}
                        if "cpu_s" in res:
                            entry["cpu_per_wall"] = res["cpu_s"] / res["wall_s"]
                        rounds[p].append(entry)
                        note("[%s, %d threads, round %d/%d] %-14s %9.2f ms/step" % (
                            name, n, r + 1, args.rounds, LABEL[p], ms))
                for peer in peers.values():
                    peer.close()
                tres["loadavg_after"] = os.getloadavg()[0]
                for p in programs:
                    pr = tres["programs"][p]
                    pr["rounds"] = rounds[p]
                    if rounds[p] and not pr.get("reason"):
                        pr["median_ms"] = statistics.median(e["ms"] for e in rounds[p])
                        pr["min_ms"] = min(e["ms"] for e in rounds[p])
                        pr["max_ms"] = max(e["ms"] for e in rounds[p])
                        pr["tokens_per_s"] = bt / (pr["median_ms"] / 1e3)
                        utils = [e["cpu_per_wall"] for e in rounds[p] if "cpu_per_wall" in e]
                        pr["cpu_per_wall"] = statistics.median(utils) if utils else None
                    else:
                        pr["median_ms"] = None
                tres["ratios"] = {}
                for t in programs:
                    if t not in TRIAX:
                        continue
                    tri = tres["programs"][t].get("tokens_per_s")
                    tres["ratios"][t] = {p: (tri / tres["programs"][p]["tokens_per_s"])
                                         if tri and tres["programs"][p].get("tokens_per_s") else None
                                         for p in programs if p not in TRIAX}
    finally:
        if work_ctx:
            work_ctx.cleanup()

    # ln(vocab) and agreement of the first losses, for the JSON too.
    for name, mres in results["models"].items():
        ref = mres["first_steps"].get("triax")
        for p, f in mres["first_steps"].items():
            if ref and p != "triax":
                f["max_abs_diff_vs_triax"] = max(abs(a - b) for a, b in zip(f["losses"], ref["losses"]))
        mres["ln_vocab"] = math.log(mres["shape"]["vocab"])
    text = report(results, programs)
    print(text)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
            f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
