//===- AttentionBlocks.cpp - the CPU flash kernels, 8 keys at a time ------===//
//
// convert-triax-to-kernels{key-blocks} (the CPU pipeline sets it, for a head
// dimension that is a multiple of 8): the kernels of lowerFlash and
// lowerFlashGrad (AttentionKernels.cpp) with the same parallel loops over
// rows and the same algorithm, but the sequential loop inside a row takes
// the keys (the queries, in the dK/dV kernel) 8 at a time:
//
//   - a row of d features is held as d/16 vector<16xf32> (one AVX-512
//     register each) where d is a multiple of 16, else d/8 vector<8xf32>;
//   - the block's 8 scores are one vector<8xf32>: the row on the fixed side
//     (the query row; the key row in the dK/dV kernel) is held in
//     registers, each of the 8 other rows' products with it accumulated by
//     fused multiply-adds (16 lanes folded to 8), and the 8 sums made one
//     vector by a single tree of shuffles and adds (blockDots);
//   - the block's lanes read rows start..start + 7, start = min(first,
//     S - 8), so that every row read is one of the sequence; a single
//     vector compare finds the lanes that hold a position of the block
//     (first <= start + u <= the causal limit), and the others are -inf
//     and weigh 0;
//   - one vector exp gives the block's 8 probabilities (triax-expand-math
//     makes it arithmetic on 8 lanes; per key it was one libm call);
//   - the online softmax rescales once per block, by the block's max:
//     m' = max(m, max_u s_u), alpha = exp(m - m'), p = exp(s - m'),
//     l' = l alpha + sum_u p_u, a' = a alpha + sum_u p_u v_u;
//   - a row's accumulators (the output row, dQ, or dK and dV) are vector
//     values carried by the loop, in registers, updated by fused
//     multiply-adds, where the per-key form loads and stores an f32 buffer
//     row for every key; the dK/dV kernel reads the block's 8 log-sum-exps
//     and D values with one vector load each.
//
// Everything inside a block is unrolled in the IR (8 rows of d/16 or d/8
// vectors): the kernels are about 8 times the per-key ones' size. Every
// layer's copy is built, so the CPU pipeline keeps one of each identical
// kernel before it canonicalizes (docs/performance.md, "Compile time").
// Rows are loaded and stored a vector at a time (vector.load,
// vector.store); the GPU mapping's race analysis indexes both
// (kernel_check.py runs these kernels on the GPU too).
//
// The sums over keys run in the same order as the per-key form's, but with
// fused multiply-adds, the running max moving by blocks and Triax's exp,
// so the results differ from it in the last bits. They are fixed by S and
// d alone (tp ranks compute what one rank does) and the same on every run.
//
//===----------------------------------------------------------------------===//

#include "AttentionKernels.h"

#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <cmath>

using namespace mlir;
using namespace mlir::triax::kernels;

