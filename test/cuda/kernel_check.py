#!/usr/bin/env python3
"""Each generated kernel of a model, on the GPU and on the CPU, same inputs.

  kernel_check.py build MODEL.mlir OUTDIR [--rows block|warp|thread]
                  [--precision fp32|bf16]                  # build machine
  OUTDIR/kernel-check-cpu OUTDIR/cpu        # anywhere
  OUTDIR/kernel-check-cuda OUTDIR/cuda      # on a machine with a GPU
  kernel_check.py compare OUTDIR/cpu OUTDIR/cuda [--json FILE]

`build` takes the kernel IR of the model (triaxc --fuse-projections
--emit=mlir-after=triax-outline-kernels: the `<entry>_kernelN` functions
both targets start from, with the query, key and value projections fused
as on the cuda target, so that kernels read strided column views), keeps
only the kernels (public, with C interfaces) and lowers that
module twice: with the CPU target's lowering (the serial tail of
triax-lower-cpu) and with triax-kernels-to-cuda (the tail of
triax-lower-cuda). A generated C harness calls every kernel on buffers
filled from a fixed seed (f32 and f64 in [-1, 1); i32 and i64 in [0,
smallest dimension) so that gathers stay in bounds; a strided view's
buffer up to its last element, described with its strides and offset;
bf16 the f32 value
rounded to nearest even; float scalars 0.75; an integer argument, a size
the kernel's loops run to, the constant its entry function passes at the
call (a kernel whose `index` size is not a constant there is not checked;
another integer without one is 1)) and
writes, after the call, a sample of every buffer (all elements up to 1024,
else the first and last 256 and 512 in between) with the sum and the sum
of magnitudes of all of it, to OUTDIR/<target>/<kernel>.bin (small enough
to carry the CPU's to the GPU machine). The buffers are trx_alloc'd, which
is device memory on CUDA: the harness fills each in host memory and copies
it over with trx_copy_to_device, and reads it back with trx_copy_to_host
before sampling and summing (memcpy on the CPU, so both targets run the
same harness code). The harness is
linked once with each object: kernel-check-cpu (libtriax_rt.a, OpenBLAS)
and kernel-check-cuda (libtriax_rt_cuda.a first, as triaxc links).

`compare` checks every sampled element, |gpu - cpu| <= atol + rtol * |cpu|
(NaN equals NaN), and every sum within (atol + rtol) * sum of magnitudes;
default atol 1e-5,
rtol 1e-4 (fp32 kernels; libdevice's exp/tanh/pow and FMA contraction
differ from libm by a few ulp), prints the worst kernels and exits 1 when
one fails. bf16 buffers are written as f32 (exact), f64 buffers as f32
(rounded; their sums stay doubles), i64 as their low 32 bits; a kernel that computes
in f32 and stores bf16 may round a value near a rounding boundary the other
way on the GPU, one bf16 ulp: up to 2^-7 of the value, so `build
--precision bf16` records rtol 8e-3 for compare to use.
"""

import argparse
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import zlib

CPU_TAIL = (
    # The serial tail of buildLowerCPUPipeline (lib/Pipelines/Pipelines.cpp)
    # after triax-outline-kernels (its kernels are compared one by one, so
    # without triax-dedupe-kernels).
    "builtin.module(canonicalize, cse, triax-expand-math, triax-lane-reductions, expand-strided-metadata, lower-affine,"
    " convert-vector-to-llvm,"
    " finalize-memref-to-llvm{use-generic-functions=true}, convert-scf-to-cf,"
    " arith-expand{include-bf16=true}, convert-math-to-libm, convert-math-to-llvm, convert-arith-to-llvm,"
    " convert-cf-to-llvm, convert-func-to-llvm, convert-index-to-llvm,"
    " reconcile-unrealized-casts)")

KERNEL_RE = re.compile(
    r"^  func\.func private @(\w+_kernel\d+)\((.*?)\)( -> (?:f64|f32))?"
    r"(?: attributes \{(.*)\})? \{$")
