//===- AttentionKernels.h - Attention's shapes, buffers and lowerings -----===//
//
// What the attention lowerings share: the shapes of one attention op, its
// buffers as rows views [B*S, features], and the tensor-core lowering of
// AttentionMMA.cpp that AttentionKernels.cpp chooses where it applies.
//
//===----------------------------------------------------------------------===//

#ifndef TRIAX_LIB_CONVERSION_TRIAXTOKERNELS_ATTENTIONKERNELS_H
#define TRIAX_LIB_CONVERSION_TRIAXTOKERNELS_ATTENTIONKERNELS_H

#include "KernelBuilder.h"

namespace mlir::triax::kernels {

/// The shapes of one attention op.
struct AttentionDims {
  int64_t batch, seq, heads, kvHeads, headDim;
  double scale;
  /// The flash kernels' dot products as vector<8xf32> loads, multiplies
  /// and adds (the CPU): the same lanes and the same bits as the scalar
  /// form, in one vector register (convert-triax-to-kernels{vector-dots}).
  bool vectorDots = false;
  /// The CPU flash kernels take 8 keys (queries, in the dK/dV kernel) at a
  /// time, their accumulators in vector registers (AttentionBlocks.cpp,
  /// convert-triax-to-kernels{key-blocks}); needs vectorDots.
  bool keyBlocks = false;
  /// Context parallelism (`context_parallel over @mesh [axes]`): the
  /// queries are member `cpMember`'s two chunks of the sequence
  /// (dist.shard_sequence's layout), the keys and values all `cpMembers`
  /// members' in member order, cpMembers * seq rows per batch index. 1 and
  /// null without.
  int64_t cpMembers = 1;
  Value cpMember;
  int64_t group() const { return heads / kvHeads; }
  /// The dims of the key-shaped buffers (k, v, dK, dV): their sequence.
  AttentionDims keys() const {
    AttentionDims d = *this;
    d.seq = seq * cpMembers;
    return d;
  }
};

/// The operands and results of one attention op as rows views
/// [B*S, features] of contiguous buffers. Forward: out; backward: dout is
/// the result's gradient, dq, dk, dv the results.
///
/// `lse` ([B, heads, S] f32, not a rows view), where the op has one: the
/// rows' log-sum-exp, written by the forward (its `lse` result) and read by
/// the backward (`saved`), with `savedOut` (a rows view of the forward's
/// output) for the softmax backward's D = rowsum(dO * O). Null otherwise:
/// the backward then runs the forward's loop again for them.
struct AttentionBuffers {
  Value q, key, v;
  Value out;        // forward
  Value dout;       // backward
  Value dq, dk, dv; // backward
  Value lse;        // forward (optional result) or backward (saved)
  Value savedOut;   // backward (saved)
};

//===--- the flash kernels' helpers (AttentionKernels.cpp) ---------------===//

/// Lanes of the vector forms: 8 f32, one AVX register (half an AVX-512
/// one).
constexpr int64_t kDotLanes = 8;

/// The index of (batch b, position i, head h, feature c) in a rows view
/// [B*S, heads*d]: [b*S + i, h*d + c].
SmallVector<Value, 2> headIndex(KernelBuilder &k, Value b, Value i, Value h,
                                Value c, const AttentionDims &dims);

/// Features c..c+width-1 of (b, row, head) of a rows view as
/// vector<width x f32> (bf16 extended exactly).
Value loadLanes(KernelBuilder &k, Value rows2d, Value b, Value row, Value head,
                Value c, const AttentionDims &dims, int64_t width = kDotLanes);
/// Stores the f32 vector `lanes` as features c, c+1, ... of (b, row, head)
/// of a rows view (one vector.store; bf16 rounded to nearest even).
void storeLanes(KernelBuilder &k, Value lanes, Value rows2d, Value b, Value row,
                Value head, Value c, const AttentionDims &dims);

/// x . y over the d features of (b, i, h) of `x` and (b, t, g) of `y`, in
/// an order fixed by d alone (see AttentionKernels.cpp).
Value headDot(KernelBuilder &k, Value x, Value i, Value h, Value y, Value t,
              Value g, Value b, const AttentionDims &dims);

/// Element (b, i, h, c) of a rows view.
Value headElement(KernelBuilder &k, Value rows2d, Value b, Value i, Value h,
                  Value c, const AttentionDims &dims);

/// A sequential loop over the d features.
void forFeatures(KernelBuilder &k, const AttentionDims &dims,
                 function_ref<void(KernelBuilder &, Value)> body);

/// Of member `member`'s rows (its two chunks of `chunk` positions, chunk
/// `member` and its mirror 2 members - 1 - member: dist.shard_sequence's
/// layout, in position order), how many sit at positions before t, in the
/// early chunk and in the mirror one: min(max(t - start, 0), chunk) each.
std::pair<Value, Value> chunkRowsBefore(KernelBuilder &k, Value t, Value member,
                                        int64_t members, int64_t chunk);

/// A sequential loop over [lower, upper) with index bounds and no carried
/// values.
void loopRange(KernelBuilder &k, Value lower, Value upper,
               function_ref<void(KernelBuilder &, Value)> body);

/// One step of the online softmax from running max m to s: (whether the
/// max grows, the factor alpha of the old sum, the new key's weight p).
std::tuple<Value, Value, Value> onlineStep(KernelBuilder &k, Value m, Value s);

/// The kv head query head h reads (h / group).
Value kvHeadOf(KernelBuilder &k, Value h, const AttentionDims &dims);

/// Query head `member` (0 .. group - 1) of kv head g: g * group + member.
Value queryHeadOf(KernelBuilder &k, Value g, int64_t member,
                  const AttentionDims &dims);

//===--- ring attention (AttentionRing.cpp) -------------------------------===//

/// The group a ring attention's blocks go around: its members, this
/// member's position (trx_group_position) and the axis mask of its
/// communicator.
struct RingGroup {
  int64_t members = 1;
  Value member;
  int64_t mask = 0;
};

/// The group of `context_parallel over @mesh [axes]`.
FailureOr<RingGroup> ringGroup(Operation *op, FlatSymbolRefAttr mesh,
                               ArrayAttr axes, KernelBuilder &k);

/// The forward of a `ring` attention: buf.q and buf.out as rows views,
/// `ownKV` the member's own key and value buffers ([B, S, F]); `dims`
/// without context parallelism (cpMembers 1: every block has the queries'
/// S rows).
void ringAttention(KernelBuilder &k, const AttentionBuffers &buf,
                   ValueRange ownKV, const AttentionDims &dims,
                   const RingGroup &ring);

/// Its backward: buf.q, buf.dout, buf.dq, buf.dk, buf.dv as rows views.
void ringAttentionGrad(KernelBuilder &k, const AttentionBuffers &buf,
                       ValueRange ownKV, const AttentionDims &dims,
                       const RingGroup &ring);

//===--- the CPU flash kernels, 8 keys at a time (AttentionBlocks.cpp) ---===//

/// The forward (dims.keyBlocks): what lowerFlash computes.
void flashBlocks(KernelBuilder &k, const AttentionBuffers &buf,
                 const AttentionDims &dims);

/// The backward (dims.keyBlocks): what lowerFlashGrad computes.
void flashBlocksGrad(KernelBuilder &k, const AttentionBuffers &buf,
                     const AttentionDims &dims);

/// Whether the tensor-core kernels (flashMMA, flashMMAGrad) apply: bf16
/// operands, a head dimension and a sequence that are multiples of 16 (the
/// MMA tiles; no partial tiles are generated). Otherwise `why` says which
/// condition failed.
bool flashMMAApplies(const AttentionDims &dims, Type operandType,
                     std::string &why);

/// FlashAttention-2's forward on NVIDIA tensor cores (mma.sync m16n8k16,
/// bf16 x bf16 -> f32): one warp per 16 query rows, emitted as a gpu.launch.
void flashMMA(KernelBuilder &k, const AttentionBuffers &buf,
              const AttentionDims &dims);

/// Its backward: a warp per 16 query rows (dQ, the rows' log-sum-exp and
/// dO . O), then a warp per 16 key rows (dK, dV); two gpu.launch ops.
void flashMMAGrad(KernelBuilder &k, const AttentionBuffers &buf,
                  const AttentionDims &dims);

} // namespace mlir::triax::kernels

#endif // TRIAX_LIB_CONVERSION_TRIAXTOKERNELS_ATTENTIONKERNELS_H
