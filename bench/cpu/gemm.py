#!/usr/bin/env python3
"""The small model's GEMMs alone: the sgemm Triax's CPU runtime calls
(OpenBLAS's cblas_sgemm, one thread) against PyTorch's (torch.matmul, MKL's
sgemm on x86), shape by shape, alternated round by round.

    python3 bench/cpu/gemm.py [--rounds 2] [--reps 40] [--coretype SkylakeX]

The shapes are those of `bench/cpu/run.py --models small` (tokens 512,
hidden 256, MLP 1024): forward NN, the input gradients NT, the weight
gradients TN. A C program linked with -lopenblas times OpenBLAS (with
OPENBLAS_CORETYPE set as the runtime's core check sets it on CPUs where
Debian's OpenBLAS 0.3.21 would fall back to SSE kernels; --coretype ''
leaves OpenBLAS's own choice); PyTorch runs in bench/cpu/.venv (run.py
creates it). Prints ms per call for each shape, the sums, and the ratio
OpenBLAS / PyTorch (> 1: OpenBLAS is slower).
"""
import argparse
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))

# (M, N, K, transA, transB)
SHAPES = [(512, 256, 256, 0, 0), (512, 1024, 256, 0, 0), (512, 256, 1024, 0, 0),
          (512, 256, 256, 0, 1), (512, 1024, 256, 0, 1), (512, 256, 1024, 0, 1),
          (256, 256, 512, 1, 0), (256, 1024, 512, 1, 0), (1024, 256, 512, 1, 0)]

C_SOURCE = r"""
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static double now(void) {
  struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}
int main(int argc, char **argv) {
  int reps = atoi(argv[1]);
  for (int s = 2; s + 4 < argc; s += 5) {
    int M = atoi(argv[s]), N = atoi(argv[s + 1]), K = atoi(argv[s + 2]);
    int ta = atoi(argv[s + 3]), tb = atoi(argv[s + 4]);
    float *A = malloc(4L * M * K), *B = malloc(4L * K * N), *C = malloc(4L * M * N);
    for (long i = 0; i < (long)M * K; i++) A[i] = (i % 7) * 0.1f;
    for (long i = 0; i < (long)K * N; i++) B[i] = (i % 5) * 0.1f;
    int lda = ta ? M : K, ldb = tb ? K : N;
    enum CBLAS_TRANSPOSE a = ta ? CblasTrans : CblasNoTrans, b = tb ? CblasTrans : CblasNoTrans;
    for (int r = 0; r < 3; r++)
      cblas_sgemm(CblasRowMajor, a, b, M, N, K, 1, A, lda, B, ldb, 0, C, N);
    double t0 = now();
    for (int r = 0; r < reps; r++)
      cblas_sgemm(CblasRowMajor, a, b, M, N, K, 1, A, lda, B, ldb, 0, C, N);
    printf("%.6f\n", (now() - t0) / reps * 1e3);
    free(A); free(B); free(C);
  }
  return 0;
}
"""

TORCH_SOURCE = r"""
import sys, time, torch
torch.set_num_threads(1)
reps = int(sys.argv[1]); v = [int(x) for x in sys.argv[2:]]
for s in range(0, len(v), 5):
    M, N, K, ta, tb = v[s:s + 5]
    a = torch.randn(K, M).t() if ta else torch.randn(M, K)
    b = torch.randn(N, K).t() if tb else torch.randn(K, N)
    for _ in range(3): c = a @ b
    t = time.perf_counter()
    for _ in range(reps): c = a @ b
    print("%.6f" % ((time.perf_counter() - t) / reps * 1e3), flush=True)
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--reps", type=int, default=40)
    ap.add_argument("--coretype", default="SkylakeX",
                    help="OPENBLAS_CORETYPE for the OpenBLAS runs ('' = OpenBLAS's choice)")
    ap.add_argument("--venv", default=os.path.join(HERE, ".venv"))
    a = ap.parse_args()
    py = os.path.join(a.venv, "bin", "python")
    if not os.path.exists(py):
        sys.exit("gemm.py: no %s; run bench/cpu/run.py once to create the peers' venv" % py)
    args = [str(a.reps)] + [str(x) for shape in SHAPES for x in shape]
    with tempfile.TemporaryDirectory(prefix="triax-gemm-") as tmp:
        src, exe = os.path.join(tmp, "gemm.c"), os.path.join(tmp, "gemm")
        open(src, "w").write(C_SOURCE)
        subprocess.run(["cc", "-O2", src, "-o", exe, "-lopenblas"], check=True)
        env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
        if a.coretype:
            env["OPENBLAS_CORETYPE"] = a.coretype
        blas, torch = [], []
        for r in range(a.rounds):
            out = subprocess.run([exe] + args, env=env, check=True, capture_output=True, text=True)
            blas.append([float(x) for x in out.stdout.split()])
            out = subprocess.run([py, "-c", TORCH_SOURCE] + args, check=True,
                                 capture_output=True, text=True)
            torch.append([float(x) for x in out.stdout.split()])
            print("round %d: OpenBLAS %.2f ms, PyTorch %.2f ms for the %d shapes"
                  % (r + 1, sum(blas[-1]), sum(torch[-1]), len(SHAPES)), flush=True)
    med = lambda xs: sorted(xs)[len(xs) // 2]
    print("\n| M | N | K | op | OpenBLAS ms | PyTorch ms | OpenBLAS / PyTorch |")
    print("|---|---|---|---|---|---|---|")
    for i, (M, N, K, ta, tb) in enumerate(SHAPES):
        b, t = med([x[i] for x in blas]), med([x[i] for x in torch])
        print("| %d | %d | %d | %s%s | %.3f | %.3f | %.2f |"
              % (M, N, K, "T" if ta else "N", "T" if tb else "N", b, t, b / t))
    b, t = med([sum(x) for x in blas]), med([sum(x) for x in torch])
    print("| all | | | | %.3f | %.3f | %.2f |" % (b, t, b / t))


if __name__ == "__main__":
    sys.exit(main())
