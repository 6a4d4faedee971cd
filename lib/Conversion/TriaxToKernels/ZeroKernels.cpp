//===- ZeroKernels.cpp - Collectives on chunks and state buffers ----------===//
//
// dist.reduce_scatter_flat / all_gather_flat become calls of the runtime's
// padded reduce-scatter and all-gather on contiguous buffers (RuntimeABI.h);
// dist.all_gather_params gathers ZeRO-1/2 parameters' updated chunks in
// place in the runtime's parameter buffers (a bucket of several in one
// message); dist.all_gather_bucket (ZeRO-3's gathers of a block's
// parameters) and dist.reduce_scatter_bucket pack their tensors' chunks for
// one collective; dist.all_reduce_grads reduces a bucket of gradient
// buffers in one message; a ZeRO-2 gradient's (or bucket's) reduce-scatter
// and the accumulation of its chunks form a gradient region.
//
//===----------------------------------------------------------------------===//

#include "KernelBuilder.h"

#include "triax/Conversion/RuntimeABI.h"
#include "triax/Dialect/Dist/IR/Dist.h"
#include "triax/Dialect/Triax/IR/Triax.h"

using namespace mlir;
using namespace mlir::triax::kernels;

/// The runtime call `callee(input, out, [reduction,] axis mask)` of a
/// flat-chunk collective.
static void callFlatCollective(KernelBuilder &k, OpBuilder &b, Location loc,
                               StringRef callee, Value input, Value out,
                               std::optional<int32_t> reduction, int64_t mask) {
  SmallVector<Value> args = {k.dynamicFlat(input), k.dynamicFlat(out)};
  if (reduction)
    args.push_back(k.i32(*reduction));
  args.push_back(k.i64(mask));
  func::CallOp::create(b, loc, callee, TypeRange{}, args);
}

/// Replaces a flat-chunk collective `op` (one f32 or bf16 result) by a
/// fresh result buffer and the runtime call `callee(input, result,
/// [reduction,] axis mask)`, callee the entry of f32 or bf16 elements.
static LogicalResult lowerFlatCollective(Operation *op, StringRef f32Callee,
                                         StringRef bf16Callee, Value input,
                                         FlatSymbolRefAttr mesh, ArrayAttr axes,
                                         std::optional<int32_t> reduction,
                                         ConversionPatternRewriter &rewriter) {
  auto type = cast<RankedTensorType>(op->getResult(0).getType());
  FailureOr<StringRef> callee =
      collectiveEntry(op, type.getElementType(), f32Callee, bf16Callee);
  if (failed(callee))
    return failure();
  FailureOr<int64_t> mask = axisMask(op, mesh, axes);
  if (failed(mask))
    return failure();
  KernelBuilder k(rewriter, op->getLoc());
  Value out = k.alloc(type);
  callFlatCollective(k, rewriter, op->getLoc(), *callee, input, out, reduction,
                     *mask);
  rewriter.replaceOp(op, out);
  return success();
}

namespace {

struct ReduceScatterFlatLowering
    : OpConversionPattern<dist::ReduceScatterFlatOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(dist::ReduceScatterFlatOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    return lowerFlatCollective(
        op, ::triax::rt::kReduceScatterF32, ::triax::rt::kReduceScatterBf16,
        adaptor.getInput(), op.getMeshAttr(), op.getAxes(),
        abiReduction(op.getReduction()), rewriter);
  }
};

struct AllGatherFlatLowering : OpConversionPattern<dist::AllGatherFlatOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(dist::AllGatherFlatOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    return lowerFlatCollective(op, ::triax::rt::kAllGatherF32,
                               ::triax::rt::kAllGatherBf16, adaptor.getInput(),
                               op.getMeshAttr(), op.getAxes(), std::nullopt,
                               rewriter);
  }
};

/// A bucket's layout in one message over a group of g: tensor j's chunk
/// has chunks[j] elements at offsets[j] of a member's part, which holds
/// `part` elements (the sum of the chunks).
struct BucketLayout {
  SmallVector<int64_t> chunks, offsets;
  int64_t part = 0;
  BucketLayout() = default;
  explicit BucketLayout(ArrayRef<int64_t> chunkSizes) {
    for (int64_t k : chunkSizes) {
      chunks.push_back(k);
      offsets.push_back(part);
      part += k;
    }
  }
};

