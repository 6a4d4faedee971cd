#!/usr/bin/env python3
"""Attention kernels against an independent numpy reference.

  attention_reference.py OUTDIR [--tools-dir DIR] [--runtime-dir DIR]
                               [--runtime-include DIR] [--target cpu|cuda]

For each configuration below (multi-head, grouped-query with groups of 2 and
3, multi-query), writes a module with two functions on tensors,

  @fwd_N(q, k, v) -> triax.attention
  @bwd_N(q, k, v, dout) -> triax.attention_grad (dq, dk, dv)

(plus a one-op model, which convert-triax-to-kernels requires), compiles it
with triax-opt --triax-lower-cpu (--target cuda: --triax-lower-cuda, whose
binary only runs on a machine with a GPU) to an object, links it with a
generated C harness and the runtime, runs the harness on random inputs
written by numpy and compares every output with causal attention and its
gradient written here in float64 from the definition:

  P_j = softmax over t <= i of q_j[i] . k_kv[t] / sqrt(d)  (kv = j / group)
  out_j = P_j v_kv
  dV_kv = sum_j P_j^T dO_j, dS_j = P_j * (dP_j - rowsum(dP_j P_j)),
  dP_j = dO_j v_kv^T, dQ_j = dS_j k_kv / sqrt(d), dK_kv = sum_j dS_j^T q_j /
  sqrt(d)   (the sums over the query heads j of kv head kv).

The reference's backward is itself checked against central finite
differences of its forward (float64) before anything is compared.
An output passes when |kernel - ref| <= atol + rtol * max|ref| (f32 kernels:
atol 1e-6, rtol 1e-5). Exits 1 on a mismatch.
"""

import argparse
import os
import subprocess
import sys

import numpy as np

# (batch, seq, heads, kv_heads, head_dim): odd sizes so that a wrong stride
# or a wrong head mapping cannot line up by chance.
CONFIGS = [
    (2, 5, 3, 3, 4),   # multi-head
    (2, 7, 6, 2, 3),   # grouped-query, group 3
    (3, 4, 4, 2, 2),   # grouped-query, group 2
    (1, 6, 4, 1, 8),   # multi-query
]

CPU_LINK = ["-lopenblas"]


def reference_forward(q, k, v, heads, kv_heads):
    """out [B, S, heads*d] and P [B, heads, S, S] (float64)."""
    b, s, _ = q.shape
    d = q.shape[2] // heads
    group = heads // kv_heads
    out = np.zeros_like(q)
    probs = np.zeros((b, heads, s, s))
    mask = np.tril(np.ones((s, s), dtype=bool))
    for j in range(heads):
        kv = j // group
        qj = q[:, :, j * d:(j + 1) * d]
        kj = k[:, :, kv * d:(kv + 1) * d]
        vj = v[:, :, kv * d:(kv + 1) * d]
        scores = np.einsum("bid,btd->bit", qj, kj) / np.sqrt(d)
        scores = np.where(mask, scores, -np.inf)
        scores -= scores.max(axis=2, keepdims=True)
        e = np.exp(scores)
        p = e / e.sum(axis=2, keepdims=True)
        probs[:, j] = p
        out[:, :, j * d:(j + 1) * d] = np.einsum("bit,btd->bid", p, vj)
    return out, probs


def reference_backward(q, k, v, dout, heads, kv_heads):
    """(dq, dk, dv) of sum(out * dout) (float64)."""
    d = q.shape[2] // heads
    group = heads // kv_heads
    _, probs = reference_forward(q, k, v, heads, kv_heads)
    dq, dk, dv = np.zeros_like(q), np.zeros_like(k), np.zeros_like(v)
    for j in range(heads):
        kv = j // group
        cq, ckv = slice(j * d, (j + 1) * d), slice(kv * d, (kv + 1) * d)
        p = probs[:, j]
        doj = dout[:, :, cq]
        dp = np.einsum("bid,btd->bit", doj, v[:, :, ckv])
        ds = p * (dp - (dp * p).sum(axis=2, keepdims=True))
        dv[:, :, ckv] += np.einsum("bit,bid->btd", p, doj)
        dq[:, :, cq] = np.einsum("bit,btd->bid", ds, k[:, :, ckv]) / np.sqrt(d)
        dk[:, :, ckv] += np.einsum("bit,bid->btd", ds, q[:, :, cq]) / np.sqrt(d)
    return dq, dk, dv


