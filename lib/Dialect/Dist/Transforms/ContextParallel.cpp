//===- ContextParallel.cpp - Split the sequence over the cp mesh axis -----===//
//
// dist-context-parallel (see Passes.td): the per-token inputs of @forward
// are sharded along the sequence (dist.shard_sequence, load-balanced
// chunks) and the split follows in program order by each op's rule along
// the sequence (ShardingRuleOpInterface): local ops keep the member's
// tokens, attention gathers its keys and values over the group (or, with
// comm=ring, passes them around the ring itself), the loss
// becomes the group's mean. Every parameter's gradient is partial over the
// group.
//
//===----------------------------------------------------------------------===//

#include "triax/Dialect/Dist/Transforms/Passes.h"

#include "triax/Dialect/Dist/IR/Dist.h"
#include "triax/Dialect/Dist/Transforms/MeshAxis.h"
#include "triax/Dialect/Triax/IR/Triax.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseSet.h"

namespace mlir::dist {
#define GEN_PASS_DEF_DISTCONTEXTPARALLEL
#include "triax/Dialect/Dist/Transforms/Passes.h.inc"
} // namespace mlir::dist

using namespace mlir;
using namespace mlir::dist;
namespace tx = mlir::triax;

namespace {

/// The sequence dimension of the activations ([batch, seq, ...]) and of
/// the per-token inputs ([batch, seq]).
constexpr int64_t kSeqDim = 1;

/// Splits one model's @forward over the group of `axis` (n members).
class Splitter {
public:
  Splitter(tx::ModelOp model, MeshOp mesh, StringRef axis, int64_t n, bool ring)
      : model(model), n(n), ring(ring), b(model.getContext()),
        meshRef(FlatSymbolRefAttr::get(mesh.getSymNameAttr())),
        axes(b.getStrArrayAttr({axis})) {}

  LogicalResult run();

private:
  /// `type` with `seq / n` tokens along the sequence.
  RankedTensorType local(RankedTensorType type) const {
    SmallVector<int64_t> shape(type.getShape());
    shape[kSeqDim] /= n;
    return type.clone(shape);
  }
  /// Checks that a per-token input of `s` tokens splits into 2n chunks.
  LogicalResult checkSequence(int64_t s, Location loc);
  /// Shards a per-token input (after its definition) and makes its uses
  /// read the shard.
  LogicalResult shardInput(Value input, Location loc);
  /// Sequence parallelism's positions (this tp member's slice of the
  /// sequence): the whole sequence's positions, this member's chunks of
  /// them, then the tp member's contiguous slice of those.
  LogicalResult shardSlicedPositions(tx::PositionIdsOp op);
  /// Follows the split through `op`, one of the users of a split value.
  LogicalResult follow(Operation *op);
  /// The rule's kinds: `op`'s results hold this member's tokens; the
  /// gathered operands are the group's; the result is a partial mean.
  LogicalResult splitResults(Operation *op);
  LogicalResult gather(Operation *op, const tx::SplitRule &rule);
  void sumPartialMean(Operation *op);

