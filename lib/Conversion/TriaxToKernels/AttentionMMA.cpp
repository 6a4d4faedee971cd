//===- AttentionMMA.cpp - FlashAttention-2 on NVIDIA tensor cores ---------===//
//
// convert-triax-to-kernels{attention=flash-mma} (the CUDA pipeline's
// default for bf16 operands): causal attention and its gradient as warps
// of mma.sync.m16n8k16 (bf16 x bf16 -> f32) with the online softmax in
// registers, the algorithm of FlashAttention-2. Each kernel is emitted as
// a gpu.launch of 128-thread blocks; warp w of the grid owns one tile of
// 16 rows and runs independently (no shared memory, no barriers).
//
// The fragments (PTX ISA, "Matrix Fragments for mma.m16n8k16"), with
// lane = 4 g + t (g = lane / 4, t = lane % 4):
//   A, 16 x 16, row-major:  registers {a0,a1} (row g,   cols 2t, 2t+1),
//                           {a2,a3} (row g+8, cols 2t, 2t+1),
//                           {a4,a5} (row g,   cols 2t+8, 2t+9),
//                           {a6,a7} (row g+8, cols 2t+8, 2t+9);
//   B, 16 x 8:              {b0,b1} (rows 2t, 2t+1, col g),
//                           {b2,b3} (rows 2t+8, 2t+9, col g);
//   C, 16 x 8, f32:         c0, c1 (row g, cols 2t, 2t+1),
//                           c2, c3 (row g+8, cols 2t, 2t+1);
// two bf16 per 32-bit register, the lower index in the lower half. Two C
// tiles side by side (columns 0-7 and 8-15) hold exactly the elements of
// an A fragment of the same 16 x 16 block: the probabilities P (and dS)
// computed in the accumulators of S = Q K^T are the A operand of P V with
// no data movement (packA). A lane's rows are g and g + 8; a row's 16
// columns are spread over the 4 lanes of its group g, so row reductions
// are two xor-shuffles (offsets 1 and 2).
//
// Forward (flashMMA), warp over (b, h, query tile qt), q0 = 16 qt:
//   for key tiles kt = 0..qt (causal: later tiles are skipped, the
//   diagonal tile masked):  S = scale Q K_kt^T  (2 x d/16 MMAs),
//   m' = max(m, rowmax S), P = exp(S - m'), l = l exp(m - m') + rowsum P,
//   O = O exp(m - m') + P V_kt  (d/8 MMAs);  then out = O / l.
// Backward (flashMMAGrad):
//  1. warp over (b, h, qt): the forward's loop again (m, l, O), the row's
//     log-sum-exp L = m + log l and D = dO . O (the softmax backward's
//     rowsum(dP * P)) stored for kernel 2; then for kt = 0..qt:
//     P = exp(S - L), dP = dO V^T, dS = P (dP - D), dQ += dS K.
//  2. warp over (b, kv head, key tile kt): for the query heads of its
//     group in order and query tiles qt = kt..S/16-1: S^T = K Q^T,
//     P^T = exp(S^T - L), dP^T = V dO^T, dS^T = P^T (dP^T - D),
//     dV += P^T dO, dK += dS^T Q.
// Every warp writes only its own rows: deterministic, no atomics. P and
// dS enter the second products rounded to bf16 (as in FlashAttention-2);
// the sums, the softmax statistics and the accumulators are f32.
//
// Operands come straight from global memory (L1/L2): the kernel report
// counts each buffer once, and staging K/V tiles in shared memory for the
// warps of a block is left for when the kernel has run on a GPU.
//
//===----------------------------------------------------------------------===//

#include "AttentionKernels.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

#include <array>
#include <limits>

using namespace mlir;
using namespace mlir::triax::kernels;

