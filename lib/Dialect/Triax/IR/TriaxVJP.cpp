//===- TriaxVJP.cpp - Vector-Jacobian products of the layer ops -----------===//
//
// Each layer op states how it differentiates (DifferentiableOpInterface);
// triax-autodiff only walks the graph. The backward of the expensive ops
// (attention, norms) recomputes their internals from the forward inputs
// rather than keeping them: that is what the memory accounting assumes.
//
//===----------------------------------------------------------------------===//

#include "triax/Dialect/Triax/IR/Triax.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

using namespace mlir;
using namespace mlir::triax;

LogicalResult EmbeddingOp::buildVJP(OpBuilder &b, ValueRange resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  // A vocab-parallel lookup has a vocab-parallel gradient: this rank's rows.
  Value table =
      EmbeddingGradOp::create(b, getLoc(), getTable().getType(), getIndices(),
                              resultGrads[0], getMeshAttr(), getAxesAttr());
  operandGrads.assign({Value(), table});
  return success();
}

LogicalResult LinearOp::buildVJP(OpBuilder &b, ValueRange resultGrads,
                                 SmallVectorImpl<Value> &operandGrads) {
  Value dy = resultGrads[0];
  bool transposed = getTransposeWeight();
  // dx = dy W^T: the same weight read the other way round.
  Value dx =
      LinearOp::create(b, getLoc(), getInput().getType(), dy, getWeight(),
                       Value(), transposed ? UnitAttr() : b.getUnitAttr());
  Value dw =
      LinearWeightGradOp::create(b, getLoc(), getWeight().getType(), getInput(),
                                 dy, transposed ? b.getUnitAttr() : UnitAttr());
  operandGrads.assign({dx, dw});
  if (Value bias = getBias())
    operandGrads.push_back(BiasGradOp::create(b, getLoc(), bias.getType(), dy));
  return success();
}

LogicalResult LayerNormOp::buildVJP(OpBuilder &b, ValueRange resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  auto grad = LayerNormGradOp::create(
      b, getLoc(), getInput().getType(), getWeight().getType(),
      getBias().getType(), getInput(), getWeight(), resultGrads[0], getStats(),
      getEpsAttr());
  operandGrads.assign(grad->result_begin(), grad->result_end());
  return success();
}

LogicalResult RMSNormOp::buildVJP(OpBuilder &b, ValueRange resultGrads,
                                  SmallVectorImpl<Value> &operandGrads) {
  auto grad = RMSNormGradOp::create(
      b, getLoc(), getInput().getType(), getWeight().getType(), getInput(),
      getWeight(), resultGrads[0], getStats(), getEpsAttr());
  operandGrads.assign(grad->result_begin(), grad->result_end());
  return success();
}

/// The type of a norm's per-row statistic for input `x` [..., H]: [...]
/// f32; null for a rank-1 input (one row: nothing worth keeping).
static RankedTensorType rowStatType(Value x) {
  auto type = cast<RankedTensorType>(x.getType());
  if (type.getRank() < 2)
    return {};
  return RankedTensorType::get(type.getShape().drop_back(),
                               Float32Type::get(x.getContext()));
}

// The forward's row statistics, which the gradient would compute again.
Operation *LayerNormOp::buildWithResiduals(OpBuilder &b) {
  RankedTensorType stat = rowStatType(getInput());
  if (!getStats().empty() || !stat)
    return nullptr;
  return LayerNormOp::create(b, getLoc(), getResult().getType(),
                             TypeRange{stat, stat}, getInput(), getWeight(),
                             getBias(), getEpsAttr());
}

unsigned LayerNormOp::getNumResiduals() { return getStats().size(); }

Operation *RMSNormOp::buildWithResiduals(OpBuilder &b) {
  RankedTensorType stat = rowStatType(getInput());
  if (!getStats().empty() || !stat)
    return nullptr;
  return RMSNormOp::create(b, getLoc(), getResult().getType(), TypeRange{stat},
                           getInput(), getWeight(), getEpsAttr());
}

unsigned RMSNormOp::getNumResiduals() { return getStats().size(); }

