//===- DistVJP.cpp - Vector-Jacobian products of the collectives ----------===//
//
// The collectives differentiate like the ops of the triax dialect, through
// DifferentiableOpInterface, so that triax-autodiff derives the backward
// collectives of a tensor-parallel forward (Megatron's conjugate pairs f/g)
// without knowing about meshes:
//
//   forward                      backward (vector-Jacobian product)
//   dist.copy_to_group     (f)   dist.all_reduce sum
//   dist.all_reduce sum    (g)   identity
//   dist.all_gather dim d        dist.reduce_scatter sum dim d
//     ... replicated_grad        dist.shard_sequence dim d contiguous
//   dist.reduce_scatter sum      dist.all_gather
//
// The identity for all_reduce relies on the cotangent of its result being
// the same on every member of the group (DistOps.td says why that holds).
//
//===----------------------------------------------------------------------===//

#include "triax/Dialect/Dist/IR/Dist.h"

#include "mlir/IR/Builders.h"

using namespace mlir;
using namespace mlir::dist;

LogicalResult AllReduceOp::buildVJP(OpBuilder &b, ValueRange resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  Value dy = resultGrads[0];
  switch (getReduction()) {
  case ReductionKind::sum:
    operandGrads.assign({dy});
    return success();
  case ReductionKind::avg: // (dy / group: not needed by any pass yet)
  case ReductionKind::max:
  case ReductionKind::min:
    break;
  }
  return emitOpError("a '")
         << stringifyReductionKind(getReduction())
         << "' all_reduce is not differentiable; only 'sum' is";
}

LogicalResult CopyToGroupOp::buildVJP(OpBuilder &b, ValueRange resultGrads,
                                      SmallVectorImpl<Value> &operandGrads) {
  Value dy = resultGrads[0];
  operandGrads.assign(
      {AllReduceOp::create(b, getLoc(), dy.getType(), ReductionKind::sum, dy,
                           getMesh(), getAxes())
           .getResult()});
  return success();
}

LogicalResult AllGatherOp::buildVJP(OpBuilder &b, ValueRange resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  // The same cotangent on every member: this member's slice of it.
  if (getReplicatedGrad()) {
    operandGrads.assign(
        {ShardSequenceOp::create(b, getLoc(), getInput().getType(),
                                 resultGrads[0], getMesh(), getAxes(), getDim(),
                                 /*contiguous=*/true)
             .getResult()});
    return success();
  }
  operandGrads.assign(
      {ReduceScatterOp::create(b, getLoc(), getInput().getType(),
                               ReductionKind::sum, resultGrads[0], getMesh(),
                               getAxes(), getDim())
           .getResult()});
  return success();
}

// The inverse exchange: member i's slice of the result came from member i.
LogicalResult AllToAllOp::buildVJP(OpBuilder &b, ValueRange resultGrads,
                                   SmallVectorImpl<Value> &operandGrads) {
  operandGrads.assign(
      {AllToAllOp::create(b, getLoc(), getInput().getType(), resultGrads[0],
                          getMeshAttr(), getAxes(), getConcatDimAttr(),
                          getSplitDimAttr())
           .getResult()});
  return success();
}

// Gathered only for ops that are recomputed (context parallelism's keys and
// values for the attention core): gathered again with them.
bool AllGatherOp::isRecomputedSelectively() {
  return !getResult().use_empty() &&
         llvm::all_of(getResult().getUsers(), [](Operation *user) {
           auto differentiable =
               dyn_cast<mlir::triax::DifferentiableOpInterface>(user);
           return differentiable && differentiable.isRecomputedSelectively();
         });
}

// The gathered tensor is the group's times the operand: the backward keeps
// the operand and gathers again.
bool AllGatherOp::isRecomputedAlways() { return true; }

LogicalResult ReduceScatterOp::buildVJP(OpBuilder &b, ValueRange resultGrads,
                                        SmallVectorImpl<Value> &operandGrads) {
  if (getReduction() != ReductionKind::sum)
    return emitOpError("a '")
           << stringifyReductionKind(getReduction())
           << "' reduce_scatter is not differentiable; only 'sum' is";
  operandGrads.assign(
      {AllGatherOp::create(b, getLoc(), getInput().getType(), resultGrads[0],
                           getMesh(), getAxes(), getDim())
           .getResult()});
  return success();
}
