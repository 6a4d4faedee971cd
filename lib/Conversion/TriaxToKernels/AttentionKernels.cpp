//===- AttentionKernels.cpp - causal attention and its gradient -----------===//
//
// q is [B, S, heads*d], k and v are [B, S, kv*d]; they are viewed as rows
// [B*S, features], and the operands of head j of batch b are the strided
// [S, d] blocks at (b*S, j*d) (query head j reads kv head j / (heads/kv)).
//
// How attention is computed is one choice, AttentionImpl, made in
// lowerAttention / lowerAttentionGrad; everything below those two is the
// implementation of today's only choice:
//
// AttentionImpl::BatchedGemm. For each batch index b (a sequential host loop
// over B), the heads of b are 3-D strided views [n, S, d] of the rows
// (matrix m at column (first + m*step)*d, so strides [step*d, cols, 1]) and
// every product is ONE strided-batched GEMM over them through the runtime:
//   forward   scores = scale q k^T -> P [heads, S, S] (f32 scratch),
//             P = causal_softmax(scores)   (one kernel over heads*S rows),
//             out = P v;
//   backward  P recomputed as above, dP = dO v^T, dV = P^T dO,
//             dS = P * (dP - rowsum(dP P))  (one kernel over heads*S rows),
//             dQ = scale dS k, dK = scale dS^T q.
// The softmax and its backward are one scf.parallel over the heads*S rows
// of P, each iteration a row (scalar ops and scf.for loops over the row),
// the shape triax-map-loops-to-gpu{rows=block} runs as one block per row.
//
// Grouped-query attention (group = heads / kv > 1): query head
// j = kv*group + g reads kv head kv. For one g, the query heads g,
// g + group, ... are a view with head stride group*d, and their kv heads
// are all kv heads (head stride d), so each product is `group` batched
// GEMMs, one per g. dK and dV of a kv head are the sum over its group's
// query heads: g = 0 writes them (beta = 0), g = 1, 2, ... add to them
// (beta = 1) in that order, so the gradients are the same bit for bit on
// every run (no atomics, no order left to the GEMM library).
//
// The scratch P and dS are [heads, S, S] f32 per batch index, reused by
// every b (the host loop over b is sequential). With bf16 operands the
// scores, the softmax and its backward stay f32 (q k^T and dO v^T are
// bf16 x bf16 -> f32 GEMMs) and the row kernels also write bf16 copies of
// P and dS, the operands of the GEMMs that take them (the runtime has no
// f32 x bf16 GEMM).
//
//===----------------------------------------------------------------------===//

#include "KernelBuilder.h"

#include "triax/Dialect/Triax/IR/Triax.h"

#include <cmath>

using namespace mlir;
using namespace mlir::triax;
using namespace mlir::triax::kernels;

