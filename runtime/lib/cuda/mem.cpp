//===- mem.cpp - trx_alloc on CUDA managed memory
//--------------------------===//
//
// The CPU runtime's allocation API (triax_rt.h: trx_alloc, trx_free, the
// per-category current/peak counters) for the CUDA target. Training
// binaries link this archive whole before libtriax_rt.a, so these
// definitions are taken and lib/cpu/mem.cpp's object is never pulled in.
//
// Every block is CUDA managed memory: one pointer valid on the host (the
// runtime's driver fills parameters, reads the loss, writes checkpoints)
// and in the kernels and cuBLAS. Blocks are zeroed, as on the CPU, on the
// device (the pages start there). The block's size and category live in a
// host-side table, not in a header in front of the block, so that
// bookkeeping never touches a page the GPU uses.
//
//===----------------------------------------------------------------------===//

#include "../cpu/internal.h"
#include "cuda_internal.h"
#include "triax_rt.h"
#include "triax_rt_cuda.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <unordered_map>

using namespace triax::rt;

namespace {

struct Block {
  size_t bytes;
  int category;
  CUdeviceptr base; // What cuMemAllocManaged returned.
};

struct Counters {
  std::atomic<size_t> current[TRX_MEM_NCAT];
  std::atomic<size_t> peak[TRX_MEM_NCAT];
  std::atomic<size_t> currentTotal;
  std::atomic<size_t> peakTotal;
  std::atomic<uint64_t> allocations;
};

// Zero-initialized (static storage), usable before main.
Counters counters;

std::mutex &tableMutex() {
  static std::mutex m;
  return m;
}
std::unordered_map<uintptr_t, Block> &table() {
  static std::unordered_map<uintptr_t, Block> t;
  return t;
}

void raiseTo(std::atomic<size_t> &peak, size_t value) {
  size_t prev = peak.load(std::memory_order_relaxed);
  while (prev < value &&
         !peak.compare_exchange_weak(prev, value, std::memory_order_relaxed))
    ;
}

bool validCategory(int cat) { return cat >= 0 && cat < TRX_MEM_NCAT; }

void *allocImpl(const char *fn, size_t bytes, size_t align, int category) {
  if (!validCategory(category)) {
    setLastError("%s: invalid memory category %d (expected 0..%d)", fn,
                 category, TRX_MEM_NCAT - 1);
    return nullptr;
  }
  // cuMemAllocManaged aligns to at least 256 bytes; larger alignments pad.
  size_t pad = align > 256 ? align : 0;
  size_t total = (bytes ? bytes : 1) + pad;
  if (total < bytes) {
    setLastError("%s: size %zu bytes is too large", fn, bytes);
    return nullptr;
  }
  triax::rt::cuda::stream(); // CUDA up, context current.
  CUdeviceptr base = 0;
  CUresult rc = cuMemAllocManaged(&base, total, CU_MEM_ATTACH_GLOBAL);
  if (rc != CUDA_SUCCESS) {
    const char *name = nullptr;
    cuGetErrorName(rc, &name);
    setLastError("%s: cuMemAllocManaged of %zu bytes (%s) failed: %s", fn,
                 bytes, trx_mem_category_name(category),
                 name ? name : "unknown error");
    return nullptr;
  }
  CUstream s = triax::rt::cuda::stream();
  TRX_CU(cuMemsetD8Async(base, 0, total, s));
  // The host may write the block as soon as it is returned.
  TRX_CU(cuStreamSynchronize(s));
  uintptr_t user = uintptr_t(base);
  if (pad)
    user = (user + align - 1) & ~uintptr_t(align - 1);
  {
    std::lock_guard<std::mutex> lock(tableMutex());
    table()[user] = Block{bytes, category, base};
  }
  counters.allocations.fetch_add(1, std::memory_order_relaxed);
  size_t cur =
      counters.current[category].fetch_add(bytes, std::memory_order_relaxed) +
      bytes;
  raiseTo(counters.peak[category], cur);
  size_t tot =
      counters.currentTotal.fetch_add(bytes, std::memory_order_relaxed) + bytes;
  raiseTo(counters.peakTotal, tot);
  return reinterpret_cast<void *>(user);
}

} // namespace

extern "C" void *trx_alloc(size_t bytes, int category) {
  return allocImpl("trx_alloc", bytes, 64, category);
}

extern "C" void *trx_alloc_aligned(size_t bytes, size_t alignment,
                                   int category) {
  if (alignment == 0 || (alignment & (alignment - 1)) != 0) {
    setLastError("trx_alloc_aligned: alignment %zu is not a power of two",
                 alignment);
    return nullptr;
  }
  if (alignment > (size_t(1) << 30)) {
    setLastError("trx_alloc_aligned: alignment %zu is too large", alignment);
    return nullptr;
  }
  return allocImpl("trx_alloc_aligned", bytes, alignment, category);
}

extern "C" void trx_free(void *p) {
  if (!p)
    return;
  Block block;
  {
    std::lock_guard<std::mutex> lock(tableMutex());
    auto it = table().find(uintptr_t(p));
    if (it == table().end()) {
      setLastError("trx_free: pointer %p was not returned by trx_alloc or "
                   "was already freed",
                   p);
      fprintf(stderr, "triax runtime: %s; not freed\n", trx_last_error());
      return;
    }
    block = it->second;
    table().erase(it);
  }
  counters.current[block.category].fetch_sub(block.bytes,
                                             std::memory_order_relaxed);
  counters.currentTotal.fetch_sub(block.bytes, std::memory_order_relaxed);
  // cuMemFree waits for the work that may still use the block.
  TRX_CU(cuMemFree(block.base));
}

int triax::rt::allocCategory(const void *p) {
  if (!p)
    return -1;
  std::lock_guard<std::mutex> lock(tableMutex());
  auto it = table().find(uintptr_t(p));
  return it == table().end() ? -1 : it->second.category;
}

extern "C" size_t trx_mem_current(int cat) {
  return validCategory(cat)
             ? counters.current[cat].load(std::memory_order_relaxed)
             : 0;
}

extern "C" size_t trx_mem_peak(int cat) {
  return validCategory(cat) ? counters.peak[cat].load(std::memory_order_relaxed)
                            : 0;
}

extern "C" size_t trx_mem_current_total(void) {
  return counters.currentTotal.load(std::memory_order_relaxed);
}

extern "C" size_t trx_mem_peak_total(void) {
  return counters.peakTotal.load(std::memory_order_relaxed);
}

extern "C" void trx_mem_reset_peaks(void) {
  for (int c = 0; c < TRX_MEM_NCAT; ++c)
    counters.peak[c].store(counters.current[c].load(std::memory_order_relaxed),
                           std::memory_order_relaxed);
  counters.peakTotal.store(
      counters.currentTotal.load(std::memory_order_relaxed),
      std::memory_order_relaxed);
}

extern "C" const char *trx_mem_category_name(int cat) {
  switch (cat) {
  case TRX_MEM_PARAMS:
    return "params";
  case TRX_MEM_GRADS:
    return "grads";
  case TRX_MEM_OPTIM:
    return "optim";
  case TRX_MEM_ACTIV:
    return "activ";
  case TRX_MEM_OTHER:
    return "other";
  default:
    return "invalid";
  }
}

extern "C" char *trx_format_mib(size_t bytes, char *buf, size_t len) {
  if (buf && len > 0)
    snprintf(buf, len, "%.1f MiB", double(bytes) / (1024.0 * 1024.0));
  return buf;
}

extern "C" uint64_t trx_cuda_allocations(void) {
  return counters.allocations.load(std::memory_order_relaxed);
}
