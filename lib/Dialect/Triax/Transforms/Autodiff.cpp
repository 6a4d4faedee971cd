//===- Autodiff.cpp - Backward graph and AdamW update ---------------------===//
//
// Adds two functions to every model: `@forward_backward`, the forward graph
// and its backward graph (reverse-mode, one vector-Jacobian product per op
// through DifferentiableOpInterface) ending in one `triax.accumulate_grad`
// per parameter; and `@optimizer_step`, the global gradient norm, the
// clipping factor and one `triax.adamw` per parameter. Splitting the two is
// what gradient accumulation and the data-parallel passes act on: the
// gradient buffers between them are what gets reduced across ranks. A
// parameter marked `dist.partial_grad` (sequence parallelism) has its
// gradient summed over its group before it is accumulated.
//
// Assumptions: `@forward` is a single block whose ops are triax layer ops,
// `triax.get_param`, `triax.block` regions and side-effect-free helpers; its
// first result is the loss. A `triax.block` is differentiated into a
// backward `triax.block` named "<name>.grad" whose inputs are the gradients
// of the forward block's results plus the activations it needs; those
// activations become extra results of the forward block so that they are
// explicit values between the two. An op with residuals (values its VJP
// would otherwise compute again, DifferentiableOpInterface::
// buildWithResiduals) is replaced by the copy that returns them first.
//
//===----------------------------------------------------------------------===//

#include "triax/Dialect/Triax/Transforms/Passes.h"

#include "triax/Dialect/Dist/IR/Dist.h"
#include "triax/Dialect/Triax/IR/Triax.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"

#include <limits>

namespace mlir::triax {
#define GEN_PASS_DEF_TRIAXAUTODIFF
#include "triax/Dialect/Triax/Transforms/Passes.h.inc"
} // namespace mlir::triax

using namespace mlir;
using namespace mlir::triax;

namespace {

/// Gradients found so far while walking a region backwards.
struct Gradients {
  /// Gradient of the loss with respect to each forward value.
  DenseMap<Value, Value> values;
  /// Gradient of the loss with respect to each parameter, in the order the
  /// backward pass reaches them.
  llvm::MapVector<StringAttr, Value> params;
};

class Differentiator {
public:
  explicit Differentiator(OpBuilder &builder) : b(builder) {}

  /// Builds, at the builder's insertion point, the backward of `ops` (given
  /// in forward order), starting from the gradients already in `grads`.
  LogicalResult differentiate(ArrayRef<Operation *> ops, Gradients &grads);

private:
  LogicalResult differentiateBlock(BlockOp forward, Gradients &grads);
  Value add(Value existing, Value grad, Location loc) {
    if (!existing)
      return grad;
    return AddOp::create(b, loc, existing.getType(), existing, grad);
  }
  static bool isConstant(Value value) {
    Operation *def = value.getDefiningOp();
    return def && def->hasTrait<OpTrait::ConstantLike>();
  }
  void accumulate(Gradients &grads, Value value, Value grad, Location loc) {
    if (!grad || !isa<FloatType>(getElementTypeOrSelf(value.getType())))
      return;
    // A constant is a leaf: its gradient goes nowhere (see
    // dropConstantGradients).
    if (isConstant(value))
      return;
    grads.values[value] = add(grads.values.lookup(value), grad, loc);
  }
  /// Erases the ops of `op`'s VJP that computed only gradients of constant
  /// operands. Not an op whose result is also another operand's gradient
  /// or one of `resultGrads`: `grads` holds those without an IR use yet
  /// (erasing them left dangling gradients: test/fuzz/autodiff-constant-*).
  static void dropConstantGradients(Operation *op, ValueRange operandGrads,
                                    ValueRange resultGrads) {
    llvm::SmallSetVector<Operation *, 2> dead;
    for (auto [operand, grad] : llvm::zip(op->getOperands(), operandGrads))
      if (grad && isConstant(operand))
        if (Operation *def = grad.getDefiningOp())
          dead.insert(def);
    for (auto [operand, grad] : llvm::zip(op->getOperands(), operandGrads))
      if (grad && !isConstant(operand))
        dead.remove(grad.getDefiningOp());
    for (Value grad : resultGrads)
      if (grad)
        dead.remove(grad.getDefiningOp());
    for (Operation *def : dead)
      if (def->use_empty() && isPure(def))
        def->erase();
  }
  void accumulateParam(Gradients &grads, StringAttr name, Value grad,
                       Location loc) {
    grads.params[name] = add(grads.params.lookup(name), grad, loc);
  }
  Value zeros(Type type, Location loc) {
    return createFloatSplat(b, loc, type, 0.0);
  }

