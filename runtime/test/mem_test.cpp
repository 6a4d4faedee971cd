//===- mem_test.cpp - trx_alloc / peak accounting tests
//--------------------===//
//
// Usage: triax-rt-mem-test        run all checks
//
//===----------------------------------------------------------------------===//

#include "check.h"
#include "triax_rt.h"

#include <atomic>
#include <thread>

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

} // namespace

int main() {
  testAlignmentAndZero();
  testAccounting();
  testBadInput();
  testThreads();
  trxtest::done("mem");
  return 0;
}
