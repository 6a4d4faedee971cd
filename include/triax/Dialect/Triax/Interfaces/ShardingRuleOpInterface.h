//===- ShardingRuleOpInterface.h - How an op splits -------------*- C++ -*-===//

#ifndef TRIAX_DIALECT_TRIAX_INTERFACES_SHARDINGRULEOPINTERFACE_H
#define TRIAX_DIALECT_TRIAX_INTERFACES_SHARDINGRULEOPINTERFACE_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/OpDefinition.h"
#include "llvm/ADT/SmallVector.h"

#include <string>

namespace mlir::triax {

/// The dimension of the activations a mesh axis splits.
enum class SplitDim {
  /// The tokens: dimension 1 of `[batch, seq, ...]` (sequence and context
  /// parallelism).
  Sequence,
  /// The last dimension: hidden columns, heads, vocabulary (tensor
  /// parallelism).
  Feature,
};

/// The dimension index `dim` splits in a tensor of rank `rank`.
inline int64_t splitDimIndex(SplitDim dim, int64_t rank) {
  return dim == SplitDim::Sequence ? 1 : rank - 1;
}

/// What an op does with a member's slice along a SplitDim
/// (ShardingRuleOpInterface::getSplitRule).
struct SplitRule {
  enum class Kind {
    /// It cannot run on the slice; `reason` says why.
    Refused,
    /// It runs on the slice as on the whole: each result holds the same
    /// slice (each token, or each feature, on its own).
    Local,
    /// Local along the features in whole attention heads: applySplit
    /// divides the op's head counts.
    Heads,
    /// It needs the whole of the operands in `gathered` (attention's keys
    /// and values along the sequence); the others and the results hold the
    /// slice. The pass gathers them over the group.
    Gather,
    /// A mean over the split dimension: each member's result is the mean
    /// of its slice, and with equal slices the whole mean is the group's
    /// sum of result / n. The pass builds that sum.
    PartialMean,
  };
  Kind kind = Kind::Refused;
  llvm::SmallVector<unsigned, 2> gathered;
  std::string reason;
  /// Gather: the op can instead keep the member's own slices of
  /// `gathered` and pass them around the group's ring itself (ring
  /// attention; applyRingSplit).
  bool ring = false;

  static SplitRule local() { return {Kind::Local, {}, {}}; }
  static SplitRule heads() { return {Kind::Heads, {}, {}}; }
  static SplitRule partialMean() { return {Kind::PartialMean, {}, {}}; }
  static SplitRule gather(llvm::ArrayRef<unsigned> operands,
                          bool ring = false) {
    return {Kind::Gather, {operands.begin(), operands.end()}, {}, ring};
  }
  static SplitRule refused(const llvm::Twine &reason) {
    return {Kind::Refused, {}, reason.str()};
  }
  /// The rule of an op that states none: local when it is Elementwise,
  /// refused otherwise.
  static SplitRule byTraits(Operation *op, SplitDim dim);
};

/// The rule of `op` (ShardingRuleOpInterface, or SplitRule::byTraits for an
/// op without the interface).
SplitRule getSplitRule(Operation *op, SplitDim dim);

} // namespace mlir::triax

#include "triax/Dialect/Triax/Interfaces/ShardingRuleOpInterface.h.inc"

#endif // TRIAX_DIALECT_TRIAX_INTERFACES_SHARDINGRULEOPINTERFACE_H
