//===- TriaxOps.cpp - Triax op verifiers ----------------------------------===//
//
// Every verifier names the actual and the expected value, so a user who
// wrote (or generated) a wrong shape sees which dimension to fix.
//
//===----------------------------------------------------------------------===//

#include "triax/Dialect/Triax/IR/GradAccumulation.h"
#include "triax/Dialect/Triax/IR/Triax.h"

#include "triax/Dialect/Dist/IR/Dist.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/STLExtras.h"

#include <cmath>

using namespace mlir;
using namespace mlir::triax;

/// Prints a shape as `[4, 8, 64]` (`?` for a dynamic dimension).
static std::string formatShape(ArrayRef<int64_t> shape) {
  std::string s = "[";
  llvm::raw_string_ostream os(s);
  llvm::interleaveComma(shape, os, [&](int64_t d) {
    if (ShapedType::isDynamic(d))
      os << "?";
    else
      os << d;
  });
  os << "]";
  return s;
}

static bool sameShape(ArrayRef<int64_t> a, ArrayRef<int64_t> b) {
  if (a.size() != b.size())
    return false;
  for (auto [x, y] : llvm::zip_equal(a, b))
    if (!ShapedType::isDynamic(x) && !ShapedType::isDynamic(y) && x != y)
      return false;
  return true;
}

static RankedTensorType tensorType(Value v) {
  return cast<RankedTensorType>(v.getType());
}

/// All float operands and the result of a layer op share one element type.
static LogicalResult verifySameFloatElementType(Operation *op,
                                                ValueRange values) {
  Type expected;
  for (Value v : values) {
    Type elt = tensorType(v).getElementType();
    if (!isa<FloatType>(elt))
      continue;
    if (!expected)
      expected = elt;
    else if (elt != expected)
      return op->emitOpError("mixes element types ")
             << expected << " and " << elt << "; expected one float type";
  }
  return success();
}

/// The element type a result of a layer op may have when its float operands
/// have `operand`: the same, or f32. The kernels accumulate in f32, and
/// mixed precision keeps in f32 what goes on to the fp32 state or to a
/// reduction (weight gradients, partial sums): such a result is stored
/// without rounding.
static bool isResultElementType(Type result, Type operand) {
  return result == operand || result.isF32();
}

/// `result` has `like`'s type, or its shape with element type f32
/// (isResultElementType); `likeName` names `like` in the message.
static LogicalResult verifyResultLike(Operation *op, StringRef what,
                                      Type result, Type like,
                                      StringRef likeName = "") {
  auto r = cast<RankedTensorType>(result), l = cast<RankedTensorType>(like);
  if (r.getShape() != l.getShape() ||
      !isResultElementType(r.getElementType(), l.getElementType()))
    return op->emitOpError()
           << what << " type " << result << " must equal " << likeName
           << (likeName.empty() ? "" : " ") << like;
  return success();
}

static LogicalResult verifyResultShape(Operation *op, ArrayRef<int64_t> actual,
                                       ArrayRef<int64_t> expected) {
  if (!sameShape(actual, expected))
    return op->emitOpError("result shape ")
           << formatShape(actual) << " does not match the expected shape "
           << formatShape(expected);
  return success();
}

//===----------------------------------------------------------------------===//
// ModelOp
//===----------------------------------------------------------------------===//

func::FuncOp ModelOp::getForward() {
  return lookupSymbol<func::FuncOp>(kForwardName);
}

func::FuncOp ModelOp::getForwardBackward() {
  return lookupSymbol<func::FuncOp>(kForwardBackwardName);
}

func::FuncOp ModelOp::getOptimizerStep() {
  return lookupSymbol<func::FuncOp>(kOptimizerStepName);
}

func::FuncOp ModelOp::getPipelineStep() {
  return lookupSymbol<func::FuncOp>(kPipelineStepName);
}

int64_t ModelOp::getNumParameters() {
  int64_t n = 0;
  for (ParamOp param : getParams()) {
    // A padded parameter (triax-pad-vocab): its values, not its padding.
    if (auto valid = param->getAttrOfType<DenseI64ArrayAttr>(
            TriaxDialect::kValidShapeAttrName)) {
      int64_t elems = 1;
      for (int64_t d : valid.asArrayRef())
        elems *= d;
      n += elems;
      continue;
    }
    n += param.getNumElements();
  }
  return n;
}

double ModelOp::getFlopParameters() {
  double n = double(getNumParameters());
  func::FuncOp forward = getForward();
  if (!forward)
    return n;
  TrainConfigAttr config = getConfig();
  double tokens = double(config.getMicroBatch()) * double(config.getSeq());
  forward.walk([&](ExpertLinearOp op) {
    auto read = op.getWeight().getDefiningOp<GetParamOp>();
    if (!read || tokens <= 0)
      return;
    // Each expert's rows over the micro-batch's tokens: a token costs
    // 2 * rows / tokens multiply-adds per element of the stack.
    double rows = double(op.getInput().getType().getDimSize(1));
    double elems = double(op.getWeight().getType().getNumElements());
    n += elems * (rows / tokens - 1.0);
  });
  return n;
}

LogicalResult ModelOp::verifyRegions() {
  func::FuncOp forward = getForward();
  if (!forward)
    return emitOpError("expects a 'func.func @forward' computing the loss");
  FunctionType fnType = forward.getFunctionType();
  if (fnType.getNumInputs() != 2 || fnType.getNumResults() != 1)
    return emitOpError("expects @forward to take (tokens, targets) and "
                       "return the loss, got ")
           << fnType;
  TrainConfigAttr config = getConfig();
  SmallVector<int64_t> expected = {config.getMicroBatch(), config.getSeq()};
  const char *names[] = {"tokens", "targets"};
  for (auto [i, name] : llvm::enumerate(names)) {
    auto type = dyn_cast<RankedTensorType>(fnType.getInput(i));
    if (!type || !type.getElementType().isSignlessInteger() ||
        !(type.getElementType().isInteger(32) ||
          type.getElementType().isInteger(64)))
      return emitOpError("expects @forward's ")
             << name << " to be a tensor of i32 or i64, got "
             << fnType.getInput(i);
    if (type.getShape() != ArrayRef<int64_t>(expected))
      return emitOpError("@forward's ")
             << name << " have shape " << formatShape(type.getShape())
             << ", expected [micro_batch, seq] = " << formatShape(expected);
  }
  auto loss = dyn_cast<RankedTensorType>(fnType.getResult(0));
  if (!loss || loss.getRank() != 0 || !loss.getElementType().isF32())
    return emitOpError("expects @forward to return the loss as tensor<f32>, "
                       "got ")
           << fnType.getResult(0);
  return success();
}

//===----------------------------------------------------------------------===//
// ParamOp, GetParamOp
//===----------------------------------------------------------------------===//

LogicalResult ParamOp::verify() {
  RankedTensorType type = getTensorType();
  if (!type.hasStaticShape())
    return emitOpError("parameter must have a static shape, got ") << type;
  if (type.getRank() < 1)
    return emitOpError("parameter must have rank >= 1, got ") << type;
  return success();
}

/// A parameter split over a device mesh carries attributes of the dist
/// dialect (`dist.sharding`: tensor parallelism; `dist.zero`: ZeRO). Each
/// rank then holds a piece of it, whose shape the dist passes decide, so the
/// ops that read and update it are not held to the parameter's full shape
/// here (this dialect does not know meshes).
static bool isDistributed(ParamOp param) {
  return llvm::any_of(param->getDiscardableAttrs(), [](NamedAttribute attr) {
    return attr.getName().getValue().starts_with("dist.");
  });
}

