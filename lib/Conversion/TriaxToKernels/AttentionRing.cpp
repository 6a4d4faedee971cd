//===- AttentionRing.cpp - Ring attention for context parallelism ---------===//
//
// triax.attention and triax.attention_grad with `context_parallel over
// @mesh [axes] ring` (dist-context-parallel{comm=ring}): each of the n
// members of the group holds its own tokens' keys and values (chunks c and
// 2n-1-c of the sequence, dist.shard_sequence's layout) and they go around
// the ring instead of being gathered. At step s = 0 .. n-1 member c holds
// the block of member (c - s) mod n and computes its queries against it
// while the runtime already moves the block on to member c + 1
// (trx_shift_start_f32 / _bf16 before the step's kernels, trx_shift_wait
// after them: the exchange overlaps the compute where the transport runs
// it apart, NCCL on its own stream). A member holds its own block and two
// arriving ones at most, never the whole sequence's.
//
// Forward: the online softmax of each query row (m, l and the f32
// accumulator) lives in memory from block to block; the output is a / l
// after the last block, and, where the attention is differentiated (its
// `lse` result), each row's log-sum-exp L = m + log l. Backward: each
// row's D = dO . O from the saved output, then one trip around the ring,
// on which each member adds its queries' dQ terms for the block in hand,
// and its dK and dV terms to the block's f32 accumulators, which travel
// with the block and are back at their owner after n shifts. Without the
// saved L and output (an attention_grad built by hand), a first trip
// recomputes them: the forward's trip again.
//
// The kernels are the flash kernels' per-row forms (AttentionKernels.cpp):
// one iteration per query row (per key row for dK/dV), the keys a row sees
// in a block a prefix of each of its two chunks.
//
//===----------------------------------------------------------------------===//

#include "AttentionKernels.h"

#include "triax/Conversion/RuntimeABI.h"

#include <array>
#include <limits>

using namespace mlir;
using namespace mlir::triax::kernels;

namespace {

/// The key and value blocks of each step (3-D [B, S, F] buffers of the
/// operands' element type: a bf16 model's blocks travel as bf16, 2 bytes an
/// element, and the kernels widen each element they read): step 0's are
/// the member's own, then two buffers each take turns receiving the next
/// ones.
class BlockRing {
public:
  BlockRing(KernelBuilder &k, const RingGroup &ring, ValueRange own,
            int64_t firstSlot)
      : k(k), ring(ring), firstSlot(firstSlot) {
    for (Value buffer : own) {
      auto type = cast<MemRefType>(buffer.getType());
      auto block = MemRefType::get(type.getShape(), type.getElementType());
      if (!type.getLayout().isIdentity()) {
        // A column view (fused projections): the block that travels is
        // contiguous.
        Value view = buffer;
        buffer = k.alloc(block);
        k.parallel(type.getShape(), [&](KernelBuilder &k, ValueRange ivs) {
          k.move(view, ivs, buffer, ivs);
        });
      }
      Value second = ring.members > 2 ? k.alloc(block) : Value();
      buffers.push_back({buffer, k.alloc(block), second});
    }
  }

  /// Block `i` (0 keys, 1 values) in hand at `step`.
  Value block(size_t i, int64_t step) const {
    return step == 0 ? buffers[i][0] : buffers[i][1 + (step - 1) % 2];
  }

  /// Starts moving the blocks of `step` to the next member and receiving
  /// the previous member's into the buffers of step + 1.
  void start(int64_t step) {
    for (size_t i = 0; i < buffers.size(); ++i)
      startShift(k, block(i, step), block(i, step + 1), ring,
                 firstSlot + int64_t(i));
  }

  /// Waits for them.
  void finish() {
    for (size_t i = 0; i < buffers.size(); ++i)
      waitShift(k, firstSlot + int64_t(i));
  }