namespace {

/// Rows per warp tile, and keys (queries) per step: the MMA's M and K.
constexpr int64_t kTile = 16;
constexpr int64_t kWarpSize = 32;
constexpr int64_t kWarpsPerBlock = 4;

/// An m16n8 f32 accumulator: c0..c3 of this lane.
using Acc = std::array<Value, 4>;
/// A 16 x 16 bf16 A operand: four 32-bit registers of two bf16 each.
using FragA = std::array<Value, 4>;
/// A 16 x 8 bf16 B operand: two registers.
using FragB = std::array<Value, 2>;

/// The [S, d] matrix of head h of batch index b in a rows view
/// [B*S, heads*d]: element (r, c) is rows2d[b*S + r, h*d + c].
struct HeadMatrix {
  Value rows2d, b, h;
};

/// The code one lane of a warp runs: fragment loads, MMAs, row reductions.
class Lane {
public:
  Lane(KernelBuilder &k, Value lane, const AttentionDims &dims)
      : k(k), dims(dims) {
    g = k.divui(lane, k.index(4));
    t = arith::RemUIOp::create(k.builder(), k.getLoc(), lane, k.index(4));
  }

  KernelBuilder &k;
  const AttentionDims &dims;
  /// The lane's group (its rows g and g + 8) and position in the group.
  Value g, t;

  /// Element (r, c) of `m` in its storage type.
  Value element(const HeadMatrix &m, Value r, Value c) {
    Value row = k.addi(k.muli(m.b, k.index(dims.seq)), r);
    Value col = k.addi(k.muli(m.h, k.index(dims.headDim)), c);
    return memref::LoadOp::create(k.builder(), k.getLoc(), m.rows2d,
                                  ValueRange{row, col});
  }
  /// Element (r, c) of `m` as f32.
  Value elementF32(const HeadMatrix &m, Value r, Value c) {
    Value v = element(m, r, c);
    if (v.getType().isF32())
      return v;
    return arith::ExtFOp::create(k.builder(), k.getLoc(),
                                 k.builder().getF32Type(), v);
  }

  /// The bf16 bits of `x` (f32, rounded to nearest even, or bf16) in the
  /// low half of an i32.
  Value bits(Value x) {
    OpBuilder &b = k.builder();
    Location loc = k.getLoc();
    if (x.getType().isF32())
      x = arith::TruncFOp::create(b, loc, b.getBF16Type(), x);
    Value i16 = arith::BitcastOp::create(b, loc, b.getI16Type(), x);
    return arith::ExtUIOp::create(b, loc, b.getI32Type(), i16);
  }
  /// Two bf16 in one register, `lo` in the lower half.
  Value pack(Value lo, Value hi) {
    OpBuilder &b = k.builder();
    Location loc = k.getLoc();
    Value high = arith::ShLIOp::create(b, loc, bits(hi), k.i32(16));
    return arith::OrIOp::create(b, loc, bits(lo), high);
  }

  Value plus(Value x, int64_t c) { return k.addi(x, k.index(c)); }

  /// The A fragment of the 16 x 16 block of `m` at (r0, c0).
  FragA loadA(const HeadMatrix &m, Value r0, Value c0) {
    FragA a;
    for (int reg = 0; reg < 4; ++reg) {
      Value r = k.addi(plus(r0, (reg & 1) ? 8 : 0), g);
      Value c = k.addi(plus(c0, (reg & 2) ? 8 : 0), k.muli(t, k.index(2)));
      a[reg] = pack(element(m, r, c), element(m, r, plus(c, 1)));
    }
    return a;
  }
  /// The B fragment B[kk][n] = m[k0 + kk][n0 + n], or with `transposed`
  /// m[n0 + n][k0 + kk]: lane (g, t) holds kk = 2t, 2t+1 (register 0) and
  /// 2t+8, 2t+9 (register 1) of column n = g; transposed, each register is
  /// two consecutive elements of a row of m.
  FragB loadB(const HeadMatrix &m, Value k0, Value n0, bool transposed) {
    FragB f;
    Value n = k.addi(n0, g);
    for (int reg = 0; reg < 2; ++reg) {
      Value kk = k.addi(plus(k0, reg ? 8 : 0), k.muli(t, k.index(2)));
      f[reg] = transposed ? pack(element(m, n, kk), element(m, n, plus(kk, 1)))
                          : pack(element(m, kk, n), element(m, plus(kk, 1), n));
    }
    return f;
  }
  FragB loadB(const HeadMatrix &m, Value k0, Value n0) {
    return loadB(m, k0, n0, /*transposed=*/false);
  }
  /// B = m^T over rows n0.. and columns k0.. of m.
  FragB loadBTransposed(const HeadMatrix &m, Value n0, Value k0) {
    return loadB(m, k0, n0, /*transposed=*/true);
  }

