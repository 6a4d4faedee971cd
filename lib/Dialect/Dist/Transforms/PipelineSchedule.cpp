//===- PipelineSchedule.cpp - The order of a pipeline's passes ------------===//
//
// See PipelineSchedule.h.
//
//===----------------------------------------------------------------------===//

#include "triax/Dialect/Dist/Transforms/PipelineSchedule.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/ErrorHandling.h"

#include <algorithm>
#include <tuple>

using namespace mlir::dist;

llvm::StringRef mlir::dist::scheduleName(PipelineSchedule schedule) {
  switch (schedule) {
  case PipelineSchedule::GPipe:
    return "gpipe";
  case PipelineSchedule::OneFOneB:
    return "1f1b";
  case PipelineSchedule::Interleaved:
    return "interleaved";
  case PipelineSchedule::ZeroBubbleH1:
    return "zb-h1";
  }
  llvm_unreachable("unknown schedule");
}

std::optional<PipelineSchedule>
mlir::dist::parseSchedule(llvm::StringRef name) {
  for (PipelineSchedule s :
       {PipelineSchedule::GPipe, PipelineSchedule::OneFOneB,
        PipelineSchedule::Interleaved, PipelineSchedule::ZeroBubbleH1})
    if (name == scheduleName(s))
      return s;
  return std::nullopt;
}

std::string mlir::dist::stepName(const PipelineStep &step, int64_t chunks) {
  const char *letter = step.pass == Pass::Forward    ? "F"
                       : step.pass == Pass::Backward ? "B"
                                                     : "W";
  std::string name = letter + std::to_string(step.microBatch);
  if (chunks > 1)
    name += "." + std::to_string(step.chunk);
  return name;
}

std::string mlir::dist::chunksError(PipelineSchedule schedule, int64_t chunks) {
  if (schedule != PipelineSchedule::Interleaved && chunks != 1)
    return (llvm::Twine("virtual-stages=") + llvm::Twine(chunks) +
            " needs the interleaved schedule, not " + scheduleName(schedule))
        .str();
  if (schedule == PipelineSchedule::Interleaved && chunks < 2)
    return (llvm::Twine("the interleaved schedule needs virtual-stages >= 2, "
                        "got ") +
            llvm::Twine(chunks) + " (one chunk per rank is 1f1b)")
        .str();
  return "";
}

std::string mlir::dist::scheduleError(PipelineSchedule schedule, int64_t ranks,
                                      int64_t chunks, int64_t m) {
  if (std::string error = chunksError(schedule, chunks); !error.empty())
    return error;
  if ((schedule == PipelineSchedule::OneFOneB ||
       schedule == PipelineSchedule::ZeroBubbleH1) &&
      m < ranks)
    return (llvm::Twine(scheduleName(schedule)) +
            " needs microbatches >= pp, got microbatches=" + llvm::Twine(m) +
            " and pp=" + llvm::Twine(ranks) +
            " (use more micro-batches or gpipe)")
        .str();
  if (schedule == PipelineSchedule::Interleaved && m % ranks != 0)
    return (llvm::Twine("the interleaved schedule needs microbatches to be a "
                        "multiple of pp (it runs them in groups of pp), got "
                        "microbatches=") +
            llvm::Twine(m) + " and pp=" + llvm::Twine(ranks))
        .str();
  return "";
}

