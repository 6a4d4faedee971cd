//===- TensorParallel.cpp - Megatron tensor parallelism over the tp axis --===//
//
// dist-tensor-parallel: column/row-split linear pairs, heads split in
// attention, vocab-parallel embedding and cross-entropy, and optionally
// Megatron sequence parallelism between them (Passes.td has the rules and
// an example). The pass plans every split first and changes the
// IR only when the whole model can be split, so an error leaves the module
// as it was.
//
//===----------------------------------------------------------------------===//

#include "triax/Dialect/Dist/Transforms/Passes.h"

#include "triax/Dialect/Dist/IR/Dist.h"
#include "triax/Dialect/Dist/IR/MeshShape.h"
#include "triax/Dialect/Dist/Transforms/MeshAxis.h"
#include "triax/Dialect/Dist/Transforms/TensorParallelSplits.h"
#include "triax/Dialect/Triax/IR/Triax.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"

namespace mlir::dist {
#define GEN_PASS_DEF_DISTTENSORPARALLEL
#include "triax/Dialect/Dist/Transforms/Passes.h.inc"
} // namespace mlir::dist

using namespace mlir;
using namespace mlir::dist;
namespace tx = mlir::triax;

namespace {

/// The tokens' side of a MoE layer's experts pair: the moe_dispatch whose
/// buffer only the pair's columns read, and the moe_combine that alone reads
/// the pair's row products. Dispatch and combine are linear in the rows
/// (a gather, and a gate-weighted sum), so the group can sum the experts'
/// partial products after the combine, `[B, S, H]`, instead of the buffer,
/// `[E, B*C, H]` (C*E = capacity_factor * k * S rows a sequence), and the
/// gradient of the dispatch's input instead of the buffer's.
struct MoESides {
  tx::MoEDispatchOp dispatch;
  tx::MoECombineOp combine;
};

/// A column/row-split group: the column products, the ops between them and
/// the row products (in program order), all in one block. A product is a
/// triax.linear, or a triax.expert_linear (one per expert: Megatron's split
/// inside each expert's MLP, its weights [E, in, out] cut along out or in).
struct LinearPair {
  SmallVector<Operation *> columns;
  SmallVector<Operation *> locals;
  SmallVector<Operation *> rows;
  /// A MoE layer's experts summed on the tokens' side (moeSides).
  std::optional<MoESides> moe;
};

/// The accessors of a product (triax.linear or triax.expert_linear).
bool isProduct(Operation *op) {
  return isa<tx::LinearOp, tx::ExpertLinearOp>(op);
}
Value inputOf(Operation *op) { return op->getOperand(0); }
Value weightOf(Operation *op) { return op->getOperand(1); }
Value biasOf(Operation *op) {
  auto linear = dyn_cast<tx::LinearOp>(op);
  return linear ? linear.getBias() : Value();
}
/// The weight dimension of the product's outputs (`out`) or inputs.
int64_t weightDim(Operation *op, bool out) {
  bool transposed = op->hasAttr("transpose_weight");
  int64_t rank = cast<RankedTensorType>(weightOf(op).getType()).getRank();
  return rank - (out != transposed ? 1 : 2);
}
OpOperand &inputOperand(Operation *op) { return op->getOpOperand(0); }

/// The tokens' side of `pair` (MoESides), when its products are experts'.
std::optional<MoESides> moeSides(const LinearPair &pair) {
  MoESides sides;
  for (Operation *column : pair.columns) {
    auto dispatch = inputOf(column).getDefiningOp<tx::MoEDispatchOp>();
    if (!dispatch || (sides.dispatch && dispatch != sides.dispatch))
      return std::nullopt;
    sides.dispatch = dispatch;
  }
  if (llvm::any_of(sides.dispatch->getUsers(), [&](Operation *user) {
        return !llvm::is_contained(pair.columns, user);
      }))
    return std::nullopt;
  for (Operation *row : pair.rows) {
    Value product = row->getResult(0);
    if (!isa<tx::ExpertLinearOp>(row) || !product.hasOneUse())
      return std::nullopt;
    OpOperand &use = *product.use_begin();
    auto combine = dyn_cast<tx::MoECombineOp>(use.getOwner());
    if (!combine || use.getOperandNumber() != 0 ||
        (sides.combine && combine != sides.combine))
      return std::nullopt;
    sides.combine = combine;
  }
  return sides;
}

/// The splits planned for one model.
class Planner {
public:
  Planner(tx::ModelOp model, int64_t tp, StringRef axis, bool sequence)
      : model(model), tp(tp), axis(axis), sequence(sequence) {}

