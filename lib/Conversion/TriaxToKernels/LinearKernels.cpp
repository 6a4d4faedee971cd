//===- LinearKernels.cpp - linear and its gradients -----------------------===//
//
// All matrix products go to the runtime's GEMM; a linear's bias is the
// GEMM's epilogue (trx_sgemm_bias / trx_gemm_bf16_bias), and the loops here
// only add a bias the epilogue cannot take (bf16 operands into an f32
// result, a strided bias: filled before the GEMM, which then accumulates
// with beta = 1) and reduce the bias gradient.
//
//===----------------------------------------------------------------------===//

#include "KernelBuilder.h"

#include "triax/Dialect/Triax/IR/Triax.h"

using namespace mlir;
using namespace mlir::triax;
using namespace mlir::triax::kernels;

namespace {

/// y[m, :] = x[m, :] W (+ b), with the tokens of all leading dims as rows.
struct LinearLowering : OpConversionPattern<LinearOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(LinearOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    KernelBuilder k(rewriter, op.getLoc());
    Value out = k.alloc(op.getType());
    Value x = k.rows(adaptor.getInput()), y = k.rows(out);
    auto [rows, cols] = KernelBuilder::rowsCols(y);
    double beta = 0.0;
    if (Value bias = adaptor.getBias()) {
      auto biasType = cast<MemRefType>(bias.getType());
      Type wElement =
          cast<MemRefType>(adaptor.getWeight().getType()).getElementType();
      if (biasType.getLayout().isIdentity() &&
          succeeded(KernelBuilder::gemmBiasEntry(
              cast<MemRefType>(x.getType()).getElementType(), wElement,
              cast<MemRefType>(y.getType()).getElementType(),
              biasType.getElementType()))) {
        if (failed(k.gemmBias(x, adaptor.getWeight(), y, bias,
                              /*transA=*/false,
                              /*transB=*/op.getTransposeWeight())))
          return failure();
        rewriter.replaceOp(op, out);
        return success();
      }
      k.parallel({rows, cols}, [&](KernelBuilder &k, ValueRange ivs) {
        k.store(k.load(bias, ivs[1]), y, ivs);
      });
      beta = 1.0;
    }
    if (failed(k.gemm(x, adaptor.getWeight(), y, /*transA=*/false,
                      /*transB=*/op.getTransposeWeight(), 1.0, beta)))
      return failure();
    rewriter.replaceOp(op, out);
    return success();
  }
};

/// y[m, n] = x[m, n] + b[n]: the bias of a row-split linear, added after
/// the partial products are summed.
struct BiasAddLowering : OpConversionPattern<BiasAddOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(BiasAddOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    KernelBuilder k(rewriter, op.getLoc());
    Value out = k.alloc(op.getType());
    Value x = k.rows(adaptor.getInput()), y = k.rows(out);
    Value bias = adaptor.getBias();
    auto [rows, cols] = KernelBuilder::rowsCols(y);
    k.parallel({rows, cols}, [&](KernelBuilder &k, ValueRange ivs) {
      Value xv = k.load(x, ivs);
      Value bv = k.load(bias, ivs[1]);
      k.store(k.add(xv, bv), y, ivs);
    });
    rewriter.replaceOp(op, out);
    return success();
  }
};

/// dW = x^T dy ([in, out]) or dy^T x ([out, in]), summed over tokens by the
/// GEMM itself.
struct LinearWeightGradLowering : OpConversionPattern<LinearWeightGradOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(LinearWeightGradOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    KernelBuilder k(rewriter, op.getLoc());
    Value dw = k.alloc(op.getType());
    Value x = k.rows(adaptor.getInput()), dy = k.rows(adaptor.getResultGrad());
    bool transposed = op.getTransposeWeight();
    if (failed(k.gemm(transposed ? dy : x, transposed ? x : dy, dw,
                      /*transA=*/true, /*transB=*/false)))
      return failure();
    rewriter.replaceOp(op, dw);
    return success();
  }
};

/// db[n] = sum over rows of dy[m, n]: one column per iteration.
struct BiasGradLowering : OpConversionPattern<BiasGradOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(BiasGradOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    KernelBuilder k(rewriter, op.getLoc());
    Value db = k.alloc(op.getType());
    Value dy = k.rows(adaptor.getResultGrad());
    auto [rows, cols] = KernelBuilder::rowsCols(dy);
    k.parallel({cols}, [&](KernelBuilder &k, ValueRange n) {
      Value sum = k.reduce(
          rows, {k.f32(0.0)}, [&](KernelBuilder &k, Value m, ValueRange acc) {
            return SmallVector<Value>{k.add(acc[0], k.load(dy, {m, n[0]}))};
          })[0];
      k.store(sum, db, n);
    });
    rewriter.replaceOp(op, db);
    return success();
  }
};

} // namespace

void mlir::triax::kernels::populateLinearPatterns(TypeConverter &converter,
                                                  RewritePatternSet &patterns) {
  patterns.add<LinearLowering, BiasAddLowering, LinearWeightGradLowering,
               BiasGradLowering>(converter, patterns.getContext());
}
