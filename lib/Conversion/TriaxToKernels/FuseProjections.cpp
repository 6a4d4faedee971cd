//===- FuseProjections.cpp - Linears on one input as one GEMM -------------===//
//
// convert-triax-to-kernels{fuse-projections}: the linears that read the same
// input (attention's query, key and value projections) become one linear
// over their weights side by side, and the sum of their input gradients one
// linear over their output gradients side by side:
//
//   q = x Wq + bq, k = x Wk + bk, v = x Wv + bv
//     -> y = x [Wq Wk Wv] + [bq bk bv];  q, k, v = column slices of y
//   dx = dq Wq^T + dk Wk^T + dv Wv^T
//     -> dx = [dq dk dv] [Wq Wk Wv]^T  (one GEMM with K = 3H)
//
// The slices and the gradients side by side cost nothing in the kernels:
// an op with Triax_ReadsRowViews reads a column slice as a strided view of
// y's buffer (memref.subview; SliceLowering), and an attention gradient
// whose dq, dk, dv are concatenated writes them into one buffer's columns
// (AttentionGradLowering), which the concatenation then is
// (ConcatLowering). So projections are fused only where every reader of
// their results reads views; the weights side by side are a copy (one per
// weight tuple and function, shared by the forward and the backward).
//
//===----------------------------------------------------------------------===//

#include "KernelBuilder.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Dominance.h"
#include "llvm/ADT/MapVector.h"

using namespace mlir;
using namespace mlir::triax;
using namespace mlir::triax::kernels;

namespace {

/// What identifies a weight across the forward and the backward: the
/// parameter it reads (the forward and the backward read it with separate
/// triax.get_param ops), or the value itself (a hoisted bf16 copy, a
/// gathered shard).
using WeightKey = std::pair<const void *, Type>;

WeightKey weightKey(Value w) {
  if (auto read = w.getDefiningOp<GetParamOp>())
    return {read.getNameAttr().getAttr().getAsOpaquePointer(), w.getType()};
  return {w.getAsOpaquePointer(), w.getType()};
}

/// The weights side by side (`tensor.concat` along their output
/// dimension), made once per weight tuple: after the last of the weights
/// it was first made from, and again where that does not dominate a use.
class WeightConcats {
public:
  explicit WeightConcats(func::FuncOp fn) : dominance(fn) {}