namespace {

/// A row of d features as vectors of rowLanes(dims) features, element c
/// the features c w .. c w + w - 1.
using Row = SmallVector<Value, 16>;

VectorType lanesType(KernelBuilder &k) {
  return VectorType::get({kDotLanes}, k.builder().getF32Type());
}

Value splat(KernelBuilder &k, Value scalar) {
  return vector::BroadcastOp::create(k.builder(), k.getLoc(), lanesType(k),
                                     scalar);
}

Value lane(KernelBuilder &k, Value v, int64_t u) {
  return vector::ExtractOp::create(k.builder(), k.getLoc(), v, u);
}

/// One vector of the 8 scalars produced for lanes 0..7.
Value gather(KernelBuilder &k, function_ref<Value(int64_t)> scalar) {
  SmallVector<Value, 8> lanes;
  for (int64_t u = 0; u < kDotLanes; ++u)
    lanes.push_back(scalar(u));
  return vector::FromElementsOp::create(k.builder(), k.getLoc(), lanesType(k),
                                        lanes);
}

Value sumLanes(KernelBuilder &k, Value v) {
  return halvingSum(
      k, v, [](KernelBuilder &k, Value x, Value y) { return k.add(x, y); });
}

Value maxLanes(KernelBuilder &k, Value v) {
  return halvingSum(
      k, v, [](KernelBuilder &k, Value x, Value y) { return k.max(x, y); });
}

/// The features a row's vectors hold: 16 (one AVX-512 register) where d
/// is a multiple of 16, else 8.
int64_t rowLanes(const AttentionDims &dims) {
  return dims.headDim % 16 == 0 ? 16 : kDotLanes;
}

int64_t rowVectors(const AttentionDims &dims) {
  return dims.headDim / rowLanes(dims);
}

/// `scalar` in every lane of a vector of `like`'s type.
Value splatAs(KernelBuilder &k, Value scalar, Value like) {
  return vector::BroadcastOp::create(k.builder(), k.getLoc(), like.getType(),
                                     scalar);
}

Row zeroRow(KernelBuilder &k, const AttentionDims &dims) {
  OpBuilder &b = k.builder();
  auto type = VectorType::get({rowLanes(dims)}, b.getF32Type());
  Value zero = arith::ConstantOp::create(b, k.getLoc(), b.getZeroAttr(type));
  return Row(rowVectors(dims), zero);
}

/// A row vector's lanes folded to 8: with 16, lane l plus lane l + 8.
Value foldTo8(KernelBuilder &k, Value v) {
  if (cast<VectorType>(v.getType()).getNumElements() == kDotLanes)
    return v;
  return halveLanes(
      k, v, [](KernelBuilder &k, Value x, Value y) { return k.add(x, y); });
}

/// Row (b, row, head) of a rows view.
Row loadRow(KernelBuilder &k, Value rows2d, Value b, Value row, Value head,
            const AttentionDims &dims) {
  Row out;
  for (int64_t c = 0; c < rowVectors(dims); ++c)
    out.push_back(loadLanes(k, rows2d, b, row, head,
                            k.index(c * rowLanes(dims)), dims, rowLanes(dims)));
  return out;
}

/// Stores `row` as row (b, i, h) of a rows view, one vector.store per
/// vector (bf16 rounded as KernelBuilder::store does).
void storeRow(KernelBuilder &k, const Row &row, Value rows2d, Value b, Value i,
              Value h, const AttentionDims &dims) {
  for (auto [c, v] : llvm::enumerate(row))
    storeLanes(k, v, rows2d, b, i, h, k.index(c * rowLanes(dims)), dims);
}

/// row * x, feature by feature.
Row scaled(KernelBuilder &k, const Row &row, Value x) {
  Value xs = splatAs(k, x, row.front());
  Row out;
  for (Value v : row)
    out.push_back(k.mul(v, xs));
  return out;
}

/// x * y + acc, one rounding (vector.fma).
Value fma(KernelBuilder &k, Value x, Value y, Value acc) {
  return vector::FMAOp::create(k.builder(), k.getLoc(), x, y, acc);
}

/// acc + x * row, feature by feature (fused).
Row plusScaled(KernelBuilder &k, const Row &acc, Value x, const Row &row) {
  Value xs = splatAs(k, x, row.front());
  Row out;
  for (auto [a, r] : llvm::zip_equal(acc, row))
    out.push_back(fma(k, xs, r, a));
  return out;
}

/// The lane sums of 8 vectors as one: lane u of the result is the sum of
/// the lanes of sums[u], added in halvingSum's order ((0+4) + (2+6)) +
/// ((1+5) + (3+7)). Three levels of shuffles and adds (7 adds in all), where
/// 8 separate lane sums take 24 adds and 8 inserts.
Value transposedSums(KernelBuilder &k, ArrayRef<Value> sums) {
  OpBuilder &b = k.builder();
  Location loc = k.getLoc();
  // Level by level: pairs (x, y) of the previous level, the lanes of
  // `first` and `second` selected from the 16 of x then y.
  auto level = [&](ArrayRef<Value> in, ArrayRef<int64_t> first,
                   ArrayRef<int64_t> second) {
    SmallVector<Value, 4> out;
    for (size_t n = 0; n < in.size(); n += 2) {
      Value lo = vector::ShuffleOp::create(b, loc, in[n], in[n + 1], first);
      Value hi = vector::ShuffleOp::create(b, loc, in[n], in[n + 1], second);
      out.push_back(k.add(lo, hi));
    }
    return out;
  };
  // l + (l+4) of x in lanes 0-3, of y in lanes 4-7.
  SmallVector<Value, 4> fours =
      level(sums, {0, 1, 2, 3, 8, 9, 10, 11}, {4, 5, 6, 7, 12, 13, 14, 15});
  // (0+4) + (2+6) and (1+5) + (3+7) of each of four vectors, in order.
  SmallVector<Value, 4> twos =
      level(fours, {0, 1, 4, 5, 8, 9, 12, 13}, {2, 3, 6, 7, 10, 11, 14, 15});
  return level(twos, {0, 2, 4, 6, 8, 10, 12, 14},
               {1, 3, 5, 7, 9, 11, 13, 15})[0];
}

/// The 8 dot products of `fixed` (d features as a Row) with rows pos_0..7
/// of head `head` of `rows2d`, as one vector: lane u's products of features
/// c..c+7 in lane order, accumulated (fused) from feature 0 up, then
/// summed by transposedSums.
Value blockDots(KernelBuilder &k, const Row &fixed, Value rows2d, Value b,
                ArrayRef<Value> pos, Value head, const AttentionDims &dims) {
  SmallVector<Value, 8> sums;
  for (int64_t u = 0; u < kDotLanes; ++u) {
    Row other = loadRow(k, rows2d, b, pos[u], head, dims);
    Value acc = k.mul(fixed[0], other[0]);
    for (int64_t c = 1; c < rowVectors(dims); ++c)
      acc = fma(k, fixed[c], other[c], acc);
    sums.push_back(foldTo8(k, acc));
  }
  return transposedSums(k, sums);
}

/// A block of up to 8 positions first..min(first + 7, last): the rows its
/// 8 lanes read, start + u with start = min(first, S - 8), so that every
/// lane reads a row of the sequence without a clamp of its own (with
/// S < 8, start = 0 and each row clamped to S - 1); and which lanes hold a
/// position of the block, first <= start + u <= last, as one vector
/// compare.
struct KeyBlock {
  Value start;
  SmallVector<Value, 8> pos;
  Value inside; // vector<8xi1>
};

KeyBlock blockAt(KernelBuilder &k, Value first, Value last,
                 const AttentionDims &dims) {
  OpBuilder &b = k.builder();
  Location loc = k.getLoc();
  bool shortSeq = dims.seq < kDotLanes;
  KeyBlock blk;
  blk.start = shortSeq ? k.index(0)
                       : arith::MinUIOp::create(b, loc, first,
                                                k.index(dims.seq - kDotLanes));
  for (int64_t u = 0; u < kDotLanes; ++u) {
    Value p = k.addi(blk.start, k.index(u));
    blk.pos.push_back(
        shortSeq ? arith::MinUIOp::create(b, loc, p, k.index(dims.seq - 1))
                 : p);
  }
  auto indices = VectorType::get({kDotLanes}, b.getIndexType());
  auto spread = [&](Value x) {
    return vector::BroadcastOp::create(b, loc, indices, x);
  };
  // (One op per statement: the IR order must not depend on the compiler's
  // argument evaluation order.)
  SmallVector<int64_t> iota = llvm::to_vector(llvm::seq<int64_t>(0, kDotLanes));
  Value offsets =
      arith::ConstantOp::create(b, loc, indices, b.getIndexVectorAttr(iota));
  Value lanes = k.addi(spread(blk.start), offsets);
  Value after = k.cmpi(arith::CmpIPredicate::uge, lanes, spread(first));
  Value within = k.cmpi(arith::CmpIPredicate::ule, lanes, spread(last));
  blk.inside = arith::AndIOp::create(b, loc, after, within);
  return blk;
}

/// scale * dots, -inf in the lanes outside the block.
Value maskedScores(KernelBuilder &k, const KeyBlock &blk, Value dots,
                   double scale) {
  Value scores = k.mul(splat(k, k.f32(scale)), dots);
  return k.select(blk.inside, scores, splat(k, k.f32(-INFINITY)));
}

/// The block's 8 elements of a [B, H, S] f32 statistic (lane u the element
/// at pos[u]): one vector.load where the rows are consecutive (S >= 8).
Value blockStat(KernelBuilder &k, Value stat, Value b, Value h,
                const KeyBlock &blk, const AttentionDims &dims) {
  if (dims.seq >= kDotLanes)
    return vector::LoadOp::create(k.builder(), k.getLoc(), lanesType(k), stat,
                                  ValueRange{b, h, blk.start});
  return gather(k, [&](int64_t u) { return k.load(stat, {b, h, blk.pos[u]}); });
}

/// The number of blocks of 8 in `count` positions.
Value blocksOf(KernelBuilder &k, Value count) {
  return k.divui(k.addi(count, k.index(kDotLanes - 1)), k.index(kDotLanes));
}

/// The online softmax of query row (b, h, i) over its visible keys 0..i,
/// 8 keys a block (see the file comment): the running max m, the sum l and
/// the accumulator a (a / l is the output row). The first block starts
/// from m = -inf, l = 0, a = 0 (alpha = exp(-inf) = 0).
struct Online {
  Value m, l;
  Row acc;
};

Online onlineRowBlocks(KernelBuilder &k, const AttentionBuffers &buf, Value b,
                       Value h, Value i, const AttentionDims &dims) {
  Value g = kvHeadOf(k, h, dims);
  Row q = loadRow(k, buf.q, b, i, h, dims);
  SmallVector<Value> init = {k.f32(-INFINITY), k.f32(0.0)};
  llvm::append_range(init, zeroRow(k, dims));
  Value blocks = blocksOf(k, k.addi(i, k.index(1)));
  SmallVector<Value> state = k.reduce(
      k.index(0), blocks, init,
      [&](KernelBuilder &k, Value j, ValueRange state) {
        Value m = state[0], l = state[1];
        Row acc(state.drop_front(2));
        KeyBlock blk = blockAt(k, k.muli(j, k.index(kDotLanes)), i, dims);
        Value s = maskedScores(
            k, blk, blockDots(k, q, buf.key, b, blk.pos, g, dims), dims.scale);
        Value next = k.max(m, maxLanes(k, s));
        Value alpha = k.exp(k.sub(m, next));
        Value p = k.exp(k.sub(s, splat(k, next)));
        Value sum = k.add(k.mul(l, alpha), sumLanes(k, p));
        Row a = scaled(k, acc, alpha);
        for (int64_t u = 0; u < kDotLanes; ++u)
          a = plusScaled(k, a, lane(k, p, u),
                         loadRow(k, buf.v, b, blk.pos[u], g, dims));
        SmallVector<Value> out = {next, sum};
        llvm::append_range(out, a);
        return out;
      });
  return {state[0], state[1], Row(ArrayRef<Value>(state).drop_front(2))};
}

/// a / l, feature by feature.
Row normalized(KernelBuilder &k, const Online &row) {
  Value l = splatAs(k, row.l, row.acc.front());
  Row out;
  for (Value a : row.acc)
    out.push_back(k.div(a, l));
  return out;
}

} // namespace