LogicalResult GetParamOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  Operation *symbol =
      symbolTable.lookupNearestSymbolFrom(getOperation(), getNameAttr());
  auto param = dyn_cast_or_null<ParamOp>(symbol);
  if (!param)
    return emitOpError("'") << getName()
                            << "' does not name a triax.param of the "
                               "enclosing model";
  if (isDistributed(param))
    return success();
  if (param.getType() != getType())
    return emitOpError("result type ")
           << getType() << " does not match parameter @" << getName()
           << " of type " << param.getType() << "; expected them equal";
  return success();
}

//===----------------------------------------------------------------------===//
// BlockOp
//===----------------------------------------------------------------------===//

void mlir::triax::inlineBlocks(Operation *root) {
  SmallVector<BlockOp> blocks;
  root->walk([&](BlockOp op) { blocks.push_back(op); });
  for (BlockOp op : blocks) {
    Block &body = op.getBody().front();
    auto yield = cast<YieldOp>(body.getTerminator());
    for (auto [arg, input] : llvm::zip(body.getArguments(), op.getInputs()))
      arg.replaceAllUsesWith(input);
    op->getBlock()->getOperations().splice(Block::iterator(op),
                                           body.getOperations(), body.begin(),
                                           Block::iterator(yield));
    op.replaceAllUsesWith(yield.getValues());
    op.erase();
  }
}

LogicalResult BlockOp::verifyRegions() {
  Block &body = getBody().front();
  if (body.getArgumentTypes() != getInputs().getTypes())
    return emitOpError("region arguments (")
           << body.getArgumentTypes() << ") must match the inputs ("
           << getInputs().getTypes() << ")";
  auto yield = dyn_cast<YieldOp>(body.getTerminator());
  if (!yield)
    return emitOpError("region must end in triax.yield");
  if (yield.getValues().getTypes() != getResultTypes())
    return emitOpError("yields (")
           << yield.getValues().getTypes() << ") but the results are ("
           << getResultTypes() << ")";
  return success();
}

//===----------------------------------------------------------------------===//
// Layer ops
//===----------------------------------------------------------------------===//

LogicalResult PositionIdsOp::verify() {
  if (getType().getRank() != 2)
    return emitOpError("result must be [batch, seq], got ") << getType();
  if (bool(getMeshAttr()) != bool(getAxesAttr()))
    return emitOpError("sequence_parallel needs both the mesh and its axes");
  if (getAxesAttr() && getAxesAttr().empty())
    return emitOpError("sequence_parallel needs at least one mesh axis");
  return success();
}

LogicalResult RopeOp::verify() {
  RankedTensorType x = getInput().getType(), p = getPositions().getType();
  if (x.getRank() != 3)
    return emitOpError("input must be [batch, seq, heads*d], got ") << x;
  if (p.getRank() != 2 || p.getDimSize(0) != x.getDimSize(0) ||
      p.getDimSize(1) != x.getDimSize(1))
    return emitOpError("positions must be [batch, seq] = [")
           << x.getDimSize(0) << ", " << x.getDimSize(1) << "], got " << p;
  if (getType() != x)
    return emitOpError("result type ")
           << getType() << " must be the input's " << x;
  int64_t heads = getHeads(), features = x.getDimSize(2);
  if (heads < 1 || features % heads != 0 || (features / heads) % 2 != 0)
    return emitOpError("heads ") << heads << " must divide the " << features
                                 << " features into heads of an even size";
  if (!(getTheta().convertToDouble() > 0.0))
    return emitOpError("theta must be positive, got ")
           << getTheta().convertToDouble();
  return success();
}

/// `vocab_parallel over @mesh [axes]` names a mesh and at least one of its
/// axes (which the lowering resolves; this dialect does not know meshes).
static LogicalResult verifyVocabParallel(Operation *op, Attribute mesh,
                                         ArrayAttr axes) {
  if (bool(mesh) != bool(axes))
    return op->emitOpError("vocab_parallel needs both the mesh and its axes");
  if (axes && axes.empty())
    return op->emitOpError("vocab_parallel needs at least one mesh axis");
  return success();
}

/// A padded vocabulary's `classes` (see triax.cross_entropy): at most the
/// logits' columns. Under vocab_parallel the logits are this rank's block,
/// and the bound (the block times the group) is not checked here.
static LogicalResult verifyClasses(Operation *op,
                                   std::optional<int64_t> classes,
                                   RankedTensorType logits, bool parallel) {
  if (!classes || parallel || logits.isDynamicDim(logits.getRank() - 1) ||
      *classes <= logits.getShape().back())
    return success();
  return op->emitOpError("classes ") << *classes << " exceeds the logits' "
                                     << logits.getShape().back() << " columns";
}

LogicalResult EmbeddingOp::verify() {
  if (failed(verifyVocabParallel(*this, getMeshAttr(), getAxesAttr())))
    return failure();
  RankedTensorType table = getTable().getType();
  if (table.getRank() != 2)
    return emitOpError("table must be [vocab, hidden], got ") << table;
  SmallVector<int64_t> expected(getIndices().getType().getShape());
  expected.push_back(table.getDimSize(1));
  if (!isResultElementType(getType().getElementType(), table.getElementType()))
    return emitOpError("result element type ")
           << getType().getElementType() << " does not match the table's "
           << table.getElementType();
  return verifyResultShape(*this, getType().getShape(), expected);
}

LogicalResult LinearOp::verify() {
  RankedTensorType input = getInput().getType();
  RankedTensorType weight = getWeight().getType();
  if (input.getRank() < 1)
    return emitOpError("input must have rank >= 1, got ") << input;
  if (weight.getRank() != 2)
    return emitOpError("weight must have rank 2, got ") << weight;
  bool transposed = getTransposeWeight();
  int64_t in = weight.getDimSize(transposed ? 1 : 0);
  int64_t out = weight.getDimSize(transposed ? 0 : 1);
  if (!sameShape(input.getShape().back(), in))
    return emitOpError("input has ")
           << input.getShape().back() << " features but the weight "
           << formatShape(weight.getShape()) << " expects " << in
           << (transposed ? " (weight is [out, in])"
                          : " (weight is [in, out])");
  if (Value bias = getBias()) {
    auto biasType = tensorType(bias);
    if (!sameShape(biasType.getShape(), out))
      return emitOpError("bias shape ") << formatShape(biasType.getShape())
                                        << " does not match [" << out << "]";
  }
  if (failed(verifySameFloatElementType(*this, getOperation()->getOperands())))
    return failure();
  if (!isResultElementType(getType().getElementType(), input.getElementType()))
    return emitOpError("result element type ")
           << getType().getElementType() << " must be the input's "
           << input.getElementType() << " or f32";
  SmallVector<int64_t> expected(input.getShape().drop_back());
  expected.push_back(out);
  return verifyResultShape(*this, getType().getShape(), expected);
}

/// layer_norm and rms_norm: per-feature weight (and bias) of the last dim.
/// The row statistics a norm keeps for its gradient (`stats` on the norm,
/// `saved` on its gradient): none, or `count` of them (the mean and rstd,
/// or rstd), each the input's shape without its last dimension, f32.
static LogicalResult verifyRowStats(Operation *op, ValueRange stats,
                                    size_t count, RankedTensorType input) {
  if (stats.empty())
    return success();
  if (stats.size() != count)
    return op->emitOpError(count == 2 ? "the row statistics are the mean "
                                        "and rstd (2 values), got "
                                      : "the row statistic is rstd (1 "
                                        "value), got ")
           << stats.size();
  for (Value stat : stats) {
    auto type = cast<RankedTensorType>(stat.getType());
    if (input.getRank() < 2 ||
        !sameShape(type.getShape(), input.getShape().drop_back()))
      return op->emitOpError("a row statistic must be the input's shape "
                             "without its last dimension, ")
             << formatShape(input.getShape().drop_back()) << ", got "
             << formatShape(type.getShape());
  }
  return success();
}