/// How a bucket's copies loop over its tensors. By default one parallel
/// loop per tensor: on the CPU each is a plain copy the vectorizer takes
/// (one loop over the whole bucket, finding each element's tensor by a
/// tree of compares, made tiny's ZeRO-1 step 10% slower). `fuse`
/// (fuse-bucket-copies, the GPU): one loop over the concatenation of as
/// many tensors as one launch's `paramBytes` of kernel parameters hold
/// (each tensor's buffer a 40-byte descriptor, plus the bucket's shared
/// one; 0: no limit), one launch where there were n.
struct CopyForm {
  bool fuse = false;
  int64_t paramBytes = 0;
};

/// Runs body(k, j, e - offset_j, e) for each element e of the
/// concatenation of ranges of `sizes` (the bucket's tensors), in `form`.
static void eachRange(KernelBuilder &k, const CopyForm &form,
                      ArrayRef<int64_t> sizes,
                      KernelBuilder::ConcatBodyFn body) {
  int64_t offset = 0;
  if (!form.fuse) {
    for (auto [j, n] : llvm::enumerate(sizes)) {
      k.parallel({n}, [&](KernelBuilder &k, ValueRange iv) {
        body(k, j, iv[0], k.addi(iv[0], k.index(offset)));
      });
      offset += n;
    }
    return;
  }
  constexpr int64_t kBufferBytes = 40;
  for (size_t first = 0; first < sizes.size();) {
    size_t end = first + 1;
    while (end < sizes.size() &&
           (form.paramBytes <= 0 ||
            int64_t(end + 1 - first + 1) * kBufferBytes <= form.paramBytes))
      ++end;
    ArrayRef<int64_t> run = sizes.slice(first, end - first);
    const int64_t base = offset;
    k.parallelConcat(
        run, [&](KernelBuilder &k, size_t m, Value local, Value global) {
          body(k, first + m, local,
               base == 0 ? global : k.addi(global, k.index(base)));
        });
    for (int64_t n : run)
      offset += n;
    first = end;
  }
}

/// A bucket's gather in one message over a group of g: this member's
/// `chunks` (1-D, chunks[j] of ceil(numels[j] / g) elements) packed one
/// after the other (`part` elements), the parts gathered (g * part,
/// member-major), and each tensor's elements copied out of the members'
/// parts into `wholes[j]` (flat, numels[j] elements).
static void gatherBucket(KernelBuilder &k, OpBuilder &b, Location loc,
                         const CopyForm &form, StringRef callee, int64_t mask,
                         int64_t g, ValueRange chunks, ValueRange wholes,
                         ArrayRef<int64_t> numels, Type element) {
  SmallVector<int64_t> chunkSizes;
  for (int64_t n : numels)
    chunkSizes.push_back(trx_zero_chunk(n, g));
  BucketLayout layout(chunkSizes);
  Value part = k.alloc(MemRefType::get({layout.part}, element));
  eachRange(k, form, layout.chunks,
            [&](KernelBuilder &k, size_t j, Value t, Value e) {
              k.store(k.load(chunks[j], {t}), part, {e});
            });
  Value parts = k.alloc(MemRefType::get({g * layout.part}, element));
  callFlatCollective(k, b, loc, callee, part, parts, std::nullopt, mask);
  // Element e of tensor j: member e / k_j's part, at the tensor's offset in
  // it plus e mod k_j.
  eachRange(k, form, numels, [&](KernelBuilder &k, size_t j, Value e, Value) {
    Value kj = k.index(layout.chunks[j]);
    Value member = arith::DivUIOp::create(b, loc, e, kj);
    Value at =
        k.addi(k.muli(member, k.index(layout.part)),
               k.addi(k.index(layout.offsets[j]),
                      arith::RemUIOp::create(b, loc, e, kj).getResult()));
    k.store(k.load(parts, {at}), wholes[j], {e});
  });
}

