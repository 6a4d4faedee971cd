//===- blas.cpp - The GEMMs on cuBLASLt -----------------------------------===//
//
// The compiled code's GEMMs (trx_sgemm, trx_gemm_bf16, trx_gemm_bf16_f32
// and their _batched forms) are the CPU runtime's entries
// (lib/cpu/kernel_abi.cpp): they check the operands (shapes, strides,
// overlap), handle the empty cases, and hand a row-major problem to
// trx_gemm_compute, which runs it on the active device (lib/cpu/device.h).
// The CUDA device's GEMM, cuda::gemm, runs it on cuBLASLt, on the runtime's
// compute stream, asynchronously like the kernel launches
// (TRX_CUDA_SYNC=1 waits after each).
//
// Row-major C = alpha op(A) op(B) + beta C is column-major
// C^T = alpha op(B)^T op(A)^T + beta C^T: cuBLASLt gets B as its A and A
// as its B, with the same transpose flags, and N, M swapped.
//
// Bias epilogue (trx_sgemm_bias, trx_gemm_bf16_bias): the problem's
// row-major C_row[m, n] is C^T_col[n, m], so the column-major D that
// cuBLASLt writes is N x M with n as its ROW index. CUBLASLT_EPILOGUE_BIAS
// adds bias[row] to every column of D (the vector's length must be D's row
// count), i.e. bias[n] to C_row[m, n] for every m: exactly the linear
// layer's bias broadcast over C's rows. The entries hand a bias only with
// a row-major C (a transposed C is filled with the bias on the host and
// accumulated into, beta 1) and beta 0; the bias has C's element type
// (CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE set to D's type, also its default).
// Should the heuristic have no epilogue algorithm for a problem (the bias
// pointer's alignment is one of its inputs), the plan is the plain GEMM and
// the bias is copied into C's rows on the device (fillRowsWithBias:
// stream-ordered device-to-device copies) and accumulated into with beta 1.
//
// GELU epilogues (trx_*_bias_gelu, trx_*_dgelu; the problem's epilogue,
// aux and ldaux): the row-major M x N aux with row stride ldaux is, like
// C, a column-major N x M matrix with leading dimension ldaux, which is
// what CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER / _AUX_LD describe (aux
// of D's type, the default CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_DATA_TYPE).
// TRX_GEMM_EPI_GELU_AUX is CUBLASLT_EPILOGUE_GELU_AUX_BIAS (the bias as
// above; D = gelu(AB + bias), aux = AB + bias), TRX_GEMM_EPI_DGELU is
// CUBLASLT_EPILOGUE_DGELU (D = AB gelu'(aux)). cuBLASLt computes the GELU
// in fp32 from the unrounded product with its own tanh, so a bf16 result
// can differ from the CPU's (which reads the rounded aux / product back)
// by about an ulp. cuBLASLt needs AUX_LD a multiple of 8 and a 16-byte
// aligned aux; with anything else, or when the heuristic has no algorithm
// for the epilogue, the plan is the GEMM without the GELU part (into aux,
// with the bias, for GELU_AUX; into C for DGELU), after which the host
// applies the CPU runtime's formulas (trx_gemm_epilogue_host) on host
// copies of aux and C (trx_copy_to_host, which waits for the GEMM; C goes
// back with trx_copy_to_device): correct but slow, and said once per
// process on stderr.
//
// Precision: fp32 accumulation everywhere (CUBLAS_COMPUTE_32F, f32 alpha
// and beta). f32 operands stay f32 (no TF32: that would take
// CUBLAS_COMPUTE_32F_FAST_TF32), so the numbers match the CPU target's
// OpenBLAS within fp32 rounding. bf16 operands with a bf16 C round once, at
// the end; split-K partial sums are kept in fp32 (the reduction schemes that
// would store them as bf16 are excluded from the heuristic).
//
// Each distinct problem shape (types, transposes, sizes, leading dimensions,
// batch strides, pointer alignments) gets a matmul descriptor, three layouts
// and the heuristic's best algorithm once; they are cached for the run. One
// 32 MiB workspace serves every GEMM: they are ordered on one stream.
//
// The CPU runtime's trx_sgemm used to reach cuBLAS through cblas_sgemm;
// cblas_sgemm stays defined here (on the same path) because the CPU
// device's GEMM (always linked) still names it and the CUDA binaries link
// no OpenBLAS.
//
//===----------------------------------------------------------------------===//