/// `stats`: the row statistics (see verifyRowStats), the op's last results
/// or (`savedStats`) operands; they are f32 whatever the input's element
/// type.
static LogicalResult verifyNorm(Operation *op, Value input, ValueRange affine,
                                Value result, double eps, ValueRange stats,
                                size_t count, bool savedStats) {
  RankedTensorType type = tensorType(input);
  if (type.getRank() < 1)
    return op->emitOpError("input must have rank >= 1, got ") << type;
  int64_t features = type.getShape().back();
  for (Value v : affine)
    if (!sameShape(tensorType(v).getShape(), features))
      return op->emitOpError(affine.size() == 1 ? "weight must be ["
                                                : "weight and bias must be [")
             << features << "], got " << formatShape(tensorType(v).getShape());
  if (failed(verifyResultLike(op, "result", result.getType(), input.getType(),
                              "the input type")))
    return failure();
  if (!(eps > 0.0))
    return op->emitOpError("eps must be > 0, got ") << eps;
  if (failed(verifyRowStats(op, stats, count, type)))
    return failure();
  ValueRange operands = op->getOperands();
  return verifySameFloatElementType(
      op, savedStats ? operands.drop_back(stats.size()) : operands);
}

LogicalResult LayerNormOp::verify() {
  return verifyNorm(*this, getInput(), {getWeight(), getBias()}, getResult(),
                    getEps().convertToDouble(), getStats(), 2,
                    /*savedStats=*/false);
}

LogicalResult RMSNormOp::verify() {
  return verifyNorm(*this, getInput(), {getWeight()}, getResult(),
                    getEps().convertToDouble(), getStats(), 1,
                    /*savedStats=*/false);
}

/// Shapes of attention and its gradient: q [B,S,heads*d], k and v
/// [B,S,kv_heads*d].
/// Context parallelism (`context_parallel over @mesh [axes]`): both
/// attributes or neither; the queries are this member's two chunks of the
/// sequence, the keys and values the whole group's (a multiple of them),
/// or with `ring` the member's own (the queries' shape).
static LogicalResult verifyContextParallel(Operation *op, Attribute mesh,
                                           ArrayAttr axes, bool ring,
                                           RankedTensorType q,
                                           RankedTensorType k) {
  if (bool(mesh) != bool(axes))
    return op->emitOpError("context_parallel needs both the mesh and its axes");
  if (ring && !mesh)
    return op->emitOpError("ring needs context_parallel over a mesh group");
  if (!mesh)
    return success();
  if (axes.empty())
    return op->emitOpError("context_parallel needs at least one mesh axis");
  int64_t qSeq = q.getDimSize(1), kSeq = k.getDimSize(1);
  if (ShapedType::isDynamic(qSeq) || ShapedType::isDynamic(kSeq))
    return op->emitOpError("context_parallel needs static sequence lengths");
  if (qSeq % 2 != 0)
    return op->emitOpError("context_parallel: the query's ")
           << qSeq
           << " tokens are not two equal chunks (chunk c and its mirror)";
  if (ring && kSeq != qSeq)
    return op->emitOpError("context_parallel ring: the key's ")
           << kSeq << " tokens must be this member's own, as the query's "
           << qSeq;
  if (kSeq % qSeq != 0)
    return op->emitOpError("context_parallel: the key's ")
           << kSeq << " tokens are not a whole number of members' " << qSeq;
  return success();
}

static LogicalResult verifyAttentionShapes(Operation *op, RankedTensorType q,
                                           RankedTensorType k,
                                           RankedTensorType v, int64_t heads,
                                           int64_t kvHeads, Attribute mesh,
                                           ArrayAttr axes, bool ring) {
  for (RankedTensorType t : {q, k, v}) {
    if (t.getRank() != 3)
      return op->emitOpError(
                 "query, key and value must be [batch, seq, features], got ")
             << t;
    if (t.isDynamicDim(2))
      return op->emitOpError("query, key and value need a static feature "
                             "dimension (heads are cut along it), got ")
             << t;
  }
  if (!sameShape(k.getShape(), v.getShape()))
    return op->emitOpError("key ")
           << k << " and value " << v << " must have the same shape";
  if (failed(verifyContextParallel(op, mesh, axes, ring, q, k)))
    return failure();
  // (Context-parallel keys are the whole group's sequence, except in a
  // ring.)
  bool ownKeys = !mesh || ring;
  if (!sameShape(q.getShape().take_front(ownKeys ? 2 : 1),
                 k.getShape().take_front(ownKeys ? 2 : 1)))
    return op->emitOpError("query ")
           << q << " and key " << k << " must agree on [batch, seq]";
  if (heads < 1 || kvHeads < 1)
    return op->emitOpError("heads and kv_heads must be >= 1, got ")
           << heads << " and " << kvHeads;
  int64_t hidden = q.getShape().back();
  if (hidden % heads != 0)
    return op->emitOpError("hidden size ")
           << hidden << " is not divisible by heads " << heads;
  if (heads % kvHeads != 0)
    return op->emitOpError("heads ")
           << heads << " is not divisible by kv_heads " << kvHeads;
  int64_t kvFeatures = kvHeads * (hidden / heads);
  if (k.getShape().back() != kvFeatures)
    return op->emitOpError("key and value have ")
           << k.getShape().back()
           << " features, expected kv_heads * head_dim = " << kvHeads << " * "
           << hidden / heads << " = " << kvFeatures;
  return success();
}

/// The rows' log-sum-exp of an attention with query `q`: [B, heads, S]
/// f32 (see triax.attention).
static LogicalResult verifyAttentionLse(Operation *op, Type lse,
                                        RankedTensorType q, int64_t heads) {
  auto type = dyn_cast<RankedTensorType>(lse);
  SmallVector<int64_t> expected = {q.getDimSize(0), heads, q.getDimSize(1)};
  if (!type || !type.getElementType().isF32() ||
      !sameShape(type.getShape(), expected))
    return op->emitOpError("log-sum-exp must be [batch, heads, seq] = ")
           << formatShape(expected) << " f32, got " << lse;
  return success();
}

LogicalResult AttentionOp::verify() {
  RankedTensorType q = getQuery().getType();
  if (failed(verifyAttentionShapes(
          *this, q, getKey().getType(), getValue().getType(), getHeads(),
          getNumKVHeads(), getMeshAttr(), getAxesAttr(), getRing())))
    return failure();
  if (failed(verifyResultLike(*this, "result", getResult().getType(), q,
                              "the query type")))
    return failure();
  if (Value lse = getLse())
    if (failed(verifyAttentionLse(*this, lse.getType(), q, getHeads())))
      return failure();
  return verifySameFloatElementType(*this, getOperation()->getOperands());
}

LogicalResult BiasAddOp::verify() {
  RankedTensorType input = getInput().getType(), bias = getBias().getType();
  if (input.getRank() < 1)
    return emitOpError("input must have rank >= 1, got ") << input;
  if (bias.getRank() != 1 ||
      !sameShape(bias.getDimSize(0), input.getShape().back()))
    return emitOpError("bias ")
           << bias << " must be a vector of the input's last dimension "
           << input.getShape().back();
  return verifySameFloatElementType(*this, {getInput(), getBias()});
}