def check_reference_gradient(rng):
    """The reference backward against central differences of its forward."""
    for (b, s, heads, kv_heads, d) in CONFIGS:
        q = rng.standard_normal((b, s, heads * d))
        k = rng.standard_normal((b, s, kv_heads * d))
        v = rng.standard_normal((b, s, kv_heads * d))
        dout = rng.standard_normal((b, s, heads * d))
        grads = reference_backward(q, k, v, dout, heads, kv_heads)
        for which, (x, g) in enumerate(zip((q, k, v), grads)):
            num = np.zeros_like(x)
            h = 1e-6
            for idx in np.ndindex(*x.shape):
                old = x[idx]
                x[idx] = old + h
                fp = (reference_forward(q, k, v, heads, kv_heads)[0] * dout).sum()
                x[idx] = old - h
                fm = (reference_forward(q, k, v, heads, kv_heads)[0] * dout).sum()
                x[idx] = old
                num[idx] = (fp - fm) / (2 * h)
            err = np.abs(num - g).max() / max(np.abs(num).max(), 1e-3)
            if not err < 1e-6:
                sys.exit("attention_reference.py: the reference's own gradient "
                         "%s of %s is off by %.3g from finite differences"
                         % ("qkv"[which], (b, s, heads, kv_heads, d), err))
    print("attention_reference.py: reference backward matches finite "
          "differences (%d configurations)" % len(CONFIGS))


def tensor(shape):
    return "tensor<%sxf32>" % "x".join(str(x) for x in shape)


def module_text():
    lines = ["module {",
             # The one model the conversion needs; its functions are not
             # used here.
             "  triax.model @m config = #triax.train_config<micro_batch = 1,"
             " seq = 2, global_batch = 1> {",
             "    triax.param @w : tensor<4x2xf32> init <normal, std = 0.02>",
             "    func.func @forward(%tokens: tensor<1x2xi32>, %targets: "
             "tensor<1x2xi32>) -> tensor<f32> {",
             "      %w = triax.get_param @w : tensor<4x2xf32>",
             "      %x = triax.embedding %tokens, %w : (tensor<1x2xi32>, "
             "tensor<4x2xf32>) -> tensor<1x2x2xf32>",
             "      %l = triax.cross_entropy %x, %targets : (tensor<1x2x2xf32>,"
             " tensor<1x2xi32>) -> tensor<f32>",
             "      return %l : tensor<f32>",
             "    }",
             "  }"]
    for n, (b, s, heads, kv_heads, d) in enumerate(CONFIGS):
        tq, tkv = tensor((b, s, heads * d)), tensor((b, s, kv_heads * d))
        attrs = "heads = %d kv_heads = %d" % (heads, kv_heads)
        lines += [
            "  func.func @fwd_%d(%%q: %s, %%k: %s, %%v: %s) -> %s attributes "
            "{llvm.emit_c_interface} {" % (n, tq, tkv, tkv, tq),
            "    %%o = triax.attention %%q, %%k, %%v %s : (%s, %s, %s) -> %s"
            % (attrs, tq, tkv, tkv, tq),
            "    return %o : " + tq,
            "  }",
            "  func.func @bwd_%d(%%q: %s, %%k: %s, %%v: %s, %%do: %s) -> (%s, "
            "%s, %s) attributes {llvm.emit_c_interface} {"
            % (n, tq, tkv, tkv, tq, tq, tkv, tkv),
            "    %%dq, %%dk, %%dv = triax.attention_grad %%q, %%k, %%v, %%do "
            "%s : (%s, %s, %s, %s) -> (%s, %s, %s)"
            % (attrs, tq, tkv, tkv, tq, tq, tkv, tkv),
            "    return %%dq, %%dk, %%dv : %s, %s, %s" % (tq, tkv, tkv),
            "  }"]
    lines.append("}")
    return "\n".join(lines) + "\n"