  /// c + a b on the tensor cores (mma.sync.aligned.m16n8k16.row.col,
  /// bf16 inputs, f32 accumulation).
  Acc mma(const FragA &a, const FragB &b, const Acc &c) {
    OpBuilder &builder = k.builder();
    Location loc = k.getLoc();
    Type f32 = builder.getF32Type();
    auto result = LLVM::LLVMStructType::getLiteral(builder.getContext(),
                                                   {f32, f32, f32, f32});
    auto op = NVVM::MmaOp::create(
        builder, loc, result, a, b, c, {16, 8, 16}, std::nullopt, std::nullopt,
        std::array{NVVM::MMATypes::bf16, NVVM::MMATypes::bf16},
        std::array{NVVM::MMALayout::row, NVVM::MMALayout::col});
    Acc d;
    for (int64_t e = 0; e < 4; ++e)
      d[e] = LLVM::ExtractValueOp::create(builder, loc, op, e);
    return d;
  }
  Acc zero() {
    Value z = k.f32(0.0);
    return {z, z, z, z};
  }
  /// The 16 x 8 tile n (of two) of a 16 x 16 product a b over the d
  /// features: sum over the d/16 feature blocks of a[kk] times the B
  /// fragment `b(kk)`.
  Acc product(ArrayRef<FragA> a, function_ref<FragB(int64_t kk)> b) {
    Acc acc = zero();
    for (int64_t kk = 0; kk < int64_t(a.size()); ++kk)
      acc = mma(a[kk], b(kk), acc);
    return acc;
  }

  /// a m^T over the 16 rows of m at r0 (the features summed): the two
  /// 16 x 8 tiles of a 16 x 16 block (scores, or dP against dO).
  std::array<Acc, 2> timesTransposed(ArrayRef<FragA> a, const HeadMatrix &m,
                                     Value r0) {
    std::array<Acc, 2> out;
    for (int64_t n = 0; n < 2; ++n)
      out[n] = product(a, [&](int64_t kk) {
        return loadBTransposed(m, plus(r0, 8 * n), k.index(kTile * kk));
      });
    return out;
  }

  /// The A fragment of the 16 x 16 block whose columns 0-7 are the
  /// accumulator `lo` and 8-15 `hi`, rounded to bf16.
  FragA packA(const Acc &lo, const Acc &hi) {
    return {pack(lo[0], lo[1]), pack(lo[2], lo[3]), pack(hi[0], hi[1]),
            pack(hi[2], hi[3])};
  }

  /// `x` combined over the 4 lanes of the group (one row's 16 columns).
  Value groupReduce(Value x, function_ref<Value(Value, Value)> combine) {
    for (int32_t offset : {1, 2}) {
      auto shuffle =
          gpu::ShuffleOp::create(k.builder(), k.getLoc(), x, offset,
                                 int32_t(kWarpSize), gpu::ShuffleMode::XOR);
      x = combine(x, shuffle.getShuffleResult());
    }
    return x;
  }
  Value groupSum(Value x) {
    return groupReduce(x, [&](Value a, Value b) { return k.add(a, b); });
  }

