//===- CollectiveKernels.cpp - dist collectives to runtime calls ----------===//
//
// dist.all_reduce becomes a call of the runtime's in-place all_reduce
// (RuntimeABI.h: trx_all_reduce_f32) on a contiguous buffer;
// dist.all_gather and dist.reduce_scatter along any dimension become the
// runtime's flat all_gather / reduce_scatter on a buffer in group-major
// order (packed or unpacked around the call when the dimension is not the
// outermost non-unit one, as the sequence dimension of sequence
// parallelism's [batch, seq, hidden] activations); dist.all_to_all
// likewise around the runtime's flat all_to_all. The group is
// passed as a bit mask of mesh axes, numbered in the order of the module's
// dist.mesh: the order the model descriptor gives trx_dist_init, so the
// compiled code and the runtime agree on which communicator is meant.
// Each has an entry for f32 and one for bf16 tensors (a bf16 model's
// activations and gradients go over the wire in bf16, 2 bytes an element,
// as Megatron-LM sends them; the runtime combines bf16 reductions in f32
// and rounds each ring step's partial sums to bf16), picked by
// collectiveEntry.
//
//===----------------------------------------------------------------------===//

#include "KernelBuilder.h"

#include "triax/Conversion/RuntimeABI.h"
#include "triax/Dialect/Dist/IR/Dist.h"
#include "triax/Dialect/Triax/IR/Triax.h"

using namespace mlir;
using namespace mlir::triax::kernels;

FailureOr<int64_t> mlir::triax::kernels::axisMask(Operation *op,
                                                  FlatSymbolRefAttr meshName,
                                                  ArrayAttr axes) {
  dist::MeshOp mesh = dist::lookupMesh(op, meshName);
  if (!mesh)
    return op->emitOpError("refers to unknown mesh ") << meshName;
  ArrayRef<Attribute> names = mesh.getAxisNames().getValue();
  int64_t mask = 0;
  for (Attribute axis : axes) {
    auto it = llvm::find(names, axis);
    if (it == names.end())
      return op->emitOpError("mesh ") << meshName << " has no axis " << axis;
    mask |= int64_t(1) << (it - names.begin());
  }
  return mask;
}

trx_reduce_op mlir::triax::kernels::abiReduction(dist::ReductionKind kind) {
  switch (kind) {
  case dist::ReductionKind::sum:
    return TRX_REDUCE_SUM;
  case dist::ReductionKind::avg:
    return TRX_REDUCE_AVG;
  case dist::ReductionKind::max:
    return TRX_REDUCE_MAX;
  case dist::ReductionKind::min:
    return TRX_REDUCE_MIN;
  }
  llvm_unreachable("unknown ReductionKind");
}

FailureOr<StringRef> mlir::triax::kernels::collectiveEntry(Operation *op,
                                                           Type element,
                                                           StringRef f32,
                                                           StringRef bf16) {
  if (element.isF32())
    return f32;
  if (element.isBF16())
    return bf16;
  return op->emitOpError("only f32 and bf16 tensors are communicated "
                         "between ranks, got ")
         << element;
}

/// The runtime's in-place all_reduce `callee` of the contiguous buffer
/// `buffer` (its element type's entry).
static void callAllReduce(KernelBuilder &k, StringRef callee, Value buffer,
                          trx_reduce_op kind, int64_t mask) {
  func::CallOp::create(
      k.builder(), k.getLoc(), callee, TypeRange{},
      ValueRange{k.dynamicFlat(buffer), k.i32(kind), k.i64(mask)});
}

void mlir::triax::kernels::allReduceInPlace(KernelBuilder &k, Value buffer,
                                            trx_reduce_op kind, int64_t mask) {
  callAllReduce(k, ::triax::rt::kAllReduceF32, buffer, kind, mask);
}

Value mlir::triax::kernels::groupPosition(KernelBuilder &k, int64_t mask) {
  OpBuilder &b = k.builder();
  Value pos =
      func::CallOp::create(b, k.getLoc(), ::triax::rt::kGroupPosition,
                           TypeRange{b.getI64Type()}, ValueRange{k.i64(mask)})
          .getResult(0);
  return k.toIndex(pos);
}

