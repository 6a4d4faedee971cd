//===- LinearKernels.cpp - linear and its gradients -----------------------===//
//
// All matrix products go to the runtime's GEMM; a linear's bias is the
// GEMM's epilogue (trx_sgemm_bias / trx_gemm_bf16_bias), and the loops here
// only add a bias the epilogue cannot take (bf16 operands into an f32
// result, a strided bias: filled before the GEMM, which then accumulates
// with beta = 1) and reduce the bias gradient.
//
// GELU epilogues (gelu-epilogue, on by default): a biased linear whose
// result feeds a triax.gelu computes both in one GEMM (the pre-activation
// is still written, as the backward's saved input), and a linear whose only
// user is the triax.gelu_grad of its result folds that gradient into its
// GEMM. On the GPU each saves a pass over the [tokens, 4 * hidden]
// activation (forward: the GELU kernel's read; backward: the upstream
// gradient's write and read); on the CPU the runtime applies the same
// formula after the GEMM, bit for bit the unfused kernels' result.
//
//===----------------------------------------------------------------------===//

#include "KernelBuilder.h"

#include "triax/Conversion/RuntimeABI.h"

#include "triax/Dialect/Triax/IR/GradAccumulation.h"
#include "triax/Dialect/Triax/IR/Triax.h"

using namespace mlir;
using namespace mlir::triax;
using namespace mlir::triax::kernels;

namespace {

/// The triax.gelu that reads `linear`'s result, if any (in its block).
GeluOp geluOf(LinearOp linear) {
  for (Operation *user : linear->getUsers())
    if (auto gelu = dyn_cast<GeluOp>(user))
      if (gelu->getBlock() == linear->getBlock() &&
          gelu.getType() == linear.getType())
        return gelu;
  return {};
}

/// y[m, :] = x[m, :] W (+ b), with the tokens of all leading dims as rows.
struct LinearLowering : OpConversionPattern<LinearOp> {
  LinearLowering(TypeConverter &converter, MLIRContext *ctx, bool geluEpilogue)
      : OpConversionPattern(converter, ctx), geluEpilogue(geluEpilogue) {}
  bool geluEpilogue;

  /// The element type shared by x, W, y (and the bias), when the GEMM
  /// epilogues take it.
  static Type epilogueElement(LinearOp op, OpAdaptor adaptor) {
    Type t = cast<MemRefType>(adaptor.getInput().getType()).getElementType();
    SmallVector<Value> others = {adaptor.getWeight()};
    if (Value bias = adaptor.getBias()) {
      if (!cast<MemRefType>(bias.getType()).getLayout().isIdentity())
        return {};
      others.push_back(bias);
    }
    for (Value v : others)
      if (cast<MemRefType>(v.getType()).getElementType() != t)
        return {};
    if (op.getType().getElementType() != t ||
        failed(
            KernelBuilder::gemmEpilogueEntry(KernelBuilder::Epilogue::Bias, t)))
      return {};
    return t;
  }