  /// Finds the pairs and the vocab-parallel ops; fails with an error when
  /// something that must be split cannot be.
  LogicalResult plan();
  /// Rewrites the model (after a successful plan()).
  void apply(MeshOp mesh);
  /// The planned splits: parameter -> dimension (after plan()).
  const llvm::MapVector<StringAttr, int64_t> &getSplits() const {
    return splits;
  }

private:
  bool tracePair(Value v, LinearPair &pair,
                 llvm::SmallPtrSetImpl<Operation *> &seen);
  bool closePair(LinearPair &pair);
  LogicalResult checkPair(const LinearPair &pair);
  LogicalResult requestSplit(Value weight, int64_t dim, Operation *user,
                             StringRef what);
  LogicalResult planHeads();
  LogicalResult planEmbeddings();
  LogicalResult checkVocab(Operation *op, int64_t vocab) const {
    if (vocab % tp != 0)
      return op->emitOpError("dist-tensor-parallel: the vocab size ")
             << vocab << " is not divisible by tp=" << tp
             << " (pad the vocabulary to a multiple of tp first: "
                "triax-pad-vocab, which triax-parallelize and triaxc run)";
    return success();
  }
  LogicalResult checkParamUses();
  LogicalResult planSequence();
  LogicalResult checkSequence(Operation *op, Value v) const;

  RankedTensorType localType(Type global, int64_t dim) const {
    auto type = cast<RankedTensorType>(global);
    SmallVector<int64_t> shape(type.getShape());
    shape[dim] /= tp;
    return type.clone(shape);
  }
  Value copyToGroup(OpBuilder &b, Value x, Operation *before);
  Value gatherSequence(OpBuilder &b, Value x, Operation *before);
  Value sumPartial(OpBuilder &b, Value partial);

  tx::ModelOp model;
  int64_t tp;
  StringRef axis;
  bool sequence;
  FlatSymbolRefAttr meshRef;
  ArrayAttr axes;

  /// Linears already in a pair or the head (so no linear is split twice).
  llvm::SmallPtrSet<Operation *, 16> assigned;
  SmallVector<LinearPair> pairs;
  /// The LM heads and their losses; the vocab-parallel embeddings.
  SmallVector<std::pair<tx::LinearOp, tx::CrossEntropyOp>> heads;
  SmallVector<tx::EmbeddingOp> embeddings;
  /// Parameter name -> split dimension, and the operands that read the
  /// split parameter in a way the plan accounts for.
  llvm::MapVector<StringAttr, int64_t> splits;
  llvm::DenseSet<OpOperand *> splitUses;

  /// Sequence parallelism: the values that become this rank's slice of the
  /// sequence (retyped by apply(), in the order found), the position ids
  /// among them, and the replicated parameters read by ops on the slice
  /// (their gradients are partial).
  llvm::SetVector<Value> sequenceValues;
  SmallVector<tx::PositionIdsOp> positions;
  llvm::SetVector<StringAttr> partialGrads;
  /// The MoE routers whose logits are computed on the slice.
  llvm::SetVector<Operation *> routes;
};

} // namespace

/// Whether `op` can run between a column and a row linear: on each member's
/// columns, by its rule along the features (ShardingRuleOpInterface: local,
/// like the elementwise ops, or by heads, like attention).
static bool runsOnFeatureSlice(Operation *op) {
  tx::SplitRule::Kind kind = tx::getSplitRule(op, tx::SplitDim::Feature).kind;
  return op->getNumResults() == 1 && (kind == tx::SplitRule::Kind::Local ||
                                      kind == tx::SplitRule::Kind::Heads);
}

