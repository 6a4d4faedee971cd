//===- mem.cpp - Tracked, aligned allocations
//------------------------------===//
//
// trx_alloc places a 64-byte header in front of every block (so the block
// stays 64-byte aligned) recording its size, category and the start of the
// underlying allocation (trx_alloc_aligned pads in front for alignments
// above 64); lock-free atomic counters track current and peak bytes per
// category and in total, and the bytes zero-filled per category.
//
// Blocks of the state categories are zero-filled. TRX_MEM_ACTIV blocks (the
// compiled code's temporaries) are not, as on CUDA: a compiled program
// writes every element before it reads it, which TRX_ALLOC_POISON=1 checks
// by filling them with 0xFF bytes (NaN in f32 and bf16; test/e2e/poison).
//
// A freed TRX_MEM_ACTIV block is kept in a cache by its size and alignment
// and handed out again by the next allocation of that size: a training step
// allocates the same temporaries in the same order every step, so after the
// first step its activations take no fresh pages from the kernel (no page
// faults, no zeroing by the kernel) and no memset. The cache holds at most
// the peak of the step's activations, which the process held anyway.
//
//===----------------------------------------------------------------------===//

#include "device.h"
#include "internal.h"
#include "triax_rt.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

using namespace triax::rt;

namespace {

constexpr size_t kAlign = 64;
constexpr uint64_t kLiveMagic = 0x5452584d454d4c56ULL;  // "TRXMEMLV"
constexpr uint64_t kFreedMagic = 0x5452584d454d4652ULL; // "TRXMEMFR"

struct alignas(kAlign) BlockHeader {
  uint64_t magic;
  uint64_t bytes;
  int32_t category;
  void *base;   // What aligned_alloc returned (freed by trx_free).
  size_t total; // aligned_alloc's size and alignment (the cache's key).
  size_t align;
};
static_assert(sizeof(BlockHeader) == kAlign, "header must keep alignment");

struct Counters {
  std::atomic<size_t> current[TRX_MEM_NCAT];
  std::atomic<size_t> peak[TRX_MEM_NCAT];
  std::atomic<size_t> currentTotal;
  std::atomic<size_t> peakTotal;
  std::atomic<size_t> zeroed[TRX_MEM_NCAT];
};

// Zero-initialized (static storage), usable before main.
Counters counters;

void raiseTo(std::atomic<size_t> &peak, size_t value) {
  size_t prev = peak.load(std::memory_order_relaxed);
  while (prev < value &&
         !peak.compare_exchange_weak(prev, value, std::memory_order_relaxed))
    ;
}

bool validCategory(int cat) { return cat >= 0 && cat < TRX_MEM_NCAT; }

/// Freed activation blocks by (total, align), reused before aligned_alloc.
struct ActivationCache {
  std::mutex mutex;
  std::map<std::pair<size_t, size_t>, std::vector<void *>> free;

  void *take(size_t total, size_t align) {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = free.find({total, align});
    if (it == free.end() || it->second.empty())
      return nullptr;
    void *raw = it->second.back();
    it->second.pop_back();
    return raw;
  }
  void give(void *raw, size_t total, size_t align) {
    std::lock_guard<std::mutex> lock(mutex);
    free[{total, align}].push_back(raw);
  }
};

/// Never destroyed: blocks may be freed during static destruction.
ActivationCache &activationCache() {
  static auto *cache = new ActivationCache;
  return *cache;
}

/// TRX_ALLOC_POISON=1, read at every activation allocation (so that a test
/// can switch it).
bool poisonActivations() {
  const char *v = std::getenv("TRX_ALLOC_POISON");
  return v && std::strcmp(v, "1") == 0;
}

/// Counts a block handed out by the active device.
void counted(size_t bytes, int category) {
  if (category != TRX_MEM_ACTIV)
    counters.zeroed[category].fetch_add(bytes, std::memory_order_relaxed);
  size_t cur =
      counters.current[category].fetch_add(bytes, std::memory_order_relaxed) +
      bytes;
  raiseTo(counters.peak[category], cur);
  size_t tot =
      counters.currentTotal.fetch_add(bytes, std::memory_order_relaxed) + bytes;
  raiseTo(counters.peakTotal, tot);
}

void *allocImpl(const char *fn, size_t bytes, size_t align, int category) {
  if (!validCategory(category)) {
    setLastError("%s: invalid memory category %d (expected 0..%d)", fn,
                 category, TRX_MEM_NCAT - 1);
    return nullptr;
  }
  void *p = activeDevice().alloc(fn, bytes, align, category);
  if (p)
    counted(bytes, category);
  return p;
}

} // namespace

