//===- RuntimeABI.h - The runtime entry points compiled code calls -*- C++
//-*-===//
//
// The one place the compiler names the runtime's ABI. Every symbol here is
// implemented in runtime/ (C ABI, memref descriptors through MLIR's
// `llvm.emit_c_interface`: `_mlir_ciface_<name>`).
//
//===----------------------------------------------------------------------===//

#ifndef TRIAX_CONVERSION_RUNTIMEABI_H
#define TRIAX_CONVERSION_RUNTIMEABI_H

#include "triax_abi.h"

#include "llvm/ADT/StringRef.h"

namespace triax::rt {

/// `C = alpha * op(A) op(B) + beta * C` on f32 2-D strided memrefs, op =
/// transpose when the flag is non-zero (OpenBLAS on CPU, cuBLASLt on GPU,
/// fp32 accumulation, no TF32):
/// (memref A, memref B, memref C, i32 transA, i32 transB, f32 alpha, f32 beta)
constexpr llvm::StringLiteral kSgemm = "trx_sgemm";

/// The same GEMM on bf16 operands, accumulated in fp32 (cuBLASLt
/// CUBLAS_COMPUTE_32F on GPU; on CPU the operands are widened to f32 and
/// multiplied by OpenBLAS), with the argument list of kSgemm:
/// - trx_gemm_bf16: A, B, C bf16 (C rounded to nearest even once, at the
///   end; beta != 0 reads C as f32 first);
/// - trx_gemm_bf16_f32: A, B bf16, C f32 (weight gradients summed into the
///   fp32 gradient buffers, attention scores in fp32).
/// alpha and beta stay f32. Operands are 2-D strided memrefs of any strides
/// whose inner stride is 1 (row-major) or whose row stride is 1 (a
/// transposed view, column-major), as for kSgemm.
constexpr llvm::StringLiteral kGemmBf16 = "trx_gemm_bf16";
constexpr llvm::StringLiteral kGemmBf16F32 = "trx_gemm_bf16_f32";

/// Strided-batched GEMMs: the operands are 3-D strided memrefs
/// [batch, rows, cols] (each matrix under the 2-D rules above, any batch
/// stride >= 0), and C[i] = alpha op(A[i]) op(B[i]) + beta C[i] for every i.
/// A batch stride of 0 on A or B broadcasts that matrix; C's matrices must
/// not overlap each other or A's and B's. The arguments and element types
/// are those of kSgemm, kGemmBf16 and kGemmBf16F32, in that order.
constexpr llvm::StringLiteral kSgemmBatched = "trx_sgemm_batched";
constexpr llvm::StringLiteral kGemmBf16Batched = "trx_gemm_bf16_batched";
constexpr llvm::StringLiteral kGemmBf16F32Batched = "trx_gemm_bf16_f32_batched";

/// GEMMs with a bias epilogue, the forward of a linear layer with a bias:
/// `C = alpha * op(A) op(B) + bias` with bias[n] added to every row of C
/// (beta is 0; cuBLASLt's CUBLASLT_EPILOGUE_BIAS on GPU; on CPU C is filled
/// with the bias and the product accumulated into it, bit for bit the old
/// fill + beta = 1 GEMM):
/// (memref A, memref B, memref C, memref<?xT> bias, i32 transA, i32 transB,
///  f32 alpha)
/// A, B, C follow kSgemm's rules; bias is contiguous, has C's element type
/// (a bf16 linear's bias is bf16: LinearOp's operands share one element
/// type) and N = C's columns elements, and does not overlap C.
/// - trx_sgemm_bias: A, B, C, bias f32;
/// - trx_gemm_bf16_bias: A, B, C, bias bf16 (fp32 accumulation, the bias
///   added in fp32, C rounded once).
constexpr llvm::StringLiteral kSgemmBias = "trx_sgemm_bias";
constexpr llvm::StringLiteral kGemmBf16Bias = "trx_gemm_bf16_bias";

/// GELU epilogues (GPT-2's tanh approximation, the formulas of
/// triax.gelu / triax.gelu_grad), the MLP's first linear and its backward;
/// cuBLASLt's CUBLASLT_EPILOGUE_GELU_AUX_BIAS / CUBLASLT_EPILOGUE_DGELU on
/// GPU, the GEMM then the formula on every element on CPU:
/// - bias_gelu: (memref A, memref B, memref C, memref<?xT> bias,
///   memref<?x?xT> aux, i32 transA, i32 transB, f32 alpha):
///   aux = alpha op(A) op(B) + bias (the pre-activation, kept for the
///   backward), C = gelu(aux);
/// - dgelu: (memref A, memref B, memref C, memref<?x?xT> aux, i32 transA,
///   i32 transB, f32 alpha): C = gelu_grad(aux, alpha op(A) op(B)) = the
///   product times gelu'(aux).
/// aux is M x N, row-major and contiguous like C, of C's element type, and
/// overlaps neither C nor the inputs. f32 (trx_sgemm_*) and bf16
/// (trx_gemm_bf16_*, fp32 accumulation). On the CPU each element is
/// computed from the stored (rounded) aux and product exactly as the
/// unfused kernels compute it, so the result is bit for bit theirs.
constexpr llvm::StringLiteral kSgemmBiasGelu = "trx_sgemm_bias_gelu";
constexpr llvm::StringLiteral kGemmBf16BiasGelu = "trx_gemm_bf16_bias_gelu";
constexpr llvm::StringLiteral kSgemmDGelu = "trx_sgemm_dgelu";
constexpr llvm::StringLiteral kGemmBf16DGelu = "trx_gemm_bf16_dgelu";

/// A rank-1 or rank-2 f32 view of a training state buffer owned by the
/// runtime: (i32 kind, i64 parameter index) -> memref<?xf32> / memref<?x?xf32>.
constexpr llvm::StringLiteral kState1D = "trx_state_1d";
constexpr llvm::StringLiteral kState2D = "trx_state_2d";

/// In-place all_reduce of a contiguous f32 buffer over a group of mesh axes:
/// (memref<?xf32> buf, i32 op, i64 axis_mask). `op` is the dist dialect's
/// ReductionKind (sum 0, avg 1, max 2, min 3); bit i of `axis_mask` selects
/// mesh axis i, the axes numbered in the order of the module's `dist.mesh`,
/// which is the order the model descriptor hands to trx_dist_init.
constexpr llvm::StringLiteral kAllReduceF32 = "trx_all_reduce_f32";

/// This rank's position in the group of the mesh axes in `axis_mask` (the
/// coordinates on those axes linearized in mesh order, first axis major; 0
/// without a mesh): (i64 axis_mask) -> i64. A plain C function (no memref
/// arguments, no `_mlir_ciface_` wrapper). Vocab-parallel kernels use it to
/// find the block of the vocabulary the rank holds.
constexpr llvm::StringLiteral kGroupPosition = "trx_group_position";

/// Whether this forward_backward call is the first of its optimizer step:
/// () -> i64, 1 or 0 (the driver sets it, trx_set_first_micro_batch). The
/// entry then writes its loss into loss_acc instead of adding to it. A
/// plain C function.
constexpr llvm::StringLiteral kFirstMicroBatch = "trx_first_micro_batch";

/// ZeRO's flat-chunk collectives and state (see triax_rt.h):
/// reduce_scatter (memref<?xf32> in, memref<?xf32> out, i32 op, i64 mask):
///   `in` padded with zeros to g chunks of out's size, out = this rank's
///   chunk of the reduction;
/// all_gather (memref<?xf32> in, memref<?xf32> out, i64 mask): out = the
///   members' chunks concatenated, cut to out's size;
/// state_chunk (i32 kind, i64 param) -> memref<?xf32>: this rank's chunk of a
///   state buffer of a parameter with `dist.zero`;
/// zero_all_gather_param (i64 param, i64 mask): gathers the updated chunks
///   of a ZeRO-1/2 parameter into every member's whole copy, in place (a
///   plain C function).
constexpr llvm::StringLiteral kReduceScatterF32 = "trx_reduce_scatter_f32";
constexpr llvm::StringLiteral kAllGatherF32 = "trx_all_gather_f32";
constexpr llvm::StringLiteral kStateChunk = "trx_state_chunk";
constexpr llvm::StringLiteral kZeroAllGatherParam = "trx_zero_all_gather_param";

/// A bucket of gradient buffers reduced in place as one message, at the
/// accumulation boundary only (the runtime skips it on the other
/// micro-batches): (memref<?xi64> param_indices, i32 op, i64 axis_mask).
constexpr llvm::StringLiteral kAllReduceGrads = "trx_all_reduce_grads";

/// A gradient region, () -> (): the collectives and kernels between begin
/// and end may run behind the compute work before begin (on CUDA with
/// NCCL: on the communication stream) and are joined by
/// trx_comm_wait_grads, which the driver calls before the optimizer step.
/// ZeRO-2 puts each gradient's reduce-scatter and the accumulation of its
/// chunk in one.
constexpr llvm::StringLiteral kCommGradsBegin = "trx_comm_grads_begin";
constexpr llvm::StringLiteral kCommGradsEnd = "trx_comm_grads_end";

/// Blocking point-to-point messages between members of a group of mesh
/// axes (a pipeline's neighbouring stages): (memref<?xf32> buf, i64 peer,
/// i64 tag, i64 axis_mask); `peer` is the other member's position in the
/// group, `tag` tells apart the messages of one pair (a send matches the
/// recv with the same tag). recv fills `buf`.
constexpr llvm::StringLiteral kSendF32 = "trx_send_f32";
constexpr llvm::StringLiteral kRecvF32 = "trx_recv_f32";

/// --trace: brackets of one stage function call of a pipeline schedule, for
/// the run's measured timeline (plain C functions): begin(i64 kind, i64
/// micro_batch) with kind 0 forward, 1 backward; end().
constexpr llvm::StringLiteral kTraceBegin = "trx_trace_begin";
constexpr llvm::StringLiteral kTraceEnd = "trx_trace_end";

/// CUDA target: waits for the device (the compute and communication
/// streams) before host code touches memory; a plain C function, () -> ().
/// triax-insert-host-syncs calls it before the compiled code's host-side
/// loads and stores.
constexpr llvm::StringLiteral kHostSync = "trx_cuda_host_sync";

// The kinds of state buffers per parameter (the index is the position of
// the `triax.param` in its model) are triax_abi.h's trx_state_kind.

/// The entry points the lowering produces from `@forward`,
/// `@forward_backward` (or dist-pipeline's `@pipeline_step`) and
/// `@optimizer_step`, with `llvm.emit_c_interface`. The training step keeps
/// its scalars in device memory (the host neither reads device memory nor
/// waits inside a step), so its two entries hand them over in a 0-d f32
/// buffer the caller owns, `memref<f32>` (C: `{float *allocated, *aligned;
/// int64_t offset;}`):
/// - triax_forward(memref tokens, memref targets) -> f32: the mean loss
///   (evaluation; the host reads it);
/// - triax_forward_backward(memref tokens, memref targets,
///   memref<f32> loss_acc): adds the call's mean loss to loss_acc[0] and
///   accumulates the gradients;
/// - triax_optimizer_step(f32 lr, i64 step, f32 grad_scale,
///   memref<f32> grad_norm): writes the global norm of the scaled
///   gradients (before clipping) to grad_norm[0], then clips and updates.
constexpr llvm::StringLiteral kForwardEntry = "triax_forward";
constexpr llvm::StringLiteral kForwardBackwardEntry = "triax_forward_backward";
constexpr llvm::StringLiteral kOptimizerStepEntry = "triax_optimizer_step";

} // namespace triax::rt

#endif // TRIAX_CONVERSION_RUNTIMEABI_H
