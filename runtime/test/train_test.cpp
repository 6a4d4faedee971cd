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
// The checks include trx_train_main around a fake model whose training
// entries write the step's scalars on the "device" (the driver's buffer):
// the driver reads them with one trx_copy_to_host on logged, checkpoint and
// last steps only, copies each call's tokens once, and zeroes the loss
// accumulator every step.
//
//===----------------------------------------------------------------------===//

#include "check.h"
#include "triax_rt.h"

#include <cmath>
#include <fcntl.h>
#include <unistd.h>

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

  // A mixture-of-experts line: the dropped choices of all since the last.
  std::string moeJson = tmp / "moe.jsonl";
  FILE *moeOut = tmpfile();
  lg = trx_logger_open(moeOut, moeJson.c_str(), err, sizeof(err));
  CHECK_EQ(trx_logger_moe(lg, 5, 2264, 10240), TRX_OK);
  CHECK_EQ(trx_logger_moe(lg, 6, 0, 0), TRX_OK);
  trx_logger_close(lg);
  CHECK_EQ(readAll(moeOut),
           std::string("step     5 | moe: 2264 of 10240 expert choices "
                       "dropped (22.11%)\n"
                       "step     6 | moe: 0 of 0 expert choices dropped "
                       "(0.00%)\n"));
  fclose(moeOut);
  j = trxtest::readFileBytes(moeJson);
  CHECK_EQ(std::string(j.begin(), j.end()),
           std::string("{\"step\":5,\"moe_dropped\":2264,\"moe_choices\":"
                       "10240}\n{\"step\":6,\"moe_dropped\":0,"
                       "\"moe_choices\":0}\n"));
  CHECK_EQ(trx_logger_moe(nullptr, 0, 0, 0), TRX_ERR_ARG);
  CHECK_STREQ(trx_last_error(), "trx_logger_moe: NULL logger");

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

//===----------------------------------------------------------------------===//
// The driver's step scalars
//===----------------------------------------------------------------------===//

/// What the fake model's entries saw.
struct FakeCalls {
  int64_t forwardBackward = 0, optimizer = 0;
  float lastGradScale = 0;
};
FakeCalls fake;

/// Adds a mean loss of 0.75 per call to the accumulator, or writes it on
/// the step's first call (trx_first_micro_batch, as compiled code does):
/// with 4 calls per step the step's loss is 3.0 / 4 = 0.75, and 1.5 if the
/// driver did not mark the first call of each step.
void fakeForwardBackward(const int32_t *tokens, const int32_t *targets,
                         float *loss_acc) {
  ++fake.forwardBackward;
  if (tokens && targets && tokens[0] >= 0 && targets[0] >= 0)
    loss_acc[0] = (trx_first_micro_batch() ? 0.0f : loss_acc[0]) + 0.75f;
}

/// grad_norm = step / 2.
void fakeOptimizerStep(float, int64_t step, float grad_scale,
                       float *grad_norm) {
  ++fake.optimizer;
  fake.lastGradScale = grad_scale;
  grad_norm[0] = 0.5f * float(step);
}

struct DriverRun {
  int rc = -1;
  std::string out, err;
  uint64_t calls[TRX_COPY_NKINDS] = {};
};

