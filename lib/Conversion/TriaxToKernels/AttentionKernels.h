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