/// Walks back from `v` (the input of a row linear or something it is
/// computed from) to column linears through the ops that run on a slice of
/// the features.
bool Planner::tracePair(Value v, LinearPair &pair,
                        llvm::SmallPtrSetImpl<Operation *> &seen) {
  Operation *def = v.getDefiningOp();
  if (!def)
    return false;
  if (seen.contains(def))
    return true;
  if (isProduct(def)) {
    if (assigned.contains(def))
      return false;
    seen.insert(def);
    pair.columns.push_back(def);
    return true;
  }
  if (!runsOnFeatureSlice(def))
    return false;
  seen.insert(def);
  pair.locals.push_back(def);
  // (Integer operands, triax.rope's positions, are read whole by every
  // member: not features.)
  for (Value operand : def->getOperands())
    if (isa<FloatType>(getElementTypeOrSelf(operand)) &&
        !tracePair(operand, pair, seen))
      return false;
  return true;
}

/// Checks that the values between the columns and the rows are used only
/// inside the pair (or as the input of a row linear, which joins the pair),
/// and puts everything in program order.
bool Planner::closePair(LinearPair &pair) {
  llvm::SmallPtrSet<Operation *, 16> inside;
  for (Operation *column : pair.columns)
    inside.insert(column);
  for (Operation *op : pair.locals)
    inside.insert(op);
  Block *block = pair.columns.front()->getBlock();
  llvm::SetVector<Operation *> rows;
  for (Operation *op : inside) {
    if (op->getBlock() != block)
      return false;
    for (OpOperand &use : op->getResult(0).getUses()) {
      Operation *user = use.getOwner();
      if (inside.contains(user))
        continue;
      if (!isProduct(user) || use.getOperandNumber() != 0 ||
          assigned.contains(user) || user->getBlock() != block)
        return false;
      rows.insert(user);
    }
  }
  auto before = [](Operation *a, Operation *b) {
    return a->isBeforeInBlock(b);
  };
  llvm::sort(pair.columns, before);
  llvm::sort(pair.locals, before);
  pair.rows.assign(rows.begin(), rows.end());
  llvm::sort(pair.rows, before);
  return true;
}

/// The divisibility a pair needs; the errors name the op, the quantity and
/// both numbers.
LogicalResult Planner::checkPair(const LinearPair &pair) {
  for (Operation *column : pair.columns) {
    int64_t size = cast<RankedTensorType>(column->getResult(0).getType())
                       .getShape()
                       .back();
    bool feedsAttention = llvm::any_of(column->getUsers(), [](Operation *u) {
      return tx::getSplitRule(u, tx::SplitDim::Feature).kind ==
             tx::SplitRule::Kind::Heads;
    });
    if (size % tp != 0)
      return column->emitOpError("dist-tensor-parallel: the ")
             << (feedsAttention ? "hidden" : "ffn") << " size " << size
             << " (the output size of a column-split linear) is not "
                "divisible by tp="
             << tp;
  }
  for (Operation *op : pair.locals)
    if (auto rule = dyn_cast<tx::ShardingRuleOpInterface>(op))
      if (failed(rule.verifySplit(tx::SplitDim::Feature, tp,
                                  "dist-tensor-parallel",
                                  axisName(TRX_AXIS_TENSOR))))
        return failure();
  return success();
}

/// Plans splitting the parameter read by `weight` along `dim`.
LogicalResult Planner::requestSplit(Value weight, int64_t dim, Operation *user,
                                    StringRef what) {
  auto read = weight.getDefiningOp<tx::GetParamOp>();
  if (!read)
    return user->emitOpError("dist-tensor-parallel: the ")
           << what << " to split is not a parameter (triax.get_param)";
  StringAttr name = read.getNameAttr().getAttr();
  auto [it, inserted] = splits.insert({name, dim});
  if (!inserted && it->second != dim)
    return user->emitOpError("dist-tensor-parallel: parameter @")
           << name.getValue() << " would be split along dimension " << dim
           << " here and along dimension " << it->second << " elsewhere";
  for (OpOperand &use : user->getOpOperands())
    if (use.get() == weight)
      splitUses.insert(&use);
  return success();
}