  OpBuilder &b;
};

} // namespace

LogicalResult Differentiator::differentiate(ArrayRef<Operation *> ops,
                                            Gradients &grads) {
  for (Operation *op : llvm::reverse(ops)) {
    // A parameter read is where a gradient leaves the graph.
    if (auto read = dyn_cast<GetParamOp>(op)) {
      if (Value grad = grads.values.lookup(read.getResult()))
        accumulateParam(grads, read.getNameAttr().getAttr(), grad,
                        read.getLoc());
      continue;
    }
    if (auto block = dyn_cast<BlockOp>(op)) {
      if (failed(differentiateBlock(block, grads)))
        return failure();
      continue;
    }
    SmallVector<Value> resultGrads;
    for (Value result : op->getResults())
      resultGrads.push_back(grads.values.lookup(result));
    if (llvm::all_of(resultGrads, [](Value v) { return !v; }))
      continue;
    auto differentiable = dyn_cast<DifferentiableOpInterface>(op);
    if (!differentiable)
      return op->emitOpError("lies on the path to the loss but cannot be "
                             "differentiated (it does not implement "
                             "DifferentiableOpInterface)");
    // The op becomes the copy that also returns what its VJP reads from
    // the forward (a flash attention's log-sum-exp), where it has one.
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPoint(op);
      if (Operation *kept = differentiable.buildWithResiduals(b)) {
        for (auto [old, now] : llvm::zip(op->getResults(), kept->getResults()))
          old.replaceAllUsesWith(now);
        op->erase();
        op = kept;
        differentiable = cast<DifferentiableOpInterface>(kept);
      }
    }
    SmallVector<Value> operandGrads;
    if (failed(differentiable.buildVJP(b, resultGrads, operandGrads)))
      return failure();
    if (operandGrads.size() != op->getNumOperands())
      return op->emitOpError("vector-Jacobian product returned ")
             << operandGrads.size() << " gradients for " << op->getNumOperands()
             << " operands";
    for (auto [operand, grad] : llvm::zip(op->getOperands(), operandGrads))
      accumulate(grads, operand, grad, op->getLoc());
    dropConstantGradients(op, operandGrads, resultGrads);
  }
  return success();
}

