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
//   O = O exp(m - m') + P V_kt  (d/8 MMAs);  then out = O / l, and, where
//   the op returns it, the row's log-sum-exp L = m + log l.
// Backward (flashMMAGrad):
//  1. warp over (b, h, qt): L and O as the forward saved them (else the
//     forward's loop again: m, l, O, L = m + log l), D = dO . O (the
//     softmax backward's rowsum(dP * P)) stored for kernel 2; then for
//     kt = 0..qt:
//     P = exp(S - L), dP = dO V^T, dS = P (dP - D), dQ += dS K.
//  2. warp over (b, kv head, key tile kt): for the query heads of its
//     group in order and query tiles qt = kt..S/16-1: S^T = K Q^T,
//     P^T = exp(S^T - L), dP^T = V dO^T, dS^T = P^T (dP^T - D),
//     dV += P^T dO, dK += dS^T Q.
// Every warp writes only its own rows: deterministic, no atomics. P and
// dS enter the second products rounded to bf16 (as in FlashAttention-2);
// the sums, the softmax statistics and the accumulators are f32.
//
// The tiles a warp steps over (K and V in the forward and the dQ kernel,
// Q and dO in the dK/dV kernel) are staged in shared memory, a private
// slot per warp (no barriers between warps: a warp's lanes synchronize
// with bar.warp.sync only): each lane moves 16-byte pieces, consecutive
// lanes consecutive pieces of a row (coalesced), and the B fragments come
// out of the slot with ldmatrix.x4 (.trans where the MMA wants the tile's
// columns), four 8 x 8 matrices an instruction where the scalar form took
// 32 two-byte loads. Slot rows are padded to d + 8 elements: a row starts
// 4 banks after the one before (mod 32), so the 8 rows of 16 bytes an
// ldmatrix phase reads fall in 32 different banks. The A fragments (the
// warp's own 16 rows, loaded once) still come from global memory.
//
//===----------------------------------------------------------------------===//

#include "AttentionKernels.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <array>
#include <limits>

using namespace mlir;
using namespace mlir::triax::kernels;

namespace {

/// Rows per warp tile, and keys (queries) per step: the MMA's M and K.
constexpr int64_t kTile = 16;
constexpr int64_t kWarpSize = 32;
constexpr int64_t kWarpsPerBlock = 4;
/// Tiles a warp stages at a time (K and V, or Q and dO), and the elements
/// a lane moves per piece (16 bytes of bf16).
constexpr int64_t kSlots = 2;
constexpr int64_t kPiece = 8;

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

/// The warp's shared memory: `smem` is the block's
/// [kWarpsPerBlock, kSlots, 16, d + 8] bf16 buffer (a workgroup
/// attribution of the launch), `warp` the warp's index in the block and
/// `base` the buffer's shared address (for ldmatrix's pointer).
struct Staging {
  Value smem, warp, base;
};

/// The elements of a slot row: d + 8 (see the file comment).
int64_t slotPitch(const AttentionDims &dims) { return dims.headDim + 8; }

/// The code one lane of a warp runs: fragment loads, MMAs, row reductions.
class Lane {
public:
  Lane(KernelBuilder &k, Value lane, const Staging &staging,
       const AttentionDims &dims)
      : k(k), dims(dims), lane(lane), staging(staging) {
    g = k.divui(lane, k.index(4));
    t = arith::RemUIOp::create(k.builder(), k.getLoc(), lane, k.index(4));
  }

  KernelBuilder &k;
  const AttentionDims &dims;
  /// The lane's index in the warp, and the warp's shared slots.
  Value lane;
  Staging staging;
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
  /// Waits for the warp's lanes (bar.warp.sync, all 32): their shared
  /// memory accesses before it are visible to all after it.
  void syncWarp() {
    NVVM::SyncWarpOp::create(k.builder(), k.getLoc(), k.i32(-1));
  }