C_PRELUDE = r"""
/* Generated by attention_reference.py: runs every fwd_N / bwd_N on the
 * inputs in INPUT (f32, in order) and writes their results to OUTPUT. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
typedef struct { float *allocated, *aligned; int64_t offset;
                 int64_t sizes[3], strides[3]; } memref3;
typedef struct { memref3 dq, dk, dv; } grads;
static FILE *in, *out;
static memref3 input(int64_t d0, int64_t d1, int64_t d2) {
  memref3 m;
  size_t n = (size_t)(d0 * d1 * d2);
  m.allocated = m.aligned = (float *)malloc(n * 4);
  if (!m.aligned || fread(m.aligned, 4, n, in) != n) {
    fprintf(stderr, "attention-check: short input\n");
    exit(2);
  }
  m.offset = 0;
  m.sizes[0] = d0; m.sizes[1] = d1; m.sizes[2] = d2;
  m.strides[0] = d1 * d2; m.strides[1] = d2; m.strides[2] = 1;
  return m;
}
/* A result (any strides) in row-major order. */
static void output(const memref3 *m) {
  for (int64_t i = 0; i < m->sizes[0]; ++i)
    for (int64_t j = 0; j < m->sizes[1]; ++j)
      for (int64_t l = 0; l < m->sizes[2]; ++l)
        fwrite(m->aligned + m->offset + i * m->strides[0] +
                   j * m->strides[1] + l * m->strides[2], 4, 1, out);
}
"""


def harness():
    c = [C_PRELUDE]
    for n, _ in enumerate(CONFIGS):
        c.append("void _mlir_ciface_fwd_%d(memref3 *, memref3 *, memref3 *, "
                 "memref3 *);" % n)
        c.append("void _mlir_ciface_bwd_%d(grads *, memref3 *, memref3 *, "
                 "memref3 *, memref3 *);" % n)
    c.append("int main(int argc, char **argv) {")
    c.append("  if (argc != 3) { fprintf(stderr, \"usage: %s INPUT OUTPUT\\n\","
             " argv[0]); return 2; }")
    c.append("  in = fopen(argv[1], \"rb\"); out = fopen(argv[2], \"wb\");")
    c.append("  if (!in || !out) { perror(\"attention-check\"); return 2; }")
    for n, (b, s, heads, kv_heads, d) in enumerate(CONFIGS):
        c.append("  {")
        c.append("    memref3 q = input(%d, %d, %d);" % (b, s, heads * d))
        c.append("    memref3 k = input(%d, %d, %d);" % (b, s, kv_heads * d))
        c.append("    memref3 v = input(%d, %d, %d);" % (b, s, kv_heads * d))
        c.append("    memref3 dout = input(%d, %d, %d);" % (b, s, heads * d))
        c.append("    memref3 o; grads g;")
        c.append("    _mlir_ciface_fwd_%d(&o, &q, &k, &v);" % n)
        c.append("    _mlir_ciface_bwd_%d(&g, &q, &k, &v, &dout);" % n)
        c.append("    output(&o); output(&g.dq); output(&g.dk); output(&g.dv);")
        c.append("  }")
    c.append("  fclose(out);")
    c.append("  printf(\"attention-check: %d configurations run\\n\");"
             % len(CONFIGS))
    c.append("  return 0;")
    c.append("}")
    return "\n".join(c) + "\n"


def sh(cmd, **kw):
    print("+ " + " ".join(cmd), file=sys.stderr)
    subprocess.run(cmd, check=True, **kw)


def build(a):
    os.makedirs(a.outdir, exist_ok=True)
    mod = os.path.join(a.outdir, "attention.mlir")
    with open(mod, "w") as f:
        f.write(module_text())
    lowered = os.path.join(a.outdir, "attention-%s.llvm.mlir" % a.target)
    pipeline = "--triax-lower-cpu" if a.target == "cpu" else \
        "--triax-lower-cuda=rows=%s" % a.rows
    sh([os.path.join(a.tools_dir, "triax-opt"), mod, pipeline, "-o", lowered])
    ll = lowered.replace(".llvm.mlir", ".ll")
    obj = lowered.replace(".llvm.mlir", ".o")
    sh([os.path.join(a.llvm_bin, "mlir-translate"), "--mlir-to-llvmir",
        lowered, "-o", ll])
    sh([os.path.join(a.llvm_bin, "llc"), "-O2", "-filetype=obj",
        "-relocation-model=pic", ll, "-o", obj])
    harness_c = os.path.join(a.outdir, "harness.c")
    with open(harness_c, "w") as f:
        f.write(harness())
    mpi = subprocess.run(["mpicc", "-showme:link"], capture_output=True,
                         text=True).stdout.split() or ["-lmpi"]
    exe = os.path.join(a.outdir, "attention-check-" + a.target)
    link = [a.cc, "-O2", "-o", exe, harness_c, obj,
            "-I" + a.runtime_include]
    if a.target == "cuda":
        link += ["-Wl,--whole-archive",
                 os.path.join(a.runtime_dir, "libtriax_rt_cuda.a"),
                 "-Wl,--no-whole-archive"]
    link += [os.path.join(a.runtime_dir, "libtriax_rt.a")]
    if a.target == "cpu":
        link += CPU_LINK
    link += ["-lstdc++", "-lm"] + mpi
    if a.target == "cuda":
        lib64 = os.path.join(a.cuda_toolkit, "lib64")
        link += ["-L" + lib64, "-Wl,-rpath," + lib64, "-lcublasLt", "-lcublas",
                 "-L" + os.path.join(lib64, "stubs"), "-lcuda", "-lstdc++"]
    sh(link)
    return exe


