//===- trace.cpp - Measured timeline of a training run (--trace) ----------===//
//
// With `--trace FILE` every rank records what it spends its time on — the
// compiled step's forward and backward per micro-batch (the compiled
// pipeline schedule calls trx_trace_begin/end around each stage function),
// each collective and point-to-point call, the optimizer step — and rank 0
// writes all ranks' events as one Chrome trace (the format of the cost
// model's predicted schedule, `triaxc --plan ... --trace`: pid = rank,
// thread 1 compute with "F<mb>" / "B<mb>", 2 send, 3 recv, 4 collectives),
// so prediction and measurement open side by side in Perfetto. Times are
// CLOCK_MONOTONIC, which all ranks of one machine share, shifted so that
// the earliest event starts at 0.
//
//===----------------------------------------------------------------------===//

#include "internal.h"
#include "triax_rt.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

namespace triax::rt {
namespace {

struct Event {
  std::string name;
  const char *cat;
  int tid;
  double start, end; // µs
  int64_t microBatch;
};

struct Recorder {
  bool on = false;
  std::vector<Event> events;
  // The open compute span of the compiled code (trx_trace_begin).
  double openStart = 0;
  int64_t openKind = -1, openMicroBatch = -1, openChunk = -1;
};

Recorder &recorder() {
  static Recorder r;
  return r;
}

} // namespace

double traceNow() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return double(ts.tv_sec) * 1e6 + double(ts.tv_nsec) * 1e-3;
}

void traceEnable() { recorder().on = true; }
bool traceOn() { return recorder().on; }

void traceRecord(std::string name, const char *cat, int tid, double start,
                 int64_t microBatch) {
  Recorder &r = recorder();
  if (!r.on)
    return;
  r.events.push_back(
      {std::move(name), cat, tid, start, traceNow(), microBatch});
}

/// One rank's events as JSON objects, comma-separated, times shifted by
/// `origin` µs.
static std::string eventsJson(int rank, double origin) {
  std::string out;
  char buf[512];
  for (const Event &e : recorder().events) {
    std::snprintf(buf, sizeof(buf),
                  "%s{\"name\":\"%s\",\"cat\":\"%s\",\"ph\":\"X\",\"ts\":%.3f,"
                  "\"dur\":%.3f,\"pid\":%d,\"tid\":%d",
                  out.empty() ? "" : ",\n", e.name.c_str(), e.cat,
                  e.start - origin, e.end - e.start, rank, e.tid);
    out += buf;
    if (e.microBatch >= 0) {
      std::snprintf(buf, sizeof(buf), ",\"args\":{\"micro_batch\":%" PRId64 "}",
                    e.microBatch);
      out += buf;
    }
    out += "}";
  }
  return out;
}

