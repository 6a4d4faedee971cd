//===- mem_test.cpp - trx_alloc / peak accounting tests
//--------------------===//
//
// Usage: triax-rt-mem-test        run all checks
//
//===----------------------------------------------------------------------===//

#include "check.h"
#include "device.h"
#include "triax_rt.h"

#include <atomic>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <string>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <utility>
#include <vector>

namespace {

void testAlignmentAndZero() {
  for (size_t n : {size_t(0), size_t(1), size_t(63), size_t(64), size_t(65),
                   size_t(4096), size_t(1) << 20}) {
    auto *p = static_cast<unsigned char *>(trx_alloc(n, TRX_MEM_OTHER));
    CHECK(p != nullptr);
    CHECK_EQ(reinterpret_cast<uintptr_t>(p) % 64, uintptr_t(0));
    bool zero = true;
    for (size_t i = 0; i < n; ++i)
      zero = zero && p[i] == 0;
    CHECK(zero);
    if (n)
      memset(p, 0xAB, n); // The whole block is writable.
    trx_free(p);
  }
  // bytes == 0 gives distinct pointers.
  void *a = trx_alloc(0, TRX_MEM_OTHER);
  void *b = trx_alloc(0, TRX_MEM_OTHER);
  CHECK(a && b && a != b);
  trx_free(a);
  trx_free(b);
  trx_free(nullptr); // No-op.
}

void testAccounting() {
  trx_mem_reset_peaks();
  size_t base[TRX_MEM_NCAT];
  for (int c = 0; c < TRX_MEM_NCAT; ++c)
    base[c] = trx_mem_current(c);
  size_t baseTotal = trx_mem_current_total();

  // Sequence (bytes): params +1000, grads +500, free params, activ +3000,
  // optim +200.
  // Totals over time: 1000, 1500, 500, 3500, 3700 -> peak_total = 3700.
  // Per category peaks: params 1000, grads 500, activ 3000, optim 200.
  void *p = trx_alloc(1000, TRX_MEM_PARAMS);
  CHECK_EQ(trx_mem_current(TRX_MEM_PARAMS), base[TRX_MEM_PARAMS] + 1000);
  void *g = trx_alloc(500, TRX_MEM_GRADS);
  CHECK_EQ(trx_mem_current_total(), baseTotal + 1500);
  CHECK_EQ(trx_mem_peak_total(), baseTotal + 1500);
  trx_free(p);
  CHECK_EQ(trx_mem_current(TRX_MEM_PARAMS), base[TRX_MEM_PARAMS]);
  CHECK_EQ(trx_mem_peak(TRX_MEM_PARAMS), base[TRX_MEM_PARAMS] + 1000);
  void *a = trx_alloc(3000, TRX_MEM_ACTIV);
  void *o = trx_alloc(200, TRX_MEM_OPTIM);
  CHECK_EQ(trx_mem_current_total(), baseTotal + 3700);
  CHECK_EQ(trx_mem_peak_total(), baseTotal + 3700);
  CHECK_EQ(trx_mem_peak(TRX_MEM_GRADS), base[TRX_MEM_GRADS] + 500);
  CHECK_EQ(trx_mem_peak(TRX_MEM_ACTIV), base[TRX_MEM_ACTIV] + 3000);
  CHECK_EQ(trx_mem_peak(TRX_MEM_OPTIM), base[TRX_MEM_OPTIM] + 200);
  trx_free(a);
  // The sum of per-category peaks (1000+500+3000+200 = 4700) is larger than
  // the true peak of the total (3700).
  CHECK_EQ(trx_mem_peak_total(), baseTotal + 3700);
  CHECK_EQ(trx_mem_current_total(), baseTotal + 700);

  // Reset: peaks drop to the current values.
  trx_mem_reset_peaks();
  CHECK_EQ(trx_mem_peak_total(), baseTotal + 700);
  CHECK_EQ(trx_mem_peak(TRX_MEM_ACTIV), base[TRX_MEM_ACTIV]);
  CHECK_EQ(trx_mem_peak(TRX_MEM_GRADS), base[TRX_MEM_GRADS] + 500);
  trx_free(g);
  trx_free(o);
  CHECK_EQ(trx_mem_current_total(), baseTotal);
}

void testBadInput() {
  CHECK(trx_alloc(16, -1) == nullptr);
  CHECK_STREQ(trx_last_error(),
              "trx_alloc: invalid memory category -1 (expected 0..4)");
  CHECK(trx_alloc(16, TRX_MEM_NCAT) == nullptr);
  CHECK(trx_alloc(SIZE_MAX - 10, TRX_MEM_OTHER) == nullptr);
  CHECK(strstr(trx_last_error(), "too large") != nullptr);
  CHECK_EQ(trx_mem_current(99), size_t(0));
  CHECK_EQ(trx_mem_peak(-3), size_t(0));
  CHECK_STREQ(trx_mem_category_name(TRX_MEM_OPTIM), "optim");
  CHECK_STREQ(trx_mem_category_name(42), "invalid");

  // Foreign pointers are reported and left alone, not crashes. (A double
  // free is detected only while the block's header is intact, so it is not
  // tested: reading freed memory is undefined behavior.)
  size_t before = trx_mem_current_total();
  alignas(64) static unsigned char foreign[256];
  trx_free(foreign + 64);
  CHECK(strstr(trx_last_error(), "was not returned by trx_alloc") != nullptr);
  trx_free(foreign + 3);
  CHECK(strstr(trx_last_error(), "was not returned by trx_alloc") != nullptr);
  CHECK_EQ(trx_mem_current_total(), before);

  char buf[32];
  CHECK_STREQ(trx_format_mib(size_t(3) << 20, buf, sizeof(buf)), "3.0 MiB");
  CHECK_STREQ(trx_format_mib(1536 * 1024, buf, sizeof(buf)), "1.5 MiB");
}

void testThreads() {
  // 4 threads x 2000 alloc/free pairs of 1 KiB; afterwards the counters are
  // back to the start and the peak is bounded by 4 live blocks per thread.
  size_t base = trx_mem_current_total();
  trx_mem_reset_peaks();
  std::vector<std::thread> ts;
  std::atomic<bool> ok{true};
  for (int t = 0; t < 4; ++t)
    ts.emplace_back([&ok, t] {
      for (int i = 0; i < 2000; ++i) {
        void *blocks[4];
        for (void *&b : blocks)
          if (!(b = trx_alloc(1024, t % TRX_MEM_NCAT)))
            ok = false;
        for (void *b : blocks)
          trx_free(b);
      }
    });
  for (auto &t : ts)
    t.join();
  CHECK(ok.load());
  CHECK_EQ(trx_mem_current_total(), base);
  CHECK(trx_mem_peak_total() >= base + 4 * 1024);
  CHECK(trx_mem_peak_total() <= base + 16 * 1024);
}

/// Whether all `n` bytes at p are `byte`.
bool allBytes(const void *p, size_t n, unsigned char byte) {
  const auto *b = static_cast<const unsigned char *>(p);
  for (size_t i = 0; i < n; ++i)
    if (b[i] != byte)
      return false;
  return true;
}

/// Activation blocks (trx_alloc of TRX_MEM_ACTIV and the compiled code's
/// _mlir_memref_to_llvm_alloc) are not zero-filled (nor counted as zeroed),
/// and a freed one is handed out again for the next allocation of its size;
/// TRX_ALLOC_POISON=1 fills them with 0xFF bytes, fresh or reused; every
/// other category stays zero-filled; trx_mem_zeroed_bytes counts the zeroed
/// blocks only.
void testPoisonAndZeroedBytes() {
  const char *saved = getenv("TRX_ALLOC_POISON");
  std::string savedValue = saved ? saved : "";
  size_t zeroed[TRX_MEM_NCAT];
  for (int c = 0; c < TRX_MEM_NCAT; ++c)
    zeroed[c] = trx_mem_zeroed_bytes(c);
  CHECK_EQ(trx_mem_zeroed_bytes(-1), size_t(0));
  CHECK_EQ(trx_mem_zeroed_bytes(TRX_MEM_NCAT), size_t(0));

  // Default: not zeroed, not counted; freed blocks come back for their
  // size (LIFO), with what was written in them; other sizes get others.
  unsetenv("TRX_ALLOC_POISON");
  void *a = trx_alloc(1000, TRX_MEM_ACTIV);
  void *m = _mlir_memref_to_llvm_alloc(256);
  CHECK(a && m);
  CHECK_EQ(trx_mem_zeroed_bytes(TRX_MEM_ACTIV), zeroed[TRX_MEM_ACTIV]);
  std::memset(a, 0x5A, 1000);
  trx_free(a);
  _mlir_memref_to_llvm_free(m);
  void *other = trx_alloc(2000, TRX_MEM_ACTIV);
  void *again = trx_alloc(1000, TRX_MEM_ACTIV);
  CHECK(other != a);
  CHECK(again == a);
  CHECK(allBytes(again, 1000, 0x5A));
  CHECK_EQ(trx_mem_current(TRX_MEM_ACTIV) >= 3000, true);
  trx_free(again);
  trx_free(other);
  CHECK_EQ(trx_mem_zeroed_bytes(TRX_MEM_ACTIV), zeroed[TRX_MEM_ACTIV]);

  // Poisoned: 0xFF in activations (a NaN as f32), nothing counted; the
  // state categories are still zeroed and counted.
  setenv("TRX_ALLOC_POISON", "1", 1);
  a = trx_alloc(1000, TRX_MEM_ACTIV);
  m = _mlir_memref_to_llvm_aligned_alloc(256, 64 * sizeof(float));
  void *g = trx_alloc(4096, TRX_MEM_GRADS);
  void *o = trx_alloc(100, TRX_MEM_OTHER);
  CHECK(a && m && g && o);
  CHECK(allBytes(a, 1000, 0xFF));
  CHECK(allBytes(m, 64 * sizeof(float), 0xFF));
  CHECK(std::isnan(static_cast<float *>(m)[63]));
  CHECK_EQ(static_cast<int32_t *>(a)[0], -1);
  CHECK(allBytes(g, 4096, 0));
  CHECK(allBytes(o, 100, 0));
  CHECK_EQ(trx_mem_zeroed_bytes(TRX_MEM_ACTIV), zeroed[TRX_MEM_ACTIV]);
  CHECK_EQ(trx_mem_zeroed_bytes(TRX_MEM_GRADS), zeroed[TRX_MEM_GRADS] + 4096);
  CHECK_EQ(trx_mem_zeroed_bytes(TRX_MEM_OTHER), zeroed[TRX_MEM_OTHER] + 100);
  // The block is still a normal block: freed by the compiled code's free.
  _mlir_memref_to_llvm_free(m);
  trx_free(a);
  trx_free(g);
  trx_free(o);

  // A reused block is poisoned again.
  a = trx_alloc(1000, TRX_MEM_ACTIV);
  std::memset(a, 0, 1000);
  trx_free(a);
  void *b = trx_alloc(1000, TRX_MEM_ACTIV);
  CHECK(b == a);
  CHECK(allBytes(b, 1000, 0xFF));
  trx_free(b);

  // Only "1" poisons.
  setenv("TRX_ALLOC_POISON", "0", 1);
  a = trx_alloc(64, TRX_MEM_ACTIV);
  std::memset(a, 0x11, 64);
  trx_free(a);
  b = trx_alloc(64, TRX_MEM_ACTIV);
  CHECK(b == a);
  CHECK(allBytes(b, 64, 0x11));
  trx_free(b);

  if (saved)
    setenv("TRX_ALLOC_POISON", savedValue.c_str(), 1);
  else
    unsetenv("TRX_ALLOC_POISON");
}

/// The copy hooks on the CPU (memcpy / memmove / memset) and their
/// counters.
void testCopyHooks() {
  trx_copy_reset_counters();
  for (int k = 0; k < TRX_COPY_NKINDS; ++k) {
    CHECK_EQ(trx_copy_calls(k), uint64_t(0));
    CHECK_EQ(trx_copy_bytes(k), uint64_t(0));
  }
  CHECK_EQ(trx_copy_calls(-1), uint64_t(0));
  CHECK_EQ(trx_copy_bytes(TRX_COPY_NKINDS), uint64_t(0));

  auto *dev =
      static_cast<float *>(trx_alloc(64 * sizeof(float), TRX_MEM_OTHER));
  CHECK(dev != nullptr);
  float host[64], back[64];
  for (int i = 0; i < 64; ++i)
    host[i] = float(i) * 0.5f - 3.0f;
  trx_copy_to_device(dev, host, sizeof(host));
  memset(back, 0, sizeof(back));
  trx_copy_to_host(back, dev, sizeof(back));
  CHECK(memcmp(host, back, sizeof(host)) == 0);
  // On the device: [0, 32) -> [16, 48) (overlapping: memmove on the CPU).
  trx_copy_on_device(dev + 16, dev, 32 * sizeof(float));
  trx_copy_to_host(back, dev, sizeof(back));
  bool moved = true;
  for (int i = 0; i < 64; ++i) {
    float want = i < 16 ? host[i] : i < 48 ? host[i - 16] : host[i];
    moved = moved && back[i] == want;
  }
  CHECK(moved);
  trx_device_memset(dev + 8, 0xFF, 4 * sizeof(float));
  trx_device_memset(dev, 0, 0); // counted, nothing done
  trx_copy_to_host(back, dev, sizeof(back));
  CHECK(allBytes(back + 8, 4 * sizeof(float), 0xFF));
  CHECK_EQ(back[7], host[7]);
  CHECK_EQ(back[12], host[12]);
  trx_copy_to_host(nullptr, nullptr, 0); // nothing to copy: no pointer needed

  CHECK_EQ(trx_copy_calls(TRX_COPY_TO_DEVICE), uint64_t(1));
  CHECK_EQ(trx_copy_bytes(TRX_COPY_TO_DEVICE), uint64_t(256));
  CHECK_EQ(trx_copy_calls(TRX_COPY_TO_HOST), uint64_t(4));
  CHECK_EQ(trx_copy_bytes(TRX_COPY_TO_HOST), uint64_t(3 * 256));
  CHECK_EQ(trx_copy_calls(TRX_COPY_ON_DEVICE), uint64_t(1));
  CHECK_EQ(trx_copy_bytes(TRX_COPY_ON_DEVICE), uint64_t(128));
  CHECK_EQ(trx_copy_calls(TRX_COPY_MEMSET), uint64_t(2));
  CHECK_EQ(trx_copy_bytes(TRX_COPY_MEMSET), uint64_t(16));
  trx_copy_reset_counters();
  CHECK_EQ(trx_copy_calls(TRX_COPY_TO_HOST), uint64_t(0));
  trx_free(dev);
}

/// Runs `body` in a child process; returns its stderr and whether it was
/// ended by SIGABRT.
template <typename F> bool abortsWith(F body, std::string &err) {
  int fds[2];
  if (pipe(fds) != 0)
    return false;
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[1], 2);
    close(fds[0]);
    body();
    _exit(0);
  }
  close(fds[1]);
  char buf[512];
  ssize_t r;
  err.clear();
  while ((r = read(fds[0], buf, sizeof(buf))) > 0)
    err.append(buf, size_t(r));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT;
}

