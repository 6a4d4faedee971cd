//===- mem.cpp - trx_alloc on CUDA device memory, with a cache -----------===//
//
// The CUDA device's blocks (lib/cpu/device.h: alloc, release, category),
// under the runtime's allocation API (triax_rt.h: trx_alloc, trx_free, the
// per-category current/peak counters, lib/cpu/mem.cpp).
//
// Every block is plain device memory (cuMemAlloc; never managed memory:
// asking for more managed memory than is free can hang the GPU). The host
// never dereferences a block: the runtime reads and writes them with the
// copy hooks (copy.cpp: trx_copy_to_host, trx_copy_to_device,
// trx_device_memset). The block's size and category live in a host-side
// table, not in a header in front of the block.
//
// Caching: trx_free puts a block on the free list of its size class
// (multiples of 512 bytes below 1 MiB, then four classes per power of two),
// and trx_alloc takes one from there before asking CUDA. Reuse needs no
// synchronization: kernels, GEMMs, memsets and the copy hooks' copies all
// run on the compute stream in program order, so the next user's work runs
// after the last user's. No block waits for the host: the host touches
// blocks only through the copy hooks, which are stream-ordered too.
//
// Work off the compute stream: a gradient region (trx_comm_grads_begin/
// end) runs its collectives and kernels on the communication stream. A
// block freed inside one, or one the region's collectives used
// (deferReuse), carries an event of that stream, and whoever gets the
// block next waits for it on the device (cuStreamWaitEvent, no host wait).
// A block allocated inside a region is handed out behind the compute
// stream (its zeroing, the waits above), which the communication stream
// then waits for. TRX_CUDA_ALLOC=direct turns the cache off: cuMemAlloc
// (and the zeroing) per block, cuMemFree (which waits for the device) per
// free.
//
// Zero fill: blocks of the state categories (TRX_MEM_PARAMS, _GRADS,
// _OPTIM, _OTHER) are zeroed once at allocation by the device
// (cuMemsetD8Async on the compute stream, ordered before any later use);
// TRX_MEM_ACTIV blocks (the compiled code's temporaries) are not zeroed:
// the compiled code writes every element before it reads it (checked on
// the CPU with TRX_ALLOC_POISON=1, which here fills them with 0xFF bytes).
// trx_mem_zeroed_bytes counts the zeroed bytes per category. The counters
// (the front's) keep their meaning (bytes handed out and not yet freed, per
// category, and their peaks); the bytes held from CUDA (handed out plus cached,
// rounded to the size classes) are counted apart: trx_cuda_mem_reserved /
// trx_cuda_mem_reserved_peak.
//
//===----------------------------------------------------------------------===//

#include "../cpu/internal.h"
#include "cuda_internal.h"
#include "triax_rt.h"
#include "triax_rt_cuda.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <vector>

using namespace triax::rt;

namespace {

struct Block {
  size_t bytes;
  int category;
  CUdeviceptr base; // What cuMemAlloc returned.
  size_t reserved;  // Its size (the size class; 0 when not cached).
  CUevent pending;  // Work off the compute stream that may use it, or null.
};

/// A cached block and what its next user waits for (or null).
struct Cached {
  CUdeviceptr base;
  CUevent pending;
};

/// The CUDA device's own counters (the front, lib/cpu/mem.cpp, counts the
/// bytes handed out per category).
struct Counters {
  std::atomic<uint64_t> allocations;
  std::atomic<uint64_t> cacheHits;
  std::atomic<size_t> reserved;
  std::atomic<size_t> peakReserved;
};

// Zero-initialized (static storage), usable before main.
Counters counters;

// Guards the table and the free lists.
std::mutex &tableMutex() {
  static std::mutex m;
  return m;
}
/// User pointer -> block, ordered so that a pointer inside a block finds
/// it (deferReuse).
std::map<uintptr_t, Block> &table() {
  static std::map<uintptr_t, Block> t;
  return t;
}
/// Size class -> cached blocks of that size.
std::map<size_t, std::vector<Cached>> &freeLists() {
  static std::map<size_t, std::vector<Cached>> f;
  return f;
}

void raiseTo(std::atomic<size_t> &peak, size_t value) {
  size_t prev = peak.load(std::memory_order_relaxed);
  while (prev < value &&
         !peak.compare_exchange_weak(prev, value, std::memory_order_relaxed))
    ;
}

bool caching() {
  static const bool on = [] {
    const char *v = std::getenv("TRX_CUDA_ALLOC");
    if (!v || !*v || std::strcmp(v, "cache") == 0)
      return true;
    if (std::strcmp(v, "direct") == 0)
      return false;
    fprintf(stderr,
            "triax runtime: TRX_CUDA_ALLOC='%s' is not cache or direct; "
            "using the cache\n",
            v);
    return true;
  }();
  return on;
}

constexpr size_t kMiB = size_t(1) << 20;

/// TRX_ALLOC_POISON=1 (triax_rt.h), read at every activation allocation
/// like the CPU runtime's.
bool poisonActivations() {
  const char *v = std::getenv("TRX_ALLOC_POISON");
  return v && std::strcmp(v, "1") == 0;
}

} // namespace