# A memref of static shape; rank 0 (memref<f32>) too; and a static strided
# view (a column view of fused projections: q, k, v in one buffer).
MEMREF_RE = re.compile(r"^memref<((?:\d+x)*)(f32|bf16|f64|i32|i64)"
                       r"(?:, strided<\[([\d, ]+)\](?:, offset: (\d+))?>)?>$")
# In an entry function: a constant, and a call of a kernel.
FUNC_RE = re.compile(r"^  func\.func (?:private )?@(\w+)\(.*\{$")
CONST_RE = re.compile(
    r"^\s*(%[\w.$-]+) = arith\.constant (-?\d+) : (?:index|i32|i64)$")
CALL_RE = re.compile(r"^\s*(?:%[\w.$:-]+ = )?call @(\w+_kernel\d+)\((.*?)\) :")

# The harness's element codes and sizes (C_PRELUDE's buffer() and dump()).
ELEM_CODE = {"f32": 0, "i32": 1, "i64": 2, "bf16": 3, "f64": 4}


def split_args(text):
    """'%arg0: memref<4x8xf32>, %arg1: f32' -> ['memref<4x8xf32>', 'f32']."""
    args, depth, cur = [], 0, ""
    for ch in text:
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        if ch == "," and depth == 0:
            args.append(cur)
            cur = ""
        else:
            cur += ch
    if cur.strip():
        args.append(cur)
    return [a.split(":", 1)[1].strip() for a in args]


def parse_type(t):
    m = MEMREF_RE.match(t)
    if m:
        dims = [int(d) for d in m.group(1).split("x") if d]
        strides = ([int(x) for x in m.group(3).split(",")] if m.group(3)
                   else [])
        offset = int(m.group(4) or 0)
        if strides and len(strides) != len(dims):
            return None
        if not strides:
            step = 1
            for d in reversed(dims):
                strides.insert(0, step)
                step *= d
        # The elements allocated: up to the view's last one.
        span = offset + 1 + sum((d - 1) * st for d, st in zip(dims, strides))
        if any(d == 0 for d in dims):
            span = offset
        return {"kind": "memref", "elem": m.group(2), "shape": dims,
                "strides": strides, "offset": offset, "span": span}
    if t in ("f32", "f64", "i32", "i64", "index"):
        return {"kind": "scalar", "elem": t}
    return None


def call_sizes(lines):
    """{kernel: [the operands of each call, a constant index as an int,
    anything else as None]} over the functions that call kernels (the entry
    functions). SSA names are unique within a function."""
    calls, consts = {}, {}
    for line in lines:
        if FUNC_RE.match(line):
            consts = {}
            continue
        m = CONST_RE.match(line)
        if m:
            consts[m.group(1)] = int(m.group(2))
            continue
        m = CALL_RE.match(line)
        if m:
            ops = [o.strip() for o in m.group(2).split(",") if o.strip()]
            calls.setdefault(m.group(1), []).append(
                [consts.get(o) for o in ops])
    return calls


def resolve_sizes(name, types, calls):
    """Gives every integer scalar argument of kernel `name` (a size its
    loops run to) a "value": the constant all its calls pass. False when an
    index argument has none (a call passes something else, calls disagree,
    or nothing calls the kernel): the kernel is not checked. An i32/i64
    argument without one gets 1."""
    for j, t in enumerate(types):
        if t["elem"] not in ("index", "i32", "i64"):
            continue
        values = {c[j] if j < len(c) else None for c in calls.get(name, [])}
        if len(values) == 1 and None not in values:
            t["value"] = values.pop()
        elif t["elem"] == "index":
            return False
    return True