Value mlir::triax::kernels::loadBalancedPosition(KernelBuilder &k, Value j,
                                                 Value member, int64_t members,
                                                 int64_t chunk) {
  Value c = k.index(chunk);
  Value first = k.cmpi(arith::CmpIPredicate::ult, j, c);
  Value mirror = arith::SubIOp::create(k.builder(), k.getLoc(),
                                       k.index(2 * members - 1), member);
  Value own = k.select(first, member, mirror);
  Value within =
      k.select(first, j, arith::SubIOp::create(k.builder(), k.getLoc(), j, c));
  return k.addi(k.muli(own, c), within);
}

/// The first global row the rank holds, or null for a replicated table.
FailureOr<Value> mlir::triax::kernels::vocabOffset(KernelBuilder &k,
                                                   Operation *op,
                                                   FlatSymbolRefAttr mesh,
                                                   ArrayAttr axes,
                                                   int64_t localVocab) {
  if (!mesh)
    return Value();
  FailureOr<int64_t> mask = axisMask(op, mesh, axes);
  if (failed(mask))
    return failure();
  Value position = groupPosition(k, *mask);
  return k.muli(position, k.index(localVocab));
}

/// The local row of global index `id` (any index when outside the block)
/// and whether the rank holds it; (id, null) for a replicated table.
std::pair<Value, Value> mlir::triax::kernels::localRow(KernelBuilder &k,
                                                       Value id, Value offset,
                                                       int64_t localVocab) {
  if (!offset)
    return {id, Value()};
  Value local = arith::SubIOp::create(k.builder(), k.getLoc(), id, offset);
  // Unsigned: a negative difference is out of range too.
  Value inside = k.cmpi(arith::CmpIPredicate::ult, local, k.index(localVocab));
  return {k.select(inside, local, k.index(0)), inside};
}

namespace {

/// copy_to_group moves no data in forward: its result is its input.
struct CopyToGroupLowering : OpConversionPattern<dist::CopyToGroupOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(dist::CopyToGroupOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOp(op, adaptor.getInput());
    return success();
  }
};

/// The result is reduced in place when the input is a gradient buffer read
/// only by this op (the dist-data-parallel case: the runtime zeroes the
/// buffer before the next step, and nothing else reads it in between);
/// otherwise in a fresh copy of the input.
struct AllReduceLowering : OpConversionPattern<dist::AllReduceOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(dist::AllReduceOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    FailureOr<StringRef> callee = collectiveEntry(
        op, op.getType().getElementType(), ::triax::rt::kAllReduceF32,
        ::triax::rt::kAllReduceBf16);
    if (failed(callee))
      return failure();
    FailureOr<int64_t> mask = axisMask(op, op.getMeshAttr(), op.getAxes());
    if (failed(mask))
      return failure();
    KernelBuilder k(rewriter, op.getLoc());
    Value buffer = adaptor.getInput();
    bool inPlace = op.getInput().getDefiningOp<mlir::triax::GetGradOp>() &&
                   op.getInput().hasOneUse();
    if (!inPlace) {
      Value copy = k.alloc(op.getType());
      Value src = k.flat(buffer), dst = k.flat(copy);
      int64_t n = cast<MemRefType>(dst.getType()).getNumElements();
      k.parallel(
          {n}, [&](KernelBuilder &k, ValueRange i) { k.move(src, i, dst, i); });
      buffer = copy;
    }
    callAllReduce(k, *callee, buffer, abiReduction(op.getReduction()), *mask);
    rewriter.replaceOp(op, buffer);
    return success();
  }
};

/// A tensor seen as [outer, dim, inner] around dimension `dim`: the
/// runtime's flat collectives exchange blocks in group order, and member c's
/// block of dimension `dim` is contiguous only when `outer` is 1.
struct DimSplit {
  int64_t outer = 1, inner = 1;
  DimSplit(RankedTensorType type, int64_t dim) {
    for (int64_t d = 0; d < type.getRank(); ++d) {
      if (d < dim)
        outer *= type.getDimSize(d);
      else if (d > dim)
        inner *= type.getDimSize(d);
    }
  }
};

