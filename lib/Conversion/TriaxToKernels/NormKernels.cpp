//===- NormKernels.cpp - layer_norm, rms_norm and their gradients ---------===//
//
// All four ops normalize over the last dimension: the input is viewed as
// [rows, H] and each row is independent.
//
// - The forward ops are one `scf.parallel` over rows; each row computes its
//   statistics with sequential reductions and then writes its outputs (one
//   fused nest per op).
// - Where a norm is differentiated (its `stats` results, which
//   triax-autodiff asks for), the forward also writes each row's mean and
//   rstd (rstd for rms_norm), and its gradient reads them (`saved`) instead
//   of computing them again from the input.
// - The gradients compute dx the same way (parallel over rows), keeping the
//   per-row statistics in small scratch buffers (or reading the saved
//   ones), and then the parameter
//   gradients in a second nest of column sums over the rows
//   (KernelBuilder::columnSums: parallel over columns, on the CPU over
//   blocks of columns walking the rows, on CUDA over chunks of rows and
//   columns, then the chunks): a fixed summation order and no atomics.
//
// Statistics are accumulated in f32 and two-pass (the mean, then the biased
// variance of x - mean), the way the numpy reference computes them.
//
//===----------------------------------------------------------------------===//

#include "KernelBuilder.h"

#include "triax/Dialect/Triax/IR/Triax.h"

using namespace mlir;
using namespace mlir::triax;
using namespace mlir::triax::kernels;

namespace {

/// A scratch f32 buffer of the given shape.
// (A candidate for KernelBuilder: alloc of a shape and element type.)
Value allocScratch(KernelBuilder &k, ArrayRef<int64_t> shape) {
  return k.alloc(MemRefType::get(shape, k.builder().getF32Type()));
}

/// Buffers for a norm's `stats` results (none where it has none), and
/// their flat [rows] views.
struct RowStats {
  SmallVector<Value> buffers, rows;
};
RowStats allocStats(KernelBuilder &k, ValueRange stats) {
  RowStats out;
  for (Value stat : stats) {
    out.buffers.push_back(k.alloc(cast<ShapedType>(stat.getType())));
    out.rows.push_back(k.flat(out.buffers.back()));
  }
  return out;
}

/// Stores row r's statistics `values` (as many as there are buffers).
void storeStats(KernelBuilder &k, const RowStats &stats, ArrayRef<Value> values,
                Value r) {
  for (auto [rowsView, value] : llvm::zip(stats.rows, values))
    k.store(value, rowsView, r);
}

/// Sum over c in [0, cols) of fn(c), f32, in order.
// (A candidate for KernelBuilder: a one-accumulator reduce.)
Value rowSum(KernelBuilder &k, int64_t cols,
             function_ref<Value(KernelBuilder &, Value)> fn) {
  return k.reduce(cols, {k.f32(0.0)},
                  [&](KernelBuilder &k, Value c, ValueRange acc) {
                    return SmallVector<Value>{k.add(acc[0], fn(k, c))};
                  })[0];
}

/// 1 / sqrt(v + eps), as the reference computes it (not an approximate
/// rsqrt).
Value reciprocalSqrt(KernelBuilder &k, Value v, double eps) {
  Value root = k.sqrt(k.add(v, k.f32(eps)));
  Value one = k.f32(1.0);
  return k.div(one, root);
}

/// mean and rstd = 1 / sqrt(var + eps) of row `r` of x [rows, cols], with
/// the biased variance var = mean((x - mean)^2) (two passes).
std::pair<Value, Value> meanRstd(KernelBuilder &k, Value x, Value r,
                                 int64_t cols, double eps) {
  Value n = k.f32(static_cast<double>(cols));
  Value mean = k.div(rowSum(k, cols,
                            [&](KernelBuilder &k, Value c) {
                              return k.load(x, {r, c});
                            }),
                     n);
  Value var = k.div(rowSum(k, cols,
                           [&](KernelBuilder &k, Value c) {
                             Value xc = k.sub(k.load(x, {r, c}), mean);
                             return k.mul(xc, xc);
                           }),
                    n);
  return {mean, reciprocalSqrt(k, var, eps)};
}

/// 1 / sqrt(mean(x^2) + eps) of row `r` of x [rows, cols].
Value rmsRstd(KernelBuilder &k, Value x, Value r, int64_t cols, double eps) {
  Value sumSq = rowSum(k, cols, [&](KernelBuilder &k, Value c) {
    Value xi = k.load(x, {r, c});
    return k.mul(xi, xi);
  });
  Value ms = k.div(sumSq, k.f32(static_cast<double>(cols)));
  return reciprocalSqrt(k, ms, eps);
}

/// y = (x - mean) * rstd * w + b.
struct LayerNormLowering : OpConversionPattern<LayerNormOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(LayerNormOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    KernelBuilder k(rewriter, op.getLoc());
    double eps = op.getEps().convertToDouble();
    Value out = k.alloc(op.getResult().getType());
    Value x = k.rows(adaptor.getInput()), y = k.rows(out);
    Value w = adaptor.getWeight(), b = adaptor.getBias();
    auto [rows, cols] = KernelBuilder::rowsCols(x);
    RowStats stats = allocStats(k, op.getStats());
    SmallVector<Value> results = {out};
    llvm::append_range(results, stats.buffers);
    k.parallel({rows}, [&](KernelBuilder &k, ValueRange r) {
      auto [mean, rstd] = meanRstd(k, x, r[0], cols, eps);
      storeStats(k, stats, {mean, rstd}, r[0]);
      k.loop({cols}, [&](KernelBuilder &k, ValueRange c) {
        Value xhat = k.mul(k.sub(k.load(x, {r[0], c[0]}), mean), rstd);
        Value scaled = k.mul(xhat, k.load(w, c));
        k.store(k.add(scaled, k.load(b, c)), y, {r[0], c[0]});
      });
    });
    rewriter.replaceOp(op, results);
    return success();
  }
};

