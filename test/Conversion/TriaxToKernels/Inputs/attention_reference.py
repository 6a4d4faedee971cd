#!/usr/bin/env python3
"""Attention kernels against an independent numpy reference.

  attention_reference.py OUTDIR [--tools-dir DIR] [--runtime-dir DIR]
                               [--runtime-include DIR] [--target cpu|cuda]

For each configuration below (multi-head, grouped-query with groups of 2 and
3, multi-query), writes a module with two functions on tensors,

  @fwd_N(q, k, v) -> triax.attention
  @bwd_N(q, k, v, dout) -> triax.attention_grad (dq, dk, dv)

(with --saved, @bwd_N first runs the forward for its output and log-sum-exp
and the gradient reads them, `saved(o, lse)`, as triax-autodiff builds it,
where the result has the operands' type)

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
The same shapes run with f32 operands and, for three of them, with bf16
operands (scores, softmax and its backward in f32, the GEMMs' operands bf16,
fp32 accumulation); three more bf16 configurations have shapes of multiples
of 16 (what attention=flash-mma, the tensor-core kernels, takes on CUDA; the
bf16-throughout ones are also what attention=cudnn hands to cuDNN). The reference always gets exactly the values the kernels
get (bf16 inputs rounded first) and computes in float64. An output passes
when |kernel - ref| <= atol + rtol * max|ref|: f32 atol 1e-6, rtol 1e-5;
bf16 rtol 1e-2 (2.5 bf16 ulps of the largest element: a bf16 result is
rounded, and so are P, dS and the result's gradient before the GEMMs that
take them; measured worst 3.5e-3). Exits 1 on a mismatch.
"""

import argparse
import os
import subprocess
import sys

import numpy as np

# The harness is linked as kernel_check.py links its own (test/cuda).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "..", "cuda"))
import kernel_check  # noqa: E402

sh = kernel_check.sh  # prints a command, then runs it (check=True)

# (batch, seq, heads, kv_heads, head_dim): odd sizes so that a wrong stride
# or a wrong head mapping cannot line up by chance.
SHAPES = [
    (2, 5, 3, 3, 4),   # multi-head
    (2, 7, 6, 2, 3),   # grouped-query, group 3
    (3, 4, 4, 2, 2),   # grouped-query, group 2
    (1, 6, 4, 1, 8),   # multi-query
]
# Shapes the tensor-core kernels take (attention=flash-mma on CUDA: bf16,
# sequence and head dimension multiples of 16; the others fall back to the
# batched GEMMs there): two query tiles and a partial block of warps with
# grouped-query heads, and three tiles at d = 64 (gpt2's head size).
MMA_SHAPES = [
    (2, 32, 4, 2, 16),
    (1, 48, 2, 2, 64),
]
# Each shape in f32; then bf16 operands: everything bf16 (q, k, v, the
# result, its gradient and dq, dk, dv), and bf16 q, k, v with an f32 result,
# f32 result gradient and f32 dq, dk, dv (what the op's verifier allows).
# (shape, operand type, result/gradient type)
CONFIGS = ([(shape, "f32", "f32") for shape in SHAPES] +
           [(SHAPES[1], "bf16", "bf16"), (SHAPES[0], "bf16", "bf16"),
            (SHAPES[2], "bf16", "f32"),
            (MMA_SHAPES[0], "bf16", "bf16"), (MMA_SHAPES[1], "bf16", "f32"),
            (MMA_SHAPES[1], "bf16", "bf16")])

ESIZE = {"f32": 4, "bf16": 2}


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
    for (b, s, heads, kv_heads, d) in SHAPES:
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
          "differences (%d shapes)" % len(SHAPES))


def tensor(shape, elt):
    return "tensor<%sx%s>" % ("x".join(str(x) for x in shape), elt)


