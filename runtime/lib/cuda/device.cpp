//===- device.cpp - The CUDA device, registered ---------------------------===//
//
// The CUDA device's table (lib/cpu/device.h), made the active device from a
// global constructor: training binaries of the CUDA target link this
// archive whole (triaxc), so it runs before main and before anything is
// allocated. Its attention is the library attention.cpp registers
// (libtriax_rt_cudnn.a, linked by `--attention=cudnn` binaries), else a
// decline: the compiled code's own kernels run.
//
//===----------------------------------------------------------------------===//

#include "../cpu/device.h"
#include "cuda_internal.h"

#include <atomic>

namespace {

// Zero-initialized (static storage) before any constructor runs.
std::atomic<triax::rt::cuda::AttentionFn> attentionLibrary;

} // namespace

void triax::rt::cuda::registerAttention(AttentionFn fn) {
  attentionLibrary.store(fn, std::memory_order_release);
}

int32_t triax::rt::cuda::attention(const trx_attention_problem *problem,
                                   int32_t backward) {
  AttentionFn fn = attentionLibrary.load(std::memory_order_acquire);
  return fn ? fn(problem, backward) : 1;
}

namespace {

const triax::rt::Device cudaDevice = {
    "cuda",
    triax::rt::cuda::alloc,
    triax::rt::cuda::release,
    triax::rt::cuda::category,
    triax::rt::cuda::copyToHost,
    triax::rt::cuda::copyToDevice,
    triax::rt::cuda::copyOnDevice,
    triax::rt::cuda::fill,
    triax::rt::cuda::sync,
    triax::rt::cuda::gemm,
    triax::rt::cuda::attention,
};

struct Registration {
  Registration() { triax::rt::registerDevice(&cudaDevice); }
} registration;

} // namespace