LogicalResult CrossEntropyOp::verify() {
  if (failed(verifyVocabParallel(*this, getMeshAttr(), getAxesAttr())))
    return failure();
  RankedTensorType logits = getLogits().getType();
  RankedTensorType targets = getTargets().getType();
  if (logits.getRank() != targets.getRank() + 1 ||
      !sameShape(logits.getShape().drop_back(), targets.getShape()))
    return emitOpError("logits ")
           << formatShape(logits.getShape()) << " must be the targets' shape "
           << formatShape(targets.getShape()) << " plus a vocabulary dimension";
  return verifyClasses(*this, getClasses(), logits, bool(getMeshAttr()));
}

//===----------------------------------------------------------------------===//
// Backward ops
//===----------------------------------------------------------------------===//

/// A gradient has the type of what it differentiates, or its shape in f32
/// (see isResultElementType).
static LogicalResult verifyGradType(Operation *op, StringRef what, Type grad,
                                    Type expected) {
  return verifyResultLike(op, (what + " gradient").str(), grad, expected);
}

LogicalResult LinearWeightGradOp::verify() {
  RankedTensorType x = getInput().getType(), dy = getResultGrad().getType();
  if (x.getRank() < 1 || x.getRank() != dy.getRank() ||
      !sameShape(x.getShape().drop_back(), dy.getShape().drop_back()))
    return emitOpError("input ")
           << x << " and result gradient " << dy
           << " must agree on every dimension but the last";
  int64_t in = x.getShape().back(), out = dy.getShape().back();
  SmallVector<int64_t> expected = getTransposeWeight()
                                      ? SmallVector<int64_t>{out, in}
                                      : SmallVector<int64_t>{in, out};
  if (failed(verifySameFloatElementType(*this, {getInput(), getResultGrad()})))
    return failure();
  if (!isResultElementType(getType().getElementType(), x.getElementType()))
    return emitOpError("weight gradient element type ")
           << getType().getElementType() << " must be the input's "
           << x.getElementType() << " or f32";
  return verifyResultShape(*this, getType().getShape(), expected);
}

LogicalResult BiasGradOp::verify() {
  RankedTensorType dy = getResultGrad().getType();
  if (dy.getRank() < 1)
    return emitOpError("result gradient must have rank >= 1, got ") << dy;
  if (!isResultElementType(getType().getElementType(), dy.getElementType()))
    return emitOpError("bias gradient element type ")
           << getType().getElementType() << " must be the result gradient's "
           << dy.getElementType() << " or f32";
  return verifyResultShape(*this, getType().getShape(), dy.getShape().back());
}

LogicalResult EmbeddingGradOp::verify() {
  if (failed(verifyVocabParallel(*this, getMeshAttr(), getAxesAttr())))
    return failure();
  RankedTensorType dy = getResultGrad().getType(), table = getType();
  SmallVector<int64_t> expected(getIndices().getType().getShape());
  if (table.getRank() != 2)
    return emitOpError("table gradient must be [vocab, hidden], got ") << table;
  expected.push_back(table.getDimSize(1));
  if (!sameShape(dy.getShape(), expected))
    return emitOpError("result gradient shape ")
           << formatShape(dy.getShape()) << " does not match the expected "
           << formatShape(expected);
  if (!isResultElementType(table.getElementType(), dy.getElementType()))
    return emitOpError("table gradient element type ")
           << table.getElementType() << " must be the result gradient's "
           << dy.getElementType() << " or f32";
  return success();
}

LogicalResult LayerNormGradOp::verify() {
  if (failed(verifyNorm(*this, getInput(), {getWeight()}, getInputGrad(),
                        getEps().convertToDouble(), getSaved(), 2,
                        /*savedStats=*/true)) ||
      failed(verifyGradType(*this, "result", getResultGrad().getType(),
                            getInput().getType())) ||
      failed(verifyGradType(*this, "weight", getWeightGrad().getType(),
                            getWeight().getType())))
    return failure();
  return verifyGradType(*this, "bias", getBiasGrad().getType(),
                        getWeight().getType());
}

LogicalResult RMSNormGradOp::verify() {
  if (failed(verifyNorm(*this, getInput(), {getWeight()}, getInputGrad(),
                        getEps().convertToDouble(), getSaved(), 1,
                        /*savedStats=*/true)) ||
      failed(verifyGradType(*this, "result", getResultGrad().getType(),
                            getInput().getType())))
    return failure();
  return verifyGradType(*this, "weight", getWeightGrad().getType(),
                        getWeight().getType());
}

LogicalResult AttentionGradOp::verify() {
  if (failed(verifyAttentionShapes(
          *this, getQuery().getType(), getKey().getType(), getValue().getType(),
          getHeads(), getKvHeads().value_or(getHeads()), getMeshAttr(),
          getAxesAttr(), getRing())))
    return failure();
  std::pair<StringRef, std::pair<Type, Type>> pairs[] = {
      {"result", {getResultGrad().getType(), getQuery().getType()}},
      {"query", {getQueryGrad().getType(), getQuery().getType()}},
      {"key", {getKeyGrad().getType(), getKey().getType()}},
      {"value", {getValueGrad().getType(), getValue().getType()}}};
  for (auto [what, types] : pairs)
    if (failed(verifyGradType(*this, what, types.first, types.second)))
      return failure();
  if (getSaved().empty())
    return success();
  if (getSaved().size() != 2)
    return emitOpError("saved takes the forward's result and its "
                       "log-sum-exp, got ")
           << getSaved().size() << " values";
  if (getSavedResult().getType() != getQuery().getType())
    return emitOpError("saved result ")
           << getSavedResult().getType() << " must have the query's type "
           << getQuery().getType();
  return verifyAttentionLse(*this, getSavedLse().getType(),
                            getQuery().getType(), getHeads());
}

LogicalResult CrossEntropyGradOp::verify() {
  if (failed(verifyVocabParallel(*this, getMeshAttr(), getAxesAttr())))
    return failure();
  RankedTensorType logits = getLogits().getType();
  RankedTensorType targets = getTargets().getType();
  if (logits.getRank() != targets.getRank() + 1 ||
      !sameShape(logits.getShape().drop_back(), targets.getShape()))
    return emitOpError("logits ")
           << formatShape(logits.getShape()) << " must be the targets' shape "
           << formatShape(targets.getShape()) << " plus a vocabulary dimension";
  if (failed(verifyClasses(*this, getClasses(), logits, bool(getMeshAttr()))))
    return failure();
  return verifyGradType(*this, "logits", getType(), logits);
}

//===----------------------------------------------------------------------===//
// GlobalNormOp
//===----------------------------------------------------------------------===//

LogicalResult GlobalNormOp::verify() {
  if (bool(getMesh()) != bool(getAxes()))
    return emitOpError("a partial norm needs both the mesh and its axes");
  if (std::optional<ArrayRef<int64_t>> replicas = getReplicas()) {
    if (replicas->size() != getGrads().size())
      return emitOpError("has ") << replicas->size() << " replica counts for "
                                 << getGrads().size() << " gradients";
    for (int64_t r : *replicas)
      if (r < 1)
        return emitOpError("replica count ") << r << " must be >= 1";
  }
  return success();
}

//===----------------------------------------------------------------------===//
// AdamWOp
//===----------------------------------------------------------------------===//

