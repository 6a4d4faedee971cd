//===- FuseElementwise.cpp - Chains of elementwise ops as one op ----------===//
//
// Groups connected chains of same-shape elementwise ops (ops implementing
// ScalarElementwiseOpInterface) of one block into one
// `triax.fused_elementwise` whose region is the scalar computation of one
// element, built from each op's `buildScalar`. See Passes.td for the rules
// and the design.
//
// Grouping walks each block once, in order. An op joins the groups that
// define its operands when they have its shape and when moving them down to
// it is legal: no value of such a group may be used, outside the group and
// the op, before the op, and no op between them may write memory (the
// kernels read parameters and gradient buffers in place). The fused op replaces
// a group at the position of its last op, so its inputs (defined before their
// users in the group) dominate it and its results dominate their uses (all
// after it).
//
//===----------------------------------------------------------------------===//

#include "triax/Dialect/Triax/Transforms/Passes.h"

#include "triax/Dialect/Triax/IR/Triax.h"

#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/SetVector.h"

namespace mlir::triax {
#define GEN_PASS_DEF_TRIAXFUSEELEMENTWISE
#include "triax/Dialect/Triax/Transforms/Passes.h.inc"
} // namespace mlir::triax

using namespace mlir;
using namespace mlir::triax;

namespace {

/// The shape of the elements `op` computes if it can be fused: one ranked
/// tensor result, operands of that shape, no regions, no memory effects.
std::optional<ArrayRef<int64_t>> fusableShape(Operation *op) {
  if (!isa<ScalarElementwiseOpInterface>(op) || op->getNumResults() != 1 ||
      op->getNumRegions() != 0 || !isMemoryEffectFree(op))
    return std::nullopt;
  auto type = dyn_cast<RankedTensorType>(op->getResult(0).getType());
  if (!type || !type.hasStaticShape())
    return std::nullopt;
  for (Type operand : op->getOperandTypes()) {
    auto operandType = dyn_cast<RankedTensorType>(operand);
    if (!operandType || operandType.getShape() != type.getShape())
      return std::nullopt;
  }
  return type.getShape();
}

/// Whether `op` may write memory. The kernels read parameters and gradient
/// buffers through views, not copies, so an op reading a tensor is not moved
/// below a write. An op with regions and no effects of its own (a
/// triax.block) writes if its contents do; an op with neither an effect
/// interface nor regions may write anything.
bool mayWrite(Operation *op) {
  if (auto effects = dyn_cast<MemoryEffectOpInterface>(op)) {
    if (effects.hasEffect<MemoryEffects::Write>() ||
        effects.hasEffect<MemoryEffects::Free>())
      return true;
    if (!op->hasTrait<OpTrait::HasRecursiveMemoryEffects>())
      return false;
  } else if (op->getNumRegions() == 0) {
    return true;
  }
  for (Region &region : op->getRegions())
    for (Operation &nested : region.getOps())
      if (mayWrite(&nested))
        return true;
  return false;
}

/// Groups of one block under construction.
class BlockGrouping {
public:
  explicit BlockGrouping(Block &block) : block(block) {}

  /// Forms the groups of the block; returns those of more than one op, each
  /// in block order.
  SmallVector<SmallVector<Operation *>> run();

private:
  /// Whether the values of group `g` may move down to `consumer`: every use
  /// outside `g` and `members` comes after `consumer`.
  bool canMoveDown(unsigned g, const DenseSet<Operation *> &members,
                   Operation *consumer);