LogicalResult Differentiator::differentiateBlock(BlockOp forward,
                                                 Gradients &outer) {
  Location loc = forward.getLoc();
  Block &forwardBody = forward.getBody().front();
  auto forwardYield = cast<YieldOp>(forwardBody.getTerminator());

  // Inputs of the backward block, first the gradients of the forward
  // block's results (as outer values, and as the block arguments standing
  // for them inside).
  // The backward body is built inside a placeholder block op (ops need a
  // parent to be created in) and moved to the final op once its inputs and
  // results are known.
  auto placeholder =
      BlockOp::create(b, loc, TypeRange{}, forward.getNameAttr(), ValueRange{});
  Block *body = new Block();
  placeholder.getBody().push_back(body);
  SmallVector<Value> backwardInputs;
  Gradients inner;
  for (auto [result, yielded] :
       llvm::zip(forward.getResults(), forwardYield.getValues())) {
    Value grad = outer.values.lookup(result);
    if (!grad)
      continue;
    backwardInputs.push_back(grad);
    inner.values[yielded] = body->addArgument(grad.getType(), loc);
  }
  if (backwardInputs.empty()) {
    placeholder.erase();
    return success();
  }

  SmallVector<Type> backwardTypes;
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(body);
    SmallVector<Operation *> ops;
    for (Operation &op : forwardBody.without_terminator())
      ops.push_back(&op);
    if (failed(differentiate(ops, inner)))
      return failure();
    // Results: the gradient of each forward input, then of each parameter.
    SmallVector<Value> yields;
    for (BlockArgument arg : forwardBody.getArguments()) {
      Value grad = inner.values.lookup(arg);
      yields.push_back(grad ? grad : zeros(arg.getType(), loc));
    }
    for (auto &entry : inner.params)
      yields.push_back(entry.second);
    YieldOp::create(b, loc, yields);
    backwardTypes = llvm::to_vector(ValueRange(yields).getTypes());
  }

  // The backward ops refer to forward values directly; make every such
  // value an input of the (isolated) backward block. Parameter reads and
  // other operand-free pure ops are re-done inside instead of kept.
  SmallVector<OpOperand *> captures;
  body->walk([&](Operation *op) {
    for (OpOperand &use : op->getOpOperands())
      if (use.get().getParentBlock() != body)
        captures.push_back(&use);
  });
  DenseMap<Value, Value> inside;
  llvm::SetVector<Value> activations; // forward-internal values to export
  SmallVector<std::pair<BlockArgument, Value>> argSources;
  OpBuilder cloneBuilder = OpBuilder::atBlockBegin(body);
  for (OpOperand *use : captures) {
    Value value = use->get();
    if (Value mapped = inside.lookup(value)) {
      use->set(mapped);
      continue;
    }
    Operation *def = value.getDefiningOp();
    Value replacement;
    if (def && forward->isAncestor(def) && def->getNumOperands() == 0 &&
        def->getNumRegions() == 0 && isMemoryEffectFree(def)) {
      replacement = cloneBuilder.clone(*def)->getResult(0);
    } else {
      BlockArgument arg = body->addArgument(value.getType(), value.getLoc());
      replacement = arg;
      auto blockArg = dyn_cast<BlockArgument>(value);
      if (blockArg && blockArg.getOwner() == &forwardBody) {
        argSources.push_back(
            {arg, forward.getInputs()[blockArg.getArgNumber()]});
      } else if (def && forward->isAncestor(def)) {
        activations.insert(value);
        argSources.push_back({arg, value}); // patched to the new result below
      } else {
        argSources.push_back({arg, value});
      }
    }
    inside[value] = replacement;
    use->set(replacement);
  }

  // Re-create the forward block with the kept activations as extra results.
  BlockOp newForward = forward;
  if (!activations.empty()) {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(forward);
    SmallVector<Type> types(forward.getResultTypes());
    for (Value v : activations)
      types.push_back(v.getType());
    newForward = BlockOp::create(b, loc, types, forward.getNameAttr(),
                                 forward.getInputs());
    newForward->setDiscardableAttrs(forward->getDiscardableAttrDictionary());
    newForward.getBody().takeBody(forward.getBody());
    forwardYield->insertOperands(forwardYield->getNumOperands(),
                                 activations.getArrayRef());
    for (auto [oldResult, newResult] :
         llvm::zip(forward.getResults(), newForward.getResults())) {
      if (Value grad = outer.values.lookup(oldResult)) {
        outer.values.erase(oldResult);
        outer.values[newResult] = grad;
      }
      oldResult.replaceAllUsesWith(newResult);
    }
    forward.erase();
  }
  unsigned numOriginal = newForward.getNumResults() - activations.size();
  for (auto &[arg, source] : argSources) {
    unsigned index = activations.getArrayRef().size();
    for (auto [i, v] : llvm::enumerate(activations))
      if (v == source)
        index = i;
    backwardInputs.push_back(index < activations.size()
                                 ? newForward.getResult(numOriginal + index)
                                 : source);
  }

  auto backward = BlockOp::create(
      b, loc, backwardTypes,
      b.getStringAttr(newForward.getName() + ModelOp::kGradSuffix),
      backwardInputs);
  backward.getBody().takeBody(placeholder.getBody());
  placeholder.erase();

  unsigned numInputs = newForward.getInputs().size();
  for (auto [i, input] : llvm::enumerate(newForward.getInputs()))
    accumulate(outer, input, backward.getResult(i), loc);
  for (auto [i, entry] : llvm::enumerate(inner.params))
    accumulateParam(outer, entry.first, backward.getResult(numInputs + i), loc);
  return success();
}