LogicalResult Planner::plan() {
  func::FuncOp forward = model.getForward();
  for (tx::ParamOp param : model.getParams())
    if (param->hasAttr(DistDialect::kShardingAttrName))
      return param.emitOpError("dist-tensor-parallel: parameter @")
             << param.getSymName()
             << " is split already; the pass runs once per model";

  // The heads first: a head is never the row linear of a pair.
  if (failed(planHeads()))
    return failure();
  // Column/row pairs, found from their row products in program order.
  SmallVector<Operation *> products;
  forward.walk([&](Operation *op) {
    if (isProduct(op))
      products.push_back(op);
  });
  for (Operation *row : products) {
    if (assigned.contains(row))
      continue;
    LinearPair pair;
    llvm::SmallPtrSet<Operation *, 16> seen;
    if (!tracePair(inputOf(row), pair, seen) || pair.columns.empty() ||
        !closePair(pair))
      continue;
    if (failed(checkPair(pair)))
      return failure();
    pair.moe = moeSides(pair);
    // Sequence parallelism cuts the tokens between the pairs; an expert's
    // rows are slots of a dispatch buffer, not a sequence, so the experts
    // are summed on the tokens' side or not at all.
    if (sequence && !pair.moe && isa<tx::ExpertLinearOp>(pair.rows.front()))
      return pair.rows.front()->emitOpError(
          "dist-tensor-parallel: sequence-parallel sums the experts' partial "
          "products after their triax.moe_combine, but something else reads "
          "them (or their buffer is not a triax.moe_dispatch's)");
    for (Operation *column : pair.columns) {
      if (failed(requestSplit(weightOf(column), weightDim(column, true), column,
                              "weight")))
        return failure();
      if (Value bias = biasOf(column))
        if (failed(requestSplit(bias, 0, column, "bias")))
          return failure();
      assigned.insert(column);
    }
    for (Operation *r : pair.rows) {
      if (failed(requestSplit(weightOf(r), weightDim(r, false), r, "weight")))
        return failure();
      assigned.insert(r);
    }
    pairs.push_back(std::move(pair));
  }
  if (failed(planEmbeddings()))
    return failure();
  if (failed(checkParamUses()))
    return failure();
  return sequence ? planSequence() : success();
}

/// `v`, produced or read by `op`, can be split along the sequence: a
/// [batch, seq, ...] tensor whose seq divides by tp.
LogicalResult Planner::checkSequence(Operation *op, Value v) const {
  auto type = cast<RankedTensorType>(v.getType());
  if (type.getRank() < 2)
    return op->emitOpError("dist-tensor-parallel: sequence-parallel splits "
                           "[batch, seq, ...] activations, got ")
           << type;
  if (type.getDimSize(1) % tp != 0)
    return op->emitOpError("dist-tensor-parallel: sequence-parallel splits "
                           "the sequence (dimension 1, size ")
           << type.getDimSize(1) << ") over tp=" << tp
           << ", which does not divide it";
  return success();
}