/// trx_train_main over the fake model with `args` (after the program
/// name), compiled for `device` (NULL: the default, cpu), its stdout and
/// stderr captured, and the copies it made.
DriverRun runFakeModel(const trxtest::TempDir &tmp,
                       std::vector<std::string> args,
                       const char *device = nullptr) {
  static trx_param_desc params[1] = {};
  params[0].name = "w";
  params[0].rank = 1;
  params[0].shape[0] = 8;
  params[0].init = TRX_INIT_ZEROS;
  trx_model_desc m{};
  m.model_name = "fake-scalars";
  m.num_params = 1;
  m.params = params;
  m.micro_batch = 2;
  m.global_batch = 8; // 4 calls per step
  m.seq = 8;
  m.vocab = 256;
  m.lr = 1e-3f;
  m.beta1 = 0.9f;
  m.beta2 = 0.95f;
  m.eps = 1e-8f;
  m.forward_backward = fakeForwardBackward;
  m.optimizer_step = fakeOptimizerStep;
  m.device = device;

  std::vector<std::string> argvStore = {"fake", "--lr-schedule", "constant"};
  argvStore.insert(argvStore.end(), args.begin(), args.end());
  std::vector<char *> argv;
  for (std::string &a : argvStore)
    argv.push_back(a.data());
  argv.push_back(nullptr);

  std::string path = tmp / "driver.out", errPath = tmp / "driver.err";
  fflush(stdout);
  fflush(stderr);
  int saved = dup(1), savedErr = dup(2);
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  dup2(fd, 1);
  close(fd);
  fd = open(errPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  dup2(fd, 2);
  close(fd);
  trx_copy_reset_counters();
  DriverRun r;
  r.rc = trx_train_main(int(argv.size()) - 1, argv.data(), &m);
  for (int k = 0; k < TRX_COPY_NKINDS; ++k)
    r.calls[k] = trx_copy_calls(k);
  fflush(stdout);
  fflush(stderr);
  dup2(saved, 1);
  close(saved);
  dup2(savedErr, 2);
  close(savedErr);
  std::vector<uint8_t> bytes = trxtest::readFileBytes(path);
  r.out.assign(bytes.begin(), bytes.end());
  bytes = trxtest::readFileBytes(errPath);
  r.err.assign(bytes.begin(), bytes.end());
  return r;
}

/// The "step N | loss ..." lines of a run, each cut after the grad-norm.
std::string stepLines(const std::string &out) {
  std::string lines;
  size_t at = 0;
  while (at < out.size()) {
    size_t end = out.find('\n', at);
    if (end == std::string::npos)
      end = out.size();
    std::string line = out.substr(at, end - at);
    if (line.find(" | loss ") != std::string::npos) {
      size_t cut = line.find(" | ", line.find("grad-norm"));
      lines += line.substr(0, cut) + "\n";
    }
    at = end + 1;
  }
  return lines;
}

void testDriverScalars(const trxtest::TempDir &tmp) {
  // Logged steps 4 and 8, and the last step 10: three reads of the
  // scalars, nothing else comes back to the host.
  fake = FakeCalls{};
  DriverRun r = runFakeModel(tmp, {"--steps", "10", "--log-every", "4"});
  CHECK_EQ(r.rc, 0);
  CHECK_EQ(fake.forwardBackward, int64_t(40));
  CHECK_EQ(fake.optimizer, int64_t(10));
  CHECK_EQ(fake.lastGradScale, 0.25f);
  CHECK_EQ(stepLines(r.out),
           std::string("step     4 | loss 0.750000 | lr 1.000e-03 | "
                       "grad-norm 2.0000\n"
                       "step     8 | loss 0.750000 | lr 1.000e-03 | "
                       "grad-norm 4.0000\n"
                       "step    10 | loss 0.750000 | lr 1.000e-03 | "
                       "grad-norm 5.0000\n"));
  CHECK(r.out.find("done: step 10, last loss 0.750000\n") != std::string::npos);
  CHECK_EQ(r.calls[TRX_COPY_TO_HOST], uint64_t(3));
  // One token copy per call, and the initial parameter.
  CHECK_EQ(r.calls[TRX_COPY_TO_DEVICE], uint64_t(40 + 1));
  // Per step: the gradient buffer (the loss accumulator is written by the
  // step's first call).
  CHECK_EQ(r.calls[TRX_COPY_MEMSET], uint64_t(10));
  CHECK_EQ(r.calls[TRX_COPY_ON_DEVICE], uint64_t(0));

  // --log-every 0: the last step only (the final line, the divergence
  // check).
  r = runFakeModel(tmp, {"--steps", "10", "--log-every", "0"});
  CHECK_EQ(r.rc, 0);
  CHECK_EQ(stepLines(r.out), std::string());
  CHECK(r.out.find("done: step 10, last loss 0.750000\n") != std::string::npos);
  CHECK_EQ(r.calls[TRX_COPY_TO_HOST], uint64_t(1));

  // Checkpoint steps 3 and 6 read the scalars (the loss goes into
  // state.json) and copy the state (parameter and both moments) to the
  // host: 3 reads (steps 3, 4, 6) + 2 x 3 tensors.
  std::string ckpt = tmp / "ckpt";
  r = runFakeModel(tmp, {"--steps", "6", "--log-every", "4", "--ckpt-dir", ckpt,
                         "--ckpt-every", "3"});
  CHECK_EQ(r.rc, 0);
  CHECK_EQ(r.calls[TRX_COPY_TO_HOST], uint64_t(3 + 2 * 3));
  CHECK(trxtest::fileExists(ckpt + "/step-00000006/model.safetensors"));
  CHECK_EQ(stepLines(r.out),
           std::string("step     4 | loss 0.750000 | lr 1.000e-03 | "
                       "grad-norm 2.0000\n"
                       "step     6 | loss 0.750000 | lr 1.000e-03 | "
                       "grad-norm 3.0000\n"));
  trxtest::TempDir::removeTree(ckpt);

  // A model compiled for another device than the runtime's (a CUDA binary
  // linked without the CUDA runtime) is refused before anything runs;
  // "cpu" said explicitly is the default.
  fake = FakeCalls{};
  r = runFakeModel(tmp, {"--steps", "1"}, "cuda");
  CHECK(r.rc != 0);
  CHECK_EQ(fake.forwardBackward, int64_t(0));
  CHECK(r.err.find("model 'fake-scalars' was compiled for the cuda device, "
                   "but this binary's runtime runs on the cpu device") !=
        std::string::npos);
  r = runFakeModel(tmp, {"--steps", "1"}, "cpu");
  CHECK_EQ(r.rc, 0);
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
  testDriverScalars(tmp);
  trxtest::done("train");
  return 0;
}
