//===- gemm_padding.cpp - A GEMM on padded, aligned copies ----------------===//
//
// See gemm_padding.h.
//
//===----------------------------------------------------------------------===//

#include "gemm_padding.h"

namespace {

int64_t roundUp(int64_t n, int64_t m) { return (n + m - 1) / m * m; }

bool rowsAligned(const void *p, int64_t ld, size_t elem) {
  return uintptr_t(p) % 16 == 0 && (size_t(ld) * elem) % 16 == 0;
}

/// An operand of `rows` x `cols` (the copy `paddedRows` x `paddedCols`).
triax::rt::PaddedOperand operand(bool staged, int64_t rows, int64_t cols,
                                 int64_t ld, int64_t paddedRows,
                                 int64_t paddedCols, size_t elem) {
  triax::rt::PaddedOperand o;
  o.staged = staged;
  o.rows = rows;
  o.cols = cols;
  o.ld = ld;
  o.paddedRows = paddedRows;
  o.paddedLd = roundUp(paddedCols, int64_t(16 / elem));
  o.elem = elem;
  return o;
}

} // namespace

bool triax::rt::planPaddedGemm(const trx_gemm_problem &p, PaddedGemm &plan) {
  if (p.batch != 1 || p.bias || p.epilogue != TRX_GEMM_EPI_NONE)
    return false;
  const size_t ab = p.type == TRX_GEMM_F32 ? 4 : 2;
  const size_t ce = p.type == TRX_GEMM_BF16 ? 2 : 4;
  // M, N and K in whole 16-byte groups of the narrower element.
  const int64_t group = int64_t(16 / (ab < ce ? ab : ce));
  const int64_t M = roundUp(p.M, group), N = roundUp(p.N, group),
                K = roundUp(p.K, group);
  const bool padA = !rowsAligned(p.A, p.lda, ab) || M != p.M || K != p.K;
  const bool padB = !rowsAligned(p.B, p.ldb, ab) || K != p.K || N != p.N;
  const bool padC = !rowsAligned(p.C, p.ldc, ce) || M != p.M || N != p.N;
  if (!padA && !padB && !padC)
    return false;
  plan.problem = p;
  plan.problem.M = M;
  plan.problem.N = N;
  plan.problem.K = K;
  plan.a = p.transA ? operand(padA, p.K, p.M, p.lda, K, M, ab)
                    : operand(padA, p.M, p.K, p.lda, M, K, ab);
  plan.b = p.transB ? operand(padB, p.N, p.K, p.ldb, N, K, ab)
                    : operand(padB, p.K, p.N, p.ldb, K, N, ab);
  plan.c = operand(padC, p.M, p.N, p.ldc, M, N, ce);
  return true;
}
