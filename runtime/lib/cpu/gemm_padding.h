//===- gemm_padding.h - A GEMM on padded, aligned copies --------*- C++ -*-===//
//
// cuBLASLt's Hopper kernels want 16-byte aligned rows and dimensions that
// are multiples of 16 bytes of elements; with less, its heuristic falls
// back to older architectures' kernels (on the H200 gpt2's vocabulary of
// 50,257 put the LM head's GEMMs on sm_75 `align1` kernels: 22.8 ms of a
// 142 ms step). planPaddedGemm says how to run such a problem on copies
// whose rows are padded to 16 bytes and whose M, N and K are rounded up to
// whole 16-byte groups, the padding zero: the extra K products add 0, the
// extra rows and columns of C are computed and dropped. It only plans (the
// CUDA backend copies, runtime/lib/cuda/blas.cpp; the CPU test runs the
// plan on host copies through the CPU backend, runtime/test/kernel_test.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef TRIAX_RT_GEMM_PADDING_H
#define TRIAX_RT_GEMM_PADDING_H

#include "triax_rt.h"

#include <cstddef>
#include <cstdint>

namespace triax::rt {

/// One operand of a padded GEMM: `rows` x `cols` elements of `elem` bytes
/// at row stride `ld` in the caller's buffer; in the copy, `paddedRows`
/// rows of row stride `paddedLd` (16-byte rows holding the padded
/// columns), zero past rows x cols.
struct PaddedOperand {
  bool staged = false;
  int64_t rows = 0, cols = 0, ld = 0;
  int64_t paddedRows = 0, paddedLd = 0;
  size_t elem = 0;
  /// Bytes of the copy.
  size_t bytes() const { return size_t(paddedRows) * size_t(paddedLd) * elem; }
};

/// The padded problem (its A, B and C still the caller's: a staged
/// operand's pointer and leading dimension are the copy's to set) and how
/// each operand is copied. C is copied in only when beta is not 0.
struct PaddedGemm {
  trx_gemm_problem problem;
  PaddedOperand a, b, c;
};

/// Whether `p` (batch 1, no bias, no epilogue) has an operand whose rows
/// are not 16-byte aligned, or an M, N or K that is not a whole number of
/// 16-byte groups of its elements; if so, fills `plan`. Other problems run
/// as they are (false).
bool planPaddedGemm(const trx_gemm_problem &p, PaddedGemm &plan);

} // namespace triax::rt

#endif // TRIAX_RT_GEMM_PADDING_H