/// The optimizer-side ops name a parameter and carry a tensor of its shape.
static LogicalResult verifyParamUse(Operation *op, FlatSymbolRefAttr name,
                                    RankedTensorType type,
                                    SymbolTableCollection &symbolTable) {
  auto param =
      dyn_cast_or_null<ParamOp>(symbolTable.lookupNearestSymbolFrom(op, name));
  if (!param)
    return op->emitOpError("'")
           << name.getValue()
           << "' does not name a triax.param of the enclosing model";
  if (isDistributed(param))
    return success();
  if (param.getTensorType().getShape() != type.getShape())
    return op->emitOpError("gradient ")
           << type << " does not match parameter " << name << " of type "
           << param.getType();
  return success();
}

LogicalResult AdamWOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  return verifyParamUse(*this, getParamAttr(), getGrad().getType(),
                        symbolTable);
}

LogicalResult
AccumulateGradOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  return verifyParamUse(*this, getParamAttr(), getGrad().getType(),
                        symbolTable);
}

LogicalResult GetGradOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  return verifyParamUse(*this, getParamAttr(), getGrad().getType(),
                        symbolTable);
}

//===----------------------------------------------------------------------===//
// ConvertOp
//===----------------------------------------------------------------------===//

Type mlir::triax::getComputeElementType(Type elementType) {
  if (elementType.isBF16())
    return Float32Type::get(elementType.getContext());
  return elementType;
}

OpFoldResult ConvertOp::fold(FoldAdaptor) {
  if (getInput().getType() == getType())
    return getInput();
  // A round trip through a wider type is exact: bf16 -> f32 -> bf16.
  if (auto inner = getInput().getDefiningOp<ConvertOp>()) {
    Value source = inner.getInput();
    unsigned width = getElementTypeOrSelf(source).getIntOrFloatBitWidth();
    if (source.getType() == getType() &&
        getElementTypeOrSelf(inner.getType()).getIntOrFloatBitWidth() >= width)
      return source;
  }
  return {};
}

Value ConvertOp::buildScalar(OpBuilder &, Location, ValueRange v) {
  // Elements are computed in f32 (getComputeElementType) whatever the
  // storage type: the conversion happens when the result is stored.
  return v[0];
}

//===----------------------------------------------------------------------===//
// CostOpInterface
//===----------------------------------------------------------------------===//

/// 2 M N K: M rows of K inputs, N outputs.
double LinearOp::getForwardFlops() {
  auto in = cast<ShapedType>(getInput().getType());
  auto out = cast<ShapedType>(getResult().getType());
  if (!in.hasStaticShape() || !out.hasStaticShape())
    return 0;
  int64_t k = in.getShape().back(), n = out.getShape().back();
  return n > 0 ? 2.0 * double(out.getNumElements() / n) * double(n) * double(k)
               : 0;
}

/// 4 b s t h: the scores (q k^T) and the weighted sum (p v), each 2 b s t h
/// over the [b, s, h] queries and t keys: the key operand's length, times
/// the ring's members for a ring attention (it attends to each member's key
/// block in turn), so that a context-parallel rank's attention counts s/cp
/// of the whole one's in either form. The causal mask's half is not
/// subtracted: the balancer compares blocks, which all have it.
double AttentionOp::getForwardFlops() {
  auto q = cast<ShapedType>(getQuery().getType());
  auto k = cast<ShapedType>(getKey().getType());
  if (q.getRank() != 3 || !q.hasStaticShape() || !k.hasStaticShape())
    return 0;
  double keys = double(k.getDimSize(1));
  if (getRing())
    if (auto mesh = dist::lookupMesh(*this, getMeshAttr()))
      keys *= double(mesh.getGroupSize(getAxesAttr()));
  return 4.0 * double(q.getDimSize(0)) * double(q.getDimSize(1)) * keys *
         double(q.getDimSize(2));
}

/// 2 E N in out: one GEMM per expert over all its rows (the buffer's empty
/// rows included: the kernel computes them).
double ExpertLinearOp::getForwardFlops() {
  auto in = cast<ShapedType>(getInput().getType());
  int64_t out = getType().getShape().back();
  return 2.0 * double(in.getNumElements()) * double(out);
}

/// The softmax over the experts and the top-k scan: a few operations per
/// logit, negligible beside the experts; counted as 4 per logit.
double MoERouteOp::getForwardFlops() {
  return 4.0 * double(getLogits().getType().getNumElements());
}

/// A layer, as wide as its first input's last dimension.
void BlockOp::describeModel(ModelFacts &facts) {
  facts.layer = true;
  facts.layerName = getName();
  if (getNumOperands() > 0)
    if (auto type = dyn_cast<ShapedType>(getOperand(0).getType());
        type && type.hasRank() && type.getRank() > 0)
      facts.hidden = type.getShape().back();
}

void AttentionOp::describeModel(ModelFacts &facts) {
  facts.heads = getHeads();
  facts.kvHeads = getNumKVHeads();
}

/// A token embedding's table has the vocabulary's rows; a position
/// embedding's (indices from triax.position_ids) has none to tell.
void EmbeddingOp::describeModel(ModelFacts &facts) {
  facts.table = getTable();
  if (!getIndices().getDefiningOp<PositionIdsOp>())
    facts.vocab = cast<ShapedType>(getTable().getType()).getDimSize(0);
}

void LinearOp::describeModel(ModelFacts &facts) {
  facts.weight = getWeight();
  facts.weightOutputDim = getTransposeWeight() ? 0 : 1;
  facts.width = cast<ShapedType>(getResult().getType()).getShape().back();
}

/// The statistics triax-autodiff adds as residuals (their number is fixed
/// by the op, not by whether this op has them yet).
void LayerNormOp::describeModel(ModelFacts &facts) {
  facts.normStats = 2;
  facts.scale = getWeight();
}
void RMSNormOp::describeModel(ModelFacts &facts) {
  facts.normStats = 1;
  facts.scale = getWeight();
}

/// Positions with a mesh are a sequence-parallel slice's.
void PositionIdsOp::describeModel(ModelFacts &facts) {
  facts.sequenceParallel = bool(getMeshAttr());
}

//===--- where the kernel lowering puts results ---------------------------===//

/// Parameters and gradients are views of the runtime's state.
ResultStorage GetParamOp::getResultStorage(unsigned) {
  return ResultStorage::none();
}
ResultStorage GetGradOp::getResultStorage(unsigned) {
  return ResultStorage::none();
}

/// accumulate-in-gemm: a weight gradient only its accumulate_grad reads is
/// the GEMM into the gradient buffer, an embedding gradient the scatter into
/// it.
ResultStorage LinearWeightGradOp::getResultStorage(unsigned) {
  return isOnlyAccumulated(getResult()) ? ResultStorage::none()
                                        : ResultStorage();
}
ResultStorage ExpertLinearWeightGradOp::getResultStorage(unsigned) {
  return isOnlyAccumulated(getResult()) ? ResultStorage::none()
                                        : ResultStorage();
}
ResultStorage EmbeddingGradOp::getResultStorage(unsigned) {
  return isOnlyAccumulated(getResult()) ? ResultStorage::none()
                                        : ResultStorage();
}

/// A bf16 table gradient is summed in an f32 table and rounded once
/// (EmbeddingKernels.cpp): the f32 table lives while the op runs.
int64_t EmbeddingGradOp::getScratchBytes() {
  auto type = cast<ShapedType>(getType());
  return type.getElementType().isBF16() ? type.getNumElements() * 4 : 0;
}