def kernels_only(text):
    """The kernel functions (public, C interface) and the declarations."""
    out, kernels, skipped = [], [], []
    lines = text.splitlines()
    calls = call_sizes(lines)
    i = 0
    while i < len(lines):
        line = lines[i]
        m = KERNEL_RE.match(line)
        if m:
            types = [parse_type(t) for t in split_args(m.group(2))]
            body = [line]
            i += 1
            while lines[i] != "  }":
                body.append(lines[i])
                i += 1
            body.append(lines[i])
            if any(t is None for t in types) or \
                    not resolve_sizes(m.group(1), types, calls):
                skipped.append(m.group(1))
            else:
                attrs = [a for a in (m.group(4) or "").split(", ") if a]
                body[0] = ("  func.func @%s(%s)%s attributes {%s} {" % (
                    m.group(1), m.group(2), m.group(3) or "",
                    ", ".join(attrs + ["llvm.emit_c_interface"])))
                out.extend(body)
                result = (m.group(3) or "").replace(" -> ", "") or None
                kernels.append({"name": m.group(1), "args": types,
                                "result": result})
        elif line.startswith("  func.func ") and not line.endswith(" {"):
            out.append(line)  # a declaration (a runtime function)
        elif line.startswith("  func.func "):
            # An entry function: skipped with its body.
            i += 1
            while lines[i] != "  }":
                i += 1
        elif line.startswith("module") or line == "}":
            out.append(line)
        i += 1
    # Only the declarations the kernels call (each C-interface declaration
    # makes a wrapper that needs the runtime function).
    body = "\n".join(l for l in out if not l.startswith("  func.func "))
    out = [l for l in out
           if not (l.startswith("  func.func ") and not l.endswith(" {")
                   and "@" + l.split("@", 1)[1].split("(", 1)[0] + "("
                   not in body)]
    return "\n".join(out) + "\n", kernels, skipped