  /// Copies the 16 rows at r0 of each matrix of `tiles` into its slot (in
  /// the order of `tiles`: slot 0, 1, ...) as bf16 (an f32 operand rounded
  /// to nearest even, as pack() rounds): lane l moves pieces l, l + 32, ...
  /// of 8 elements, row-major over the tile. All loads are issued first;
  /// the slots are written after every lane is done with their previous
  /// tiles.
  void stage(ArrayRef<HeadMatrix> tiles, Value r0) {
    OpBuilder &b = k.builder();
    Location loc = k.getLoc();
    int64_t d = dims.headDim, perRow = d / kPiece;
    auto bf16 = VectorType::get({kPiece}, b.getBF16Type());
    assert(tiles.size() <= size_t(kSlots) && "more tiles than slots");
    SmallVector<std::array<Value, 4>> pieces; // value, slot, row, column
    for (auto [slot, m] : llvm::enumerate(tiles)) {
      Type elt = cast<MemRefType>(m.rows2d.getType()).getElementType();
      for (int64_t i = 0; i < kTile * perRow / kWarpSize; ++i) {
        Value p = plus(lane, kWarpSize * i);
        Value r = k.divui(p, k.index(perRow));
        Value c = k.muli(arith::RemUIOp::create(b, loc, p, k.index(perRow)),
                         k.index(kPiece));
        Value row = k.addi(k.muli(m.b, k.index(dims.seq)), k.addi(r0, r));
        Value col = k.addi(k.muli(m.h, k.index(d)), c);
        Value v = vector::LoadOp::create(
            b, loc, VectorType::get({kPiece}, elt), m.rows2d,
            ValueRange{row, col}, /*nontemporal=*/false, llvm::Align(16));
        if (!elt.isBF16())
          v = arith::TruncFOp::create(b, loc, bf16, v);
        pieces.push_back({v, k.index(int64_t(slot)), r, c});
      }
    }
    syncWarp();
    for (auto [v, slot, r, c] : pieces)
      vector::StoreOp::create(b, loc, v, staging.smem,
                              ValueRange{staging.warp, slot, r, c},
                              /*nontemporal=*/false, llvm::Align(16));
    syncWarp();
  }

  /// ldmatrix.x4 from slot `slot`: four 8 x 8 matrices, matrix j the one
  /// at (rows[j], cols[j]) of the tile. Register j of a lane holds matrix
  /// j's row g, columns 2t and 2t + 1 (the B fragment of the transposed
  /// matrix), or with `trans` its column g, rows 2t and 2t + 1 (the B
  /// fragment of the matrix itself). Lane l gives the address of row l % 8
  /// of matrix l / 8.
  std::array<Value, 4> ldmatrix(int64_t slot, std::array<int64_t, 4> rows,
                                std::array<int64_t, 4> cols, bool trans) {
    OpBuilder &b = k.builder();
    Location loc = k.getLoc();
    Value j = k.divui(lane, k.index(8));
    Value r = arith::RemUIOp::create(b, loc, lane, k.index(8));
    // Matrix j's row and column offsets: constants chosen by j.
    auto pick = [&](std::array<int64_t, 4> of) {
      Value v = k.index(of[0]);
      for (int64_t m = 1; m < 4; ++m)
        v = k.select(k.cmpi(arith::CmpIPredicate::eq, j, k.index(m)),
                     k.index(of[m]), v);
      return v;
    };
    Value row = k.addi(pick(rows), r), col = pick(cols);
    Value slotIndex =
        k.addi(k.muli(staging.warp, k.index(kSlots)), k.index(slot));
    Value element =
        k.addi(k.muli(k.addi(k.muli(slotIndex, k.index(kTile)), row),
                      k.index(slotPitch(dims))),
               col);
    Value address = k.addi(staging.base, k.muli(element, k.index(2)));
    Value i64 = arith::IndexCastOp::create(b, loc, b.getI64Type(), address);
    Value ptr = LLVM::IntToPtrOp::create(
        b, loc, LLVM::LLVMPointerType::get(b.getContext(), 3), i64);
    Type i32 = b.getI32Type();
    auto result =
        LLVM::LLVMStructType::getLiteral(b.getContext(), {i32, i32, i32, i32});
    auto op = NVVM::LdMatrixOp::create(
        b, loc, result, ptr, /*num=*/4u,
        trans ? NVVM::MMALayout::col : NVVM::MMALayout::row,
        NVVM::LdStMatrixShapeAttr::get(b.getContext(), 8, 8),
        NVVM::LdStMatrixEltType::B16);
    std::array<Value, 4> regs;
    for (int64_t e = 0; e < 4; ++e)
      regs[e] = LLVM::ExtractValueOp::create(b, loc, op, e);
    return regs;
  }

