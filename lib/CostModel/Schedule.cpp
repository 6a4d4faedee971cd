//===- Schedule.cpp - A plan's pipeline schedule: simulated, traced, drawn ===//
//
// [S1] simulates the order dist-pipeline emits for every stage
// (mlir::dist::pipelineOrder, PipelineSchedule.h): GPipe all forwards then
// all backwards; 1F1B w = min(p-s-1, m) warm-up forwards, then F(w+j)
// B(j), then the cool-down backwards; interleaved the same over v chunks
// per rank, each 1/v of the stage's layers. A forward waits for the
// previous virtual stage's forward of the same micro-batch and its send, a
// backward for the next one's backward and its send; sends run on their
// own stream (they occupy the link, not the compute). With uniform stages
// and free sends every stage idles (p-1)/(v m+p-1) of the time to the
// flush, [P1].
//
//===----------------------------------------------------------------------===//

#include "triax/CostModel/Planner.h"
#include "triax/Dialect/Dist/IR/MeshShape.h"
#include "triax/Dialect/Dist/Transforms/PipelineSchedule.h"

#include "mlir/IR/BuiltinOps.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cmath>

using namespace triax::cost;

/// The stream of the data-parallel collectives in traces: named after the
/// data axis.
static llvm::StringRef dataStream() {
  return mlir::dist::axisName(TRX_AXIS_DATA);
}

ScheduleTrace triax::cost::simulateSchedule(
    int64_t stages, int64_t m, Schedule schedule, double fwd, double bwd,
    double p2p, llvm::ArrayRef<std::pair<std::string, double>> collectives,
    llvm::ArrayRef<int64_t> ranks, int64_t virtualStages,
    llvm::ArrayRef<double> load) {
  ScheduleTrace trace;
  const int64_t p = std::max<int64_t>(stages, 1);
  const int64_t v = schedule == Schedule::Interleaved
                        ? std::max<int64_t>(virtualStages, 1)
                        : 1;
  m = std::max<int64_t>(m, 1);
  trace.stages = p;
  trace.microBatches = m;
  trace.virtualStages = v;
  for (int64_t s = 0; s < p; ++s)
    trace.ranks.push_back(s < int64_t(ranks.size()) ? ranks[s] : s);

  // Each stage's order, as dist-pipeline unrolls it (without a pipeline:
  // F(j) B(j), the gradient accumulation loop); a chunk runs 1/v of the
  // stage's layers.
  using mlir::dist::PipelineSchedule;
  PipelineSchedule kind = pipelineScheduleOf(schedule);
  std::vector<std::vector<mlir::dist::PipelineStep>> order;
  for (int64_t s = 0; s < p; ++s)
    order.push_back(mlir::dist::pipelineOrder(kind, p, v, m, s));
  fwd /= double(v);
  bwd /= double(v);
  // ZB-H1's B and W: half the backward each (the input gradient's GEMMs
  // and the weights' are the same size).
  const double weight = mlir::dist::splitsWeightPass(kind) ? bwd / 2 : 0;
  bwd -= weight;

  // When each pass of virtual stage c p + s ends.
  const double unset = -1;
  std::vector<std::vector<double>> fEnd(p * v, std::vector<double>(m, unset)),
      bEnd = fEnd;
  std::vector<size_t> next(p, 0);
  std::vector<double> clock(p, 0), busy(p, 0);
  auto push = [&](std::string name, llvm::StringRef stream, int64_t s,
                  int64_t mb, int64_t chunk, double start, double dur) {
    trace.events.push_back({std::move(name), stream.str(), trace.ranks[s], s,
                            mb, chunk, start, dur});
  };
  const int64_t last = p * v - 1;
  // Advance every stage whose next step's input is ready until all are
  // done; dist-verify-schedule proved the orders deadlock-free.
  for (bool progress = true; progress;) {
    progress = false;
    for (int64_t s = 0; s < p; ++s) {
      while (next[s] < order[s].size()) {
        const mlir::dist::PipelineStep &st = order[s][next[s]];
        const int64_t k = st.chunk * p + s;
        const bool isWeight = st.pass == mlir::dist::Pass::Weight;
        double ready;
        if (isWeight)
          ready = bEnd[k][st.microBatch];
        else if (st.forward())
          ready = k == 0 ? 0 : fEnd[k - 1][st.microBatch];
        else
          ready =
              k == last ? fEnd[k][st.microBatch] : bEnd[k + 1][st.microBatch];
        if (ready == unset)
          break;
        // (Every boundary between virtual stages is between ranks.)
        bool received = !isWeight && (st.forward() ? k > 0 : k < last);
        if (received)
          ready += p2p;
        double start = std::max(clock[s], ready);
        double dur = (isWeight       ? weight
                      : st.forward() ? fwd
                                     : bwd) *
                     (k < int64_t(load.size()) ? load[k] : 1.0);
        std::string what = mlir::dist::stepName(st, v);
        push(what, "compute", s, st.microBatch, st.chunk, start, dur);
        clock[s] = start + dur;
        busy[s] += dur;
        if (!isWeight)
          (st.forward() ? fEnd : bEnd)[k][st.microBatch] = clock[s];
        // The send this step ends with, and its receive.
        int64_t peer = st.forward() ? k + 1 : k - 1;
        if (!isWeight && peer >= 0 && peer <= last && p2p > 0) {
          push("send " + what, "send", s, st.microBatch, st.chunk, clock[s],
               p2p);
          push("recv " + what, "recv", peer % p, st.microBatch, st.chunk,
               clock[s], p2p);
        }
        ++next[s];
        progress = true;
      }
    }
  }
  for (int64_t s = 0; s < p; ++s)
    trace.flush = std::max(trace.flush, clock[s]);
  for (int64_t s = 0; s < p; ++s) {
    trace.bubble.push_back(trace.flush > 0 ? 1 - busy[s] / trace.flush : 0);
    // The data-parallel collectives after this rank's last backward.
    double at = clock[s];
    for (const auto &[name, dur] : collectives) {
      push(name, dataStream(), s, -1, -1, at, dur);
      at += dur;
    }
    trace.makespan = std::max(trace.makespan, at);
  }
  trace.makespan = std::max(trace.makespan, trace.flush);
  return trace;
}

