//===- EmbeddingKernels.cpp - table lookups and their gradient ------------===//
//
// A vocab-parallel lookup (`vocab_parallel over @mesh [axes]`) holds rows
// [p*V, (p+1)*V) of the table, V its local row count and p the rank's
// position in the group (asked from the runtime): an index outside them
// reads zeros, and only the indices inside contribute to the gradient.
//
//===----------------------------------------------------------------------===//

#include "KernelBuilder.h"

#include "triax/Dialect/Triax/IR/Triax.h"

using namespace mlir;
using namespace mlir::triax;
using namespace mlir::triax::kernels;

namespace {

/// out[t, h] = table[ids[t], h], parallel over tokens and features.
struct EmbeddingLowering : OpConversionPattern<EmbeddingOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(EmbeddingOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    KernelBuilder k(rewriter, op.getLoc());
    int64_t vocab = op.getTable().getType().getDimSize(0);
    FailureOr<Value> offset =
        vocabOffset(k, op, op.getMeshAttr(), op.getAxesAttr(), vocab);
    if (failed(offset))
      return failure();
    Value out = k.alloc(op.getType());
    Value ids = k.flat(adaptor.getIndices()), rows = k.rows(out);
    Value table = adaptor.getTable();
    auto [tokens, hidden] = KernelBuilder::rowsCols(rows);
    k.parallel({tokens, hidden}, [&](KernelBuilder &k, ValueRange ivs) {
      Value id = k.toIndex(k.load(ids, ivs[0]));
      auto [row, inside] = localRow(k, id, *offset, vocab);
      Value value = k.load(table, {row, ivs[1]});
      if (inside)
        value = k.select(inside, value, k.f32(0.0));
      k.store(value, rows, ivs);
    });
    rewriter.replaceOp(op, out);
    return success();
  }
};

/// dtable[ids[t], h] += dy[t, h]: parallel over features, sequential over
/// tokens (two tokens may share a row), so the sum order is fixed.
struct EmbeddingGradLowering : OpConversionPattern<EmbeddingGradOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(EmbeddingGradOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    KernelBuilder k(rewriter, op.getLoc());
    int64_t vocab = op.getType().getDimSize(0);
    FailureOr<Value> offset =
        vocabOffset(k, op, op.getMeshAttr(), op.getAxesAttr(), vocab);
    if (failed(offset))
      return failure();
    Value table = k.allocFilled(op.getType(), 0.0);
    Value ids = k.flat(adaptor.getIndices());
    Value dy = k.rows(adaptor.getResultGrad());
    auto [tokens, hidden] = KernelBuilder::rowsCols(dy);
    k.parallel({hidden}, [&](KernelBuilder &k, ValueRange h) {
      k.loop({tokens}, [&](KernelBuilder &k, ValueRange t) {
        Value id = k.toIndex(k.load(ids, t[0]));
        auto [row, inside] = localRow(k, id, *offset, vocab);
        Value grad = k.load(dy, {t[0], h[0]});
        // Another rank's row: add nothing (to row 0, which is harmless).
        if (inside)
          grad = k.select(inside, grad, k.f32(0.0));
        Value sum = k.add(k.load(table, {row, h[0]}), grad);
        k.store(sum, table, {row, h[0]});
      });
    });
    rewriter.replaceOp(op, table);
    return success();
  }
};

} // namespace

void mlir::triax::kernels::populateEmbeddingPatterns(
    TypeConverter &converter, RewritePatternSet &patterns) {
  patterns.add<EmbeddingLowering, EmbeddingGradLowering>(converter,
                                                         patterns.getContext());
}