/// A NULL pointer with bytes > 0 is a runtime bug: a message and abort().
void testCopyNullAborts() {
  float x[4] = {0, 0, 0, 0};
  std::string err;
  CHECK(abortsWith([&] { trx_copy_to_host(nullptr, x, sizeof(x)); }, err));
  CHECK_EQ(err, std::string("triax runtime: trx_copy_to_host: NULL "
                            "destination pointer for 16 bytes\n"));
  CHECK(abortsWith([&] { trx_copy_to_device(x, nullptr, 8); }, err));
  CHECK_EQ(err, std::string("triax runtime: trx_copy_to_device: NULL source "
                            "pointer for 8 bytes\n"));
  CHECK(abortsWith([&] { trx_device_memset(nullptr, 0, 4); }, err));
  CHECK_EQ(err, std::string("triax runtime: trx_device_memset: NULL "
                            "destination pointer for 4 bytes\n"));
}

} // namespace

/// A device that records what the front hands it and keeps its blocks in
/// host memory, standing in for the CUDA device (which registers itself
/// the same way): trx_alloc, trx_free, allocations' categories, the copy
/// hooks, trx_device_sync and trx_gemm_compute go to the registered table,
/// the counters stay the front's.
namespace recording {
std::string log;
std::vector<std::pair<void *, std::pair<size_t, int>>> blocks;
void *alloc(const char *fn, size_t bytes, size_t align, int category) {
  log += std::string("alloc:") + fn + ":" + std::to_string(bytes) + ":" +
         std::to_string(align) + ";";
  void *p =
      std::aligned_alloc(align, (bytes + align - 1) / align * align + align);
  blocks.push_back({p, {bytes, category}});
  return p;
}
bool release(void *p, size_t *bytes, int *category) {
  for (auto it = blocks.begin(); it != blocks.end(); ++it)
    if (it->first == p) {
      *bytes = it->second.first;
      *category = it->second.second;
      blocks.erase(it);
      std::free(p);
      log += "release;";
      return true;
    }
  log += "release?;";
  return false;
}
int category(const void *p) {
  for (auto &b : blocks)
    if (b.first == p)
      return b.second.second;
  return -1;
}
void toHost(void *d, const void *s, size_t n) {
  log += "to_host:" + std::to_string(n) + ";";
  memcpy(d, s, n);
}
void toDevice(void *d, const void *s, size_t n) {
  log += "to_device:" + std::to_string(n) + ";";
  memcpy(d, s, n);
}
void onDevice(void *d, const void *s, size_t n) {
  log += "on_device:" + std::to_string(n) + ";";
  memmove(d, s, n);
}
void fill(void *d, int byte, size_t n) {
  log += "fill:" + std::to_string(n) + ";";
  memset(d, byte, n);
}
void sync() { log += "sync;"; }
void gemm(const trx_gemm_problem *p) {
  log += "gemm:" + std::to_string(p->M) + ";";
}
const triax::rt::Device table = {"recording", alloc,    release,  category,
                                 toHost,      toDevice, onDevice, fill,
                                 sync,        gemm};
} // namespace recording