C_PRELUDE = r"""
/* Generated by test/cuda/kernel_check.py: calls every kernel of the model on
 * fixed inputs and writes its buffers afterwards. The buffers are trx_alloc'd
 * (device memory on CUDA): the host never dereferences them, it fills and
 * reads host copies (trx_copy_to_device, trx_copy_to_host). */
#include "triax_rt.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static FILE *out;
#define MEMREF(R) typedef struct { void *allocated, *aligned; int64_t offset; \
  int64_t sizes[R], strides[R]; } memref##R;
MEMREF(1) MEMREF(2) MEMREF(3) MEMREF(4) MEMREF(5)
typedef struct { void *allocated, *aligned; int64_t offset; } memref0;

static uint64_t rng;
static uint32_t next32(void) {
  rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
  return (uint32_t)(rng >> 33);
}
/* Element codes: 0 f32, 1 i32, 2 i64, 3 bf16 (the top half of an f32),
 * 4 f64. */
static const size_t elem_size[] = {4, 4, 8, 2, 8};
static uint16_t to_bf16(float f) {
  uint32_t u; memcpy(&u, &f, 4);
  u += 0x7fffu + ((u >> 16) & 1u); /* round to nearest even (no NaN here) */
  return (uint16_t)(u >> 16);
}
static float from_bf16(uint16_t h) {
  uint32_t u = (uint32_t)h << 16; float f; memcpy(&f, &u, 4);
  return f;
}
static void *host_array(size_t bytes) {
  void *h = malloc(bytes ? bytes : 1);
  if (!h) { fprintf(stderr, "kernel-check: out of host memory\n"); exit(2); }
  return h;
}
/* A trx_alloc'd buffer of n elements, filled in host memory and copied to
 * the device. */
static void *buffer(int64_t n, int elem, int64_t bound) {
  size_t bytes = (size_t)n * elem_size[elem];
  void *d = trx_alloc(bytes, TRX_MEM_OTHER);
  if (!d) { fprintf(stderr, "kernel-check: %s\n", trx_last_error()); exit(2); }
  void *p = host_array(bytes);
  for (int64_t i = 0; i < n; ++i) {
    if (elem == 0 || elem == 3 || elem == 4) {
      float f = (float)(next32() % 2000000) / 1e6f - 1.0f;
      if (elem == 0) ((float *)p)[i] = f;
      else if (elem == 4) ((double *)p)[i] = f;
      else ((uint16_t *)p)[i] = to_bf16(f);
    } else if (elem == 1) {
      ((int32_t *)p)[i] = (int32_t)(next32() % (uint32_t)bound);
    } else {
      ((int64_t *)p)[i] = (int64_t)(next32() % (uint32_t)bound);
    }
  }
  trx_copy_to_device(d, p, bytes);
  free(p);
  return d;
}
/* Element i of a host array as a double, and as the 4 bytes the record
 * holds (f32 for f32, bf16 and f64, i32 for i32, the low half of an i64). */
static double value(const void *p, int64_t i, int elem) {
  switch (elem) {
  case 0: return ((const float *)p)[i];
  case 1: return ((const int32_t *)p)[i];
  case 2: return (double)((const int64_t *)p)[i];
  case 4: return ((const double *)p)[i];
  default: return from_bf16(((const uint16_t *)p)[i]);
  }
}
static void put(const void *p, int64_t i, int elem) {
  if (elem == 3) { float f = from_bf16(((const uint16_t *)p)[i]); fwrite(&f, 4, 1, out); }
  else if (elem == 2) { int32_t v = (int32_t)((const int64_t *)p)[i]; fwrite(&v, 4, 1, out); }
  else if (elem == 4) { float f = (float)((const double *)p)[i]; fwrite(&f, 4, 1, out); }
  else fwrite((const char *)p + 4 * i, 4, 1, out);
}
/* A view of `p`: its shape, strides and offset (a contiguous buffer's, or
 * a strided view's into a buffer of its span). */
static void describe(void *d, void *p, int rank, const int64_t *shape,
                     const int64_t *stride, int64_t offset) {
  memref5 *m = (memref5 *)d; /* the same layout up to the rank */
  int64_t *sizes = (int64_t *)((char *)d + 24), *strides = sizes + rank;
  m->allocated = m->aligned = p; m->offset = offset;
  for (int r = 0; r < rank; ++r) { sizes[r] = shape[r]; strides[r] = stride[r]; }
}
/* A buffer's record: the elements at sample_indices(n) (all of them up to
 * 1024; else the first 256, the last 256 and 512 spread in between), then
 * the sum and the sum of magnitudes of all n elements (doubles). `d` is the
 * trx_alloc'd buffer: read through a host copy. */
static void dump(const void *d, int64_t n, int elem) {
  size_t bytes = (size_t)n * elem_size[elem];
  void *p = host_array(bytes);
  trx_copy_to_host(p, d, bytes);
  double sum = 0, sumabs = 0;
  for (int64_t i = 0; i < n; ++i) {
    double v = value(p, i, elem);
    sum += v; sumabs += v < 0 ? -v : v;
  }
  if (n <= 1024) {
    for (int64_t i = 0; i < n; ++i) put(p, i, elem);
  } else {
    for (int64_t i = 0; i < 256; ++i) put(p, i, elem);
    for (int64_t k = 0; k < 512; ++k) put(p, 256 + k * (n - 512) / 512, elem);
    for (int64_t i = n - 256; i < n; ++i) put(p, i, elem);
  }
  fwrite(&sum, 8, 1, out);
  fwrite(&sumabs, 8, 1, out);
  free(p);
}
static int open_out(const char *dir, const char *name) {
  char path[4096];
  snprintf(path, sizeof(path), "%s/%s.bin", dir, name);
  out = fopen(path, "wb");
  if (!out) { perror(path); return 1; }
  return 0;
}
"""


