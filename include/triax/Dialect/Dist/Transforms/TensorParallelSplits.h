//===- TensorParallelSplits.h - The tensor-parallel split rule --*- C++ -*-===//
//
// The one tensor-parallel split rule: dist-tensor-parallel plans its
// rewrite with it, and the planner's model shape (lib/CostModel/
// ModelShape.cpp) asks it which parameters tp cuts, so the two cannot
// disagree.
//
//===----------------------------------------------------------------------===//

#ifndef TRIAX_DIALECT_DIST_TRANSFORMS_TENSORPARALLELSPLITS_H
#define TRIAX_DIALECT_DIST_TRANSFORMS_TENSORPARALLELSPLITS_H

#include "triax/Dialect/Triax/IR/Triax.h"

#include "llvm/ADT/MapVector.h"

namespace mlir::dist {

/// The parameters dist-tensor-parallel splits in `model` (before autodiff)
/// over a group of `tp` ranks, each with the dimension it splits: the
/// column/row linear pairs (weights, and the columns' biases), the LM
/// heads and the vocab-parallel embeddings. Fails, with the pass's error on
/// the op, where the model cannot be split (tp = 1 checks the structure
/// alone: no divisibility).
FailureOr<llvm::MapVector<StringAttr, int64_t>>
tensorParallelSplits(triax::ModelOp model, int64_t tp);

} // namespace mlir::dist

#endif // TRIAX_DIALECT_DIST_TRANSFORMS_TENSORPARALLELSPLITS_H