bool traceWrite(const char *path, std::string &error) {
  Recorder &r = recorder();
  r.on = false; // the collectives below are not part of the run
  const bool dist = trx_dist_initialized() && trx_dist_world_size() > 1;
  const int rank = dist ? trx_dist_rank() : 0;
  const int world = dist ? trx_dist_world_size() : 1;
  std::vector<int32_t> allAxes;
  for (int32_t a = 0; dist && a < trx_dist_num_axes(); ++a)
    allAxes.push_back(a);
  const int32_t naxes = int32_t(allAxes.size());
  // The earliest event of all ranks is time 0: the minimum over ranks of
  // (seconds, then microseconds past the earliest second), in int32s.
  double first = traceNow();
  for (const Event &e : r.events)
    first = std::min(first, e.start);
  int32_t sec = int32_t(first / 1e6);
  if (dist)
    trx_all_reduce_i32(&sec, 1, TRX_REDUCE_MIN, allAxes.data(), naxes);
  int32_t rest = int32_t(std::min(first - double(sec) * 1e6, 2e9));
  if (dist)
    trx_all_reduce_i32(&rest, 1, TRX_REDUCE_MIN, allAxes.data(), naxes);
  const double originUs = double(sec) * 1e6 + double(rest);
  std::string mine = eventsJson(rank, originUs);
  // Gather the ranks' texts on rank 0: lengths, then the bytes as int32
  // words over the group of all axes (position = world rank).
  std::vector<std::string> texts(static_cast<size_t>(world));
  if (dist) {
    int32_t len = int32_t(mine.size());
    std::vector<int32_t> lens(static_cast<size_t>(world));
    trx_all_gather_i32(&len, 1, lens.data(), allAxes.data(), naxes);
    if (rank != 0) {
      std::vector<int32_t> words((mine.size() + 3) / 4, 0);
      std::memcpy(words.data(), mine.data(), mine.size());
      if (!words.empty())
        trx_send_i32(words.data(), int64_t(words.size()), 0, allAxes.data(),
                     naxes, 0);
      return true;
    }
    for (int p = 1; p < world; ++p) {
      std::vector<int32_t> words((size_t(lens[size_t(p)]) + 3) / 4, 0);
      if (!words.empty())
        trx_recv_i32(words.data(), int64_t(words.size()), p, allAxes.data(),
                     naxes, 0);
      texts[size_t(p)].assign(reinterpret_cast<const char *>(words.data()),
                              size_t(lens[size_t(p)]));
    }
  }
  texts[0] = std::move(mine);
  std::string json = "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n";
  bool firstText = true;
  for (int p = 0; p < world; ++p) {
    char meta[256];
    std::snprintf(meta, sizeof(meta),
                  "%s{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%d,"
                  "\"args\":{\"name\":\"rank %d\"}}",
                  firstText ? "" : ",\n", p, p);
    json += meta;
    firstText = false;
    const char *streams[] = {"compute", "send", "recv", "collectives"};
    for (int t = 0; t < 4; ++t) {
      std::snprintf(meta, sizeof(meta),
                    ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,"
                    "\"tid\":%d,\"args\":{\"name\":\"%s\"}}",
                    p, t + 1, streams[t]);
      json += meta;
    }
    if (!texts[size_t(p)].empty())
      json += ",\n" + texts[size_t(p)];
  }
  json += "\n]}\n";
  // Written whole to a temporary file, then renamed: never half a trace.
  std::string tmp = std::string(path) + ".tmp";
  FILE *f = std::fopen(tmp.c_str(), "wb");
  if (!f || std::fwrite(json.data(), 1, json.size(), f) != json.size() ||
      std::fclose(f) != 0) {
    error = "--trace " + std::string(path) + ": cannot write " + tmp;
    if (f)
      std::remove(tmp.c_str());
    return false;
  }
  if (std::rename(tmp.c_str(), path) != 0) {
    error = "--trace " + std::string(path) + ": cannot rename " + tmp;
    std::remove(tmp.c_str());
    return false;
  }
  return true;
}

} // namespace triax::rt

using namespace triax::rt;

extern "C" void trx_trace_begin(int64_t kind, int64_t micro_batch,
                                int64_t chunk) {
  Recorder &r = recorder();
  if (!r.on)
    return;
  r.openStart = traceNow();
  r.openKind = kind;
  r.openMicroBatch = micro_batch;
  r.openChunk = chunk;
}

extern "C" void trx_trace_end(void) {
  Recorder &r = recorder();
  if (!r.on || r.openKind < 0)
    return;
  // "F3", "B3", "W3" (a weight pass), or "F3.1" for micro-batch 3 on model
  // chunk 1 (the cost model's names, mlir::dist::stepName).
  const char *letter = r.openKind == TRX_PASS_FORWARD  ? "F"
                       : r.openKind == TRX_PASS_WEIGHT ? "W"
                                                       : "B";
  std::string name = letter + std::to_string(r.openMicroBatch);
  if (r.openChunk >= 0)
    name += "." + std::to_string(r.openChunk);
  Event e{std::move(name),
          r.openKind == TRX_PASS_FORWARD  ? "forward"
          : r.openKind == TRX_PASS_WEIGHT ? "weight"
                                          : "backward",
          1,
          r.openStart,
          traceNow(),
          r.openMicroBatch};
  r.events.push_back(std::move(e));
  r.openKind = -1;
}