/// The CPU device's blocks. The layout: [padding][BlockHeader][bytes...],
/// where the user pointer is `align`-aligned (align >= kAlign) and the
/// header sits right before it. With align == kAlign there is no padding.
void *triax::rt::host::alloc(const char *fn, size_t bytes, size_t align,
                             int category) {
  size_t rounded = (bytes + align - 1) & ~(align - 1);
  if (rounded < bytes || rounded > SIZE_MAX - align) {
    setLastError("%s: size %zu bytes is too large", fn, bytes);
    return nullptr;
  }
  // The header needs kAlign bytes in front of the block; with a larger
  // alignment a whole `align` bytes keep the block aligned.
  size_t total = rounded + align;
  bool activ = category == TRX_MEM_ACTIV;
  void *raw = activ ? activationCache().take(total, align) : nullptr;
  if (!raw)
    raw = std::aligned_alloc(align, total);
  if (!raw) {
    setLastError("%s: out of memory allocating %zu bytes (%s)", fn, bytes,
                 trx_mem_category_name(category));
    return nullptr;
  }
  char *user = static_cast<char *>(raw) + align;
  if (activ) {
    std::memset(raw, 0, align); // the header's bytes
    if (poisonActivations())
      std::memset(user, 0xFF, total - align);
  } else {
    std::memset(raw, 0, total);
  }
  auto *h = reinterpret_cast<BlockHeader *>(user - sizeof(BlockHeader));
  h->magic = kLiveMagic;
  h->bytes = bytes;
  h->category = category;
  h->base = raw;
  h->total = total;
  h->align = align;
  return user;
}

bool triax::rt::host::release(void *p, size_t *bytes, int *category) {
  if (reinterpret_cast<uintptr_t>(p) % kAlign != 0) {
    setLastError("trx_free: pointer %p was not returned by trx_alloc", p);
    return false;
  }
  auto *h = reinterpret_cast<BlockHeader *>(static_cast<char *>(p) -
                                            sizeof(BlockHeader));
  if (h->magic != kLiveMagic || !validCategory(h->category)) {
    setLastError("trx_free: pointer %p %s", p,
                 h->magic == kFreedMagic ? "was already freed"
                                         : "was not returned by trx_alloc");
    return false;
  }
  h->magic = kFreedMagic;
  *bytes = h->bytes;
  *category = h->category;
  if (h->category == TRX_MEM_ACTIV)
    activationCache().give(h->base, h->total, h->align);
  else
    std::free(h->base);
  return true;
}

int triax::rt::host::category(const void *p) {
  if (!p || reinterpret_cast<uintptr_t>(p) % kAlign != 0)
    return -1;
  auto *h = reinterpret_cast<const BlockHeader *>(static_cast<const char *>(p) -
                                                  sizeof(BlockHeader));
  return h->magic == kLiveMagic && validCategory(h->category) ? h->category
                                                              : -1;
}

extern "C" void *trx_alloc(size_t bytes, int category) {
  return allocImpl("trx_alloc", bytes, kAlign, category);
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
  return allocImpl("trx_alloc_aligned", bytes,
                   alignment < kAlign ? kAlign : alignment, category);
}

extern "C" void trx_free(void *p) {
  if (!p)
    return;
  size_t bytes = 0;
  int category = 0;
  if (!activeDevice().release(p, &bytes, &category)) {
    fprintf(stderr, "triax runtime: %s; not freed\n", trx_last_error());
    return;
  }
  counters.current[category].fetch_sub(bytes, std::memory_order_relaxed);
  counters.currentTotal.fetch_sub(bytes, std::memory_order_relaxed);
}

int triax::rt::allocCategory(const void *p) {
  return p ? activeDevice().category(p) : -1;
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

extern "C" size_t trx_mem_zeroed_bytes(int cat) {
  return validCategory(cat)
             ? counters.zeroed[cat].load(std::memory_order_relaxed)
             : 0;
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