  /// Row (0: g, 1: g + 8) of accumulator element e, plus r0.
  Value row(Value r0, int64_t e) { return k.addi(plus(r0, e >= 2 ? 8 : 0), g); }
  /// Column of accumulator element e of the tile at column n0.
  Value col(Value n0, int64_t e) {
    return k.addi(plus(n0, e & 1), k.muli(t, k.index(2)));
  }
};

/// Emits a launch of `warps` warps, 4 per 128-thread block, and `body` for
/// each warp w < warps with its lane (a guard uniform over the warp: the
/// MMAs need all 32 lanes).
void launchWarps(KernelBuilder &k, int64_t warps,
                 function_ref<void(KernelBuilder &, Value, Value)> body) {
  OpBuilder &b = k.builder();
  Location loc = k.getLoc();
  int64_t threads = kWarpSize * kWarpsPerBlock;
  Value block = k.index(threads);
  Value grid = k.index((warps + kWarpsPerBlock - 1) / kWarpsPerBlock);
  Value one = k.index(1);
  auto launch = gpu::LaunchOp::create(b, loc, grid, one, one, block, one, one);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(&launch.getBody().front());
  // The linear thread id, as triax-map-loops-to-gpu writes it (the kernel
  // report recognizes the form).
  Value id = arith::AddIOp::create(
      b, loc, arith::MulIOp::create(b, loc, launch.getBlockIds().x, block),
      launch.getThreadIds().x);
  Value warp = k.divui(id, k.index(kWarpSize));
  Value lane = arith::RemUIOp::create(b, loc, id, k.index(kWarpSize));
  // (warp < warps, as a bound on the id: the kernel report's form of a
  // guard.)
  Value inRange =
      k.cmpi(arith::CmpIPredicate::ult, id, k.index(warps * kWarpSize));
  auto inside = scf::IfOp::create(b, loc, inRange, /*withElseRegion=*/false);
  gpu::TerminatorOp::create(b, loc);
  b.setInsertionPoint(inside.thenBlock()->getTerminator());
  body(k, warp, lane);
}

/// Splits a warp index over (outer, inner) extents: the inner fastest.
std::pair<Value, Value> split(KernelBuilder &k, Value x, int64_t inner) {
  Value n = k.index(inner);
  return {k.divui(x, n), arith::RemUIOp::create(k.builder(), k.getLoc(), x, n)};
}

/// Flattens accumulators to loop-carried values and back.
SmallVector<Value> flatten(ArrayRef<Acc> accs) {
  SmallVector<Value> out;
  for (const Acc &a : accs)
    out.append(a.begin(), a.end());
  return out;
}
SmallVector<Acc> unflatten(ValueRange values) {
  SmallVector<Acc> out;
  for (size_t i = 0; i + 4 <= values.size(); i += 4)
    out.push_back({values[i], values[i + 1], values[i + 2], values[i + 3]});
  return out;
}

/// The running state of the online softmax of a warp's 16 rows: per lane,
/// the max m and partial sum l of its rows g and g + 8, and the output
/// accumulators (d/8 tiles of 16 x 8).
struct Online {
  Value m[2], l[2];
  SmallVector<Acc> o;
};

/// Scores of the 16 x 16 block (queries q0.., keys t0..) already computed
/// in the two accumulators `s`: scaled, and -inf past the diagonal.
void maskScores(Lane &w, std::array<Acc, 2> &s, Value q0, Value t0) {
  KernelBuilder &k = w.k;
  Value scale = k.f32(w.dims.scale);
  Value minusInf = k.f32(-std::numeric_limits<double>::infinity());
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t e = 0; e < 4; ++e) {
      Value key = w.col(w.plus(t0, 8 * n), e), query = w.row(q0, e);
      Value visible = k.cmpi(arith::CmpIPredicate::ule, key, query);
      s[n][e] = k.select(visible, k.mul(scale, s[n][e]), minusInf);
    }
}

