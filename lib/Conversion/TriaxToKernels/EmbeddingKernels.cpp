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

#include <algorithm>

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

/// dtable[ids[t], h] += dy[t, h]. Two tokens may share a row, so the tokens
/// of one (row, feature) element are added by one iteration, in token
/// order: the sum is the same bit for bit on every run and every target.
///
/// With `gradThreads` = 0 (the CPU): parallel over features, a sequential
/// loop over tokens. With gradThreads = N > 0 (the GPU, which needs more
/// parallel work than `hidden` threads): the vocabulary is also cut into
/// S = ceil(N / hidden) slices of W rows, parallel over (slice, feature),
/// and each iteration scans every token and adds only those whose row is in
/// its slice. A store's row then lies in [s * W, s * W + W), which the GPU
/// mapping's disjointness analysis proves from the guard: no atomics, no
/// sort, the same sums. The price is S reads of the token ids (cheap: they
/// are broadcast to a warp and stay in cache).
struct EmbeddingGradLowering : OpConversionPattern<EmbeddingGradOp> {
  EmbeddingGradLowering(TypeConverter &converter, MLIRContext *ctx,
                        int64_t gradThreads, const ParamIndex *params)
      : OpConversionPattern(converter, ctx), gradThreads(gradThreads),
        params(params) {}

  LogicalResult
  matchAndRewrite(EmbeddingGradOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    KernelBuilder k(rewriter, op.getLoc());
    int64_t vocab = op.getType().getDimSize(0);
    FailureOr<Value> offset =
        vocabOffset(k, op, op.getMeshAttr(), op.getAxesAttr(), vocab);
    if (failed(offset))
      return failure();
    // accumulate-in-gemm: a gradient that only its accumulate_grad reads
    // scatters into the parameter's gradient buffer (no zeroed table, no
    // accumulation pass); each element's additions in the same order.
    AccumulateGradOp into = accumulatedInto(op, params);
    Value table =
        into ? accumulationBuffer(k, *getTypeConverter(), op, into, *params)
             : k.allocFilled(op.getType(), 0.0);
    if (into)
      rewriter.eraseOp(into);
    Value ids = k.flat(adaptor.getIndices());
    Value dy = k.rows(adaptor.getResultGrad());
    auto [tokens, hidden] = KernelBuilder::rowsCols(dy);
    int64_t slices =
        gradThreads > 0
            ? std::clamp<int64_t>((gradThreads + hidden - 1) / hidden, 1, vocab)
            : 1;
    if (slices == 1) {
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
    int64_t width = (vocab + slices - 1) / slices;
    slices = (vocab + width - 1) / width; // no empty slice
    Location loc = op.getLoc();
    k.parallel({slices, hidden}, [&](KernelBuilder &k, ValueRange sh) {
      Value first =
          arith::MulIOp::create(k.builder(), loc, sh[0], k.index(width));
      k.loop({tokens}, [&](KernelBuilder &k, ValueRange t) {
        OpBuilder &b = k.builder();
        Value id = k.toIndex(k.load(ids, t[0]));
        auto [row, inside] = localRow(k, id, *offset, vocab);
        // row - first < W (unsigned): the row is in this slice.
        Value mine =
            k.cmpi(arith::CmpIPredicate::ult,
                   arith::SubIOp::create(b, loc, row, first), k.index(width));
        // Another rank's row: add nothing.
        if (inside)
          mine = arith::AndIOp::create(b, loc, mine, inside);
        auto add = scf::IfOp::create(b, loc, mine, /*withElseRegion=*/false);
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPointToStart(add.thenBlock());
        Value grad = k.load(dy, {t[0], sh[1]});
        Value sum = k.add(k.load(table, {row, sh[1]}), grad);
        k.store(sum, table, {row, sh[1]});
      });
    });
    rewriter.replaceOp(op, table);
    return success();
  }

  int64_t gradThreads;
  const ParamIndex *params;
};

} // namespace

void mlir::triax::kernels::populateEmbeddingPatterns(
    TypeConverter &converter, RewritePatternSet &patterns,
    int64_t embeddingGradThreads, const ParamIndex *params) {
  patterns.add<EmbeddingLowering>(converter, patterns.getContext());
  patterns.add<EmbeddingGradLowering>(converter, patterns.getContext(),
                                      embeddingGradThreads, params);
}
