//===- AttentionKernels.cpp - causal attention and its gradient -----------===//
//
// q is [B, S, heads*d], k and v are [B, S, kv*d]; they are viewed as rows
// [B*S, features], and the operands of head j of batch b are the strided
// [S, d] blocks at (b*S, j*d) (query head j reads kv head j / (heads/kv)).
//
// How attention is computed is one choice, AttentionImpl (the pass option
// convert-triax-to-kernels{attention=flash|batched-gemm}), made in
// lowerAttention / lowerAttentionGrad:
//
// AttentionImpl::Flash (the default): one fused kernel forward and two
// backward, an online softmax over the keys, nothing T x T (lowerFlash,
// lowerFlashGrad below). Memory grows with T, not T^2; the CPU loops and
// one GPU thread per query (or key) row are generated kernels, the
// matrix products inside them scalar dot products. On the CPU
// (key-blocks) the same loops take the keys 8 at a time, vector<8xf32>
// scores and accumulators (AttentionBlocks.cpp).
//
// AttentionImpl::FlashMMA (the CUDA pipeline's default): the same
// algorithm on NVIDIA tensor cores, a warp per 16 rows of mma.sync
// (AttentionMMA.cpp), where flashMMAApplies (bf16, d and S multiples of
// 16); BatchedGemm for other shapes (f32 operands included), and Flash
// for context-parallel attention, which BatchedGemm does not take. The
// scalar Flash kernels run one GPU thread per query row, and each
// thread's accumulator row goes to and from global memory at every key:
// on the H200, gpt2 fp32 at 16 x 1024 took 23.9 s a step with them
// (bench/gpu/run.sh, docs/cuda.md section 7).
//
// Ring attention (`context_parallel ... ring`) is lowered apart, whatever
// the AttentionImpl: the same per-row flash kernels block by block around
// the cp ring (AttentionRing.cpp).
//
// AttentionImpl::BatchedGemm. For each batch index b (a sequential host loop
// over B), the heads of b are 3-D strided views [n, S, d] of the rows
// (matrix m at column (first + m*step)*d, so strides [step*d, cols, 1]) and
// every product is ONE strided-batched GEMM over them through the runtime:
//   forward   scores = scale q k^T -> P [heads, S, S] (f32 scratch),
//             P = causal_softmax(scores)   (one kernel over heads*S rows),
//             out = P v;
//   backward  P recomputed (its GEMM, then exp(s - L) from the forward's
//             saved log-sum-exp, or the softmax as above without it),
//             dP = dO v^T, dV = P^T dO,
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

#include "AttentionKernels.h"

#include "triax/Conversion/RuntimeABI.h"
#include "triax/Dialect/Dist/IR/Dist.h"
#include "triax/Dialect/Triax/IR/Triax.h"

#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <cmath>

using namespace mlir;
using namespace mlir::triax;
using namespace mlir::triax::kernels;

namespace {

/// How an attention op is lowered (convert-triax-to-kernels{attention}).
enum class AttentionImpl {
  /// Strided-batched GEMMs through the runtime around fused causal-softmax
  /// kernels over all heads' rows (the scores are materialized, [heads, S,
  /// S] f32 per batch index).
  BatchedGemm,
  /// One fused kernel per direction with an online softmax (the
  /// FlashAttention-2 algorithm; see lowerFlash): no T x T buffer.
  Flash,
  /// Flash on NVIDIA tensor cores (AttentionMMA.cpp) where flashMMAApplies,
  /// BatchedGemm elsewhere (Flash under context parallelism).
  FlashMMA,
  /// The runtime's fused attention (trx_fused_attention and its gradient:
  /// cuDNN on CUDA) where fusedAttentionApplies, and FlashMMA's kernels
  /// behind it, run when the call declines; FlashMMA alone elsewhere.
  Cudnn,
};

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

/// Row i of head h of each [heads, S, S] buffer of `probs`: prob(t) for the
/// visible columns t in [zero, end) (end = i + 1), exactly 0 for the masked
/// ones end..S-1.
void storeCausalRow(KernelBuilder &k, ArrayRef<Value> probs, Value h, Value i,
                    Value zero, Value end, int64_t seq,
                    function_ref<Value(KernelBuilder &, Value)> prob) {
  loopRange(k, zero, end, [&](KernelBuilder &k, Value t) {
    Value value = prob(k, t);
    for (Value out : probs)
      k.store(value, out, {h, i, t});
  });
  loopRange(k, end, k.index(seq), [&](KernelBuilder &k, Value t) {
    Value masked = k.f32(0.0);
    for (Value out : probs)
      k.store(masked, out, {h, i, t});
  });
}

/// The [heads, S, S] f32 scores `p` (overwritten): row i of head h of each
/// buffer of `probs` ([heads, S, S], f32 or bf16; `p` itself may be one)
/// becomes softmax(p[h, i, 0..i]) with the row max subtracted (in f32), and
/// exactly 0 for the masked columns i+1..S-1. With `lse` ([B, heads, S]
/// f32), the row's log-sum-exp max + log(sum) goes to lse[b, h, i]. One
/// parallel loop over the heads*S rows.
void causalSoftmax(KernelBuilder &k, Value p, ArrayRef<Value> probs,
                   const AttentionDims &dims, Value lse = Value(),
                   Value b = Value()) {
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
    if (lse)
      k.store(k.add(max, k.log(sum)), lse, {b, h, i});
    storeCausalRow(k, probs, h, i, zero, end, seq,
                   [&](KernelBuilder &k, Value t) {
                     return k.div(k.load(p, {h, i, t}), sum);
                   });
  });
}

