//===- train.cpp - Learning-rate schedule, timer and step logger
//-----------===//
//
// Helpers for the generated training loop: trx_lr_at (warmup + cosine),
// a monotonic millisecond clock and the per-step console/JSON-lines logger.
//
//===----------------------------------------------------------------------===//

#include "internal.h"
#include "triax_rt.h"

#include <cerrno>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <new>

using namespace triax::rt;

namespace {
constexpr double kPi = 3.14159265358979323846;
} // namespace

extern "C" float trx_lr_at(int64_t step, int64_t total_steps, float lr_max,
                           int64_t warmup, int schedule, float min_lr_ratio) {
  if (step < 0)
    step = 0;
  double lr = double(lr_max);
  if (step < warmup)
    return float(lr * double(step + 1) / double(warmup));
  if (schedule != TRX_LR_COSINE || total_steps <= warmup)
    return lr_max;
  double minLr = lr * double(min_lr_ratio);
  double r = double(step - warmup) / double(total_steps - warmup);
  if (r > 1.0)
    r = 1.0;
  double coeff = 0.5 * (1.0 + std::cos(kPi * r));
  return float(minLr + coeff * (lr - minLr));
}

extern "C" double trx_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return double(ts.tv_sec) * 1e3 + double(ts.tv_nsec) * 1e-6;
}

struct trx_logger {
  FILE *out = nullptr;
  FILE *json = nullptr;
  std::string jsonPath;
};

extern "C" trx_logger *trx_logger_open(FILE *out, const char *json_path,
                                       char *err, size_t errlen) {
  trx_logger *lg = new (std::nothrow) trx_logger();
  if (!lg) {
    setErr(err, errlen, "trx_logger_open: out of memory");
    return nullptr;
  }
  lg->out = out ? out : stdout;
  if (json_path && *json_path) {
    lg->jsonPath = json_path;
    lg->json = fopen(json_path, "a");
    if (!lg->json) {
      setErr(err, errlen, "%s: cannot open log file: %s", json_path,
             errnoStr(errno).c_str());
      delete lg;
      return nullptr;
    }
  }
  return lg;
}

namespace {

int writeJsonLine(trx_logger *lg, const std::string &line) {
  if (!lg->json)
    return TRX_OK;
  if (fwrite(line.data(), 1, line.size(), lg->json) != line.size() ||
      fflush(lg->json) != 0) {
    setLastError("%s: write failed: %s", lg->jsonPath.c_str(),
                 errnoStr(errno).c_str());
    return TRX_ERR_IO;
  }
  return TRX_OK;
}

/// The end of every log entry: the text line's fprintf result `printed`
/// (then the flush), and the JSON line `buildJson` makes; `fn` names the
/// entry in errors. A failed write is TRX_ERR_IO, after both were tried.
template <typename BuildJson>
int finishEntry(trx_logger *lg, const char *fn, int printed,
                BuildJson buildJson) {
  int rc = TRX_OK;
  if (printed < 0 || fflush(lg->out) != 0) {
    setLastError("%s: cannot write the log line: %s", fn,
                 errnoStr(errno).c_str());
    rc = TRX_ERR_IO;
  }
  try {
    if (writeJsonLine(lg, buildJson()) != TRX_OK)
      rc = TRX_ERR_IO;
  } catch (const std::bad_alloc &) {
    setLastError("%s: out of memory", fn);
    rc = TRX_ERR_NOMEM;
  }
  return rc;
}

} // namespace

extern "C" int trx_logger_step(trx_logger *lg, int64_t step, float loss,
                               float lr, float grad_norm, int64_t tokens,
                               double ms) {
  if (!lg) {
    setLastError("trx_logger_step: NULL logger");
    return TRX_ERR_ARG;
  }
  double tokPerS = ms > 0 ? double(tokens) / (ms / 1000.0) : 0.0;
  size_t peak = trx_mem_peak_total();
  char peakStr[32];
  trx_format_mib(peak, peakStr, sizeof(peakStr));
  int printed =
      fprintf(lg->out,
              "step %5lld | loss %.6f | lr %.3e | grad-norm %.4f | %8.0f "
              "tok/s | %7.2f ms | peak %s\n",
              (long long)step, double(loss), double(lr), double(grad_norm),
              tokPerS, ms, peakStr);
  return finishEntry(lg, "trx_logger_step", printed, [&] {
    std::string j = "{\"step\":" + std::to_string(step) + ",\"loss\":";
    json::appendFloat(j, loss);
    j += ",\"lr\":";
    json::appendFloat(j, lr);
    j += ",\"grad_norm\":";
    json::appendFloat(j, grad_norm);
    j += ",\"tok_per_s\":";
    json::appendDouble(j, tokPerS);
    j += ",\"ms\":";
    json::appendDouble(j, ms);
    j += ",\"peak_bytes\":" + std::to_string(peak) + "}\n";
    return j;
  });
}

extern "C" int trx_logger_moe(trx_logger *lg, int64_t step, double dropped,
                              double choices) {
  if (!lg) {
    setLastError("trx_logger_moe: NULL logger");
    return TRX_ERR_ARG;
  }
  int printed = fprintf(lg->out,
                        "step %5lld | moe: %.0f of %.0f expert choices dropped "
                        "(%.2f%%)\n",
                        (long long)step, dropped, choices,
                        choices > 0 ? 100.0 * dropped / choices : 0.0);
  return finishEntry(lg, "trx_logger_moe", printed, [&] {
    std::string j = "{\"step\":" + std::to_string(step) + ",\"moe_dropped\":";
    json::appendDouble(j, dropped);
    j += ",\"moe_choices\":";
    json::appendDouble(j, choices);
    j += "}\n";
    return j;
  });
}

extern "C" int trx_logger_eval(trx_logger *lg, int64_t step, float val_loss) {
  if (!lg) {
    setLastError("trx_logger_eval: NULL logger");
    return TRX_ERR_ARG;
  }
  int printed = fprintf(lg->out, "step %5lld | val loss %.6f\n",
                        (long long)step, double(val_loss));
  return finishEntry(lg, "trx_logger_eval", printed, [&] {
    std::string j = "{\"step\":" + std::to_string(step) + ",\"val_loss\":";
    json::appendFloat(j, val_loss);
    j += "}\n";
    return j;
  });
}

extern "C" void trx_logger_close(trx_logger *lg) {
  if (!lg)
    return;
  if (lg->json)
    fclose(lg->json);
  delete lg;
}
