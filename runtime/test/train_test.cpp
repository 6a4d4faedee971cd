//===- train_test.cpp - lr schedule, logger and timer tests
//----------------===//
//
// Usage:
//   triax-rt-train-test                       run all checks
//   triax-rt-train-test lr STEP TOTAL LR_MAX WARMUP cosine|constant RATIO
//                                             print trx_lr_at as %.6g
//   triax-rt-train-test log [JSON_FILE]       print two sample step lines and
//                                             an eval line (peak 3.0 MiB)
//
//===----------------------------------------------------------------------===//

#include "check.h"
#include "triax_rt.h"

#include <cmath>

namespace {

void checkClose(double got, double want, int line) {
  ++trxtest::checkCount();
  if (!(std::fabs(got - want) <= 1e-6 * std::fabs(want) + 1e-12))
    trxtest::failed(__FILE__, line,
                    "lr " + std::to_string(got) + " != expected " +
                        std::to_string(want));
}
#define CHECK_LR(got, want) checkClose(double(got), double(want), __LINE__)

void testLrSchedule() {
  // lr_max = 1e-3, warmup = 10, total_steps = 110, min_lr_ratio = 0.1, so
  // min_lr = 1e-4 and the cosine runs over total - warmup = 100 steps.
  const float lr = 1e-3f;
  auto at = [&](int64_t step) {
    return trx_lr_at(step, 110, lr, 10, TRX_LR_COSINE, 0.1f);
  };
  // Warmup: lr * (step + 1) / warmup.
  CHECK_LR(at(0), 1e-4); // 1e-3 * 1/10
  CHECK_LR(at(4), 5e-4); // 1e-3 * 5/10
  CHECK_LR(at(9), 1e-3); // 1e-3 * 10/10
  // Cosine: min + 0.5 * (1 + cos(pi * r)) * (max - min), r = (s - 10) / 100.
  CHECK_LR(at(10), 1e-3); // r = 0: cos 0 = 1, coeff 1 -> lr_max
  // r = 0.25: cos(pi/4) = 0.70710678, coeff = 0.85355339,
  // 1e-4 + 0.85355339 * 9e-4 = 8.68198052e-4
  CHECK_LR(at(35), 8.68198052e-4);
  // r = 0.5: cos(pi/2) = 0, coeff = 0.5, 1e-4 + 0.5 * 9e-4 = 5.5e-4
  CHECK_LR(at(60), 5.5e-4);
  // r = 0.75: cos(3pi/4) = -0.70710678, coeff = 0.14644661,
  // 1e-4 + 0.14644661 * 9e-4 = 2.31801948e-4
  CHECK_LR(at(85), 2.31801948e-4);
  // r = 0.99 (the last step of a 110-step run): cos(0.99 pi) = -0.99950656,
  // coeff = 0.00024672, 1e-4 + 0.00024672 * 9e-4 = 1.00222047e-4
  CHECK_LR(at(109), 1.00222047e-4);
  CHECK_LR(at(110), 1e-4);  // r = 1 -> min_lr
  CHECK_LR(at(1000), 1e-4); // clamped
  CHECK(at(109) > at(110));
  CHECK_LR(at(-5), 1e-4); // Negative step counts as 0.

  // Constant schedule: warmup, then flat.
  CHECK_LR(trx_lr_at(0, 100, lr, 4, TRX_LR_CONSTANT, 0.1f), 2.5e-4);
  CHECK_LR(trx_lr_at(50, 100, lr, 4, TRX_LR_CONSTANT, 0.1f), 1e-3);
  CHECK_LR(trx_lr_at(500, 100, lr, 4, TRX_LR_CONSTANT, 0.1f), 1e-3);
  CHECK_LR(trx_lr_at(50, 100, lr, 4, 77, 0.1f), 1e-3); // Unknown -> constant.

  // No warmup: step 0 is lr_max. Ratio 0 decays to 0.
  CHECK_LR(trx_lr_at(0, 100, lr, 0, TRX_LR_COSINE, 0.0f), 1e-3);
  // r = 50/100: 0.5 * 1e-3
  CHECK_LR(trx_lr_at(50, 100, lr, 0, TRX_LR_COSINE, 0.0f), 5e-4);
  CHECK_EQ(trx_lr_at(100, 100, lr, 0, TRX_LR_COSINE, 0.0f), 0.0f);
  // total_steps <= warmup: lr_max after warmup, no division by zero.
  CHECK_LR(trx_lr_at(12, 5, lr, 10, TRX_LR_COSINE, 0.1f), 1e-3);
  CHECK_LR(trx_lr_at(10, 10, lr, 10, TRX_LR_COSINE, 0.1f), 1e-3);

  // Monotone over the whole cosine phase.
  for (int64_t s = 11; s <= 110; ++s)
    CHECK(at(s) <= at(s - 1));
}

void testTimer() {
  double t0 = trx_now_ms();
  usleep(20000);
  double t1 = trx_now_ms();
  CHECK(t1 - t0 >= 19.0);
  CHECK(t1 - t0 < 5000.0);
  CHECK(trx_now_ms() >= t1);
}

std::string readAll(FILE *f) {
  fflush(f);
  rewind(f);
  std::string s;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
    s.append(buf, n);
  return s;
}

void testLogger(const trxtest::TempDir &tmp) {
  // Peak: exactly 3 MiB allocated at once in this process.
  trx_mem_reset_peaks();
  void *p = trx_alloc(3 << 20, TRX_MEM_ACTIV);
  trx_free(p);

  std::string json = tmp / "log.jsonl";
  FILE *out = tmpfile();
  char err[512] = "";
  trx_logger *lg = trx_logger_open(out, json.c_str(), err, sizeof(err));
  CHECK(lg != nullptr);
  // 4096 tokens in 512 ms = 8000 tok/s.
  CHECK_EQ(trx_logger_step(lg, 7, 2.5f, 6e-4f, 1.25f, 4096, 512.0), TRX_OK);
  CHECK_EQ(trx_logger_step(lg, 12345, NAN, 1e-5f, 0.5f, 100, 0.0), TRX_OK);
  CHECK_EQ(trx_logger_eval(lg, 7, 3.0f), TRX_OK);
  trx_logger_close(lg);
  CHECK_EQ(readAll(out),
           std::string("step     7 | loss 2.500000 | lr 6.000e-04 | grad-norm "
                       "1.2500 |     8000 tok/s |  512.00 ms | peak 3.0 MiB\n"
                       "step 12345 | loss nan | lr 1.000e-05 | grad-norm "
                       "0.5000 |        0 tok/s |    0.00 ms | peak 3.0 MiB\n"
                       "step     7 | val loss 3.000000\n"));
  fclose(out);
  std::vector<uint8_t> j = trxtest::readFileBytes(json);
  std::string expected =
      "{\"step\":7,\"loss\":2.5,\"lr\":0.000600000028,\"grad_norm\":1.25,"
      "\"tok_per_s\":8000,\"ms\":512,\"peak_bytes\":3145728}\n"
      "{\"step\":12345,\"loss\":null,\"lr\":9.99999975e-06,\"grad_norm\":0.5,"
      "\"tok_per_s\":0,\"ms\":0,\"peak_bytes\":3145728}\n"
      "{\"step\":7,\"val_loss\":3}\n";
  CHECK_EQ(std::string(j.begin(), j.end()), expected);

  // The JSON log is appended to (e.g. across a resume).
  FILE *devnull = fopen("/dev/null", "w");
  lg = trx_logger_open(devnull, json.c_str(), err, sizeof(err));
  CHECK_EQ(trx_logger_eval(lg, 8, 2.0f), TRX_OK);
  trx_logger_close(lg);
  fclose(devnull);
  j = trxtest::readFileBytes(json);
  CHECK_EQ(std::string(j.begin(), j.end()),
           expected + "{\"step\":8,\"val_loss\":2}\n");

  // No JSON file: text only. Errors.
  lg = trx_logger_open(nullptr, nullptr, err, sizeof(err));
  CHECK(lg != nullptr);
  trx_logger_close(lg);
  std::string bad = tmp / "no/such/dir/log.jsonl";
  CHECK(trx_logger_open(nullptr, bad.c_str(), err, sizeof(err)) == nullptr);
  CHECK_STREQ(
      err, (bad + ": cannot open log file: No such file or directory").c_str());
  CHECK_EQ(trx_logger_step(nullptr, 0, 0, 0, 0, 0, 0), TRX_ERR_ARG);
  CHECK_STREQ(trx_last_error(), "trx_logger_step: NULL logger");
  trx_logger_close(nullptr);
}

} // namespace

