//===- OptimizerKernels.cpp - global norm and the fused AdamW update ------===//

#include "KernelBuilder.h"

#include "triax/Conversion/RuntimeABI.h"
#include "triax/Dialect/Triax/IR/Triax.h"

using namespace mlir;
using namespace mlir::triax;
using namespace mlir::triax::kernels;

namespace {

/// sqrt(sum of squares) over all gradients, accumulated in f64 in a fixed
/// order (the same norm, bit for bit, on every run).
struct GlobalNormLowering : OpConversionPattern<GlobalNormOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(GlobalNormOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    KernelBuilder k(rewriter, op.getLoc());
    std::optional<ArrayRef<int64_t>> replicas = op.getReplicas();
    Value total = k.f64(0.0);
    for (auto [index, grad] : llvm::enumerate(adaptor.getGrads())) {
      Value flat = k.flat(grad);
      int64_t n = cast<MemRefType>(flat.getType()).getNumElements();
      // A piece held by r members of the group counts 1/r on each.
      int64_t r = replicas ? (*replicas)[index] : 1;
      Value sum =
          k.reduce(n, {r > 1 ? k.f64(0.0) : total},
                   [&](KernelBuilder &k, Value i, ValueRange acc) {
                     Value g = k.toF64(k.load(flat, i));
                     return SmallVector<Value>{k.add(acc[0], k.mul(g, g))};
                   })[0];
      total = r > 1 ? k.add(total, k.div(sum, k.f64(double(r)))) : sum;
    }
    Value out = k.alloc(op.getType());
    if (op.getMesh()) {
      // The pieces' square sums, summed over the group, then the root.
      FailureOr<int64_t> mask =
          axisMask(op, op.getMeshAttr(), op.getAxesAttr());
      if (failed(mask))
        return failure();
      k.store(k.toF32(total), out, {});
      allReduceInPlace(k, out, /*sum=*/0, *mask);
      k.store(k.sqrt(k.load(out, {})), out, {});
    } else {
      k.store(k.toF32(k.sqrt(total)), out, {});
    }
    rewriter.replaceOp(op, out);
    return success();
  }
};

/// One fused pass over parameter, gradient and moments (see AdamWOp).
struct AdamWLowering : ParamPattern<AdamWOp> {
  using ParamPattern::ParamPattern;
  LogicalResult
  matchAndRewrite(AdamWOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    FailureOr<int64_t> index = paramIndex(op, op.getParam());
    if (failed(index))
      return failure();
    KernelBuilder k(rewriter, op.getLoc());
    auto type = cast<MemRefType>(adaptor.getGrad().getType());
    if (!type.getElementType().isF32())
      return op.emitOpError("only f32 parameters are updated on the CPU yet");
    // Under ZeRO the gradient is this rank's chunk, and so are the moments
    // and the part of the parameter it updates.
    bool chunked = params.zeroSharded.contains(op.getParam());
    auto view = [&](int kind) {
      return chunked ? k.stateChunk(kind, *index, type)
                     : k.flat(k.state(kind, *index, type));
    };
    Value p = view(::triax::rt::kParam);
    Value m = view(::triax::rt::kAdamM);
    Value v = view(::triax::rt::kAdamV);
    Value g = k.flat(adaptor.getGrad());
    double beta1 = op.getBeta1().convertToDouble();
    double beta2 = op.getBeta2().convertToDouble();
    Value step = arith::SIToFPOp::create(rewriter, op.getLoc(),
                                         rewriter.getF32Type(), op.getStep());
    Value bc1 = k.sub(k.f32(1.0), k.pow(k.f32(beta1), step));
    Value bc2 = k.sub(k.f32(1.0), k.pow(k.f32(beta2), step));
    Value lr = adaptor.getLr(), scale = adaptor.getGradScale();
    Value eps = k.f32(op.getEps().convertToDouble());
    Value wd = k.f32(op.getWeightDecay().convertToDouble());
    k.parallel({type.getNumElements()}, [&](KernelBuilder &k, ValueRange i) {
      Value gi = k.mul(k.load(g, i), scale);
      Value mi = k.add(k.mul(k.f32(beta1), k.load(m, i)),
                       k.mul(k.f32(1.0 - beta1), gi));
      Value vi = k.add(k.mul(k.f32(beta2), k.load(v, i)),
                       k.mul(k.f32(1.0 - beta2), k.mul(gi, gi)));
      Value mhat = k.div(mi, bc1), vhat = k.div(vi, bc2);
      Value pi = k.load(p, i);
      Value update =
          k.add(k.div(mhat, k.add(k.sqrt(vhat), eps)), k.mul(wd, pi));
      k.store(k.sub(pi, k.mul(lr, update)), p, i);
      k.store(mi, m, i);
      k.store(vi, v, i);
    });
    rewriter.eraseOp(op);
    return success();
  }
};

/// grad[p] += g: one parallel loop into the runtime's gradient buffer.
struct AccumulateGradLowering : ParamPattern<AccumulateGradOp> {
  using ParamPattern::ParamPattern;
  LogicalResult
  matchAndRewrite(AccumulateGradOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    FailureOr<int64_t> index = paramIndex(op, op.getParam());
    if (failed(index))
      return failure();
    KernelBuilder k(rewriter, op.getLoc());
    auto type = cast<MemRefType>(adaptor.getGrad().getType());
    Value buffer = k.flat(k.state(::triax::rt::kGrad, *index, type));
    Value g = k.flat(adaptor.getGrad());
    k.parallel({type.getNumElements()}, [&](KernelBuilder &k, ValueRange i) {
      k.store(k.add(k.load(buffer, i), k.load(g, i)), buffer, i);
    });
    rewriter.eraseOp(op);
    return success();
  }
};

/// The gradient buffer, read in place.
struct GetGradLowering : ParamPattern<GetGradOp> {
  using ParamPattern::ParamPattern;
  LogicalResult
  matchAndRewrite(GetGradOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    FailureOr<int64_t> index = paramIndex(op, op.getParam());
    if (failed(index))
      return failure();
    KernelBuilder k(rewriter, op.getLoc());
    auto type = cast<MemRefType>(getTypeConverter()->convertType(op.getType()));
    rewriter.replaceOp(op, k.state(::triax::rt::kGrad, *index, type));
    return success();
  }
};

} // namespace

void mlir::triax::kernels::populateOptimizerPatterns(
    TypeConverter &converter, RewritePatternSet &patterns,
    const ParamIndex &params) {
  patterns.add<GlobalNormLowering>(converter, patterns.getContext());
  patterns.add<AdamWLowering, AccumulateGradLowering, GetGradLowering>(
      converter, patterns.getContext(), params);
}