/// The [heads, S, S] f32 scores `p` of batch index b as probabilities from
/// the forward's log-sum-exp (`lse`, [B, heads, S] f32): row i of head h of
/// each buffer of `probs` becomes exp(p[h, i, t] - lse[b, h, i]) for t <= i
/// and exactly 0 past the diagonal. One pass over the row, where
/// causalSoftmax takes three (its max, its sum, the division). One
/// parallel loop over the heads*S rows.
void causalProbsFromLse(KernelBuilder &k, Value p, ArrayRef<Value> probs,
                        const AttentionDims &dims, Value lse, Value b) {
  int64_t seq = dims.seq;
  k.parallel({dims.heads * seq}, [&](KernelBuilder &k, ValueRange iv) {
    auto [h, i] = headAndRow(k, iv[0], dims);
    Value zero = k.index(0);
    Value end = k.addi(i, k.index(1)); // columns [0, i] are visible
    Value rowLse = k.load(lse, {b, h, i});
    storeCausalRow(k, probs, h, i, zero, end, seq,
                   [&](KernelBuilder &k, Value t) {
                     return k.exp(k.sub(k.load(p, {h, i, t}), rowLse));
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
/// each of `probs` (the scores go to the f32 `p`). With `lse` the rows'
/// log-sum-exp is also written there; with `savedLse` (the backward's
/// saved one) P is exp(s - L) instead of the softmax's passes.
LogicalResult attentionProbs(KernelBuilder &k, const AttentionBuffers &buf,
                             Value b, Value p, ArrayRef<Value> probs,
                             const AttentionDims &dims, Value lse = Value(),
                             Value savedLse = Value()) {
  if (failed(forEachGroup(dims, b, [&](const GroupViews &views) {
        Value q = views.query(k, buf.q), key = views.kv(k, buf.key);
        Value s = views.scores(k, p);
        return k.gemmBatched(q, key, s, /*transA=*/false, /*transB=*/true,
                             dims.scale, 0.0);
      })))
    return failure();
  if (savedLse)
    causalProbsFromLse(k, p, probs, dims, savedLse, b);
  else
    causalSoftmax(k, p, probs, dims, lse, b);
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
    if (failed(attentionProbs(k, buf, b, p, {pLow}, dims, buf.lse)))
      return failure();
    return forEachGroup(dims, b, [&](const GroupViews &views) {
      Value s = views.scores(k, pLow);
      Value v = views.kv(k, buf.v);
      Value out = views.query(k, buf.out);
      return k.gemmBatched(s, v, out, /*transA=*/false, /*transB=*/false);
    });
  });
}

/// With P recomputed (its GEMM, then the softmax as in the forward, or
/// exp(s - L) from the forward's saved log-sum-exp) and s = scale q k^T
/// (so o = P v):
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
    if (failed(attentionProbs(k, buf, b, p, probs, dims, /*lse=*/Value(),
                              /*savedLse=*/buf.lse)))
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

} // namespace

//===----------------------------------------------------------------------===//
// AttentionImpl::Flash
//===----------------------------------------------------------------------===//

// The helpers the flash kernels share with AttentionBlocks.cpp (declared in
// AttentionKernels.h).
namespace mlir::triax::kernels {

/// The index of (batch b, position i, head h, feature c) in a rows view
/// [B*S, heads*d]: [b*S + i, h*d + c].
SmallVector<Value, 2> headIndex(KernelBuilder &k, Value b, Value i, Value h,
                                Value c, const AttentionDims &dims) {
  Value row = k.addi(k.muli(b, k.index(dims.seq)), i);
  Value col = k.addi(k.muli(h, k.index(dims.headDim)), c);
  return {row, col};
}

/// Element (b, i, h, c) of a rows view.
Value headElement(KernelBuilder &k, Value rows2d, Value b, Value i, Value h,
                  Value c, const AttentionDims &dims) {
  return k.load(rows2d, headIndex(k, b, i, h, c, dims));
}

Value loadLanes(KernelBuilder &k, Value rows2d, Value b, Value row, Value head,
                Value c, const AttentionDims &dims, int64_t width) {
  auto lanes = VectorType::get({width}, k.builder().getF32Type());
  Type elt = cast<MemRefType>(rows2d.getType()).getElementType();
  Value v = vector::LoadOp::create(k.builder(), k.getLoc(),
                                   VectorType::get({width}, elt), rows2d,
                                   headIndex(k, b, row, head, c, dims));
  if (elt.isF32())
    return v;
  // bf16 extended exactly, as KernelBuilder::load does for one element.
  return arith::ExtFOp::create(k.builder(), k.getLoc(), lanes, v);
}

void storeLanes(KernelBuilder &k, Value lanes, Value rows2d, Value b, Value row,
                Value head, Value c, const AttentionDims &dims) {
  Type elt = cast<MemRefType>(rows2d.getType()).getElementType();
  if (!elt.isF32())
    lanes = arith::TruncFOp::create(
        k.builder(), k.getLoc(), cast<VectorType>(lanes.getType()).clone(elt),
        lanes);
  vector::StoreOp::create(k.builder(), k.getLoc(), lanes, rows2d,
                          headIndex(k, b, row, head, c, dims));
}

namespace {

/// headDot's lanes as one vector<8xf32>: lane l of the product of features
/// c..c+7 is feature c + l, the lanes are added step by step as headDot
/// adds them, then halved in its order (halvingSum). Multiplies and adds
/// stay apart (no contraction): the same bits as the scalar lanes.
Value headDotVector(KernelBuilder &k, Value x, Value i, Value h, Value y,
                    Value t, Value g, Value b, const AttentionDims &dims) {
  AttentionDims keys = dims.keys();
  auto product = [&](KernelBuilder &k, Value c) {
    Value xv = loadLanes(k, x, b, i, h, c, dims);
    Value yv = loadLanes(k, y, b, t, g, c, keys);
    return k.mul(xv, yv);
  };
  Value first = product(k, k.index(0));
  Value sum =
      k.reduce(k.index(1), k.index(dims.headDim / kDotLanes), {first},
               [&](KernelBuilder &k, Value step, ValueRange acc) {
                 Value c = k.muli(step, k.index(kDotLanes));
                 return SmallVector<Value>{k.add(acc[0], product(k, c))};
               })[0];
  return halvingSum(
      k, sum, [](KernelBuilder &k, Value x, Value y) { return k.add(x, y); });
}

} // namespace

/// x . y over the d features of (b, i, h) of `x` (query-shaped) and
/// (b, t, g) of `y` (key-shaped: AttentionDims::keys), in an order fixed
/// by d alone: the same bits whatever the layout of the
/// heads, so tp ranks compute what one rank does. When d is a multiple of
/// 8, lane l sums the features c = l, l + 8, l + 16, ... in order, and the
/// lanes are added pairwise ((0+4) + (2+6)) + ((1+5) + (3+7)): 8
/// independent chains that LLVM's SLP vectorizer makes one vector register
/// (a sequential sum is one chain of d dependent adds, the attention
/// kernels' bottleneck on the CPU). Otherwise one sum in feature order.
Value headDot(KernelBuilder &k, Value x, Value i, Value h, Value y, Value t,
              Value g, Value b, const AttentionDims &dims) {
  int64_t d = dims.headDim;
  AttentionDims keys = dims.keys();
  if (d % kDotLanes != 0)
    return k.reduce(d, {k.f32(0.0)},
                    [&](KernelBuilder &k, Value c, ValueRange acc) {
                      Value xc = headElement(k, x, b, i, h, c, dims);
                      Value yc = headElement(k, y, b, t, g, c, keys);
                      return SmallVector<Value>{k.add(acc[0], k.mul(xc, yc))};
                    })[0];
  if (dims.vectorDots)
    return headDotVector(k, x, i, h, y, t, g, b, dims);
  // The lanes start at the products of features 0..7 (no add of a zero:
  // d - 1 adds in all, as the sequential sum).
  auto product = [&](KernelBuilder &k, Value c) {
    return k.mul(headElement(k, x, b, i, h, c, dims),
                 headElement(k, y, b, t, g, c, keys));
  };
  SmallVector<Value> first;
  for (int64_t l = 0; l < kDotLanes; ++l)
    first.push_back(product(k, k.index(l)));
  SmallVector<Value> lanes = k.reduce(
      k.index(1), k.index(d / kDotLanes), first,
      [&](KernelBuilder &k, Value step, ValueRange acc) {
        Value base = k.muli(step, k.index(kDotLanes));
        SmallVector<Value> next;
        for (int64_t l = 0; l < kDotLanes; ++l)
          next.push_back(k.add(acc[l], product(k, k.addi(base, k.index(l)))));
        return next;
      });
  for (int64_t width = kDotLanes / 2; width >= 1; width /= 2)
    for (int64_t l = 0; l < width; ++l)
      lanes[l] = k.add(lanes[l], lanes[l + width]);
  return lanes[0];
}

std::pair<Value, Value> chunkRowsBefore(KernelBuilder &k, Value t, Value member,
                                        int64_t members, int64_t chunk) {
  OpBuilder &b = k.builder();
  Location loc = k.getLoc();
  auto before = [&](Value start) {
    Value d = arith::SubIOp::create(b, loc, t, start);
    Value low = arith::MaxSIOp::create(b, loc, d, k.index(0));
    return arith::MinSIOp::create(b, loc, low, k.index(chunk)).getResult();
  };
  Value early = k.muli(member, k.index(chunk));
  Value mirror =
      k.muli(arith::SubIOp::create(b, loc, k.index(2 * members - 1), member),
             k.index(chunk));
  Value first = before(early);
  return {first, before(mirror)};
}

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

/// One step of the online softmax from running max m to m' = max(m, s):
/// (s > m, alpha = exp(m - m'), p = exp(s - m')) with one exp, since one
/// of the two is exp(0) = 1: e = exp(min(m, s) - max(m, s)), alpha = e
/// and p = 1 when the max grows, else alpha = 1 and p = e (the same bits
/// as two exps).
std::tuple<Value, Value, Value> onlineStep(KernelBuilder &k, Value m, Value s) {
  Value grows = k.lessThan(m, s);
  Value low = k.select(grows, m, s), high = k.select(grows, s, m);
  Value e = k.exp(k.sub(low, high));
  Value one = k.f32(1.0);
  return {grows, k.select(grows, e, one), k.select(grows, one, e)};
}

/// A sequential loop over the d features.
void forFeatures(KernelBuilder &k, const AttentionDims &dims,
                 function_ref<void(KernelBuilder &, Value)> body) {
  k.loop({dims.headDim},
         [&](KernelBuilder &k, ValueRange c) { body(k, c[0]); });
}

/// The kv head query head h reads (h / group).
Value kvHeadOf(KernelBuilder &k, Value h, const AttentionDims &dims) {
  return dims.group() == 1 ? h : k.divui(h, k.index(dims.group()));
}

/// Query head `member` of kv head g (g itself without grouping).
Value queryHeadOf(KernelBuilder &k, Value g, int64_t member,
                  const AttentionDims &dims) {
  return dims.group() == 1
             ? g
             : k.addi(k.muli(g, k.index(dims.group())), k.index(member));
}

} // namespace mlir::triax::kernels

namespace {

// Context parallelism's positions (AttentionDims::cpMembers); each is the
// identity without it. The queries of a member are in increasing position
// order (its early chunk, then the mirror one), and the kernels visit the
// keys by increasing position, as one rank does.

/// The position in the whole sequence of query row i.
Value queryPosition(KernelBuilder &k, Value i, const AttentionDims &dims) {
  if (dims.cpMembers == 1)
    return i;
  return loadBalancedPosition(k, i, dims.cpMember, dims.cpMembers,
                              dims.seq / 2);
}

/// The position of gathered key row j (member j / seq's row j % seq).
Value keyPosition(KernelBuilder &k, Value j, const AttentionDims &dims) {
  if (dims.cpMembers == 1)
    return j;
  Value seq = k.index(dims.seq);
  Value member = k.divui(j, seq);
  Value row = arith::RemUIOp::create(k.builder(), k.getLoc(), j, seq);
  return loadBalancedPosition(k, row, member, dims.cpMembers, dims.seq / 2);
}

/// The gathered key row of position t (keyPosition's inverse).
Value keyRow(KernelBuilder &k, Value t, const AttentionDims &dims) {
  if (dims.cpMembers == 1)
    return t;
  int64_t chunk = dims.seq / 2, n = dims.cpMembers;
  Value c = k.divui(t, k.index(chunk));
  Value within =
      arith::RemUIOp::create(k.builder(), k.getLoc(), t, k.index(chunk));
  Value early = k.cmpi(arith::CmpIPredicate::ult, c, k.index(n));
  Value mirror =
      arith::SubIOp::create(k.builder(), k.getLoc(), k.index(2 * n - 1), c);
  Value member = k.select(early, c, mirror);
  Value row = k.select(early, within, k.addi(within, k.index(chunk)));
  return k.addi(k.muli(member, k.index(dims.seq)), row);
}

/// The first query row that sees the key at position t: the member's
/// queries before it (chunkRowsBefore, both chunks).
Value firstQuery(KernelBuilder &k, Value t, const AttentionDims &dims) {
  if (dims.cpMembers == 1)
    return t;
  auto [early, mirror] =
      chunkRowsBefore(k, t, dims.cpMember, dims.cpMembers, dims.seq / 2);
  return k.addi(early, mirror);
}

/// The online softmax of query row (b, h, i) at position p (i without
/// context parallelism) over the visible keys t = 0..p in order, with the
/// scores s_t = scale q_i . k_t, the running max m and sum l and the f32
/// accumulator row a (acc[b, h, i, :]):
///   t = 0:  m = s_0, l = 1, a = v_0;
///   t > 0:  m' = max(m, s_t); if m' > m: a *= exp(m - m');
///           l = l exp(m - m') + exp(s_t - m'); a += exp(s_t - m') v_t.
/// Returns (m, l); a / l is the row's attention output.
std::pair<Value, Value> onlineRow(KernelBuilder &k, const AttentionBuffers &buf,
                                  Value acc, Value b, Value h, Value i,
                                  const AttentionDims &dims) {
  Value g = kvHeadOf(k, h, dims);
  Value zero = k.index(0), one = k.index(1);
  Value scale = k.f32(dims.scale);
  AttentionDims keys = dims.keys();
  // (The key at position 0 is row 0 in every layout.)
  auto score = [&](KernelBuilder &k, Value row) {
    return k.mul(scale, headDot(k, buf.q, i, h, buf.key, row, g, b, dims));
  };
  Value s0 = score(k, zero);
  forFeatures(k, dims, [&](KernelBuilder &k, Value c) {
    k.store(headElement(k, buf.v, b, zero, g, c, keys), acc, {b, h, i, c});
  });
  SmallVector<Value> ml = k.reduce(
      one, k.addi(queryPosition(k, i, dims), one), {s0, k.f32(1.0)},
      [&](KernelBuilder &k, Value t, ValueRange state) {
        Value m = state[0], l = state[1];
        Value row = keyRow(k, t, dims);
        Value s = score(k, row);
        auto [grows, alpha, p] = onlineStep(k, m, s);
        Value next = k.max(m, s);
        // The accumulator is rescaled only when the max grows (alpha is
        // then < 1; otherwise exactly 1).
        auto rescale = scf::IfOp::create(k.builder(), k.getLoc(), grows,
                                         /*withElseRegion=*/false);
        {
          OpBuilder::InsertionGuard guard(k.builder());
          k.builder().setInsertionPoint(rescale.thenBlock()->getTerminator());
          forFeatures(k, dims, [&](KernelBuilder &k, Value c) {
            k.store(k.mul(k.load(acc, {b, h, i, c}), alpha), acc, {b, h, i, c});
          });
        }
        forFeatures(k, dims, [&](KernelBuilder &k, Value c) {
          Value vc = headElement(k, buf.v, b, row, g, c, keys);
          k.store(k.add(k.load(acc, {b, h, i, c}), k.mul(p, vc)), acc,
                  {b, h, i, c});
        });
        return SmallVector<Value>{next, k.add(k.mul(l, alpha), p)};
      });
  return {ml[0], ml[1]};
}

/// Forward, one iteration per query row (b, h, i): its online softmax
/// (onlineRow), then out_i = a / l. The T x T scores never exist; the work
/// per row is i + 1 dot products and updates of d features, with one exp
/// per key. Iterations write only their own row of `acc` ([B, heads, S,
/// d] f32) and of `out` (proved by triax-map-loops-to-gpu: one GPU thread
/// each).
LogicalResult lowerFlash(KernelBuilder &k, const AttentionBuffers &buf,
                         const AttentionDims &dims) {
  if (dims.keyBlocks) {
    flashBlocks(k, buf, dims);
    return success();
  }
  Type f32 = k.builder().getF32Type();
  Value acc = k.alloc(
      MemRefType::get({dims.batch, dims.heads, dims.seq, dims.headDim}, f32));
  k.parallel({dims.batch, dims.heads, dims.seq},
             [&](KernelBuilder &k, ValueRange iv) {
               Value b = iv[0], h = iv[1], i = iv[2];
               auto [m, l] = onlineRow(k, buf, acc, b, h, i, dims);
               forFeatures(k, dims, [&](KernelBuilder &k, Value c) {
                 k.store(k.div(k.load(acc, {b, h, i, c}), l), buf.out,
                         headIndex(k, b, i, h, c, dims));
               });
               if (buf.lse)
                 k.store(k.add(m, k.log(l)), buf.lse, {b, h, i});
             });
  return success();
}

/// Backward in two kernels, nothing T x T (P is recomputed from the saved
/// row statistics, tile by tile in FlashAttention-2, here key by key):
///  1. one iteration per query row (b, h, i): the log-sum-exp L_i and the
///     output row O_i, saved by the forward (buf.lse, buf.savedOut) or else
///     from the forward's online softmax again (onlineRow: m, l and
///     O_i = a / l in the dQ accumulator, L_i = m + log l);
///     D_i = dO_i . O_i (the softmax backward's rowsum(dP * P)); then over
///     the visible keys t, P_it = exp(s_it - L_i), dP_it = dO_i . v_t and
///     dQ_i = scale sum_t P_it (dP_it - D_i) k_t. L and D are kept,
///     [B, heads, S] f32 each.
///  2. one iteration per key row (b, kv head, t): for the query heads of
///     its group in order and the queries i = t..S-1 that see it,
///     dV_t = sum P_it dO_i and dK_t = scale sum dS_it q_i.
/// Each iteration writes only its own rows (f32 accumulators, then dQ, dK,
/// dV), so both kernels are deterministic and race-free without atomics.
LogicalResult lowerFlashGrad(KernelBuilder &k, const AttentionBuffers &buf,
                             const AttentionDims &dims) {
  if (dims.keyBlocks) {
    flashBlocksGrad(k, buf, dims);
    return success();
  }
  Type f32 = k.builder().getF32Type();
  int64_t B = dims.batch, H = dims.heads, S = dims.seq, d = dims.headDim;
  Value accQ = k.alloc(MemRefType::get({B, H, S, d}, f32));
  Value lse = buf.lse ? buf.lse : k.alloc(MemRefType::get({B, H, S}, f32));
  Value delta = k.alloc(MemRefType::get({B, H, S}, f32));
  Value scale = k.f32(dims.scale);
  AttentionDims keys = dims.keys();
  // (Scores of key row `row`: the gathered row under context parallelism.)
  auto score = [&](KernelBuilder &k, Value b, Value i, Value h, Value row,
                   Value g) {
    return k.mul(scale, headDot(k, buf.q, i, h, buf.key, row, g, b, dims));
  };
  k.parallel({B, H, S}, [&](KernelBuilder &k, ValueRange iv) {
    Value b = iv[0], h = iv[1], i = iv[2];
    Value g = kvHeadOf(k, h, dims);
    Value zero = k.index(0),
          end = k.addi(queryPosition(k, i, dims), k.index(1));
    // L and the output row: saved by the forward, or its loop again.
    Value L, l;
    if (buf.lse) {
      L = k.load(lse, {b, h, i});
    } else {
      auto [m, sum] = onlineRow(k, buf, accQ, b, h, i, dims);
      L = k.add(m, k.log(sum));
      l = sum;
      k.store(L, lse, {b, h, i});
    }
    auto output = [&](KernelBuilder &k, Value c) {
      if (buf.savedOut)
        return headElement(k, buf.savedOut, b, i, h, c, dims);
      return k.div(k.load(accQ, {b, h, i, c}), l);
    };
    Value D =
        k.reduce(dims.headDim, {k.f32(0.0)},
                 [&](KernelBuilder &k, Value c, ValueRange acc) {
                   Value o = output(k, c);
                   Value doc = headElement(k, buf.dout, b, i, h, c, dims);
                   return SmallVector<Value>{k.add(acc[0], k.mul(doc, o))};
                 })[0];
    k.store(D, delta, {b, h, i});
    forFeatures(k, dims, [&](KernelBuilder &k, Value c) {
      k.store(k.f32(0.0), accQ, {b, h, i, c});
    });
    loopRange(k, zero, end, [&](KernelBuilder &k, Value t) {
      Value row = keyRow(k, t, dims);
      Value p = k.exp(k.sub(score(k, b, i, h, row, g), L));
      Value dp = headDot(k, buf.dout, i, h, buf.v, row, g, b, dims);
      Value ds = k.mul(p, k.sub(dp, D));
      forFeatures(k, dims, [&](KernelBuilder &k, Value c) {
        Value kc = headElement(k, buf.key, b, row, g, c, keys);
        k.store(k.add(k.load(accQ, {b, h, i, c}), k.mul(ds, kc)), accQ,
                {b, h, i, c});
      });
    });
    forFeatures(k, dims, [&](KernelBuilder &k, Value c) {
      k.store(k.mul(scale, k.load(accQ, {b, h, i, c})), buf.dq,
              headIndex(k, b, i, h, c, dims));
    });
  });

  // One iteration per key row t (a gathered row under context
  // parallelism: the queries that see it are those from firstQuery of its
  // position on).
  int64_t KV = dims.kvHeads, T = keys.seq;
  Value accK = k.alloc(MemRefType::get({B, KV, T, d}, f32));
  Value accV = k.alloc(MemRefType::get({B, KV, T, d}, f32));
  k.parallel({B, KV, T}, [&](KernelBuilder &k, ValueRange iv) {
    Value b = iv[0], g = iv[1], t = iv[2];
    Value first = firstQuery(k, keyPosition(k, t, dims), dims);
    forFeatures(k, dims, [&](KernelBuilder &k, Value c) {
      k.store(k.f32(0.0), accK, {b, g, t, c});
      k.store(k.f32(0.0), accV, {b, g, t, c});
    });
    // The query heads of kv head g, in order: g*group + 0, 1, ...
    for (int64_t member = 0; member < dims.group(); ++member) {
      Value h = queryHeadOf(k, g, member, dims);
      loopRange(k, first, k.index(S), [&](KernelBuilder &k, Value i) {
        Value L = k.load(lse, {b, h, i});
        Value p = k.exp(k.sub(score(k, b, i, h, t, g), L));
        Value dp = headDot(k, buf.dout, i, h, buf.v, t, g, b, dims);
        Value ds = k.mul(p, k.sub(dp, k.load(delta, {b, h, i})));
        forFeatures(k, dims, [&](KernelBuilder &k, Value c) {
          Value doc = headElement(k, buf.dout, b, i, h, c, dims);
          Value qc = headElement(k, buf.q, b, i, h, c, dims);
          k.store(k.add(k.load(accV, {b, g, t, c}), k.mul(p, doc)), accV,
                  {b, g, t, c});
          k.store(k.add(k.load(accK, {b, g, t, c}), k.mul(ds, qc)), accK,
                  {b, g, t, c});
        });
      });
    }
    forFeatures(k, dims, [&](KernelBuilder &k, Value c) {
      SmallVector<Value, 2> at = headIndex(k, b, t, g, c, keys);
      k.store(k.mul(scale, k.load(accK, {b, g, t, c})), buf.dk, at);
      k.store(k.load(accV, {b, g, t, c}), buf.dv, at);
    });
  });
  return success();
}

/// Whether the runtime's fused attention may take the op, as far as the
/// compiler can tell (the library may still decline a shape at run time):
/// bf16 `buffers` (the operands and results the entry takes; the upstream
/// gradient is converted) and the queries' own keys (no context
/// parallelism). `why` says why not.
bool fusedAttentionApplies(const AttentionDims &dims, ArrayRef<Value> buffers,
                           std::string &why) {
  why.clear();
  if (!llvm::all_of(buffers,
                    [](Value b) { return b && elementType(b).isBF16(); }))
    why = "the operands and results are not all bf16";
  else if (dims.cpMembers != 1)
    why = "context parallelism's keys are not the queries' rows";
  return why.empty();
}

/// Calls the runtime's fused-attention entry `entry` on `args` (after which
/// come the batch, the heads, the kv heads and the scale), then opens an
/// scf.if on its answer being non-zero (the library declined): the builder
/// is left in its then-block, where the caller lowers the generated
/// kernels. The caller keeps an InsertionGuard.
void callFusedAttention(KernelBuilder &k, StringRef entry, ArrayRef<Value> args,
                        const AttentionDims &dims) {
  OpBuilder &b = k.builder();
  // (One op per statement: the IR order must not depend on the order the
  // compiler evaluates arguments in.)
  SmallVector<Value> operands(args);
  operands.push_back(k.i64(dims.batch));
  operands.push_back(k.i64(dims.heads));
  operands.push_back(k.i64(dims.kvHeads));
  operands.push_back(k.f32(dims.scale));
  Value answer =
      func::CallOp::create(b, k.getLoc(), entry, b.getI32Type(), operands)
          .getResult(0);
  Value zero = k.i32(0);
  Value declined = k.cmpi(arith::CmpIPredicate::ne, answer, zero);
  auto branch =
      scf::IfOp::create(b, k.getLoc(), declined, /*withElseRegion=*/false);
  b.setInsertionPoint(branch.thenBlock()->getTerminator());
}

/// The seam: lowers the forward with `impl` (see AttentionImpl).
LogicalResult lowerAttention(AttentionImpl impl, KernelBuilder &k,
                             const AttentionBuffers &buf,
                             const AttentionDims &dims) {
  switch (impl) {
  case AttentionImpl::BatchedGemm:
    return lowerBatchedGemm(k, buf, dims);
  case AttentionImpl::Flash:
    return lowerFlash(k, buf, dims);
  case AttentionImpl::FlashMMA:
    if (std::string why; flashMMAApplies(dims, elementType(buf.q), why)) {
      flashMMA(k, buf, dims);
      return success();
    }
    if (dims.cpMembers == 1)
      return lowerBatchedGemm(k, buf, dims);
    return lowerFlash(k, buf, dims);
  case AttentionImpl::Cudnn: {
    if (std::string why;
        !fusedAttentionApplies(dims, {buf.q, buf.key, buf.v, buf.out}, why))
      return lowerAttention(AttentionImpl::FlashMMA, k, buf, dims);
    // The entry writes the rows' log-sum-exp whether or not the op returns
    // it: a scratch buffer when it does not.
    Value lse = buf.lse;
    if (!lse)
      lse = k.alloc(RankedTensorType::get({dims.batch, dims.heads, dims.seq},
                                          k.builder().getF32Type()));
    SmallVector<Value> args;
    for (Value rows : {buf.q, buf.key, buf.v, buf.out})
      args.push_back(k.stridedOperand(rows));
    args.push_back(k.dynamicFlat(lse));
    OpBuilder::InsertionGuard guard(k.builder());
    callFusedAttention(k, ::triax::rt::kFusedAttention, args, dims);
    return lowerAttention(AttentionImpl::FlashMMA, k, buf, dims);
  }
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
  case AttentionImpl::Flash:
    return lowerFlashGrad(k, buf, dims);
  case AttentionImpl::FlashMMA:
    if (std::string why; flashMMAApplies(dims, elementType(buf.q), why)) {
      flashMMAGrad(k, buf, dims);
      return success();
    }
    if (dims.cpMembers == 1)
      return lowerBatchedGemmGrad(k, buf, dims);
    return lowerFlashGrad(k, buf, dims);
  case AttentionImpl::Cudnn: {
    // The library's backward reads the forward's output and log-sum-exp:
    // an op without them (`saved`) gets the generated kernels only.
    if (std::string why;
        !buf.savedOut ||
        !fusedAttentionApplies(
            dims, {buf.q, buf.key, buf.v, buf.savedOut, buf.dq, buf.dk, buf.dv},
            why))
      return lowerAttentionGrad(AttentionImpl::FlashMMA, k, buf, dims);
    // The library takes a bf16 upstream gradient: an f32 one (a bf16
    // model's f32 loss path) is rounded into a copy, as flash-mma rounds
    // it when staging its tiles.
    Value dout = withElementType(k, buf.dout, elementType(buf.q));
    SmallVector<Value> args;
    for (Value rows : {buf.q, buf.key, buf.v, buf.savedOut, dout})
      args.push_back(k.stridedOperand(rows));
    args.push_back(k.dynamicFlat(buf.lse));
    for (Value rows : {buf.dq, buf.dk, buf.dv})
      args.push_back(k.stridedOperand(rows));
    OpBuilder::InsertionGuard guard(k.builder());
    callFusedAttention(k, ::triax::rt::kFusedAttentionGrad, args, dims);
    return lowerAttentionGrad(AttentionImpl::FlashMMA, k, buf, dims);
  }
  }
  llvm_unreachable("unknown AttentionImpl");
}

/// Context parallelism's members and this member's position (dims.cpMembers,
/// dims.cpMember) for an op with `context_parallel over @mesh [axes]`:
/// the group must be the key's sequence over the query's; the key blocks
/// and the batched GEMMs do not take positions (yet), the scalar flash
/// kernels do.
template <typename OpT>
LogicalResult contextParallel(OpT op, KernelBuilder &k, AttentionImpl impl,
                              AttentionDims &dims) {
  if (!op.getMeshAttr())
    return success();
  FailureOr<int64_t> mask = axisMask(op, op.getMeshAttr(), op.getAxesAttr());
  if (failed(mask))
    return failure();
  int64_t group =
      dist::lookupMesh(op, op.getMeshAttr()).getGroupSize(op.getAxesAttr());
  int64_t keySeq = op.getKey().getType().getDimSize(1);
  if (keySeq != group * dims.seq)
    return op.emitOpError("context_parallel over a group of ")
           << group << " needs " << group << " x " << dims.seq << " keys, got "
           << keySeq;
  if (impl == AttentionImpl::BatchedGemm)
    return op.emitOpError("context-parallel attention needs the flash "
                          "kernels (attention=flash), not batched-gemm");
  dims.cpMembers = group;
  dims.cpMember = groupPosition(k, *mask);
  dims.keyBlocks = false;
  return success();
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

/// What both lowering patterns settle first: `dims`' kernel forms
/// (vector dots where d allows, key blocks with them) and, for a ring
/// attention, its ring group (a default one otherwise), or the context
/// parallelism of `context_parallel over`; failure when the op's mesh axes
/// do not fit.
template <typename OpT>
FailureOr<RingGroup> setUpLowering(OpT op, KernelBuilder &k, AttentionImpl impl,
                                   bool vectorDots, bool keyBlocks,
                                   AttentionDims &dims) {
  dims.vectorDots = vectorDots && dims.headDim % kDotLanes == 0;
  dims.keyBlocks = keyBlocks && dims.vectorDots;
  if (op.getRing())
    return ringGroup(op, op.getMeshAttr(), op.getAxesAttr(), k);
  if (failed(contextParallel(op, k, impl, dims)))
    return failure();
  return RingGroup();
}

/// out_bj = causal_softmax(q_bj k_bj^T / sqrt(d)) v_bj.
struct AttentionLowering : OpConversionPattern<AttentionOp> {
  AttentionLowering(TypeConverter &converter, MLIRContext *ctx,
                    AttentionImpl impl, bool vectorDots, bool keyBlocks)
      : OpConversionPattern(converter, ctx), impl(impl), vectorDots(vectorDots),
        keyBlocks(keyBlocks) {}
  AttentionImpl impl;
  bool vectorDots, keyBlocks;
  LogicalResult
  matchAndRewrite(AttentionOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    AttentionDims dims = getDims(op);
    KernelBuilder k(rewriter, op.getLoc());
    FailureOr<RingGroup> ring =
        setUpLowering(op, k, impl, vectorDots, keyBlocks, dims);
    if (failed(ring))
      return failure();
    Value outBuf = k.alloc(op.getResult().getType());
    // (One statement each: the IR order must not depend on the order the
    // compiler evaluates arguments in.) A ring passes its own keys and
    // values around itself.
    AttentionBuffers buf;
    buf.q = k.rows(rowView(adaptor.getQuery()));
    if (!op.getRing()) {
      buf.key = k.rows(rowView(adaptor.getKey()));
      buf.v = k.rows(rowView(adaptor.getValue()));
    }
    buf.out = k.rows(outBuf);
    SmallVector<Value, 2> results = {outBuf};
    if (op.getLse()) {
      buf.lse = k.alloc(op.getLse().getType());
      results.push_back(buf.lse);
    }
    if (op.getRing()) {
      dims.keyBlocks = false;
      ringAttention(k, buf,
                    {rowView(adaptor.getKey()), rowView(adaptor.getValue())},
                    dims, *ring);
    } else if (failed(lowerAttention(impl, k, buf, dims))) {
      return failure();
    }
    rewriter.replaceOp(op, results);
    return success();
  }
};

/// dQ, dK, dV of attention (see lowerBatchedGemmGrad). dK and dV are summed
/// over the query heads that share a kv head.
struct AttentionGradLowering : OpConversionPattern<AttentionGradOp> {
  AttentionGradLowering(TypeConverter &converter, MLIRContext *ctx,
                        AttentionImpl impl, bool vectorDots, bool keyBlocks)
      : OpConversionPattern(converter, ctx), impl(impl), vectorDots(vectorDots),
        keyBlocks(keyBlocks) {}
  AttentionImpl impl;
  bool vectorDots, keyBlocks;
  LogicalResult
  matchAndRewrite(AttentionGradOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    AttentionDims dims = getDims(op);
    KernelBuilder k(rewriter, op.getLoc());
    FailureOr<RingGroup> ring =
        setUpLowering(op, k, impl, vectorDots, keyBlocks, dims);
    if (failed(ring))
      return failure();
    // dq, dk and dv side by side when they are concatenated (fused
    // projections: one GEMM takes them as one operand), else each its own
    // (a ring's, whose dk and dv travel, too).
    Value dqBuf, dkBuf, dvBuf;
    RankedTensorType side = op.getRing() ? nullptr : sideBySideResults(op);
    if (side) {
      Value whole = k.alloc(side);
      int64_t q = op.getQueryGrad().getType().getShape().back(),
              kv = op.getKeyGrad().getType().getShape().back();
      dqBuf = columnView(k, whole, 0, q);
      dkBuf = columnView(k, whole, q, kv);
      dvBuf = columnView(k, whole, q + kv, kv);
    } else {
      dqBuf = k.alloc(op.getQueryGrad().getType());
      dkBuf = k.alloc(op.getKeyGrad().getType());
      dvBuf = k.alloc(op.getValueGrad().getType());
    }
    AttentionBuffers buf;
    buf.q = k.rows(rowView(adaptor.getQuery()));
    if (!op.getRing()) {
      buf.key = k.rows(rowView(adaptor.getKey()));
      buf.v = k.rows(rowView(adaptor.getValue()));
    }
    buf.dout = k.rows(rowView(adaptor.getResultGrad()));
    buf.dq = k.rows(dqBuf);
    buf.dk = k.rows(dkBuf);
    buf.dv = k.rows(dvBuf);
    if (!adaptor.getSaved().empty()) {
      buf.savedOut = k.rows(rowView(adaptor.getSaved()[0]));
      buf.lse = adaptor.getSaved()[1];
    }
    if (op.getRing()) {
      dims.keyBlocks = false;
      ringAttentionGrad(
          k, buf, {rowView(adaptor.getKey()), rowView(adaptor.getValue())},
          dims, *ring);
    } else if (failed(lowerAttentionGrad(impl, k, buf, dims))) {
      return failure();
    }
    rewriter.replaceOp(op, {dqBuf, dkBuf, dvBuf});
    return success();
  }
};

} // namespace

void mlir::triax::kernels::populateAttentionPatterns(
    TypeConverter &converter, RewritePatternSet &patterns, StringRef attention,
    bool vectorDots, bool keyBlocks) {
  AttentionImpl impl = attention == "batched-gemm" ? AttentionImpl::BatchedGemm
                       : attention == "flash-mma"  ? AttentionImpl::FlashMMA
                       : attention == "cudnn"      ? AttentionImpl::Cudnn
                                                   : AttentionImpl::Flash;
  patterns.add<AttentionLowering, AttentionGradLowering>(
      converter, patterns.getContext(), impl, vectorDots, keyBlocks);
}
