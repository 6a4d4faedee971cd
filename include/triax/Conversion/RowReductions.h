//===- RowReductions.h - Row loops that carry their own combine -*- C++ -*-===//
//
// A contract between the kernel lowering (convert-triax-to-kernels), which
// writes row loops, and triax-map-loops-to-gpu, which splits a row loop over
// the threads of a block and must then combine the threads' partial
// results. Plain reductions (each iter_arg `combine(acc, x)` with addf,
// maximumf, ...) are recognized from their ops; a loop whose step is not
// one such op says what it computes with an attribute.
//
//===----------------------------------------------------------------------===//

#ifndef TRIAX_CONVERSION_ROWREDUCTIONS_H
#define TRIAX_CONVERSION_ROWREDUCTIONS_H

#include "llvm/ADT/StringRef.h"

namespace mlir::triax {

/// Unit attribute on an `scf.for` over a row with two float iter_args
/// (m, s) whose body absorbs one element x in the online softmax's way: m'
/// = max(m, x), s' = s exp(m - m') + exp(x - m'). Its identity is (-inf, 0)
/// and two partial states combine as M = max(m1, m2), S = s1 exp(m1 - M) +
/// s2 exp(m2 - M) (a state with s = 0 contributes nothing). The
/// cross-entropy kernels' row max and softmax denominator (LossKernels.cpp,
/// rowMaxSumExp) are such loops.
inline constexpr llvm::StringLiteral kOnlineMaxSumExpAttr =
    "triax_online_max_sum_exp";

} // namespace mlir::triax

#endif // TRIAX_CONVERSION_ROWREDUCTIONS_H
