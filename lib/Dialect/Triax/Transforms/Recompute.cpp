//===- Recompute.cpp - Activation recomputation ---------------------------===//
//
// Activation recomputation (Korthikanti et al. 2022) on the training step
// triax-autodiff built. There, a forward block "h.i" yields its outputs and
// then the activations its backward block "h.i.grad" reads, and the
// backward block takes them as inputs: they stay alive from the forward
// pass to the backward pass. This pass makes the backward block recompute
// some of them instead, by cloning the forward ops that define them (and,
// recursively, what those read) into the backward block, right before
// their first use there; the forward block then stops yielding them, and
// the lowering frees their buffers after their last forward use.
//
// Which values are recomputed is the mode's choice, and for `selective` and
// `none` the ops' own: an op whose DifferentiableOpInterface says
// isRecomputedAlways (an all_gather: sequence parallelism's gathered norm
// output) is recomputed from its operands in every mode, one that says
// isRecomputedSelectively (the attention core) under `selective`; their
// operands stay kept. `full` recomputes everything from the forward
// block's inputs. The pass never switches on op kind.
//
// Assumptions: it runs after triax-autodiff and before dist-pipeline (which
// moves forward and backward blocks into different stage functions), so a
// backward block "X.grad" and its forward block "X" sit in the same block
// of @forward_backward, the forward block first. Values the backward block
// takes from outside the forward block (its inputs, other blocks' results)
// are left alone.
//
//===----------------------------------------------------------------------===//

#include "triax/Dialect/Triax/Transforms/Passes.h"

#include "triax/Dialect/Triax/IR/Triax.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringSwitch.h"

namespace mlir::triax {
#define GEN_PASS_DEF_TRIAXRECOMPUTE
#include "triax/Dialect/Triax/Transforms/Passes.h.inc"
} // namespace mlir::triax

using namespace mlir;
using namespace mlir::triax;

namespace {

enum class Mode { None, Selective, Full };

/// The attribute naming the mode on a backward block that recomputes.
constexpr llvm::StringLiteral kRecomputeAttr = TriaxDialect::kRecomputeAttrName;

/// Rewrites one forward/backward block pair.
class BlockRecomputer {
public:
  BlockRecomputer(BlockOp forward, BlockOp backward, Mode mode)
      : forward(forward), backward(backward), mode(mode),
        forwardBody(forward.getBody().front()),
        backwardBody(backward.getBody().front()),
        forwardYield(cast<YieldOp>(forwardBody.getTerminator())) {}

  LogicalResult run();

private:
  /// Whether the backward block rebuilds `inner` (a value defined in the
  /// forward body) rather than receiving it.
  bool recomputes(Value inner) {
    if (mode == Mode::Full)
      return true;
    auto differentiable = inner.getDefiningOp<DifferentiableOpInterface>();
    return differentiable && (differentiable.isRecomputedAlways() ||
                              (mode == Mode::Selective &&
                               differentiable.isRecomputedSelectively()));
  }
  /// The backward block's value for forward-body value `inner`: a clone's
  /// result, an existing or new backward argument.
  FailureOr<Value> materialize(Value inner);
  /// The backward argument receiving outer value `outer`, added if missing.
  Value argumentFor(Value outer);

  BlockOp forward, backward;
  Mode mode;
  Block &forwardBody, &backwardBody;
  YieldOp forwardYield;
  /// Forward-body value -> its backward-block counterpart.
  DenseMap<Value, Value> mapped;
  /// Forward-body values to export through new forward results.
  llvm::SetVector<Value> newExports;
  SmallVector<Operation *> clones; // in creation (topological) order
  OpBuilder builder{forward.getContext()};
};

} // namespace

Value BlockRecomputer::argumentFor(Value outer) {
  for (auto [i, input] : llvm::enumerate(backward.getInputs()))
    if (input == outer)
      return backwardBody.getArgument(i);
  backward.getInputsMutable().append(outer);
  return backwardBody.addArgument(outer.getType(), outer.getLoc());
}