/// One parameter's updated chunks gathered in place by the runtime; a
/// bucket of several in one message (gatherBucket) from the parameters'
/// chunk views into their buffers.
struct AllGatherParamsLowering : ParamPattern<dist::AllGatherParamsOp> {
  AllGatherParamsLowering(TypeConverter &converter, MLIRContext *ctx,
                          const ParamIndex &params, CopyForm form)
      : ParamPattern(converter, ctx, params), form(form) {}
  CopyForm form;
  LogicalResult
  matchAndRewrite(dist::AllGatherParamsOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    FailureOr<int64_t> mask = axisMask(op, op.getMeshAttr(), op.getAxes());
    if (failed(mask))
      return failure();
    Location loc = op.getLoc();
    SmallVector<int64_t> indices, numels;
    SmallVector<RankedTensorType> locals;
    Type element;
    for (Attribute ref : op.getParams()) {
      auto name = cast<SymbolRefAttr>(ref);
      StringRef param = name.getLeafReference().getValue();
      FailureOr<int64_t> index = paramIndex(op, param);
      if (failed(index))
        return failure();
      RankedTensorType local = params.localTypes.lookup(param);
      indices.push_back(*index);
      locals.push_back(local);
      numels.push_back(local.getNumElements());
      element = local.getElementType();
    }
    KernelBuilder k(rewriter, loc);
    if (indices.size() == 1) {
      func::CallOp::create(rewriter, loc, ::triax::rt::kZeroAllGatherParam,
                           TypeRange{},
                           ValueRange{k.i64(indices[0]), k.i64(*mask)});
      rewriter.eraseOp(op);
      return success();
    }
    FailureOr<StringRef> callee = collectiveEntry(
        op, element, ::triax::rt::kAllGatherF32, ::triax::rt::kAllGatherBf16);
    if (failed(callee))
      return failure();
    const int64_t g =
        dist::lookupMesh(op, op.getMeshAttr()).getGroupSize(op.getAxes());
    SmallVector<Value> chunks, wholes;
    for (auto [index, local, n] : llvm::zip(indices, locals, numels)) {
      chunks.push_back(
          k.stateChunk(TRX_STATE_PARAM, index,
                       MemRefType::get({trx_zero_chunk(n, g)}, element)));
      wholes.push_back(k.flat(
          k.state(TRX_STATE_PARAM, index,
                  MemRefType::get(local.getShape(), local.getElementType()))));
    }
    gatherBucket(k, rewriter, loc, form, *callee, *mask, g, chunks, wholes,
                 numels, element);
    rewriter.eraseOp(op);
    return success();
  }
};

/// ZeRO-3's gather of a block's parameters: one input, the runtime's
/// gather straight into the result; more, gatherBucket into fresh result
/// buffers.
struct AllGatherBucketLowering : OpConversionPattern<dist::AllGatherBucketOp> {
  AllGatherBucketLowering(TypeConverter &converter, MLIRContext *ctx,
                          CopyForm form)
      : OpConversionPattern(converter, ctx), form(form) {}
  CopyForm form;
  LogicalResult
  matchAndRewrite(dist::AllGatherBucketOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    if (op.getInputs().size() == 1)
      return lowerFlatCollective(op, ::triax::rt::kAllGatherF32,
                                 ::triax::rt::kAllGatherBf16,
                                 adaptor.getInputs()[0], op.getMeshAttr(),
                                 op.getAxes(), std::nullopt, rewriter);
    Type element = getElementTypeOrSelf(op.getInputs()[0].getType());
    FailureOr<StringRef> callee = collectiveEntry(
        op, element, ::triax::rt::kAllGatherF32, ::triax::rt::kAllGatherBf16);
    FailureOr<int64_t> mask = axisMask(op, op.getMeshAttr(), op.getAxes());
    if (failed(callee) || failed(mask))
      return failure();
    const int64_t g =
        dist::lookupMesh(op, op.getMeshAttr()).getGroupSize(op.getAxes());
    KernelBuilder k(rewriter, op.getLoc());
    SmallVector<Value> results, wholes;
    SmallVector<int64_t> numels;
    for (Value r : op.getResults()) {
      auto type = cast<RankedTensorType>(r.getType());
      results.push_back(
          k.alloc(MemRefType::get(type.getShape(), type.getElementType())));
      wholes.push_back(k.flat(results.back()));
      numels.push_back(type.getNumElements());
    }
    gatherBucket(k, rewriter, op.getLoc(), form, *callee, *mask, g,
                 adaptor.getInputs(), wholes, numels, element);
    rewriter.replaceOp(op, results);
    return success();
  }
};

