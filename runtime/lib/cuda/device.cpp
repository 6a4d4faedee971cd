//===- device.cpp - The CUDA device, registered ---------------------------===//
//
// The CUDA device's table (lib/cpu/device.h), made the active device from a
// global constructor: training binaries of the CUDA target link this
// archive whole (triaxc), so it runs before main and before anything is
// allocated.
//
//===----------------------------------------------------------------------===//

#include "../cpu/device.h"
#include "cuda_internal.h"

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
};

struct Registration {
  Registration() { triax::rt::registerDevice(&cudaDevice); }
} registration;

} // namespace