/// Copies between a buffer of [outer, n * local, inner] elements (`full`,
/// flat) and its group-major form [n, outer, local, inner] (`packed`, flat):
/// packed[c, a, s, b] = full[a, c * local + s, b], in the direction `pack`.
static void repack(KernelBuilder &k, Value full, Value packed, int64_t n,
                   int64_t outer, int64_t local, int64_t inner, bool pack) {
  Value fullFlat = k.flat(full), packedFlat = k.flat(packed);
  k.parallel({n, outer, local, inner}, [&](KernelBuilder &k, ValueRange i) {
    Value c = i[0], a = i[1], s = i[2], b = i[3];
    // ((a * n + c) * local + s) * inner + b
    Value row = k.addi(k.muli(a, k.index(n)), c);
    Value f = k.addi(
        k.muli(k.addi(k.muli(row, k.index(local)), s), k.index(inner)), b);
    // ((c * outer + a) * local + s) * inner + b
    Value blk = k.addi(k.muli(c, k.index(outer)), a);
    Value p = k.addi(
        k.muli(k.addi(k.muli(blk, k.index(local)), s), k.index(inner)), b);
    if (pack)
      k.move(fullFlat, f, packedFlat, p);
    else
      k.move(packedFlat, p, fullFlat, f);
  });
}

/// reduce_scatter along `dim`: the input in group-major order (a copy
/// unless the dimension is outermost), then the runtime's flat
/// reduce_scatter, whose block c is member c's result in its own layout.
struct ReduceScatterLowering : OpConversionPattern<dist::ReduceScatterOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(dist::ReduceScatterOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Type element = op.getType().getElementType();
    FailureOr<StringRef> callee =
        collectiveEntry(op, element, ::triax::rt::kReduceScatterF32,
                        ::triax::rt::kReduceScatterBf16);
    if (failed(callee))
      return failure();
    FailureOr<int64_t> mask = axisMask(op, op.getMeshAttr(), op.getAxes());
    if (failed(mask))
      return failure();
    auto inType = cast<RankedTensorType>(op.getInput().getType());
    int64_t dim = op.getDim();
    int64_t local = op.getType().getDimSize(dim);
    int64_t n = inType.getDimSize(dim) / local;
    DimSplit split(inType, dim);
    KernelBuilder k(rewriter, op.getLoc());
    Value packed = adaptor.getInput();
    if (!dist::isGroupMajor(inType, dim, n)) {
      packed = k.alloc(
          MemRefType::get({n * split.outer * local * split.inner}, element));
      repack(k, adaptor.getInput(), packed, n, split.outer, local, split.inner,
             /*pack=*/true);
    }
    Value out = k.alloc(op.getType());
    func::CallOp::create(rewriter, op.getLoc(), *callee, TypeRange{},
                         ValueRange{k.dynamicFlat(packed), k.dynamicFlat(out),
                                    k.i32(abiReduction(op.getReduction())),
                                    k.i64(*mask)});
    rewriter.replaceOp(op, out);
    return success();
  }
};

/// all_gather along `dim`: the runtime's flat all_gather concatenates the
/// members' buffers in group order; unpacked into the result's layout
/// unless the dimension is outermost.
struct AllGatherLowering : OpConversionPattern<dist::AllGatherOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(dist::AllGatherOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Type element = op.getType().getElementType();
    FailureOr<StringRef> callee = collectiveEntry(
        op, element, ::triax::rt::kAllGatherF32, ::triax::rt::kAllGatherBf16);
    if (failed(callee))
      return failure();
    FailureOr<int64_t> mask = axisMask(op, op.getMeshAttr(), op.getAxes());
    if (failed(mask))
      return failure();
    auto inType = cast<RankedTensorType>(op.getInput().getType());
    int64_t dim = op.getDim();
    int64_t local = inType.getDimSize(dim);
    int64_t n = op.getType().getDimSize(dim) / local;
    DimSplit split(inType, dim);
    KernelBuilder k(rewriter, op.getLoc());
    Value out = k.alloc(op.getType());
    bool direct = dist::isGroupMajor(inType, dim, n);
    Value gathered =
        direct ? out
               : k.alloc(MemRefType::get(
                     {n * split.outer * local * split.inner}, element));
    func::CallOp::create(rewriter, op.getLoc(), *callee, TypeRange{},
                         ValueRange{k.dynamicFlat(adaptor.getInput()),
                                    k.dynamicFlat(gathered), k.i64(*mask)});
    if (!direct)
      repack(k, out, gathered, n, split.outer, local, split.inner,
             /*pack=*/false);
    rewriter.replaceOp(op, out);
    return success();
  }
};