def harness(kernels):
    c = [C_PRELUDE]
    for k in kernels:
        params = []
        for t in k["args"]:
            if t["kind"] == "memref":
                params.append("memref%d *" % len(t["shape"]))
            else:
                params.append({"f32": "float", "f64": "double", "i32": "int32_t",
                               "i64": "int64_t", "index": "int64_t"}[t["elem"]])
        ret = {None: "void", "f64": "double", "f32": "float"}[k["result"]]
        c.append("%s _mlir_ciface_%s(%s);" % (ret, k["name"], ", ".join(params)))
    c.append("static int run(const char *dir, const char *only) {")
    c.append("  int n = 0;")
    for k in kernels:
        name = k["name"]
        dims = [d for t in k["args"] if t["kind"] == "memref" for d in t["shape"]]
        bound = max(1, min(dims)) if dims else 1
        c.append("  if (!only || !strcmp(only, \"%s\")) {" % name)
        c.append("    rng = %du;" % (zlib.crc32(name.encode()) or 1))
        call = []
        for j, t in enumerate(k["args"]):
            if t["kind"] == "memref":
                rank = len(t["shape"])
                # (rank 0: placeholders, describe() reads no size)
                shape = ", ".join(str(d) for d in t["shape"]) or "0"
                strides = ", ".join(str(d) for d in t["strides"]) or "0"
                c.append("    int64_t s%d[] = {%s}, t%d[] = {%s}; memref%d m%d;"
                         % (j, shape, j, strides, rank, j))
                c.append("    void *b%d = buffer(%d, %d, %d); describe(&m%d, b%d, %d, s%d, t%d, %d);"
                         % (j, t["span"], ELEM_CODE[t["elem"]], bound, j, j,
                            rank, j, j, t["offset"]))
                call.append("&m%d" % j)
            elif "value" in t:
                call.append("%d" % t["value"])  # the size at the call
            else:
                call.append({"f32": "0.75f", "f64": "0.75"}.get(t["elem"], "1"))
        if k["result"]:
            c.append("    double r = _mlir_ciface_%s(%s);" % (name, ", ".join(call)))
        else:
            c.append("    _mlir_ciface_%s(%s);" % (name, ", ".join(call)))
        # CUDA: the kernels run asynchronously; wait before reading (the
        # copies to the host in dump() wait too).
        c.append("    trx_device_sync();")
        c.append("    if (open_out(dir, \"%s\")) return 1;" % name)
        if k["result"]:
            # The scalar result first, as a double.
            c.append("    fwrite(&r, 8, 1, out);")
        for j, t in enumerate(k["args"]):
            if t["kind"] == "memref":
                c.append("    dump(b%d, %d, %d); trx_free(b%d);"
                         % (j, t["span"], ELEM_CODE[t["elem"]], j))
        c.append("    fclose(out); ++n;")
        c.append("  }")
    c.append("  printf(\"kernel-check: %d kernels run, buffers in %s\\n\", n, dir);")
    c.append("  return n ? 0 : 1;")
    c.append("}")
    c.append("int main(int argc, char **argv) {")
    c.append("  if (argc < 2) { fprintf(stderr, \"usage: %s OUTDIR [KERNEL]\\n\", argv[0]); return 2; }")
    c.append("  return run(argv[1], argc > 2 ? argv[2] : NULL);")
    c.append("}")
    return "\n".join(c) + "\n"


def sh(cmd, **kw):
    print("+ " + " ".join(cmd), file=sys.stderr)
    subprocess.run(cmd, check=True, **kw)


def link_command(cc, exe, inputs, target, runtime_dir, runtime_include,
                 cuda_toolkit, mpi, cudnn=False):
    """The link of a harness with generated objects for `target` (cpu or
    cuda), as triaxc links a binary (lib/Driver/Compiler.cpp): the CUDA
    runtime whole ahead of the CPU runtime (and, with `cudnn`, the code of
    --attention=cudnn, libtriax_rt_cudnn.a, whole after it), OpenBLAS on the
    CPU, cuBLASLt, cuBLAS, NCCL and the driver on CUDA. `mpi` is mpicc's
    link flags. attention_reference.py links its harness with this too."""
    link = [cc, "-O2", "-o", exe] + inputs + ["-I" + runtime_include]
    if target == "cuda":
        link += ["-Wl,--whole-archive",
                 os.path.join(runtime_dir, "libtriax_rt_cuda.a")]
        if cudnn:
            link += [os.path.join(runtime_dir, "libtriax_rt_cudnn.a")]
        link += ["-Wl,--no-whole-archive"]
    link += [os.path.join(runtime_dir, "libtriax_rt.a")]
    if target == "cpu":
        link += ["-lopenblas"]  # (cuda: cuBLAS, see runtime/lib/cuda)
    link += ["-lstdc++", "-lm"] + mpi
    if cudnn:
        link += ["-ldl"]  # (dlopen of libcudnn)
    if target == "cuda":
        lib64 = os.path.join(cuda_toolkit, "lib64")
        nccl = os.path.join(cuda_toolkit, "lib")
        link += ["-L" + lib64, "-Wl,-rpath," + lib64, "-lcublasLt",
                 "-lcublas", "-L" + nccl, "-Wl,-rpath," + nccl, "-lnccl",
                 "-L" + os.path.join(lib64, "stubs"), "-lcuda", "-lstdc++"]
    return link