  Block &block;
  /// The group of each fusable op seen so far.
  DenseMap<Operation *, unsigned> groupOf;
  /// Each group's ops (empty once merged into another), shape and the
  /// number of writes before it (a group moves down only to ops before the
  /// next write).
  SmallVector<SmallVector<Operation *>> groups;
  SmallVector<ArrayRef<int64_t>> shapes;
  SmallVector<unsigned> epochs;
  /// The number of ops seen so far that may write memory.
  unsigned writes = 0;
};

bool BlockGrouping::canMoveDown(unsigned g,
                                const DenseSet<Operation *> &members,
                                Operation *consumer) {
  for (Operation *op : groups[g])
    for (OpOperand &use : op->getUses()) {
      Operation *user = block.findAncestorOpInBlock(*use.getOwner());
      // Uses in other blocks are dominated by this block's end: the fused
      // op, in this block, dominates them as the op did.
      if (!user || members.contains(user))
        continue;
      auto it = groupOf.find(user);
      if (it != groupOf.end() && it->second == g)
        continue;
      if (!consumer->isBeforeInBlock(user))
        return false;
    }
  return true;
}

SmallVector<SmallVector<Operation *>> BlockGrouping::run() {
  for (Operation &op : block) {
    std::optional<ArrayRef<int64_t>> shape = fusableShape(&op);
    if (!shape) {
      writes += mayWrite(&op);
      continue;
    }
    // The ops of the new group: `op` and the producer groups it absorbs.
    DenseSet<Operation *> members = {&op};
    SmallVector<unsigned> absorbed;
    for (Value operand : op.getOperands()) {
      Operation *def = operand.getDefiningOp();
      if (!def || def->getBlock() != &block)
        continue;
      auto it = groupOf.find(def);
      if (it == groupOf.end() || llvm::is_contained(absorbed, it->second))
        continue;
      unsigned g = it->second;
      if (shapes[g] != *shape || epochs[g] != writes ||
          !canMoveDown(g, members, &op))
        continue;
      absorbed.push_back(g);
      members.insert(groups[g].begin(), groups[g].end());
    }
    unsigned id = groups.size();
    SmallVector<Operation *> ops;
    for (unsigned g : absorbed) {
      ops.append(groups[g]);
      groups[g].clear();
    }
    ops.push_back(&op);
    for (Operation *member : ops)
      groupOf[member] = id;
    groups.push_back(std::move(ops));
    shapes.push_back(*shape);
    epochs.push_back(writes);
  }

  SmallVector<SmallVector<Operation *>> fused;
  for (SmallVector<Operation *> &ops : groups) {
    if (ops.size() < 2)
      continue;
    llvm::sort(
        ops, [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
    fused.push_back(std::move(ops));
  }
  return fused;
}

/// Replaces `ops` (one group, in block order) by one fused op at the
/// position of the last; leaves a group none of whose values is used as it
/// is.
void fuseGroup(ArrayRef<Operation *> ops) {
  DenseSet<Operation *> inGroup(ops.begin(), ops.end());
  auto isExternalUse = [&](OpOperand &use) {
    return !inGroup.contains(use.getOwner());
  };
  llvm::SetVector<Value> inputs;
  SmallVector<Value> outputs;
  SmallVector<Location> locs;
  for (Operation *op : ops) {
    for (Value operand : op->getOperands())
      if (!inGroup.contains(operand.getDefiningOp()))
        inputs.insert(operand);
    Value result = op->getResult(0);
    if (llvm::any_of(result.getUses(), isExternalUse))
      outputs.push_back(result);
    locs.push_back(op->getLoc());
  }
  // A dead chain stays as it is (and goes with the next dead-code removal).
  if (outputs.empty())
    return;

  OpBuilder b(ops.back());
  Location loc = b.getFusedLoc(locs);
  auto fused = FusedElementwiseOp::create(
      b, loc, ValueRange(outputs).getTypes(), inputs.getArrayRef());
  SmallVector<Type> argTypes;
  SmallVector<Location> argLocs;
  for (Value input : inputs) {
    argTypes.push_back(getComputeElementType(
        cast<RankedTensorType>(input.getType()).getElementType()));
    argLocs.push_back(input.getLoc());
  }
  Block *body = b.createBlock(&fused.getBody(), {}, argTypes, argLocs);

  // The scalar standing for each tensor value inside the body.
  DenseMap<Value, Value> scalars;
  for (auto [input, arg] : llvm::zip_equal(inputs, body->getArguments()))
    scalars[input] = arg;
  for (Operation *op : ops) {
    SmallVector<Value> operands;
    for (Value operand : op->getOperands())
      operands.push_back(scalars.lookup(operand));
    scalars[op->getResult(0)] =
        cast<ScalarElementwiseOpInterface>(op).buildScalar(b, op->getLoc(),
                                                           operands);
  }
  SmallVector<Value> yielded;
  for (Value output : outputs)
    yielded.push_back(scalars.lookup(output));
  FusedYieldOp::create(b, loc, yielded);

  for (auto [output, result] : llvm::zip_equal(outputs, fused.getResults()))
    output.replaceUsesWithIf(result, isExternalUse);
  for (Operation *op : llvm::reverse(ops))
    op->erase();
}

struct TriaxFuseElementwisePass
    : public mlir::triax::impl::TriaxFuseElementwiseBase<
          TriaxFuseElementwisePass> {
  void runOnOperation() override {
    SmallVector<Block *> blocks;
    getOperation()->walk([&](Block *block) { blocks.push_back(block); });
    for (Block *block : blocks)
      for (SmallVector<Operation *> &group : BlockGrouping(*block).run())
        fuseGroup(group);
  }
};

} // namespace