def run_and_compare(a, exe):
    rng = np.random.default_rng(0)
    inputs, refs = [], []
    for (b, s, heads, kv_heads, d) in CONFIGS:
        q = rng.standard_normal((b, s, heads * d))
        k = rng.standard_normal((b, s, kv_heads * d))
        v = rng.standard_normal((b, s, kv_heads * d))
        dout = rng.standard_normal((b, s, heads * d))
        # The reference sees exactly the f32 values the kernels see.
        q, k, v, dout = (x.astype(np.float32) for x in (q, k, v, dout))
        inputs += [q, k, v, dout]
        q64, k64, v64, do64 = (x.astype(np.float64) for x in (q, k, v, dout))
        out, _ = reference_forward(q64, k64, v64, heads, kv_heads)
        refs.append((out,) + reference_backward(q64, k64, v64, do64, heads,
                                                kv_heads))
    in_path = os.path.join(a.outdir, "inputs.bin")
    out_path = os.path.join(a.outdir, "outputs.%s.bin" % a.target)
    with open(in_path, "wb") as f:
        for x in inputs:
            f.write(np.ascontiguousarray(x, dtype="<f4").tobytes())
    sh([exe, in_path, out_path])
    got = np.fromfile(out_path, dtype="<f4").astype(np.float64)
    pos, failed = 0, 0
    for config, ref in zip(CONFIGS, refs):
        for name, r in zip(("out", "dq", "dk", "dv"), ref):
            g = got[pos:pos + r.size].reshape(r.shape)
            pos += r.size
            scale = np.abs(r).max()
            err = np.abs(g - r).max() if g.size == r.size else np.inf
            ok = err <= a.atol + a.rtol * scale
            failed += not ok
            print("attention-check: B,S,heads,kv,d=%-16s %-3s max|err| %.3g "
                  "(max|ref| %.3g) %s" % (",".join(map(str, config)), name,
                                          err, scale, "ok" if ok else "FAIL"))
    if pos != got.size:
        print("attention-check: %d results, expected %d" % (got.size, pos))
        failed += 1
    print("attention-check: %d of %d outputs over tolerance (atol %g, rtol %g "
          "of max|ref|)" % (failed, 4 * len(CONFIGS), a.atol, a.rtol))
    return 1 if failed else 0


def main():
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
        here))))
    p.add_argument("outdir")
    p.add_argument("--tools-dir", default=os.path.join(root, "build", "bin"))
    p.add_argument("--runtime-dir",
                   default=os.path.join(root, "build", "runtime"))
    p.add_argument("--runtime-include",
                   default=os.path.join(root, "runtime", "include"))
    p.add_argument("--llvm-bin", default="/usr/lib/llvm-22/bin")
    p.add_argument("--cuda-toolkit", default="/usr/local/cuda")
    p.add_argument("--cc", default="cc")
    p.add_argument("--target", default="cpu", choices=["cpu", "cuda"])
    p.add_argument("--rows", default="block", choices=["thread", "block"],
                   help="cuda: triax-lower-cuda's rows option")
    p.add_argument("--build-only", action="store_true",
                   help="build the harness, do not run it (cuda without a "
                        "GPU)")
    p.add_argument("--run-only", metavar="EXE",
                   help="run and compare an already built harness")
    p.add_argument("--atol", type=float, default=1e-6)
    p.add_argument("--rtol", type=float, default=1e-5)
    a = p.parse_args()
    # Our lines in order with those of the tools and the harness.
    sys.stdout.reconfigure(line_buffering=True)
    if a.run_only:
        os.makedirs(a.outdir, exist_ok=True)
        return run_and_compare(a, a.run_only)
    check_reference_gradient(np.random.default_rng(1))
    exe = build(a)
    if a.build_only:
        print("attention_reference.py: built " + exe)
        return 0
    return run_and_compare(a, exe)


if __name__ == "__main__":
    sys.exit(main())