  Value get(ArrayRef<Value> weights, Operation *user) {
    SmallVector<WeightKey> keys = llvm::map_to_vector(weights, weightKey);
    for (auto &[made, value] : concats)
      if (made == keys && dominance.properlyDominates(value, user))
        return value;
    // After the weight defined last (they are all defined before `user`).
    Operation *last = nullptr;
    for (Value w : weights)
      if (Operation *def = w.getDefiningOp())
        if (def->getBlock() == user->getBlock() &&
            (!last || last->isBeforeInBlock(def)))
          last = def;
    OpBuilder b(user->getContext());
    if (last)
      b.setInsertionPointAfter(last);
    else
      b.setInsertionPointToStart(user->getBlock());
    Value value = tensor::ConcatOp::create(b, weights.front().getLoc(),
                                           /*dim=*/1, weights);
    concats.push_back({keys, value});
    return value;
  }

private:
  DominanceInfo dominance;
  SmallVector<std::pair<SmallVector<WeightKey>, Value>> concats;
};

/// A linear that may join others on its input: a plain [in, out] weight,
/// an output width a multiple of 8 elements (16-byte aligned columns for
/// the vector loads of the attention kernels) and results read only as
/// views.
bool isFusable(LinearOp op) {
  auto weight = cast<RankedTensorType>(op.getWeight().getType());
  if (op.getTransposeWeight() || weight.getRank() != 2 ||
      weight.getDimSize(1) % 8 != 0 || op.getResult().use_empty())
    return false;
  return llvm::all_of(op.getResult().getUsers(), [](Operation *user) {
    return user->hasTrait<ReadsRowViews>();
  });
}

/// Whether `a` and `b` can share one GEMM: the same element types and both
/// with or both without a bias.
bool compatible(LinearOp a, LinearOp b) {
  auto elt = [](Value v) {
    return cast<RankedTensorType>(v.getType()).getElementType();
  };
  return elt(a.getWeight()) == elt(b.getWeight()) &&
         elt(a.getResult()) == elt(b.getResult()) &&
         bool(a.getBias()) == bool(b.getBias()) &&
         (!a.getBias() || elt(a.getBias()) == elt(b.getBias())) &&
         a->getBlock() == b->getBlock();
}

/// Replaces the linears of `group` (in program order, one input) by one
/// linear over their weights side by side and column slices of its result.
void fuseForward(MutableArrayRef<LinearOp> group, WeightConcats &concats) {
  LinearOp last = group.back();
  OpBuilder b(last);
  Location loc = last.getLoc();
  SmallVector<Value> weights, biases;
  for (LinearOp op : group) {
    weights.push_back(op.getWeight());
    if (op.getBias())
      biases.push_back(op.getBias());
  }
  Value weight = concats.get(weights, last);
  Value bias;
  if (!biases.empty())
    bias = tensor::ConcatOp::create(b, loc, /*dim=*/0, biases);
  auto first = cast<RankedTensorType>(group.front().getResult().getType());
  SmallVector<int64_t> shape(first.getShape());
  shape.back() = cast<RankedTensorType>(weight.getType()).getDimSize(1);
  auto type = RankedTensorType::get(shape, first.getElementType());
  Value fused =
      LinearOp::create(b, loc, type, group.front().getInput(), weight, bias,
                       /*transpose_weight=*/UnitAttr());
  int64_t rank = shape.size(), column = 0;
  for (LinearOp op : group) {
    auto part = cast<RankedTensorType>(op.getResult().getType());
    SmallVector<OpFoldResult> offsets(rank, b.getIndexAttr(0)),
        strides(rank, b.getIndexAttr(1));
    offsets.back() = b.getIndexAttr(column);
    SmallVector<OpFoldResult> sizes =
        llvm::map_to_vector(part.getShape(), [&](int64_t d) -> OpFoldResult {
          return b.getIndexAttr(d);
        });
    Value slice = tensor::ExtractSliceOp::create(b, op.getLoc(), part, fused,
                                                 offsets, sizes, strides);
    column += part.getShape().back();
    op.getResult().replaceAllUsesWith(slice);
  }
  for (LinearOp op : group)
    op.erase();
}

/// The terms of the sum `op` computes, when it is one: a tree of
/// triax.add ops (inner adds used once, inside the tree), or a
/// triax.fused_elementwise with one result whose body adds its arguments,
/// each once (what triax-fuse-elementwise makes of such a tree). Returns
/// the ops that go with the sum (the tree's adds, or the fused op).
SmallVector<Operation *> sumTerms(Operation *op,
                                  SmallVectorImpl<Value> &terms) {
  if (auto fused = dyn_cast<FusedElementwiseOp>(op)) {
    Block &body = fused.getBody().front();
    if (fused->getNumResults() != 1 || body.getNumArguments() < 2)
      return {};
    auto yield = cast<FusedYieldOp>(body.getTerminator());
    // Every op an addf, every argument a leaf exactly once.
    SmallVector<Value> leaves, stack = {yield->getOperand(0)};
    while (!stack.empty()) {
      Value v = stack.pop_back_val();
      if (auto arg = dyn_cast<BlockArgument>(v)) {
        leaves.push_back(arg);
        continue;
      }
      auto addf = v.getDefiningOp<arith::AddFOp>();
      if (!addf || !v.hasOneUse())
        return {};
      stack.push_back(addf.getLhs());
      stack.push_back(addf.getRhs());
    }
    if (leaves.size() != body.getNumArguments() ||
        llvm::any_of(body.getArguments(),
                     [](BlockArgument arg) { return !arg.hasOneUse(); }) ||
        body.getOperations().size() != leaves.size())
      return {};
    llvm::append_range(terms, fused.getInputs());
    return {op};
  }
  if (!isa<AddOp>(op))
    return {};
  SmallVector<Operation *> adds = {op};
  for (size_t i = 0; i < adds.size(); ++i)
    for (Value operand : adds[i]->getOperands()) {
      auto add = operand.getDefiningOp<AddOp>();
      if (add && operand.hasOneUse())
        adds.push_back(add);
      else
        terms.push_back(operand);
    }
  return adds;
}

/// dx = sum_i dy_i W_i^T (the sum `root`), the transposed linears of the
/// weights of a fused group, becomes one linear over [dy_1 ... dy_n] and
/// the weights side by side. Returns whether it did.
bool fuseBackward(Operation *root, ArrayRef<SmallVector<WeightKey>> groups,
                  WeightConcats &concats) {
  SmallVector<Value> terms;
  SmallVector<Operation *> sum = sumTerms(root, terms);
  if (sum.empty() || terms.size() < 2)
    return false;
  llvm::DenseMap<WeightKey, LinearOp> byKey;
  for (Value term : terms) {
    auto op = term.getDefiningOp<LinearOp>();
    if (!op || !op.getTransposeWeight() || op.getBias() || !term.hasOneUse() ||
        !byKey.try_emplace(weightKey(op.getWeight()), op).second)
      return false;
  }
  const SmallVector<WeightKey> *group =
      llvm::find_if(groups, [&](const SmallVector<WeightKey> &keys) {
        return keys.size() == terms.size() &&
               llvm::all_of(
                   keys, [&](WeightKey key) { return byKey.count(key) != 0; });
      });
  if (group == groups.end())
    return false;
  SmallVector<Value> grads, weights;
  for (WeightKey key : *group) {
    LinearOp op = byKey.lookup(key);
    grads.push_back(op.getInput());
    weights.push_back(op.getWeight());
  }
  // Only where the gradients side by side cost no copy: they are an
  // attention gradient's dq, dk, dv, which it then writes into one buffer
  // (AttentionGradLowering; not a ring's). Else (RoPE between the
  // projections and attention) the three GEMMs stay.
  auto producer = grads.front().getDefiningOp<AttentionGradOp>();
  if (!producer || producer.getRing() ||
      ValueRange(grads) != producer->getResults())
    return false;
  OpBuilder b(root);
  Location loc = root->getLoc();
  int64_t rank = cast<RankedTensorType>(grads.front().getType()).getRank();
  Value side = tensor::ConcatOp::create(b, loc, rank - 1, grads);
  Value weight = concats.get(weights, side.getDefiningOp());
  Value dx = LinearOp::create(b, loc, root->getResult(0).getType(), side,
                              weight, /*bias=*/Value(), b.getUnitAttr());
  root->getResult(0).replaceAllUsesWith(dx);
  // The sum's ops (from the root down), then the linears, used only there.
  for (Operation *op : sum)
    op->erase();
  for (auto &[key, op] : byKey)
    op.erase();
  return true;
}

} // namespace