/// The size class of a request of `bytes`: a multiple of 512 below 1 MiB;
/// from 1 MiB, the next of 2^k, 1.25 2^k, 1.5 2^k, 1.75 2^k (at most 25%
/// over). 0 when the rounding overflows.
extern "C" size_t trx_cuda_size_class(size_t bytes) {
  if (bytes == 0)
    bytes = 1;
  if (bytes < kMiB)
    return (bytes + 511) & ~size_t(511);
  int k = 63 - __builtin_clzll((unsigned long long)bytes); // 2^k <= bytes
  size_t quarter = (size_t(1) << k) / 4;
  size_t rounded = (bytes + quarter - 1) / quarter * quarter;
  return rounded < bytes ? 0 : rounded;
}

namespace {

/// Frees every cached block (after the device is done with them): the
/// cache gives its memory back when CUDA runs out.
void releaseCache() {
  triax::rt::cuda::hostSync("returning cached blocks to CUDA");
  std::lock_guard<std::mutex> lock(tableMutex());
  for (auto &[size, blocks] : freeLists()) {
    for (Cached &block : blocks) {
      if (block.pending)
        TRX_CU(cuEventDestroy(block.pending));
      TRX_CU(cuMemFree(block.base));
      counters.reserved.fetch_sub(size, std::memory_order_relaxed);
    }
    blocks.clear();
  }
}

} // namespace

void *triax::rt::cuda::alloc(const char *fn, size_t bytes, size_t align,
                             int category) {
  // cuMemAlloc aligns to at least 256 bytes; larger alignments pad.
  size_t pad = align > 256 ? align : 0;
  size_t total = (bytes ? bytes : 1) + pad;
  if (total < bytes) {
    setLastError("%s: size %zu bytes is too large", fn, bytes);
    return nullptr;
  }
  CUstream s = triax::rt::cuda::stream(); // CUDA up, context current.
  bool cache = caching();
  size_t reserved = cache ? trx_cuda_size_class(total) : 0;
  if (cache && reserved == 0) {
    setLastError("%s: size %zu bytes is too large", fn, bytes);
    return nullptr;
  }
  CUdeviceptr base = 0;
  CUevent pending = nullptr;
  if (cache) {
    std::lock_guard<std::mutex> lock(tableMutex());
    auto it = freeLists().find(reserved);
    if (it != freeLists().end() && !it->second.empty()) {
      base = it->second.back().base;
      pending = it->second.back().pending;
      it->second.pop_back();
      counters.cacheHits.fetch_add(1, std::memory_order_relaxed);
    }
  }
  // The block's last users off the compute stream finish first.
  if (pending) {
    TRX_CU(cuStreamWaitEvent(s, pending, 0));
    TRX_CU(cuEventDestroy(pending));
  }
  if (!base) {
    size_t size = cache ? reserved : total;
    CUresult rc = cuMemAlloc(&base, size);
    if (rc == CUDA_ERROR_OUT_OF_MEMORY && cache) {
      releaseCache();
      rc = cuMemAlloc(&base, size);
    }
    if (rc != CUDA_SUCCESS) {
      const char *name = nullptr;
      cuGetErrorName(rc, &name);
      setLastError("%s: cuMemAlloc of %zu bytes (%s) failed: %s", fn, bytes,
                   trx_mem_category_name(category),
                   name ? name : "unknown error");
      return nullptr;
    }
    if (cache) {
      size_t held =
          counters.reserved.fetch_add(size, std::memory_order_relaxed) + size;
      raiseTo(counters.peakReserved, held);
    }
    counters.allocations.fetch_add(1, std::memory_order_relaxed);
  }
  // The state categories are zeroed once, by the device, in stream order:
  // after the last user's kernels, before the next use (a kernel, or a
  // copy hook's copy). Activations are not (poisoned on request).
  if (category != TRX_MEM_ACTIV) {
    TRX_CU(cuMemsetD8Async(base, 0, total, s));
  } else if (poisonActivations()) {
    TRX_CU(cuMemsetD8Async(base, 0xFF, total, s));
  }
  // Inside a gradient region the block's users run on the communication
  // stream: after the zeroing and the waits above.
  CUstream users = triax::rt::cuda::launchStream();
  if (users != s)
    triax::rt::cuda::streamWaits(users, s);
  uintptr_t user = uintptr_t(base);
  if (pad)
    user = (user + align - 1) & ~uintptr_t(align - 1);
  {
    std::lock_guard<std::mutex> lock(tableMutex());
    table()[user] = Block{bytes, category, base, reserved, nullptr};
  }
  return reinterpret_cast<void *>(user);
}

