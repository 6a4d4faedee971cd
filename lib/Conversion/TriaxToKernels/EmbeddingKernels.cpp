//===- EmbeddingKernels.cpp - table lookups and their gradient ------------===//
//
// (And the rotary position embedding, the other way a token's position
// enters the model.)
//
// A vocab-parallel lookup (`vocab_parallel over @mesh [axes]`) holds rows
// [p*V, (p+1)*V) of the table, V its local row count and p the rank's
// position in the group (asked from the runtime): an index outside them
// reads zeros, and only the indices inside contribute to the gradient.
//
//===----------------------------------------------------------------------===//

#include "KernelBuilder.h"

#include "triax/Conversion/KernelAttrs.h"
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
/// S = ceil(N / hidden) slices of W rows, parallel over (slice, feature).
/// The tokens are bucketed by slice first, so that an iteration visits only
/// its slice's tokens (T / S on average) instead of scanning all T:
///  1. parallel over (slice s, chunk c of kChunk tokens), flattened as
///     q = s * C + c: the chunk's tokens whose row is in slice s, in order,
///     into lists[q * kChunk + n] (n < kChunk: the scf.if that proves the
///     stores disjoint), and their number into counts[q];
///  2. parallel over (s, h): for each chunk c in order, its listed tokens
///     in order, table[row, h] += dy[t, h] under the slice test (which
///     proves the rows disjoint, as before).
/// Each element still adds its tokens in increasing t: the same sums. The
/// scratch is S * T token positions (int32): 2.8 MB for gpt2's 16 x 1024
/// tokens in 43 slices. Scanning every token in every (slice, feature)
/// iteration took 6.8 ms of the H200's gpt2 bf16 step (ncu).
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
    // A bf16 gradient (a bf16 model's) is summed over the tokens in an f32
    // table instead and rounded once at the end (finish): added into bf16
    // one token at a time, a frequent token's row would lose every term
    // below half a bf16 ulp of its running sum.
    AccumulateGradOp into = accumulatedInto(op, params);
    const bool bf16 = op.getType().getElementType().isBF16();
    Value table =
        into && !bf16
            ? accumulationBuffer(k, *getTypeConverter(), op, into, *params)
            : k.allocFilled(op.getType().clone(rewriter.getF32Type()), 0.0);
    auto finish = [&](Value table) {
      Value out = table;
      if (bf16) {
        // One rounding per element: into the gradient buffer (g + sum) or
        // into the bf16 result.
        out =
            into ? accumulationBuffer(k, *getTypeConverter(), op, into, *params)
                 : k.alloc(op.getType());
        Value from = k.flat(table), to = k.flat(out);
        k.parallel({op.getType().getNumElements()},
                   [&](KernelBuilder &k, ValueRange i) {
                     Value sum = k.load(from, i);
                     k.store(into ? k.add(k.load(to, i), sum) : sum, to, i);
                   });
      }
      if (into)
        rewriter.eraseOp(into);
      rewriter.replaceOp(op, out);
      return success();
    };
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
      return finish(table);
    }
    int64_t width = (vocab + slices - 1) / slices;
    slices = (vocab + width - 1) / width; // no empty slice
    const int64_t chunk = std::min(kChunk, tokens);
    const int64_t chunks = (tokens + chunk - 1) / chunk;
    Location loc = op.getLoc();
    OpBuilder &b = k.builder();
    Type i32 = b.getI32Type();
    Value lists = k.alloc(MemRefType::get({slices * chunks * chunk}, i32));
    Value counts = k.alloc(MemRefType::get({slices * chunks}, i32));
    // Whether token t's row is in slice s (and on this rank), and the row.
    auto rowOf = [&](KernelBuilder &k, Value t,
                     Value first) -> std::pair<Value, Value> {
      OpBuilder &b = k.builder();
      Value id = k.toIndex(k.load(ids, t));
      auto [row, inside] = localRow(k, id, *offset, vocab);
      // row - first < W (unsigned): the row is in this slice.
      Value mine =
          k.cmpi(arith::CmpIPredicate::ult,
                 arith::SubIOp::create(b, loc, row, first), k.index(width));
      // Another rank's row: not listed.
      if (inside)
        mine = arith::AndIOp::create(b, loc, mine, inside);
      return {row, mine};
    };
    // 1. Bucket the tokens by slice, chunk by chunk.
    k.parallel({slices * chunks}, [&](KernelBuilder &k, ValueRange q) {
      OpBuilder &b = k.builder();
      Value s = arith::DivUIOp::create(b, loc, q[0], k.index(chunks));
      Value c = arith::RemUIOp::create(b, loc, q[0], k.index(chunks));
      Value first = k.muli(s, k.index(width));
      Value t0 = k.muli(c, k.index(chunk));
      Value t1 = arith::MinUIOp::create(b, loc, k.addi(t0, k.index(chunk)),
                                        k.index(tokens));
      Value base = k.muli(q[0], k.index(chunk));
      // The loop carries the next free position `at` (from base), not the
      // count: the guard (at - base) < chunk then names the stored index
      // itself, as the disjointness proof needs (a count n would make it
      // (base + n) - base, which folds to n).
      Value end = k.reduce(
          t0, t1, {base}, [&](KernelBuilder &k, Value t, ValueRange at) {
            OpBuilder &b = k.builder();
            Value mine = rowOf(k, t, first).second;
            // Always true (at most a chunk's tokens are listed).
            Value fits = k.cmpi(arith::CmpIPredicate::ult, k.subi(at[0], base),
                                k.index(chunk));
            auto store = scf::IfOp::create(
                b, loc, arith::AndIOp::create(b, loc, mine, fits),
                /*withElseRegion=*/false);
            {
              OpBuilder::InsertionGuard guard(b);
              b.setInsertionPointToStart(store.thenBlock());
              k.store(arith::IndexCastOp::create(b, loc, i32, t), lists,
                      {at[0]});
            }
            Value one = k.select(mine, k.index(1), k.index(0));
            return SmallVector<Value>{k.addi(at[0], one)};
          })[0];
      k.store(arith::IndexCastOp::create(b, loc, i32, k.subi(end, base)),
              counts, q);
    });
    // 2. Each (slice, feature) adds its slice's tokens, in token order.
    k.parallel({slices, hidden}, [&](KernelBuilder &k, ValueRange sh) {
      Value first = k.muli(sh[0], k.index(width));
      k.loop({chunks}, [&](KernelBuilder &k, ValueRange c) {
        Value q = k.addi(k.muli(sh[0], k.index(chunks)), c[0]);
        Value n = k.toIndex(k.load(counts, q));
        Value base = k.muli(q, k.index(chunk));
        auto listed = scf::ForOp::create(
            k.builder(), loc, k.index(0), n, k.index(1), ValueRange{},
            [&](OpBuilder &nested, Location l, Value j, ValueRange) {
              KernelBuilder k(nested, l);
              Value t = k.toIndex(k.load(lists, k.addi(base, j)));
              auto [row, mine] = rowOf(k, t, first);
              auto add =
                  scf::IfOp::create(nested, l, mine, /*withElseRegion=*/false);
              {
                OpBuilder::InsertionGuard guard(nested);
                nested.setInsertionPointToStart(add.thenBlock());
                Value grad = k.load(dy, {t, sh[1]});
                Value sum = k.add(k.load(table, {row, sh[1]}), grad);
                k.store(sum, table, {row, sh[1]});
              }
              scf::YieldOp::create(nested, l);
            });
        // The kernel report's count for a loop over data: a chunk's tokens
        // spread evenly over the slices.
        listed->setAttr(::triax::kExpectedTripsAttr,
                        k.builder().getI64IntegerAttr(
                            std::max<int64_t>(1, chunk / slices)));
      });
    });
    return finish(table);
  }

  /// Tokens per bucketing chunk: 64 chunks of gpt2's 16,384 tokens per
  /// slice, 2,752 bucketing iterations for its 43 slices.
  static constexpr int64_t kChunk = 256;
  int64_t gradThreads;
  const ParamIndex *params;
};

