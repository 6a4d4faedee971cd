//===- StagePartition.h - The pipeline's stages by FLOPs --------*- C++ -*-===//
//
// The one rule that cuts a model's blocks into pipeline stages:
// dist-pipeline partitions with it, and the planner (lib/CostModel/
// Planner.cpp) asks it which blocks each stage holds, so the two cannot
// disagree.
//
//===----------------------------------------------------------------------===//

#ifndef TRIAX_DIALECT_DIST_TRANSFORMS_STAGEPARTITION_H
#define TRIAX_DIALECT_DIST_TRANSFORMS_STAGEPARTITION_H

#include "mlir/IR/Operation.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/SmallVector.h"

namespace mlir::dist {

/// The forward FLOPs of `root` and the ops nested in it, as each op states
/// them (triax's CostOpInterface: linears and attention; the rest counts as
/// free).
double forwardFlops(Operation *root);

/// What the cut weighs: the forward FLOPs of each top-level block of
/// `body` (a model's forward function), and of the ops before the first
/// and after the last, counting only the ops `counts` accepts (all when
/// null).
struct BlockCosts {
  llvm::SmallVector<double> blocks;
  double before = 0, after = 0;
};
BlockCosts weighBlocks(Block &body,
                       llvm::function_ref<bool(Operation *)> counts = nullptr);

/// The contiguous cut of `costs` (one per block, in order) into `parts`
/// non-empty groups that minimises the most expensive group, `first` added
/// to the first group and `last` to the last (the embeddings, the head and
/// the loss); among equal cuts, each group starts as early as it can.
/// Returns the blocks per group. Needs 1 <= parts <= costs.size().
llvm::SmallVector<int64_t> balanceStages(llvm::ArrayRef<double> costs,
                                         int64_t parts, double first,
                                         double last);

} // namespace mlir::dist

#endif // TRIAX_DIALECT_DIST_TRANSFORMS_STAGEPARTITION_H