void mlir::triax::kernels::fuseProjections(func::FuncOp fn) {
  // The groups: fusable linears by (input, block), in program order.
  llvm::MapVector<std::pair<Value, Block *>, SmallVector<LinearOp>> byInput;
  fn.walk([&](LinearOp op) {
    if (isFusable(op))
      byInput[{op.getInput(), op->getBlock()}].push_back(op);
  });
  WeightConcats concats(fn);
  SmallVector<SmallVector<WeightKey>> fused;
  for (auto &[input, candidates] : byInput) {
    // Those like the first; every result's readers after the last member
    // (where the fused linear goes).
    SmallVector<LinearOp> group;
    for (LinearOp op : candidates)
      if (compatible(candidates.front(), op))
        group.push_back(op);
    LinearOp last = group.back();
    bool readAfter = llvm::all_of(group, [&](LinearOp op) {
      return llvm::all_of(op.getResult().getUsers(), [&](Operation *user) {
        Operation *ancestor = last->getBlock()->findAncestorOpInBlock(*user);
        return ancestor && last->isBeforeInBlock(ancestor);
      });
    });
    if (group.size() < 2 || !readAfter)
      continue;
    fused.push_back(llvm::map_to_vector(
        group, [](LinearOp op) { return weightKey(op.getWeight()); }));
    fuseForward(group, concats);
  }
  if (fused.empty())
    return;
  // The input gradients: each sum of transposed linears of a group's
  // weights (an add tree's root: not an add used once by another add).
  SmallVector<Operation *> roots;
  fn.walk([&](Operation *op) {
    if (isa<FusedElementwiseOp>(op) ||
        (isa<AddOp>(op) &&
         (!op->hasOneUse() || !isa<AddOp>(*op->user_begin()))))
      roots.push_back(op);
  });
  for (Operation *root : roots)
    fuseBackward(root, fused, concats);
}