void testDeviceTable() {
  CHECK(strcmp(triax::rt::activeDevice().name, "cpu") == 0);
  void *host = trx_alloc(100, TRX_MEM_OTHER); // the CPU's block
  triax::rt::registerDevice(&recording::table);
  CHECK(strcmp(triax::rt::activeDevice().name, "recording") == 0);
  size_t before = trx_mem_current(TRX_MEM_GRADS);
  size_t zeroed = trx_mem_zeroed_bytes(TRX_MEM_GRADS);
  void *p = trx_alloc(100, TRX_MEM_GRADS);
  void *q = trx_alloc_aligned(10, 4096, TRX_MEM_ACTIV);
  CHECK(p && q);
  CHECK_EQ(trx_mem_current(TRX_MEM_GRADS), before + 100);
  CHECK_EQ(trx_mem_zeroed_bytes(TRX_MEM_GRADS), zeroed + 100);
  CHECK(trx_alloc(8, TRX_MEM_NCAT) == nullptr); // checked by the front
  char buf[100] = {1};
  trx_copy_to_device(p, buf, 100);
  trx_copy_to_host(buf, p, 100);
  trx_copy_on_device(q, p, 10);
  trx_device_memset(p, 0, 100);
  trx_device_memset(p, 0, 0); // counted, not handed over
  trx_device_sync();
  trx_gemm_problem problem = {};
  problem.M = 7;
  trx_gemm_compute(&problem);
  trx_free(p);
  trx_free(q);
  CHECK_EQ(trx_mem_current(TRX_MEM_GRADS), before);
  CHECK_EQ(recording::log,
           std::string("alloc:trx_alloc:100:64;alloc:trx_alloc_aligned:10:"
                       "4096;to_device:100;to_host:100;on_device:10;fill:100;"
                       "sync;gemm:7;release;release;"));
  triax::rt::registerDevice(&triax::rt::hostDevice());
  trx_free(host);
  CHECK_EQ(trx_mem_current(TRX_MEM_OTHER), size_t(0));
}

int main() {
  testAlignmentAndZero();
  testAccounting();
  testBadInput();
  testThreads();
  testPoisonAndZeroedBytes();
  testCopyHooks();
  testCopyNullAborts();
  testDeviceTable();
  trxtest::done("mem");
  return 0;
}