ScheduleTrace triax::cost::traceOf(const ModelShape &model,
                                   const PlanRequest &req, const Candidate &c) {
  const Hardware &hw = req.hardware;
  const Plan &plan = c.plan;
  const double rate = hw.peakFlops * req.efficiency;
  const double perRank = double(plan.tp * plan.pp);
  const double tokens = double(c.microBatch) * double(model.seq);
  // [F1] is 1/3 forward, 2/3 backward; the backward also recomputes [F2].
  const double fwdFlops = c.flopsPerToken / 3;
  const double bwdFlops = c.stepFlopsPerToken - fwdFlops;
  double fwd = tokens * fwdFlops / perRank / rate;
  double bwd = tokens * bwdFlops / perRank / rate;
  auto seconds = [&](const CommLoad &l) {
    double bw = l.spanRanks <= hw.gpusPerNode ? hw.nvlinkBandwidth
                                              : hw.interNodeBandwidth;
    return double(l.bytes) / bw + double(l.calls) * hw.latency;
  };
  const int64_t m = std::max<int64_t>(plan.microBatches, 1);
  double p2p = 0, perMicroBatch = 0;
  std::vector<std::pair<std::string, double>> after;
  for (const auto &[name, l] : c.comm) {
    llvm::StringRef n(name);
    if (n == "send/recv pp") {
      // (A micro-batch's message; the tied embedding's exchange and the
      // norm's all_reduce over pp come after the last backward.)
      p2p = l.calls ? seconds(l) / double(l.calls) : 0;
    } else if (n.ends_with(" tp") || plan.zeroStage == 3) {
      // Inside every micro-batch: drawn as part of its F (1/3) and B (2/3).
      perMicroBatch += seconds(l) / double(m);
    } else {
      after.push_back({name, seconds(l)});
    }
  }
  fwd += perMicroBatch / 3;
  bwd += perMicroBatch * 2 / 3;
  std::vector<int64_t> ranks;
  for (int64_t s = 0; s < plan.pp; ++s)
    ranks.push_back(s * plan.tp); // dp 0, tp 0 of each stage
  Schedule schedule = plan.pp > 1 ? plan.schedule : Schedule::None;
  ScheduleTrace trace =
      simulateSchedule(plan.pp, m, schedule, fwd, bwd, p2p, after, ranks,
                       plan.virtualStages, c.chunkLoad);
  trace.title = "@" + model.name + " " + describePlan(c) + " on " +
                std::to_string(req.gpus) + " x " + hw.name;
  return trace;
}

namespace {
int64_t tidOf(llvm::StringRef stream) {
  return stream == "compute" ? 1
         : stream == "send"  ? 2
         : stream == "recv"  ? 3
                             : 4;
}
} // namespace