FailureOr<Value> BlockRecomputer::materialize(Value inner) {
  if (Value known = mapped.lookup(inner))
    return known;
  if (auto arg = dyn_cast<BlockArgument>(inner)) {
    Value value = argumentFor(forward.getInputs()[arg.getArgNumber()]);
    mapped[inner] = value;
    return value;
  }
  Operation *def = inner.getDefiningOp();
  // Parameter reads and other operand-free pure ops are re-done like the
  // backward block's own; anything else is recomputed when the mode says
  // so, and otherwise exported from the forward block (selective mode
  // when a recomputed op reads a value its gradient does not keep).
  bool leaf = def->getNumOperands() == 0 && def->getNumRegions() == 0 &&
              isMemoryEffectFree(def);
  if (!leaf && !recomputes(inner)) {
    // For now the operand is the forward-body value itself; it becomes the
    // forward block's new result once that block is rebuilt.
    newExports.insert(inner);
    Value value = argumentFor(inner);
    mapped[inner] = value;
    return value;
  }
  // Collectives (the dist.all_reduce of a row-split linear) are pure in the
  // IR and every rank recomputes the same ones in the same order; anything
  // that writes memory or holds a region is not redone.
  if (def->getNumRegions() != 0 || !isMemoryEffectFree(def)) {
    InFlightDiagnostic diag = def->emitOpError(
        "cannot be recomputed in the backward block: it has side effects "
        "or regions");
    diag.attachNote(backward.getLoc()) << "backward block recomputing it";
    return diag;
  }
  // A parameter read the backward block already does (for its gradient's
  // weight) is read once: the same op among the operand-free ops the block
  // starts with (they precede every op the clones end up before).
  if (leaf)
    for (Operation &existing : backwardBody) {
      if (llvm::is_contained(clones, &existing))
        continue;
      if (existing.getNumOperands() != 0)
        break;
      if (OperationEquivalence::isEquivalentTo(
              def, &existing, OperationEquivalence::IgnoreLocations)) {
        for (auto [result, same] :
             llvm::zip(def->getResults(), existing.getResults()))
          mapped[result] = same;
        return mapped.lookup(inner);
      }
    }
  IRMapping mapping;
  for (Value operand : def->getOperands()) {
    FailureOr<Value> value = materialize(operand);
    if (failed(value))
      return failure();
    mapping.map(operand, *value);
  }
  builder.setInsertionPointToStart(&backwardBody);
  if (!clones.empty())
    builder.setInsertionPointAfter(clones.back());
  Operation *clone = builder.clone(*def, mapping);
  clones.push_back(clone);
  // An op the backward block already does on the same operands (the
  // gradient of context-parallel attention gathers its keys and values
  // again) is done once, by the clone, which comes first.
  for (Operation &existing : llvm::make_early_inc_range(backwardBody))
    if (&existing != clone && !llvm::is_contained(clones, &existing) &&
        OperationEquivalence::isEquivalentTo(
            clone, &existing, OperationEquivalence::IgnoreLocations)) {
      existing.replaceAllUsesWith(clone);
      existing.erase();
    }
  for (auto [result, cloned] :
       llvm::zip(def->getResults(), clone->getResults()))
    mapped[result] = cloned;
  return mapped.lookup(inner);
}