//===----------------------------------------------------------------------===//
// The slices and concatenations in the kernels
//===----------------------------------------------------------------------===//

namespace {

/// Whether `op` keeps every dimension but the last whole, at a static
/// column offset with unit strides.
bool isColumnSlice(tensor::ExtractSliceOp op) {
  RankedTensorType source = op.getSourceType(), result = op.getResultType();
  if (!op.hasUnitStride() || !source.hasStaticShape() ||
      result.getRank() != source.getRank() ||
      ShapedType::isDynamic(op.getStaticOffsets().back()))
    return false;
  for (int64_t d = 0; d + 1 < source.getRank(); ++d)
    if (op.getStaticOffsets()[d] != 0 ||
        result.getDimSize(d) != source.getDimSize(d))
      return false;
  return true;
}

/// A column slice that only Triax_ReadsRowViews ops read: a view of the
/// source's buffer (those ops' lowerings take it through rowView). Any
/// other slice is PipelineKernels.cpp's copy.
struct ColumnSliceLowering : OpConversionPattern<tensor::ExtractSliceOp> {
  ColumnSliceLowering(TypeConverter &converter, MLIRContext *ctx)
      : OpConversionPattern(converter, ctx, /*benefit=*/2) {}
  LogicalResult
  matchAndRewrite(tensor::ExtractSliceOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    if (!isColumnSlice(op) ||
        !llvm::all_of(op->getUsers(), [](Operation *user) {
          return user->hasTrait<ReadsRowViews>();
        }))
      return failure();
    KernelBuilder k(rewriter, op.getLoc());
    rewriter.replaceOp(op, columnView(k, adaptor.getSource(),
                                      op.getStaticOffsets().back(),
                                      op.getResultType().getShape().back()));
    return success();
  }
};

/// A concatenation along the last dimension. Where its operands are the
/// column views, in order, of one buffer that they cover (an attention
/// gradient's dq, dk, dv side by side: AttentionGradLowering), it is that
/// buffer; otherwise a copy of each operand into its columns.
struct ConcatLowering : OpConversionPattern<tensor::ConcatOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(tensor::ConcatOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    RankedTensorType type = op.getResultType();
    if (!type.hasStaticShape() ||
        op.getDim() != static_cast<uint64_t>(type.getRank() - 1))
      return op.emitOpError("only static concatenations along the last "
                            "dimension are lowered");
    SmallVector<Value> parts =
        llvm::map_to_vector(adaptor.getInputs(), rowView);
    if (Value whole = viewedWhole(parts, type)) {
      rewriter.replaceOp(op, whole);
      return success();
    }
    // One loop nest over the result's rows and columns (one launch on the
    // GPU, each element written by its own iteration), each column moved
    // from its part (KernelBuilder::dispatchRanges on the column).
    KernelBuilder k(rewriter, op.getLoc());
    Value out = k.alloc(type);
    Value outRows = k.rows(out);
    SmallVector<Value> partRows;
    SmallVector<int64_t> widths;
    for (Value part : parts) {
      partRows.push_back(k.rows(part));
      widths.push_back(KernelBuilder::rowsCols(partRows.back()).second);
    }
    auto [rows, cols] = KernelBuilder::rowsCols(outRows);
    k.parallel({rows, cols}, [&](KernelBuilder &k, ValueRange ivs) {
      k.dispatchRanges(ivs[1], widths,
                       [&](KernelBuilder &k, size_t m, Value column) {
                         k.move(partRows[m], {ivs[0], column}, outRows, ivs);
                       });
    });
    rewriter.replaceOp(op, out);
    return success();
  }