void triax::cost::printChromeTrace(llvm::raw_ostream &os,
                                   const ScheduleTrace &trace) {
  llvm::json::Array events;
  for (int64_t s = 0; s < trace.stages; ++s) {
    int64_t rank = trace.ranks[s];
    events.push_back(llvm::json::Object{
        {"name", "process_name"},
        {"ph", "M"},
        {"pid", rank},
        {"args", llvm::json::Object{{"name", "rank " + std::to_string(rank) +
                                                 " (stage " +
                                                 std::to_string(s) + ")"}}}});
    events.push_back(
        llvm::json::Object{{"name", "process_sort_index"},
                           {"ph", "M"},
                           {"pid", rank},
                           {"args", llvm::json::Object{{"sort_index", s}}}});
    for (llvm::StringRef stream :
         {llvm::StringRef("compute"), llvm::StringRef("send"),
          llvm::StringRef("recv"), dataStream()})
      events.push_back(
          llvm::json::Object{{"name", "thread_name"},
                             {"ph", "M"},
                             {"pid", rank},
                             {"tid", tidOf(stream)},
                             {"args", llvm::json::Object{{"name", stream}}}});
  }
  for (const TraceEvent &e : trace.events) {
    llvm::json::Object args{{"stage", e.stage}};
    if (e.microBatch >= 0)
      args["micro_batch"] = e.microBatch;
    if (trace.virtualStages > 1 && e.chunk >= 0)
      args["chunk"] = e.chunk;
    llvm::StringRef name(e.name);
    const char *cat = e.stream == "compute"
                          ? (name.starts_with("F")   ? "forward"
                             : name.starts_with("W") ? "weight"
                                                     : "backward")
                      : e.stream == dataStream() ? "collective"
                                                 : "p2p";
    events.push_back(llvm::json::Object{{"name", e.name},
                                        {"cat", cat},
                                        {"ph", "X"},
                                        {"ts", e.start * 1e6},
                                        {"dur", e.duration * 1e6},
                                        {"pid", e.rank},
                                        {"tid", tidOf(e.stream)},
                                        {"args", std::move(args)}});
  }
  llvm::json::Array bubble;
  for (double b : trace.bubble)
    bubble.push_back(b);
  llvm::json::Object root{
      {"traceEvents", std::move(events)},
      {"displayTimeUnit", "ms"},
      {"otherData", llvm::json::Object{{"plan", trace.title},
                                       {"stages", trace.stages},
                                       {"microbatches", trace.microBatches},
                                       {"virtual_stages", trace.virtualStages},
                                       {"flush_us", trace.flush * 1e6},
                                       {"step_us", trace.makespan * 1e6},
                                       {"bubble_per_stage", std::move(bubble)},
                                       {"predicted", true}}}};
  os << llvm::formatv("{0:2}", llvm::json::Value(std::move(root))) << "\n";
}

void triax::cost::printScheduleSVG(llvm::raw_ostream &os,
                                   const ScheduleTrace &trace) {
  const double left = 150, right = 20, top = 48, row = 36, box = 24;
  const double width = 1000;
  const double plot = width - left - right;
  const double span = trace.makespan > 0 ? trace.makespan : 1;
  const double height = top + row * double(trace.stages) + 40;
  auto x = [&](double t) { return left + plot * t / span; };
  auto esc = [](llvm::StringRef s) {
    std::string out;
    for (char ch : s)
      out += ch == '<'   ? "&lt;"
             : ch == '>' ? "&gt;"
             : ch == '&' ? "&amp;"
                         : std::string(1, ch);
    return out;
  };
  os << llvm::formatv("<svg xmlns=\"http://www.w3.org/2000/svg\" "
                      "width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" "
                      "font-family=\"sans-serif\" font-size=\"11\">\n",
                      width, height);
  os << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  os << "<text x=\"8\" y=\"16\" font-size=\"13\">" << esc(trace.title)
     << "</text>\n";
  os << "<text x=\"8\" y=\"34\" fill=\"#555\">predicted; F forward "
        "(blue), B backward (orange), W weight pass (purple), numbered by "
        "micro-batch (.chunk, lighter for later chunks); green: "
        "data-parallel collectives; grey ticks: sends; white: idle; flush "
     << llvm::format("%.3f", trace.flush * 1e3) << " ms, step "
     << llvm::format("%.3f", trace.makespan * 1e3) << " ms</text>\n";
  for (int64_t s = 0; s < trace.stages; ++s) {
    double y = top + row * double(s);
    os << llvm::formatv("<text x=\"8\" y=\"{0}\">rank {1} (stage {2})"
                        "</text>\n",
                        y + box / 2 + 4, trace.ranks[s], s);
    os << llvm::formatv("<text x=\"8\" y=\"{0}\" fill=\"#555\" "
                        "font-size=\"9\">bubble {1:f1}%</text>\n",
                        y + box / 2 + 15, trace.bubble[s] * 100);
    os << llvm::formatv("<rect x=\"{0}\" y=\"{1}\" width=\"{2}\" "
                        "height=\"{3}\" fill=\"white\" stroke=\"#bbb\"/>\n",
                        left, y, plot, box);
  }
  for (const TraceEvent &e : trace.events) {
    double y = top + row * double(e.stage);
    double x0 = x(e.start), w = std::max(plot * e.duration / span, 0.5);
    if (e.stream == "send" || e.stream == "recv") {
      if (e.stream == "send")
        os << llvm::formatv("<rect x=\"{0:f2}\" y=\"{1}\" width=\"{2:f2}\" "
                            "height=\"3\" fill=\"#888\"><title>{3}</title>"
                            "</rect>\n",
                            x0, y + box + 1, w, esc(e.name));
      continue;
    }
    // Chunk 0 dark, the later chunks of an interleaved schedule lighter.
    static const char *forward[] = {"#4e79a7", "#79a6d2", "#a0c4e8"};
    static const char *backward[] = {"#f28e2b", "#f6b26b", "#f9cf9c"};
    const int64_t shade = std::clamp<int64_t>(e.chunk, 0, 2);
    llvm::StringRef name(e.name);
    const char *fill = e.stream == dataStream() ? "#59a14f"
                       : name.starts_with("F")  ? forward[shade]
                       : name.starts_with("W")  ? "#b07aa1" // a weight pass
                                                : backward[shade];
    os << llvm::formatv("<rect x=\"{0:f2}\" y=\"{1}\" width=\"{2:f2}\" "
                        "height=\"{3}\" fill=\"{4}\" stroke=\"white\" "
                        "stroke-width=\"0.5\"><title>{5} {6:f3} ms"
                        "</title></rect>\n",
                        x0, y, w, box, fill, esc(e.name), e.duration * 1e3);
    const std::string &label = e.name;
    if (w >= 7.0 * double(label.size()))
      os << llvm::formatv("<text x=\"{0:f2}\" y=\"{1}\" fill=\"white\" "
                          "text-anchor=\"middle\">{2}</text>\n",
                          x0 + w / 2, y + box / 2 + 4, esc(label));
  }
  // The time axis.
  double axisY = top + row * double(trace.stages) + 4;
  os << llvm::formatv("<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" "
                      "stroke=\"#333\"/>\n",
                      left, axisY, left + plot);
  for (int i = 0; i <= 5; ++i) {
    double t = span * i / 5;
    os << llvm::formatv("<text x=\"{0:f2}\" y=\"{1}\" text-anchor=\"middle\" "
                        "fill=\"#333\">{2:f2} ms</text>\n",
                        x(t), axisY + 16, t * 1e3);
  }
  os << "</svg>\n";
}

