//===- Planner.cpp - dist-plan: enumerate, reject, predict, rank ----------===//
//
// The search of docs/cost-model.md "Planner". Every candidate is checked in
// a fixed order and takes the first reason that rejects it (its region):
// tp across nodes, an indivisible shape or batch, ZeRO-2/3 with a pipeline,
// ZeRO without dp, sequence parallelism without tp, 1F1B with m < pp, and
// last memory. The survivors are ranked by the predicted step time [T4].
// The search is a few thousand candidates of arithmetic, no IR: the model
// was read once (ModelShape).
//
//===----------------------------------------------------------------------===//

#include "triax/CostModel/Planner.h"
#include "triax/Dialect/Dist/IR/MeshShape.h"
#include "triax/Dialect/Dist/Transforms/StagePartition.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cmath>
#include <tuple>

using namespace triax::cost;

namespace {
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
// dist-data-parallel's default bucket (bucket-mb = 25).
constexpr double kBucketBytes = 25.0 * 1024 * 1024;
/// [C6]'s exchange of a tied embedding's gradient between the first and the
/// last stage, once per step (not a micro-batch's message).
constexpr const char *kTiedExchange = "send/recv pp (tied embedding)";

llvm::Error failure(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

const char *scheduleName(Schedule s) {
  if (s == Schedule::None)
    return "-";
  // (A name of PipelineSchedule.cpp's: a string literal.)
  return mlir::dist::scheduleName(pipelineScheduleOf(s)).data();
}

const char *recomputeName(Recompute r) {
  switch (r) {
  case Recompute::Selective:
    return "selective";
  case Recompute::Full:
    return "full";
  case Recompute::None:
    break;
  }
  return "none";
}

std::vector<int64_t> divisors(int64_t n) {
  std::vector<int64_t> out;
  for (int64_t d = 1; d * d <= n; ++d)
    if (n % d == 0) {
      out.push_back(d);
      if (d != n / d)
        out.push_back(n / d);
    }
  std::sort(out.begin(), out.end());
  return out;
}

std::string gib(double bytes) {
  return llvm::formatv("{0:f2} GiB", bytes / kGiB).str();
}

/// GiB from 0.1 GiB up, MiB below (the breakdown of a small model).
std::string human(double bytes) {
  if (bytes >= 0.1 * kGiB || bytes == 0)
    return gib(bytes);
  return llvm::formatv("{0:f2} MiB", bytes / (1024.0 * 1024.0)).str();
}

/// Milliseconds with 4 significant digits.
std::string ms(double seconds) {
  std::string text;
  llvm::raw_string_ostream(text) << llvm::format("%.4g ms", seconds * 1e3);
  return text;
}
} // namespace

//===----------------------------------------------------------------------===//
// The request
//===----------------------------------------------------------------------===//

/// The request's fixed size of the axis named `key`, for the roles the
/// planner searches over (axisField); nullptr for other keys.
static std::optional<int64_t> *fixedAxis(PlanRequest &req,
                                         llvm::StringRef key) {
  return axisField(req, mlir::dist::axisRoleNamed(key));
}

/// The request's fixed size of `role`'s axis, if any.
static std::optional<int64_t> fixedSize(const PlanRequest &req,
                                        trx_axis_role role) {
  const std::optional<int64_t> *axis = axisField(req, role);
  return axis ? *axis : std::nullopt;
}

llvm::Expected<PlanRequest>
triax::cost::parsePlanRequest(llvm::StringRef text) {
  PlanRequest req;
  req.text = text.str();
  std::optional<int64_t> gpusPerNode;
  std::string gpu;
  llvm::SmallVector<llvm::StringRef> items;
  text.split(items, ',');
  llvm::StringMap<bool> seen;
  const char *keys = "gpus, gpu, gpus-per-node, global-batch, micro-batch, "
                     "microbatches, dp, tp, pp, zero, schedule, "
                     "virtual-stages, sequence-parallel, carry-gathered, "
                     "recompute, precision, pad-vocab, efficiency, headroom, "
                     "top";
  for (llvm::StringRef item : items) {
    auto [key, value] = item.trim().split('=');
    key = key.trim();
    value = value.trim();
    if (key.empty() || value.empty())
      return failure("expected key=value items such as gpus=8,gpu=h100-80g, "
                     "got '" +
                     item + "'");
    if (seen[key])
      return failure("key '" + key + "' is given twice");
    seen[key] = true;
    auto integer = [&](int64_t min) -> llvm::Expected<int64_t> {
      int64_t v = 0;
      if (value.getAsInteger(10, v) || v < min)
        return failure(key + "=" + value +
                       ": expected an integer >= " + llvm::Twine(min));
      return v;
    };
    auto setInt = [&](std::optional<int64_t> &slot,
                      int64_t min) -> llvm::Error {
      auto v = integer(min);
      if (!v)
        return v.takeError();
      slot = *v;
      return llvm::Error::success();
    };
    if (key == "gpus") {
      auto v = integer(1);
      if (!v)
        return v.takeError();
      req.gpus = *v;
    } else if (key == "gpu") {
      gpu = value.str();
    } else if (key == "gpus-per-node") {
      if (auto e = setInt(gpusPerNode, 1))
        return std::move(e);
    } else if (key == "global-batch") {
      auto v = integer(1);
      if (!v)
        return v.takeError();
      req.globalBatch = *v;
    } else if (key == "micro-batch") {
      if (auto e = setInt(req.microBatch, 1))
        return std::move(e);
    } else if (key == "microbatches") {
      if (auto e = setInt(req.microBatches, 1))
        return std::move(e);
    } else if (std::optional<int64_t> *axis = fixedAxis(req, key)) {
      if (auto e = setInt(*axis, 1))
        return std::move(e);
    } else if (key == "zero") {
      int64_t v = -1;
      if (value.getAsInteger(10, v) || v < 0 || v > 3)
        return failure("zero=" + value +
                       ": expected a ZeRO stage 0, 1, 2 or 3");
      req.zero = int(v);
    } else if (key == "schedule") {
      std::optional<mlir::dist::PipelineSchedule> parsed =
          mlir::dist::parseSchedule(value);
      if (!parsed)
        return failure("schedule=" + value +
                       ": expected gpipe, 1f1b, interleaved or zb-h1");
      req.schedule = scheduleOf(*parsed);
    } else if (key == "virtual-stages") {
      auto v = integer(2);
      if (!v)
        return v.takeError();
      req.virtualStages = *v;
    } else if (key == "sequence-parallel" || key == "sp" ||
               key == "carry-gathered") {
      std::optional<bool> &slot =
          key == "carry-gathered" ? req.carryGathered : req.sequenceParallel;
      if (value == "1" || value == "true" || value == "on")
        slot = true;
      else if (value == "0" || value == "false" || value == "off")
        slot = false;
      else
        return failure(key + "=" + value + ": expected on or off");
    } else if (key == "recompute") {
      if (value == "none")
        req.recompute = Recompute::None;
      else if (value == "selective")
        req.recompute = Recompute::Selective;
      else if (value == "full")
        req.recompute = Recompute::Full;
      else
        return failure("recompute=" + value +
                       ": expected none, selective or full");
    } else if (key == "precision") {
      if (value == "fp32")
        req.activationBytes = 4;
      else if (value == "bf16")
        req.activationBytes = 2;
      else
        return failure("precision=" + value + ": expected fp32 or bf16");
    } else if (key == "pad-vocab") {
      auto v = integer(1);
      if (!v)
        return v.takeError();
      req.padVocab = *v;
    } else if (key == "efficiency") {
      double e = 0;
      if (value.getAsDouble(e) || !(e > 0 && e <= 1))
        return failure("efficiency=" + value + ": expected a number in (0, 1]");
      req.efficiency = e;
    } else if (key == "headroom") {
      double g = -1;
      if (value.getAsDouble(g) || !(g >= 0))
        return failure("headroom=" + value +
                       ": expected GiB of HBM to keep free, a number >= 0");
      req.headroomBytes = g * double(1ull << 30);
    } else if (key == "top") {
      auto v = integer(1);
      if (!v)
        return v.takeError();
      req.top = *v;
    } else {
      return failure("unknown key '" + key + "' (keys: " + keys + ")");
    }
  }
  if (req.gpus == 0)
    return failure("missing gpus=N (the number of GPUs to plan for)");
  if (gpu.empty())
    return failure("missing gpu=NAME (a100-40g, a100-80g, h100-80g, "
                   "h200-141g) or gpu=file.json");
  auto hw = loadHardware(gpu);
  if (!hw)
    return failure("gpu=" + gpu + ": " + llvm::toString(hw.takeError()));
  req.hardware = *hw;
  if (gpusPerNode)
    req.hardware.gpusPerNode = *gpusPerNode;
  // A fixed axis must divide the GPUs, and the fixed axes multiply to them.
  int64_t fixed = 1;
  for (const mlir::dist::AxisRoleInfo &row : mlir::dist::axisRoles()) {
    std::optional<int64_t> axis = fixedSize(req, row.role);
    if (!axis)
      continue;
    if (req.gpus % *axis != 0)
      return failure(llvm::Twine(row.name) + "=" + llvm::Twine(*axis) +
                     " does not divide gpus=" + llvm::Twine(req.gpus));
    fixed *= *axis;
  }
  if (req.gpus % fixed != 0 ||
      (req.dp && req.tp && req.pp && fixed != req.gpus))
    return failure("dp x cp x tp x pp = " + llvm::Twine(fixed) +
                   " does not divide gpus=" + llvm::Twine(req.gpus) +
                   " (dp x cp x tp x pp must equal the GPUs)");
  if (req.microBatch && req.microBatches)
    return failure("give micro-batch= (sequences per micro-batch) or "
                   "microbatches= (micro-batches per step), not both");
  if ((req.virtualStages > 1) !=
      (req.schedule && *req.schedule == Schedule::Interleaved))
    return failure("schedule=interleaved and virtual-stages=v (>= 2) go "
                   "together");
  return req;
}

//===----------------------------------------------------------------------===//
// One candidate
//===----------------------------------------------------------------------===//

namespace {
/// Each pipeline rank's blocks and forward FLOPs, as dist-pipeline cuts the
/// model into p x v virtual stages (StagePartition.h; virtual stage k on
/// rank k mod p), the head's FLOPs scaled to the padded vocabulary.
struct PipelineStages {
  std::vector<int64_t> layers; // per rank
  std::vector<double> flops;   // per rank
  std::vector<double> chunks;  // per virtual stage
  std::vector<int64_t> blocks; // per virtual stage
};
PipelineStages pipelineStages(const ModelShape &model, int64_t p, int64_t v,
                              int64_t vocab) {
  const int64_t parts = p * v;
  if (parts > model.layers) // (rejected: a stage without a block)
    return {};
  std::vector<double> costs = model.blockFlops;
  double before = model.beforeFlops, after = model.afterFlops;
  if (int64_t(costs.size()) != model.layers) {
    costs.assign(model.layers, 1.0);
    before = after = 0;
  }
  after *= double(vocab) / double(std::max<int64_t>(model.vocab, 1));
  auto [cached, fresh] = model.stageCounts.try_emplace({parts, vocab});
  if (fresh) {
    llvm::SmallVector<int64_t> cut =
        mlir::dist::balanceStages(costs, parts, before, after);
    cached->second.assign(cut.begin(), cut.end());
  }
  const std::vector<int64_t> &counts = cached->second;
  PipelineStages st{std::vector<int64_t>(p, 0), std::vector<double>(p, 0),
                    std::vector<double>(parts, 0), counts};
  int64_t block = 0;
  for (int64_t k = 0; k < parts; ++k)
    for (int64_t i = 0; i < counts[k]; ++i) {
      st.layers[k % p] += 1;
      st.chunks[k] += costs[block++];
    }
  st.chunks[0] += before;
  st.chunks[parts - 1] += after;
  for (int64_t k = 0; k < parts; ++k)
    st.flops[k % p] += st.chunks[k];
  return st;
}
} // namespace

Candidate triax::cost::evaluatePlan(const ModelShape &model,
                                    const PlanRequest &req, const Plan &plan,
                                    int64_t b) {
  Candidate c;
  c.plan = plan;
  c.microBatch = b;
  const Hardware &hw = req.hardware;
  const int64_t t = plan.tp, p = plan.pp, d = plan.dp,
                cp = std::max<int64_t>(plan.cp, 1),
                e = std::max<int64_t>(plan.ep, 1),
                m = std::max<int64_t>(plan.microBatches, 1);
  // The ranks that train on different sequences: dp and ep.
  const int64_t D = d * e;
  const int64_t B = req.globalBatch ? req.globalBatch : model.globalBatch;
  const int64_t L = model.layers, s = model.seq, h = model.hidden;
  auto reject = [&](const std::string &reason, const llvm::Twine &detail) {
    if (c.reason.empty()) {
      c.reason = reason;
      c.detail = detail.str();
    }
  };

  // The checks, in order: the first failing one is the plan's region.
  if (t > 1 && !model.tensorParallelError.empty())
    reject("tensor parallelism cannot split the model",
           model.tensorParallelError);
  if (t > hw.gpusPerNode)
    reject("tp across nodes", "tp=" + llvm::Twine(t) + " > " +
                                  llvm::Twine(hw.gpusPerNode) +
                                  " GPUs per node (tp stays on NVLink)");
  struct Divides {
    const char *what;
    int64_t size;
  } byTp[] = {{"heads", model.heads},
              {"kv-heads", model.kvHeads},
              {"hidden", model.hidden},
              {"ffn", model.ffn}};
  for (const Divides &dv : byTp)
    if (dv.size % t != 0) {
      reject(std::string("indivisible: tp does not divide ") + dv.what,
             llvm::Twine(dv.what) + " " + llvm::Twine(dv.size) +
                 " is not divisible by tp=" + llvm::Twine(t));
    }
  const int64_t v = std::max<int64_t>(plan.virtualStages, 1);
  if (p * v > L)
    reject("a pipeline stage without a block",
           (v > 1 ? "pp x virtual-stages = " + std::to_string(p) + " x " +
                        std::to_string(v) + " = " + std::to_string(p * v)
                  : "pp=" + std::to_string(p)) +
               " stages but " + std::to_string(L) +
               " blocks: every stage needs at least one (dist-pipeline)");
  if (b < 1 || B % (D * b) != 0)
    reject("indivisible: dp x micro-batch does not divide the global batch",
           "global batch " + llvm::Twine(B) + " is not divisible by dp=" +
               llvm::Twine(d) + (e > 1 ? " x ep=" + std::to_string(e) : "") +
               " x micro-batch " + llvm::Twine(b));
  if (e > 1 && model.experts % e != 0)
    reject("indivisible: ep does not divide the experts",
           "experts " + llvm::Twine(model.experts) +
               " are not divisible by ep=" + llvm::Twine(e));
  if (plan.sequenceParallel && t > 1 && s % t != 0)
    reject("indivisible: tp does not divide seq (sequence parallelism)",
           "seq " + llvm::Twine(s) +
               " is not divisible by tp=" + llvm::Twine(t));
  if (plan.zeroStage >= 2 && p > 1)
    reject("zero-2/3 with pp > 1",
           "zero=" + llvm::Twine(plan.zeroStage) +
               " with pp=" + llvm::Twine(p) +
               ": gradients and parameters sharded across a pipeline's "
               "micro-batches (Triax refuses it, as DeepSpeed does)");
  if (plan.zeroStage > 0 && d * cp < 2)
    reject("zero without data parallelism",
           "zero=" + llvm::Twine(plan.zeroStage) +
               " shards over dp x cp, a group of 1");
  if (plan.sequenceParallel && t < 2)
    reject("sequence parallelism without tp",
           "sequence-parallel needs tp >= 2 (tp=1)");
  if (plan.carryGathered &&
      (plan.schedule != Schedule::ZeroBubbleH1 || !plan.sequenceParallel))
    reject("carry-gathered without zb-h1 and sequence parallelism",
           "carry-gathered hands ZB-H1's W pass the tensors its B pass "
           "gathered over tp: it needs schedule=zb-h1 and "
           "sequence-parallel");
  if (cp > 1 && plan.sequenceParallel && t > 1 && s % (cp * t) != 0)
    reject("indivisible: cp x tp does not divide seq (context and sequence "
           "parallelism)",
           "seq " + llvm::Twine(s) + " is not divisible by cp=" +
               llvm::Twine(cp) + " x tp=" + llvm::Twine(t) +
               " (sequence parallelism splits each cp rank's tokens over "
               "tp)");
  if (cp > 1 && s % (2 * cp) != 0)
    reject("indivisible: 2 cp does not divide seq",
           "seq " + llvm::Twine(s) + " is not " + llvm::Twine(2 * cp) +
               " equal chunks (cp=" + llvm::Twine(cp) +
               ": two chunks per rank)");
  if ((plan.schedule == Schedule::OneFOneB ||
       plan.schedule == Schedule::ZeroBubbleH1) &&
      m < p)
    reject("1f1b with fewer micro-batches than stages",
           llvm::Twine(scheduleName(plan.schedule)) + " needs m >= pp: m=" +
               llvm::Twine(m) + " < pp=" + llvm::Twine(p));
  if (plan.schedule == Schedule::Interleaved && m % p != 0)
    reject("interleaved with micro-batches not a multiple of pp",
           "interleaved runs the micro-batches in groups of pp: m=" +
               llvm::Twine(m) + " is not a multiple of pp=" + llvm::Twine(p));

  // Memory per rank, on every stage; the fullest one counts. Each stage
  // holds the blocks dist-pipeline gives it (balanced by forward FLOPs, the
  // head on the last stage: gpt2 on pp=2 is 8 and 4 blocks). A plan with
  // more stages than blocks (rejected above; 1,048,576 GPUs give meshes of
  // pp up to 2^20) is costed as one block per stage, its middle stages by
  // stage 1, so that it costs O(1), not O(pp).
  const double td = double(t), Ld = double(L);
  // (The experts are split over ep, and each expert's MLP over tp.)
  const double perLayer =
      (double(model.layerSplit) / td + double(model.layerRepl) +
       double(model.layerExpert) / double(e) / td) /
      Ld;
  // Of those, the experts' (averaged over dp alone).
  const double expertsOn = double(model.layerExpert) / double(e) / td / Ld;
  // The vocabulary as compiled: padded to a multiple of pad-vocab x tp
  // (triax-pad-vocab), its padding's rows in the token table and in the
  // head (the tied table's copy on the last stage, or an untied head).
  const int64_t padMultiple = std::max<int64_t>(req.padVocab, 1) * t;
  const int64_t vocab =
      (model.vocab + padMultiple - 1) / padMultiple * padMultiple;
  const double padRows = double((vocab - model.vocab) * h);
  const bool tied = model.tiedSplit > 0;
  const double first =
      (double(model.firstSplit) + padRows) / td + double(model.firstRepl);
  const double last = double(model.lastSplit) / td + double(model.lastRepl) +
                      (p > 1 ? double(model.tiedSplit) / td : 0.0) +
                      (tied ? (p > 1 ? padRows / td : 0.0) : padRows / td);
  const StateBytes per = bytesPerParam(model.dtype);
  const LayerShape layer = model.layerShape();
  // One h-wide tensor of a micro-batch on this rank (its s / cp tokens), in
  // the compute type.
  const double hWide =
      double(s / cp) * double(b) * double(h) * double(model.activationBytes);
  // What a pipeline stage sends or receives of one micro-batch, an
  // activation or its gradient (its shard over tp with sequence
  // parallelism).
  const double boundary = hWide * (plan.sequenceParallel ? 1.0 / td : 1.0);
  const double act =
      keptBytesPerLayer(layer, s, b, t, plan.sequenceParallel, plan.recompute,
                        cp, model.activationBytes); // [A8]
  const PipelineStages pipe = pipelineStages(model, p, v, vocab);
  const bool hoistedCopies =
      model.dtype == DTypeMode::FP32 && model.activationBytes == 2;
  // Of a stage's parameters, those no gradient reads (biases, position
  // tables; a block's are read again by its recomputed forward under full
  // recomputation).
  const double layerUnread =
      (double(model.layerUnreadSplit) / td + double(model.layerUnreadRepl)) /
      Ld;
  const double unreadPerLayer =
      plan.recompute == Recompute::Full ? 0.0 : layerUnread;
  // (On a pipeline the tied table is the head's weight on the last stage
  // only: the first stage's backward, an embedding gradient, reads none.)
  const double firstUnread =
      double(model.firstUnreadSplit) / td + double(model.firstUnreadRepl) +
      (tied && p > 1 ? (double(model.tiedSplit) + padRows) / td : 0.0);
  const double lastUnread =
      double(model.lastUnreadSplit) / td + double(model.lastUnreadRepl);
  // [A10]: the bf16 copies of the head's weight and the final norm's scale
  // and of a layer's MLP output projection (ffn x h / t), which a stage
  // backward frees before its peak; one ffn-wide tensor of a micro-batch,
  // and the ffn-wide gradients a dense MLP's backward holds at once (GELU
  // 2, SwiGLU 2: each of its products' gradients written over one it no
  // longer needs, elementwise-in-place).
  const double headCopies = 2.0 * (last - lastUnread);
  const double downCopy = 2.0 * double(layer.ffn) * double(h) / td;
  const double ffnWide = hWide * double(layer.ffn) / double(h) / td;
  const double mlpGradients = 2.0;
  auto layersOf = [&](int64_t stage) -> double {
    return pipe.layers.empty() ? 1.0 : double(pipe.layers[stage]);
  };
  std::vector<int64_t> stages;
  if (!pipe.layers.empty()) {
    for (int64_t stage = 0; stage < p; ++stage)
      stages.push_back(stage);
  } else {
    stages = {0};
    if (p > 1)
      stages.push_back(1);
    if (p > 2)
      stages.push_back(p - 1);
  }
  // The most blocks a stage holds (the per-layer collectives of cp and ep).
  double maxLayers = 0;
  for (int64_t stage : stages)
    maxLayers = std::max(maxLayers, layersOf(stage));
  double maxElems = 0, maxElemsLayers = 0;
  int64_t maxTensors = 0;
  for (int64_t stage : stages) {
    const double layersOn = layersOf(stage);
    double elems = perLayer * layersOn;
    double unread = unreadPerLayer * layersOn;
    int64_t tensors = int64_t(double(model.layerTensors) * layersOn / Ld);
    double biggest = perLayer; // the largest unit ZeRO-3 gathers
    if (stage == 0) {
      elems += first;
      unread += firstUnread;
      tensors += model.firstTensors;
      biggest = std::max(biggest, first);
    }
    if (stage == p - 1) {
      elems += last;
      unread += lastUnread;
      tensors += model.lastTensors;
      biggest = std::max(biggest, last);
    }
    MemoryBreakdown mem;
    mem.stage = stage;
    // ZeRO shards over the data ranks and cp (dist-zero folds context
    // parallelism's gradient sums into its reduce-scatters).
    StateBytes st = stateBytesPerRank({int64_t(std::llround(elems))}, d * cp,
                                      plan.zeroStage, model.dtype);
    if (e > 1 && plan.zeroStage > 0) {
      // ZeRO with ep: the experts' state sharded over dp (x cp), the rest's
      // over dp x ep (x cp) (the data axes each is replicated on).
      int64_t experts = int64_t(std::llround(expertsOn * layersOn));
      StateBytes rest =
          stateBytesPerRank({int64_t(std::llround(elems)) - experts}, D * cp,
                            plan.zeroStage, model.dtype);
      StateBytes own =
          stateBytesPerRank({experts}, d * cp, plan.zeroStage, model.dtype);
      st.params = rest.params + own.params;
      st.grads = rest.grads + own.grads;
      st.optim = rest.optim + own.optim;
    }
    mem.params = double(st.params);
    mem.grads = double(st.grads);
    mem.optim = double(st.optim);
    // [M5] ZeRO-3 gathers one unit whole while the next is prefetched, a
    // block's in buckets of 25 MiB: while one is gathered, its members'
    // chunks packed (B / g) and the members' packs received (B) beside
    // the wholes.
    if (plan.zeroStage == 3) {
      const double bucket =
          std::min(double(per.params) * perLayer, double(kBucketBytes));
      mem.zeroGather = double(per.params) * (biggest + perLayer) +
                       bucket * (1.0 + 1.0 / double(D * cp));
    }
    // [A10] bf16 compute over f32 parameters: the kernel conversion makes
    // one bf16 copy of each parameter a call reads, at the call's start
    // (forward_backward, or each stage function), kept until its last
    // read: at the backward's peak, the stage's parameters a gradient reads
    // (weights and norm scales), 2 bytes each; interleaved's, those of the
    // chunk whose backward runs, the largest one's. (ZeRO-3 converts each
    // gathered unit where it is used instead.)
    if (hoistedCopies && plan.zeroStage < 3)
      mem.weightCopies = 2.0 * (elems - unread);
    // (Interleaved's chunks on this stage, as dist-pipeline cuts them.)
    llvm::SmallVector<int64_t> chunkBlocks;
    if (v > 1 && !pipe.blocks.empty())
      for (int64_t chunk = 0; chunk < v; ++chunk)
        chunkBlocks.push_back(pipe.blocks[chunk * p + stage]);
    // (On the last stage: the head's chunk's copies, and the largest of the
    // other chunks', whose backward holds no logits.)
    double headChunkCopies = 0.0, otherChunkCopies = 0.0;
    if (hoistedCopies && plan.zeroStage < 3 && !chunkBlocks.empty()) {
      double largest = 0;
      for (auto [chunk, blocks] : llvm::enumerate(chunkBlocks)) {
        double read = (perLayer - unreadPerLayer) * double(blocks);
        if (stage == 0 && chunk == 0)
          read += first - firstUnread;
        if (stage == p - 1 && int64_t(chunk) == v - 1) {
          read += last - lastUnread;
          headChunkCopies = 2.0 * read;
        } else {
          otherChunkCopies = std::max(otherChunkCopies, 2.0 * read);
        }
        largest = std::max(largest, read);
      }
      mem.weightCopies = 2.0 * largest;
    }
    mem.inFlight = inFlightMicroBatches(plan.schedule, p, m, stage, v);
    // (Interleaved's chunks as dist-pipeline cuts them, which need not be
    // equal: the most blocks in flight, in units of the stage's blocks.)
    if (plan.schedule == Schedule::Interleaved && !chunkBlocks.empty() &&
        layersOn > 0)
      mem.inFlight =
          blocksInFlight(plan.schedule, p, m, stage, v, chunkBlocks) / layersOn;
    // [A12] ZB-H1: of the [P2] micro-batches, those whose B pass has run
    // and W pass not (1F1B's count fewer: stage s defers s W passes) hold
    // only what their W pass reads. (Stage 0 returns no input gradient: its
    // B pass is empty, its W pass the whole backward, 1F1B's.)
    const bool splitW =
        plan.schedule == Schedule::ZeroBubbleH1 && p > 1 && stage > 0;
    WeightPassHandOver handOver;
    if (splitW) {
      const double whole =
          inFlightMicroBatches(Schedule::OneFOneB, p, m, stage, v);
      mem.deferred = mem.inFlight - whole;
      mem.inFlight = whole;
      handOver = weightPassHandOver(layer, s, b, t, plan.sequenceParallel,
                                    plan.recompute, cp, model.activationBytes,
                                    plan.carryGathered);
      // On the last stage also the head's: the logits' gradient (written
      // over the logits) and the head's input, whole.
      const double head = stage == p - 1
                              ? double(s / cp) * double(b) * double(vocab) /
                                        td * double(model.activationBytes) +
                                    hWide
                              : 0.0;
      mem.handOver = mem.deferred * (handOver.total() * layersOn + head);
    }
    mem.layers = int64_t(layersOn);
    mem.activations = act * layersOn * double(mem.inFlight);
    // [P4] messages received ahead of their pass: a micro-batch's h-wide
    // activation or gradient each (h/t with sequence parallelism). (Not
    // simulated for a plan with more stages than blocks, rejected above.)
    if (!pipe.layers.empty()) {
      mem.held = heldReceives(plan.schedule, p, m, stage, v);
      mem.receivedAhead = double(mem.held) * boundary;
    }
    // [A7] each MoE layer's buffers: E b C rows (every rank computes that
    // many, whatever ep) of the dispatched tokens (the first linear's input)
    // and the experts' output (the gates' gradient reads it), 2 h, each
    // after its exchange under ep (the buffer before it is freed), and the
    // experts' MLP intermediates (2 or 4 ffn, split over tp); under full
    // recomputation only the block being recomputed holds them.
    double expertsMade = 0;    // ZB-H1's B pass: the experts' gradients
    double expertsWorking = 0; // a stage backward's experts' gradients
    double expertsFirstGradient = 0, expertsExchange = 0,
           expertsOutputGradient = 0;
    if (model.experts > 0) {
      double rows =
          double(model.experts) * double(b) * double(model.expertRows);
      double perLayer =
          rows *
          (double(model.expertMlpTensors * model.ffn) / td + double(2 * h)) *
          double(model.activationBytes);
      // A layer's backward through its experts holds their output gradient,
      // dispatched into their rows, or their input gradient, beside their
      // MLP's ffn-wide gradients: GELU's one (the activation's is written
      // over its input's, elementwise-in-place: no epilogue fuses a batched
      // GEMM's), SwiGLU's two (the product's, then the up and SiLU
      // gradients it splits into, each over one it no longer needs).
      // Under ep the backward's exchanges hold an h-wide row buffer more
      // (the experts' output or input gradient on one side of its
      // all_to_all; until 2026-12-07, when the experts' weight gradients
      // were scaled by 1/ep in copies the stage backward kept, the IR held
      // three), and while one runs its scratch, another: at an exchange the
      // gradient on both sides and the scratch, or else the MLP's
      // gradients beside the exchanged one, the larger.
      expertsFirstGradient =
          rows * double(model.ffn) / td * double(model.activationBytes);
      expertsOutputGradient = rows * double(h) * double(model.activationBytes);
      const double expertsGradients = double(model.expertMlpTensors / 2);
      if (e > 1)
        expertsExchange = rows * double(h) * double(model.activationBytes);
      expertsWorking = expertsOutputGradient +
                       std::max(expertsGradients * expertsFirstGradient,
                                2.0 * expertsExchange);
      mem.experts = plan.recompute == Recompute::Full
                        ? perLayer
                        : perLayer * layersOn * double(mem.inFlight);
      // [A12] ZB-H1: a deferred W pass reads the experts' dispatched
      // tokens (h) and last linear's input (ffn/t) and the gradients of
      // their outputs (h, and k/2 ffn/t), which its B pass made.
      if (splitW) {
        const double k2 = double(model.expertMlpTensors / 2);
        const double expertKept = rows * (double(h) + double(model.ffn) / td) *
                                  double(model.activationBytes);
        const double expertCarried = rows *
                                     (double(h) + k2 * double(model.ffn) / td) *
                                     double(model.activationBytes);
        mem.experts += mem.deferred * layersOn * (expertKept + expertCarried);
        // (Under full recomputation B rebuilds what W reads and hands it
        // over too, and its peak is in its last layer: that layer's
        // rebuilt buffers, [A7]'s one, beside its experts' first ffn-wide
        // gradient, GELU's or SwiGLU's (the gradients it makes then are
        // written over it or over what they no longer need,
        // elementwise-in-place), and under ep their input gradient before
        // its exchange back; without, B's peak holds what it carries and,
        // under ep, the exchange buffer.)
        expertsMade = plan.recompute == Recompute::Full
                          ? (layersOn - 1) * (expertKept + expertCarried) +
                                expertsFirstGradient + expertsExchange
                          : expertCarried * layersOn + expertsExchange;
      }
    }
    // [A6] on the last stage, for each micro-batch in flight there (GPipe:
    // all m; ZB-H1's deferred W passes hold their logits' gradients, which
    // the head's weight gradient reads).
    // (Interleaved: the head is on the last chunk, the last virtual stage,
    // whose backward follows each forward as 1F1B's last stage's does: one
    // micro-batch's.)
    if (stage == p - 1)
      mem.logits = logitsBytes(
          s / cp, b, vocab, h, t, model.activationBytes,
          hoistedCopies && mem.weightCopies == 0, plan.sequenceParallel,
          plan.schedule == Schedule::Interleaved ? 1.0 : mem.inFlight);
    // A pipeline stage's backward function holds its working set on top
    // of the kept activations (under full recomputation: the rebuilt
    // layer's, below).
    // ZB-H1's B pass: what it returns for its W pass, every layer's, and
    // at its end the input gradient summed over the column linears' three
    // (3h, whole), beside the gradient it received (h, h/t with sequence
    // parallelism; on the last stage [A6]'s head input gradient instead).
    // Under full recomputation its peak may be in the last layer it
    // rebuilds instead, the others' hand-overs made, while the logits it
    // keeps for the W pass are still there (SwiGLU's rebuilt last layer
    // holds two of its ffn-wide gradients at once, the product's and one
    // it splits into, where a GELU's holds one).
    const double received = stage < p - 1 ? boundary : 0.0;
    if (splitW) {
      // (With context parallelism B's peak may come in its last ring
      // attention backward instead: its output gradient and scratch.)
      mem.working =
          handOver.carried * layersOn + received +
          std::max(3.0 * hWide,
                   hWide / td + ringAttentionGradScratch(
                                    layer, s, b, t, cp, model.activationBytes));
      if (plan.recompute == Recompute::Full)
        mem.working = std::max(
            mem.working,
            handOver.carried * (layersOn - 1) + received +
                recomputedLayerBytes(layer, s, b, t, plan.sequenceParallel, cp,
                                     model.activationBytes));
    } else if (p > 1 && plan.recompute != Recompute::Full && layersOn > 0)
      // (Beside the gradient received, an argument of the backward
      // function, which its caller holds until it returns.)
      mem.working = received + backwardWorkingBytes(
                                   layer, s, b, t, cp, model.activationBytes,
                                   plan.sequenceParallel, expertsWorking);
    else if (p > 1 && layersOn > 0)
      // Under full recomputation the rebuilt layer ([A8] below, [A7]'s one
      // layer, whose peak is its experts' first gradient, ffn-wide, beside
      // their rebuilt intermediates) beside the gradient received.
      mem.working = received + expertsFirstGradient + expertsExchange;
    mem.working += expertsMade;
    // [A10]'s copies are made at the B pass's start and each freed after
    // its last read (the W pass reads none): at B's end, where what B makes
    // peaks, none are left (under full recomputation that peak is in the
    // last layer rebuilt, whose copies its forward reads); at its start
    // they all are, and what its first layer's backward makes before it
    // frees one: a dense layer's MLP input gradient through its output
    // projection (ffn-wide, before that projection's copy is freed), a MoE
    // layer's experts' output gradient in their rows and their first
    // ffn-wide gradient. The larger of the two; or, in a dense layer without
    // recomputation, its MLP's backward once the output projection's copy
    // (and on the last stage the head's) is freed: GELU's two ffn-wide
    // gradients, SwiGLU's three, beside the gradient received.
    // (beforeFreed: a peak while the copies taken off below are still
    // alive: the head's backward, or a layer's start.)
    double beforeFreed = 0.0;
    if (splitW && mem.weightCopies > 0) {
      // (Under full recomputation the last layer rebuilt holds its copies,
      // less, in a dense layer, what only its rebuilt forward reads (the
      // biases) and, once its MLP's gradients peak, its output projection's
      // (where that projection is larger than the gradients made beside
      // them then, the layer's start is the peak, the projection's copy
      // alive).)
      double left = plan.recompute == Recompute::Full
                        ? 2.0 * (perLayer - unreadPerLayer)
                        : 0.0;
      if (plan.recompute == Recompute::Full && model.experts == 0)
        left -= 2.0 * layerUnread +
                std::min(downCopy, (mlpGradients - 1.0) * ffnWide);
      const double start = model.experts == 0
                               ? ffnWide
                               : expertsOutputGradient + expertsFirstGradient;
      const double all = mem.weightCopies;
      if (mem.working - received + left >= mem.weightCopies + start)
        mem.weightCopies = std::min(mem.weightCopies, left);
      else
        mem.working = received + start;
      // A dense layer without recomputation: on the last stage the head's
      // copies are gone before its first layer starts (the head's own
      // backward, every copy alive beside the logits, is beforeFreed);
      // the larger of B's end, the layer's start and its MLP once its
      // output projection's copy is freed.
      if (model.experts == 0 && plan.recompute != Recompute::Full) {
        const double layerCopies = all - (stage == p - 1 ? headCopies : 0.0);
        const double mlp = mlpGradients * ffnWide;
        const double end = mem.working + std::min(all, left);
        const double layerStart = layerCopies + received + ffnWide;
        const double layerMlp = layerCopies - downCopy + received + mlp;
        if (end >= std::max(layerStart, layerMlp)) {
          mem.weightCopies = std::min(all, left);
        } else if (layerStart >= layerMlp) {
          mem.weightCopies = layerCopies;
          mem.working = received + ffnWide;
        } else {
          mem.weightCopies = layerCopies - downCopy;
          mem.working = received + mlp;
        }
        if (stage == p - 1)
          beforeFreed = all + mem.activations + mem.handOver +
                        mem.receivedAhead + mem.logits;
      }
    }
    // Full recomputation rebuilds one layer's activations at a time in the
    // backward, while the head's are gone.
    if (plan.recompute == Recompute::Full && layersOn > 0 && !splitW)
      mem.recomputed = recomputedLayerBytes(
          layer, s, b, t, plan.sequenceParallel, cp, model.activationBytes);
    // [A11] bf16 parameters: the token table's gradient is summed over
    // the tokens in an f32 table, rounded once into the bf16 gradient
    // buffer (a frequent token's row would lose its small terms in bf16);
    // at the end of the first stage's backward, beside the embeddings'
    // output gradient, when the blocks' activations are gone.
    if (model.dtype == DTypeMode::Mixed && stage == 0 && first > 0)
      mem.tableScratch =
          4.0 * (double(model.firstSplit) + padRows) / td + hWide;
    // Without a pipeline the rebuilt layer comes after the head's backward
    // has freed the logits; a pipeline's last stage keeps every micro-batch's
    // in flight (the backward function reads its gradient, made in the
    // forward, and frees it when it returns), not the head's input gradient
    // ([A6]'s once), which the last layer's backward has consumed before
    // its working set or rebuilt layer peaks. (ZB-H1's B pass counts it as
    // the gradient it received.)
    const double headInputGrad = mem.logits > 0 ? hWide : 0.0;
    double head = std::max(mem.logits, mem.recomputed);
    // (Without a pipeline a MoE layer's backward, after the head's has
    // freed the logits, holds its experts' first gradient: beside the
    // layer rebuilt under full recomputation and, under ep, the input
    // gradient before its exchange back, or else beside the residual
    // stream's gradient.)
    if (p == 1 && model.experts > 0 && layersOn > 0)
      head = std::max(mem.logits, (plan.recompute == Recompute::Full
                                       ? mem.recomputed + expertsExchange
                                       : hWide) +
                                      expertsFirstGradient);
    if (p > 1 && mem.recomputed > 0)
      head = std::max(mem.logits, mem.logits - headInputGrad + mem.recomputed);
    else if (p > 1 && !splitW && mem.working > 0)
      head = mem.logits - headInputGrad;
    // [A10] at a pipeline stage backward's peak, in the first layer it runs
    // back through (its working set or rebuilt layer, beside the kept
    // logits' gradient), some copies are gone, each freed after its last
    // read: on the last stage the head's weight and the final norm's scale
    // (their backward ran first; there the peak may be the head's, every
    // copy alive), and in a dense layer its MLP output projection (its
    // input gradient's GEMM comes before the ffn-wide gradients) and under
    // full recomputation what only its rebuilt forward reads (the biases).
    // Before the projection's copy is freed, at the layer backward's start,
    // every copy is alive beside the ffn-wide gradient that GEMM makes and
    // the gradient the layer received (without recomputation the larger
    // of the two points). (One chunk a stage, 1F1B or GPipe, and ZB-H1's
    // first stage, whose W pass is its whole backward.)
    double freedCopies = 0.0;
    const bool oneChunk = chunkBlocks.empty();
    if (mem.weightCopies > 0 && p > 1 && !splitW && layersOn > 0) {
      if (model.experts == 0) {
        freedCopies =
            downCopy +
            (plan.recompute == Recompute::Full ? 2.0 * layerUnread : 0.0);
        if (plan.recompute != Recompute::Full)
          beforeFreed = mem.weightCopies -
                        (stage == p - 1 && oneChunk ? headCopies : 0.0) +
                        mem.activations + mem.handOver + mem.receivedAhead +
                        (stage == p - 1 ? mem.logits : received) + ffnWide;
      }
      if (stage == p - 1 && oneChunk) {
        freedCopies += headCopies;
        beforeFreed = std::max(beforeFreed, mem.weightCopies + mem.activations +
                                                mem.handOver + mem.experts +
                                                mem.receivedAhead + mem.logits);
      }
      freedCopies = std::min(freedCopies, mem.weightCopies);
    }
    // Interleaved's last stage: the head's chunk's backward holds the
    // logits beside its copies, another chunk's neither (under full
    // recomputation its rebuilt layer; else its working set, counted
    // below): the larger of the two.
    if (stage == p - 1 && !chunkBlocks.empty() && mem.logits > 0) {
      const double withHead = headChunkCopies + head;
      const double other =
          plan.recompute == Recompute::Full ? mem.recomputed : 0.0;
      if (otherChunkCopies + other > withHead) {
        mem.weightCopies = otherChunkCopies;
        head = other;
      } else if (mem.weightCopies > 0) {
        mem.weightCopies = headChunkCopies;
      }
      freedCopies = std::min(freedCopies, mem.weightCopies);
    }
    const double layerPeak = mem.weightCopies - freedCopies + mem.activations +
                             mem.handOver + mem.experts + mem.working +
                             mem.receivedAhead + head;
    // (The breakdown shows the copies alive at the peak.)
    if (layerPeak >= beforeFreed)
      mem.weightCopies -= freedCopies;
    mem.activationPeak = std::max({layerPeak, beforeFreed, mem.tableScratch});
    mem.peak = mem.params + mem.grads + mem.optim + mem.zeroGather +
               mem.activationPeak;
    c.stagePeaks.push_back({stage, mem.peak, mem.activationPeak});
    if (stage == 0 || mem.peak > c.memory.peak)
      c.memory = mem;
    if (elems > maxElems) {
      maxElems = elems;
      maxElemsLayers = layersOn;
      maxTensors = tensors;
    }
  }

  // Traffic per step of the busiest rank, per (collective, axis).
  const int64_t P = int64_t(std::llround(maxElems));
  const int64_t gradB = per.grads, paramB = per.params;
  // dp is the outermost mesh axis, then pp, ep, cp, tp.
  const int64_t ranksPerDp = t * cp * e * p;
  // Of the busiest stage's elements, the experts'.
  const int64_t Pexp = int64_t(std::llround(expertsOn * maxElemsLayers));
  // The mesh's axes in their order, each with the distance between its
  // neighbouring members.
  struct MeshAxis {
    const char *name;
    int64_t size, stride;
  };
  const MeshAxis dpAxis{"dp", d, ranksPerDp}, ppAxis{"pp", p, e * cp * t},
      epAxis{"ep", e, cp * t}, cpAxis{"cp", cp, t}, tpAxis{"tp", t, 1};
  // A group of some of them (those of size 1 left out): named as the report
  // names its axes, its size and the consecutive ranks it spans.
  struct AxisGroup {
    std::string names;
    int64_t size = 1, span = 1;
  };
  auto groupOf = [](llvm::ArrayRef<MeshAxis> axes) {
    AxisGroup g;
    for (const MeshAxis &a : axes) {
      if (a.size < 2)
        continue;
      g.names += (g.names.empty() ? "" : ",") + std::string(a.name);
      g.size *= a.size;
      g.span += (a.size - 1) * a.stride;
    }
    return g;
  };
  auto load = [](int64_t bytes, int64_t calls, int64_t g, int64_t span) {
    CommLoad l;
    l.bytes = bytes;
    l.calls = calls;
    l.groupSize = g;
    l.spanRanks = span;
    return l;
  };
  // Adds `more` to the entry named `name` (the same collective over the
  // same group), or makes it.
  auto addLoad = [&](const std::string &name, const CommLoad &more) {
    auto same = llvm::find_if(
        c.comm, [&](const auto &entry) { return entry.first == name; });
    if (same == c.comm.end()) {
      c.comm.push_back({name, more});
      return;
    }
    same->second.bytes += more.bytes;
    same->second.calls += more.calls;
  };
  // The data ranks' groups, dp x ep x cp and the experts' dp x cp: context
  // parallelism's gradient sums join the data ranks' reduction
  // (dist-data-parallel and dist-zero fold them in).
  const AxisGroup data = groupOf({dpAxis, epAxis, cpAxis});
  const AxisGroup expertData = groupOf({dpAxis, cpAxis});
  if (data.size > 1) {
    // dist-data-parallel's and dist-zero's buckets of whole tensors: a
    // bucket closes at the tensor that fills it, so there are at most
    // ceil(S / 25 MiB) of them, and at most one per tensor.
    auto buckets = [&](int64_t elems, double bytesPerElem, int64_t tensors) {
      return std::min(tensors, int64_t(std::ceil(double(elems) * bytesPerElem /
                                                 kBucketBytes)));
    };
    // The groups the gradients are averaged over: with ep, the experts'
    // over dp, the others' over dp x ep.
    // Of each group's elements and tensors, one block's (each block's
    // parameters are ZeRO-3's unit of gathering).
    struct Group {
      int64_t elems, tensors, size, span;
      std::string axes;
      double blockElems, blockTensors;
    };
    llvm::SmallVector<Group, 2> groups;
    const double layerTensors = double(model.layerTensors) / Ld,
                 expertLayerTensors = double(model.layerExpertTensors) / Ld;
    if (e > 1) {
      int64_t expertTensors =
          int64_t(double(model.layerExpertTensors) * maxElemsLayers / Ld);
      groups.push_back({P - Pexp, maxTensors - expertTensors, data.size,
                        data.span, data.names, perLayer - expertsOn,
                        layerTensors - expertLayerTensors});
      groups.push_back({Pexp, expertTensors, expertData.size, expertData.span,
                        expertData.names, expertsOn, expertLayerTensors});
    } else {
      groups.push_back({P, maxTensors, data.size, data.span, data.names,
                        perLayer, layerTensors});
    }
    for (const Group &g : groups) {
      if (g.size < 2)
        continue;
      int64_t ch = zeroChunk(g.elems, g.size);
      if (plan.zeroStage == 0) {
        // [C3] the gradients all-reduced in 25 MiB buckets, once per step.
        c.comm.push_back(
            {"all_reduce " + g.axes,
             load(allReduceBytes(g.elems, gradB, g.size),
                  buckets(g.elems, gradB, g.tensors), g.size, g.span)});
      } else if (plan.zeroStage <= 2) {
        // [C4] the gradients reduce-scattered (ZeRO-1 once per step in the
        // optimizer step, ZeRO-2 each micro-batch's in the backward) and
        // the updated parameters all-gathered once per step, in 25 MiB
        // buckets.
        const int64_t scatters = plan.zeroStage == 2 ? m : 1;
        c.comm.push_back({"reduce_scatter " + g.axes,
                          load(scatters * reduceScatterBytes(ch, gradB, g.size),
                               scatters * buckets(g.elems, gradB, g.tensors),
                               g.size, g.span)});
        c.comm.push_back(
            {"all_gather " + g.axes,
             load(allGatherBytes(ch, paramB, g.size),
                  buckets(g.elems, paramB, g.tensors), g.size, g.span)});
      } else {
        // [C4] ZeRO-3: every micro-batch gathers the parameters for the
        // forward and again for the backward (a bound: the backward
        // gathers only what it reads), each block's in 25 MiB buckets
        // for its forward and again for its backward, the parameters
        // outside the blocks one by one in the forward; and it
        // reduce-scatters the gradients in 25 MiB buckets.
        const int64_t blockTensors = int64_t(std::llround(g.blockTensors));
        const int64_t perBlock =
            buckets(int64_t(std::llround(g.blockElems)), paramB, blockTensors);
        const int64_t blocks = int64_t(std::llround(maxElemsLayers));
        const int64_t outside =
            std::max<int64_t>(g.tensors - blocks * blockTensors, 0);
        c.comm.push_back(
            {"all_gather " + g.axes,
             load(2 * m * allGatherBytes(ch, paramB, g.size),
                  m * (2 * blocks * perBlock + outside), g.size, g.span)});
        c.comm.push_back(
            {"reduce_scatter " + g.axes,
             load(m * reduceScatterBytes(ch, gradB, g.size),
                  m * buckets(g.elems, gradB, g.tensors), g.size, g.span)});
      }
    }
  }
  if (t > 1) {
    // [C5] Megatron, per micro-batch: two all_reduces of the b s h
    // activation per layer in the forward and two in the backward (g and
    // f's conjugate), one more when the forward is recomputed (the
    // attention's); one for the vocab-parallel embedding (first stage) and
    // one for the head's input gradient (last stage); the vocab-parallel
    // cross-entropy's row maxima and sums (R and 2R f32, R = b s, forward
    // and backward, last stage). A MoE layer's experts (each expert's MLP
    // split over tp) are summed on the tokens' side, after the combine and
    // before the dispatch, like a dense MLP, and the backward sums the
    // gates' gradient too (R k activations: the combine's gate products
    // read the experts' partial rows).
    // Sequence parallelism turns the activations' all_reduces into
    // reduce_scatter + all_gather of the same bytes, gathers each layer's
    // forward gathers again in the backward (the forward keeps the shard;
    // under full recomputation the recomputed forward's serve) and
    // all-reduces the replicated parameters' gradients every micro-batch. (The
    // global norm's partial sum is below.) The busiest stage counts (the first
    // has the embedding's, the last the head's and the loss's, a middle
    // one may hold more blocks).
    // (Each cp rank's tensor-parallel collectives carry its s / cp tokens.)
    const int64_t sl = s / cp;
    const int64_t n = b * sl * h, actB = model.activationBytes, R = b * sl;
    const int64_t gates = model.experts > 0 ? R * model.expertTopK : 0;
    std::vector<std::pair<std::string, CommLoad>> busiest;
    int64_t busiestBytes = -1;
    for (int64_t stage : stages) {
      const double layersOn = layersOf(stage);
      bool isFirst = stage == 0, isLast = stage == p - 1;
      const int64_t perPair =
          (plan.recompute == Recompute::Full ? 3 : 2) * int64_t(layersOn);
      int64_t acts = 2 * perPair + isFirst + isLast;
      // (A block's recomputed forward redoes its attention's collective,
      // not its MLP's or its experts': the block's output is kept.)
      if (plan.recompute == Recompute::Full)
        acts -= int64_t(layersOn);
      int64_t gateCalls = gates > 0 ? int64_t(layersOn) : 0;
      int64_t ceBytes =
          isLast ? 2 * (allReduceBytes(R, 4, t) + allReduceBytes(2 * R, 4, t))
                 : 0;
      int64_t ceCalls = isLast ? 4 : 0;
      std::vector<std::pair<std::string, CommLoad>> loads;
      if (plan.sequenceParallel) {
        int64_t rs = reduceScatterBytes(n / t, actB, t);
        // (Under full recomputation the recomputed forward gathers both
        // norms' outputs, one more than its reduce_scatters.)
        // (A MoE layer's dispatch gathers the tokens for its buffer, which
        // the backward keeps: only the attention's input is gathered again.)
        int64_t regathers = plan.recompute == Recompute::Full
                                ? int64_t(layersOn)
                                : (gates > 0 ? 1 : 2) * int64_t(layersOn);
        // ZB-H1's W pass (past stage 0, whose B pass is empty) gathers the
        // row linears' output gradients again from their shards, and under
        // full recomputation the norms' outputs too ([A12]), unless B
        // hands them over whole (carry-gathered); in a MoE layer the
        // attention's alone (the experts' weight gradients read buffers).
        if (plan.schedule == Schedule::ZeroBubbleH1 && stage > 0 &&
            !plan.carryGathered)
          regathers += (plan.recompute == Recompute::Full ? 4 : 2) /
                       (gates > 0 ? 2 : 1) * int64_t(layersOn);
        // A MoE layer's router logits (b s E, computed on the slice) are
        // gathered for its capacity scan, and again for its backward.
        int64_t logitsGathers = gates > 0 ? 2 * int64_t(layersOn) : 0;
        int64_t logitsBytes =
            reduceScatterBytes(R * model.experts / t, actB, t);
        loads.push_back(
            {"reduce_scatter tp", load(m * acts * rs, m * acts, t, t)});
        loads.push_back(
            {"all_gather tp",
             load(m * ((acts + regathers) * rs + logitsGathers * logitsBytes),
                  m * (acts + regathers + logitsGathers), t, t)});
        int64_t replElems = int64_t(double(model.layerRepl) * layersOn / Ld) +
                            (isFirst ? model.firstRepl : 0) +
                            (isLast ? model.lastRepl : 0);
        int64_t replTensors =
            int64_t(double(model.layerReplTensors) * layersOn / Ld) +
            (isFirst ? model.firstReplTensors : 0) +
            (isLast ? model.lastReplTensors : 0);
        loads.push_back(
            {"all_reduce tp",
             load(m * (ceBytes + allReduceBytes(replElems, gradB, t) +
                       gateCalls * allReduceBytes(gates, actB, t)),
                  m * (ceCalls + replTensors + gateCalls), t, t)});
      } else {
        loads.push_back(
            {"all_reduce tp",
             load(m * (acts * allReduceBytes(n, actB, t) +
                       gateCalls * allReduceBytes(gates, actB, t) + ceBytes),
                  m * (acts + gateCalls + ceCalls), t, t)});
      }
      int64_t bytes = 0;
      for (const auto &l : loads)
        bytes += l.second.bytes;
      if (bytes > busiestBytes) {
        busiestBytes = bytes;
        busiest = std::move(loads);
      }
    }
    c.comm.insert(c.comm.end(), busiest.begin(), busiest.end());
  }
  if (cp > 1) {
    // [C7] context parallelism, per micro-batch, as ring attention (the
    // compiler's default): each layer's key and value blocks (b s/cp
    // kv-features / t elements each, activations: 2 bytes in bf16) go
    // around the ring, cp - 1 shifts each in the forward and again in the
    // backward (which reads the forward's saved log-sum-exp), and their
    // dK/dV accumulators (f32) cp shifts: 2 (3 cp - 2) blocks sent to the
    // next member per layer. The loss is all-reduced over cp (the
    // gradients are in [C3]/[C4]'s group). The cp axis sits between pp and
    // tp: its members are t ranks apart.
    const int64_t kv = b * (s / cp) * (h / model.heads) * model.kvHeads / t;
    const int64_t span = groupOf({cpAxis}).span;
    const int64_t layers = int64_t(maxLayers);
    const int64_t blockShifts = m * 2 * 2 * (cp - 1) * layers;
    const int64_t accumulatorShifts = m * 2 * cp * layers;
    c.comm.push_back(
        {"send/recv cp", load(blockShifts * kv * model.activationBytes +
                                  accumulatorShifts * kv * 4,
                              blockShifts + accumulatorShifts, 2, span)});
    // (With dp = 1 the gradients' average is over cp alone: one entry.)
    addLoad("all_reduce cp", load(m * allReduceBytes(1, 4, cp), m, cp, span));
  }
  if (e > 1 && model.experts > 0) {
    // [C8] per micro-batch and MoE layer, the dispatched buffer (E x b C x
    // h activations: 2 bytes an element in bf16, as triax-mixed-precision
    // sends them) to the experts' members and back in the forward, and
    // again in the backward (and the full recomputation's forward).
    // The ep axis sits between pp and cp: its members are t cp ranks apart.
    const int64_t n = model.experts * b * model.expertRows * h;
    const int64_t calls =
        m * (plan.recompute == Recompute::Full ? 6 : 4) * int64_t(maxLayers);
    c.comm.push_back({"all_to_all ep",
                      load(calls * allToAllBytes(n, model.activationBytes, e),
                           calls, e, (e - 1) * t * cp + 1)});
  }
  if (p > 1) {
    // [C6] each micro-batch's boundary activation forward and its gradient
    // backward (a middle stage sends both; interleaved: at each of its v
    // chunks, but for the first stage's backward and the last's forward);
    // NVLink when the whole pipeline is inside a node. A tied embedding's
    // gradient (the table's rows on this tp rank, padding included, in the
    // gradients' type) goes once per step between the first and the last
    // stage, each sending its part to the other. The busier of a middle and
    // an end stage counts.
    const int64_t bytes = b * (s / cp) * h * model.activationBytes;
    const int64_t span = p * cp * t;
    const int64_t endSends = (2 * v - 1) * m, middleSends = 2 * v * m;
    const int64_t tiedBytes =
        int64_t(std::llround((double(model.tiedSplit) + padRows) / td)) * gradB;
    if (p > 2 && middleSends * bytes > endSends * bytes + tiedBytes) {
      c.comm.push_back(
          {"send/recv pp", load(middleSends * bytes, middleSends, 2, span)});
    } else {
      c.comm.push_back(
          {"send/recv pp", load(endSends * bytes, endSends, 2, span)});
      if (model.tiedSplit > 0)
        c.comm.push_back(
            {std::string(kTiedExchange), load(tiedBytes, 1, 2, span)});
    }
  }
  {
    // The global gradient norm's partial sum (one f32), once per step, over
    // every axis some gradient is split or sharded over, in mesh order: dp
    // under ZeRO, pp, ep (the experts'), cp under ZeRO (its state sharded
    // over dp x cp), tp. Counted with the other all_reduces of that group
    // where there are some.
    llvm::SmallVector<MeshAxis, 5> splitting;
    if (plan.zeroStage > 0)
      splitting.push_back(dpAxis);
    splitting.push_back(ppAxis);
    if (model.experts > 0)
      splitting.push_back(epAxis);
    if (plan.zeroStage > 0)
      splitting.push_back(cpAxis);
    splitting.push_back(tpAxis);
    const AxisGroup g = groupOf(splitting);
    if (g.size > 1)
      addLoad("all_reduce " + g.names,
              load(allReduceBytes(1, 4, g.size), 1, g.size, g.span));
  }

  // Time.
  c.flopsPerToken = flopsPerToken(model.flopParams, L, h, s);
  c.stepFlopsPerToken =
      c.flopsPerToken +
      // (A stacked expert weight counts by the rows a token costs: C / S of
      // it, as in getFlopParameters.)
      recomputeFlopsPerToken(double(model.layerSplit + model.layerRepl) +
                                 double(model.layerExpert) *
                                     double(model.expertRows) / double(s),
                             L, h, s, plan.recompute);
  std::vector<CommLoad> loads;
  for (const auto &entry : c.comm)
    loads.push_back(entry.second);
  const double tokens = double(B) * double(s);
  const int64_t ranks = d * t * p * cp * e;
  // [P3] a pipeline runs at its slowest stage's pace: [T1] (and with it
  // [T3]) of the rank with the most forward FLOPs, the mean's times its
  // share over the mean.
  double slowest = 1;
  c.stageLoad.assign(1, 1.0);
  c.chunkLoad.assign(1, 1.0);
  if (std::vector<double> loads = stageLoads(pipe.flops);
      p > 1 && !loads.empty()) {
    c.stageLoad = std::move(loads);
    c.chunkLoad = stageLoads(pipe.chunks);
    c.stageBlocks = pipe.blocks;
    slowest = *llvm::max_element(c.stageLoad);
  }
  c.step = predictStepTime(hw, plan, c.stepFlopsPerToken * slowest, tokens,
                           ranks, loads, req.efficiency);
  // MFU counts the model's FLOPs, not the recomputed ones.
  if (c.step.total > 0)
    c.step.mfu = tokens * c.flopsPerToken /
                 (c.step.total * double(ranks) * hw.peakFlops);
  c.bubbleFraction = bubbleFraction(p, m, v, plan.schedule);

  // (headroom=: HBM the plan leaves free for what the planner does not
  // count.)
  const double usable = hw.hbmBytes - req.headroomBytes;
  if (c.memory.peak > usable) {
    c.overBytes = c.memory.peak - usable;
    reject("out of memory",
           "peak " + gib(c.memory.peak) + " on stage " +
               llvm::Twine(c.memory.stage) + " > " + gib(hw.hbmBytes) + " HBM" +
               (req.headroomBytes > 0
                    ? " less " + gib(req.headroomBytes) + " of headroom"
                    : std::string()) +
               ", over by " + gib(c.overBytes));
  }
  return c;
}

std::string triax::cost::describePlan(const Candidate &c) {
  const Plan &p = c.plan;
  // (cp only when used: the plans without it read as before.)
  std::string cp = p.cp > 1 ? " cp=" + std::to_string(p.cp) : "";
  if (p.ep > 1)
    cp = " ep=" + std::to_string(p.ep) + cp;
  std::string schedule = scheduleName(p.schedule);
  if (p.schedule == Schedule::Interleaved)
    schedule += " v=" + std::to_string(p.virtualStages);
  if (p.carryGathered)
    schedule += " carry-gathered";
  return llvm::formatv("dp={0}{9} tp={1} pp={2} zero={3} m={4} (micro-batch "
                       "{5}) schedule={6} sp={7} recompute={8}",
                       p.dp, p.tp, p.pp, p.zeroStage, p.microBatches,
                       c.microBatch, schedule,
                       p.sequenceParallel ? "on" : "off",
                       recomputeName(p.recompute), cp)
      .str();
}

//===----------------------------------------------------------------------===//
// The search
//===----------------------------------------------------------------------===//

namespace {
/// Context parallelism is searched for long sequences, where the
/// activations outgrow what tensor parallelism alone splits (Megatron-Core
/// uses it from 8K tokens); a request may fix cp for any model.
constexpr int64_t kContextParallelMinSeq = 8192;
/// The most chunks a rank the search gives the interleaved schedule (more
/// shrink its bubble little, add point-to-point messages and cost search
/// time: gpt3-175b on 131,072 GPUs takes 0.69 s with v = 2 alone, 0.80 s
/// up to 4, 0.99 s up to 8); a request may name any with virtual-stages=v.
constexpr int64_t kMaxVirtualStages = 4;
bool considersContext(const ModelShape &model) {
  return model.seq >= kContextParallelMinSeq;
}

bool faster(const Candidate &a, const Candidate &b) {
  if (a.step.total != b.step.total)
    return a.step.total < b.step.total;
  if (a.memory.peak != b.memory.peak)
    return a.memory.peak < b.memory.peak;
  auto key = [](const Candidate &c) {
    const Plan &p = c.plan;
    return std::make_tuple(p.dp, p.tp, p.pp, p.cp, p.ep, p.zeroStage,
                           p.microBatches, c.microBatch, int(p.schedule),
                           p.virtualStages, p.sequenceParallel, p.carryGathered,
                           int(p.recompute));
  };
  return key(a) < key(b);
}

/// Whether the search tries `role`'s axis larger than 1 when the request
/// leaves it open.
bool considersAxis(trx_axis_role role, const ModelShape &model) {
  if (role == TRX_AXIS_EXPERT)
    return model.experts > 1; // (a dense model has no experts to split)
  return role != TRX_AXIS_CONTEXT || considersContext(model);
}

/// Calls `fn` with every plan mesh of `left` devices over `roles` (then the
/// data axis, which takes the rest): each size divides what the axes before
/// it leave, equals the request's where it fixes one (fixedSize), and is 1
/// for an axis the search does not consider for this model.
void forEachMesh(llvm::ArrayRef<trx_axis_role> roles, int64_t left, Plan plan,
                 const ModelShape &model, const PlanRequest &req,
                 llvm::function_ref<void(const Plan &)> fn) {
  if (roles.empty()) {
    std::optional<int64_t> dp = fixedSize(req, TRX_AXIS_DATA);
    if (dp && *dp != left)
      return;
    *axisField(plan, TRX_AXIS_DATA) = left;
    fn(plan);
    return;
  }
  trx_axis_role role = roles.front();
  std::optional<int64_t> fixed = fixedSize(req, role);
  for (int64_t size : divisors(left)) {
    if (fixed ? *fixed != size : size > 1 && !considersAxis(role, model))
      continue;
    *axisField(plan, role) = size;
    forEachMesh(roles.drop_front(), left / size, plan, model, req, fn);
  }
}

/// Every mesh of `gpus` devices over the axis roles the cost model models
/// (axisField), innermost first (tp, cp, pp; dp takes the rest).
void forEachMesh(const ModelShape &model, const PlanRequest &req, int64_t gpus,
                 llvm::function_ref<void(const Plan &)> fn) {
  llvm::SmallVector<trx_axis_role> roles;
  Plan plan;
  for (const mlir::dist::AxisRoleInfo &row : mlir::dist::axisRoles())
    if (row.implemented && row.role != TRX_AXIS_DATA &&
        axisField(plan, row.role))
      roles.insert(roles.begin(), row.role);
  forEachMesh(roles, gpus, plan, model, req, fn);
}

/// The micro-batch sizes tried on `dp` replicas: the request's, the one its
/// micro-batch count gives, or every divisor of the per-replica batch.
std::vector<int64_t> microBatchSizes(const PlanRequest &req, int64_t batch,
                                     int64_t dp) {
  if (req.microBatch)
    return {*req.microBatch};
  if (req.microBatches)
    return {batch % (dp * *req.microBatches) == 0
                ? batch / (dp * *req.microBatches)
                : std::max<int64_t>(1, batch / (dp * *req.microBatches))};
  if (batch % dp != 0)
    return {1};
  return divisors(batch / dp);
}

PlanResult search(const ModelShape &model, const PlanRequest &req) {
  PlanResult result;
  result.model = model;
  result.request = req;
  const int64_t N = req.gpus;
  const int64_t B = req.globalBatch ? req.globalBatch : model.globalBatch;
  std::vector<Candidate> fits;
  std::map<std::string, PlanResult::Region> regions;
  std::vector<int64_t> zeros, sps;
  std::vector<Recompute> recomputes;
  for (int z = 0; z <= 3; ++z)
    if (!req.zero || *req.zero == z)
      zeros.push_back(z);
  for (int v = 0; v <= 1; ++v)
    if (!req.sequenceParallel || int(*req.sequenceParallel) == v)
      sps.push_back(v);
  for (Recompute r : {Recompute::None, Recompute::Selective, Recompute::Full})
    if (!req.recompute || *req.recompute == r)
      recomputes.push_back(r);

  auto record = [&](Candidate c) {
    ++result.searched;
    if (c.reason.empty()) {
      fits.push_back(std::move(c));
      return;
    }
    PlanResult::Region &region = regions[c.reason];
    bool oom = c.reason == "out of memory";
    if (region.count == 0) {
      region.reason = c.reason;
      region.best = c;
      region.worst = c;
    } else if (oom ? c.overBytes < region.best.overBytes
                   : faster(c, region.best)) {
      region.best = c;
    } else if (oom ? c.overBytes > region.worst.overBytes
                   : faster(region.worst, c)) {
      region.worst = c;
    }
    ++region.count;
  };

  // Every mesh, then every choice the request leaves open on it.
  forEachMesh(model, req, N, [&](Plan mesh) {
    mesh.dtype = model.dtype;
    // Every schedule dist-pipeline builds: ZB-H1's stage peaks are within
    // 2% of [A9] ([A12]), as 1F1B's are (plan-stage-matrix.test).
    std::vector<Schedule> schedules;
    if (mesh.pp == 1)
      schedules = {Schedule::None};
    else if (req.schedule)
      schedules = {*req.schedule};
    else
      schedules = {Schedule::GPipe, Schedule::OneFOneB, Schedule::Interleaved,
                   Schedule::ZeroBubbleH1};
    // Each schedule with its chunks a rank: interleaved's the request's,
    // else 2 and every larger v up to kMaxVirtualStages that cuts the
    // blocks into p x v equal chunks (Megatron-LM's rule; dist-pipeline
    // balances unequal ones by FLOPs, as it does for v = 2).
    std::vector<std::pair<Schedule, int64_t>> variants;
    for (Schedule sched : schedules) {
      if (sched != Schedule::Interleaved) {
        variants.push_back({sched, 1});
        continue;
      }
      if (req.virtualStages > 1) {
        variants.push_back({sched, req.virtualStages});
        continue;
      }
      variants.push_back({sched, 2});
      for (int64_t v = 3; v <= kMaxVirtualStages && mesh.pp * v <= model.layers;
           ++v)
        if (model.layers % (mesh.pp * v) == 0)
          variants.push_back({sched, v});
    }
    // (Expert-parallel ranks train on their own sequences too.)
    for (int64_t b : microBatchSizes(req, B, mesh.dp * mesh.ep))
      for (int64_t z : zeros)
        for (auto [sched, v] : variants)
          for (int64_t sp : sps)
            for (Recompute r : recomputes) {
              Plan plan = mesh;
              plan.zeroStage = int(z);
              plan.microBatches =
                  req.microBatches
                      ? *req.microBatches
                      : std::max<int64_t>(1, B / (mesh.dp * mesh.ep * b));
              plan.schedule = sched;
              plan.virtualStages = v;
              plan.sequenceParallel = sp;
              plan.recompute = r;
              // ZB-H1 with sequence parallelism: the W pass gathers
              // again, or B hands it what it gathered (carry-gathered).
              bool both = sched == Schedule::ZeroBubbleH1 && sp && mesh.tp > 1;
              for (int carry = 0; carry <= 1; ++carry) {
                if (req.carryGathered ? *req.carryGathered != bool(carry)
                                      : carry && !both)
                  continue;
                plan.carryGathered = carry;
                record(evaluatePlan(model, req, plan, b));
              }
            }
  });
  result.fits = int64_t(fits.size());
  size_t k = std::min<size_t>(fits.size(), size_t(req.top));
  std::partial_sort(fits.begin(), fits.begin() + k, fits.end(), faster);
  fits.resize(k);
  result.top = std::move(fits);
  for (auto &entry : regions)
    result.rejected.push_back(std::move(entry.second));
  std::stable_sort(
      result.rejected.begin(), result.rejected.end(),
      [](const PlanResult::Region &a, const PlanResult::Region &b) {
        return a.count > b.count;
      });
  return result;
}

std::string summary(const PlanResult &r) {
  const Candidate &c = r.top.front();
  return describePlan(c) + ": step " + ms(c.step.total) + ", peak " +
         gib(c.memory.peak);
}
} // namespace

PlanResult triax::cost::planModel(const ModelShape &model,
                                  const PlanRequest &req) {
  PlanResult result = search(model, req);
  if (result.fits > 0)
    return result;
  // Nothing fits: what would, found by searching again. More GPUs and a
  // bigger GPU are searched only when some plan ran out of memory: they do
  // not change a divisibility or a schedule's rule.
  bool outOfMemory = false;
  for (const PlanResult::Region &region : result.rejected)
    if (region.reason == "out of memory") {
      outOfMemory = true;
      result.suggestions.push_back(
          "closest: " + describePlan(region.best) + " needs " +
          gib(region.best.memory.peak) + ", " + gib(region.best.overBytes) +
          " more than the " + gib(req.hardware.hbmBytes) + " of a " +
          req.hardware.name);
    }
  for (int k = 1; outOfMemory && k <= 10; ++k) {
    PlanRequest more = req;
    more.gpus = req.gpus << k;
    more.dp.reset(); // the added GPUs go to whichever axis helps
    if (req.dp && req.tp && req.pp)
      more.pp.reset();
    PlanResult r = search(model, more);
    if (r.fits) {
      result.suggestions.push_back(
          "more GPUs: gpus=" + std::to_string(more.gpus) + " fits, best " +
          summary(r));
      break;
    }
    if (k == 10)
      result.suggestions.push_back(
          "more GPUs: none of gpus=" + std::to_string(req.gpus * 2) + " to " +
          std::to_string(req.gpus << 10) + " (doubling) fits");
  }
  std::vector<Hardware> bigger;
  for (const Hardware &hw : builtinHardware())
    if (outOfMemory && hw.hbmBytes > req.hardware.hbmBytes)
      bigger.push_back(hw);
  std::sort(bigger.begin(), bigger.end(),
            [](const Hardware &a, const Hardware &b) {
              return a.hbmBytes < b.hbmBytes;
            });
  bool biggerFits = false;
  for (const Hardware &hw : bigger) {
    PlanRequest other = req;
    other.hardware = hw;
    other.hardware.gpusPerNode = req.hardware.gpusPerNode;
    PlanResult r = search(model, other);
    if (r.fits) {
      result.suggestions.push_back("a bigger GPU: gpu=" + hw.name + " (" +
                                   gib(hw.hbmBytes) + ") fits, best " +
                                   summary(r));
      biggerFits = true;
      break;
    }
  }
  if (!biggerFits && !bigger.empty())
    result.suggestions.push_back("a bigger GPU: none of the built-ins fits "
                                 "these " +
                                 std::to_string(req.gpus) +
                                 " GPUs (the "
                                 "largest, " +
                                 bigger.back().name + ", has " +
                                 gib(bigger.back().hbmBytes) + ")");
  // Each fixed key, freed.
  // The keys as given ("recompute=none"), for the message.
  auto given = [&](llvm::StringRef keys) {
    llvm::SmallVector<llvm::StringRef> items, names;
    llvm::StringRef(req.text).split(items, ',');
    keys.split(names, '/');
    std::string out;
    for (llvm::StringRef item : items)
      for (llvm::StringRef name : names)
        if (item.trim().split('=').first.trim() == name)
          out += (out.empty() ? "" : ",") + item.trim().str();
    return out;
  };
  auto freed = [&](const char *keys, auto clear) {
    PlanRequest other = req;
    clear(other);
    PlanResult r = search(model, other);
    if (r.fits)
      result.suggestions.push_back("without " + given(keys) + ": fits, best " +
                                   summary(r));
  };
  if (req.recompute)
    freed("recompute", [](PlanRequest &o) { o.recompute.reset(); });
  if (req.microBatch)
    freed("micro-batch", [](PlanRequest &o) { o.microBatch.reset(); });
  if (req.microBatches)
    freed("microbatches", [](PlanRequest &o) { o.microBatches.reset(); });
  if (req.zero)
    freed("zero", [](PlanRequest &o) { o.zero.reset(); });
  if (req.sequenceParallel)
    freed("sequence-parallel/sp",
          [](PlanRequest &o) { o.sequenceParallel.reset(); });
  if (req.carryGathered)
    freed("carry-gathered", [](PlanRequest &o) { o.carryGathered.reset(); });
  if (req.schedule)
    freed("schedule", [](PlanRequest &o) {
      o.schedule.reset();
      o.virtualStages = 1;
    });
  if (req.dp || req.tp || req.pp)
    freed("dp/tp/pp", [](PlanRequest &o) {
      o.dp.reset();
      o.tp.reset();
      o.pp.reset();
    });
  return result;
}

//===----------------------------------------------------------------------===//
// Printing
//===----------------------------------------------------------------------===//

namespace {
void printCandidate(llvm::raw_ostream &os, const Candidate &c,
                    const ModelShape &model, const Hardware &hw) {
  const MemoryBreakdown &m = c.memory;
  os << "  step " << ms(c.step.total) << " = compute " << ms(c.step.compute)
     << " [T1] + communication " << ms(c.step.comm) << " [T2] + bubble "
     << ms(c.step.bubble) << " [T3] ("
     << llvm::format("%.1f", c.bubbleFraction * 100) << "% [P1]); "
     << llvm::format("%.4g", c.step.tokensPerSecond) << " tokens/s, MFU "
     << llvm::format("%.3f", c.step.mfu) << " [T5]\n";
  os << "  memory per rank (stage " << m.stage << "): params "
     << human(m.params) << " + grads " << human(m.grads) << " + optim "
     << human(m.optim);
  if (m.zeroGather > 0)
    os << " + gathered " << human(m.zeroGather) << " [M5]";
  if (m.weightCopies > 0)
    os << " + bf16 weights " << human(m.weightCopies) << " [A10]";
  os << " + activations " << human(m.activations) << " (" << m.layers
     << " layers x "
     << keptFormulaLabel(model.layerShape(), c.plan.tp, c.plan.sequenceParallel,
                         c.plan.recompute, c.plan.cp)
     << " x " << llvm::format("%g", m.inFlight) << " in flight [P2])";
  if (m.handOver > 0)
    os << " + " << llvm::format("%g", m.deferred)
       << " deferred W passes' inputs " << human(m.handOver) << " [A12]";
  if (m.experts > 0)
    os << " + MoE buffers " << human(m.experts) << " [A7]";
  if (m.working > 0)
    os << " + backward working set " << human(m.working);
  if (m.receivedAhead > 0)
    os << " + " << m.held << " received ahead " << human(m.receivedAhead)
       << " [P4]";
  if (m.logits > 0 && m.recomputed > 0 && c.plan.pp > 1)
    os << " + logits " << human(m.logits)
       << " [A6], kept beside one layer recomputed " << human(m.recomputed)
       << " [A8]";
  else if (m.logits > 0 && m.recomputed > 0)
    os << " + max(logits " << human(m.logits) << " [A6], one layer recomputed "
       << human(m.recomputed) << " [A8])";
  else if (m.recomputed > 0)
    os << " + one layer recomputed " << human(m.recomputed) << " [A8]";
  else if (m.logits > 0)
    os << " + logits " << human(m.logits) << " [A6]";
  if (m.tableScratch > 0)
    os << " (at the backward's end instead: the token table's f32 gradient "
          "sum "
       << human(m.tableScratch) << " [A11])";
  os << " = peak " << human(m.peak) << " of " << gib(hw.hbmBytes) << " HBM ("
     << llvm::format("%.0f", 100 * m.peak / hw.hbmBytes) << "%)\n";
  if (!c.comm.empty()) {
    os << "  traffic per step:";
    bool firstItem = true;
    for (const auto &[name, l] : c.comm) {
      os << (firstItem ? " " : "; ") << name << " " << l.bytes << " bytes in "
         << l.calls << " calls";
      firstItem = false;
    }
    os << "\n";
  }
  if (c.stageBlocks.size() > 1) {
    // [P3] as dist-pipeline cuts the model.
    os << "  pipeline:";
    for (size_t k = 0; k < c.stageBlocks.size(); ++k)
      os << (k ? " + " : " ") << c.stageBlocks[k];
    os << " blocks" << (c.plan.virtualStages > 1 ? " (virtual stages)" : "")
       << ", rank loads";
    for (double load : c.stageLoad)
      os << " " << llvm::format("%.3f", load);
    os << " [P3]\n";
  }
}

llvm::json::Object candidateJSON(const Candidate &c, const Hardware &hw) {
  const Plan &p = c.plan;
  llvm::json::Array comm;
  for (const auto &[name, l] : c.comm)
    comm.push_back(llvm::json::Object{{"name", name},
                                      {"bytes", l.bytes},
                                      {"calls", l.calls},
                                      {"group_size", l.groupSize}});
  llvm::json::Array stagePeaks;
  for (const Candidate::StagePeak &st : c.stagePeaks)
    stagePeaks.push_back(
        llvm::json::Object{{"stage", st.stage},
                           {"peak", st.peak},
                           {"activation_peak", st.activationPeak}});
  llvm::json::Object o{
      {mlir::dist::axisName(TRX_AXIS_DATA), p.dp},
      {mlir::dist::axisName(TRX_AXIS_TENSOR), p.tp},
      {mlir::dist::axisName(TRX_AXIS_PIPELINE), p.pp},
      {mlir::dist::axisName(TRX_AXIS_CONTEXT), p.cp},
      {mlir::dist::axisName(TRX_AXIS_EXPERT), p.ep},
      {"zero", p.zeroStage},
      {"microbatches", p.microBatches},
      {"micro_batch", c.microBatch},
      {"schedule", scheduleName(p.schedule)},
      {"virtual_stages", p.virtualStages},
      {"sequence_parallel", p.sequenceParallel},
      {"carry_gathered", p.carryGathered},
      {"recompute", recomputeName(p.recompute)},
      {"step_s", c.step.total},
      {"compute_s", c.step.compute},
      {"comm_s", c.step.comm},
      {"bubble_s", c.step.bubble},
      {"bubble_fraction", c.bubbleFraction},
      {"tokens_per_s", c.step.tokensPerSecond},
      {"mfu", c.step.mfu},
      {"flops_per_token", c.stepFlopsPerToken},
      {"stage_blocks", llvm::json::Array(c.stageBlocks)},
      {"stage_load", llvm::json::Array(c.stageLoad)},
      {"stage_peaks", std::move(stagePeaks)},
      {"memory",
       llvm::json::Object{{"stage", c.memory.stage},
                          {"params", c.memory.params},
                          {"grads", c.memory.grads},
                          {"optim", c.memory.optim},
                          {"zero_gather", c.memory.zeroGather},
                          {"weight_copies", c.memory.weightCopies},
                          {"table_scratch", c.memory.tableScratch},
                          {"activations", c.memory.activations},
                          {"logits", c.memory.logits},
                          {"recomputed", c.memory.recomputed},
                          {"working", c.memory.working},
                          {"hand_over", c.memory.handOver},
                          {"deferred", c.memory.deferred},
                          {"moe_buffers", c.memory.experts},
                          {"received_ahead", c.memory.receivedAhead},
                          {"held", c.memory.held},
                          {"in_flight", c.memory.inFlight},
                          {"layers", c.memory.layers},
                          {"activation_peak", c.memory.activationPeak},
                          {"peak", c.memory.peak},
                          {"hbm", hw.hbmBytes}}},
      {"communication", std::move(comm)}};
  if (!c.reason.empty()) {
    o["reason"] = c.reason;
    o["detail"] = c.detail;
  }
  return o;
}
} // namespace

void triax::cost::printPlan(llvm::raw_ostream &os, const PlanResult &r) {
  const ModelShape &m = r.model;
  const PlanRequest &q = r.request;
  const Hardware &hw = q.hardware;
  int64_t B = q.globalBatch ? q.globalBatch : m.globalBatch;
  os << "dist-plan: @" << m.name << " (" << m.params << " parameters, "
     << m.layers << " layers, hidden " << m.hidden << ", " << m.heads
     << " heads, " << m.kvHeads << " kv-heads, ffn " << m.ffn << ", vocab "
     << m.vocab << ", seq " << m.seq << ", "
     << (m.dtype == DTypeMode::Mixed ? "mixed precision"
         : m.activationBytes == 2    ? "bf16 compute, fp32 state"
                                     : "fp32")
     << ") on " << q.gpus << " x " << hw.name << " (" << gib(hw.hbmBytes)
     << " HBM";
  if (q.headroomBytes > 0)
    os << ", " << gib(q.headroomBytes) << " of it kept free";
  os << ", " << hw.gpusPerNode << " per node); global batch " << B << "\n";
  // (ep is searched for a mixture-of-experts model only.)
  os << "searched " << r.searched << " plans ("
     << (m.experts > 1 ? "dp x ep x cp x tp x pp = " : "dp x cp x tp x pp = ")
     << q.gpus
     << ", zero, micro-batches, schedule, sequence parallelism, "
        "carry-gathered, recompute): "
     << r.fits << " fit, " << r.searched - r.fits
     << " rejected; ranked by predicted step time at "
     << llvm::format("%.0f", q.efficiency * 100) << "% of peak\n";
  for (size_t i = 0; i < r.top.size(); ++i) {
    const Candidate &c = r.top[i];
    os << "\n#" << i + 1 << " " << describePlan(c) << "\n";
    printCandidate(os, c, m, hw);
  }
  if (r.fits == 0)
    os << "\nno plan fits\n";
  // The planner counts the training state and the activations; not the
  // CUDA context, NCCL's buffers, cuBLAS workspaces or the allocator's
  // fragmentation.
  if (!r.top.empty() && q.headroomBytes == 0 &&
      r.top.front().memory.peak > 0.95 * hw.hbmBytes)
    os << "\nnote: #1 uses "
       << llvm::format("%.0f", 100 * r.top.front().memory.peak / hw.hbmBytes)
       << "% of the HBM; the planner does not count the CUDA context, "
          "NCCL's buffers, cuBLAS workspaces or allocator fragmentation: "
          "headroom=G keeps G GiB free\n";
  os << "\nrejected regions (" << r.searched - r.fits << " plans):\n";
  for (const PlanResult::Region &region : r.rejected) {
    bool oom = region.reason == "out of memory";
    os << "  " << region.reason << ": " << region.count << " plans";
    if (oom)
      os << ", over by " << gib(region.best.overBytes) << " to "
         << gib(region.worst.overBytes);
    os << "\n";
    os << "    " << (oom ? "least over: " : "fastest: ")
       << describePlan(region.best) << " -- " << region.best.detail << "\n";
    if (region.count > 1)
      os << "    " << (oom ? "most over:  " : "slowest: ")
         << describePlan(region.worst) << " -- " << region.worst.detail << "\n";
  }
  if (!r.suggestions.empty()) {
    os << "\nwhat would make it fit:\n";
    for (const std::string &s : r.suggestions)
      os << "  " << s << "\n";
  }
}

void triax::cost::printPlanJSON(llvm::raw_ostream &os, const PlanResult &r) {
  const ModelShape &m = r.model;
  const PlanRequest &q = r.request;
  const Hardware &hw = q.hardware;
  llvm::json::Array top, rejected, suggestions;
  for (const Candidate &c : r.top)
    top.push_back(candidateJSON(c, hw));
  for (const PlanResult::Region &region : r.rejected) {
    llvm::json::Object o{{"reason", region.reason},
                         {"count", region.count},
                         {"best", candidateJSON(region.best, hw)},
                         {"worst", candidateJSON(region.worst, hw)}};
    rejected.push_back(std::move(o));
  }
  for (const std::string &s : r.suggestions)
    suggestions.push_back(s);
  llvm::json::Object root{
      {"model",
       llvm::json::Object{{"name", m.name},
                          {"params", m.params},
                          {"layers", m.layers},
                          {"hidden", m.hidden},
                          {"heads", m.heads},
                          {"kv_heads", m.kvHeads},
                          {"ffn", m.ffn},
                          {"vocab", m.vocab},
                          {"seq", m.seq},
                          {"mixed_precision", m.dtype == DTypeMode::Mixed},
                          {"activation_bytes", m.activationBytes}}},
      {"request",
       llvm::json::Object{
           {"spec", q.text},
           {"gpus", q.gpus},
           {"gpu", hw.name},
           {"gpus_per_node", hw.gpusPerNode},
           {"global_batch", q.globalBatch ? q.globalBatch : m.globalBatch},
           {"efficiency", q.efficiency},
           {"headroom", q.headroomBytes}}},
      {"searched", r.searched},
      {"fit", r.fits},
      {"plans", std::move(top)},
      {"rejected", std::move(rejected)},
      {"suggestions", std::move(suggestions)}};
  os << llvm::formatv("{0:2}", llvm::json::Value(std::move(root))) << "\n";
}
