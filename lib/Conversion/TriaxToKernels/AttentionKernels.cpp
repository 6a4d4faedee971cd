//===- AttentionKernels.cpp - causal attention and its gradient -----------===//
//
// q is [B, S, heads*d], k and v are [B, S, kv*d]; they are viewed as rows
// [B*S, features], and the operands of head j of batch b are the strided
// [S, d] blocks at (b*S, j*d) (query head j reads kv head j / (heads/kv)).
// Each (b, j) is two GEMMs (forward) or five (backward) through the runtime
// around a causal softmax that is parallel over the S rows of the scores.
//
// The (b, j) loop is sequential: the [S, S] scratch matrices are reused by
// every (b, j), and with grouped-query attention several query heads add
// into the same dK/dV head (beta = 1 GEMMs on zero-filled buffers) in a
// fixed order, so the gradients are the same bit for bit on every run.
//
//===----------------------------------------------------------------------===//

#include "KernelBuilder.h"

#include "triax/Dialect/Triax/IR/Triax.h"

#include <cmath>

using namespace mlir;
using namespace mlir::triax;
using namespace mlir::triax::kernels;

namespace {

/// A sequential loop over [lower, upper) with index bounds and no carried
/// values.
// (A candidate for KernelBuilder: loop() with Value bounds.)
void loopRange(KernelBuilder &k, Value lower, Value upper,
               function_ref<void(KernelBuilder &, Value)> body) {
  k.reduce(lower, upper, {}, [&](KernelBuilder &k, Value i, ValueRange) {
    body(k, i);
    return SmallVector<Value>{};
  });
}

/// The shapes of one attention op.
struct AttentionDims {
  int64_t batch, seq, heads, kvHeads, headDim;
  double scale;
};

/// The [S, d] block of head `head` of batch `b` in rows view [B*S, n*d].
Value headBlock(KernelBuilder &k, Value rows2d, Value b, Value head,
                const AttentionDims &dims) {
  Value row = k.muli(b, k.index(dims.seq));
  Value col = k.muli(head, k.index(dims.headDim));
  return k.block(rows2d, row, col, dims.seq, dims.headDim);
}

/// P = causal_softmax(scale * q_bj k_bj^T) into the [S, S] buffer `p`:
/// row i is softmax(s[i, 0..i]) with the row max subtracted, and exactly 0
/// for the masked columns i+1..S-1.
void attentionProbs(KernelBuilder &k, Value q, Value key, Value p,
                    const AttentionDims &dims) {
  int64_t seq = dims.seq;
  k.gemm(q, key, p, /*transA=*/false, /*transB=*/true, dims.scale, 0.0);
  k.parallel({seq}, [&](KernelBuilder &k, ValueRange iv) {
    Value i = iv[0];
    Value zero = k.index(0), one = k.index(1);
    Value end = k.addi(i, one); // columns [0, i] are visible
    Value first = k.load(p, {i, zero});
    Value max = k.reduce(
        one, end, {first}, [&](KernelBuilder &k, Value t, ValueRange acc) {
          return SmallVector<Value>{k.max(acc[0], k.load(p, {i, t}))};
        })[0];
    Value sum = k.reduce(zero, end, {k.f32(0.0)},
                         [&](KernelBuilder &k, Value t, ValueRange acc) {
                           Value e = k.exp(k.sub(k.load(p, {i, t}), max));
                           k.store(e, p, {i, t});
                           return SmallVector<Value>{k.add(acc[0], e)};
                         })[0];
    loopRange(k, zero, end, [&](KernelBuilder &k, Value t) {
      k.store(k.div(k.load(p, {i, t}), sum), p, {i, t});
    });
    loopRange(k, end, k.index(seq), [&](KernelBuilder &k, Value t) {
      k.store(k.f32(0.0), p, {i, t});
    });
  });
}

template <typename OpT> FailureOr<AttentionDims> getDims(OpT op) {
  RankedTensorType q = op.getQuery().getType();
  if (!q.getElementType().isF32()) {
    op.emitOpError("only f32 kernels are generated on the CPU yet");
    return failure();
  }
  AttentionDims dims;
  dims.batch = q.getDimSize(0);
  dims.seq = q.getDimSize(1);
  dims.heads = op.getHeads();
  dims.kvHeads = op.getKvHeads().value_or(dims.heads);
  dims.headDim = q.getDimSize(2) / dims.heads;
  dims.scale = 1.0 / std::sqrt(static_cast<double>(dims.headDim));
  return dims;
}

/// The kv head query head `j` reads: j / (heads / kv_heads).
Value kvHead(KernelBuilder &k, Value j, const AttentionDims &dims) {
  int64_t group = dims.heads / dims.kvHeads;
  if (group == 1)
    return j;
  return k.divui(j, k.index(group));
}

/// out_bj = causal_softmax(q_bj k_bj^T / sqrt(d)) v_bj.
struct AttentionLowering : OpConversionPattern<AttentionOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(AttentionOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    FailureOr<AttentionDims> maybeDims = getDims(op);
    if (failed(maybeDims))
      return failure();
    AttentionDims dims = *maybeDims;
    KernelBuilder k(rewriter, op.getLoc());
    Value outBuf = k.alloc(op.getType());
    Value q = k.rows(adaptor.getQuery()), key = k.rows(adaptor.getKey());
    Value v = k.rows(adaptor.getValue()), out = k.rows(outBuf);
    Value p =
        k.alloc(MemRefType::get({dims.seq, dims.seq}, rewriter.getF32Type()));
    k.loop({dims.batch, dims.heads}, [&](KernelBuilder &k, ValueRange bj) {
      // (Blocks are built one statement each: the IR order must not depend
      // on the order the compiler evaluates arguments in.)
      Value b = bj[0], j = bj[1], kv = kvHead(k, j, dims);
      Value qbj = headBlock(k, q, b, j, dims);
      Value kbj = headBlock(k, key, b, kv, dims);
      Value vbj = headBlock(k, v, b, kv, dims);
      Value obj = headBlock(k, out, b, j, dims);
      attentionProbs(k, qbj, kbj, p, dims);
      k.gemm(p, vbj, obj, /*transA=*/false, /*transB=*/false);
    });
    rewriter.replaceOp(op, outBuf);
    return success();
  }
};

