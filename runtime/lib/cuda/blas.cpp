//===- blas.cpp - cblas_sgemm on cuBLAS
//-------------------------------------===//
//
// The compiled code's GEMMs call the CPU runtime's trx_sgemm
// (lib/cpu/kernel_abi.cpp), which checks the operands (shapes, strides,
// overlap) and then calls cblas_sgemm. Training binaries of the CUDA target
// link this definition and no OpenBLAS, so that call runs here, on cuBLAS,
// on the runtime's stream: the operands are managed memory.
//
// Row-major C = alpha op(A) op(B) + beta C is column-major
// C^T = alpha op(B)^T op(A)^T + beta C^T: cuBLAS gets B first, with the
// same transpose flags, and N, M swapped.
//
// fp32 in, fp32 out, fp32 accumulation (CUBLAS_COMPUTE_32F, no TF32): the
// same numbers as the CPU target within fp32 rounding. Bf16 GEMMs with
// cuBLASLt epilogues are left for the bf16 compute path (docs/cuda.md).
//
//===----------------------------------------------------------------------===//

#include "cuda_internal.h"
#include "triax_rt.h"
#include "triax_rt_cuda.h"

#include <cblas.h>
#include <cublas_v2.h>

#include <atomic>
#include <cstdio>

namespace {

std::atomic<uint64_t> gemms{0};

void failCublas(const char *call, cublasStatus_t status) {
  char what[256];
  snprintf(what, sizeof(what), "%s: %s", cublasGetStatusName(status),
           cublasGetStatusString(status));
  triax::rt::cuda::fail(call, what);
}

#define TRX_CUBLAS(call)                                                       \
  do {                                                                         \
    cublasStatus_t trx_status_ = (call);                                       \
    if (trx_status_ != CUBLAS_STATUS_SUCCESS)                                  \
      failCublas(#call, trx_status_);                                          \
  } while (0)

cublasHandle_t handle() {
  static cublasHandle_t h = [] {
    CUstream s = triax::rt::cuda::stream();
    cublasHandle_t created = nullptr;
    TRX_CUBLAS(cublasCreate(&created));
    TRX_CUBLAS(cublasSetStream(created, s));
    // fp32 exactly (no TF32 down-conversion): results comparable with the
    // CPU target's OpenBLAS.
    TRX_CUBLAS(cublasSetMathMode(created, CUBLAS_PEDANTIC_MATH));
    return created;
  }();
  return h;
}

cublasOperation_t op(CBLAS_TRANSPOSE t) {
  return t == CblasNoTrans ? CUBLAS_OP_N : CUBLAS_OP_T;
}

} // namespace

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
                          "only row-major GEMMs are supported (trx_sgemm "
                          "passes CblasRowMajor)");
  cublasHandle_t h = handle();
  TRX_CUBLAS(cublasSgemm(h, op(transB), op(transA), N, M, K, &alpha, B, ldb, A,
                         lda, &beta, C, ldc));
  gemms.fetch_add(1, std::memory_order_relaxed);
  // Stream-ordered like the kernel launches: the host syncs before it
  // reads C (TRX_CUDA_SYNC=1 waits here).
  triax::rt::cuda::launched("cublasSgemm");
}

/// trx_blas_set_threads (--threads) sets OpenBLAS's threads on the CPU;
/// the CUDA target has none to set, and its binaries do not link OpenBLAS.
extern "C" void openblas_set_num_threads(int /*threads*/) {}

extern "C" uint64_t trx_cuda_gemms(void) {
  return gemms.load(std::memory_order_relaxed);
}