  /// Sends `send` on to the next member and receives into `recv`, in
  /// `slot` (trx_shift_start_f32, or _bf16 for bf16 blocks).
  static void startShift(KernelBuilder &k, Value send, Value recv,
                         const RingGroup &ring, int64_t slot) {
    bool bf16 = cast<MemRefType>(send.getType()).getElementType().isBF16();
    func::CallOp::create(k.builder(), k.getLoc(),
                         bf16 ? ::triax::rt::kShiftStartBf16
                              : ::triax::rt::kShiftStartF32,
                         TypeRange{},
                         ValueRange{k.dynamicFlat(send), k.dynamicFlat(recv),
                                    k.i64(ring.mask), k.i64(slot)});
  }
  static void waitShift(KernelBuilder &k, int64_t slot) {
    func::CallOp::create(k.builder(), k.getLoc(), ::triax::rt::kShiftWait,
                         TypeRange{}, ValueRange{k.i64(slot)});
  }

private:
  KernelBuilder &k;
  const RingGroup &ring;
  int64_t firstSlot;
  /// Per block: the own one, then the two receiving ones (the second only
  /// for more than two members).
  SmallVector<std::array<Value, 3>, 2> buffers;
};

/// The member whose block member c holds at step s: (c - s) mod n.
Value blockOwner(KernelBuilder &k, const RingGroup &ring, int64_t step) {
  Value shifted = k.addi(ring.member, k.index(ring.members - step));
  return arith::RemUIOp::create(k.builder(), k.getLoc(), shifted,
                                k.index(ring.members));
}

/// The rows of member `owner`'s block a query at position p sees: the
/// first `early` rows of its first chunk and the first `late` of its
/// mirror chunk (those at positions <= p).
struct VisibleKeys {
  Value early, count;
  /// The block row of visible key t (0 <= t < count), in position order.
  Value row(KernelBuilder &k, Value t, int64_t chunk) const {
    Value first = k.cmpi(arith::CmpIPredicate::ult, t, early);
    Value late =
        k.addi(arith::SubIOp::create(k.builder(), k.getLoc(), t, early),
               k.index(chunk));
    return k.select(first, t, late);
  }
};
VisibleKeys visibleKeys(KernelBuilder &k, Value p, Value owner,
                        const RingGroup &ring, int64_t chunk) {
  // The owner's rows before position p + 1.
  auto [early, mirror] =
      chunkRowsBefore(k, k.addi(p, k.index(1)), owner, ring.members, chunk);
  return {early, k.addi(early, mirror)};
}

/// The online softmax state of every query row, [B, heads, S] m and l and
/// the [B, heads, S, d] accumulator, before the first key.
struct OnlineState {
  Value m, l, acc;
};
OnlineState initialState(KernelBuilder &k, const AttentionDims &dims) {
  Type f32 = k.builder().getF32Type();
  int64_t B = dims.batch, H = dims.heads, S = dims.seq, d = dims.headDim;
  // m starts at the lowest finite float: the first key's score is above
  // it, its weight exp(lowest - s) is 0 and the empty accumulator's factor
  // too (no infinities in the arithmetic).
  OnlineState st{k.allocFilled(MemRefType::get({B, H, S}, f32),
                               std::numeric_limits<float>::lowest()),
                 k.allocFilled(MemRefType::get({B, H, S}, f32), 0.0),
                 k.allocFilled(MemRefType::get({B, H, S, d}, f32), 0.0)};
  return st;
}

/// One block of the forward's online softmax: every query row (b, h, i)
/// visits the keys of member `owner`'s block it sees, in position order.
void forwardBlock(KernelBuilder &k, Value q, Value key, Value value,
                  const OnlineState &st, Value owner, const AttentionDims &dims,
                  const RingGroup &ring) {
  int64_t chunk = dims.seq / 2;
  Value scale = k.f32(dims.scale);
  k.parallel({dims.batch, dims.heads, dims.seq}, [&](KernelBuilder &k,
                                                     ValueRange iv) {
    Value b = iv[0], h = iv[1], i = iv[2];
    Value g = kvHeadOf(k, h, dims);
    Value p = loadBalancedPosition(k, i, ring.member, ring.members, chunk);
    VisibleKeys keys = visibleKeys(k, p, owner, ring, chunk);
    SmallVector<Value> ml = k.reduce(
        k.index(0), keys.count,
        {k.load(st.m, {b, h, i}), k.load(st.l, {b, h, i})},
        [&](KernelBuilder &k, Value t, ValueRange state) {
          Value m = state[0], l = state[1];
          Value row = keys.row(k, t, chunk);
          Value s = k.mul(scale, headDot(k, q, i, h, key, row, g, b, dims));
          auto [grows, alpha, w] = onlineStep(k, m, s);
          auto rescale = scf::IfOp::create(k.builder(), k.getLoc(), grows,
                                           /*withElseRegion=*/false);
          {
            OpBuilder::InsertionGuard guard(k.builder());
            k.builder().setInsertionPoint(rescale.thenBlock()->getTerminator());
            forFeatures(k, dims, [&](KernelBuilder &k, Value c) {
              k.store(k.mul(k.load(st.acc, {b, h, i, c}), alpha), st.acc,
                      {b, h, i, c});
            });
          }
          forFeatures(k, dims, [&](KernelBuilder &k, Value c) {
            Value vc = headElement(k, value, b, row, g, c, dims);
            k.store(k.add(k.load(st.acc, {b, h, i, c}), k.mul(w, vc)), st.acc,
                    {b, h, i, c});
          });
          return SmallVector<Value>{k.max(m, s), k.add(k.mul(l, alpha), w)};
        });
    k.store(ml[0], st.m, {b, h, i});
    k.store(ml[1], st.l, {b, h, i});
  });
}

/// The forward's trip around the ring: the state after every block.
OnlineState forwardRing(KernelBuilder &k, Value q, ValueRange own,
                        const AttentionDims &dims, const RingGroup &ring) {
  OnlineState st = initialState(k, dims);
  BlockRing blocks(k, ring, own, /*firstSlot=*/0);
  for (int64_t step = 0; step < ring.members; ++step) {
    bool more = step + 1 < ring.members;
    if (more)
      blocks.start(step);
    Value owner = blockOwner(k, ring, step);
    forwardBlock(k, q, k.rows(blocks.block(0, step)),
                 k.rows(blocks.block(1, step)), st, owner, dims, ring);
    if (more)
      blocks.finish();
  }
  return st;
}

} // namespace