void mlir::triax::kernels::flashBlocks(KernelBuilder &k,
                                       const AttentionBuffers &buf,
                                       const AttentionDims &dims) {
  k.parallel({dims.batch, dims.heads, dims.seq},
             [&](KernelBuilder &k, ValueRange iv) {
               Value b = iv[0], h = iv[1], i = iv[2];
               Online row = onlineRowBlocks(k, buf, b, h, i, dims);
               storeRow(k, normalized(k, row), buf.out, b, i, h, dims);
               if (buf.lse)
                 k.store(k.add(row.m, k.log(row.l)), buf.lse, {b, h, i});
             });
}

/// The backward's two kernels, as lowerFlashGrad's: (1) per query row,
/// L_i and O_i saved by the forward (else its online softmax again,
/// L_i = m + log l), D_i = dO_i . O_i, then
/// over the key blocks P = exp(S - L_i), dP = dO_i . v_t,
/// dS = P (dP - D_i) and dQ_i = scale sum_t dS_it k_t; (2) per key row t,
/// over the query blocks of each query head of its group in order,
/// dV_t = sum_i P_it dO_i and dK_t = scale sum_i dS_it q_i.
void mlir::triax::kernels::flashBlocksGrad(KernelBuilder &k,
                                           const AttentionBuffers &buf,
                                           const AttentionDims &dims) {
  Type f32 = k.builder().getF32Type();
  int64_t B = dims.batch, H = dims.heads, S = dims.seq;
  Value lse = buf.lse ? buf.lse : k.alloc(MemRefType::get({B, H, S}, f32));
  Value delta = k.alloc(MemRefType::get({B, H, S}, f32));
  Value scale = k.f32(dims.scale);

  k.parallel({B, H, S}, [&](KernelBuilder &k, ValueRange iv) {
    Value b = iv[0], h = iv[1], i = iv[2];
    Value g = kvHeadOf(k, h, dims);
    Value L;
    Row out;
    if (buf.lse) {
      L = k.load(lse, {b, h, i});
      out = loadRow(k, buf.savedOut, b, i, h, dims);
    } else {
      Online row = onlineRowBlocks(k, buf, b, h, i, dims);
      L = k.add(row.m, k.log(row.l));
      out = normalized(k, row);
      k.store(L, lse, {b, h, i});
    }
    Row dout = loadRow(k, buf.dout, b, i, h, dims);
    Row q = loadRow(k, buf.q, b, i, h, dims);
    Value products = k.mul(dout[0], out[0]);
    for (int64_t c = 1; c < rowVectors(dims); ++c)
      products = k.add(products, k.mul(dout[c], out[c]));
    Value D = sumLanes(k, foldTo8(k, products));
    k.store(D, delta, {b, h, i});
    Value blocks = blocksOf(k, k.addi(i, k.index(1)));
    Row zeros = zeroRow(k, dims);
    SmallVector<Value> init(zeros.begin(), zeros.end());
    Row dq(k.reduce(
        k.index(0), blocks, init,
        [&](KernelBuilder &k, Value j, ValueRange state) {
          KeyBlock blk = blockAt(k, k.muli(j, k.index(kDotLanes)), i, dims);
          Value s = maskedScores(k, blk,
                                 blockDots(k, q, buf.key, b, blk.pos, g, dims),
                                 dims.scale);
          Value p = k.exp(k.sub(s, splat(k, L)));
          Value dp = blockDots(k, dout, buf.v, b, blk.pos, g, dims);
          Value ds = k.mul(p, k.sub(dp, splat(k, D)));
          Row acc(state);
          for (int64_t u = 0; u < kDotLanes; ++u)
            acc = plusScaled(k, acc, lane(k, ds, u),
                             loadRow(k, buf.key, b, blk.pos[u], g, dims));
          return SmallVector<Value>(acc.begin(), acc.end());
        }));
    storeRow(k, scaled(k, dq, scale), buf.dq, b, i, h, dims);
  });

  int64_t n = rowVectors(dims);
  k.parallel({B, dims.kvHeads, S}, [&](KernelBuilder &k, ValueRange iv) {
    Value b = iv[0], g = iv[1], t = iv[2];
    Row key = loadRow(k, buf.key, b, t, g, dims);
    Row v = loadRow(k, buf.v, b, t, g, dims);
    Row zeros = zeroRow(k, dims);
    SmallVector<Value> acc(zeros.begin(), zeros.end()); // dK, then dV
    llvm::append_range(acc, zeros);
    Value blocks = blocksOf(k, k.subi(k.index(S), t));
    Value last = k.index(S - 1);
    // The query heads of kv head g, in order: g*group + 0, 1, ...
    for (int64_t member = 0; member < dims.group(); ++member) {
      Value h = queryHeadOf(k, g, member, dims);
      acc = k.reduce(
          k.index(0), blocks, acc,
          [&](KernelBuilder &k, Value j, ValueRange state) {
            KeyBlock blk = blockAt(k, k.addi(t, k.muli(j, k.index(kDotLanes))),
                                   last, dims);
            Value s = maskedScores(
                k, blk, blockDots(k, key, buf.q, b, blk.pos, h, dims),
                dims.scale);
            Value L = blockStat(k, lse, b, h, blk, dims);
            Value D = blockStat(k, delta, b, h, blk, dims);
            Value p = k.exp(k.sub(s, L));
            Value dp = blockDots(k, v, buf.dout, b, blk.pos, h, dims);
            Value ds = k.mul(p, k.sub(dp, D));
            Row dk(state.take_front(n)), dv(state.drop_front(n));
            for (int64_t u = 0; u < kDotLanes; ++u) {
              dv = plusScaled(k, dv, lane(k, p, u),
                              loadRow(k, buf.dout, b, blk.pos[u], h, dims));
              dk = plusScaled(k, dk, lane(k, ds, u),
                              loadRow(k, buf.q, b, blk.pos[u], h, dims));
            }
            SmallVector<Value> out(dk.begin(), dk.end());
            llvm::append_range(out, dv);
            return out;
          });
    }
    ArrayRef<Value> all(acc);
    storeRow(k, scaled(k, Row(all.take_front(n)), scale), buf.dk, b, t, g,
             dims);
    storeRow(k, Row(all.drop_front(n)), buf.dv, b, t, g, dims);
  });
}