/// elementwise-in-place: the result over an operand nothing reads after
/// the op (overwritableOperand), else a buffer of its own.
static ResultStorage elementwiseStorage(Operation *op) {
  std::optional<unsigned> over =
      overwritableOperand(op, op->getResult(0).getType());
  return over ? ResultStorage::over(*over) : ResultStorage();
}

/// A sum accumulated term by term has no buffer (isAccumulatedTermByTerm).
ResultStorage AddOp::getResultStorage(unsigned) {
  return isAccumulatedTermByTerm(*this) ? ResultStorage::none()
                                        : elementwiseStorage(*this);
}
ResultStorage MulOp::getResultStorage(unsigned) {
  return elementwiseStorage(*this);
}
ResultStorage SiluGradOp::getResultStorage(unsigned) {
  return elementwiseStorage(*this);
}

/// elementwise-in-place: each result over a distinct input it may overwrite.
ResultStorage FusedElementwiseOp::getResultStorage(unsigned index) {
  SmallVector<unsigned> taken;
  for (unsigned r = 0; r <= index; ++r) {
    std::optional<unsigned> over =
        overwritableOperand(*this, getResult(r).getType(), taken);
    if (r == index)
      return over ? ResultStorage::over(*over) : ResultStorage();
    if (over)
      taken.push_back(*over);
  }
  return {};
}

/// loss-grad-in-place: the gradient is written over its logits when they
/// have its type and mayWriteOver allows (each row's threads write after
/// the row's reductions, which all of them join).
ResultStorage CrossEntropyGradOp::getResultStorage(unsigned) {
  Value logits = getLogits();
  if (logits.getType() == getType() && mayWriteOver(*this, logits))
    return ResultStorage::over(getLogitsMutable().getOperandNumber());
  return {};
}

/// Vocab-parallel (a mesh): the rows' maxima (R f32), then their sum-exps
/// with the target logits (2R f32), R the logits' rows, each an all_reduce
/// over the vocabulary's group.
static void vocabParallelCollectives(Operation *op, Value logits,
                                     SmallVectorImpl<Collective> &out) {
  auto type = cast<ShapedType>(logits.getType());
  if (!op->hasAttr("mesh") || !type.hasStaticShape() || type.getRank() == 0 ||
      type.getShape().back() == 0)
    return;
  int64_t rows = type.getNumElements() / type.getShape().back();
  out.push_back({Collective::Kind::AllReduce, rows, 4});
  out.push_back({Collective::Kind::AllReduce, 2 * rows, 4});
}

void CrossEntropyOp::getCollectives(SmallVectorImpl<Collective> &out) {
  vocabParallelCollectives(*this, getLogits(), out);
}

void CrossEntropyGradOp::getCollectives(SmallVectorImpl<Collective> &out) {
  vocabParallelCollectives(*this, getLogits(), out);
}

/// Partial over a group: the sum of the members' squares, one f32.
void GlobalNormOp::getCollectives(SmallVectorImpl<Collective> &out) {
  if (getMeshAttr())
    out.push_back({Collective::Kind::AllReduce, 1, 4});
}

/// Ring attention (`ring`): what its kernels move and hold
/// (AttentionRing.cpp). The key and value blocks go around the ring in the
/// operands' element type (bf16: 2 bytes an element), the dK/dV
/// accumulators as f32.
namespace {
struct RingShape {
  int64_t b = 0, s = 0, heads = 0, kv = 0, d = 0, members = 1;
  bool bf16 = false;
  /// Elements of one key (or value) block, and of its dK (or dV)
  /// accumulator: the same count.
  int64_t block() const { return b * s * kv * d; }
  /// Bytes of the online softmax's state: m, l, the accumulator.
  int64_t state() const { return 4 * (2 * b * heads * s + b * heads * s * d); }
  /// Bytes of a key or value block's element.
  int64_t blockBytes() const { return bf16 ? 2 : 4; }
  /// Bytes of the key and value blocks arriving (two receiving buffers
  /// each, one with two members; the own ones are the operands).
  int64_t blocks() const {
    return blockBytes() * block() * 2 * (members > 2 ? 2 : 1);
  }
};
} // namespace

template <typename OpT> static std::optional<RingShape> ringShape(OpT op) {
  if (!op.getRing())
    return std::nullopt;
  auto q = op.getQuery().getType(), k = op.getKey().getType();
  if (!q.hasStaticShape() || !k.hasStaticShape())
    return std::nullopt;
  auto mesh = dist::lookupMesh(op, op.getMeshAttr());
  if (!mesh)
    return std::nullopt;
  RingShape r;
  r.members = mesh.getGroupSize(op.getAxesAttr());
  r.b = q.getDimSize(0);
  r.s = q.getDimSize(1);
  r.heads = op.getHeads();
  r.kv = op.getKvHeads().value_or(op.getHeads());
  r.d = q.getDimSize(2) / r.heads;
  r.bf16 = !k.getElementType().isF32();
  return r;
}

/// `shifts` ring shifts of `elements` elements of `elemBytes` each: a send
/// and a receive each.
static void ringShifts(SmallVectorImpl<Collective> &out, int64_t shifts,
                       int64_t elements, int64_t elemBytes) {
  for (int64_t i = 0; i < shifts; ++i)
    for (auto kind : {Collective::Kind::Send, Collective::Kind::Recv}) {
      Collective c{kind};
      c.elements = elements;
      c.elemBytes = elemBytes;
      out.push_back(c);
    }
}

// The forward passes the key and value blocks on n - 1 times.
void AttentionOp::getCollectives(SmallVectorImpl<Collective> &out) {
  if (std::optional<RingShape> r = ringShape(*this))
    ringShifts(out, 2 * (r->members - 1), r->block(), r->blockBytes());
}

int64_t AttentionOp::getScratchBytes() {
  std::optional<RingShape> r = ringShape(*this);
  return r ? r->state() + r->blocks() : 0;
}

// The backward: the blocks around once (n - 1 shifts; twice without the
// forward's saved log-sum-exp), the dK and dV accumulators all the way (n
// shifts).
void AttentionGradOp::getCollectives(SmallVectorImpl<Collective> &out) {
  if (std::optional<RingShape> r = ringShape(*this)) {
    int64_t trips = getSaved().empty() ? 2 : 1;
    ringShifts(out, trips * 2 * (r->members - 1), r->block(), r->blockBytes());
    ringShifts(out, 2 * r->members, r->block(), 4);
  }
}

/// Ring attention: see RingShape. Context-parallel (all-gather form): the
/// scalar flash kernels', which it always uses (AttentionKernels.cpp,
/// lowerFlashGrad), in f32: the row statistics L and D ([B, heads, S]
/// each) with the dQ accumulator ([B, heads, S, d], first kernel) or the dK
/// and dV accumulators over the whole sequence ([B, kv, T, d] each, second
/// kernel). Otherwise none the cost model counts (the local kernels'
/// scratch is not modelled).
int64_t AttentionGradOp::getScratchBytes() {
  if (std::optional<RingShape> r = ringShape(*this)) {
    // The gradients' trip: L (unless saved) and D, dQ's accumulator, the
    // blocks and the dK/dV accumulators (two of each, in hand and
    // arriving).
    int64_t savedL = getSaved().empty() ? 0 : 4 * r->b * r->heads * r->s;
    return r->state() - savedL + r->blocks() + 4 * 4 * r->block();
  }
  if (!getMeshAttr())
    return 0;
  auto q = getQuery().getType(), k = getKey().getType();
  if (!q.hasStaticShape() || !k.hasStaticShape())
    return 0;
  int64_t b = q.getDimSize(0), s = q.getDimSize(1), t = k.getDimSize(1);
  int64_t heads = getHeads(), kv = getKvHeads().value_or(getHeads());
  int64_t d = q.getDimSize(2) / heads;
  return 4 *
         (2 * b * heads * s + std::max(b * heads * s * d, 2 * b * kv * t * d));
}