def build(a):
    os.makedirs(a.outdir, exist_ok=True)
    tools = a.tools_dir
    llvm = a.llvm_bin
    kir = os.path.join(a.outdir, "kernels-full.mlir")
    with open(kir, "w") as f:
        # The projections fused as the cuda target fuses them: attention
        # and the gradients' kernels read q, k, v (dq, dk, dv) as strided
        # column views, which the harness describes as such.
        sh([os.path.join(tools, "triaxc"), a.model, "--precision", a.precision,
            "--fuse-projections", "--emit=mlir-after=triax-outline-kernels"],
           stdout=f)
    with open(kir) as f:
        text = f.read()
    # Drop the "IR Dump After" header line.
    text = "\n".join(l for l in text.splitlines() if not l.startswith("//"))
    module, kernels, skipped = kernels_only(text)
    if not kernels:
        sys.exit("kernel_check.py: no kernels found in " + kir)
    if skipped:
        print("kernel_check.py: %d kernels with other argument types are "
              "not checked: %s" % (len(skipped), " ".join(skipped)),
              file=sys.stderr)
    mod = os.path.join(a.outdir, "kernels.mlir")
    with open(mod, "w") as f:
        f.write(module)
    with open(os.path.join(a.outdir, "kernels.json"), "w") as f:
        json.dump({"model": a.model, "precision": a.precision,
                   "rtol": 8e-3 if a.precision == "bf16" else None,
                   "kernels": kernels, "skipped": skipped}, f, indent=1)
    harness_c = os.path.join(a.outdir, "harness.c")
    with open(harness_c, "w") as f:
        f.write(harness(kernels))
    mpi = subprocess.run(["mpicc", "-showme:link"], capture_output=True,
                         text=True).stdout.split() or ["-lmpi"]
    rt = a.runtime_dir
    for target in ("cpu", "cuda"):
        lowered = os.path.join(a.outdir, "kernels-%s.llvm.mlir" % target)
        if target == "cpu":
            pipeline = CPU_TAIL
        else:
            pipeline = ("builtin.module(triax-kernels-to-cuda{chip=%s "
                        "features=%s toolkit=%s rows=%s})" % (
                            a.arch, a.features, a.cuda_toolkit, a.rows))
        sh([os.path.join(tools, "triax-opt"), mod, "--pass-pipeline=" + pipeline,
            "-o", lowered])
        ll = lowered.replace(".llvm.mlir", ".ll")
        obj = lowered.replace(".llvm.mlir", ".o")
        sh([os.path.join(llvm, "mlir-translate"), "--mlir-to-llvmir", lowered,
            "-o", ll])
        sh([os.path.join(llvm, "llc"), "-O2", "-filetype=obj",
            "-relocation-model=pic", ll, "-o", obj])
        exe = os.path.join(a.outdir, "kernel-check-" + target)
        link = link_command(a.cc, exe, [harness_c, obj], target, rt,
                            a.runtime_include, a.cuda_toolkit, mpi)
        sh(link)
    print("kernel_check.py: %d kernels; %s/kernel-check-cpu and "
          "kernel-check-cuda built" % (len(kernels), a.outdir))


