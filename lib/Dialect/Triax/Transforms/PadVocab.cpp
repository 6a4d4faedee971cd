//===- PadVocab.cpp - the vocabulary padded for the GEMMs and tp ----------===//
//
// triax-pad-vocab (Passes.td): the LM head's logits computed over a
// vocabulary rounded up to a multiple of N, the padding invisible. The
// head's weight (and bias) and the token embedding tables of the same
// vocabulary are padded with zeros (triax.valid_shape on the parameter says
// which block holds values); the cross-entropy leaves the padded columns
// out (`classes`), so their gradient is zero and their weights stay zero.
//
//===----------------------------------------------------------------------===//

#include "triax/Dialect/Triax/Transforms/Passes.h"

#include "triax/Dialect/Triax/IR/Triax.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/SetVector.h"

namespace mlir::triax {
#define GEN_PASS_DEF_TRIAXPADVOCAB
#include "triax/Dialect/Triax/Transforms/Passes.h.inc"
} // namespace mlir::triax

using namespace mlir;
using namespace mlir::triax;

namespace {

/// Pads one model's vocabulary from `vocab` to `padded` columns.
class VocabPadder {
public:
  VocabPadder(ModelOp model, int64_t vocab, int64_t padded)
      : model(model), vocab(vocab), padded(padded) {}

  /// Plans the padding of the head `head` feeding `loss` and of the token
  /// lookups of the same vocabulary; fails with an error at the op that
  /// stands in the way.
  LogicalResult plan(CrossEntropyOp loss, func::FuncOp forward);
  /// Rewrites the planned parameters, their reads and the head.
  void apply(CrossEntropyOp loss);

private:
  /// Adds the parameter read by `read` (its `dim` is the vocabulary) to the
  /// plan, and checks every read of it: the head's weight or bias, or an
  /// embedding's table with the vocabulary as rows.
  LogicalResult planParam(Value read, int64_t dim, Operation *user,
                          StringRef what);