/// Finds the activations between the tensor-parallel regions: from the
/// sums of the row linears and of the vocab-parallel embeddings, and from
/// the position ids, forward through the ops that run on any slice of the
/// sequence (elementwise ops, norms, the position embedding, blocks), up
/// to the inputs of the column groups and heads (where the sequence is
/// gathered).
LogicalResult Planner::planSequence() {
  llvm::SmallPtrSet<Operation *, 16> gathers;
  for (LinearPair &pair : pairs) {
    if (pair.moe) {
      gathers.insert(pair.moe->dispatch);
      continue;
    }
    for (Operation *column : pair.columns)
      gathers.insert(column);
  }
  for (auto [head, loss] : heads)
    gathers.insert(head);

  // Seeds: values the pass replaces (row results, embedding lookups) are
  // only walked from; the position ids are retyped.
  SmallVector<Value> worklist;
  llvm::DenseSet<Value> seeds;
  for (LinearPair &pair : pairs) {
    if (pair.moe) {
      Value sum = pair.moe->combine.getResult();
      if (failed(checkSequence(pair.moe->combine, sum)))
        return failure();
      seeds.insert(sum);
      worklist.push_back(sum);
      continue;
    }
    for (Operation *row : pair.rows) {
      if (failed(checkSequence(row, row->getResult(0))))
        return failure();
      seeds.insert(row->getResult(0));
      worklist.push_back(row->getResult(0));
      if (Value bias = biasOf(row))
        if (auto read = bias.getDefiningOp<tx::GetParamOp>())
          partialGrads.insert(read.getNameAttr().getAttr());
    }
  }
  for (tx::EmbeddingOp lookup : embeddings) {
    if (failed(checkSequence(lookup, lookup.getResult())))
      return failure();
    seeds.insert(lookup.getResult());
    worklist.push_back(lookup.getResult());
  }
  // (Positions read only inside the pairs, triax.rope's, stay whole: the
  // sequence is gathered there.)
  llvm::SmallPtrSet<Operation *, 16> pairOps;
  for (LinearPair &pair : pairs)
    pairOps.insert(pair.locals.begin(), pair.locals.end());
  model.getForward().walk([&](tx::PositionIdsOp op) {
    if (llvm::any_of(op->getUsers(),
                     [&](Operation *user) { return !pairOps.contains(user); }))
      positions.push_back(op);
  });
  for (tx::PositionIdsOp op : positions) {
    if (failed(checkSequence(op, op.getResult())))
      return failure();
    sequenceValues.insert(op.getResult());
    worklist.push_back(op.getResult());
  }

  SmallVector<Operation *> onSlice;
  auto add = [&](Value v) {
    if (sequenceValues.insert(v))
      worklist.push_back(v);
  };
  while (!worklist.empty()) {
    Value v = worklist.pop_back_val();
    for (OpOperand &use : v.getUses()) {
      Operation *user = use.getOwner();
      unsigned index = use.getOperandNumber();
      if (gathers.contains(user) && index == 0)
        continue;
      // A MoE router's logits: its capacity scan takes the whole sequence,
      // which every member then routes alike (gathered in apply()).
      if (auto route = dyn_cast<tx::MoERouteOp>(user)) {
        routes.insert(route);
        continue;
      }
      if (auto block = dyn_cast<tx::BlockOp>(user)) {
        add(block.getBody().front().getArgument(index));
        continue;
      }
      if (isa<tx::YieldOp>(user)) {
        add(user->getParentOp()->getResult(index));
        continue;
      }
      // The ops whose rule along the sequence is local (per-token ops:
      // elementwise, norms, the position embedding's lookup).
      tx::SplitRule rule = tx::getSplitRule(user, tx::SplitDim::Sequence);
      if (rule.kind != tx::SplitRule::Kind::Local ||
          user->getNumResults() != 1) {
        return user->emitOpError("dist-tensor-parallel: sequence-parallel "
                                 "splits operand #")
               << index
               << " along the sequence, but this op cannot run on a slice "
                  "of the sequence"
               << (rule.reason.empty() ? "" : ": " + rule.reason);
      }
      onSlice.push_back(user);
      add(user->getResult(0));
    }
  }
  // Every activation an op on the slice reads must be on the slice too;
  // the parameters it reads are replicated with partial gradients.
  for (Operation *op : onSlice)
    for (Value operand : op->getOperands()) {
      if (auto read = operand.getDefiningOp<tx::GetParamOp>()) {
        partialGrads.insert(read.getNameAttr().getAttr());
        continue;
      }
      auto type = dyn_cast<RankedTensorType>(operand.getType());
      if (!type || type.getRank() < 2 || sequenceValues.contains(operand) ||
          seeds.contains(operand))
        continue;
      return op->emitOpError("dist-tensor-parallel: sequence-parallel: this "
                             "op mixes the rank's slice of the sequence with "
                             "a whole-sequence operand ")
             << type;
    }
  return success();
}