//===----------------------------------------------------------------------===//
// The tools' entry point
//===----------------------------------------------------------------------===//

namespace {
llvm::Error writeText(llvm::StringRef path, llvm::StringRef flag,
                      const std::string &text) {
  std::error_code ec;
  llvm::raw_fd_ostream file(path, ec);
  if (!ec) {
    file << text;
    file.close();
    ec = file.error();
  }
  if (ec)
    return llvm::createStringError(ec, flag + ": cannot write '" + path +
                                           "': " + ec.message());
  return llvm::Error::success();
}
} // namespace

llvm::Expected<PlanResult>
triax::cost::runPlan(mlir::ModuleOp module, llvm::StringRef spec, bool json,
                     bool fixMicroBatch, llvm::StringRef tracePath,
                     llvm::StringRef svgPath, llvm::raw_ostream &os) {
  auto fail = [](llvm::StringRef flag, llvm::Error e) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   flag + ": " + llvm::toString(std::move(e)));
  };
  llvm::Expected<PlanRequest> request = parsePlanRequest(spec);
  if (!request)
    return fail("--plan", request.takeError());
  llvm::Expected<ModelShape> shape = readModelShape(module);
  if (!shape)
    return fail("--plan", shape.takeError());
  if (fixMicroBatch && !request->microBatch && !request->microBatches)
    request->microBatch = shape->microBatch;
  // precision=: the activations in that type (the state is the model's).
  if (request->activationBytes)
    shape->activationBytes = *request->activationBytes;
  PlanResult result = planModel(*shape, *request);
  if (json)
    printPlanJSON(os, result);
  else
    printPlan(os, result);
  if (tracePath.empty() && svgPath.empty())
    return result;
  if (result.top.empty())
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        (tracePath.empty() ? "--svg" : "--trace") +
            llvm::Twine(": no plan fits, so there is no schedule to draw"));
  ScheduleTrace trace = traceOf(*shape, *request, result.top.front());
  if (!tracePath.empty()) {
    std::string text;
    llvm::raw_string_ostream out(text);
    printChromeTrace(out, trace);
    if (llvm::Error e = writeText(tracePath, "--trace", text))
      return std::move(e);
  }
  if (!svgPath.empty()) {
    std::string text;
    llvm::raw_string_ostream out(text);
    printScheduleSVG(out, trace);
    if (llvm::Error e = writeText(svgPath, "--svg", text))
      return std::move(e);
  }
  return result;
}
