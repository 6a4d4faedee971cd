//===- device.h - Where the buffers live and the GEMMs run -----*- C++ -*-===//
//
// The runtime's front is the same on every target: trx_alloc / trx_free and
// the memory counters (mem.cpp), the copy hooks and their counters
// (copy.cpp), trx_device_sync (util.cpp) and the GEMM entries' checks
// and the attention entries' (kernel_abi.cpp). What differs is a Device, a
// table of the functions under them:
//  - "cpu": host memory with a header per block and a cache of activation
//    blocks (mem.cpp), memcpy / memset (copy.cpp), OpenBLAS or --blas
//    (kernel_abi.cpp), no attention library. The default.
//  - "cuda": plain device memory with a cache per size class (cuMemAlloc,
//    never managed memory), the copies on the CUDA driver API, cuBLASLt,
//    cuDNN's attention (lib/cuda/), registered by the CUDA runtime from a
//    global constructor (lib/cuda/device.cpp).
// activeDevice() is the registered device when there is one, the CPU
// otherwise: the rule trx_dist_init applies to the transports
// (transport.h). One definition of each trx_* function, none weak, so the
// choice does not depend on the order of the archives on the link line.
//
// Not installed and not part of the ABI.
//
//===----------------------------------------------------------------------===//

#ifndef TRIAX_RT_LIB_CPU_DEVICE_H
#define TRIAX_RT_LIB_CPU_DEVICE_H

#include "triax_rt.h"

#include <cstddef>

namespace triax::rt {

struct Device {
  /// "cpu", "cuda".
  const char *name;
  /// A block of `bytes` aligned to `align` (a power of two, at least 64)
  /// for a valid category. Blocks of every category but TRX_MEM_ACTIV are
  /// zeroed (the front counts them in trx_mem_zeroed_bytes);
  /// TRX_MEM_ACTIV blocks are filled with 0xFF bytes under
  /// TRX_ALLOC_POISON=1. nullptr with trx_last_error set (naming `fn`) when
  /// there is no memory.
  void *(*alloc)(const char *fn, size_t bytes, size_t align, int category);
  /// Takes back a block `alloc` returned, giving its size and category.
  /// false, with trx_last_error set, for a pointer it did not hand out or
  /// that is already freed (nothing is freed then).
  bool (*release)(void *p, size_t *bytes, int *category);
  /// The category of a live block, or -1 (best effort, like release's
  /// check).
  int (*category)(const void *p);
  /// The copy hooks' data movement (triax_rt.h's contracts: copyToHost
  /// waits for the device, the others are ordered with its work); called
  /// with bytes > 0 and non-NULL pointers.
  void (*copyToHost)(void *dst, const void *src, size_t bytes);
  void (*copyToDevice)(void *dst, const void *src, size_t bytes);
  void (*copyOnDevice)(void *dst, const void *src, size_t bytes);
  void (*fill)(void *dst, int byte, size_t bytes);
  /// Waits for the device's queued work.
  void (*sync)();
  /// Runs one checked GEMM (trx_gemm_compute's contract).
  void (*gemm)(const trx_gemm_problem *problem);
  /// Runs one checked attention or declines (trx_attention_compute's
  /// contract).
  int32_t (*attention)(const trx_attention_problem *problem, int32_t backward);
};

/// The CPU device's functions (mem.cpp, copy.cpp, kernel_abi.cpp), the
/// table hostDevice() returns.
namespace host {
void *alloc(const char *fn, size_t bytes, size_t align, int category);
bool release(void *p, size_t *bytes, int *category);
int category(const void *p);
void copyToHost(void *dst, const void *src, size_t bytes);
void copyToDevice(void *dst, const void *src, size_t bytes);
void copyOnDevice(void *dst, const void *src, size_t bytes);
void fill(void *dst, int byte, size_t bytes);
void gemm(const trx_gemm_problem *problem);
/// Declines every attention: the CPU has no attention library (the
/// compiled code's own kernels run).
int32_t attention(const trx_attention_problem *problem, int32_t backward);
} // namespace host

/// The CPU's table (host memory, OpenBLAS).
const Device &hostDevice();

/// Makes `device` the active one. Called from a global constructor (the
/// CUDA runtime's), before anything is allocated; keeps the pointer only.
void registerDevice(const Device *device);

/// The registered device, or the CPU's.
const Device &activeDevice();

} // namespace triax::rt

#endif // TRIAX_RT_LIB_CPU_DEVICE_H