/// A reduce_scatter_bucket's runtime entry, group, element type and
/// layout.
struct ScatterBucket {
  StringRef callee;
  int64_t mask = 0, g = 0;
  Type element;
  BucketLayout layout;

  static FailureOr<ScatterBucket> of(dist::ReduceScatterBucketOp op) {
    ScatterBucket sb;
    SmallVector<int64_t> chunks;
    for (Value r : op.getResults())
      chunks.push_back(cast<RankedTensorType>(r.getType()).getNumElements());
    sb.layout = BucketLayout(chunks);
    sb.element = cast<RankedTensorType>(op.getResults().front().getType())
                     .getElementType();
    FailureOr<StringRef> callee =
        collectiveEntry(op, sb.element, ::triax::rt::kReduceScatterF32,
                        ::triax::rt::kReduceScatterBf16);
    FailureOr<int64_t> mask = axisMask(op, op.getMeshAttr(), op.getAxes());
    if (failed(callee) || failed(mask))
      return failure();
    sb.callee = *callee;
    sb.mask = *mask;
    sb.g = dist::lookupMesh(op, op.getMeshAttr()).getGroupSize(op.getAxes());
    return sb;
  }

  /// The packed [g, part] buffer of one message.
  Value allocPacked(KernelBuilder &k) const {
    return k.alloc(MemRefType::get({g, layout.part}, element));
  }
  /// This member's part of the reduction.
  Value allocPart(KernelBuilder &k) const {
    return k.alloc(MemRefType::get({layout.part}, element));
  }

  /// The bucket's gradients `inputs` packed into `packed` (allocPacked):
  /// member i's part holds chunk i of every input (padded with zeros), one
  /// after the other. One parallel nest per input over (member, element of
  /// its chunk), each iteration writing its own element (the GPU mapping's
  /// race analysis proves that), reading input j's element member * k_j +
  /// t.
  void pack(KernelBuilder &k, OpBuilder &b, Location loc, ValueRange inputs,
            Value packed) const {
    for (auto [j, kj] : llvm::enumerate(layout.chunks)) {
      Value flat = k.flat(inputs[j]);
      int64_t numel = cast<MemRefType>(inputs[j].getType()).getNumElements();
      k.parallel({g, kj}, [&](KernelBuilder &k, ValueRange iv) {
        Value member = iv[0], t = iv[1];
        Value src = k.addi(k.muli(member, k.index(kj)), t);
        Value last = k.index(numel - 1);
        Value inside = k.cmpi(arith::CmpIPredicate::ule, src, last);
        Value v = k.load(flat, {arith::MinUIOp::create(b, loc, src, last)});
        Value zero =
            arith::ConstantOp::create(b, loc, b.getZeroAttr(v.getType()));
        k.store(k.select(inside, v, zero), packed,
                {member, k.addi(t, k.index(layout.offsets[j]))});
      });
    }
  }
};

/// A bucket's reduce-scatter: the inputs packed, one collective, and each
/// result's chunk copied out of this member's part.
struct ReduceScatterBucketLowering
    : OpConversionPattern<dist::ReduceScatterBucketOp> {
  ReduceScatterBucketLowering(TypeConverter &converter, MLIRContext *ctx,
                              CopyForm form)
      : OpConversionPattern(converter, ctx), form(form) {}
  CopyForm form;
  LogicalResult
  matchAndRewrite(dist::ReduceScatterBucketOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    FailureOr<ScatterBucket> sb = ScatterBucket::of(op);
    if (failed(sb))
      return failure();
    Location loc = op.getLoc();
    KernelBuilder k(rewriter, loc);
    Value packed = sb->allocPacked(k);
    sb->pack(k, rewriter, loc, adaptor.getInputs(), packed);
    Value part = sb->allocPart(k);
    callFlatCollective(k, rewriter, loc, sb->callee, packed, part,
                       abiReduction(op.getReduction()), sb->mask);
    SmallVector<Value> results;
    for (int64_t c : sb->layout.chunks)
      results.push_back(k.alloc(MemRefType::get({c}, sb->element)));
    eachRange(k, form, sb->layout.chunks,
              [&](KernelBuilder &k, size_t j, Value t, Value e) {
                k.store(k.load(part, {e}), results[j], {t});
              });
    rewriter.replaceOp(op, results);
    return success();
  }
};

