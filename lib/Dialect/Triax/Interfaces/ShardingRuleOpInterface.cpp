//===- ShardingRuleOpInterface.cpp ----------------------------------------===//

#include "triax/Dialect/Triax/Interfaces/ShardingRuleOpInterface.h"

using namespace mlir;
using namespace mlir::triax;

SplitRule SplitRule::byTraits(Operation *op, SplitDim dim) {
  if (op->hasTrait<OpTrait::Elementwise>())
    return local();
  return refused(dim == SplitDim::Sequence
                     ? "this op has no rule for running on a slice of the "
                       "sequence (ShardingRuleOpInterface)"
                     : "this op has no rule for running on a slice of the "
                       "features (ShardingRuleOpInterface)");
}

SplitRule mlir::triax::getSplitRule(Operation *op, SplitDim dim) {
  if (auto rule = dyn_cast<ShardingRuleOpInterface>(op))
    return rule.getSplitRule(dim);
  return SplitRule::byTraits(op, dim);
}

#include "triax/Dialect/Triax/Interfaces/ShardingRuleOpInterface.cpp.inc"