std::vector<PipelineStep> mlir::dist::pipelineOrder(PipelineSchedule schedule,
                                                    int64_t ranks,
                                                    int64_t chunks, int64_t m,
                                                    int64_t rank) {
  std::vector<PipelineStep> order;
  const Pass F = Pass::Forward, B = Pass::Backward;
  if (schedule == PipelineSchedule::GPipe) {
    for (int64_t j = 0; j < m; ++j)
      order.push_back({F, 0, j});
    for (int64_t j = 0; j < m; ++j)
      order.push_back({B, 0, j});
    return order;
  }
  if (ranks == 1) { // no pipeline: F(j) B(j), the gradient accumulation
    for (int64_t j = 0; j < m; ++j) {
      order.push_back({F, 0, j});
      order.push_back({B, 0, j});
    }
    return order;
  }
  // 1F1B is the interleaved order's one-chunk case but for its warm-up
  // (ranks - r - 1 forwards: with one chunk, a rank's next forward never
  // waits on a later chunk).
  const int64_t total = m * chunks, group = ranks * chunks;
  auto step = [&](int64_t k, Pass pass) {
    int64_t chunk = (k % group) / ranks;
    return PipelineStep{pass, pass == F ? chunk : chunks - 1 - chunk,
                        (k / group) * ranks + k % ranks};
  };
  int64_t warmup = schedule == PipelineSchedule::Interleaved
                       ? 2 * (ranks - rank - 1) + (chunks - 1) * ranks
                       : ranks - rank - 1;
  warmup = std::min(warmup, total);
  // ZB-H1: W(k - rank) after B(k), the rest after the last B.
  const int64_t lag = rank;
  int64_t weights = 0;
  auto backward = [&](int64_t k) {
    order.push_back(step(k, B));
    if (splitsWeightPass(schedule) && k >= lag)
      order.push_back(step(weights++, Pass::Weight));
  };
  for (int64_t k = 0; k < warmup; ++k)
    order.push_back(step(k, F));
  for (int64_t k = 0; k < total - warmup; ++k) {
    order.push_back(step(warmup + k, F));
    backward(k);
  }
  for (int64_t k = total - warmup; k < total; ++k)
    backward(k);
  if (splitsWeightPass(schedule))
    while (weights < total)
      order.push_back(step(weights++, Pass::Weight));
  return order;
}

namespace {
/// The (micro-batch, chunk) activations a rank holds as its passes run: a
/// forward saves them, its backward frees them, or its W pass where the
/// schedule splits one off.
/// (Each counts `weights[chunk]`, 1 without weights.)
struct InFlight {
  bool split;
  llvm::ArrayRef<int64_t> weights = {};
  int64_t live = 0;
  int64_t weight(const PipelineStep &s) const {
    return weights.empty() ? 1 : weights[s.chunk];
  }
  void start(const PipelineStep &s) {
    if (s.pass == Pass::Forward)
      live += weight(s);
  }
  void end(const PipelineStep &s) {
    if (s.pass == (split ? Pass::Weight : Pass::Backward))
      live -= weight(s);
  }
};
} // namespace

int64_t mlir::dist::peakInFlight(llvm::ArrayRef<PipelineStep> order,
                                 llvm::ArrayRef<int64_t> chunkBlocks) {
  InFlight flight{
      llvm::any_of(
          order, [](const PipelineStep &s) { return s.pass == Pass::Weight; }),
      chunkBlocks};
  int64_t peak = 0;
  for (const PipelineStep &s : order) {
    flight.start(s);
    peak = std::max(peak, flight.live);
    flight.end(s);
  }
  return peak;
}

int64_t mlir::dist::peakHeldReceives(llvm::ArrayRef<PipelineEvent> program) {
  // (A message is named by the pass that needs it.)
  InFlight flight{llvm::any_of(program, [](const PipelineEvent &e) {
    return e.kind == PipelineEvent::Compute && e.step.pass == Pass::Weight;
  })};
  std::vector<PipelineStep> held;
  int64_t peakLive = 0, peak = 0;
  for (const PipelineEvent &e : program) {
    if (e.kind == PipelineEvent::Recv)
      held.push_back(e.step);
    if (e.kind != PipelineEvent::Compute)
      continue;
    llvm::erase(held, e.step);
    flight.start(e.step);
    if (e.step.pass == Pass::Backward && flight.live >= peakLive) {
      peak = flight.live > peakLive ? int64_t(held.size())
                                    : std::max(peak, int64_t(held.size()));
      peakLive = flight.live;
    }
    flight.end(e.step);
  }
  return peak;
}