def compare(a):
    with open(a.kernels) as f:
        meta = json.load(f)
    results, failed = [], 0
    if a.rtol is None:  # build's bound for the precision, else fp32's
        a.rtol = meta.get("rtol") or 1e-4
    for k in meta["kernels"]:
        name = k["name"]
        paths = [os.path.join(d, name + ".bin") for d in (a.cpu, a.gpu)]
        if not all(os.path.exists(p) for p in paths):
            results.append({"kernel": name, "ok": False, "error": "missing output"})
            failed += 1
            continue
        data = [open(p, "rb").read() for p in paths]
        if len(data[0]) != len(data[1]):
            results.append({"kernel": name, "ok": False, "error": "sizes differ"})
            failed += 1
            continue
        fmt, sums = ("d" if k.get("result") else ""), []
        for t in k["args"]:
            if t["kind"] != "memref":
                continue
            n = _count(t["shape"])
            fmt += ("f" if t["elem"] in ("f32", "bf16", "f64") else "i") * \
                min(n, 1024) + "dd"
        cpu = struct.unpack("<" + fmt, data[0])
        gpu = struct.unpack("<" + fmt, data[1])
        # Sums (the "dd" after each buffer) get the tolerance scaled by the
        # sum of magnitudes.
        scale = [1.0] * len(fmt)
        for pos, ch in enumerate(fmt):
            if ch == "d" and pos + 1 < len(fmt) and fmt[pos + 1] == "d" and \
                    (pos > 0 or not k.get("result")):
                scale[pos] = max(1.0, abs(cpu[pos + 1]))
                scale[pos + 1] = max(1.0, abs(cpu[pos + 1]))
        worst_abs, worst_rel, bad = 0.0, 0.0, 0
        for x, y, sc in zip(cpu, gpu, scale):
            if x != x and y != y:
                continue
            d = abs(x - y)
            if not d <= a.atol * sc + a.rtol * max(abs(x), sc if sc > 1 else 0):
                bad += 1
            worst_abs = max(worst_abs, d / sc) if d == d else float("inf")
            if x != 0 and d == d:
                worst_rel = max(worst_rel, d / max(abs(x), sc if sc > 1 else 0))
        ok = bad == 0
        failed += 0 if ok else 1
        results.append({"kernel": name, "ok": ok, "elements": len(cpu),
                        "mismatches": bad, "max_abs": worst_abs,
                        "max_rel": worst_rel})
    summary = {"kernels": len(results), "failed": failed, "atol": a.atol,
               "rtol": a.rtol, "results": results}
    worst = ([r for r in results if not r["ok"]][:10] +
             sorted((r for r in results if r["ok"]),
                    key=lambda r: -r.get("max_abs", 0))[:5])
    for r in worst:
        if "error" in r:
            print("kernel-check: %-40s FAIL %s" % (r["kernel"], r["error"]))
            continue
        print("kernel-check: %-40s %s max_abs %.3g max_rel %.3g mismatches %d/%d"
              % (r["kernel"], "ok  " if r["ok"] else "FAIL", r["max_abs"],
                 r["max_rel"], r["mismatches"], r["elements"]))
    print("kernel-check: %d kernels, %d failed (|gpu-cpu| <= %g + %g |cpu|)"
          % (len(results), failed, a.atol, a.rtol))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(summary, f, indent=1)
    return 1 if failed else 0


def _count(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build")
    b.add_argument("model")
    b.add_argument("outdir")
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(os.path.dirname(here))
    b.add_argument("--tools-dir", default=os.path.join(root, "build", "bin"))
    b.add_argument("--runtime-dir", default=os.path.join(root, "build", "runtime"))
    b.add_argument("--runtime-include", default=os.path.join(root, "runtime", "include"))
    b.add_argument("--llvm-bin", default="/usr/lib/llvm-22/bin")
    b.add_argument("--cuda-toolkit", default="/usr/local/cuda")
    b.add_argument("--arch", default="sm_90")
    b.add_argument("--features", default="+ptx81")
    b.add_argument("--cc", default="cc")
    b.add_argument("--precision", default="fp32", choices=["fp32", "bf16"],
                   help="triaxc --precision of the kernel IR")
    b.add_argument("--rows", default="block", choices=["thread", "block", "warp"],
                   help="row-wise kernels of the CUDA side: one thread, one warp or one "
                        "block per row (triax-lower-cuda's rows option)")
    c = sub.add_parser("compare")
    c.add_argument("kernels", help="kernels.json written by build")
    c.add_argument("cpu")
    c.add_argument("gpu")
    c.add_argument("--atol", type=float, default=1e-5)
    c.add_argument("--rtol", type=float, default=None,
                   help="default: what build recorded for the precision "
                   "(fp32 1e-4, bf16 8e-3)")
    c.add_argument("--json")
    a = p.parse_args()
    if a.cmd == "build":
        if not shutil.which(a.cc):
            sys.exit("kernel_check.py: no C compiler '%s'" % a.cc)
        build(a)
        return 0
    return compare(a)


if __name__ == "__main__":
    sys.exit(main())