  LogicalResult
  matchAndRewrite(LinearOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    KernelBuilder k(rewriter, op.getLoc());
    using Epilogue = KernelBuilder::Epilogue;
    Type element = epilogueElement(op, adaptor);
    // y = x W + b and g = gelu(y) in one GEMM: y is the epilogue's aux.
    GeluOp gelu =
        geluEpilogue && element && adaptor.getBias() ? geluOf(op) : GeluOp();
    if (gelu) {
      Value y = k.alloc(op.getType()), g = k.alloc(gelu.getType());
      if (failed(k.gemmEpilogue(Epilogue::BiasGelu, k.rows(adaptor.getInput()),
                                adaptor.getWeight(), k.rows(g),
                                adaptor.getBias(), k.rows(y),
                                /*transA=*/false,
                                /*transB=*/op.getTransposeWeight())))
        return failure();
      rewriter.replaceOp(gelu, g);
      rewriter.replaceOp(op, y);
      return success();
    }
    // dx = gelu_grad(h, x W) in one GEMM (a linear without bias): h is the
    // epilogue's aux (under full recomputation the block recomputes h after
    // the upstream gradient's GEMM, and the two stay apart:
    // geluGradEpilogueOf, which the cost model asks too).
    GeluGradOp geluGrad =
        geluEpilogue && element ? geluGradEpilogueOf(op) : GeluGradOp();
    if (geluGrad) {
      Value h = rewriter.getRemappedValue(geluGrad.getInput());
      if (h && cast<MemRefType>(h.getType()).getElementType() == element) {
        Value dx = k.alloc(geluGrad.getType());
        if (failed(k.gemmEpilogue(Epilogue::DGelu, k.rows(adaptor.getInput()),
                                  adaptor.getWeight(), k.rows(dx),
                                  /*bias=*/Value(), k.rows(h),
                                  /*transA=*/false,
                                  /*transB=*/op.getTransposeWeight())))
          return failure();
        rewriter.replaceOp(geluGrad, dx);
        rewriter.eraseOp(op);
        return success();
      }
    }
    Value out = k.alloc(op.getType());
    Value x = k.rows(adaptor.getInput()), y = k.rows(out);
    auto [rows, cols] = KernelBuilder::rowsCols(y);
    double beta = 0.0;
    if (Value bias = adaptor.getBias()) {
      // The bias epilogue takes it (one element type, a contiguous bias).
      if (element) {
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
///
/// accumulateInGemm (the CUDA pipeline): when dW's only user adds it to the
/// parameter's gradient buffer (triax.accumulate_grad), the GEMM adds into
/// that buffer itself (beta = 1): no dW buffer, no accumulation kernel, dW
/// neither written nor read back. cuBLASLt adds C once after the product
/// (alpha AB + beta C), the sum the separate kernel made (a bf16 C, a bf16
/// model's, is rounded once instead of twice). OpenBLAS (the
/// CPU pipeline sets the option too) adds C into its partial sums block by
/// block: for a step's first micro-batch (C = 0) the same bits, for the
/// later ones a different rounding of the same sum.
struct LinearWeightGradLowering : OpConversionPattern<LinearWeightGradOp> {
  LinearWeightGradLowering(TypeConverter &converter, MLIRContext *ctx,
                           const ParamIndex *params, bool accumulateInGemm)
      : OpConversionPattern(converter, ctx), params(params),
        accumulateInGemm(accumulateInGemm) {}

  LogicalResult
  matchAndRewrite(LinearWeightGradOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    KernelBuilder k(rewriter, op.getLoc());
    Value x = k.rows(rowView(adaptor.getInput())),
          dy = k.rows(rowView(adaptor.getResultGrad()));
    bool transposed = op.getTransposeWeight();
    GradientBuffers made(k, *getTypeConverter(),
                         accumulateInGemm ? params : nullptr, {op});
    Value dw = made.buffers[0];
    if (failed(k.gemm(transposed ? dy : x, transposed ? x : dy, dw,
                      /*transA=*/true, /*transB=*/false, /*alpha=*/1.0,
                      /*beta=*/made.accumulate() ? 1.0 : 0.0)))
      return failure();
    made.eraseAccumulations(rewriter);
    rewriter.replaceOp(op, dw);
    return success();
  }

  const ParamIndex *params;
  bool accumulateInGemm;
};

/// db[n] = sum over rows of dy[m, n] (KernelBuilder::columnSums). With
/// accumulateInGemm (the CUDA pipeline), when db's only user is its
/// accumulate_grad, the column's sum is added into the gradient buffer by
/// this kernel: g[n] + sum is the same single f32 addition the
/// accumulation kernel made (bit-identical: checked on CPU ranks), with one
/// kernel, one buffer and two passes fewer; a bf16 buffer (a bf16 model's)
/// gets the f32 sum rounded once, where the separate kernel rounded db and
/// then g + db. The CPU (column-sums=rows)
/// keeps the separate kernel: walking down each column is slower there
/// than its vectorized sums by rows, and the cost model's activation
/// liveness [A9] counts a bias gradient as a buffer.
///
/// A bias gradient is KernelBuilder::columnSums of dy in the form `form`
/// (by rows on the CPU, in chunks on CUDA), into a new buffer or added to
/// what its gradient buffer holds.
struct BiasGradLowering : OpConversionPattern<BiasGradOp> {
  BiasGradLowering(TypeConverter &converter, MLIRContext *ctx,
                   const ParamIndex *params, ColumnSumForm form)
      : OpConversionPattern(converter, ctx), params(params), form(form) {}

  LogicalResult
  matchAndRewrite(BiasGradOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    KernelBuilder k(rewriter, op.getLoc());
    GradientBuffers made(k, *getTypeConverter(), params, {op});
    Value db = made.buffers[0];
    Value dy = k.rows(rowView(adaptor.getResultGrad()));
    auto [rows, cols] = KernelBuilder::rowsCols(dy);
    k.columnSums(
        rows, cols, form, {db},
        [&](KernelBuilder &k, Value m, Value n) {
          return SmallVector<Value>{k.load(dy, {m, n})};
        },
        made.accumulate());
    made.eraseAccumulations(rewriter);
    rewriter.replaceOp(op, db);
    return success();
  }
  const ParamIndex *params;
  ColumnSumForm form;
};

} // namespace

void mlir::triax::kernels::populateLinearPatterns(
    TypeConverter &converter, RewritePatternSet &patterns, bool geluEpilogue,
    const ParamIndex *params, bool accumulateInGemm, ColumnSumForm columnSums) {
  patterns.add<LinearLowering>(converter, patterns.getContext(), geluEpilogue);
  patterns.add<BiasAddLowering>(converter, patterns.getContext());
  // By rows (the CPU), a bias gradient keeps its own buffer and the
  // accumulation loop (columnSums by rows starts every sum at 0).
  patterns.add<BiasGradLowering>(
      converter, patterns.getContext(),
      accumulateInGemm && columnSums != ColumnSumForm::Rows ? params : nullptr,
      columnSums);
  patterns.add<LinearWeightGradLowering>(converter, patterns.getContext(),
                                         params, accumulateInGemm);
}