/// A parameter that receives a gradient, and the gradient's type: the
/// parameter's own, or the shape of this rank's piece of it when a dist pass
/// has split the parameter (tensor parallelism reads it with local shapes).
using ParamGrad = std::pair<ParamOp, Type>;

/// Multiplies `grad` by `scale` inside the op that makes it, where that is
/// a `triax.expert_linear_weight_grad` (its `scale`, the GEMM's alpha)
/// nothing else reads, possibly yielded by the backward block `grad` is a
/// result of. Returns whether it did (else the caller multiplies).
static bool foldGradScale(Value grad, double scale) {
  if (!grad.use_empty())
    return false;
  Value made = grad;
  if (auto block = grad.getDefiningOp<BlockOp>()) {
    made = block.getBody().front().getTerminator()->getOperand(
        cast<OpResult>(grad).getResultNumber());
    if (!made.hasOneUse()) // (the yield's)
      return false;
  }
  auto product = made.getDefiningOp<ExpertLinearWeightGradOp>();
  if (!product)
    return false;
  FloatAttr before = product.getScaleAttr();
  product.setScaleAttr(
      FloatAttr::get(Float64Type::get(product.getContext()),
                     (before ? before.getValueAsDouble() : 1.0) * scale));
  return true;
}

/// Builds `@forward_backward` from `@forward`: the loss, and each
/// parameter's gradient added to its gradient buffer. Returns the params
/// that received a gradient, in declaration order.
static FailureOr<SmallVector<ParamGrad>> buildForwardBackward(ModelOp model) {
  func::FuncOp forward = model.getForward();
  OpBuilder b(model.getContext());
  b.setInsertionPointAfter(forward);
  auto fn = cast<func::FuncOp>(b.clone(*forward.getOperation()));
  fn.setSymName(ModelOp::kForwardBackwardName);
  Block &entry = fn.front();
  auto ret = cast<func::ReturnOp>(entry.getTerminator());
  Location loc = ret.getLoc();

  SmallVector<Operation *> ops;
  for (Operation &op : entry.without_terminator())
    ops.push_back(&op);
  b.setInsertionPoint(ret);
  Gradients grads;
  auto scalar = RankedTensorType::get({}, b.getF32Type());
  grads.values[ret.getOperand(0)] = createFloatSplat(b, loc, scalar, 1.0);
  Differentiator differentiator(b);
  if (failed(differentiator.differentiate(ops, grads)))
    return failure();

  SmallVector<ParamGrad> updated;
  // The last op placed after each gradient's producer (keeps the
  // parameters' order among gradients one op makes).
  llvm::DenseMap<Operation *, Operation *> placedAfter;
  for (ParamOp param : model.getParams()) {
    Value grad = grads.params.lookup(param.getSymNameAttr());
    if (!grad) {
      param.emitWarning("parameter does not reach the loss; it is not "
                        "updated");
      continue;
    }
    // Each gradient is added into its buffer right after the op that makes
    // it (a backward block), so that it lives for a moment, not until the
    // end of the backward (a layer's bias and norm gradients, which no GEMM
    // adds into their buffer; in a pipeline stage's backward, each of its
    // layers'), and dist-data-parallel's bucket can reduce it while the
    // backward goes on.
    // A replicated parameter each rank applied to its slice of the
    // activations (sequence parallelism, context parallelism): the full
    // gradient is the sum of the slices' over the group, equal on every
    // member after it, summed there too (under context parallelism every
    // gradient is partial).
    auto partial = param->getAttrOfType<dist::PartialGradAttr>(
        dist::DistDialect::kPartialGradAttrName);
    OpBuilder::InsertionGuard early(b);
    Operation *producer = grad.getDefiningOp();
    if (producer) {
      Operation *last = placedAfter.lookup(producer);
      b.setInsertionPointAfter(last ? last : producer);
    }
    // A parameter whose gradient sums several ranks' losses (an expert
    // split over ep, dist-expert-parallel): scaled to their mean, right
    // after the gradient (where dist-data-parallel's bucket can take it
    // while the backward goes on) and before any sum over a group, so that
    // the sum is what its buffer accumulates (dist-data-parallel can then
    // fold a context-parallel sum into its own reduction).
    // An expert's weight gradient takes the scale as its GEMM's alpha
    // (foldGradScale): no scaled copy, and the GEMM still adds into the
    // gradient buffer.
    if (auto scale = param->getAttrOfType<FloatAttr>(
            dist::DistDialect::kGradScaleAttrName);
        scale && !foldGradScale(grad, scale.getValueAsDouble())) {
      OpBuilder::InsertionGuard guard(b);
      if (!producer)
        b.setInsertionPointAfterValue(grad);
      Value factor = createFloatSplat(b, param.getLoc(), grad.getType(),
                                      scale.getValueAsDouble());
      grad = MulOp::create(b, param.getLoc(), grad.getType(), grad, factor);
    }
    if (partial)
      grad = dist::AllReduceOp::create(
          b, param.getLoc(), grad.getType(), dist::ReductionKind::sum, grad,
          partial.getMesh().getValue(), partial.getAxes());
    auto acc = AccumulateGradOp::create(
        b, param.getLoc(), FlatSymbolRefAttr::get(param.getSymNameAttr()),
        grad);
    if (producer)
      placedAfter[producer] = acc;
    updated.push_back({param, grad.getType()});
  }
  return updated;
}