FailureOr<RingGroup> mlir::triax::kernels::ringGroup(Operation *op,
                                                     FlatSymbolRefAttr mesh,
                                                     ArrayAttr axes,
                                                     KernelBuilder &k) {
  FailureOr<int64_t> mask = axisMask(op, mesh, axes);
  if (failed(mask))
    return failure();
  RingGroup ring;
  ring.members = dist::lookupMesh(op, mesh).getGroupSize(axes);
  ring.mask = *mask;
  ring.member = groupPosition(k, *mask);
  return ring;
}

void mlir::triax::kernels::ringAttention(KernelBuilder &k,
                                         const AttentionBuffers &buf,
                                         ValueRange ownKV,
                                         const AttentionDims &dims,
                                         const RingGroup &ring) {
  OnlineState st = forwardRing(k, buf.q, ownKV, dims, ring);
  k.parallel(
      {dims.batch, dims.heads, dims.seq}, [&](KernelBuilder &k, ValueRange iv) {
        Value b = iv[0], h = iv[1], i = iv[2];
        Value l = k.load(st.l, {b, h, i});
        forFeatures(k, dims, [&](KernelBuilder &k, Value c) {
          k.store(k.div(k.load(st.acc, {b, h, i, c}), l), buf.out,
                  headIndex(k, b, i, h, c, dims));
        });
        if (buf.lse)
          k.store(k.add(k.load(st.m, {b, h, i}), k.log(l)), buf.lse, {b, h, i});
      });
}

