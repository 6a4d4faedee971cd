//===- DistSharding.cpp - How the collectives split along the sequence ----===//
//
// ShardingRuleOpInterface of the dist ops. Along the sequence every
// collective is local: one over another group (dp, tp) works token by token,
// and one along the sequence over another group (sequence parallelism's
// all_gather and reduce_scatter over tp, a shard_sequence) works within the
// tokens a context-parallel member holds. Along the features the dist ops
// take the default (refused): dist-tensor-parallel runs first and builds
// them.
//
//===----------------------------------------------------------------------===//

#include "triax/Dialect/Dist/IR/Dist.h"

using namespace mlir;
using namespace mlir::dist;
using mlir::triax::SplitDim;
using mlir::triax::SplitRule;

namespace {
SplitRule tokenwise(Operation *op, SplitDim dim) {
  return dim == SplitDim::Sequence ? SplitRule::local()
                                   : SplitRule::byTraits(op, dim);
}
} // namespace

SplitRule AllReduceOp::getSplitRule(SplitDim dim) {
  return tokenwise(*this, dim);
}

SplitRule CopyToGroupOp::getSplitRule(SplitDim dim) {
  return tokenwise(*this, dim);
}

SplitRule AllGatherOp::getSplitRule(SplitDim dim) {
  return tokenwise(*this, dim);
}

SplitRule ReduceScatterOp::getSplitRule(SplitDim dim) {
  return tokenwise(*this, dim);
}

SplitRule ShardSequenceOp::getSplitRule(SplitDim dim) {
  return tokenwise(*this, dim);
}