/// The group of the gradient norm when parameters are split over mesh axes
/// (`dist.sharding`, from dist-tensor-parallel): each rank holds its pieces
/// of the split gradients and whole copies of the others, so the squares are
/// summed over the group of every splitting axis (`partial over`), a
/// gradient held whole by k members of that group counting 1/k on each
/// (`replicas`). Leaves the attributes null when nothing is split.
static LogicalResult splitNormGroup(ModelOp model, ArrayRef<ParamGrad> params,
                                    FlatSymbolRefAttr &meshRef, ArrayAttr &axes,
                                    DenseI64ArrayAttr &replicas) {
  auto shardingOf = [](ParamOp param) {
    return param->getAttrOfType<dist::ShardingAttr>(
        dist::DistDialect::kShardingAttrName);
  };
  dist::MeshOp mesh;
  llvm::SmallSetVector<StringRef, 4> splitAxes;
  for (auto [param, type] : params) {
    dist::ShardingAttr sharding = shardingOf(param);
    if (!sharding)
      continue;
    if (!mesh) {
      meshRef = sharding.getMesh();
      mesh = dist::lookupMesh(model, meshRef);
      if (!mesh)
        return param.emitOpError("sharding refers to unknown mesh ") << meshRef;
    } else if (sharding.getMesh() != meshRef) {
      return param.emitOpError("is split over mesh ")
             << sharding.getMesh() << " but another parameter over " << meshRef
             << "; the gradient norm needs one mesh";
    }
    for (unsigned d = 0; d < sharding.getRank(); ++d)
      for (StringRef axis : sharding.getDimAxes(d))
        splitAxes.insert(axis);
  }
  if (!mesh)
    return success();
  // The group's axes in mesh order.
  SmallVector<StringRef> group;
  for (Attribute name : mesh.getAxisNames())
    if (splitAxes.contains(cast<StringAttr>(name).getValue()))
      group.push_back(cast<StringAttr>(name).getValue());
  SmallVector<int64_t> counts;
  for (auto [param, type] : params) {
    llvm::SmallSetVector<StringRef, 4> own;
    if (dist::ShardingAttr sharding = shardingOf(param))
      for (unsigned d = 0; d < sharding.getRank(); ++d)
        for (StringRef axis : sharding.getDimAxes(d))
          own.insert(axis);
    int64_t count = 1;
    for (StringRef axis : group)
      if (!own.contains(axis))
        count *= *mesh.getAxisSize(axis);
    counts.push_back(count);
  }
  Builder b(model.getContext());
  axes = b.getStrArrayAttr(group);
  replicas = b.getDenseI64ArrayAttr(counts);
  return success();
}