def to_bf16_bits(x):
    """float32 values -> bf16 bit patterns, rounded to nearest even."""
    u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
    rounded = u + np.uint32(0x7FFF) + ((u >> np.uint32(16)) & np.uint32(1))
    return (rounded >> np.uint32(16)).astype(np.uint16)


def from_bf16_bits(bits):
    return (bits.astype(np.uint32) << np.uint32(16)).view(np.float32)


def as_type(x, elt):
    """x (float32) as the kernels see it in `elt`, as float32."""
    return from_bf16_bits(to_bf16_bits(x)) if elt == "bf16" else x


def module_text(saved=False):
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
    for n, ((b, s, heads, kv_heads, d), elt, rt) in enumerate(CONFIGS):
        tq, tkv = tensor((b, s, heads * d), elt), tensor((b, s, kv_heads * d), elt)
        # The result, its gradient and dq, dk, dv.
        rq, rkv = tensor((b, s, heads * d), rt), tensor((b, s, kv_heads * d), rt)
        attrs = "heads = %d kv_heads = %d" % (heads, kv_heads)
        lse = "tensor<%dx%dx%dxf32>" % (b, heads, s)
        lines += [
            "  func.func @fwd_%d(%%q: %s, %%k: %s, %%v: %s) -> %s attributes "
            "{llvm.emit_c_interface} {" % (n, tq, tkv, tkv, rq),
            "    %%o = triax.attention %%q, %%k, %%v %s : (%s, %s, %s) -> %s"
            % (attrs, tq, tkv, tkv, rq),
            "    return %o : " + rq,
            "  }",
            "  func.func @bwd_%d(%%q: %s, %%k: %s, %%v: %s, %%do: %s) -> (%s, "
            "%s, %s) attributes {llvm.emit_c_interface} {"
            % (n, tq, tkv, tkv, rq, rq, rkv, rkv),
        ] + ([
            # The backward from the forward's output and log-sum-exp, as
            # triax-autodiff builds it (--saved; the op's verifier wants the
            # saved output in the operands' type, so not for an f32 result
            # of bf16 operands).
            "    %%o, %%lse = triax.attention %%q, %%k, %%v %s : (%s, %s, %s) "
            "-> (%s, %s)" % (attrs, tq, tkv, tkv, rq, lse),
            "    %%dq, %%dk, %%dv = triax.attention_grad %%q, %%k, %%v, %%do "
            "saved(%%o, %%lse) %s : (%s, %s, %s, %s, %s, %s) -> (%s, %s, %s)"
            % (attrs, tq, tkv, tkv, rq, rq, lse, rq, rkv, rkv),
        ] if saved and rt == elt else [
            "    %%dq, %%dk, %%dv = triax.attention_grad %%q, %%k, %%v, %%do "
            "%s : (%s, %s, %s, %s) -> (%s, %s, %s)"
            % (attrs, tq, tkv, tkv, rq, rq, rkv, rkv),
        ]) + [
            "    return %%dq, %%dk, %%dv : %s, %s, %s" % (rq, rkv, rkv),
            "  }"]
    lines.append("}")
    return "\n".join(lines) + "\n"