namespace {

/// How an attention op is lowered. The seam for flash attention: a fused
/// kernel that never materializes P (a runtime entry
/// `trx_flash_attention_{fwd,bwd}` on the CUDA target, or a generated tiled
/// kernel) becomes a second value here and a second case in lowerAttention
/// and lowerAttentionGrad, taking the same AttentionBuffers; the choice
/// would then be a pass option of convert-triax-to-kernels. Nothing outside
/// this file depends on the implementation.
enum class AttentionImpl {
  /// Strided-batched GEMMs through the runtime around fused causal-softmax
  /// kernels over all heads' rows (the scores are materialized, [heads, S,
  /// S] f32 per batch index).
  BatchedGemm,
};

/// The implementation used for every attention op (see AttentionImpl).
constexpr AttentionImpl kAttentionImpl = AttentionImpl::BatchedGemm;

/// The shapes of one attention op.
struct AttentionDims {
  int64_t batch, seq, heads, kvHeads, headDim;
  double scale;
  int64_t group() const { return heads / kvHeads; }
};

/// The operands and results of one attention op as rows views
/// [B*S, features] of contiguous buffers. Forward: out; backward: dout is
/// the result's gradient, dq, dk, dv the results.
struct AttentionBuffers {
  Value q, key, v;
  Value out;        // forward
  Value dout;       // backward
  Value dq, dk, dv; // backward
};

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

/// A 3-D strided view [sizes] with `strides` at element `offset` of the
/// row-major buffer `base` (the element strides of `base` are its
/// contiguous ones; its own offset, if any, is added): the operand form of
/// the runtime's batched GEMMs, [batch, rows, cols].
Value view3d(KernelBuilder &k, Value base, Value offset,
             ArrayRef<int64_t> sizes, ArrayRef<int64_t> strides) {
  auto baseType = cast<MemRefType>(base.getType());
  OpBuilder &b = k.builder();
  Location loc = k.getLoc();
  if (!baseType.getLayout().isIdentity()) {
    // A view into a larger buffer (rows() of a subview): start from the
    // base buffer at the view's own offset.
    auto meta = memref::ExtractStridedMetadataOp::create(b, loc, base);
    base = meta.getBaseBuffer();
    offset = k.addi(meta.getOffset(), offset);
  }
  auto layout =
      StridedLayoutAttr::get(b.getContext(), ShapedType::kDynamic, strides);
  auto type = MemRefType::get(sizes, baseType.getElementType(), layout);
  SmallVector<OpFoldResult> sizeAttrs, strideAttrs;
  for (int64_t s : sizes)
    sizeAttrs.push_back(b.getIndexAttr(s));
  for (int64_t s : strides)
    strideAttrs.push_back(b.getIndexAttr(s));
  return memref::ReinterpretCastOp::create(b, loc, type, base, offset,
                                           sizeAttrs, strideAttrs);
}

/// Heads first, first + step, ..., first + (n-1)*step of batch index `b` in
/// the rows view [B*S, heads*d] (row stride cols): [n, S, d] with strides
/// [step*d, cols, 1], matrix m the [S, d] block at (b*S, (first+m*step)*d).
Value headsView(KernelBuilder &k, Value rows2d, Value b, int64_t first,
                int64_t step, int64_t n, const AttentionDims &dims) {
  // The row stride (the number of columns of a contiguous buffer).
  SmallVector<int64_t> rowStrides =
      cast<MemRefType>(rows2d.getType()).getStridesAndOffset().first;
  int64_t cols = rowStrides[0];
  assert(!ShapedType::isDynamic(cols) && rowStrides[1] == 1 &&
         "attention operands are static row-major buffers");
  int64_t d = dims.headDim;
  // (One op per statement: the IR order must not depend on the order the
  // compiler evaluates arguments in.)
  Value offset = k.muli(b, k.index(dims.seq * cols));
  if (first != 0)
    offset = k.addi(offset, k.index(first * d));
  return view3d(k, rows2d, offset, {n, dims.seq, d}, {step * d, cols, 1});
}

/// Heads first, first + step, ... of a [heads, S, S] scratch: [n, S, S].
Value scoresView(KernelBuilder &k, Value scratch, int64_t first, int64_t step,
                 int64_t n, const AttentionDims &dims) {
  int64_t seq = dims.seq;
  if (first == 0 && step == 1 && n == dims.heads)
    return scratch;
  return view3d(k, scratch, k.index(first * seq * seq), {n, seq, seq},
                {step * seq * seq, seq, 1});
}

/// The operand views of the batched GEMMs of query-head group position g of
/// batch index b: the query heads g, g + group, ... (all heads when
/// group == 1) and the kv heads they read (all of them, in order, since
/// query head kv*group + g reads kv head kv).
struct GroupViews {
  Value b;
  const AttentionDims &dims;
  int64_t g;
  /// The query heads of this g in a query-shaped rows view (q, out, dO, dQ).
  Value query(KernelBuilder &k, Value rows2d) const {
    return headsView(k, rows2d, b, g, dims.group(), dims.kvHeads, dims);
  }
  /// All kv heads in a kv-shaped rows view (k, v, dK, dV).
  Value kv(KernelBuilder &k, Value rows2d) const {
    return headsView(k, rows2d, b, 0, 1, dims.kvHeads, dims);
  }
  /// The query heads of this g in a [heads, S, S] scratch.
  Value scores(KernelBuilder &k, Value scratch) const {
    return scoresView(k, scratch, g, dims.group(), dims.kvHeads, dims);
  }
};

/// Emits `body` for g = 0, 1, ..., group-1, in that order.
LogicalResult
forEachGroup(const AttentionDims &dims, Value b,
             function_ref<LogicalResult(const GroupViews &)> body) {
  for (int64_t g = 0; g < dims.group(); ++g)
    if (failed(body(GroupViews{b, dims, g})))
      return failure();
  return success();
}

/// The row r of a [heads, S, S] scratch flattened over (head, row): its
/// head and row indices.
std::pair<Value, Value> headAndRow(KernelBuilder &k, Value r,
                                   const AttentionDims &dims) {
  Value seq = k.index(dims.seq);
  Value h = k.divui(r, seq);
  Value i = arith::RemUIOp::create(k.builder(), k.getLoc(), r, seq);
  return {h, i};
}

/// The [heads, S, S] f32 scores `p` (overwritten): row i of head h of each
/// buffer of `probs` ([heads, S, S], f32 or bf16; `p` itself may be one)
/// becomes softmax(p[h, i, 0..i]) with the row max subtracted (in f32), and
/// exactly 0 for the masked columns i+1..S-1. One parallel loop over the
/// heads*S rows.
void causalSoftmax(KernelBuilder &k, Value p, ArrayRef<Value> probs,
                   const AttentionDims &dims) {
  int64_t seq = dims.seq;
  k.parallel({dims.heads * seq}, [&](KernelBuilder &k, ValueRange iv) {
    auto [h, i] = headAndRow(k, iv[0], dims);
    Value zero = k.index(0), one = k.index(1);
    Value end = k.addi(i, one); // columns [0, i] are visible
    Value first = k.load(p, {h, i, zero});
    Value max = k.reduce(
        one, end, {first}, [&](KernelBuilder &k, Value t, ValueRange acc) {
          return SmallVector<Value>{k.max(acc[0], k.load(p, {h, i, t}))};
        })[0];
    Value sum = k.reduce(zero, end, {k.f32(0.0)},
                         [&](KernelBuilder &k, Value t, ValueRange acc) {
                           Value e = k.exp(k.sub(k.load(p, {h, i, t}), max));
                           k.store(e, p, {h, i, t});
                           return SmallVector<Value>{k.add(acc[0], e)};
                         })[0];
    loopRange(k, zero, end, [&](KernelBuilder &k, Value t) {
      Value prob = k.div(k.load(p, {h, i, t}), sum);
      for (Value out : probs)
        k.store(prob, out, {h, i, t});
    });
    loopRange(k, end, k.index(seq), [&](KernelBuilder &k, Value t) {
      Value masked = k.f32(0.0);
      for (Value out : probs)
        k.store(masked, out, {h, i, t});
    });
  });
}

/// Given P and dP (`ds`, both [heads, S, S] f32): dS = P * (dP - rowsum(dP
/// * P)), 0 past the diagonal (where P is 0), into `dsOut` ([heads, S, S],
/// f32 or bf16; `ds` itself for in place). One parallel loop over the
/// heads*S rows.
void causalSoftmaxGrad(KernelBuilder &k, Value p, Value ds, Value dsOut,
                       const AttentionDims &dims) {
  int64_t seq = dims.seq;
  k.parallel({dims.heads * seq}, [&](KernelBuilder &k, ValueRange iv) {
    auto [h, i] = headAndRow(k, iv[0], dims);
    Value zero = k.index(0);
    Value end = k.addi(i, k.index(1));
    Value dot = k.reduce(zero, end, {k.f32(0.0)},
                         [&](KernelBuilder &k, Value t, ValueRange acc) {
                           Value dpt = k.load(ds, {h, i, t});
                           Value prod = k.mul(dpt, k.load(p, {h, i, t}));
                           return SmallVector<Value>{k.add(acc[0], prod)};
                         })[0];
    loopRange(k, zero, end, [&](KernelBuilder &k, Value t) {
      Value pt = k.load(p, {h, i, t});
      Value g = k.mul(pt, k.sub(k.load(ds, {h, i, t}), dot));
      k.store(g, dsOut, {h, i, t});
    });
    loopRange(k, end, k.index(seq), [&](KernelBuilder &k, Value t) {
      k.store(k.f32(0.0), dsOut, {h, i, t});
    });
  });
}

/// A [heads, S, S] scratch of one attention op: f32 (the scores and
/// probabilities, dP and dS; the row max, sums and rowsum(dP P) are f32
/// registers) and, when the operands' element type `low` is bf16, a bf16
/// copy for the GEMMs that take P or dS as an operand (the runtime has
/// bf16 x bf16 -> f32 and bf16 x bf16 -> bf16 GEMMs, no f32 x bf16 one).
/// For f32 operands both are the same buffer.
std::pair<Value, Value> allocScores(KernelBuilder &k, Type low,
                                    const AttentionDims &dims) {
  SmallVector<int64_t> shape = {dims.heads, dims.seq, dims.seq};
  Value f32 = k.alloc(MemRefType::get(shape, k.builder().getF32Type()));
  if (low.isF32())
    return {f32, f32};
  return {f32, k.alloc(MemRefType::get(shape, low))};
}

Type elementType(Value buffer) {
  return cast<MemRefType>(buffer.getType()).getElementType();
}

/// `rows2d` with element type `elt`: itself, or a converted copy (rounded
/// to nearest even into bf16) made by one parallel loop.
Value withElementType(KernelBuilder &k, Value rows2d, Type elt) {
  auto type = cast<MemRefType>(rows2d.getType());
  if (type.getElementType() == elt)
    return rows2d;
  Value copy = k.alloc(MemRefType::get(type.getShape(), elt));
  k.parallel(type.getShape(), [&](KernelBuilder &k, ValueRange ij) {
    k.store(k.load(rows2d, ij), copy, ij);
  });
  return copy;
}

/// P = causal_softmax(scale q_b k_b^T) for all heads of batch index b, into
/// each of `probs` (the scores go to the f32 `p`).
LogicalResult attentionProbs(KernelBuilder &k, const AttentionBuffers &buf,
                             Value b, Value p, ArrayRef<Value> probs,
                             const AttentionDims &dims) {
  if (failed(forEachGroup(dims, b, [&](const GroupViews &views) {
        Value q = views.query(k, buf.q), key = views.kv(k, buf.key);
        Value s = views.scores(k, p);
        return k.gemmBatched(q, key, s, /*transA=*/false, /*transB=*/true,
                             dims.scale, 0.0);
      })))
    return failure();
  causalSoftmax(k, p, probs, dims);
  return success();
}

/// A sequential loop over the batch index b; fails if a body did.
LogicalResult
batchLoop(KernelBuilder &k, const AttentionDims &dims,
          function_ref<LogicalResult(KernelBuilder &, Value)> body) {
  LogicalResult result = success();
  k.loop({dims.batch}, [&](KernelBuilder &k, ValueRange bv) {
    if (failed(body(k, bv[0])))
      result = failure();
  });
  return result;
}

/// out = causal_softmax(q k^T / sqrt(d)) v through batched GEMMs.
LogicalResult lowerBatchedGemm(KernelBuilder &k, const AttentionBuffers &buf,
                               const AttentionDims &dims) {
  // The probabilities are needed only as the operand of P v: in the
  // operands' element type.
  auto [p, pLow] = allocScores(k, elementType(buf.q), dims);
  return batchLoop(k, dims, [&](KernelBuilder &k, Value b) {
    if (failed(attentionProbs(k, buf, b, p, {pLow}, dims)))
      return failure();
    return forEachGroup(dims, b, [&](const GroupViews &views) {
      Value s = views.scores(k, pLow);
      Value v = views.kv(k, buf.v);
      Value out = views.query(k, buf.out);
      return k.gemmBatched(s, v, out, /*transA=*/false, /*transB=*/false);
    });
  });
}

/// With P recomputed as in the forward and s = scale q k^T (so o = P v):
///   dP = dO v^T,  dV = sum over the group of P^T dO,
///   dS = P * (dP - rowsum(dP * P))   (softmax backward; 0 where masked,
///                                     since P is 0 there),
///   dQ = scale dS k,  dK = sum over the group of scale dS^T q
///   (ds/dq = scale k, ds/dk = scale q).
LogicalResult lowerBatchedGemmGrad(KernelBuilder &k,
                                   const AttentionBuffers &buf,
                                   const AttentionDims &dims) {
  Type low = elementType(buf.q);
  // The result's gradient may be f32 for bf16 operands (the op's
  // verifier): the GEMMs that read it need it in the operands' type.
  AttentionBuffers ops = buf;
  ops.dout = withElementType(k, buf.dout, low);
  auto [p, pLow] = allocScores(k, low, dims);
  auto [ds, dsLow] = allocScores(k, low, dims);
  // P in f32 for the dS kernel, and in bf16 for P^T dO where that differs.
  SmallVector<Value> probs = {p};
  if (pLow != p)
    probs.push_back(pLow);
  return batchLoop(k, dims, [&](KernelBuilder &k, Value b) {
    if (failed(attentionProbs(k, buf, b, p, probs, dims)))
      return failure();
    // dP = dO v^T (into ds); dV = P^T dO, summed over g in order.
    if (failed(forEachGroup(dims, b, [&](const GroupViews &views) {
          Value dout = views.query(k, ops.dout), v = views.kv(k, buf.v);
          Value dsg = views.scores(k, ds), pg = views.scores(k, pLow);
          Value dv = views.kv(k, buf.dv);
          if (failed(k.gemmBatched(dout, v, dsg, /*transA=*/false,
                                   /*transB=*/true)))
            return failure();
          return k.gemmBatched(pg, dout, dv, /*transA=*/true,
                               /*transB=*/false, 1.0, views.g == 0 ? 0.0 : 1.0);
        })))
      return failure();
    causalSoftmaxGrad(k, p, ds, dsLow, dims);
    // dQ = scale dS k; dK = scale dS^T q, summed over g in order.
    return forEachGroup(dims, b, [&](const GroupViews &views) {
      Value dsg = views.scores(k, dsLow), key = views.kv(k, buf.key);
      Value dq = views.query(k, buf.dq), q = views.query(k, buf.q);
      Value dk = views.kv(k, buf.dk);
      if (failed(k.gemmBatched(dsg, key, dq, /*transA=*/false,
                               /*transB=*/false, dims.scale, 0.0)))
        return failure();
      return k.gemmBatched(dsg, q, dk, /*transA=*/true, /*transB=*/false,
                           dims.scale, views.g == 0 ? 0.0 : 1.0);
    });
  });
}

/// The seam: lowers the forward with `impl` (see AttentionImpl).
LogicalResult lowerAttention(AttentionImpl impl, KernelBuilder &k,
                             const AttentionBuffers &buf,
                             const AttentionDims &dims) {
  switch (impl) {
  case AttentionImpl::BatchedGemm:
    return lowerBatchedGemm(k, buf, dims);
  }
  llvm_unreachable("unknown AttentionImpl");
}

/// The seam: lowers the backward with `impl` (see AttentionImpl).
LogicalResult lowerAttentionGrad(AttentionImpl impl, KernelBuilder &k,
                                 const AttentionBuffers &buf,
                                 const AttentionDims &dims) {
  switch (impl) {
  case AttentionImpl::BatchedGemm:
    return lowerBatchedGemmGrad(k, buf, dims);
  }
  llvm_unreachable("unknown AttentionImpl");
}

template <typename OpT> AttentionDims getDims(OpT op) {
  // (The op's verifier makes q, k, v and the result one element type, f32
  // or bf16.)
  RankedTensorType q = op.getQuery().getType();
  AttentionDims dims;
  dims.batch = q.getDimSize(0);
  dims.seq = q.getDimSize(1);
  dims.heads = op.getHeads();
  dims.kvHeads = op.getKvHeads().value_or(dims.heads);
  dims.headDim = q.getDimSize(2) / dims.heads;
  dims.scale = 1.0 / std::sqrt(static_cast<double>(dims.headDim));
  return dims;
}

/// out_bj = causal_softmax(q_bj k_bj^T / sqrt(d)) v_bj.
struct AttentionLowering : OpConversionPattern<AttentionOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(AttentionOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    AttentionDims dims = getDims(op);
    KernelBuilder k(rewriter, op.getLoc());
    Value outBuf = k.alloc(op.getType());
    // (One statement each: the IR order must not depend on the order the
    // compiler evaluates arguments in.)
    AttentionBuffers buf;
    buf.q = k.rows(adaptor.getQuery());
    buf.key = k.rows(adaptor.getKey());
    buf.v = k.rows(adaptor.getValue());
    buf.out = k.rows(outBuf);
    if (failed(lowerAttention(kAttentionImpl, k, buf, dims)))
      return failure();
    rewriter.replaceOp(op, outBuf);
    return success();
  }
};

/// dQ, dK, dV of attention (see lowerBatchedGemmGrad). dK and dV are summed
/// over the query heads that share a kv head.
struct AttentionGradLowering : OpConversionPattern<AttentionGradOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(AttentionGradOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    AttentionDims dims = getDims(op);
    KernelBuilder k(rewriter, op.getLoc());
    Value dqBuf = k.alloc(op.getQueryGrad().getType());
    Value dkBuf = k.alloc(op.getKeyGrad().getType());
    Value dvBuf = k.alloc(op.getValueGrad().getType());
    AttentionBuffers buf;
    buf.q = k.rows(adaptor.getQuery());
    buf.key = k.rows(adaptor.getKey());
    buf.v = k.rows(adaptor.getValue());
    buf.dout = k.rows(adaptor.getResultGrad());
    buf.dq = k.rows(dqBuf);
    buf.dk = k.rows(dkBuf);
    buf.dv = k.rows(dvBuf);
    if (failed(lowerAttentionGrad(kAttentionImpl, k, buf, dims)))
      return failure();
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