/// ZeRO-2's bucket: a reduce_scatter_bucket whose results each only feed
/// the accumulation of their parameter's gradient chunk. The packing, the
/// collective and the accumulations go in one gradient region (the
/// buffers allocated before it), as ReduceScatterAccumulateLowering's
/// single gradient.
struct ReduceScatterBucketAccumulateLowering
    : ParamPattern<dist::ReduceScatterBucketOp> {
  ReduceScatterBucketAccumulateLowering(TypeConverter &converter,
                                        MLIRContext *ctx,
                                        const ParamIndex &params, CopyForm form)
      : ParamPattern(converter, ctx, params, /*benefit=*/2), form(form) {}
  CopyForm form;
  LogicalResult
  matchAndRewrite(dist::ReduceScatterBucketOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    SmallVector<mlir::triax::AccumulateGradOp> accs;
    for (Value r : op.getResults()) {
      if (!r.hasOneUse())
        return rewriter.notifyMatchFailure(op, "not a gradient's only use");
      auto acc = dyn_cast<mlir::triax::AccumulateGradOp>(*r.getUsers().begin());
      if (!acc || acc->getBlock() != op->getBlock())
        return rewriter.notifyMatchFailure(op, "not accumulated");
      accs.push_back(acc);
    }
    FailureOr<ScatterBucket> sb = ScatterBucket::of(op);
    if (failed(sb))
      return failure();
    SmallVector<int64_t> indices;
    for (mlir::triax::AccumulateGradOp acc : accs) {
      FailureOr<int64_t> index = paramIndex(acc, acc.getParam());
      if (failed(index))
        return failure();
      indices.push_back(*index);
    }
    Location loc = op.getLoc();
    KernelBuilder k(rewriter, loc);
    Value packed = sb->allocPacked(k);
    Value part = sb->allocPart(k);
    func::CallOp::create(rewriter, loc, ::triax::rt::kCommGradsBegin,
                         TypeRange{}, ValueRange{});
    sb->pack(k, rewriter, loc, adaptor.getInputs(), packed);
    callFlatCollective(k, rewriter, loc, sb->callee, packed, part,
                       abiReduction(op.getReduction()), sb->mask);
    SmallVector<Value> buffers;
    for (auto [index, c] : llvm::zip(indices, sb->layout.chunks))
      buffers.push_back(
          k.state(TRX_STATE_GRAD, index, MemRefType::get({c}, sb->element)));
    eachRange(k, form, sb->layout.chunks,
              [&](KernelBuilder &k, size_t j, Value t, Value e) {
                k.store(k.add(k.load(buffers[j], {t}), k.load(part, {e})),
                        buffers[j], {t});
              });
    func::CallOp::create(rewriter, loc, ::triax::rt::kCommGradsEnd, TypeRange{},
                         ValueRange{});
    for (mlir::triax::AccumulateGradOp acc : accs)
      rewriter.eraseOp(acc);
    rewriter.eraseOp(op);
    return success();
  }
};