/// The forward's loop over the key tiles 0..qt of the warp's query tile
/// (q0 = 16 qt) with the query fragments `qf`.
Online onlineTiles(Lane &w, ArrayRef<FragA> qf, const HeadMatrix &keys,
                   const HeadMatrix &values, Value q0, Value qt) {
  KernelBuilder &k = w.k;
  int64_t d = w.dims.headDim;
  Value minusInf = k.f32(-std::numeric_limits<double>::infinity());
  SmallVector<Value> init = {minusInf, minusInf, k.f32(0.0), k.f32(0.0)};
  SmallVector<Acc> o(d / 8, w.zero());
  init.append(flatten(o));
  SmallVector<Value> last = k.reduce(
      k.index(0), w.plus(qt, 1), init,
      [&](KernelBuilder &k, Value kt, ValueRange state) {
        Value t0 = k.muli(kt, k.index(kTile));
        std::array<Acc, 2> s = w.timesTransposed(qf, keys, t0);
        maskScores(w, s, q0, t0);
        SmallVector<Value> next(4);
        Value alpha[2];
        for (int64_t r = 0; r < 2; ++r) {
          int64_t e0 = 2 * r; // c0, c1 on row g; c2, c3 on row g + 8
          Value rowMax = k.max(k.max(s[0][e0], s[0][e0 + 1]),
                               k.max(s[1][e0], s[1][e0 + 1]));
          rowMax = w.groupReduce(rowMax,
                                 [&](Value a, Value b) { return k.max(a, b); });
          Value m = state[r], mNew = k.max(m, rowMax);
          alpha[r] = k.exp(k.sub(m, mNew));
          Value sum = state[2 + r];
          sum = k.mul(sum, alpha[r]);
          for (int64_t n = 0; n < 2; ++n)
            for (int64_t e = e0; e < e0 + 2; ++e) {
              s[n][e] = k.exp(k.sub(s[n][e], mNew)); // P; 0 where masked
              sum = k.add(sum, s[n][e]);
            }
          next[r] = mNew;
          next[2 + r] = sum;
        }
        FragA p = w.packA(s[0], s[1]);
        SmallVector<Acc> acc = unflatten(state.drop_front(4));
        for (int64_t j = 0; j < d / 8; ++j) {
          for (int64_t e = 0; e < 4; ++e)
            acc[j][e] = k.mul(acc[j][e], alpha[e >= 2]);
          acc[j] = w.mma(p, w.loadB(values, t0, k.index(8 * j)), acc[j]);
        }
        next.append(flatten(acc));
        return next;
      });
  Online out;
  out.m[0] = last[0];
  out.m[1] = last[1];
  out.l[0] = last[2];
  out.l[1] = last[3];
  out.o = unflatten(ValueRange(last).drop_front(4));
  return out;
}

/// The A fragments of the 16 rows at r0 of `m`, over all d features.
SmallVector<FragA> rowFragments(Lane &w, const HeadMatrix &m, Value r0) {
  SmallVector<FragA> f;
  for (int64_t kk = 0; kk < w.dims.headDim / kTile; ++kk)
    f.push_back(w.loadA(m, r0, w.k.index(kTile * kk)));
  return f;
}

/// Stores accumulator tiles `acc` (rows r0.., columns 8j..) times `scale`
/// (null: 1) per row into head matrix `m`, converted to its element type.
void storeRows(Lane &w, ArrayRef<Acc> acc, const HeadMatrix &m, Value r0,
               const std::array<Value, 2> &scale) {
  KernelBuilder &k = w.k;
  for (auto [j, tile] : llvm::enumerate(acc))
    for (int64_t e = 0; e < 4; ++e) {
      Value v = tile[e];
      if (Value s = scale[e >= 2])
        v = k.mul(v, s);
      Value r = w.row(r0, e), c = w.col(k.index(8 * j), e);
      Value row = k.addi(k.muli(m.b, k.index(w.dims.seq)), r);
      Value col = k.addi(k.muli(m.h, k.index(w.dims.headDim)), c);
      k.store(v, m.rows2d, {row, col});
    }
}

} // namespace

bool mlir::triax::kernels::flashMMAApplies(const AttentionDims &dims,
                                           Type operandType, std::string &why) {
  if (!operandType.isBF16())
    why = "the operands are not bf16";
  else if (dims.cpMembers != 1)
    why = "context parallelism's key positions are not the MMA kernels' yet";
  else if (dims.headDim % kTile != 0)
    why = "the head dimension " + std::to_string(dims.headDim) +
          " is not a multiple of 16";
  else if (dims.seq % kTile != 0)
    why = "the sequence length " + std::to_string(dims.seq) +
          " is not a multiple of 16";
  else
    why.clear();
  return why.empty();
}