LogicalResult BlockRecomputer::run() {
  // The backward arguments that receive a forward value to recompute.
  struct Received {
    unsigned argIndex;
    Value inner; // the forward-body value behind it
  };
  SmallVector<Received> received;
  for (auto [i, input] : llvm::enumerate(backward.getInputs())) {
    auto result = dyn_cast<OpResult>(input);
    if (!result || result.getOwner() != forward.getOperation())
      continue;
    Value inner = forwardYield.getOperand(result.getResultNumber());
    // A forward input passed through unchanged is not an activation.
    if (isa<BlockArgument>(inner) || !recomputes(inner))
      continue;
    received.push_back({unsigned(i), inner});
  }
  if (received.empty())
    return success();
  llvm::SmallDenseSet<unsigned> wasReceived;
  for (Value input : backward.getInputs())
    if (auto result = dyn_cast<OpResult>(input);
        result && result.getOwner() == forward.getOperation())
      wasReceived.insert(result.getResultNumber());

  // The values the backward block keeps receiving map to their arguments
  // (a recomputed op reads them instead of recomputing them too).
  for (auto [i, input] : llvm::enumerate(backward.getInputs())) {
    auto result = dyn_cast<OpResult>(input);
    if (!result || result.getOwner() != forward.getOperation())
      continue;
    Value inner = forwardYield.getOperand(result.getResultNumber());
    if (!isa<BlockArgument>(inner) && !recomputes(inner))
      mapped.try_emplace(inner, backwardBody.getArgument(i));
  }

  for (const Received &r : received) {
    FailureOr<Value> value = materialize(r.inner);
    if (failed(value))
      return failure();
    backwardBody.getArgument(r.argIndex).replaceAllUsesWith(*value);
  }

  // Each clone right before its first use, last clone first: a clone's
  // users are backward ops or later clones, already in place.
  for (Operation *clone : llvm::reverse(clones)) {
    Operation *first = nullptr;
    for (Operation *user : clone->getUsers()) {
      Operation *inBlock = backwardBody.findAncestorOpInBlock(*user);
      if (inBlock && (!first || inBlock->isBeforeInBlock(first)))
        first = inBlock;
    }
    if (!first) {
      clone->erase();
      continue;
    }
    clone->moveBefore(first);
  }

  // Drop the backward arguments now unused.
  for (int i = backward.getInputs().size() - 1; i >= 0; --i) {
    if (!backwardBody.getArgument(i).use_empty())
      continue;
    auto result = dyn_cast<OpResult>(backward.getInputs()[i]);
    if (!result || result.getOwner() != forward.getOperation())
      continue;
    backward.getInputsMutable().erase(i);
    backwardBody.eraseArgument(i);
  }

  // Re-create the forward block without the results nothing reads any
  // more, plus the new exports.
  SmallVector<Value> keptYields;
  SmallVector<OpResult> keptResults;
  for (OpResult result : forward->getResults()) {
    if (result.use_empty() && wasReceived.contains(result.getResultNumber()))
      continue;
    keptYields.push_back(forwardYield.getOperand(result.getResultNumber()));
    keptResults.push_back(result);
  }
  keptYields.append(newExports.begin(), newExports.end());
  builder.setInsertionPoint(forward);
  auto newForward = BlockOp::create(builder, forward.getLoc(),
                                    ValueRange(keptYields).getTypes(),
                                    forward.getNameAttr(), forward.getInputs());
  newForward->setDiscardableAttrs(forward->getDiscardableAttrDictionary());
  newForward.getBody().takeBody(forward.getBody());
  forwardYield->setOperands(keptYields);
  for (auto [i, result] : llvm::enumerate(keptResults))
    result.replaceAllUsesWith(newForward.getResult(i));
  for (OpOperand &input : backward.getInputsMutable())
    for (auto [k, inner] : llvm::enumerate(newExports))
      if (input.get() == inner)
        input.set(newForward.getResult(keptResults.size() + k));
  forward.erase();
  forward = newForward;
  if (mode != Mode::None)
    backward->setAttr(
        kRecomputeAttr,
        builder.getStringAttr(mode == Mode::Full ? "full" : "selective"));
  return success();
}

/// Rewrites every backward block of `fn`.
static LogicalResult recomputeFunction(func::FuncOp fn, Mode mode) {
  SmallVector<BlockOp> backwards;
  fn.walk([&](BlockOp block) {
    if (block.getName().ends_with(ModelOp::kGradSuffix))
      backwards.push_back(block);
  });
  for (BlockOp backward : backwards) {
    if (auto done = backward->getAttrOfType<StringAttr>(kRecomputeAttr))
      return backward.emitOpError("already recomputes (")
             << kRecomputeAttr << " = " << done
             << "); triax-recompute runs once";
    StringRef name = backward.getName().drop_back(ModelOp::kGradSuffix.size());
    BlockOp forward;
    for (Operation *op = backward->getPrevNode(); op; op = op->getPrevNode())
      if (auto block = dyn_cast<BlockOp>(op);
          block && block.getName() == name) {
        forward = block;
        break;
      }
    if (!forward)
      return backward.emitOpError("has no forward block \"")
             << name
             << "\" before it in the same function; triax-recompute runs "
                "right after triax-autodiff, before dist-pipeline";
    if (failed(BlockRecomputer(forward, backward, mode).run()))
      return failure();
  }
  return success();
}

namespace {
struct TriaxRecomputePass
    : public mlir::triax::impl::TriaxRecomputeBase<TriaxRecomputePass> {
  using TriaxRecomputeBase::TriaxRecomputeBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    std::optional<Mode> parsed = llvm::StringSwitch<std::optional<Mode>>(mode)
                                     .Case("none", Mode::None)
                                     .Case("selective", Mode::Selective)
                                     .Case("full", Mode::Full)
                                     .Default(std::nullopt);
    if (!parsed) {
      module.emitError("triax-recompute: unknown mode '")
          << mode << "'; expected none, selective or full";
      return signalPassFailure();
    }
    for (ModelOp model : module.getOps<ModelOp>()) {
      auto fn = model.getForwardBackward();
      if (!fn) {
        model.emitOpError("has no @forward_backward; triax-recompute runs "
                          "after triax-autodiff");
        return signalPassFailure();
      }
      if (model.getPipelineStep()) {
        model.emitOpError("is already cut into pipeline stages "
                          "(@pipeline_step); triax-recompute runs before "
                          "dist-pipeline");
        return signalPassFailure();
      }
      if (failed(recomputeFunction(fn, *parsed)))
        return signalPassFailure();
    }
  }
};
} // namespace