LogicalResult Planner::planHeads() {
  func::FuncOp forward = model.getForward();
  // The LM head: a linear whose only use is the logits of a cross-entropy.
  SmallVector<tx::CrossEntropyOp> losses;
  forward.walk([&](tx::CrossEntropyOp op) { losses.push_back(op); });
  for (tx::CrossEntropyOp loss : losses) {
    auto head = loss.getLogits().getDefiningOp<tx::LinearOp>();
    if (!head || assigned.contains(head) || !head->hasOneUse())
      continue;
    if (failed(checkVocab(head, head.getType().getShape().back())))
      return failure();
    int64_t out = head.getTransposeWeight() ? 0 : 1;
    if (failed(requestSplit(head.getWeight(), out, head, "weight")))
      return failure();
    if (Value bias = head.getBias())
      if (failed(requestSplit(bias, 0, head, "bias")))
        return failure();
    assigned.insert(head);
    heads.push_back({head, loss});
  }
  return success();
}

LogicalResult Planner::planEmbeddings() {
  func::FuncOp forward = model.getForward();
  // Embeddings of the token ids, or of a table already split by rows (a
  // head tied to it).
  Value tokens = forward.getArgument(0);
  SmallVector<tx::EmbeddingOp> lookups;
  forward.walk([&](tx::EmbeddingOp op) { lookups.push_back(op); });
  for (tx::EmbeddingOp lookup : lookups) {
    auto read = lookup.getTable().getDefiningOp<tx::GetParamOp>();
    auto split =
        read ? splits.find(read.getNameAttr().getAttr()) : splits.end();
    bool tied = split != splits.end();
    if (lookup.getIndices() != tokens && !tied)
      continue;
    if (failed(checkVocab(lookup, lookup.getTable().getType().getDimSize(0))))
      return failure();
    if (failed(requestSplit(lookup.getTable(), 0, lookup, "table")))
      return failure();
    embeddings.push_back(lookup);
  }
  return success();
}

/// Every read of a split parameter must be one the plan rewrites.
LogicalResult Planner::checkParamUses() {
  WalkResult result = model.getForward().walk([&](tx::GetParamOp read) {
    if (!splits.contains(read.getNameAttr().getAttr()))
      return WalkResult::advance();
    for (OpOperand &use : read->getUses())
      if (!splitUses.contains(&use)) {
        InFlightDiagnostic diag =
            use.getOwner()->emitOpError("dist-tensor-parallel: reads "
                                        "parameter @")
            << read.getName()
            << ", which tensor parallelism splits, but is not split itself";
        return WalkResult::interrupt();
      }
    return WalkResult::advance();
  });
  return failure(result.wasInterrupted());
}

/// `dist.copy_to_group %x` before `before` (one per value and pair is
/// enough: its backward sums the gradients of all the uses at once).
Value Planner::copyToGroup(OpBuilder &b, Value x, Operation *before) {
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(before);
  return CopyToGroupOp::create(b, before->getLoc(), x.getType(), x,
                               meshRef.getValue(), axes)
      .getResult();
}

/// `dist.all_gather %x ... dim 1` before `before`: the whole sequence from
/// every rank's slice (`x` keeps its global type until apply() makes it
/// the slice).
Value Planner::gatherSequence(OpBuilder &b, Value x, Operation *before) {
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(before);
  return AllGatherOp::create(b, before->getLoc(), x.getType(), x,
                             meshRef.getValue(), axes, /*dim=*/1)
      .getResult();
}

/// The sum over the group of each member's `partial` [batch, seq, ...], at
/// the builder's point: `dist.all_reduce sum`, or under sequence
/// parallelism `dist.reduce_scatter sum ... dim 1` (each member keeps the
/// sum of its tokens).
Value Planner::sumPartial(OpBuilder &b, Value partial) {
  auto type = cast<RankedTensorType>(partial.getType());
  if (sequence)
    return ReduceScatterOp::create(b, partial.getLoc(), localType(type, 1),
                                   ReductionKind::sum, partial,
                                   meshRef.getValue(), axes, /*dim=*/1)
        .getResult();
  return AllReduceOp::create(b, partial.getLoc(), type, ReductionKind::sum,
                             partial, meshRef.getValue(), axes)
      .getResult();
}