void mlir::triax::kernels::flashMMA(KernelBuilder &k,
                                    const AttentionBuffers &buf,
                                    const AttentionDims &dims) {
  int64_t tiles = dims.seq / kTile;
  launchWarps(
      k, dims.batch * dims.heads * tiles,
      [&](KernelBuilder &k, Value warp, Value laneId) {
        auto [bh, qt] = split(k, warp, tiles);
        auto [b, h] = split(k, bh, dims.heads);
        Value g = kvHeadOf(k, h, dims);
        Lane w(k, laneId, dims);
        Value q0 = k.muli(qt, k.index(kTile));
        SmallVector<FragA> qf = rowFragments(w, {buf.q, b, h}, q0);
        Online st = onlineTiles(w, qf, {buf.key, b, g}, {buf.v, b, g}, q0, qt);
        std::array<Value, 2> inv;
        for (int64_t r = 0; r < 2; ++r)
          inv[r] = k.div(k.f32(1.0), w.groupSum(st.l[r]));
        storeRows(w, st.o, {buf.out, b, h}, q0, inv);
      });
}

void mlir::triax::kernels::flashMMAGrad(KernelBuilder &k,
                                        const AttentionBuffers &buf,
                                        const AttentionDims &dims) {
  Type f32 = k.builder().getF32Type();
  int64_t B = dims.batch, H = dims.heads, S = dims.seq, d = dims.headDim;
  int64_t tiles = S / kTile;
  // The rows' log-sum-exp and dO . O, from kernel 1 to kernel 2.
  Value lse = k.alloc(MemRefType::get({B, H, S}, f32));
  Value delta = k.alloc(MemRefType::get({B, H, S}, f32));

  // 1. dQ, L, D: a warp per 16 query rows.
  launchWarps(
      k, B * H * tiles, [&](KernelBuilder &k, Value warp, Value laneId) {
        auto [bh, qt] = split(k, warp, tiles);
        auto [b, h] = split(k, bh, H);
        Value g = kvHeadOf(k, h, dims);
        Lane w(k, laneId, dims);
        Value q0 = k.muli(qt, k.index(kTile));
        HeadMatrix queries{buf.q, b, h}, keys{buf.key, b, g},
            values{buf.v, b, g};
        HeadMatrix dout{buf.dout, b, h};
        SmallVector<FragA> qf = rowFragments(w, queries, q0);
        Online st = onlineTiles(w, qf, keys, values, q0, qt);
        Value L[2], D[2];
        for (int64_t r = 0; r < 2; ++r) {
          Value l = w.groupSum(st.l[r]);
          L[r] = k.add(st.m[r], k.log(l));
          Value inv = k.div(k.f32(1.0), l);
          // D = dO . O over the row: this lane's columns, then the group's.
          Value part = k.f32(0.0);
          for (auto [j, tile] : llvm::enumerate(st.o))
            for (int64_t e = 2 * r; e < 2 * r + 2; ++e) {
              Value o = k.mul(tile[e], inv);
              Value dO =
                  w.elementF32(dout, w.row(q0, e), w.col(k.index(8 * j), e));
              part = k.add(part, k.mul(dO, o));
            }
          D[r] = w.groupSum(part);
        }
        // The group's first lane writes its two rows' L and D.
        Value first = k.cmpi(arith::CmpIPredicate::eq, w.t, k.index(0));
        auto ifFirst = scf::IfOp::create(k.builder(), k.getLoc(), first,
                                         /*withElseRegion=*/false);
        {
          OpBuilder::InsertionGuard guard(k.builder());
          k.builder().setInsertionPoint(ifFirst.thenBlock()->getTerminator());
          for (int64_t r = 0; r < 2; ++r) {
            Value i = w.row(q0, 2 * r);
            k.store(L[r], lse, {b, h, i});
            k.store(D[r], delta, {b, h, i});
          }
        }
        SmallVector<FragA> dof = rowFragments(w, dout, q0);
        SmallVector<Acc> dq(d / 8, w.zero());
        SmallVector<Value> acc = k.reduce(
            k.index(0), w.plus(qt, 1), flatten(dq),
            [&](KernelBuilder &k, Value kt, ValueRange state) {
              Value t0 = k.muli(kt, k.index(kTile));
              std::array<Acc, 2> p = w.timesTransposed(qf, keys, t0);
              std::array<Acc, 2> ds = w.timesTransposed(dof, values, t0);
              maskScores(w, p, q0, t0);
              for (int64_t n = 0; n < 2; ++n)
                for (int64_t e = 0; e < 4; ++e) {
                  p[n][e] = k.exp(k.sub(p[n][e], L[e >= 2])); // 0 where masked
                  ds[n][e] = k.mul(p[n][e], k.sub(ds[n][e], D[e >= 2]));
                }
              FragA dsf = w.packA(ds[0], ds[1]);
              SmallVector<Acc> next = unflatten(state);
              for (int64_t j = 0; j < d / 8; ++j)
                next[j] =
                    w.mma(dsf, w.loadB(keys, t0, k.index(8 * j)), next[j]);
              return flatten(next);
            });
        Value scale = k.f32(dims.scale);
        storeRows(w, unflatten(acc), {buf.dq, b, h}, q0, {scale, scale});
      });

  // 2. dK, dV: a warp per 16 key rows of a kv head, summing over the query
  // heads of its group in order.
  int64_t KV = dims.kvHeads;
  launchWarps(
      k, B * KV * tiles, [&](KernelBuilder &k, Value warp, Value laneId) {
        auto [bg, kt] = split(k, warp, tiles);
        auto [b, g] = split(k, bg, KV);
        Lane w(k, laneId, dims);
        Value k0 = k.muli(kt, k.index(kTile));
        HeadMatrix keys{buf.key, b, g}, values{buf.v, b, g};
        SmallVector<FragA> kf = rowFragments(w, keys, k0);
        SmallVector<FragA> vf = rowFragments(w, values, k0);
        SmallVector<Acc> zeros(2 * (d / 8), w.zero());
        SmallVector<Value> acc = flatten(zeros); // dK tiles, then dV tiles
        Value scale = k.f32(dims.scale);
        for (int64_t member = 0; member < dims.group(); ++member) {
          Value h = queryHeadOf(k, g, member, dims);
          HeadMatrix queries{buf.q, b, h}, dout{buf.dout, b, h};
          acc = k.reduce(
              kt, k.index(tiles), acc,
              [&](KernelBuilder &k, Value qt, ValueRange state) {
                Value q0 = k.muli(qt, k.index(kTile));
                std::array<Acc, 2> p = w.timesTransposed(kf, queries, q0);
                std::array<Acc, 2> ds = w.timesTransposed(vf, dout, q0);
                // Rows are keys, columns queries: visible where key <= query.
                for (int64_t n = 0; n < 2; ++n)
                  for (int64_t e = 0; e < 4; ++e) {
                    Value query = w.col(w.plus(q0, 8 * n), e),
                          key = w.row(k0, e);
                    Value visible =
                        k.cmpi(arith::CmpIPredicate::ule, key, query);
                    Value L = k.load(lse, {b, h, query});
                    Value D = k.load(delta, {b, h, query});
                    Value prob = k.exp(k.sub(k.mul(scale, p[n][e]), L));
                    p[n][e] = k.select(visible, prob, k.f32(0.0));
                    ds[n][e] = k.mul(p[n][e], k.sub(ds[n][e], D));
                  }
                FragA pf = w.packA(p[0], p[1]), dsf = w.packA(ds[0], ds[1]);
                SmallVector<Acc> next = unflatten(state);
                for (int64_t j = 0; j < d / 8; ++j) {
                  Value n0 = k.index(8 * j);
                  next[j] = w.mma(dsf, w.loadB(queries, q0, n0), next[j]);
                  next[d / 8 + j] =
                      w.mma(pf, w.loadB(dout, q0, n0), next[d / 8 + j]);
                }
                return flatten(next);
              });
        }
        SmallVector<Acc> tilesOut = unflatten(acc);
        ArrayRef<Acc> all(tilesOut);
        storeRows(w, all.take_front(d / 8), {buf.dk, b, g}, k0, {scale, scale});
        storeRows(w, all.drop_front(d / 8), {buf.dv, b, g}, k0,
                  {Value(), Value()});
      });
}