/// all_to_all: the input in group-major order (slice j of the split
/// dimension for member j; a copy unless that dimension is outermost), the
/// runtime's flat all_to_all, then the g received slices concatenated along
/// the concat dimension (unpacked unless it is outermost).
struct AllToAllLowering : OpConversionPattern<dist::AllToAllOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(dist::AllToAllOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Type element = op.getType().getElementType();
    FailureOr<StringRef> callee = collectiveEntry(
        op, element, ::triax::rt::kAllToAllF32, ::triax::rt::kAllToAllBf16);
    if (failed(callee))
      return failure();
    FailureOr<int64_t> mask = axisMask(op, op.getMeshAttr(), op.getAxes());
    if (failed(mask))
      return failure();
    auto inType = cast<RankedTensorType>(op.getInput().getType());
    if (!inType.hasStaticShape())
      return op.emitOpError("needs a static shape, got ") << inType;
    int64_t n =
        dist::lookupMesh(op, op.getMeshAttr()).getGroupSize(op.getAxes());
    int64_t split = op.getSplitDim(), concat = op.getConcatDim();
    SmallVector<int64_t> chunkShape(inType.getShape());
    chunkShape[split] /= n;
    auto chunk = inType.clone(chunkShape);
    DimSplit in(inType, split), out(chunk, concat);
    KernelBuilder k(rewriter, op.getLoc());
    auto flatType = MemRefType::get({inType.getNumElements()}, element);
    Value packed = adaptor.getInput();
    if (!dist::isGroupMajor(inType, split, n)) {
      packed = k.alloc(flatType);
      repack(k, adaptor.getInput(), packed, n, in.outer, chunkShape[split],
             in.inner, /*pack=*/true);
    }
    Value result = k.alloc(op.getType());
    bool direct = dist::isGroupMajor(chunk, concat, n);
    Value received = direct ? result : k.alloc(flatType);
    func::CallOp::create(rewriter, op.getLoc(), *callee, TypeRange{},
                         ValueRange{k.dynamicFlat(packed),
                                    k.dynamicFlat(received), k.i64(*mask)});
    if (!direct)
      repack(k, result, received, n, out.outer, chunkShape[concat], out.inner,
             /*pack=*/false);
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// shard_sequence moves no data: this member's two chunks copied out of
/// the whole input (loadBalancedPosition), or its one chunk (contiguous).
struct ShardSequenceLowering : OpConversionPattern<dist::ShardSequenceOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(dist::ShardSequenceOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    FailureOr<int64_t> mask = axisMask(op, op.getMeshAttr(), op.getAxes());
    if (failed(mask))
      return failure();
    RankedTensorType type = op.getType();
    int64_t dim = op.getDim();
    int64_t local = type.getDimSize(dim);
    int64_t members = op.getInput().getType().getDimSize(dim) / local;
    KernelBuilder k(rewriter, op.getLoc());
    Value member = groupPosition(k, *mask);
    Value out = k.alloc(type);
    Value in = adaptor.getInput();
    bool contiguous = op.getContiguous();
    k.parallel(type.getShape(), [&](KernelBuilder &k, ValueRange ivs) {
      SmallVector<Value> at(ivs);
      at[dim] = contiguous ? k.addi(k.muli(member, k.index(local)), ivs[dim])
                           : loadBalancedPosition(k, ivs[dim], member, members,
                                                  local / 2);
      k.move(in, at, out, ivs);
    });
    rewriter.replaceOp(op, out);
    return success();
  }
};

} // namespace

void mlir::triax::kernels::populateCollectivePatterns(
    TypeConverter &converter, RewritePatternSet &patterns) {
  patterns.add<AllReduceLowering, CopyToGroupLowering, AllGatherLowering,
               ReduceScatterLowering, AllToAllLowering, ShardSequenceLowering>(
      converter, patterns.getContext());
}