#include "../cpu/gemm_padding.h"
#include "../cpu/internal.h"
#include "cuda_internal.h"
#include "triax_rt.h"
#include "triax_rt_cuda.h"

#include <cblas.h>
#include <cublasLt.h>

#include <array>
#include <atomic>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>

namespace {

std::atomic<uint64_t> gemms{0};

/// One 32 MiB workspace, NVIDIA's recommendation for Hopper.
constexpr size_t kWorkspaceBytes = size_t(32) << 20;

[[noreturn]] void failLt(const char *call, cublasStatus_t status) {
  char what[256];
  snprintf(what, sizeof(what), "%s: %s", cublasLtGetStatusName(status),
           cublasLtGetStatusString(status));
  triax::rt::cuda::fail(call, what);
}

/// Runs a cuBLASLt call; a failure ends the job with
/// "<call> failed: <status name>: <description>" and the rank.
#define TRX_LT(call)                                                           \
  do {                                                                         \
    cublasStatus_t trx_lt_status_ = (call);                                    \
    if (trx_lt_status_ != CUBLAS_STATUS_SUCCESS)                               \
      failLt(#call, trx_lt_status_);                                           \
  } while (0)

struct LtState {
  cublasLtHandle_t handle = nullptr;
  CUdeviceptr workspace = 0;
};

/// The handle and the workspace, created at the first GEMM (after CUDA is
/// initialized on the runtime's device).
LtState &lt() {
  static LtState state = [] {
    (void)triax::rt::cuda::stream(); // initializes CUDA, context current
    LtState s;
    TRX_LT(cublasLtCreate(&s.handle));
    TRX_CU(cuMemAlloc(&s.workspace, kWorkspaceBytes));
    return s;
  }();
  return state;
}

/// The largest power of two (at most 256) that divides the address of
/// every matrix of an operand: its base and, in a batch, its batch stride.
uint32_t alignmentOf(const void *p, int64_t batch, int64_t stride,
                     size_t elem) {
  uint64_t bits = uint64_t(reinterpret_cast<uintptr_t>(p)) | 256u;
  if (batch > 1 && stride != 0)
    bits |= uint64_t(stride) * elem;
  return uint32_t(bits & (~bits + 1)); // lowest set bit
}

/// A problem's cache key: everything the descriptors and the heuristic see.
using PlanKey = std::array<int64_t, 21>;

struct Plan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulAlgo_t algo;
  size_t workspace = 0;
  /// A bias problem the heuristic had no epilogue algorithm for (an
  /// unusually aligned bias, say): the plan is the plain GEMM, and the
  /// bias is written into C on the host first and accumulated into (beta 1).
  bool biasOnHost = false;
  /// A GELU epilogue cuBLASLt cannot do here (aux's leading dimension or
  /// alignment, or no algorithm): no descriptors; cuda::gemm runs
  /// the problem without the GELU part, then the formula on the host.
  bool epilogueOnHost = false;
  /// Why, for the warning.
  const char *hostReason = nullptr;
};

/// cuBLASLt's rules for the GELU aux matrix: AUX_LD a multiple of 8, the
/// pointer 16-byte aligned.
constexpr int64_t kAuxLdMultiple = 8;
constexpr uint32_t kAuxAlignment = 16;

const char *epilogueName(int32_t epilogue) {
  switch (epilogue) {
  case TRX_GEMM_EPI_GELU_AUX:
    return "GELU_AUX_BIAS";
  case TRX_GEMM_EPI_DGELU:
    return "DGELU";
  default:
    return "none";
  }
}

const char *typeName(int32_t type) {
  switch (type) {
  case TRX_GEMM_F32:
    return "f32";
  case TRX_GEMM_BF16:
    return "bf16";
  case TRX_GEMM_BF16_F32:
    return "bf16 -> f32";
  default:
    return "unknown";
  }
}

/// A column-major layout of `rows` x `cols` with leading dimension `ld`,
/// `batch` matrices `stride` elements apart.
cublasLtMatrixLayout_t layout(cudaDataType_t type, int64_t rows, int64_t cols,
                              int64_t ld, int64_t batch, int64_t stride) {
  cublasLtMatrixLayout_t l = nullptr;
  TRX_LT(
      cublasLtMatrixLayoutCreate(&l, type, uint64_t(rows), uint64_t(cols), ld));
  if (batch > 1) {
    int32_t count = int32_t(batch);
    TRX_LT(cublasLtMatrixLayoutSetAttribute(
        l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof(count)));
    TRX_LT(cublasLtMatrixLayoutSetAttribute(
        l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride,
        sizeof(stride)));
  }
  return l;
}

/// Builds the descriptors of `p` and asks the heuristic for its best
/// algorithm.
Plan makePlan(const trx_gemm_problem &p, uint32_t alignA, uint32_t alignB,
              uint32_t alignC, uint32_t alignAux) {
  cudaDataType_t ab = p.type == TRX_GEMM_F32 ? CUDA_R_32F : CUDA_R_16BF;
  cudaDataType_t ct = p.type == TRX_GEMM_BF16 ? CUDA_R_16BF : CUDA_R_32F;
  Plan plan;
  if (p.epilogue != TRX_GEMM_EPI_NONE) {
    if (p.ldaux % kAuxLdMultiple != 0) {
      plan.epilogueOnHost = true;
      plan.hostReason = "aux's row stride is not a multiple of 8";
      return plan;
    }
    if (alignAux < kAuxAlignment) {
      plan.epilogueOnHost = true;
      plan.hostReason = "aux is not 16-byte aligned";
      return plan;
    }
  }
  TRX_LT(cublasLtMatmulDescCreate(&plan.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  // Column-major: Lt's A is the problem's B and Lt's B the problem's A.
  int32_t opA = p.transB ? CUBLAS_OP_T : CUBLAS_OP_N;
  int32_t opB = p.transA ? CUBLAS_OP_T : CUBLAS_OP_N;
  TRX_LT(cublasLtMatmulDescSetAttribute(plan.desc, CUBLASLT_MATMUL_DESC_TRANSA,
                                        &opA, sizeof(opA)));
  TRX_LT(cublasLtMatmulDescSetAttribute(plan.desc, CUBLASLT_MATMUL_DESC_TRANSB,
                                        &opB, sizeof(opB)));
  if (p.bias || p.epilogue != TRX_GEMM_EPI_NONE) {
    // bias[n] along the rows of the column-major D = C^T (see the top).
    uint32_t epilogue = CUBLASLT_EPILOGUE_BIAS;
    if (p.epilogue == TRX_GEMM_EPI_GELU_AUX)
      epilogue =
          p.bias ? CUBLASLT_EPILOGUE_GELU_AUX_BIAS : CUBLASLT_EPILOGUE_GELU_AUX;
    else if (p.epilogue == TRX_GEMM_EPI_DGELU)
      epilogue = CUBLASLT_EPILOGUE_DGELU;
    int32_t biasType = ct;
    TRX_LT(cublasLtMatmulDescSetAttribute(
        plan.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof(epilogue)));
    if (p.bias) {
      TRX_LT(cublasLtMatmulDescSetAttribute(plan.desc,
                                            CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE,
                                            &biasType, sizeof(biasType)));
      // The heuristic reads the pointer's alignment (the key holds it);
      // each call sets its own pointer again.
      TRX_LT(cublasLtMatmulDescSetAttribute(plan.desc,
                                            CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                                            &p.bias, sizeof(p.bias)));
    }
    if (p.epilogue != TRX_GEMM_EPI_NONE) {
      // aux: column-major N x M, leading dimension ldaux (see the top);
      // the pointer like the bias's (alignment in the key, set per call).
      int64_t ldaux = p.ldaux;
      TRX_LT(cublasLtMatmulDescSetAttribute(
          plan.desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &p.aux,
          sizeof(p.aux)));
      TRX_LT(cublasLtMatmulDescSetAttribute(
          plan.desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &ldaux,
          sizeof(ldaux)));
    }
  }
  // Stored row-major B is (transB ? N x K : K x N): column-major, the
  // transpose (transB ? K x N : N x K); likewise A.
  plan.a = layout(ab, p.transB ? p.K : p.N, p.transB ? p.N : p.K, p.ldb,
                  p.batch, p.strideB);
  plan.b = layout(ab, p.transA ? p.M : p.K, p.transA ? p.K : p.M, p.lda,
                  p.batch, p.strideA);
  plan.c = layout(ct, p.N, p.M, p.ldc, p.batch, p.strideC);

  cublasLtMatmulPreference_t pref = nullptr;
  TRX_LT(cublasLtMatmulPreferenceCreate(&pref));
  uint64_t workspace = kWorkspaceBytes;
  TRX_LT(cublasLtMatmulPreferenceSetAttribute(
      pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace,
      sizeof(workspace)));
  // The operands are views (head blocks, offsets): tell the heuristic the
  // alignment they have instead of its default 256 bytes.
  TRX_LT(cublasLtMatmulPreferenceSetAttribute(
      pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &alignB,
      sizeof(alignB)));
  TRX_LT(cublasLtMatmulPreferenceSetAttribute(
      pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &alignA,
      sizeof(alignA)));
  TRX_LT(cublasLtMatmulPreferenceSetAttribute(
      pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &alignC,
      sizeof(alignC)));
  TRX_LT(cublasLtMatmulPreferenceSetAttribute(
      pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &alignC,
      sizeof(alignC)));
  // A bf16 C keeps split-K partial sums in fp32: no in-place or
  // output-type (bf16) reduction.
  if (p.type == TRX_GEMM_BF16) {
    uint32_t mask = CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE;
    TRX_LT(cublasLtMatmulPreferenceSetAttribute(
        pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, &mask, sizeof(mask)));
  }
  cublasLtMatmulHeuristicResult_t result = {};
  int found = 0;
  TRX_LT(cublasLtMatmulAlgoGetHeuristic(lt().handle, plan.desc, plan.a, plan.b,
                                        plan.c, plan.c, pref, 1, &result,
                                        &found));
  TRX_LT(cublasLtMatmulPreferenceDestroy(pref));
  if (p.epilogue != TRX_GEMM_EPI_NONE &&
      (found < 1 || result.state != CUBLAS_STATUS_SUCCESS)) {
    TRX_LT(cublasLtMatrixLayoutDestroy(plan.a));
    TRX_LT(cublasLtMatrixLayoutDestroy(plan.b));
    TRX_LT(cublasLtMatrixLayoutDestroy(plan.c));
    TRX_LT(cublasLtMatmulDescDestroy(plan.desc));
    Plan host;
    host.epilogueOnHost = true;
    host.hostReason = "cuBLASLt's heuristic has no algorithm for it";
    return host;
  }
  if (p.bias && (found < 1 || result.state != CUBLAS_STATUS_SUCCESS)) {
    TRX_LT(cublasLtMatrixLayoutDestroy(plan.a));
    TRX_LT(cublasLtMatrixLayoutDestroy(plan.b));
    TRX_LT(cublasLtMatrixLayoutDestroy(plan.c));
    TRX_LT(cublasLtMatmulDescDestroy(plan.desc));
    trx_gemm_problem plain = p;
    plain.bias = nullptr;
    Plan fallback = makePlan(plain, alignA, alignB, alignC, alignAux);
    fallback.biasOnHost = true;
    return fallback;
  }
  if (found < 1 || result.state != CUBLAS_STATUS_SUCCESS) {
    char what[512];
    snprintf(what, sizeof(what),
             "no algorithm for a %s GEMM M=%" PRId64 " N=%" PRId64 " K=%" PRId64
             " batch=%" PRId64 " transA=%d transB=%d lda=%" PRId64
             " ldb=%" PRId64 " ldc=%" PRId64 " (alignments A %u, B %u, C %u "
             "bytes)%s%s%s",
             typeName(p.type), p.M, p.N, p.K, p.batch, p.transA, p.transB,
             p.lda, p.ldb, p.ldc, alignA, alignB, alignC,
             p.bias ? " with a bias epilogue" : "", found < 1 ? "" : ": ",
             found < 1 ? "" : cublasLtGetStatusName(result.state));
    triax::rt::cuda::fail("cublasLtMatmulAlgoGetHeuristic", what);
  }
  plan.algo = result.algo;
  plan.workspace = result.workspaceSize;
  return plan;
}

/// C's M rows (row stride ldc, row-major) = the N-element bias, on the
/// device in stream order: the bias into row 0, then rows [0, r) copied to
/// [r, 2r) with 2-D copies (source and destination rows disjoint), doubling
/// r: log2(M) + 1 copies.
void fillRowsWithBias(const trx_gemm_problem &p, CUstream s) {
  const size_t elem = p.type == TRX_GEMM_BF16 ? 2 : 4;
  const size_t width = size_t(p.N) * elem, pitch = size_t(p.ldc) * elem;
  const CUdeviceptr c = reinterpret_cast<CUdeviceptr>(p.C);
  TRX_CU(cuMemcpyDtoDAsync(c, reinterpret_cast<CUdeviceptr>(p.bias), width, s));
  for (int64_t filled = 1; filled < p.M; filled *= 2) {
    const int64_t rows = std::min(filled, p.M - filled);
    CUDA_MEMCPY2D copy = {};
    copy.srcMemoryType = CU_MEMORYTYPE_DEVICE;
    copy.srcDevice = c;
    copy.srcPitch = pitch;
    copy.dstMemoryType = CU_MEMORYTYPE_DEVICE;
    copy.dstDevice = c + CUdeviceptr(size_t(filled) * pitch);
    copy.dstPitch = pitch;
    copy.WidthInBytes = width;
    copy.Height = size_t(rows);
    TRX_CU(cuMemcpy2DAsync(&copy, s));
  }
}

/// The cached plan of `p`.
const Plan &planFor(const trx_gemm_problem &p) {
  static std::mutex mutex;
  static std::map<PlanKey, Plan> plans;
  size_t abElem = p.type == TRX_GEMM_F32 ? 4 : 2;
  size_t cElem = p.type == TRX_GEMM_BF16 ? 2 : 4;
  uint32_t alignA = alignmentOf(p.A, p.batch, p.strideA, abElem);
  uint32_t alignB = alignmentOf(p.B, p.batch, p.strideB, abElem);
  uint32_t alignC = alignmentOf(p.C, p.batch, p.strideC, cElem);
  uint32_t alignBias = p.bias ? alignmentOf(p.bias, 1, 0, cElem) : 0;
  bool epi = p.epilogue != TRX_GEMM_EPI_NONE;
  uint32_t alignAux = epi ? alignmentOf(p.aux, 1, 0, cElem) : 0;
  PlanKey key = {
      p.type,    p.transA,          p.transB,  p.M,        p.N,
      p.K,       p.batch,           p.lda,     p.ldb,      p.ldc,
      p.strideA, p.strideB,         p.strideC, alignA,     alignB,
      alignC,    p.bias != nullptr, alignBias, p.epilogue, epi ? p.ldaux : 0,
      alignAux};
  std::lock_guard<std::mutex> lock(mutex);
  auto it = plans.find(key);
  if (it == plans.end())
    it =
        plans.emplace(key, makePlan(p, alignA, alignB, alignC, alignAux)).first;
  return it->second;
}

/// A staged operand's copy: a scratch block (trx_alloc, an activation
/// block, so not zeroed by the allocator) holding the operand with its rows
/// padded (triax::rt::PaddedOperand), filled and emptied with stream-ordered
/// memsets and 2-D copies.
struct Scratch {
  Scratch(const triax::rt::PaddedOperand &o, const void *user)
      : o(o), user(const_cast<void *>(user)) {
    ptr = trx_alloc(o.bytes(), TRX_MEM_ACTIV);
    if (!ptr)
      triax::rt::cuda::fail("trx_gemm_compute",
                            "out of device memory for a padded copy of a "
                            "GEMM operand");
  }
  ~Scratch() { trx_free(ptr); } // reused in stream order
  /// The copy: zeros, then the operand's rows x cols.
  void fill(CUstream s) const {
    TRX_CU(
        cuMemsetD8Async(reinterpret_cast<CUdeviceptr>(ptr), 0, o.bytes(), s));
    copy(/*in=*/true, s);
  }
  /// The operand's rows x cols between the user's buffer and the copy.
  void copy(bool in, CUstream s) const {
    CUDA_MEMCPY2D c = {};
    c.srcMemoryType = c.dstMemoryType = CU_MEMORYTYPE_DEVICE;
    CUdeviceptr u = reinterpret_cast<CUdeviceptr>(user),
                p = reinterpret_cast<CUdeviceptr>(ptr);
    c.srcDevice = in ? u : p;
    c.srcPitch = size_t(in ? o.ld : o.paddedLd) * o.elem;
    c.dstDevice = in ? p : u;
    c.dstPitch = size_t(in ? o.paddedLd : o.ld) * o.elem;
    c.WidthInBytes = size_t(o.cols) * o.elem;
    c.Height = size_t(o.rows);
    TRX_CU(cuMemcpy2DAsync(&c, s));
  }
  triax::rt::PaddedOperand o;
  void *user;
  void *ptr = nullptr;
};

/// A plain GEMM with unaligned rows, or with an M, N or K that is not a
/// whole number of 16-byte groups, runs on padded copies
/// (triax::rt::planPaddedGemm): A and B copied in with zero padding, C
/// computed there (copied in first when beta is not 0) and copied out,
/// all stream-ordered. On the H200 the LM head's weight gradient of gpt2
/// (vocabulary 50,257) went from 8.5 to 2.5 ms on row-aligned copies,
/// while the two bf16-output LM-head GEMMs kept sm_75 `align1` kernels
/// (22.8 ms), hence the padded dimensions too (not yet timed). Returns
/// false when the problem needs no copy.
bool gemmOnPaddedCopies(const trx_gemm_problem &p) {
  triax::rt::PaddedGemm plan;
  if (!triax::rt::planPaddedGemm(p, plan))
    return false;
  CUstream s = triax::rt::cuda::launchStream();
  trx_gemm_problem &q = plan.problem;
  std::optional<Scratch> a, b, c;
  if (plan.a.staged) {
    a.emplace(plan.a, p.A);
    a->fill(s);
    q.A = a->ptr;
    q.lda = plan.a.paddedLd;
  }
  if (plan.b.staged) {
    b.emplace(plan.b, p.B);
    b->fill(s);
    q.B = b->ptr;
    q.ldb = plan.b.paddedLd;
  }
  if (plan.c.staged) {
    c.emplace(plan.c, p.C);
    if (p.beta != 0.0f)
      c->fill(s);
    q.C = c->ptr;
    q.ldc = plan.c.paddedLd;
  }
  triax::rt::cuda::gemm(&q);
  if (c)
    c->copy(/*in=*/false, s);
  return true;
}

} // namespace

void triax::rt::cuda::gemm(const trx_gemm_problem *p) {
  if (!p || p->M < 1 || p->N < 1 || p->K < 1 || p->batch < 1 ||
      p->type < TRX_GEMM_F32 || p->type > TRX_GEMM_BF16_F32)
    triax::rt::cuda::fail("trx_gemm_compute",
                          "invalid problem (the GEMM entries hand over only "
                          "non-empty, checked problems)");
  if (p->bias &&
      (p->type == TRX_GEMM_BF16_F32 || p->batch != 1 || p->beta != 0.0f))
    triax::rt::cuda::fail("trx_gemm_compute",
                          "a bias epilogue takes an f32 or bf16 C, batch 1 "
                          "and beta 0");
  if (p->epilogue != TRX_GEMM_EPI_NONE &&
      ((p->epilogue != TRX_GEMM_EPI_GELU_AUX &&
        p->epilogue != TRX_GEMM_EPI_DGELU) ||
       p->type == TRX_GEMM_BF16_F32 || p->batch != 1 || p->beta != 0.0f ||
       !p->aux || p->ldaux < p->N))
    triax::rt::cuda::fail("trx_gemm_compute",
                          "a GELU epilogue takes an f32 or bf16 C, batch 1, "
                          "beta 0 and an aux matrix with row stride >= N");
  if (gemmOnPaddedCopies(*p))
    return;
  const Plan &plan = planFor(*p);
  if (plan.epilogueOnHost) {
    // The GEMM without the GELU part on the device (into aux, with the
    // bias, for GELU_AUX; into C for DGELU), then the CPU runtime's
    // formulas on the host over managed memory.
    static std::atomic<bool> warned{false};
    if (!warned.exchange(true))
      fprintf(stderr,
              "triax runtime: warning: no cuBLASLt %s epilogue for a %s "
              "GEMM M=%" PRId64 " N=%" PRId64 " K=%" PRId64 " (ldaux %" PRId64
              "): %s; the GELU runs on the host (slow; said once)\n",
              epilogueName(p->epilogue), typeName(p->type), p->M, p->N, p->K,
              p->ldaux, plan.hostReason ? plan.hostReason : "unsupported");
    trx_gemm_problem gemm = *p;
    gemm.epilogue = TRX_GEMM_EPI_NONE;
    gemm.aux = nullptr;
    gemm.ldaux = 0;
    if (p->epilogue == TRX_GEMM_EPI_GELU_AUX) {
      gemm.C = p->aux;
      gemm.ldc = p->ldaux;
    }
    triax::rt::cuda::gemm(&gemm);
    // The formulas on host copies of aux (read) and C (written; read too
    // for DGELU): trx_copy_to_host waits for the GEMM, trx_copy_to_device
    // puts C back in stream order. Overlapping byte ranges (views of one
    // buffer) share one copy (HostSpans).
    const size_t elem = p->type == TRX_GEMM_BF16 ? 2 : 4;
    triax::rt::HostSpans spans;
    int xi = spans.add(p->aux, size_t((p->M - 1) * p->ldaux + p->N) * elem,
                       /*written=*/false);
    int ci = spans.add(p->C, size_t((p->M - 1) * p->ldc + p->N) * elem,
                       /*written=*/true);
    spans.stage();
    trx_gemm_problem host = *p;
    host.aux = spans.host(xi);
    host.C = spans.host(ci);
    trx_gemm_epilogue_host(&host);
    spans.finish();
    return;
  }
  LtState &state = lt();
  // CUstream and cudaStream_t are the same type (CUstream_st *).
  cudaStream_t stream = triax::rt::cuda::launchStream();
  // The cached descriptor of a bias plan gets this call's vector (same
  // alignment as the one the plan was made for: it is in the key), under a
  // lock from the setting to the enqueue.
  static std::mutex biasMutex;
  std::unique_lock<std::mutex> biasLock(biasMutex, std::defer_lock);
  float beta = p->beta;
  if (p->bias && plan.biasOnHost) {
    // C = the bias on every row, on the device, then accumulate (beta 1).
    fillRowsWithBias(*p, stream);
    beta = 1.0f;
  } else if (p->bias || p->epilogue != TRX_GEMM_EPI_NONE) {
    biasLock.lock();
    if (p->bias)
      TRX_LT(cublasLtMatmulDescSetAttribute(plan.desc,
                                            CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                                            &p->bias, sizeof(p->bias)));
    if (p->epilogue != TRX_GEMM_EPI_NONE)
      TRX_LT(cublasLtMatmulDescSetAttribute(
          plan.desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &p->aux,
          sizeof(p->aux)));
  }
  TRX_LT(cublasLtMatmul(state.handle, plan.desc, &p->alpha, p->B, plan.a, p->A,
                        plan.b, &beta, p->C, plan.c, p->C, plan.c, &plan.algo,
                        reinterpret_cast<void *>(state.workspace),
                        plan.workspace, stream));
  gemms.fetch_add(1, std::memory_order_relaxed);
  // Stream-ordered like the kernel launches: the host syncs before it
  // reads C (TRX_CUDA_SYNC=1 waits here).
  triax::rt::cuda::launched("cublasLtMatmul");
}

extern "C" void cblas_sgemm(OPENBLAS_CONST enum CBLAS_ORDER order,
                            OPENBLAS_CONST enum CBLAS_TRANSPOSE transA,
                            OPENBLAS_CONST enum CBLAS_TRANSPOSE transB,
                            OPENBLAS_CONST blasint M, OPENBLAS_CONST blasint N,
                            OPENBLAS_CONST blasint K,
                            OPENBLAS_CONST float alpha, OPENBLAS_CONST float *A,
                            OPENBLAS_CONST blasint lda, OPENBLAS_CONST float *B,
                            OPENBLAS_CONST blasint ldb,
                            OPENBLAS_CONST float beta, float *C,
                            OPENBLAS_CONST blasint ldc) {
  if (order != CblasRowMajor)
    triax::rt::cuda::fail("cblas_sgemm",
                          "only row-major GEMMs are supported (the runtime "
                          "passes CblasRowMajor)");
  if (M <= 0 || N <= 0 || K <= 0)
    triax::rt::cuda::fail("cblas_sgemm", "empty GEMMs are not supported here");
  trx_gemm_problem p = {};
  p.type = TRX_GEMM_F32;
  p.transA = transA != CblasNoTrans;
  p.transB = transB != CblasNoTrans;
  p.M = M;
  p.N = N;
  p.K = K;
  p.batch = 1;
  p.A = A;
  p.lda = lda;
  p.B = B;
  p.ldb = ldb;
  p.C = C;
  p.ldc = ldc;
  p.alpha = alpha;
  p.beta = beta;
  triax::rt::cuda::gemm(&p);
}

/// trx_blas_set_threads (--threads) sets OpenBLAS's threads on the CPU;
/// the CUDA target has none to set, and its binaries do not link OpenBLAS.
extern "C" void openblas_set_num_threads(int /*threads*/) {}
/// trx_blas_select_core: no OpenBLAS here, no kernels to choose.
extern "C" char *openblas_get_corename(void) { return nullptr; }

extern "C" uint64_t trx_cuda_gemms(void) {
  return gemms.load(std::memory_order_relaxed);
}
