//===- ZeroKernels.cpp - Collectives on chunks and state buffers ----------===//
//
// dist.reduce_scatter_flat / all_gather_flat become calls of the runtime's
// padded reduce-scatter and all-gather on contiguous buffers (RuntimeABI.h);
// dist.all_gather_param gathers a ZeRO-1/2 parameter's updated chunks in
// place in the runtime's parameter buffer; dist.all_reduce_grads reduces a
// bucket of gradient buffers in one message; a ZeRO-2 gradient's
// reduce-scatter and the accumulation of its chunk form a gradient region.
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

struct AllGatherParamLowering : ParamPattern<dist::AllGatherParamOp> {
  using ParamPattern::ParamPattern;
  LogicalResult
  matchAndRewrite(dist::AllGatherParamOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    FailureOr<int64_t> index = paramIndex(op, op.getParam());
    FailureOr<int64_t> mask = axisMask(op, op.getMeshAttr(), op.getAxes());
    if (failed(index) || failed(mask))
      return failure();
    auto i64 = [&](int64_t v) {
      return arith::ConstantOp::create(rewriter, op.getLoc(),
                                       rewriter.getI64IntegerAttr(v));
    };
    func::CallOp::create(rewriter, op.getLoc(),
                         ::triax::rt::kZeroAllGatherParam, TypeRange{},
                         ValueRange{i64(*index), i64(*mask)});
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
                                                const ParamIndex &params) {
  patterns.add<ReduceScatterFlatLowering, AllGatherFlatLowering>(
      converter, patterns.getContext());
  patterns.add<AllGatherParamLowering, AllReduceGradsLowering,
               ReduceScatterAccumulateLowering>(converter,
                                                patterns.getContext(), params);
}