void Planner::apply(MeshOp mesh) {
  MLIRContext *ctx = model.getContext();
  OpBuilder b(ctx);
  meshRef = FlatSymbolRefAttr::get(mesh.getSymNameAttr());
  axes = b.getStrArrayAttr({axis});
  auto lastDimLocal = [&](Value v) {
    auto type = cast<RankedTensorType>(v.getType());
    v.setType(localType(type, type.getRank() - 1));
  };

  // Parameters: the sharding on the declaration, local shapes on the reads.
  for (auto [name, dim] : splits) {
    auto param = model.lookupSymbol<tx::ParamOp>(name);
    SmallVector<Attribute> dims;
    for (int64_t d = 0; d < param.getTensorType().getRank(); ++d)
      dims.push_back(d == dim ? Attribute(axes) : b.getArrayAttr({}));
    param->setAttr(DistDialect::kShardingAttrName,
                   ShardingAttr::get(ctx, meshRef, b.getArrayAttr(dims)));
  }
  model.getForward().walk([&](tx::GetParamOp read) {
    auto it = splits.find(read.getNameAttr().getAttr());
    if (it != splits.end())
      read.getResult().setType(localType(read.getType(), it->second));
  });

  // The head computes the local logits from the replicated hidden states;
  // the loss reduces over the group. (First: under sequence parallelism
  // its input may be a sum the loops below reduce-scatter, which then
  // becomes the gather's operand, the gather keeping the whole sequence.)
  for (auto [head, loss] : heads) {
    head.getInputMutable().assign(sequence
                                      ? gatherSequence(b, head.getInput(), head)
                                      : copyToGroup(b, head.getInput(), head));
    lastDimLocal(head.getResult());
    loss.setMeshAttr(meshRef);
    loss.setAxesAttr(axes);
  }
  for (LinearPair &pair : pairs) {
    // A MoE layer's experts: the collectives on the tokens' side (moeSides).
    // The dispatch reads the tokens through copy_to_group (the gradient of
    // its input, partial on each member, is summed), the combine's partial
    // sum is summed over the group, and the combine reads the gates through
    // copy_to_group: their gradient (the dot products of the output
    // gradient with the experts' partial rows) is partial too.
    // Under sequence parallelism the dispatch gathers the tokens and the
    // combine's sum is reduce-scattered, as a dense MLP's.
    std::optional<MoESides> &moe = pair.moe;
    if (moe) {
      tx::MoEDispatchOp dispatch = moe->dispatch;
      tx::MoECombineOp combine = moe->combine;
      Value tokens = dispatch.getInput();
      dispatch.getInputMutable().assign(
          sequence ? gatherSequence(b, tokens, dispatch)
                   : copyToGroup(b, tokens, dispatch));
      if (Value gates = dispatch.getGates())
        dispatch.getGatesMutable().assign(copyToGroup(b, gates, dispatch));
      if (Value gates = combine.getGates())
        combine.getGatesMutable().assign(copyToGroup(b, gates, combine));
      b.setInsertionPointAfter(combine);
      Value result = combine.getResult();
      Value sum = sumPartial(b, result);
      result.replaceAllUsesExcept(sum, sum.getDefiningOp());
    }
    // Columns: the replicated input through copy_to_group, local outputs.
    DenseMap<Value, Value> copies;
    for (Operation *column : pair.columns) {
      if (moe) {
        lastDimLocal(column->getResult(0));
        continue;
      }
      Value &copy = copies[inputOf(column)];
      if (!copy)
        copy = sequence ? gatherSequence(b, inputOf(column), column)
                        : copyToGroup(b, inputOf(column), column);
      inputOperand(column).set(copy);
      lastDimLocal(column->getResult(0));
    }
    // The ops in between run on the local columns.
    for (Operation *op : pair.locals) {
      if (auto rule = dyn_cast<tx::ShardingRuleOpInterface>(op))
        rule.applySplit(tx::SplitDim::Feature, tp, meshRef, axes);
      lastDimLocal(op->getResult(0));
    }
    // Rows: partial products summed over the group (sequence-parallel:
    // each rank keeps the sum of its tokens), then the bias.
    for (Operation *op : pair.rows) {
      // An expert product has no bias: its result is the partial product,
      // summed after the combine (above) or here.
      if (moe)
        continue;
      if (isa<tx::ExpertLinearOp>(op)) {
        b.setInsertionPointAfter(op);
        Value result = op->getResult(0);
        auto sum = AllReduceOp::create(b, op->getLoc(), result.getType(),
                                       ReductionKind::sum, result,
                                       meshRef.getValue(), axes);
        result.replaceAllUsesExcept(sum, sum);
        continue;
      }
      auto row = cast<tx::LinearOp>(op);
      b.setInsertionPoint(row);
      auto partial = tx::LinearOp::create(
          b, row.getLoc(), row.getType(), row.getInput(), row.getWeight(),
          Value(), row.getTransposeWeightAttr());
      Value sum = sumPartial(b, partial);
      if (Value bias = row.getBias())
        sum = tx::BiasAddOp::create(b, row.getLoc(), sum.getType(), sum, bias);
      row.getResult().replaceAllUsesWith(sum);
      row.erase();
    }
  }

  // Each rank looks up the rows it holds; the sum over the group is the
  // full lookup.
  for (tx::EmbeddingOp lookup : embeddings) {
    lookup.setMeshAttr(meshRef);
    lookup.setAxesAttr(axes);
    b.setInsertionPointAfter(lookup);
    Value sum = sumPartial(b, lookup.getResult());
    lookup.getResult().replaceAllUsesExcept(sum, sum.getDefiningOp());
  }

  if (!sequence)
    return;
  // Sequence parallelism: the activations between the regions become this
  // rank's slice of the sequence; the position ids are this rank's.
  for (tx::PositionIdsOp op : positions) {
    op.setMeshAttr(meshRef);
    op.setAxesAttr(axes);
  }
  // A router's logits, computed on the slice: gathered, every member then
  // routes the whole sequence alike, and the gradient it hands back is the
  // same on every member, so each keeps its slice (replicated_grad).
  for (Operation *op : routes) {
    auto route = cast<tx::MoERouteOp>(op);
    b.setInsertionPoint(route);
    Value logits = route.getLogits();
    route.getLogitsMutable().assign(
        AllGatherOp::create(b, route.getLoc(), logits.getType(), logits,
                            meshRef.getValue(), axes, /*dim=*/1,
                            /*replicated_grad=*/true)
            .getResult());
  }
  for (Value v : sequenceValues)
    v.setType(localType(v.getType(), 1));
  // The replicated parameters applied to the slice: their gradients are
  // summed over the group (triax-autodiff).
  auto partial = PartialGradAttr::get(ctx, meshRef, axes);
  for (StringAttr name : partialGrads)
    model.lookupSymbol<tx::ParamOp>(name)->setAttr(
        DistDialect::kPartialGradAttrName, partial);
}