/// ZeRO-2: a gradient's reduce-scatter whose only user accumulates the
/// chunk into the parameter's gradient buffer. The collective and the
/// accumulation go in one gradient region (trx_comm_grads_begin/end): on
/// the CUDA target with NCCL they run on the communication stream behind
/// the backward kernels that produced the gradient, while backward goes
/// on; trx_comm_wait_grads (the driver, before the optimizer step) joins
/// them. The chunk is allocated before the region. With the MPI transport
/// the region changes nothing.
struct ReduceScatterAccumulateLowering
    : ParamPattern<dist::ReduceScatterFlatOp> {
  ReduceScatterAccumulateLowering(TypeConverter &converter, MLIRContext *ctx,
                                  const ParamIndex &params)
      : ParamPattern(converter, ctx, params, /*benefit=*/2) {}
  LogicalResult
  matchAndRewrite(dist::ReduceScatterFlatOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    if (!op->hasOneUse())
      return rewriter.notifyMatchFailure(op, "not a gradient's only use");
    auto acc = dyn_cast<mlir::triax::AccumulateGradOp>(*op->getUsers().begin());
    if (!acc || acc->getBlock() != op->getBlock())
      return rewriter.notifyMatchFailure(op, "not accumulated");
    auto type = cast<RankedTensorType>(op.getType());
    FailureOr<StringRef> callee = collectiveEntry(
        op, type.getElementType(), ::triax::rt::kReduceScatterF32,
        ::triax::rt::kReduceScatterBf16);
    if (failed(callee))
      return failure();
    FailureOr<int64_t> index = paramIndex(acc, acc.getParam());
    FailureOr<int64_t> mask = axisMask(op, op.getMeshAttr(), op.getAxes());
    if (failed(index) || failed(mask))
      return failure();
    Location loc = op.getLoc();
    KernelBuilder k(rewriter, loc);
    Value chunk = k.alloc(type);
    func::CallOp::create(rewriter, loc, ::triax::rt::kCommGradsBegin,
                         TypeRange{}, ValueRange{});
    callFlatCollective(k, rewriter, loc, *callee, adaptor.getInput(), chunk,
                       abiReduction(op.getReduction()), *mask);
    accumulateGrad(k, *index, chunk);
    func::CallOp::create(rewriter, loc, ::triax::rt::kCommGradsEnd, TypeRange{},
                         ValueRange{});
    rewriter.eraseOp(acc);
    rewriter.replaceOp(op, chunk);
    return success();
  }
};

/// The bucket's parameter indices in a small i64 buffer, and one runtime
/// call that packs, reduces and unpacks their gradient buffers.
struct AllReduceGradsLowering : ParamPattern<dist::AllReduceGradsOp> {
  using ParamPattern::ParamPattern;
  LogicalResult
  matchAndRewrite(dist::AllReduceGradsOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    FailureOr<int64_t> mask = axisMask(op, op.getMeshAttr(), op.getAxes());
    if (failed(mask))
      return failure();
    KernelBuilder k(rewriter, op.getLoc());
    Location loc = op.getLoc();
    auto i64 = rewriter.getI64Type();
    int64_t n = op.getParams().size();
    Value indices =
        memref::AllocOp::create(rewriter, loc, MemRefType::get({n}, i64));
    for (auto [i, param] : llvm::enumerate(op.getParams())) {
      FailureOr<int64_t> index =
          paramIndex(op, cast<FlatSymbolRefAttr>(param).getValue());
      if (failed(index))
        return failure();
      k.store(arith::ConstantOp::create(rewriter, loc,
                                        rewriter.getI64IntegerAttr(*index)),
              indices, {k.index(int64_t(i))});
    }
    Value view = memref::CastOp::create(
        rewriter, loc, MemRefType::get({ShapedType::kDynamic}, i64), indices);
    func::CallOp::create(
        rewriter, loc, ::triax::rt::kAllReduceGrads, TypeRange{},
        ValueRange{view, k.i32(abiReduction(op.getReduction())),
                   arith::ConstantOp::create(
                       rewriter, loc, rewriter.getI64IntegerAttr(*mask))});
    // (The conversion frees `indices` after this last use.)
    rewriter.eraseOp(op);
    return success();
  }
};

} // namespace

void mlir::triax::kernels::populateZeroPatterns(TypeConverter &converter,
                                                RewritePatternSet &patterns,
                                                const ParamIndex &params,
                                                bool fuseBucketCopies,
                                                int64_t kernelParamBytes) {
  MLIRContext *ctx = patterns.getContext();
  CopyForm form{fuseBucketCopies, kernelParamBytes};
  patterns.add<ReduceScatterFlatLowering, AllGatherFlatLowering>(converter,
                                                                 ctx);
  patterns.add<ReduceScatterBucketLowering, AllGatherBucketLowering>(converter,
                                                                     ctx, form);
  patterns.add<AllReduceGradsLowering, ReduceScatterAccumulateLowering>(
      converter, ctx, params);
  patterns.add<AllGatherParamsLowering, ReduceScatterBucketAccumulateLowering>(
      converter, ctx, params, form);
}
