//===- copy.cpp - Host <-> device copies and their counters ---------------===//
//
// trx_copy_to_host, trx_copy_to_device, trx_copy_on_device and
// trx_device_memset (triax_rt.h): every host access of a trx_alloc'd block
// goes through them. They count every call (countCopy) and hand the bytes
// to the active device (device.h): memcpy, memmove and memset here, where a
// block is host memory; the CUDA driver API on the CUDA device
// (lib/cuda/copy.cpp).
//
//===----------------------------------------------------------------------===//

#include "device.h"
#include "internal.h"
#include "triax_rt.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

struct CopyCounters {
  std::atomic<uint64_t> calls[TRX_COPY_NKINDS];
  std::atomic<uint64_t> bytes[TRX_COPY_NKINDS];
};

// Zero-initialized (static storage), usable before main.
CopyCounters counters;

bool validKind(int kind) { return kind >= 0 && kind < TRX_COPY_NKINDS; }

/// A NULL pointer with bytes > 0 is a runtime bug: a message, then abort()
/// (like the kernel ABI's checks).
void checkPointers(const char *fn, const void *dst, const void *src,
                   size_t bytes) {
  if (bytes == 0 || (dst && src))
    return;
  fprintf(stderr, "triax runtime: %s: NULL %s pointer for %zu bytes\n", fn,
          dst ? "source" : "destination", bytes);
  fflush(stderr);
  std::abort();
}

} // namespace

void triax::rt::countCopy(int kind, const char *fn, const void *dst,
                          const void *src, size_t bytes) {
  checkPointers(fn, dst, src, bytes);
  counters.calls[kind].fetch_add(1, std::memory_order_relaxed);
  counters.bytes[kind].fetch_add(bytes, std::memory_order_relaxed);
}

bool (*triax::rt::gDeviceMemoryHook)(const void *) = nullptr;

bool triax::rt::isDeviceMemory(const void *p) {
  return p && gDeviceMemoryHook && gDeviceMemoryHook(p);
}

// The CPU device's copies: its blocks are host memory.
void triax::rt::host::copyToHost(void *dst, const void *src, size_t bytes) {
  if (dst != src)
    std::memcpy(dst, src, bytes);
}

void triax::rt::host::copyToDevice(void *dst, const void *src, size_t bytes) {
  if (dst != src)
    std::memcpy(dst, src, bytes);
}

void triax::rt::host::copyOnDevice(void *dst, const void *src, size_t bytes) {
  if (dst != src)
    std::memmove(dst, src, bytes);
}

void triax::rt::host::fill(void *dst, int byte, size_t bytes) {
  std::memset(dst, byte, bytes);
}

extern "C" void trx_copy_to_host(void *dst, const void *device_src,
                                 size_t bytes) {
  triax::rt::countCopy(TRX_COPY_TO_HOST, "trx_copy_to_host", dst, device_src,
                       bytes);
  if (bytes)
    triax::rt::activeDevice().copyToHost(dst, device_src, bytes);
}

extern "C" void trx_copy_to_device(void *device_dst, const void *src,
                                   size_t bytes) {
  triax::rt::countCopy(TRX_COPY_TO_DEVICE, "trx_copy_to_device", device_dst,
                       src, bytes);
  if (bytes)
    triax::rt::activeDevice().copyToDevice(device_dst, src, bytes);
}

extern "C" void trx_copy_on_device(void *device_dst, const void *device_src,
                                   size_t bytes) {
  triax::rt::countCopy(TRX_COPY_ON_DEVICE, "trx_copy_on_device", device_dst,
                       device_src, bytes);
  if (bytes)
    triax::rt::activeDevice().copyOnDevice(device_dst, device_src, bytes);
}

extern "C" void trx_device_memset(void *device_dst, int byte, size_t bytes) {
  // No source: the destination stands in for it in the NULL check.
  triax::rt::countCopy(TRX_COPY_MEMSET, "trx_device_memset", device_dst,
                       device_dst, bytes);
  if (bytes)
    triax::rt::activeDevice().fill(device_dst, byte, bytes);
}

extern "C" uint64_t trx_copy_calls(int kind) {
  return validKind(kind) ? counters.calls[kind].load(std::memory_order_relaxed)
                         : 0;
}

extern "C" uint64_t trx_copy_bytes(int kind) {
  return validKind(kind) ? counters.bytes[kind].load(std::memory_order_relaxed)
                         : 0;
}

extern "C" void trx_copy_reset_counters(void) {
  for (int k = 0; k < TRX_COPY_NKINDS; ++k) {
    counters.calls[k].store(0, std::memory_order_relaxed);
    counters.bytes[k].store(0, std::memory_order_relaxed);
  }
}
