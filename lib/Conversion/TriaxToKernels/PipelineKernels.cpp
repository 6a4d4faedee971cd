//===- PipelineKernels.cpp - The pipeline schedule's ops to runtime calls -===//
//
// What dist-pipeline's @pipeline_step is made of, on buffers:
// - dist.axis_index: the rank's coordinate on the axis (its pipeline stage)
//   from the runtime (trx_group_position);
// - dist.send / dist.recv: blocking point-to-point messages of a contiguous
//   f32 or bf16 buffer to / from a member of the axis group, with the
//   schedule's tag (RuntimeABI.h: trx_send_f32 / trx_recv_f32 and their
//   _bf16 forms: a bf16 model's activations and their gradients cross the
//   stage boundary in bf16); recv fills a new buffer;
// - tensor.extract_slice of the stacked micro-batches: a copy of the slice
//   into a new buffer (the stage functions take identity-layout buffers).
// The scf.index_switch on the stage and the func.calls of the stage
// functions are converted structurally (TriaxToKernels.cpp).
//
//===----------------------------------------------------------------------===//

#include "KernelBuilder.h"

#include "triax/Conversion/RuntimeABI.h"
#include "triax/Dialect/Dist/IR/Dist.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
using namespace mlir::triax::kernels;

namespace {

struct AxisIndexLowering : OpConversionPattern<dist::AxisIndexOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(dist::AxisIndexOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    FailureOr<int64_t> mask = axisMask(op, op.getMeshAttr(), op.getAxesAttr());
    if (failed(mask))
      return failure();
    KernelBuilder k(rewriter, op.getLoc());
    rewriter.replaceOp(op, groupPosition(k, *mask));
    return success();
  }
};

/// Calls `f32`(buffer as memref<?xf32>, peer, tag, mask), or `bf16` with a
/// memref<?xbf16> for a bf16 buffer: the runtime's point-to-point entry
/// points share this signature.
static LogicalResult callPointToPoint(Operation *op, StringRef f32,
                                      StringRef bf16, Value buffer,
                                      int64_t peer, std::optional<int64_t> tag,
                                      FlatSymbolRefAttr mesh, ArrayAttr axes,
                                      ConversionPatternRewriter &rewriter) {
  auto type = cast<MemRefType>(buffer.getType());
  FailureOr<StringRef> name =
      collectiveEntry(op, type.getElementType(), f32, bf16);
  if (failed(name))
    return failure();
  FailureOr<int64_t> mask = axisMask(op, mesh, axes);
  if (failed(mask))
    return failure();
  KernelBuilder k(rewriter, op->getLoc());
  func::CallOp::create(rewriter, op->getLoc(), *name, TypeRange{},
                       ValueRange{k.dynamicFlat(buffer), k.i64(peer),
                                  k.i64(tag.value_or(0)), k.i64(*mask)});
  return success();
}

struct SendLowering : OpConversionPattern<dist::SendOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(dist::SendOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    if (failed(callPointToPoint(op, ::triax::rt::kSendF32,
                                ::triax::rt::kSendBf16, adaptor.getInput(),
                                op.getTo(), op.getTag(), op.getMeshAttr(),
                                op.getAxesAttr(), rewriter)))
      return failure();
    rewriter.eraseOp(op);
    return success();
  }
};

struct RecvLowering : OpConversionPattern<dist::RecvOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(dist::RecvOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    KernelBuilder k(rewriter, op.getLoc());
    Value buffer = k.alloc(op.getType());
    if (failed(callPointToPoint(op, ::triax::rt::kRecvF32,
                                ::triax::rt::kRecvBf16, buffer, op.getFrom(),
                                op.getTag(), op.getMeshAttr(), op.getAxesAttr(),
                                rewriter)))
      return failure();
    rewriter.replaceOp(op, buffer);
    return success();
  }
};

/// A static, unit-stride slice copied into a buffer of its own.
struct ExtractSliceLowering : OpConversionPattern<tensor::ExtractSliceOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(tensor::ExtractSliceOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    RankedTensorType type = op.getResultType();
    if (!op.hasUnitStride() || type.getRank() != op.getSourceType().getRank() ||
        !type.hasStaticShape() ||
        llvm::any_of(op.getStaticOffsets(), ShapedType::isDynamic))
      return op.emitOpError("only static, unit-stride, rank-preserving "
                            "slices are lowered");
    KernelBuilder k(rewriter, op.getLoc());
    Value out = k.alloc(type);
    ArrayRef<int64_t> offsets = op.getStaticOffsets();
    Value source = adaptor.getSource();
    k.parallel(type.getShape(), [&](KernelBuilder &k, ValueRange ivs) {
      SmallVector<Value> at;
      for (auto [iv, offset] : llvm::zip(ivs, offsets))
        at.push_back(offset ? k.addi(iv, k.index(offset)) : iv);
      k.store(k.load(source, at), out, ivs);
    });
    rewriter.replaceOp(op, out);
    return success();
  }
};

} // namespace

void mlir::triax::kernels::populatePipelinePatterns(
    TypeConverter &converter, RewritePatternSet &patterns) {
  patterns
      .add<AxisIndexLowering, SendLowering, RecvLowering, ExtractSliceLowering>(
          converter, patterns.getContext());
}