C_PRELUDE = r"""
/* Generated by attention_reference.py: runs every fwd_N / bwd_N on the
 * inputs in INPUT (f32, in order) and writes their results to OUTPUT. The
 * kernels' buffers are trx_alloc'd (device memory on CUDA), as are the
 * results the compiled code allocates: the host never dereferences them,
 * it copies inputs over with trx_copy_to_device and results back with
 * trx_copy_to_host (memcpy on the CPU). */
#include "triax_rt.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
/* Elements are f32 or bf16 (uint16_t storage): `esize` 4 or 2 bytes. */
typedef struct { char *allocated, *aligned; int64_t offset;
                 int64_t sizes[3], strides[3]; } memref3;
typedef struct { memref3 dq, dk, dv; } grads;
static FILE *in, *out;
static memref3 input(int64_t d0, int64_t d1, int64_t d2, size_t esize) {
  memref3 m;
  size_t n = (size_t)(d0 * d1 * d2);
  char *host = (char *)malloc(n * esize);
  if (!host || fread(host, esize, n, in) != n) {
    fprintf(stderr, "attention-check: short input\n");
    exit(2);
  }
  m.allocated = m.aligned = (char *)trx_alloc(n * esize, TRX_MEM_OTHER);
  if (!m.aligned) {
    fprintf(stderr, "attention-check: %s\n", trx_last_error());
    exit(2);
  }
  trx_copy_to_device(m.aligned, host, n * esize);
  free(host);
  m.offset = 0;
  m.sizes[0] = d0; m.sizes[1] = d1; m.sizes[2] = d2;
  m.strides[0] = d1 * d2; m.strides[1] = d2; m.strides[2] = 1;
  return m;
}
/* A result (any strides) in row-major order, read through a host copy of
 * the elements it spans. */
static void output(const memref3 *m, size_t esize) {
  int64_t first = m->offset, last = m->offset;
  for (int r = 0; r < 3; ++r) {
    if (m->sizes[r] == 0) return;
    int64_t step = (m->sizes[r] - 1) * m->strides[r];
    if (step < 0) first += step; else last += step;
  }
  size_t bytes = esize * (size_t)(last - first + 1);
  char *host = (char *)malloc(bytes);
  if (!host) { fprintf(stderr, "attention-check: out of memory\n"); exit(2); }
  trx_copy_to_host(host, m->aligned + esize * (size_t)first, bytes);
  for (int64_t i = 0; i < m->sizes[0]; ++i)
    for (int64_t j = 0; j < m->sizes[1]; ++j)
      for (int64_t l = 0; l < m->sizes[2]; ++l)
        fwrite(host + esize * (size_t)(m->offset - first + i * m->strides[0] +
                                       j * m->strides[1] +
                                       l * m->strides[2]),
               esize, 1, out);
  free(host);
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
    for n, ((b, s, heads, kv_heads, d), elt, rt) in enumerate(CONFIGS):
        e, r = ESIZE[elt], ESIZE[rt]
        c.append("  {")
        c.append("    memref3 q = input(%d, %d, %d, %d);" % (b, s, heads * d, e))
        c.append("    memref3 k = input(%d, %d, %d, %d);" % (b, s, kv_heads * d, e))
        c.append("    memref3 v = input(%d, %d, %d, %d);" % (b, s, kv_heads * d, e))
        c.append("    memref3 dout = input(%d, %d, %d, %d);" % (b, s, heads * d, r))
        c.append("    memref3 o; grads g;")
        c.append("    _mlir_ciface_fwd_%d(&o, &q, &k, &v);" % n)
        c.append("    _mlir_ciface_bwd_%d(&g, &q, &k, &v, &dout);" % n)
        c.append("    output(&o, %d); output(&g.dq, %d); output(&g.dk, %d); "
                 "output(&g.dv, %d);" % (r, r, r, r))
        c.append("  }")
    c.append("  fclose(out);")
    c.append("  printf(\"attention-check: %d configurations run\\n\");"
             % len(CONFIGS))
    c.append("  return 0;")
    c.append("}")
    return "\n".join(c) + "\n"


def build(a):
    os.makedirs(a.outdir, exist_ok=True)
    mod = os.path.join(a.outdir, "attention.mlir")
    with open(mod, "w") as f:
        f.write(module_text(a.saved))
    lowered = os.path.join(a.outdir, "attention-%s.llvm.mlir" % a.target)
    pipeline = "--triax-lower-cpu=attention=%s" % a.attention \
        if a.target == "cpu" else \
        "--triax-lower-cuda=rows=%s attention=%s" % (a.rows, a.attention)
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
    link = kernel_check.link_command(a.cc, exe, [harness_c, obj], a.target,
                                     a.runtime_dir, a.runtime_include,
                                     a.cuda_toolkit, mpi,
                                     cudnn=a.attention == "cudnn")
    sh(link)
    return exe


def run_and_compare(a, exe):
    rng = np.random.default_rng(0)
    inputs, refs = [], []
    for ((b, s, heads, kv_heads, d), elt, rt) in CONFIGS:
        q = rng.standard_normal((b, s, heads * d)).astype(np.float32)
        k = rng.standard_normal((b, s, kv_heads * d)).astype(np.float32)
        v = rng.standard_normal((b, s, kv_heads * d)).astype(np.float32)
        dout = rng.standard_normal((b, s, heads * d)).astype(np.float32)
        # The reference sees exactly the values the kernels see.
        q, k, v = (as_type(x, elt) for x in (q, k, v))
        dout = as_type(dout, rt)
        inputs += [(q, elt), (k, elt), (v, elt), (dout, rt)]
        q64, k64, v64, do64 = (x.astype(np.float64) for x in (q, k, v, dout))
        out, _ = reference_forward(q64, k64, v64, heads, kv_heads)
        refs.append((out,) + reference_backward(q64, k64, v64, do64, heads,
                                                kv_heads))
    in_path = os.path.join(a.outdir, "inputs.bin")
    out_path = os.path.join(a.outdir, "outputs.%s.bin" % a.target)
    with open(in_path, "wb") as f:
        for x, elt in inputs:
            if elt == "bf16":
                f.write(to_bf16_bits(x).astype("<u2").tobytes())
            else:
                f.write(np.ascontiguousarray(x, dtype="<f4").tobytes())
    sh([exe, in_path, out_path])
    raw = open(out_path, "rb").read()
    pos, failed = 0, 0
    for (shape, elt, rt), ref in zip(CONFIGS, refs):
        atol, rtol = (a.atol, a.rtol) if elt == "f32" else (0.0, a.bf16_rtol)
        for name, r in zip(("out", "dq", "dk", "dv"), ref):
            size = ESIZE[rt] * r.size
            chunk = raw[pos:pos + size]
            pos += size
            if len(chunk) != size:
                print("attention-check: short output")
                return 1
            if rt == "bf16":
                g = from_bf16_bits(np.frombuffer(chunk, dtype="<u2"))
            else:
                g = np.frombuffer(chunk, dtype="<f4")
            g = g.astype(np.float64).reshape(r.shape)
            scale = np.abs(r).max()
            err = np.abs(g - r).max()
            ok = err <= atol + rtol * scale
            failed += not ok
            print("attention-check: B,S,heads,kv,d=%-12s %-4s->%-4s %-3s "
                  "max|err| %.3g (max|ref| %.3g, %.2g of it) %s"
                  % (",".join(map(str, shape)), elt, rt, name, err, scale,
                     err / scale, "ok" if ok else "FAIL"))
    if pos != len(raw):
        print("attention-check: %d bytes of results, expected %d"
              % (len(raw), pos))
        failed += 1
    print("attention-check: %d of %d outputs over tolerance (f32: atol %g, "
          "rtol %g of max|ref|; bf16: rtol %g of max|ref|)"
          % (failed, 4 * len(CONFIGS), a.atol, a.rtol, a.bf16_rtol))
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
    p.add_argument("--attention", default="flash",
                   choices=["flash", "batched-gemm", "flash-mma", "cudnn"],
                   help="the pipelines' attention option")
    p.add_argument("--saved", action="store_true",
                   help="each backward from its forward's output and "
                        "log-sum-exp (triax.attention_grad saved(...), what "
                        "triax-autodiff builds), computed in the same "
                        "function")
    p.add_argument("--build-only", action="store_true",
                   help="build the harness, do not run it (cuda without a "
                        "GPU)")
    p.add_argument("--run-only", metavar="EXE",
                   help="run and compare an already built harness")
    p.add_argument("--atol", type=float, default=1e-6)
    p.add_argument("--rtol", type=float, default=1e-5)
    p.add_argument("--bf16-rtol", type=float, default=1e-2)
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