/// With P recomputed as in the forward and s = scale q k^T (so o = P v):
///   dP = dO v^T,  dV += P^T dO,
///   dS = P * (dP - rowsum(dP * P))   (softmax backward; 0 where masked,
///                                     since P is 0 there),
///   dQ = scale dS k,  dK += scale dS^T q   (ds/dq = scale k, ds/dk = scale q).
/// dK and dV are summed over the query heads that share a kv head.
struct AttentionGradLowering : OpConversionPattern<AttentionGradOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(AttentionGradOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    FailureOr<AttentionDims> maybeDims = getDims(op);
    if (failed(maybeDims))
      return failure();
    AttentionDims dims = *maybeDims;
    int64_t seq = dims.seq;
    KernelBuilder k(rewriter, op.getLoc());
    Value dqBuf = k.alloc(op.getQueryGrad().getType());
    Value dkBuf = k.allocFilled(op.getKeyGrad().getType(), 0.0);
    Value dvBuf = k.allocFilled(op.getValueGrad().getType(), 0.0);
    Value q = k.rows(adaptor.getQuery()), key = k.rows(adaptor.getKey());
    Value v = k.rows(adaptor.getValue()),
          dout = k.rows(adaptor.getResultGrad());
    Value dq = k.rows(dqBuf), dk = k.rows(dkBuf), dv = k.rows(dvBuf);
    auto square = MemRefType::get({seq, seq}, rewriter.getF32Type());
    Value p = k.alloc(square), ds = k.alloc(square);
    k.loop({dims.batch, dims.heads}, [&](KernelBuilder &k, ValueRange bj) {
      Value b = bj[0], j = bj[1], kv = kvHead(k, j, dims);
      Value qbj = headBlock(k, q, b, j, dims);
      Value kbj = headBlock(k, key, b, kv, dims);
      Value vbj = headBlock(k, v, b, kv, dims);
      Value dobj = headBlock(k, dout, b, j, dims);
      Value dqbj = headBlock(k, dq, b, j, dims);
      Value dkbj = headBlock(k, dk, b, kv, dims);
      Value dvbj = headBlock(k, dv, b, kv, dims);
      attentionProbs(k, qbj, kbj, p, dims);
      // dP = dO v^T (into ds), dV += P^T dO.
      k.gemm(dobj, vbj, ds, /*transA=*/false, /*transB=*/true);
      k.gemm(p, dobj, dvbj, /*transA=*/true, /*transB=*/false, 1.0, 1.0);
      // dS = P * (dP - sum_t dP P), in place; columns past i are 0.
      k.parallel({seq}, [&](KernelBuilder &k, ValueRange iv) {
        Value i = iv[0];
        Value zero = k.index(0);
        Value end = k.addi(i, k.index(1));
        Value dot = k.reduce(zero, end, {k.f32(0.0)},
                             [&](KernelBuilder &k, Value t, ValueRange acc) {
                               Value dpt = k.load(ds, {i, t});
                               Value prod = k.mul(dpt, k.load(p, {i, t}));
                               return SmallVector<Value>{k.add(acc[0], prod)};
                             })[0];
        loopRange(k, zero, end, [&](KernelBuilder &k, Value t) {
          Value pt = k.load(p, {i, t});
          Value g = k.mul(pt, k.sub(k.load(ds, {i, t}), dot));
          k.store(g, ds, {i, t});
        });
        loopRange(k, end, k.index(seq), [&](KernelBuilder &k, Value t) {
          k.store(k.f32(0.0), ds, {i, t});
        });
      });
      // dQ = scale dS k, dK += scale dS^T q.
      k.gemm(ds, kbj, dqbj, /*transA=*/false, /*transB=*/false, dims.scale,
             0.0);
      k.gemm(ds, qbj, dkbj, /*transA=*/true, /*transB=*/false, dims.scale, 1.0);
    });
    rewriter.replaceOp(op, {dqBuf, dkBuf, dvBuf});
    return success();
  }
};

} // namespace

void mlir::triax::kernels::populateAttentionPatterns(
    TypeConverter &converter, RewritePatternSet &patterns) {
  patterns.add<AttentionLowering, AttentionGradLowering>(converter,
                                                         patterns.getContext());
}