void mlir::triax::kernels::ringAttentionGrad(KernelBuilder &k,
                                             const AttentionBuffers &buf,
                                             ValueRange ownKV,
                                             const AttentionDims &dims,
                                             const RingGroup &ring) {
  Type f32 = k.builder().getF32Type();
  int64_t B = dims.batch, H = dims.heads, S = dims.seq, d = dims.headDim;
  int64_t KV = dims.kvHeads, chunk = S / 2;
  Value scale = k.f32(dims.scale);

  // Each row's log-sum-exp L and D = dO . O: from the saved L and output,
  // or else from a first trip (the forward's again); then the
  // accumulator is dQ's sum.
  Value lse = buf.lse, accQ;
  Value delta = k.alloc(MemRefType::get({B, H, S}, f32));
  OnlineState st;
  if (buf.lse) {
    accQ = k.allocFilled(MemRefType::get({B, H, S, d}, f32), 0.0);
  } else {
    st = forwardRing(k, buf.q, ownKV, dims, ring);
    lse = k.alloc(MemRefType::get({B, H, S}, f32));
    accQ = st.acc;
  }
  k.parallel({B, H, S}, [&](KernelBuilder &k, ValueRange iv) {
    Value b = iv[0], h = iv[1], i = iv[2];
    Value l = buf.lse ? Value() : k.load(st.l, {b, h, i});
    Value D = k.reduce(
        d, {k.f32(0.0)}, [&](KernelBuilder &k, Value c, ValueRange acc) {
          Value o = buf.lse ? headElement(k, buf.savedOut, b, i, h, c, dims)
                            : k.div(k.load(accQ, {b, h, i, c}), l);
          Value doc = headElement(k, buf.dout, b, i, h, c, dims);
          return SmallVector<Value>{k.add(acc[0], k.mul(doc, o))};
        })[0];
    k.store(D, delta, {b, h, i});
    if (buf.lse)
      return;
    k.store(k.add(k.load(st.m, {b, h, i}), k.log(l)), lse, {b, h, i});
    forFeatures(k, dims, [&](KernelBuilder &k, Value c) {
      k.store(k.f32(0.0), accQ, {b, h, i, c});
    });
  });

  // The trip for the gradients: the blocks (slots 0, 1) and, one step
  // behind them, their dK and dV accumulators (slots 2, 3), [B, kv heads,
  // S, d] f32.
  BlockRing blocks(k, ring, ownKV, /*firstSlot=*/0);
  auto accType = MemRefType::get({B, KV, S, d}, f32);
  Value dAcc[2][2] = {
      {k.allocFilled(accType, 0.0), k.allocFilled(accType, 0.0)},
      {k.alloc(accType), k.alloc(accType)}};
  auto score = [&](KernelBuilder &k, Value key, Value b, Value i, Value h,
                   Value row, Value g) {
    return k.mul(scale, headDot(k, buf.q, i, h, key, row, g, b, dims));
  };
  for (int64_t step = 0; step < ring.members; ++step) {
    bool more = step + 1 < ring.members;
    if (more)
      blocks.start(step);
    Value owner = blockOwner(k, ring, step);
    Value key = k.rows(blocks.block(0, step));
    Value value = k.rows(blocks.block(1, step));
    // dQ: every query row over the keys of the block it sees.
    k.parallel({B, H, S}, [&](KernelBuilder &k, ValueRange iv) {
      Value b = iv[0], h = iv[1], i = iv[2];
      Value g = kvHeadOf(k, h, dims);
      Value p = loadBalancedPosition(k, i, ring.member, ring.members, chunk);
      VisibleKeys keys = visibleKeys(k, p, owner, ring, chunk);
      Value L = k.load(lse, {b, h, i}), D = k.load(delta, {b, h, i});
      loopRange(k, k.index(0), keys.count, [&](KernelBuilder &k, Value t) {
        Value row = keys.row(k, t, chunk);
        Value w = k.exp(k.sub(score(k, key, b, i, h, row, g), L));
        Value dp = headDot(k, buf.dout, i, h, value, row, g, b, dims);
        Value ds = k.mul(w, k.sub(dp, D));
        forFeatures(k, dims, [&](KernelBuilder &k, Value c) {
          Value kc = headElement(k, key, b, row, g, c, dims);
          k.store(k.add(k.load(accQ, {b, h, i, c}), k.mul(ds, kc)), accQ,
                  {b, h, i, c});
        });
      });
    });
    // dK, dV: the block's accumulators, arrived from the previous member.
    Value *acc = dAcc[step % 2];
    Value *next = dAcc[(step + 1) % 2];
    if (step > 0) {
      BlockRing::waitShift(k, 2);
      BlockRing::waitShift(k, 3);
    }
    k.parallel({B, KV, S}, [&](KernelBuilder &k, ValueRange iv) {
      Value b = iv[0], g = iv[1], t = iv[2];
      // The member's queries that see key row t: from the first whose
      // position is not below the key's (both chunks in position order).
      Value pt = loadBalancedPosition(k, t, owner, ring.members, chunk);
      auto [early, mirror] =
          chunkRowsBefore(k, pt, ring.member, ring.members, chunk);
      Value first = k.addi(early, mirror);
      for (int64_t member = 0; member < dims.group(); ++member) {
        Value h = queryHeadOf(k, g, member, dims);
        loopRange(k, first, k.index(S), [&](KernelBuilder &k, Value i) {
          Value L = k.load(lse, {b, h, i});
          Value w = k.exp(k.sub(score(k, key, b, i, h, t, g), L));
          Value dp = headDot(k, buf.dout, i, h, value, t, g, b, dims);
          Value ds = k.mul(w, k.sub(dp, k.load(delta, {b, h, i})));
          forFeatures(k, dims, [&](KernelBuilder &k, Value c) {
            Value doc = headElement(k, buf.dout, b, i, h, c, dims);
            Value qc = headElement(k, buf.q, b, i, h, c, dims);
            k.store(k.add(k.load(acc[1], {b, g, t, c}), k.mul(w, doc)), acc[1],
                    {b, g, t, c});
            k.store(k.add(k.load(acc[0], {b, g, t, c}), k.mul(ds, qc)), acc[0],
                    {b, g, t, c});
          });
        });
      }
    });
    BlockRing::startShift(k, acc[0], next[0], ring, 2);
    BlockRing::startShift(k, acc[1], next[1], ring, 3);
    if (more)
      blocks.finish();
  }
  BlockRing::waitShift(k, 2);
  BlockRing::waitShift(k, 3);
  // After n shifts the member's own block's accumulators are home.
  Value *home = dAcc[ring.members % 2];
  k.parallel({B, H, S}, [&](KernelBuilder &k, ValueRange iv) {
    Value b = iv[0], h = iv[1], i = iv[2];
    forFeatures(k, dims, [&](KernelBuilder &k, Value c) {
      k.store(k.mul(scale, k.load(accQ, {b, h, i, c})), buf.dq,
              headIndex(k, b, i, h, c, dims));
    });
  });
  k.parallel({B, KV, S}, [&](KernelBuilder &k, ValueRange iv) {
    Value b = iv[0], g = iv[1], t = iv[2];
    forFeatures(k, dims, [&](KernelBuilder &k, Value c) {
      SmallVector<Value, 2> at = headIndex(k, b, t, g, c, dims);
      k.store(k.mul(scale, k.load(home[0], {b, g, t, c})), buf.dk, at);
      k.store(k.load(home[1], {b, g, t, c}), buf.dv, at);
    });
  });
}