/// With xhat = (x - mean) rstd and g = dy w (the gradient reaching xhat),
/// per row of H features:
///   dx = rstd (g - mean(g) - xhat mean(g xhat))
/// (the derivative of xhat through mean and rstd: d mean / dx_i = 1/H,
/// d rstd / dx_i = -rstd^3 (x_i - mean) / H = -rstd^2 xhat_i / H, so
/// dx_i = rstd g_i - rstd mean(g) - rstd xhat_i mean(g xhat)), and, over
/// all rows, dw[h] = sum dy xhat and db[h] = sum dy.
struct LayerNormGradLowering : OpConversionPattern<LayerNormGradOp> {
  LayerNormGradLowering(TypeConverter &converter, MLIRContext *ctx,
                        ColumnSumForm form, const ParamIndex *params)
      : OpConversionPattern(converter, ctx), form(form), params(params) {}
  /// The form of the weight (and bias) gradients' column sums.
  ColumnSumForm form;
  /// Non-null: the parameters whose gradient buffers the sums may add into.
  const ParamIndex *params;
  LogicalResult
  matchAndRewrite(LayerNormGradOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    KernelBuilder k(rewriter, op.getLoc());
    double eps = op.getEps().convertToDouble();
    Value dxBuf = k.alloc(op.getInputGrad().getType());
    GradientBuffers sums(k, *getTypeConverter(), params,
                         {op.getWeightGrad(), op.getBiasGrad()});
    Value dw = sums.buffers[0], db = sums.buffers[1];
    Value x = k.rows(adaptor.getInput()), dy = k.rows(adaptor.getResultGrad());
    Value dx = k.rows(dxBuf), w = adaptor.getWeight();
    auto [rows, cols] = KernelBuilder::rowsCols(x);
    // The row statistics, the forward's or computed here (and kept for the
    // column sums below).
    bool saved = !adaptor.getSaved().empty();
    Value meanBuf =
        saved ? k.flat(adaptor.getSaved()[0]) : allocScratch(k, {rows});
    Value rstdBuf =
        saved ? k.flat(adaptor.getSaved()[1]) : allocScratch(k, {rows});
    Value n = k.f32(static_cast<double>(cols));

    k.parallel({rows}, [&](KernelBuilder &k, ValueRange rv) {
      Value r = rv[0];
      Value mean, rstd;
      if (saved) {
        mean = k.load(meanBuf, r);
        rstd = k.load(rstdBuf, r);
      } else {
        std::tie(mean, rstd) = meanRstd(k, x, r, cols, eps);
        k.store(mean, meanBuf, r);
        k.store(rstd, rstdBuf, r);
      }
      auto xhatAt = [&](KernelBuilder &k, Value c) {
        return k.mul(k.sub(k.load(x, {r, c}), mean), rstd);
      };
      auto gAt = [&](KernelBuilder &k, Value c) {
        Value d = k.load(dy, {r, c});
        return k.mul(d, k.load(w, c));
      };
      // sum(g) and sum(g xhat) in one pass.
      SmallVector<Value> sums = k.reduce(
          cols, {k.f32(0.0), k.f32(0.0)},
          [&](KernelBuilder &k, Value c, ValueRange acc) {
            Value g = gAt(k, c);
            return SmallVector<Value>{k.add(acc[0], g),
                                      k.add(acc[1], k.mul(g, xhatAt(k, c)))};
          });
      Value meanG = k.div(sums[0], n), meanGX = k.div(sums[1], n);
      k.loop({cols}, [&](KernelBuilder &k, ValueRange c) {
        Value centered = k.sub(gAt(k, c[0]), meanG);
        Value v = k.sub(centered, k.mul(xhatAt(k, c[0]), meanGX));
        k.store(k.mul(rstd, v), dx, {r, c[0]});
      });
    });

    k.columnSums(
        rows, cols, form, {dw, db},
        [&](KernelBuilder &k, Value r, Value c) {
          Value d = k.load(dy, {r, c});
          Value xr = k.load(x, {r, c});
          Value xc = k.sub(xr, k.load(meanBuf, r));
          Value xhat = k.mul(xc, k.load(rstdBuf, r));
          return SmallVector<Value>{k.mul(d, xhat), d};
        },
        sums.accumulate());
    sums.eraseAccumulations(rewriter);
    rewriter.replaceOp(op, {dxBuf, dw, db});
    return success();
  }
};