int main(int argc, char **argv) {
  if (argc == 8 && std::string(argv[1]) == "lr") {
    int sched =
        std::string(argv[6]) == "constant" ? TRX_LR_CONSTANT : TRX_LR_COSINE;
    printf("%.6g\n", double(trx_lr_at(strtoll(argv[2], nullptr, 10),
                                      strtoll(argv[3], nullptr, 10),
                                      strtof(argv[4], nullptr),
                                      strtoll(argv[5], nullptr, 10), sched,
                                      strtof(argv[7], nullptr))));
    return 0;
  }
  if ((argc == 2 || argc == 3) && std::string(argv[1]) == "log") {
    trx_mem_reset_peaks();
    trx_free(trx_alloc(3 << 20, TRX_MEM_PARAMS));
    char err[512];
    trx_logger *lg = trx_logger_open(stdout, argc == 3 ? argv[2] : nullptr, err,
                                     sizeof(err));
    if (!lg) {
      fprintf(stderr, "error: %s\n", err);
      return 1;
    }
    trx_logger_step(lg, 1, 10.875f, 6e-4f, 3.21f, 8192, 250.0);
    trx_logger_step(lg, 100, 3.5f, 6e-5f, 0.75f, 8192, 1024.5);
    trx_logger_eval(lg, 100, 3.75f);
    trx_logger_close(lg);
    return 0;
  }
  if (argc != 1) {
    fprintf(stderr, "usage: triax-rt-train-test [lr ...|log [FILE]]\n");
    return 2;
  }
  trxtest::TempDir tmp;
  testLrSchedule();
  testTimer();
  testLogger(tmp);
  trxtest::done("train");
  return 0;
}