LogicalResult RopeOp::buildVJP(OpBuilder &b, ValueRange resultGrads,
                               SmallVectorImpl<Value> &operandGrads) {
  // A rotation's transpose is its inverse.
  Value dx = RopeOp::create(b, getLoc(), getType(), resultGrads[0],
                            getPositions(), getHeadsAttr(), getThetaAttr(),
                            getInverse() ? UnitAttr() : b.getUnitAttr());
  operandGrads.assign({dx, Value()});
  return success();
}

LogicalResult AttentionOp::buildVJP(OpBuilder &b, ValueRange resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  // Context-parallel: the keys and values were gathered from the group for
  // this attention alone. Its gradient gathers them again (a clone of the
  // pure op that gathered them) instead of keeping the whole sequence's
  // until the backward: only this member's are kept, as a ring passes the
  // blocks around again in its backward.
  // (A ring attention's keys and values are the member's own: its
  // gradient passes them around the ring again itself.)
  auto regathered = [&](Value v) -> Value {
    Operation *def = v.getDefiningOp();
    if (!getMeshAttr() || getRing() || !def || def->getNumOperands() != 1 ||
        !def->hasOneUse() || !isPure(def))
      return v;
    return b.clone(*def)->getResult(0);
  };
  Value key = regathered(getKey());
  Value value = regathered(getValue());
  // (The forward's output and rows' log-sum-exp where this is the copy
  // buildWithResiduals made: the backward then does not run the forward's
  // loop again.)
  SmallVector<Value, 2> saved;
  if (Value lse = getLse())
    saved = {getResult(), lse};
  auto grad = AttentionGradOp::create(
      b, getLoc(), getQuery().getType(), key.getType(), value.getType(),
      getQuery(), key, value, resultGrads[0], saved, getHeadsAttr(),
      getKvHeadsAttr(), getMeshAttr(), getAxesAttr(), getRingAttr());
  operandGrads.assign(grad->result_begin(), grad->result_end());
  return success();
}

/// The rows' log-sum-exp type of an attention with query `q` [B, S, ...]:
/// [B, heads, S] f32.
static RankedTensorType lseType(RankedTensorType q, int64_t heads) {
  return RankedTensorType::get({q.getDimSize(0), heads, q.getDimSize(1)},
                               Float32Type::get(q.getContext()));
}

// FlashAttention-2's forward keeps each row's log-sum-exp with the output
// (a ring attention's backward then needs no trip around the ring for it).
Operation *AttentionOp::buildWithResiduals(OpBuilder &b) {
  if (getLse())
    return nullptr;
  return AttentionOp::create(b, getLoc(), getResult().getType(),
                             lseType(getQuery().getType(), getHeads()),
                             getQuery(), getKey(), getValue(), getHeadsAttr(),
                             getKvHeadsAttr(), getMeshAttr(), getAxesAttr(),
                             getRingAttr());
}

unsigned AttentionOp::getNumResiduals() { return getLse() ? 1 : 0; }

// The attention core: its output (like the probabilities, which
// triax.attention_grad recomputes anyway) is cheap to redo from q, k and v,
// which its gradient keeps.
bool AttentionOp::isRecomputedSelectively() { return true; }

LogicalResult GeluOp::buildVJP(OpBuilder &b, ValueRange resultGrads,
                               SmallVectorImpl<Value> &operandGrads) {
  operandGrads.assign(
      {GeluGradOp::create(b, getLoc(), getType(), getInput(), resultGrads[0])
           .getResult()});
  return success();
}

LogicalResult SiluOp::buildVJP(OpBuilder &b, ValueRange resultGrads,
                               SmallVectorImpl<Value> &operandGrads) {
  operandGrads.assign(
      {SiluGradOp::create(b, getLoc(), getType(), getInput(), resultGrads[0])
           .getResult()});
  return success();
}

LogicalResult AddOp::buildVJP(OpBuilder &b, ValueRange resultGrads,
                              SmallVectorImpl<Value> &operandGrads) {
  operandGrads.assign({resultGrads[0], resultGrads[0]});
  return success();
}

LogicalResult BiasAddOp::buildVJP(OpBuilder &b, ValueRange resultGrads,
                                  SmallVectorImpl<Value> &operandGrads) {
  Value dy = resultGrads[0];
  operandGrads.assign(
      {dy, BiasGradOp::create(b, getLoc(), getBias().getType(), dy)});
  return success();
}