std::vector<std::vector<PipelineEvent>>
mlir::dist::pipelinePrograms(PipelineSchedule schedule, int64_t ranks,
                             int64_t chunks, int64_t m) {
  const int64_t stages = ranks * chunks;
  std::vector<std::vector<PipelineStep>> orders;
  for (int64_t r = 0; r < ranks; ++r)
    orders.push_back(pipelineOrder(schedule, ranks, chunks, m, r));

  // Simulate with integer pass times: forward 1, backward 2 (B 1 and W 1
  // when split).
  const int64_t backwardTime = splitsWeightPass(schedule) ? 1 : 2;
  auto duration = [&](const PipelineStep &s) {
    return s.pass == Pass::Forward    ? 1
           : s.pass == Pass::Backward ? backwardTime
                                      : 1;
  };
  // When each pass ends, per virtual stage and micro-batch; -1 until it ran.
  std::vector<std::vector<int64_t>> fEnd(stages, std::vector<int64_t>(m, -1)),
      bEnd = fEnd;
  std::vector<std::vector<int64_t>> start(ranks);
  std::vector<size_t> next(ranks, 0);
  std::vector<int64_t> clock(ranks, 0);
  auto virtualStage = [&](int64_t rank, const PipelineStep &s) {
    return s.chunk * ranks + rank;
  };
  // When a pass's input is ready (-1: not yet).
  auto ready = [&](int64_t rank, const PipelineStep &s) -> int64_t {
    int64_t v = virtualStage(rank, s);
    if (s.pass == Pass::Weight)
      return bEnd[v][s.microBatch];
    if (s.forward())
      return v == 0 ? 0 : fEnd[v - 1][s.microBatch];
    return v == stages - 1 ? fEnd[v][s.microBatch] : bEnd[v + 1][s.microBatch];
  };
  for (bool progress = true; progress;) {
    progress = false;
    for (int64_t r = 0; r < ranks; ++r)
      while (next[r] < orders[r].size()) {
        const PipelineStep &s = orders[r][next[r]];
        int64_t at = ready(r, s);
        if (at < 0)
          break;
        at = std::max(at, clock[r]);
        start[r].push_back(at);
        clock[r] = at + duration(s);
        if (s.pass != Pass::Weight)
          (s.forward() ? fEnd : bEnd)[virtualStage(r, s)][s.microBatch] =
              clock[r];
        ++next[r];
        progress = true;
      }
  }
  for (int64_t r = 0; r < ranks; ++r)
    if (next[r] != orders[r].size())
      llvm::report_fatal_error("pipelinePrograms: the " +
                               llvm::Twine(scheduleName(schedule)) +
                               " order waits forever");

  // The messages in their global order: (time, sender, sender's position).
  struct Message {
    int64_t time, sender, position, receiver;
    PipelineStep produced, needed;
  };
  std::vector<Message> messages;
  for (int64_t r = 0; r < ranks; ++r)
    for (auto [i, s] : llvm::enumerate(orders[r])) {
      int64_t v = virtualStage(r, s);
      int64_t to = s.forward() ? v + 1 : v - 1;
      if (s.pass == Pass::Weight || to < 0 || to >= stages || ranks == 1)
        continue;
      int64_t time = start[r][i] + duration(s);
      PipelineStep needed{s.pass, to / ranks, s.microBatch};
      messages.push_back({time, r, int64_t(i), to % ranks, s, needed});
    }
  llvm::sort(messages, [](const Message &a, const Message &b) {
    return std::tie(a.time, a.sender, a.position) <
           std::tie(b.time, b.sender, b.position);
  });

  // Each rank's events keyed (time, class, index): at equal times the
  // messages (class 0, in global order) come before a pass starting then.
  std::vector<std::vector<std::tuple<int64_t, int, int64_t, PipelineEvent>>>
      keyed(ranks);
  for (int64_t r = 0; r < ranks; ++r)
    for (auto [i, s] : llvm::enumerate(orders[r]))
      keyed[r].push_back(
          {start[r][i], 1, int64_t(i), {PipelineEvent::Compute, s, -1}});
  for (auto [i, msg] : llvm::enumerate(messages)) {
    keyed[msg.sender].push_back(
        {msg.time,
         0,
         int64_t(i),
         {PipelineEvent::Send, msg.produced, msg.receiver}});
    keyed[msg.receiver].push_back(
        {msg.time,
         0,
         int64_t(i),
         {PipelineEvent::Recv, msg.needed, msg.sender}});
  }
  std::vector<std::vector<PipelineEvent>> programs(ranks);
  for (int64_t r = 0; r < ranks; ++r) {
    llvm::stable_sort(keyed[r], [](const auto &a, const auto &b) {
      return std::tie(std::get<0>(a), std::get<1>(a), std::get<2>(a)) <
             std::tie(std::get<0>(b), std::get<1>(b), std::get<2>(b));
    });
    for (auto &k : keyed[r])
      programs[r].push_back(std::get<3>(k));
  }
  return programs;
}