  /// The B fragments of m^T over the feature block kk of the staged tile
  /// m (keys or queries as rows): for the tile's rows 0-7 and 8-15 (the
  /// two 16 x 8 halves of the product), B[c][n] = m[8 half + n][16 kk + c].
  std::array<FragB, 2> transposedB(int64_t slot, int64_t kk) {
    int64_t c = kTile * kk;
    std::array<Value, 4> r =
        ldmatrix(slot, {0, 0, 8, 8}, {c, c + 8, c, c + 8}, /*trans=*/false);
    return {FragB{r[0], r[1]}, FragB{r[2], r[3]}};
  }
  /// The B fragments of the staged tile m itself for the output columns
  /// 16 jj.. and 16 jj + 8..: B[kk][n] = m[kk][16 jj + 8 half + n].
  std::array<FragB, 2> plainB(int64_t slot, int64_t jj) {
    int64_t c = kTile * jj;
    std::array<Value, 4> r =
        ldmatrix(slot, {0, 8, 0, 8}, {c, c, c + 8, c + 8}, /*trans=*/true);
    return {FragB{r[0], r[1]}, FragB{r[2], r[3]}};
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
  /// a m^T over the 16 rows of the tile staged in `slot` (the features
  /// summed): the two 16 x 8 tiles of a 16 x 16 block (scores, or dP
  /// against dO).
  std::array<Acc, 2> timesTransposed(ArrayRef<FragA> a, int64_t slot) {
    std::array<Acc, 2> out = {zero(), zero()};
    for (int64_t kk = 0; kk < int64_t(a.size()); ++kk) {
      std::array<FragB, 2> bs = transposedB(slot, kk);
      for (int64_t n = 0; n < 2; ++n)
        out[n] = mma(a[kk], bs[n], out[n]);
    }
    return out;
  }
  /// acc[j] += a m over the tile staged in `slot` (16 rows), for the d/8
  /// output tiles j of 8 columns.
  void accumulate(SmallVectorImpl<Acc> &acc, const FragA &a, int64_t slot) {
    for (int64_t jj = 0; jj < int64_t(acc.size()) / 2; ++jj) {
      std::array<FragB, 2> bs = plainB(slot, jj);
      for (int64_t half = 0; half < 2; ++half)
        acc[2 * jj + half] = mma(a, bs[half], acc[2 * jj + half]);
    }
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

/// Emits a launch of `warps` warps, 4 per 128-thread block, with the
/// block's staging slots in shared memory, and `body` for each warp
/// w < warps with its lane (a guard uniform over the warp: the MMAs need
/// all 32 lanes).
void launchWarps(KernelBuilder &k, int64_t warps, const AttentionDims &dims,
                 function_ref<void(KernelBuilder &, Value, Lane &)> body) {
  OpBuilder &b = k.builder();
  Location loc = k.getLoc();
  int64_t threads = kWarpSize * kWarpsPerBlock;
  Value block = k.index(threads);
  Value grid = k.index((warps + kWarpsPerBlock - 1) / kWarpsPerBlock);
  Value one = k.index(1);
  auto launch = gpu::LaunchOp::create(b, loc, grid, one, one, block, one, one);
  auto workgroup =
      gpu::AddressSpaceAttr::get(b.getContext(), gpu::AddressSpace::Workgroup);
  auto slots =
      MemRefType::get({kWarpsPerBlock, kSlots, kTile, slotPitch(dims)},
                      b.getBF16Type(), MemRefLayoutAttrInterface(), workgroup);
  Value smem = launch.addWorkgroupAttribution(slots, loc);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(&launch.getBody().front());
  // The linear thread id, as triax-map-loops-to-gpu writes it (the kernel
  // report recognizes the form).
  Value id = arith::AddIOp::create(
      b, loc, arith::MulIOp::create(b, loc, launch.getBlockIds().x, block),
      launch.getThreadIds().x);
  Value warp = k.divui(id, k.index(kWarpSize));
  Value lane = arith::RemUIOp::create(b, loc, id, k.index(kWarpSize));
  Staging staging;
  staging.smem = smem;
  staging.warp = k.divui(launch.getThreadIds().x, k.index(kWarpSize));
  staging.base = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, smem);
  // (warp < warps, as a bound on the id: the kernel report's form of a
  // guard.)
  Value inRange =
      k.cmpi(arith::CmpIPredicate::ult, id, k.index(warps * kWarpSize));
  auto inside = scf::IfOp::create(b, loc, inRange, /*withElseRegion=*/false);
  gpu::TerminatorOp::create(b, loc);
  b.setInsertionPoint(inside.thenBlock()->getTerminator());
  Lane w(k, lane, staging, dims);
  body(k, warp, w);
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
/// (q0 = 16 qt) with the query fragments `qf`: each step stages the key
/// tile in slot 0 and the value tile in slot 1.
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
        w.stage({keys, values}, t0);
        std::array<Acc, 2> s = w.timesTransposed(qf, 0);
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
        for (int64_t j = 0; j < d / 8; ++j)
          for (int64_t e = 0; e < 4; ++e)
            acc[j][e] = k.mul(acc[j][e], alpha[e >= 2]);
        w.accumulate(acc, p, 1);
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

/// Stores the warp's per-row values `rows` (rows[r] for row q0 + g + 8 r)
/// into `dst` ([B, heads, S] f32) at (b, h, row), from the first lane of
/// each group (its 4 lanes hold the same values).
void storeRowValues(Lane &w, Value dst, const std::array<Value, 2> &rows,
                    Value b, Value h, Value q0) {
  KernelBuilder &k = w.k;
  Value first = k.cmpi(arith::CmpIPredicate::eq, w.t, k.index(0));
  auto ifFirst = scf::IfOp::create(k.builder(), k.getLoc(), first,
                                   /*withElseRegion=*/false);
  OpBuilder::InsertionGuard guard(k.builder());
  k.builder().setInsertionPoint(ifFirst.thenBlock()->getTerminator());
  for (int64_t r = 0; r < 2; ++r)
    k.store(rows[r], dst, {b, h, w.row(q0, 2 * r)});
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
      k, dims.batch * dims.heads * tiles, dims,
      [&](KernelBuilder &k, Value warp, Lane &w) {
        auto [bh, qt] = split(k, warp, tiles);
        auto [b, h] = split(k, bh, dims.heads);
        Value g = kvHeadOf(k, h, dims);
        Value q0 = k.muli(qt, k.index(kTile));
        SmallVector<FragA> qf = rowFragments(w, {buf.q, b, h}, q0);
        Online st = onlineTiles(w, qf, {buf.key, b, g}, {buf.v, b, g}, q0, qt);
        std::array<Value, 2> inv, lse;
        for (int64_t r = 0; r < 2; ++r) {
          Value l = w.groupSum(st.l[r]);
          inv[r] = k.div(k.f32(1.0), l);
          lse[r] = k.add(st.m[r], k.log(l));
        }
        storeRows(w, st.o, {buf.out, b, h}, q0, inv);
        if (buf.lse)
          storeRowValues(w, buf.lse, lse, b, h, q0);
      });
}

void mlir::triax::kernels::flashMMAGrad(KernelBuilder &k,
                                        const AttentionBuffers &buf,
                                        const AttentionDims &dims) {
  Type f32 = k.builder().getF32Type();
  int64_t B = dims.batch, H = dims.heads, S = dims.seq, d = dims.headDim;
  int64_t tiles = S / kTile;
  // The rows' log-sum-exp (the forward's, where it saved it) and dO . O,
  // from kernel 1 to kernel 2.
  Value lse = buf.lse ? buf.lse : k.alloc(MemRefType::get({B, H, S}, f32));
  Value delta = k.alloc(MemRefType::get({B, H, S}, f32));

  // 1. dQ, L, D: a warp per 16 query rows.
  launchWarps(
      k, B * H * tiles, dims, [&](KernelBuilder &k, Value warp, Lane &w) {
        auto [bh, qt] = split(k, warp, tiles);
        auto [b, h] = split(k, bh, H);
        Value g = kvHeadOf(k, h, dims);
        Value q0 = k.muli(qt, k.index(kTile));
        HeadMatrix queries{buf.q, b, h}, keys{buf.key, b, g},
            values{buf.v, b, g};
        HeadMatrix dout{buf.dout, b, h};
        SmallVector<FragA> qf = rowFragments(w, queries, q0);
        // L and O: saved by the forward (read from memory), or its loop
        // again (O in the accumulators, times 1 / l).
        std::array<Value, 2> L, D;
        Online st;
        if (!buf.lse)
          st = onlineTiles(w, qf, keys, values, q0, qt);
        for (int64_t r = 0; r < 2; ++r) {
          Value inv;
          if (buf.lse) {
            L[r] = k.load(lse, {b, h, w.row(q0, 2 * r)});
          } else {
            Value l = w.groupSum(st.l[r]);
            L[r] = k.add(st.m[r], k.log(l));
            inv = k.div(k.f32(1.0), l);
          }
          // D = dO . O over the row: this lane's columns, then the group's.
          Value part = k.f32(0.0);
          for (int64_t j = 0; j < d / 8; ++j)
            for (int64_t e = 2 * r; e < 2 * r + 2; ++e) {
              Value row = w.row(q0, e), col = w.col(k.index(8 * j), e);
              Value o = buf.lse ? w.elementF32({buf.savedOut, b, h}, row, col)
                                : k.mul(st.o[j][e], inv);
              Value dO = w.elementF32(dout, row, col);
              part = k.add(part, k.mul(dO, o));
            }
          D[r] = w.groupSum(part);
        }
        // The group's first lane writes its two rows' L (unless saved) and
        // D.
        if (!buf.lse)
          storeRowValues(w, lse, L, b, h, q0);
        storeRowValues(w, delta, D, b, h, q0);
        SmallVector<FragA> dof = rowFragments(w, dout, q0);
        SmallVector<Acc> dq(d / 8, w.zero());
        SmallVector<Value> acc = k.reduce(
            k.index(0), w.plus(qt, 1), flatten(dq),
            [&](KernelBuilder &k, Value kt, ValueRange state) {
              Value t0 = k.muli(kt, k.index(kTile));
              w.stage({keys, values}, t0);
              std::array<Acc, 2> p = w.timesTransposed(qf, 0);
              std::array<Acc, 2> ds = w.timesTransposed(dof, 1);
              maskScores(w, p, q0, t0);
              for (int64_t n = 0; n < 2; ++n)
                for (int64_t e = 0; e < 4; ++e) {
                  p[n][e] = k.exp(k.sub(p[n][e], L[e >= 2])); // 0 where masked
                  ds[n][e] = k.mul(p[n][e], k.sub(ds[n][e], D[e >= 2]));
                }
              FragA dsf = w.packA(ds[0], ds[1]);
              SmallVector<Acc> next = unflatten(state);
              w.accumulate(next, dsf, 0);
              return flatten(next);
            });
        Value scale = k.f32(dims.scale);
        storeRows(w, unflatten(acc), {buf.dq, b, h}, q0, {scale, scale});
      });

  // 2. dK, dV: a warp per 16 key rows of a kv head, summing over the query
  // heads of its group in order.
  int64_t KV = dims.kvHeads;
  launchWarps(
      k, B * KV * tiles, dims, [&](KernelBuilder &k, Value warp, Lane &w) {
        auto [bg, kt] = split(k, warp, tiles);
        auto [b, g] = split(k, bg, KV);
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
                w.stage({queries, dout}, q0);
                std::array<Acc, 2> p = w.timesTransposed(kf, 0);
                std::array<Acc, 2> ds = w.timesTransposed(vf, 1);
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
                SmallVector<Acc> dK(ArrayRef<Acc>(next).take_front(d / 8)),
                    dV(ArrayRef<Acc>(next).drop_front(d / 8));
                w.accumulate(dK, dsf, 0);
                w.accumulate(dV, pf, 1);
                dK.append(dV.begin(), dV.end());
                return flatten(dK);
              });
        }
        SmallVector<Acc> tilesOut = unflatten(acc);
        ArrayRef<Acc> all(tilesOut);
        storeRows(w, all.take_front(d / 8), {buf.dk, b, g}, k0, {scale, scale});
        storeRows(w, all.drop_front(d / 8), {buf.dv, b, g}, k0,
                  {Value(), Value()});
      });
}