/// y = x rstd w, rstd = 1 / sqrt(mean(x^2) + eps).
struct RMSNormLowering : OpConversionPattern<RMSNormOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(RMSNormOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    KernelBuilder k(rewriter, op.getLoc());
    double eps = op.getEps().convertToDouble();
    Value out = k.alloc(op.getResult().getType());
    Value x = k.rows(adaptor.getInput()), y = k.rows(out);
    Value w = adaptor.getWeight();
    auto [rows, cols] = KernelBuilder::rowsCols(x);
    RowStats stats = allocStats(k, op.getStats());
    SmallVector<Value> results = {out};
    llvm::append_range(results, stats.buffers);
    k.parallel({rows}, [&](KernelBuilder &k, ValueRange r) {
      Value rstd = rmsRstd(k, x, r[0], cols, eps);
      storeStats(k, stats, {rstd}, r[0]);
      k.loop({cols}, [&](KernelBuilder &k, ValueRange c) {
        Value xhat = k.mul(k.load(x, {r[0], c[0]}), rstd);
        k.store(k.mul(xhat, k.load(w, c)), y, {r[0], c[0]});
      });
    });
    rewriter.replaceOp(op, results);
    return success();
  }
};

/// With rstd = (mean(x^2) + eps)^(-1/2), xhat = x rstd and g = dy w:
/// d rstd / dx_i = -rstd^3 x_i / H, so
///   dx_i = rstd g_i + sum_j g_j x_j (-rstd^3 x_i / H)
///        = rstd (g_i - xhat_i mean(g xhat)),
/// and dw[h] = sum over rows of dy xhat.
struct RMSNormGradLowering : OpConversionPattern<RMSNormGradOp> {
  RMSNormGradLowering(TypeConverter &converter, MLIRContext *ctx,
                      ColumnSumForm form, const ParamIndex *params)
      : OpConversionPattern(converter, ctx), form(form), params(params) {}
  /// The form of the weight gradient's column sums.
  ColumnSumForm form;
  /// Non-null: the parameters whose gradient buffers the sums may add into.
  const ParamIndex *params;
  LogicalResult
  matchAndRewrite(RMSNormGradOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    KernelBuilder k(rewriter, op.getLoc());
    double eps = op.getEps().convertToDouble();
    Value dxBuf = k.alloc(op.getInputGrad().getType());
    GradientBuffers sums(k, *getTypeConverter(), params, {op.getWeightGrad()});
    Value dw = sums.buffers[0];
    Value x = k.rows(adaptor.getInput()), dy = k.rows(adaptor.getResultGrad());
    Value dx = k.rows(dxBuf), w = adaptor.getWeight();
    auto [rows, cols] = KernelBuilder::rowsCols(x);
    // rstd, the forward's or computed here (and kept for the column sums).
    bool saved = !adaptor.getSaved().empty();
    Value rstdBuf =
        saved ? k.flat(adaptor.getSaved()[0]) : allocScratch(k, {rows});
    Value n = k.f32(static_cast<double>(cols));

    k.parallel({rows}, [&](KernelBuilder &k, ValueRange rv) {
      Value r = rv[0];
      Value rstd;
      if (saved) {
        rstd = k.load(rstdBuf, r);
      } else {
        rstd = rmsRstd(k, x, r, cols, eps);
        k.store(rstd, rstdBuf, r);
      }
      auto xhatAt = [&](KernelBuilder &k, Value c) {
        return k.mul(k.load(x, {r, c}), rstd);
      };
      auto gAt = [&](KernelBuilder &k, Value c) {
        Value d = k.load(dy, {r, c});
        return k.mul(d, k.load(w, c));
      };
      Value meanGX = k.div(rowSum(k, cols,
                                  [&](KernelBuilder &k, Value c) {
                                    Value g = gAt(k, c);
                                    return k.mul(g, xhatAt(k, c));
                                  }),
                           n);
      k.loop({cols}, [&](KernelBuilder &k, ValueRange c) {
        Value g = gAt(k, c[0]);
        Value v = k.sub(g, k.mul(xhatAt(k, c[0]), meanGX));
        k.store(k.mul(rstd, v), dx, {r, c[0]});
      });
    });

    k.columnSums(
        rows, cols, form, {dw},
        [&](KernelBuilder &k, Value r, Value c) {
          Value xr = k.load(x, {r, c});
          Value xhat = k.mul(xr, k.load(rstdBuf, r));
          Value d = k.load(dy, {r, c});
          return SmallVector<Value>{k.mul(d, xhat)};
        },
        sums.accumulate());
    sums.eraseAccumulations(rewriter);
    rewriter.replaceOp(op, {dxBuf, dw});
    return success();
  }
};

} // namespace

void mlir::triax::kernels::populateNormPatterns(TypeConverter &converter,
                                                RewritePatternSet &patterns,
                                                ColumnSumForm columnSums,
                                                const ParamIndex *params) {
  patterns.add<LayerNormLowering, RMSNormLowering>(converter,
                                                   patterns.getContext());
  // By rows (the CPU) every column sum starts at 0: the gradients keep their
  // buffers and the accumulation kernels.
  patterns.add<LayerNormGradLowering, RMSNormGradLowering>(
      converter, patterns.getContext(), columnSums,
      columnSums == ColumnSumForm::Rows ? nullptr : params);
}