/// Builds `@optimizer_step(%lr, %step, %grad_scale) -> grad_norm`: the
/// global norm of the (scaled) gradient buffers, the clipping factor and
/// one AdamW update per parameter.
static LogicalResult buildOptimizerStep(ModelOp model,
                                        ArrayRef<ParamGrad> params) {
  FlatSymbolRefAttr normMesh;
  ArrayAttr normAxes;
  DenseI64ArrayAttr normReplicas;
  if (failed(splitNormGroup(model, params, normMesh, normAxes, normReplicas)))
    return failure();
  OpBuilder b(model.getContext());
  b.setInsertionPointToEnd(&model.getBody().front());
  Location loc = model.getLoc();
  Type f32 = b.getF32Type();
  auto fn = func::FuncOp::create(
      b, loc, ModelOp::kOptimizerStepName,
      b.getFunctionType({f32, b.getI64Type(), f32}, {f32}));
  Block *entry = fn.addEntryBlock();
  b.setInsertionPointToStart(entry);
  Value lr = entry->getArgument(0), step = entry->getArgument(1);
  Value gradScale = entry->getArgument(2);

  SmallVector<Value> grads;
  for (auto [param, type] : params)
    grads.push_back(
        GetGradOp::create(b, param.getLoc(), type,
                          FlatSymbolRefAttr::get(param.getSymNameAttr())));
  auto scalar = RankedTensorType::get({}, f32);
  Value rawNorm = GlobalNormOp::create(b, loc, scalar, grads, normMesh,
                                       normAxes, normReplicas);
  // The buffers hold sums over micro-batches: scale first (1/micro-batches),
  // then clip the scaled gradient: norm(s g) = s norm(g).
  Value norm = arith::MulFOp::create(
      b, loc, tensor::ExtractOp::create(b, loc, rawNorm, ValueRange{}),
      gradScale);
  TrainConfigAttr config = model.getConfig();
  Value scale = gradScale;
  if (double clip = config.getGradClipValue(); clip > 0) {
    // factor = norm > clip ? clip / (norm + 1e-6) : 1
    Value c = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(clip));
    Value one = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(1.0f));
    Value tiny = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(1e-6f));
    Value clipped = arith::DivFOp::create(
        b, loc, c, arith::AddFOp::create(b, loc, norm, tiny));
    Value over =
        arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT, norm, c);
    Value factor = arith::SelectOp::create(b, loc, over, clipped, one);
    scale = arith::MulFOp::create(b, loc, gradScale, factor);
  }
  // Gradients that are not finite (a NaN or an overflow anywhere makes the
  // norm NaN or inf; it is never negative) update nothing: the scale
  // becomes NaN, which makes every triax.adamw leave its parameter and
  // moments as they were. The norm, returned, tells the driver to stop.
  Value inf = arith::ConstantOp::create(
      b, loc, b.getF32FloatAttr(std::numeric_limits<float>::infinity()));
  Value finite =
      arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLT, norm, inf);
  Value nan = arith::ConstantOp::create(
      b, loc, b.getF32FloatAttr(std::numeric_limits<float>::quiet_NaN()));
  scale = arith::SelectOp::create(b, loc, finite, scale, nan);
  for (auto [paramGrad, grad] : llvm::zip(params, grads)) {
    ParamOp param = paramGrad.first;
    double decay = param.getDecay() ? config.getWeightDecayValue() : 0.0;
    AdamWOp::create(
        b, param.getLoc(), FlatSymbolRefAttr::get(param.getSymNameAttr()), grad,
        lr, step, scale, b.getF64FloatAttr(config.getBeta1Value()),
        b.getF64FloatAttr(config.getBeta2Value()),
        b.getF64FloatAttr(config.getEpsValue()), b.getF64FloatAttr(decay));
  }
  func::ReturnOp::create(b, loc, norm);
  return success();
}

static LogicalResult buildTraining(ModelOp model) {
  for (StringRef name :
       {ModelOp::kForwardBackwardName, ModelOp::kOptimizerStepName})
    if (model.lookupSymbol(name))
      return model.emitOpError("already has a @")
             << name << "; triax-autodiff runs once per model";
  FailureOr<SmallVector<ParamGrad>> params = buildForwardBackward(model);
  if (failed(params))
    return failure();
  return buildOptimizerStep(model, *params);
}

namespace {
struct TriaxAutodiffPass
    : public mlir::triax::impl::TriaxAutodiffBase<TriaxAutodiffPass> {
  void runOnOperation() override {
    for (ModelOp model : getOperation().getOps<ModelOp>())
      if (failed(buildTraining(model)))
        return signalPassFailure();
  }
};
} // namespace
