//===- DistSharding.cpp - How the collectives split along the sequence ----===//
//
// ShardingRuleOpInterface of the dist ops. A collective over another group
// (dp, tp) works token by token, so it is local along the sequence; one
// that splits or gathers the sequence itself (sequence parallelism's, or
// context parallelism's dist.shard_sequence) means the sequence is split
// already. Along the features the dist ops take the default (refused):
// dist-tensor-parallel runs first and builds them.
//
//===----------------------------------------------------------------------===//

#include "triax/Dialect/Dist/IR/Dist.h"

using namespace mlir;
using namespace mlir::dist;
using mlir::triax::SplitDim;
using mlir::triax::SplitRule;

namespace {
SplitRule alongSequence(Operation *op, SplitDim dim, int64_t collectiveDim) {
  if (dim != SplitDim::Sequence)
    return SplitRule::byTraits(op, dim);
  auto type = cast<RankedTensorType>(op->getOperand(0).getType());
  if (collectiveDim == triax::splitDimIndex(dim, type.getRank()))
    return SplitRule::refused(
        "the sequence is already split here (sequence parallelism and "
        "context parallelism together are not supported yet)");
  return SplitRule::local();
}
} // namespace

SplitRule AllReduceOp::getSplitRule(SplitDim dim) {
  return alongSequence(*this, dim, /*collectiveDim=*/-1);
}

SplitRule CopyToGroupOp::getSplitRule(SplitDim dim) {
  return alongSequence(*this, dim, /*collectiveDim=*/-1);
}

SplitRule AllGatherOp::getSplitRule(SplitDim dim) {
  return alongSequence(*this, dim, getDim());
}

SplitRule ReduceScatterOp::getSplitRule(SplitDim dim) {
  return alongSequence(*this, dim, getDim());
}

SplitRule ShardSequenceOp::getSplitRule(SplitDim dim) {
  return alongSequence(*this, dim, getDim());
}