LogicalResult MulOp::buildVJP(OpBuilder &b, ValueRange resultGrads,
                              SmallVectorImpl<Value> &operandGrads) {
  Value dy = resultGrads[0];
  operandGrads.assign({MulOp::create(b, getLoc(), getType(), dy, getRhs()),
                       MulOp::create(b, getLoc(), getType(), dy, getLhs())});
  return success();
}

LogicalResult CrossEntropyOp::buildVJP(OpBuilder &b, ValueRange resultGrads,
                                       SmallVectorImpl<Value> &operandGrads) {
  Value dlogits = CrossEntropyGradOp::create(
      b, getLoc(), getLogits().getType(), getLogits(), getTargets(),
      resultGrads[0], getMeshAttr(), getAxesAttr(), getClassesAttr());
  operandGrads.assign({dlogits, Value()});
  return success();
}

//===----------------------------------------------------------------------===//
// Mixture of experts
//===----------------------------------------------------------------------===//

Value mlir::triax::createFloatSplat(OpBuilder &b, Location loc, Type type,
                                    double value) {
  auto tensor = cast<RankedTensorType>(type);
  return arith::ConstantOp::create(
      b, loc,
      DenseElementsAttr::get(tensor,
                             FloatAttr::get(tensor.getElementType(), value)));
}

// The routing (experts, slots, assign) is piecewise constant: only the
// gates and the auxiliary loss carry a gradient back to the logits.
LogicalResult MoERouteOp::buildVJP(OpBuilder &b, ValueRange resultGrads,
                                   SmallVectorImpl<Value> &operandGrads) {
  // (A result whose gradient nothing produced: zeros.)
  Value dgates = resultGrads[0]
                     ? resultGrads[0]
                     : createFloatSplat(b, getLoc(), getGates().getType(), 0.0);
  Value daux = resultGrads[4]
                   ? resultGrads[4]
                   : createFloatSplat(b, getLoc(), getAux().getType(), 0.0);
  Value dlogits = MoERouteGradOp::create(
      b, getLoc(), getLogits().getType(), getLogits(), getExperts(), dgates,
      daux, getAuxCoeffAttr(), getRenormalizeAttr());
  operandGrads.assign({dlogits});
  return success();
}

// A dispatch is a gather by `assign`; its gradient gathers back by `slots`
// (a combine), and the gates' (a weighted dispatch: a combine's gradient)
// are dot products of the tokens with their rows' gradients.
LogicalResult MoEDispatchOp::buildVJP(OpBuilder &b, ValueRange resultGrads,
                                      SmallVectorImpl<Value> &operandGrads) {
  Value dbuf = resultGrads[0];
  Value dx = MoECombineOp::create(b, getLoc(), getInput().getType(), dbuf,
                                  getSlots(), getAssign(), getGates());
  operandGrads.assign({dx, Value(), Value()});
  if (Value gates = getGates())
    operandGrads.push_back(MoEGatesGradOp::create(
        b, getLoc(), gates.getType(), getInput(), dbuf, getSlots()));
  return success();
}

LogicalResult MoECombineOp::buildVJP(OpBuilder &b, ValueRange resultGrads,
                                     SmallVectorImpl<Value> &operandGrads) {
  Value dy = resultGrads[0];
  Value dbuf = MoEDispatchOp::create(b, getLoc(), getInput().getType(), dy,
                                     getSlots(), getAssign(), getGates());
  operandGrads.assign({dbuf, Value(), Value()});
  if (Value gates = getGates())
    operandGrads.push_back(MoEGatesGradOp::create(b, getLoc(), gates.getType(),
                                                  dy, getInput(), getSlots()));
  return success();
}

LogicalResult ExpertLinearOp::buildVJP(OpBuilder &b, ValueRange resultGrads,
                                       SmallVectorImpl<Value> &operandGrads) {
  Value dy = resultGrads[0];
  bool transposed = getTransposeWeight();
  Value dx =
      ExpertLinearOp::create(b, getLoc(), getInput().getType(), dy, getWeight(),
                             transposed ? UnitAttr() : b.getUnitAttr());
  Value dw = ExpertLinearWeightGradOp::create(
      b, getLoc(), getWeight().getType(), getInput(), dy,
      transposed ? b.getUnitAttr() : UnitAttr(), /*scale=*/FloatAttr());
  operandGrads.assign({dx, dw});
  return success();
}