bool triax::rt::cuda::release(void *p, size_t *bytes, int *category) {
  Block block;
  {
    std::lock_guard<std::mutex> lock(tableMutex());
    auto it = table().find(uintptr_t(p));
    if (it == table().end()) {
      setLastError("trx_free: pointer %p was not returned by trx_alloc or "
                   "was already freed",
                   p);
      return false;
    }
    block = it->second;
    table().erase(it);
  }
  *bytes = block.bytes;
  *category = block.category;
  // Freed inside a gradient region: the next user waits for the region's
  // work so far (which includes every use of the block on that stream).
  CUstream users = triax::rt::cuda::launchStream();
  if (block.reserved && users != triax::rt::cuda::stream()) {
    if (block.pending)
      TRX_CU(cuEventDestroy(block.pending));
    block.pending = triax::rt::cuda::newEvent();
    TRX_CU(cuEventRecord(block.pending, users));
  }
  if (block.reserved) {
    // Reused in compute-stream order: no wait beyond the pending event.
    std::lock_guard<std::mutex> lock(tableMutex());
    freeLists()[block.reserved].push_back(Cached{block.base, block.pending});
    return true;
  }
  // cuMemFree waits for the work that may still use the block.
  if (block.pending)
    TRX_CU(cuEventDestroy(block.pending));
  TRX_CU(cuMemFree(block.base));
  return true;
}

void triax::rt::cuda::deferReuse(const void *p, CUevent done) {
  {
    std::lock_guard<std::mutex> lock(tableMutex());
    auto it = table().upper_bound(uintptr_t(p));
    if (it != table().begin()) {
      --it;
      Block &block = it->second;
      if (uintptr_t(p) < it->first + std::max<size_t>(block.bytes, 1)) {
        // A later event of the same stream covers the earlier one.
        std::swap(block.pending, done);
      }
    }
  }
  if (done)
    TRX_CU(cuEventDestroy(done));
}

bool triax::rt::cuda::ownsPointer(const void *p) {
  if (!p)
    return false;
  std::lock_guard<std::mutex> lock(tableMutex());
  auto it = table().upper_bound(uintptr_t(p));
  if (it == table().begin())
    return false;
  --it;
  return uintptr_t(p) < it->first + std::max<size_t>(it->second.bytes, 1);
}

int triax::rt::cuda::category(const void *p) {
  std::lock_guard<std::mutex> lock(tableMutex());
  auto it = table().find(uintptr_t(p));
  return it == table().end() ? -1 : it->second.category;
}

extern "C" uint64_t trx_cuda_allocations(void) {
  return counters.allocations.load(std::memory_order_relaxed);
}

extern "C" uint64_t trx_cuda_cache_hits(void) {
  return counters.cacheHits.load(std::memory_order_relaxed);
}

extern "C" size_t trx_cuda_mem_reserved(void) {
  return counters.reserved.load(std::memory_order_relaxed);
}

extern "C" size_t trx_cuda_mem_reserved_peak(void) {
  return counters.peakReserved.load(std::memory_order_relaxed);
}