#define GET_OP_CLASSES
#include "triax/Dialect/Triax/IR/TriaxOps.cpp.inc"

bool mlir::triax::isAccumulatedTermByTerm(AddOp sum) {
  if (!sum->hasOneUse() || sum.getLhs().getType() != sum.getType() ||
      sum.getRhs().getType() != sum.getType())
    return false;
  Operation *user = *sum->getUsers().begin();
  return isa<AccumulateGradOp>(user) && user->getBlock() == sum->getBlock();
}

bool mlir::triax::isOnlyAccumulated(Value v) {
  auto type = dyn_cast<ShapedType>(v.getType());
  if (!type ||
      !(type.getElementType().isF32() || type.getElementType().isBF16()))
    return false;
  while (v.hasOneUse()) {
    OpOperand &use = *v.use_begin();
    Operation *user = use.getOwner();
    if (isa<AccumulateGradOp>(user))
      return true;
    if (auto sum = dyn_cast<AddOp>(user))
      return isAccumulatedTermByTerm(sum);
    if (!isa<YieldOp>(user))
      return false;
    v = user->getParentOp()->getResult(use.getOperandNumber());
  }
  return false;
}

GeluGradOp mlir::triax::geluGradEpilogueOf(LinearOp linear) {
  if (!linear->hasOneUse() || linear.getBias())
    return {};
  auto grad = dyn_cast<GeluGradOp>(*linear->getUsers().begin());
  if (!grad || grad.getResultGrad() != linear.getResult() ||
      grad->getBlock() != linear->getBlock() ||
      grad.getType() != linear.getType())
    return {};
  Type element = linear.getType().getElementType();
  if (!(element.isF32() || element.isBF16()) ||
      linear.getInput().getType().getElementType() != element ||
      linear.getWeight().getType().getElementType() != element)
    return {};
  Operation *input = grad.getInput().getDefiningOp();
  if (input && input->getBlock() == linear->getBlock() &&
      !input->isBeforeInBlock(linear))
    return {};
  return grad;
}

/// gelu-epilogue: the GEMM of its upstream gradient writes it
/// (geluGradEpilogueOf), in that GEMM's buffer.
ResultStorage GeluGradOp::getResultStorage(unsigned) {
  auto linear = getResultGrad().getDefiningOp<LinearOp>();
  if (linear && geluGradEpilogueOf(linear) == *this)
    return ResultStorage::over(getResultGradMutable().getOperandNumber());
  return elementwiseStorage(*this);
}

bool mlir::triax::isKernelBuffer(Value value) {
  auto result = dyn_cast<OpResult>(value);
  if (!result)
    return false;
  Operation *def = result.getOwner();
  if (auto block = dyn_cast<BlockOp>(def))
    return isKernelBuffer(block.getBody().front().getTerminator()->getOperand(
        result.getResultNumber()));
  if (!isa_and_nonnull<TriaxDialect>(def->getDialect()))
    return false;
  // A parameter's converted copy is made once per function and read by
  // every block that converts it (convert-triax-to-kernels hoists them).
  if (auto convert = dyn_cast<ConvertOp>(def))
    return !convert.getInput().getDefiningOp<GetParamOp>();
  // An elementwise result is a buffer of its own or one it wrote over
  // (asked directly: its storage would walk the chain of sums again), but a
  // sum accumulated term by term.
  if (auto sum = dyn_cast<AddOp>(def))
    return !isAccumulatedTermByTerm(sum);
  if (isa<ScalarElementwiseOpInterface, FusedElementwiseOp>(def))
    return true;
  // (An operand's buffer written over is one of the kernels': the rules
  // that write over one require it.)
  return getResultStorage(def, result.getResultNumber()).kind !=
         ResultStorage::Kind::None;
}

bool mlir::triax::mayWriteOver(Operation *op, Value operand) {
  Operation *def = operand.getDefiningOp();
  if (!def || def->getBlock() != op->getBlock())
    return false;
  bool readAfter = llvm::any_of(operand.getUsers(), [&](Operation *user) {
    if (user == op)
      return false;
    Dialect *dialect = user->getDialect();
    return !dialect || isa<dist::DistDialect>(dialect) ||
           user->getBlock() != op->getBlock() || !user->isBeforeInBlock(op);
  });
  return !readAfter && isKernelBuffer(operand);
}

std::optional<unsigned>
mlir::triax::overwritableOperand(Operation *op, Type type,
                                 ArrayRef<unsigned> taken) {
  for (OpOperand &operand : op->getOpOperands())
    if (operand.get().getType() == type &&
        !llvm::is_contained(taken, operand.getOperandNumber()) &&
        mayWriteOver(op, operand.get()))
      return operand.getOperandNumber();
  return std::nullopt;
}

//===----------------------------------------------------------------------===//
// Mixture of experts
//===----------------------------------------------------------------------===//

/// A static tensor of rank `rank`, or an error naming `what`.
static LogicalResult verifyStaticRank(Operation *op, StringRef what, Value v,
                                      int64_t rank, StringRef layout) {
  auto type = tensorType(v);
  if (type.getRank() != rank || !type.hasStaticShape())
    return op->emitOpError() << what << " must be a static " << layout
                             << " tensor, got " << v.getType();
  return success();
}

static LogicalResult verifyShapeIs(Operation *op, StringRef what, Value v,
                                   ArrayRef<int64_t> expected,
                                   StringRef layout) {
  if (tensorType(v).getShape() != expected)
    return op->emitOpError()
           << what << " has shape " << formatShape(tensorType(v).getShape())
           << ", expected " << layout << " = " << formatShape(expected);
  return success();
}

/// The routing operands of a dispatch or combine: tokens [B, S, H], the
/// expert buffer [E, B*C, H], slots [B, S, k], assign [B, E*C] and the
/// optional gates [B, S, k].
static LogicalResult verifyRouting(Operation *op, Value tokens, Value buffer,
                                   Value slots, Value assign, Value gates) {
  if (failed(verifyStaticRank(op, "the tokens", tokens, 3, "[B, S, H]")) ||
      failed(verifyStaticRank(op, "the expert buffer", buffer, 3,
                              "[E, B*C, H]")) ||
      failed(verifyStaticRank(op, "slots", slots, 3, "[B, S, k]")) ||
      failed(verifyStaticRank(op, "assign", assign, 2, "[B, E*C]")))
    return failure();
  ArrayRef<int64_t> t = tensorType(tokens).getShape();
  ArrayRef<int64_t> buf = tensorType(buffer).getShape();
  int64_t batch = t[0], experts = buf[0];
  int64_t k = tensorType(slots).getDimSize(2);
  if (failed(verifyShapeIs(op, "slots", slots, {batch, t[1], k}, "[B, S, k]")))
    return failure();
  int64_t rows = tensorType(assign).getDimSize(1);
  if (rows % experts != 0)
    return op->emitOpError("assign has ")
           << rows << " rows per sequence, not a multiple of the " << experts
           << " experts";
  int64_t capacity = rows / experts;
  if (failed(verifyShapeIs(op, "assign", assign, {batch, rows}, "[B, E*C]")) ||
      failed(verifyShapeIs(op, "the expert buffer", buffer,
                           {experts, batch * capacity, t[2]}, "[E, B*C, H]")))
    return failure();
  // (The floats may mix f32 and bf16: the gathers compute in f32 and store
  // in their result's type; mixed precision keeps in f32 a buffer on its
  // way to or from a collective.)
  if (gates &&
      failed(verifyShapeIs(op, "gates", gates, {batch, t[1], k}, "[B, S, k]")))
    return failure();
  return success();
}