  ModelOp model;
  int64_t vocab, padded;
  LinearOp head;
  llvm::MapVector<ParamOp, int64_t> params; // parameter -> padded dim
};

LogicalResult VocabPadder::planParam(Value read, int64_t dim, Operation *user,
                                     StringRef what) {
  auto get = read.getDefiningOp<GetParamOp>();
  if (!get)
    return user->emitOpError("triax-pad-vocab: the ")
           << what
           << " is not a parameter read (triax.get_param), so it cannot be "
              "padded";
  auto param = model.lookupSymbol<ParamOp>(get.getNameAttr().getAttr());
  if (!param)
    return get.emitOpError("triax-pad-vocab: no parameter @") << get.getName();
  if (params.contains(param))
    return success();
  if (param.getTensorType().getDimSize(dim) != vocab)
    return user->emitOpError("triax-pad-vocab: parameter @")
           << param.getSymName() << " has "
           << param.getTensorType().getDimSize(dim)
           << " entries where the vocabulary has " << vocab;
  if (param->hasAttr(TriaxDialect::kValidShapeAttrName))
    return param.emitOpError("triax-pad-vocab: parameter @")
           << param.getSymName() << " is padded already";
  if (param->hasAttr(TriaxDialect::kCheckpointNameAttrName))
    return param.emitOpError("triax-pad-vocab: parameter @")
           << param.getSymName()
           << " shares a checkpoint tensor (triax.checkpoint_name), which a "
              "padded parameter cannot";
  // Every read: the head (its weight or bias) or a lookup of rows.
  WalkResult walk = model.walk([&](GetParamOp other) {
    if (other.getName() != param.getSymName())
      return WalkResult::advance();
    for (OpOperand &use : other->getUses()) {
      Operation *owner = use.getOwner();
      if (owner == head.getOperation() &&
          (use.get() == head.getWeight() || use.get() == head.getBias()))
        continue;
      auto lookup = dyn_cast<EmbeddingOp>(owner);
      if (lookup && use.get() == lookup.getTable() && dim == 0)
        continue;
      owner->emitOpError("triax-pad-vocab: reads parameter @")
          << param.getSymName()
          << ", whose vocabulary dimension is padded; only the LM head and "
             "embedding lookups may read it";
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  if (walk.wasInterrupted())
    return failure();
  params.insert({param, dim});
  return success();
}

LogicalResult VocabPadder::plan(CrossEntropyOp loss, func::FuncOp forward) {
  head = loss.getLogits().getDefiningOp<LinearOp>();
  if (!head)
    return loss.emitOpError("triax-pad-vocab: the logits are not computed "
                            "by a triax.linear (the LM head), so the "
                            "vocabulary cannot be padded");
  if (!head->hasOneUse())
    return head.emitOpError("triax-pad-vocab: the LM head's logits are read "
                            "by more than the loss, which would see the "
                            "padding");
  if (failed(planParam(head.getWeight(), head.getTransposeWeight() ? 0 : 1,
                       head, "LM head's weight")))
    return failure();
  if (Value bias = head.getBias())
    if (failed(planParam(bias, 0, head, "LM head's bias")))
      return failure();
  // The token embeddings of the same vocabulary (an untied model's table).
  if (forward.getNumArguments() == 0)
    return success();
  for (Operation *user : forward.getArgument(0).getUsers())
    if (auto lookup = dyn_cast<EmbeddingOp>(user))
      if (lookup.getTable().getType().getDimSize(0) == vocab &&
          failed(planParam(lookup.getTable(), 0, lookup, "token table")))
        return failure();
  return success();
}

void VocabPadder::apply(CrossEntropyOp loss) {
  for (auto [param, dim] : params) {
    RankedTensorType type = param.getTensorType();
    SmallVector<int64_t> shape(type.getShape());
    param->setAttr(TriaxDialect::kValidShapeAttrName,
                   DenseI64ArrayAttr::get(param.getContext(), shape));
    shape[dim] = padded;
    RankedTensorType paddedType = type.clone(shape);
    param.setTypeAttr(TypeAttr::get(paddedType));
    model.walk([&](GetParamOp read) {
      if (read.getName() == param.getSymName())
        read.getResult().setType(paddedType);
    });
  }
  RankedTensorType logits = head.getType();
  SmallVector<int64_t> shape(logits.getShape());
  shape.back() = padded;
  head.getResult().setType(logits.clone(shape));
  loss.setClassesAttr(
      IntegerAttr::get(IntegerType::get(loss.getContext(), 64), vocab));
}

struct TriaxPadVocabPass
    : public mlir::triax::impl::TriaxPadVocabBase<TriaxPadVocabPass> {
  using Base::Base;

  void runOnOperation() override {
    if (multiple < 1) {
      emitError(getOperation().getLoc())
          << "triax-pad-vocab: multiple must be >= 1, got "
          << int64_t(multiple);
      return signalPassFailure();
    }
    for (ModelOp model : getOperation().getOps<ModelOp>())
      if (failed(padModel(model)))
        return signalPassFailure();
  }

  LogicalResult padModel(ModelOp model) {
    func::FuncOp forward = model.getForward();
    if (!forward)
      return success();
    SmallVector<CrossEntropyOp> losses;
    forward.walk([&](CrossEntropyOp op) { losses.push_back(op); });
    if (!losses.empty() && model.getForwardBackward())
      return model.emitOpError("triax-pad-vocab: runs before triax-autodiff "
                               "(the model has @forward_backward)");
    for (CrossEntropyOp loss : losses) {
      if (loss.getClasses())
        continue; // padded already
      if (loss.getMeshAttr())
        return loss.emitOpError("triax-pad-vocab: runs before tensor "
                                "parallelism (the loss is vocab-parallel)");
      RankedTensorType logits = loss.getLogits().getType();
      if (logits.isDynamicDim(logits.getRank() - 1))
        return loss.emitOpError(
            "triax-pad-vocab: the vocabulary dimension is dynamic");
      int64_t vocab = logits.getShape().back();
      int64_t padded = (vocab + multiple - 1) / multiple * multiple;
      if (padded == vocab)
        continue;
      VocabPadder padder(model, vocab, padded);
      if (failed(padder.plan(loss, forward)))
        return failure();
      padder.apply(loss);
    }
    return success();
  }
};

} // namespace