FailureOr<llvm::MapVector<StringAttr, int64_t>>
mlir::dist::tensorParallelSplits(tx::ModelOp model, int64_t tp) {
  Planner planner(model, tp, /*axis=*/"", /*sequence=*/false);
  if (failed(planner.plan()))
    return failure();
  return planner.getSplits();
}

namespace {

struct TensorParallelPass
    : public mlir::dist::impl::DistTensorParallelBase<TensorParallelPass> {
  using DistTensorParallelBase::DistTensorParallelBase;
  void runOnOperation() override;
};

} // namespace

void TensorParallelPass::runOnOperation() {
  ModuleOp module = getOperation();
  FailureOr<SmallVector<tx::ModelOp>> models =
      forwardModels(module, getArgument());
  if (failed(models))
    return signalPassFailure();
  MeshOp mesh =
      getOrCreateMeshAxis(module, getArgument(), tpAxis, tp.getValue());
  if (!mesh)
    return signalPassFailure();
  int64_t size = *mesh.getAxisSize(tpAxis);
  // Plan every model before changing any.
  SmallVector<std::unique_ptr<Planner>> planners;
  for (tx::ModelOp model : *models) {
    planners.push_back(
        std::make_unique<Planner>(model, size, tpAxis, sequenceParallel));
    if (failed(planners.back()->plan()))
      return signalPassFailure();
  }
  for (std::unique_ptr<Planner> &planner : planners)
    planner->apply(mesh);
}
