//===- CollectiveKernels.cpp - dist collectives to runtime calls ----------===//
//
// dist.all_reduce becomes a call of the runtime's in-place all_reduce
// (RuntimeABI.h: trx_all_reduce_f32) on a contiguous buffer. The group is
// passed as a bit mask of mesh axes, numbered in the order of the module's
// dist.mesh: the order the model descriptor gives trx_dist_init, so the
// compiled code and the runtime agree on which communicator is meant.
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

void mlir::triax::kernels::allReduceInPlace(KernelBuilder &k, Value buffer,
                                            int32_t kind, int64_t mask) {
  OpBuilder &b = k.builder();
  auto dynType = MemRefType::get({ShapedType::kDynamic}, b.getF32Type());
  Value view = memref::CastOp::create(b, k.getLoc(), dynType, k.flat(buffer));
  Value mode = k.i32(kind);
  Value axes =
      arith::ConstantOp::create(b, k.getLoc(), b.getI64IntegerAttr(mask));
  func::CallOp::create(b, k.getLoc(), ::triax::rt::kAllReduceF32, TypeRange{},
                       ValueRange{view, mode, axes});
}

Value mlir::triax::kernels::groupPosition(KernelBuilder &k, int64_t mask) {
  OpBuilder &b = k.builder();
  Value axes =
      arith::ConstantOp::create(b, k.getLoc(), b.getI64IntegerAttr(mask));
  Value pos = func::CallOp::create(b, k.getLoc(), ::triax::rt::kGroupPosition,
                                   TypeRange{b.getI64Type()}, ValueRange{axes})
                  .getResult(0);
  return k.toIndex(pos);
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
    if (!op.getType().getElementType().isF32())
      return op.emitOpError("only f32 all_reduce is lowered to the runtime "
                            "yet");
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
      k.parallel({n}, [&](KernelBuilder &k, ValueRange i) {
        k.store(k.load(src, i), dst, i);
      });
      buffer = copy;
    }
    auto dynType =
        MemRefType::get({ShapedType::kDynamic}, rewriter.getF32Type());
    Value view =
        memref::CastOp::create(rewriter, op.getLoc(), dynType, k.flat(buffer));
    Value mode = k.i32(static_cast<int32_t>(op.getReduction()));
    Value axes = arith::ConstantOp::create(rewriter, op.getLoc(),
                                           rewriter.getI64IntegerAttr(*mask));
    func::CallOp::create(rewriter, op.getLoc(), ::triax::rt::kAllReduceF32,
                         TypeRange{}, ValueRange{view, mode, axes});
    rewriter.replaceOp(op, buffer);
    return success();
  }
};

} // namespace

void mlir::triax::kernels::populateCollectivePatterns(
    TypeConverter &converter, RewritePatternSet &patterns) {
  patterns.add<AllReduceLowering, CopyToGroupLowering>(converter,
                                                       patterns.getContext());
}