  /// The buffer of which `parts` are consecutive column views from column
  /// 0 to its last, when it has the concatenation's shape; null otherwise.
  static Value viewedWhole(ArrayRef<Value> parts, RankedTensorType type) {
    Value whole;
    int64_t column = 0;
    for (Value part : parts) {
      auto view = part.getDefiningOp<memref::SubViewOp>();
      if (!view || (whole && view.getSource() != whole))
        return Value();
      whole = view.getSource();
      ArrayRef<int64_t> offsets = view.getStaticOffsets();
      if (!view.hasUnitStride() || offsets.back() != column ||
          llvm::any_of(offsets.drop_back(), [](int64_t o) { return o != 0; }))
        return Value();
      column += view.getType().getShape().back();
    }
    auto wholeType =
        dyn_cast_or_null<MemRefType>(whole ? whole.getType() : Type());
    if (!wholeType || !wholeType.getLayout().isIdentity() ||
        wholeType.getShape() != type.getShape() ||
        wholeType.getElementType() != type.getElementType() ||
        column != type.getShape().back())
      return Value();
    return whole;
  }
};

} // namespace

Value mlir::triax::kernels::rowView(Value value) {
  auto cast = value.getDefiningOp<UnrealizedConversionCastOp>();
  if (!cast || cast->getNumOperands() != 1 || cast->getNumResults() != 1)
    return value;
  auto from = dyn_cast<MemRefType>(cast->getOperand(0).getType());
  auto to = dyn_cast<MemRefType>(value.getType());
  if (!from || !to || from.getShape() != to.getShape() ||
      from.getElementType() != to.getElementType())
    return value;
  return cast->getOperand(0);
}

RankedTensorType mlir::triax::kernels::sideBySideResults(Operation *op) {
  if (op->getNumResults() == 0)
    return nullptr;
  for (Operation *user : op->getResult(0).getUsers()) {
    auto concat = dyn_cast<tensor::ConcatOp>(user);
    if (concat && concat.getInputs() == op->getResults() &&
        concat.getDim() ==
            static_cast<uint64_t>(concat.getResultType().getRank() - 1))
      return concat.getResultType();
  }
  return nullptr;
}

Value mlir::triax::kernels::columnView(KernelBuilder &k, Value buffer,
                                       int64_t offset, int64_t width) {
  OpBuilder &b = k.builder();
  auto type = cast<MemRefType>(buffer.getType());
  int64_t rank = type.getRank();
  SmallVector<OpFoldResult> offsets(rank, b.getIndexAttr(0)),
      strides(rank, b.getIndexAttr(1)), sizes;
  offsets.back() = b.getIndexAttr(offset);
  for (int64_t d : type.getShape().drop_back())
    sizes.push_back(b.getIndexAttr(d));
  sizes.push_back(b.getIndexAttr(width));
  return memref::SubViewOp::create(b, k.getLoc(), buffer, offsets, sizes,
                                   strides);
}

void mlir::triax::kernels::populateViewPatterns(TypeConverter &converter,
                                                RewritePatternSet &patterns) {
  patterns.add<ColumnSliceLowering, ConcatLowering>(converter,
                                                    patterns.getContext());
}