/// Rotary position embedding, in two nests. First the cosine and sine of
/// each (batch, token, pair j < d/2)'s angle, once for all the heads: the
/// frequency computed as transformers computes it, in f32, 1 /
/// theta^((2j) / d), the angle p f_j in f32. Then one thread per (batch,
/// token, head) writes the head's d features c in order (so each writes
/// only its own head's features, which the GPU lowering proves), pairing c
/// with c + d/2 (c < d/2) or c - d/2: out_c = x_c cos + s x_partner sin,
/// s = -1 for the first half and +1 for the second (the other way round for
/// `inverse`), the angle that of pair c mod d/2.
struct RopeLowering : OpConversionPattern<RopeOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(RopeOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    KernelBuilder k(rewriter, op.getLoc());
    RankedTensorType type = op.getType();
    const int64_t batch = type.getDimSize(0), seq = type.getDimSize(1);
    const int64_t heads = op.getHeads();
    const int64_t d = type.getDimSize(2) / heads, half = d / 2;
    const double theta = op.getTheta().convertToDouble();
    const double sign = op.getInverse() ? 1.0 : -1.0;
    Value x = rowView(adaptor.getInput()), pos = adaptor.getPositions();
    OpBuilder &b = k.builder();
    Location loc = k.getLoc();
    auto toF32 = [&](Value integer) {
      if (integer.getType().isIndex())
        integer = arith::IndexCastOp::create(b, loc, b.getI64Type(), integer);
      return arith::SIToFPOp::create(b, loc, b.getF32Type(), integer)
          .getResult();
    };
    auto table = MemRefType::get({batch, seq, half}, b.getF32Type());
    Value cosines = k.alloc(table), sines = k.alloc(table);
    k.parallel({batch, seq, half}, [&](KernelBuilder &k, ValueRange ivs) {
      Value p = toF32(k.load(pos, {ivs[0], ivs[1]}));
      Value twoJ = toF32(k.muli(ivs[2], k.index(2)));
      Value exponent = k.div(twoJ, k.f32(double(d)));
      Value freq = k.div(k.f32(1.0), k.pow(k.f32(theta), exponent));
      Value angle = k.mul(p, freq);
      k.store(k.cos(angle), cosines, ivs);
      k.store(k.sin(angle), sines, ivs);
    });
    Value out = k.alloc(type);
    k.parallel({batch, seq, heads}, [&](KernelBuilder &k, ValueRange ivs) {
      Value base = k.muli(ivs[2], k.index(d));
      k.loop({d}, [&](KernelBuilder &k, ValueRange c) {
        Value first = k.cmpi(arith::CmpIPredicate::ult, c[0], k.index(half));
        Value pair = arith::SelectOp::create(b, loc, first, c[0],
                                             k.subi(c[0], k.index(half)));
        Value partner = arith::SelectOp::create(
            b, loc, first, k.addi(c[0], k.index(half)), pair);
        Value cs = k.load(cosines, {ivs[0], ivs[1], pair});
        Value sn = k.load(sines, {ivs[0], ivs[1], pair});
        Value s = k.select(first, k.f32(sign), k.f32(-sign));
        Value xc = k.load(x, {ivs[0], ivs[1], k.addi(base, c[0])});
        Value xp = k.load(x, {ivs[0], ivs[1], k.addi(base, partner)});
        Value y = k.add(k.mul(xc, cs), k.mul(s, k.mul(xp, sn)));
        k.store(y, out, {ivs[0], ivs[1], k.addi(base, c[0])});
      });
    });
    rewriter.replaceOp(op, out);
    return success();
  }
};

} // namespace

void mlir::triax::kernels::populateEmbeddingPatterns(
    TypeConverter &converter, RewritePatternSet &patterns,
    int64_t embeddingGradThreads, const ParamIndex *params) {
  patterns.add<EmbeddingLowering, RopeLowering>(converter,
                                                patterns.getContext());
  patterns.add<EmbeddingGradLowering>(converter, patterns.getContext(),
                                      embeddingGradThreads, params);
}