LogicalResult MoERouteOp::verify() {
  if (failed(verifyStaticRank(*this, "the router logits", getLogits(), 3,
                              "[B, S, E]")))
    return failure();
  ArrayRef<int64_t> shape = getLogits().getType().getShape();
  int64_t batch = shape[0], seq = shape[1], experts = shape[2];
  int64_t k = getTopK(), capacity = getCapacity();
  if (k < 1 || k > experts)
    return emitOpError("top_k must be between 1 and the ")
           << experts << " experts, got " << k;
  if (capacity < 1 || capacity > seq)
    return emitOpError("capacity must be between 1 and the sequence length ")
           << seq << " (which drops nothing), got " << capacity;
  double coeff = getAuxCoeff().convertToDouble();
  if (!std::isfinite(coeff) || coeff < 0)
    return emitOpError("aux_coeff must be a finite number >= 0, got ") << coeff;
  if (getGates().getType().getElementType() !=
      getLogits().getType().getElementType())
    return emitOpError("gates must have the logits' element type ")
           << getLogits().getType().getElementType();
  std::pair<StringRef, Value> perChoice[] = {
      {"gates", getGates()}, {"experts", getExperts()}, {"slots", getSlots()}};
  for (auto [what, v] : perChoice)
    if (failed(verifyShapeIs(*this, what, v, {batch, seq, k}, "[B, S, k]")))
      return failure();
  return verifyShapeIs(*this, "assign", getAssign(),
                       {batch, experts * capacity}, "[B, E*C]");
}

LogicalResult MoEDispatchOp::verify() {
  return verifyRouting(*this, getInput(), getResult(), getSlots(), getAssign(),
                       getGates());
}

LogicalResult MoECombineOp::verify() {
  return verifyRouting(*this, getResult(), getInput(), getSlots(), getAssign(),
                       getGates());
}

/// x [E, N, in] and W [E, in, out] (or [E, out, in]) of an expert_linear:
/// the shape of the product, [E, N, out].
static FailureOr<SmallVector<int64_t>> verifyExpertOperands(Operation *op,
                                                            Value input,
                                                            Value weight,
                                                            bool transposed) {
  if (failed(verifyStaticRank(op, "the input", input, 3, "[E, N, in]")) ||
      failed(verifyStaticRank(op, "the weight", weight, 3,
                              transposed ? "[E, out, in]" : "[E, in, out]")))
    return failure();
  ArrayRef<int64_t> x = tensorType(input).getShape();
  ArrayRef<int64_t> w = tensorType(weight).getShape();
  int64_t in = transposed ? w[2] : w[1], out = transposed ? w[1] : w[2];
  if (w[0] != x[0])
    return op->emitOpError("the weight holds ")
           << w[0] << " experts but the input " << x[0];
  if (in != x[2])
    return op->emitOpError("the weight's input dimension ")
           << in << " does not match the input's last dimension " << x[2];
  return SmallVector<int64_t>{x[0], x[1], out};
}

LogicalResult ExpertLinearOp::verify() {
  auto expected = verifyExpertOperands(*this, getInput(), getWeight(),
                                       getTransposeWeight());
  if (failed(expected) ||
      failed(verifyResultShape(*this, getType().getShape(), *expected)))
    return failure();
  // The GEMM's operands share a type; its result is theirs or f32 (an
  // output on its way to a collective under mixed precision).
  if (!isResultElementType(getType().getElementType(),
                           getInput().getType().getElementType()))
    return emitOpError("result element type ")
           << getType().getElementType() << " must be the input's or f32";
  return verifySameFloatElementType(*this, {getInput(), getWeight()});
}

LogicalResult ExpertLinearWeightGradOp::verify() {
  if (failed(
          verifyStaticRank(*this, "the input", getInput(), 3, "[E, N, in]")) ||
      failed(verifyStaticRank(*this, "the result gradient", getResultGrad(), 3,
                              "[E, N, out]")))
    return failure();
  ArrayRef<int64_t> x = getInput().getType().getShape();
  ArrayRef<int64_t> dy = getResultGrad().getType().getShape();
  if (x[0] != dy[0] || x[1] != dy[1])
    return emitOpError("the input ")
           << formatShape(x) << " and the result gradient " << formatShape(dy)
           << " must share [E, N]";
  SmallVector<int64_t> expected = getTransposeWeight()
                                      ? SmallVector<int64_t>{x[0], dy[2], x[2]}
                                      : SmallVector<int64_t>{x[0], x[2], dy[2]};
  if (failed(verifyResultShape(*this, getType().getShape(), expected)))
    return failure();
  if (!isResultElementType(getType().getElementType(),
                           getInput().getType().getElementType()))
    return emitOpError("result element type ")
           << getType().getElementType() << " must be the input's or f32";
  if (FloatAttr scale = getScaleAttr();
      scale && !(scale.getValueAsDouble() > 0 &&
                 std::isfinite(scale.getValueAsDouble())))
    return emitOpError("scale must be a finite number > 0, got ")
           << scale.getValueAsDouble();
  return verifySameFloatElementType(*this, {getInput(), getResultGrad()});
}

LogicalResult MoERouteGradOp::verify() {
  if (failed(verifyStaticRank(*this, "the router logits", getLogits(), 3,
                              "[B, S, E]")) ||
      failed(verifyStaticRank(*this, "experts", getExperts(), 3, "[B, S, k]")))
    return failure();
  ArrayRef<int64_t> l = getLogits().getType().getShape();
  int64_t k = getExperts().getType().getDimSize(2);
  if (failed(verifyShapeIs(*this, "experts", getExperts(), {l[0], l[1], k},
                           "[B, S, k]")) ||
      failed(verifyShapeIs(*this, "the gates' gradient", getGatesGrad(),
                           {l[0], l[1], k}, "[B, S, k]")))
    return failure();
  return verifyResultLike(*this, "result", getType(), getLogits().getType(),
                          "the logits'");
}

LogicalResult MoEGatesGradOp::verify() {
  if (failed(
          verifyStaticRank(*this, "the tokens", getTokens(), 3, "[B, S, H]")) ||
      failed(verifyStaticRank(*this, "the expert buffer", getBuffer(), 3,
                              "[E, B*C, H]")) ||
      failed(verifyStaticRank(*this, "slots", getSlots(), 3, "[B, S, k]")))
    return failure();
  ArrayRef<int64_t> t = getTokens().getType().getShape();
  ArrayRef<int64_t> buf = getBuffer().getType().getShape();
  int64_t k = getSlots().getType().getDimSize(2);
  if (buf[1] % t[0] != 0 || buf[2] != t[2])
    return emitOpError("the expert buffer ")
           << formatShape(buf) << " does not hold [E, B*C, H] rows for tokens "
           << formatShape(t);
  if (failed(verifyShapeIs(*this, "slots", getSlots(), {t[0], t[1], k},
                           "[B, S, k]")) ||
      failed(verifyResultShape(*this, getType().getShape(), {t[0], t[1], k})))
    return failure();
  return success();
}