  tx::ModelOp model;
  int64_t n;
  /// comm=ring: ops that can pass their gathered operands around the ring
  /// do (SplitRule::ring).
  bool ring;
  OpBuilder b;
  FlatSymbolRefAttr meshRef;
  ArrayAttr axes;
  /// The full sequence length (every per-token input's).
  int64_t seq = ShapedType::kDynamic;
  /// The values that hold this member's tokens.
  llvm::DenseSet<Value> split;
};

LogicalResult Splitter::checkSequence(int64_t s, Location loc) {
  if (ShapedType::isDynamic(s) || s % (2 * n) != 0)
    return emitError(loc, "dist-context-parallel: cp=")
           << n << " splits each sequence into " << 2 * n
           << " equal chunks (chunk c and its mirror 2cp-1-c per member), "
              "but the sequence has "
           << s << " tokens";
  if (!ShapedType::isDynamic(seq) && s != seq)
    return emitError(loc, "dist-context-parallel: a per-token input of ")
           << s << " tokens in a model of sequence " << seq;
  seq = s;
  return success();
}

LogicalResult Splitter::shardInput(Value input, Location loc) {
  auto type = cast<RankedTensorType>(input.getType());
  if (failed(checkSequence(type.getDimSize(kSeqDim), loc)))
    return failure();
  auto shard = ShardSequenceOp::create(b, loc, local(type), input,
                                       meshRef.getValue(), axes, kSeqDim);
  input.replaceAllUsesExcept(shard, shard);
  split.insert(shard);
  return success();
}

LogicalResult Splitter::shardSlicedPositions(tx::PositionIdsOp op) {
  RankedTensorType slice = op.getType();
  SmallVector<int64_t> shape(slice.getShape());
  shape[kSeqDim] = seq;
  Location loc = op.getLoc();
  b.setInsertionPoint(op);
  Value whole = tx::PositionIdsOp::create(b, loc, slice.clone(shape));
  Value mine = ShardSequenceOp::create(b, loc, local(slice.clone(shape)), whole,
                                       meshRef.getValue(), axes, kSeqDim);
  auto sliced = ShardSequenceOp::create(b, loc, local(slice), mine,
                                        op.getMeshAttr().getValue(),
                                        op.getAxesAttr(), kSeqDim,
                                        /*contiguous=*/true);
  op.getResult().replaceAllUsesWith(sliced.getResult());
  op.erase();
  split.insert(sliced);
  return success();
}

LogicalResult Splitter::splitResults(Operation *op) {
  // Each result holds this member's tokens: its sequence (the whole one,
  // or a sequence-parallel slice of it) divided by n.
  for (Value result : op->getResults()) {
    auto type = dyn_cast<RankedTensorType>(result.getType());
    if (!type || type.getRank() <= kSeqDim ||
        ShapedType::isDynamic(type.getDimSize(kSeqDim)) ||
        type.getDimSize(kSeqDim) % n != 0)
      return op->emitOpError("dist-context-parallel: result ")
             << result.getType() << " does not split into the " << n
             << " members' tokens along dimension " << kSeqDim
             << " (a sequence of " << seq
             << ", or a sequence-parallel slice of it)";
    result.setType(local(type));
    split.insert(result);
  }
  return success();
}

LogicalResult Splitter::gather(Operation *op, const tx::SplitRule &rule) {
  for (Value operand : op->getOperands())
    if (!split.contains(operand))
      return op->emitOpError("dist-context-parallel: every operand must be "
                             "computed from the split tokens");
  if (ring && rule.ring) {
    cast<tx::ShardingRuleOpInterface>(op).applyRingSplit(n, meshRef, axes);
    return splitResults(op);
  }
  b.setInsertionPoint(op);
  for (unsigned index : rule.gathered) {
    OpOperand &operand = op->getOpOperand(index);
    auto type = cast<RankedTensorType>(operand.get().getType());
    SmallVector<int64_t> shape(type.getShape());
    shape[kSeqDim] *= n;
    operand.set(AllGatherOp::create(b, op->getLoc(), type.clone(shape),
                                    operand.get(), meshRef.getValue(), axes,
                                    kSeqDim));
  }
  cast<tx::ShardingRuleOpInterface>(op).applySplit(tx::SplitDim::Sequence, n,
                                                   meshRef, axes);
  return splitResults(op);
}

void Splitter::sumPartialMean(Operation *op) {
  // mean over the group = sum over the group of (local mean / n): equal
  // token counts on every member.
  b.setInsertionPointAfter(op);
  Location loc = op->getLoc();
  for (Value result : op->getResults()) {
    auto type = cast<RankedTensorType>(result.getType());
    Value scale = arith::ConstantOp::create(
        b, loc,
        DenseElementsAttr::get(
            type, b.getFloatAttr(type.getElementType(), 1.0 / double(n))));
    Value part = tx::MulOp::create(b, loc, type, result, scale);
    auto mean = AllReduceOp::create(b, loc, type, ReductionKind::sum, part,
                                    meshRef.getValue(), axes);
    result.replaceAllUsesExcept(mean, part.getDefiningOp());
  }
}

LogicalResult Splitter::follow(Operation *op) {
  // The structure: a block's arguments and results take the types of what
  // flows in and out.
  if (auto block = dyn_cast<tx::BlockOp>(op)) {
    for (auto [operand, arg] :
         llvm::zip_equal(op->getOperands(), block.getBody().getArguments()))
      if (split.contains(operand)) {
        arg.setType(operand.getType());
        split.insert(arg);
      }
    return success();
  }
  if (isa<tx::YieldOp>(op)) {
    for (auto [operand, result] :
         llvm::zip_equal(op->getOperands(), op->getParentOp()->getResults()))
      if (split.contains(operand)) {
        result.setType(operand.getType());
        split.insert(result);
      }
    return success();
  }
  if (isa<func::ReturnOp>(op))
    return op->emitOpError("dist-context-parallel: @forward returns a value "
                           "of the split sequence; it must return the loss");
  // Every other op by its rule along the sequence.
  tx::SplitRule rule = tx::getSplitRule(op, tx::SplitDim::Sequence);
  switch (rule.kind) {
  case tx::SplitRule::Kind::Local:
    return splitResults(op);
  case tx::SplitRule::Kind::Gather:
    return gather(op, rule);
  case tx::SplitRule::Kind::PartialMean:
    sumPartialMean(op);
    return success();
  case tx::SplitRule::Kind::Heads:
  case tx::SplitRule::Kind::Refused:
    break;
  }
  return op->emitOpError("dist-context-parallel: ")
         << (rule.reason.empty() ? "no rule along the sequence"
                                 : StringRef(rule.reason));
}

LogicalResult Splitter::run() {
  func::FuncOp forward = model.getForward();
  if (!forward)
    return model.emitError("dist-context-parallel: model @")
           << model.getSymName() << " has no @" << tx::ModelOp::kForwardName;
  // The per-token inputs: the [batch, seq] integer arguments, then the
  // positions.
  Block &entry = forward.getBody().front();
  b.setInsertionPointToStart(&entry);
  for (BlockArgument arg : entry.getArguments()) {
    auto type = dyn_cast<RankedTensorType>(arg.getType());
    if (type && type.getRank() == 2 &&
        isa<IntegerType>(type.getElementType()) &&
        failed(shardInput(arg, arg.getLoc())))
      return failure();
  }
  SmallVector<tx::PositionIdsOp> positions;
  forward.walk([&](tx::PositionIdsOp op) { positions.push_back(op); });
  for (tx::PositionIdsOp op : positions) {
    if (op.getMeshAttr()) {
      // Sequence parallelism's slice: the whole sequence is the slice's
      // times the tp group (the per-token arguments have set `seq`).
      if (failed(checkSequence(seq, op.getLoc())) ||
          failed(shardSlicedPositions(op)))
        return failure();
      continue;
    }
    b.setInsertionPointAfter(op);
    if (failed(shardInput(op.getResult(), op.getLoc())))
      return failure();
  }
  if (split.empty())
    return forward.emitError("dist-context-parallel: @")
           << tx::ModelOp::kForwardName
           << " has no per-token input ([batch, seq] integers) to split";
  // In program order (blocks before their bodies, yields before the ops
  // after the block): every operand is final when its user is visited.
  WalkResult walk = forward.walk<WalkOrder::PreOrder>([&](Operation *op) {
    if (llvm::none_of(op->getOperands(),
                      [&](Value v) { return split.contains(v); }))
      return WalkResult::advance();
    return failed(follow(op)) ? WalkResult::interrupt() : WalkResult::advance();
  });
  if (walk.wasInterrupted())
    return failure();
  // Each member applies every parameter to its own tokens: the full
  // gradient is the sum over the group (and over the tp group too where
  // sequence parallelism made it partial there already).
  for (tx::ParamOp param : model.getParams()) {
    SmallVector<Attribute> groupAxes;
    if (auto partial = param->getAttrOfType<PartialGradAttr>(
            DistDialect::kPartialGradAttrName))
      llvm::append_range(groupAxes, partial.getAxes());
    llvm::append_range(groupAxes, axes);
    param->setAttr(DistDialect::kPartialGradAttrName,
                   PartialGradAttr::get(b.getContext(), meshRef,
                                        b.getArrayAttr(groupAxes)));
  }
  return success();
}

struct ContextParallelPass
    : public mlir::dist::impl::DistContextParallelBase<ContextParallelPass> {
  using DistContextParallelBase::DistContextParallelBase;
  void runOnOperation() override;
};

} // namespace

void ContextParallelPass::runOnOperation() {
  ModuleOp module = getOperation();
  FailureOr<SmallVector<tx::ModelOp>> models =
      forwardModels(module, getArgument());
  if (failed(models))
    return signalPassFailure();
  MeshOp mesh =
      getOrCreateMeshAxis(module, getArgument(), cpAxis, cp.getValue());
  if (!mesh)
    return signalPassFailure();
  if (comm != "ring" && comm != "all-gather") {
    module.emitError(getArgument())
        << ": unknown comm '" << comm << "'; expected ring or all-gather";
    return signalPassFailure();
  }
  int64_t size = *mesh.getAxisSize(cpAxis);
  if (size == 1)
    return;
  for (tx::ModelOp model : *models)
    if (failed(Splitter(model, mesh, cpAxis, size, comm == "ring").run()))
      return signalPassFailure();
}
