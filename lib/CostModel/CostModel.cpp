//===- CostModel.cpp - Hardware and the cost formulas ---------------------===//
//
// The formulas of docs/cost-model.md, labelled as there.
//
//===----------------------------------------------------------------------===//

#include "triax/CostModel/CostModel.h"
#include "triax_abi.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <mutex>
#include <tuple>

using namespace triax::cost;

//===----------------------------------------------------------------------===//
// Hardware
//===----------------------------------------------------------------------===//

namespace {
constexpr double kGB = 1e9, kTB = 1e12, kTFLOPS = 1e12;
// Assumed per collective call (ring start-up), all built-ins: 5 us.
constexpr double kLatency = 5e-6;

const Hardware kBuiltins[] = {
    // A100 SXM4 40GB: 312 TFLOP/s bf16 dense, 1,555 GB/s, NVLink 3 600 GB/s;
    // DGX A100: 8 GPUs, one 200 Gb/s HDR InfiniBand port per GPU.
    // FP32 without tensor cores: 19.5 TFLOP/s.
    {"a100-40g", 40 * kGB, 312 * kTFLOPS, 1.555 * kTB, 600 * kGB, 8, 25 * kGB,
     kLatency, 19.5 * kTFLOPS},
    // A100 SXM4 80GB: 2,039 GB/s.
    {"a100-80g", 80 * kGB, 312 * kTFLOPS, 2.039 * kTB, 600 * kGB, 8, 25 * kGB,
     kLatency, 19.5 * kTFLOPS},
    // H100 SXM5 80GB: 989 TFLOP/s bf16 dense, 3.35 TB/s, NVLink 4 900 GB/s;
    // DGX H100: 8 GPUs, one 400 Gb/s NDR port per GPU. FP32 without tensor
    // cores: 67 TFLOP/s.
    {"h100-80g", 80 * kGB, 989 * kTFLOPS, 3.35 * kTB, 900 * kGB, 8, 50 * kGB,
     kLatency, 67 * kTFLOPS},
    // H200 SXM 141GB: 989 TFLOP/s, 4.8 TB/s, 900 GB/s; DGX H200 as DGX H100.
    // cuBLASLt's bf16 GEMMs at 0.59 of the dense peak: gpt2 at 16 x 1024
    // (docs/performance.md "gpt2 on one H200"), ncu on an H200 on
    // 2026-12-04: the 216 GEMMs that do not involve the vocabulary, 8.35e12
    // FLOP in 14.2 ms, 588 TFLOP/s.
    {"h200-141g", 141 * kGB, 989 * kTFLOPS, 4.8 * kTB, 900 * kGB, 8, 50 * kGB,
     kLatency, 67 * kTFLOPS, 0.59},
};
} // namespace

llvm::ArrayRef<Hardware> triax::cost::builtinHardware() { return kBuiltins; }

const Hardware *triax::cost::findBuiltinHardware(llvm::StringRef name) {
  for (const Hardware &hw : kBuiltins)
    if (hw.name == name)
      return &hw;
  return nullptr;
}

llvm::Expected<Hardware> triax::cost::parseHardwareJSON(llvm::StringRef text) {
  auto fail = [](const llvm::Twine &msg) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "hardware JSON: " + msg);
  };
  llvm::Expected<llvm::json::Value> value = llvm::json::parse(text);
  if (!value)
    return fail(llvm::toString(value.takeError()));
  const llvm::json::Object *obj = value->getAsObject();
  if (!obj)
    return fail("expected an object");
  // Field, unit factor, destination.
  Hardware hw;
  double gpus = 0, latencyUs = 0;
  struct Field {
    const char *key;
    double scale;
    double *dest;
  } fields[] = {{"hbm_gb", kGB, &hw.hbmBytes},
                {"bf16_tflops", kTFLOPS, &hw.peakFlops},
                {"hbm_tb_s", kTB, &hw.hbmBandwidth},
                {"nvlink_gb_s", kGB, &hw.nvlinkBandwidth},
                {"gpus_per_node", 1, &gpus},
                {"internode_gb_s", kGB, &hw.interNodeBandwidth},
                {"latency_us", 1, &latencyUs}};
  for (const auto &kv : *obj) {
    llvm::StringRef key = kv.first;
    if (key == "name" || key == "fp32_tflops" || key == "gemm_efficiency")
      continue;
    if (std::none_of(std::begin(fields), std::end(fields),
                     [&](const Field &f) { return key == f.key; }))
      return fail("unknown field '" + key +
                  "' (fields: name, hbm_gb, bf16_tflops, hbm_tb_s, "
                  "nvlink_gb_s, gpus_per_node, internode_gb_s, latency_us; "
                  "optional fp32_tflops, gemm_efficiency)");
  }
  std::optional<llvm::StringRef> name = obj->getString("name");
  if (!name || name->empty())
    return fail("missing string field 'name'");
  hw.name = name->str();
  for (const Field &f : fields) {
    const llvm::json::Value *v = obj->get(f.key);
    if (!v)
      return fail("missing field '" + llvm::Twine(f.key) + "'");
    std::optional<double> num = v->getAsNumber();
    if (!num)
      return fail("field '" + llvm::Twine(f.key) + "' must be a number");
    bool zeroOk = llvm::StringRef(f.key) == "latency_us";
    if (!(*num > 0 || (zeroOk && *num == 0)) || !std::isfinite(*num))
      return fail("field '" + llvm::Twine(f.key) + "' must be " +
                  (zeroOk ? "non-negative" : "positive"));
    *f.dest = *num * f.scale;
  }
  if (gpus != std::floor(gpus))
    return fail("field 'gpus_per_node' must be an integer");
  if (const llvm::json::Value *v = obj->get("fp32_tflops")) {
    std::optional<double> num = v->getAsNumber();
    if (!num || !(*num > 0) || !std::isfinite(*num))
      return fail("field 'fp32_tflops' must be a positive number");
    hw.fp32Flops = *num * kTFLOPS;
  }
  if (const llvm::json::Value *v = obj->get("gemm_efficiency")) {
    std::optional<double> num = v->getAsNumber();
    if (!num || !(*num > 0 && *num <= 1))
      return fail("field 'gemm_efficiency' must be a number in (0, 1]");
    hw.gemmEfficiency = *num;
  }
  hw.gpusPerNode = int64_t(gpus);
  hw.latency = latencyUs * 1e-6;
  return hw;
}

llvm::Expected<Hardware> triax::cost::loadHardware(llvm::StringRef nameOrPath) {
  if (const Hardware *hw = findBuiltinHardware(nameOrPath))
    return *hw;
  auto buf = llvm::MemoryBuffer::getFile(nameOrPath);
  if (!buf) {
    std::string names;
    for (const Hardware &hw : kBuiltins)
      names += (names.empty() ? "" : ", ") + hw.name;
    return llvm::createStringError(buf.getError(),
                                   "unknown hardware '" + nameOrPath +
                                       "': not a built-in (" + names +
                                       ") nor a readable JSON file");
  }
  auto hw = parseHardwareJSON((*buf)->getBuffer());
  if (!hw)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   nameOrPath + ": " +
                                       llvm::toString(hw.takeError()));
  return hw;
}

//===----------------------------------------------------------------------===//
// Memory
//===----------------------------------------------------------------------===//

StateBytes triax::cost::bytesPerParam(DTypeMode mode) {
  // [M0]
  if (mode == DTypeMode::Mixed)
    return {2, 2, 12};
  return {4, 4, 8};
}

int64_t triax::cost::zeroChunk(int64_t numel, int64_t g) {
  // [M4]
  return trx_zero_chunk(numel, g);
}

StateBytes triax::cost::stateBytesPerRank(llvm::ArrayRef<int64_t> tensorElems,
                                          int64_t g, int stage,
                                          DTypeMode mode) {
  // [M1] params: stage 3 ? chunk : stage 1, 2 ? g x chunk (the padded
  // buffer all_gather_params fills in place) : numel; [M2] grads: stage >= 2
  // ? chunk : numel; [M3] optimizer: stage >= 1 ? chunk : numel; each
  // times [M0].
  StateBytes per = bytesPerParam(mode), out;
  for (int64_t n : tensorElems) {
    int64_t chunk = zeroChunk(n, g);
    int64_t params = stage >= 3 ? chunk : stage >= 1 ? g * chunk : n;
    out.params += per.params * params;
    out.grads += per.grads * (stage >= 2 ? chunk : n);
    out.optim += per.optim * (stage >= 1 ? chunk : n);
  }
  return out;
}

namespace {
/// The tokens of one micro-batch a rank holds: s b over the cp ranks.
double tokensPerRank(int64_t s, int64_t b, int64_t cp) {
  return double(s) * double(b) / double(std::max<int64_t>(cp, 1));
}

/// The keys' (and the values') width: h kvHeads / heads (grouped-query
/// attention), h without heads.
double kvWidth(const LayerShape &l) {
  const double h = double(l.hidden);
  return l.heads > 0 ? h * double(l.kvHeads) / double(l.heads) : h;
}

/// [A8]'s per-token terms, in units of h: `repl` whole on every tp rank,
/// `split` divided by t; `stats` f32 elements per token (after t).
struct KeptTerms {
  double repl = 0, split = 0, stats = 0;
};
KeptTerms keptTerms(const LayerShape &l, int64_t t, bool sequenceParallel,
                    Recompute recompute) {
  const double h = double(l.hidden), td = double(std::max<int64_t>(t, 1));
  KeptTerms k;
  if (recompute == Recompute::Full) {
    // Only the layer's input, split over tp under sequence parallelism.
    (sequenceParallel ? k.split : k.repl) = 1;
    return k;
  }
  const double kv = kvWidth(l);
  // q, k and v; the attention's output unless recomputed; the MLP's.
  double attention = h + 2 * kv + (recompute == Recompute::Selective ? 0 : h);
  k.split = (attention + double(l.mlpTensors * l.ffn)) / h;
  // Each norm's input and output whole on every tp rank; under sequence
  // parallelism both split (the backward gathers the output again for the
  // column linears' weight gradients).
  if (sequenceParallel)
    k.split += 2 * double(l.norms);
  else
    k.repl = 2 * double(l.norms);
  k.stats = double(l.normStats) / (sequenceParallel ? td : 1.0) +
            (recompute == Recompute::Selective ? 0 : double(l.heads) / td);
  return k;
}
} // namespace

double triax::cost::keptBytesPerLayer(const LayerShape &layer, int64_t s,
                                      int64_t b, int64_t t,
                                      bool sequenceParallel,
                                      Recompute recompute, int64_t cp,
                                      int64_t elemBytes) {
  const KeptTerms k = keptTerms(layer, t, sequenceParallel, recompute);
  const double tokens = tokensPerRank(s, b, cp);
  const double perToken = (k.repl + k.split / double(std::max<int64_t>(t, 1))) *
                              double(layer.hidden) * double(elemBytes) +
                          k.stats * 4.0;
  return tokens * perToken;
}

double triax::cost::recomputedLayerBytes(const LayerShape &layer, int64_t s,
                                         int64_t b, int64_t t,
                                         bool sequenceParallel, int64_t cp,
                                         int64_t elemBytes) {
  const double tokens = tokensPerRank(s, b, cp);
  const double td = double(std::max<int64_t>(t, 1));
  // The MLP's gradient (a MoE layer's experts' are the planner's, [A7]);
  // with sequence parallelism the input gradient's
  // h-wide tensor and the norms' outputs whole (the recomputed forward
  // gathers them for the column linears, their weight gradients read them
  // again) where [A8] keeps their shards.
  const double gradient =
      (layer.mlpTensors > 0 ? double(layer.ffn) / td : 0.0) +
      (sequenceParallel ? double(layer.hidden) *
                              (1.0 + double(layer.norms) * (1.0 - 1.0 / td))
                        : 0.0);
  return keptBytesPerLayer(layer, s, b, t, sequenceParallel, Recompute::None,
                           cp, elemBytes) +
         tokens * gradient * double(elemBytes);
}

std::string triax::cost::keptFormulaLabel(const LayerShape &layer, int64_t tp,
                                          bool sequenceParallel,
                                          Recompute recompute, int64_t cp) {
  const KeptTerms k = keptTerms(layer, tp, sequenceParallel, recompute);
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "[A8] sbh";
  if (k.repl > 0 && k.split > 0)
    os << "(" << llvm::format("%g", k.repl) << " + "
       << llvm::format("%g", k.split) << "/t)";
  else if (k.split == 1)
    os << "/t";
  else if (k.split > 0)
    os << "(" << llvm::format("%g", k.split) << ")/t";
  else if (k.repl != 1)
    os << "(" << llvm::format("%g", k.repl) << ")";
  if (cp > 1)
    os << " / cp";
  return text;
}

double triax::cost::logitsBytes(int64_t s, int64_t b, int64_t vocab, int64_t h,
                                int64_t t, int64_t elemBytes, bool weightCopy,
                                bool sequenceParallel, double inFlight) {
  // [A6] per micro-batch in flight the logits (their gradient written over
  // them) and the final norm's input (split over t with sequence
  // parallelism) and output; once the head's input gradient; the head's
  // weight in the compute type.
  const double td = double(std::max<int64_t>(t, 1));
  const double local = double(vocab) / td;
  const double norm = (1.0 + (sequenceParallel ? 1.0 / td : 1.0)) * double(h);
  const double tokens = double(s) * double(b);
  return (tokens * (inFlight * (local + norm) + double(h)) +
          (weightCopy ? local * double(h) : 0.0)) *
         double(elemBytes);
}

WeightPassHandOver
triax::cost::weightPassHandOver(const LayerShape &layer, int64_t s, int64_t b,
                                int64_t t, bool sequenceParallel,
                                Recompute recompute, int64_t cp,
                                int64_t elemBytes, bool carryGathered) {
  // [A12]
  const double td = double(std::max<int64_t>(t, 1));
  const double h = double(layer.hidden);
  const double q = h, kv = kvWidth(layer);
  const double ffn = double(layer.ffn);
  // (With sequence parallelism W gathers the column linears' inputs, the
  // norms' outputs, again from their shards, which the forward keeps or,
  // under full recomputation, B's rebuilt forward hands over.)
  // (Carried whole under full recomputation with carry-gathered: B's
  // rebuilt forward gathered them.)
  // (A MoE layer's second norm feeds its router, which runs on the shard,
  // and its dispatch, whose buffer [A7] counts: carried as the shard.)
  const bool carry = sequenceParallel && carryGathered;
  const double normsWhole =
      layer.mlpTensors > 0 ? double(layer.norms) : double(layer.norms - 1);
  const double norms =
      sequenceParallel && carry && recompute == Recompute::Full
          ? normsWhole * h + (double(layer.norms) - normsWhole) * h / td
      : sequenceParallel ? double(layer.norms) * h / td
                         : double(layer.norms) * h;
  // (A MoE layer's MLP is its experts', [A7]: here the attention's and
  // the router's, one row linear.)
  const double rowLinears = layer.mlpTensors > 0 ? 2 : 1;
  const double attention = q / td, mlp = layer.mlpTensors > 0 ? ffn / td : 0;
  // (The row linears' output gradients: with sequence parallelism B
  // gathers them for the input gradient and W again from the shards it
  // hands over, which the row biases' gradients read too; with
  // carry-gathered B hands over the gathered ones, and the shards where
  // the biases' gradients read them.)
  const double gradients =
      (q + 2 * kv + double(layer.mlpTensors / 2) * ffn) / td +
      rowLinears * (carry              ? h + (layer.biases ? h / td : 0.0)
                    : sequenceParallel ? h / td
                                       : h);
  const double scale = tokensPerRank(s, b, cp) * double(elemBytes);
  WeightPassHandOver w;
  w.carried = gradients * scale;
  double kept = norms + attention + mlp;
  if (recompute == Recompute::Full) {
    // The W pass rebuilds the MLP's last input from what B recomputed
    // (GELU's product, SwiGLU's SiLU and second product: k/2 of them).
    kept += (double(layer.mlpTensors / 2) - 1) * mlp;
    w.carried += kept * scale;
    kept = 0;
  } else if (recompute == Recompute::Selective) {
    w.carried += attention * scale;
    kept -= attention;
  }
  w.kept = kept * scale;
  return w;
}

double triax::cost::ringAttentionGradScratch(const LayerShape &layer, int64_t s,
                                             int64_t b, int64_t t, int64_t cp,
                                             int64_t elemBytes) {
  if (cp < 2)
    return 0;
  const double td = double(std::max<int64_t>(t, 1));
  const double h = double(layer.hidden), heads = double(layer.heads) / td;
  const double kv = kvWidth(layer) / td;
  const double perToken = 4.0 * (2.0 * heads + h / td) - 4.0 * heads +
                          double(elemBytes) * 2.0 * kv * (cp > 2 ? 2.0 : 1.0) +
                          16.0 * kv;
  return tokensPerRank(s, b, cp) * perToken;
}

double triax::cost::backwardWorkingBytes(const LayerShape &layer, int64_t s,
                                         int64_t b, int64_t t, int64_t cp,
                                         int64_t elemBytes,
                                         bool sequenceParallel,
                                         double experts) {
  const double tokens = tokensPerRank(s, b, cp);
  const double td = double(std::max<int64_t>(t, 1));
  const double h = double(layer.hidden), ffn = double(layer.ffn);
  // Beside the gradient the MLP received (h), GELU's (k = 2: its product
  // and activation) gradient comes out of the GEMM's epilogue
  // (geluGradEpilogueOf): one ffn-wide buffer, beside which the MLP's
  // input gradient (h) is made. SwiGLU's (k = 4): two ffn-wide gradients
  // at once (the product's makes the SiLU's and the up projection's, each
  // written over one it no longer needs: elementwise-in-place), beside
  // which the first input gradient (h) is made; or, once the up
  // projection's is freed, the SiLU's beside both input gradients.
  double perToken = h;
  if (layer.mlpTensors == 2)
    perToken = 2.0 * h + ffn / td;
  else if (layer.mlpTensors > 2)
    perToken = std::max(2.0 * h + 2.0 * ffn / td, 3.0 * h + ffn / td);
  // With sequence parallelism, when the first MLP linear's weight gradient
  // gathers the norm's output again: that (h, and its group-major copy
  // when b > 1) beside the MLP's input gradient (h, whole until its
  // reduce-scatter), the residual gradient's shard (h/t) and the k/2
  // ffn-wide gradients of the MLP's products.
  if (sequenceParallel && layer.mlpTensors > 0)
    perToken = std::max(perToken, double(layer.mlpTensors / 2) * ffn / td +
                                      (b > 1 ? 3.0 : 2.0) * h + h / td);
  const double mlp = tokens * perToken * double(elemBytes) + experts;
  // Context parallelism's ring attention backward: its scratch beside the
  // residual gradient, the attention output's gradient and the query, key
  // and value gradients it makes.
  if (cp < 2)
    return mlp;
  return std::max(mlp,
                  tokens * (h + (2.0 * h + 2.0 * kvWidth(layer)) / td) *
                          double(elemBytes) +
                      ringAttentionGradScratch(layer, s, b, t, cp, elemBytes));
}

mlir::dist::PipelineSchedule triax::cost::pipelineScheduleOf(Schedule s) {
  using mlir::dist::PipelineSchedule;
  switch (s) {
  case Schedule::GPipe:
    return PipelineSchedule::GPipe;
  case Schedule::Interleaved:
    return PipelineSchedule::Interleaved;
  case Schedule::ZeroBubbleH1:
    return PipelineSchedule::ZeroBubbleH1;
  case Schedule::OneFOneB:
  case Schedule::None:
    break;
  }
  return PipelineSchedule::OneFOneB;
}

Schedule triax::cost::scheduleOf(mlir::dist::PipelineSchedule s) {
  for (Schedule plan : {Schedule::GPipe, Schedule::OneFOneB,
                        Schedule::Interleaved, Schedule::ZeroBubbleH1})
    if (pipelineScheduleOf(plan) == s)
      return plan;
  return Schedule::None;
}

double triax::cost::inFlightMicroBatches(Schedule schedule, int64_t pp,
                                         int64_t m, int64_t stage,
                                         int64_t virtualStages) {
  // [P2] (closed forms of peakInFlight over dist-pipeline's orders,
  // PipelineSchedule.h: the warm-up forwards plus the first steady one).
  if (pp <= 1)
    return 1;
  if (schedule == Schedule::OneFOneB)
    return double(std::max<int64_t>(1, std::min(pp - stage, m)));
  if (schedule == Schedule::ZeroBubbleH1)
    return double(std::max<int64_t>(1, std::min(pp, m)));
  if (schedule == Schedule::Interleaved) {
    const int64_t v = std::max<int64_t>(virtualStages, 1);
    int64_t chunks = std::min(2 * (pp - stage - 1) + (v - 1) * pp + 1, v * m);
    return double(chunks) / double(v);
  }
  return double(m);
}

double triax::cost::blocksInFlight(Schedule schedule, int64_t pp, int64_t m,
                                   int64_t stage, int64_t virtualStages,
                                   llvm::ArrayRef<int64_t> chunkBlocks) {
  // [P2] in blocks.
  const int64_t v = std::max<int64_t>(virtualStages, 1);
  int64_t sum = 0;
  for (int64_t blocks : chunkBlocks)
    sum += blocks;
  // (inFlightMicroBatches counts chunks over v: v chunks of sum / v.)
  const double equalChunks =
      double(sum) * inFlightMicroBatches(schedule, pp, m, stage, v);
  if (schedule != Schedule::Interleaved || pp <= 1 ||
      llvm::all_equal(chunkBlocks) || int64_t(chunkBlocks.size()) != v)
    return equalChunks;
  const mlir::dist::PipelineSchedule kind = pipelineScheduleOf(schedule);
  m = std::min(m, 2 * pp);
  if (!mlir::dist::scheduleError(kind, pp, v, m).empty())
    return equalChunks;
  static std::mutex lock;
  static std::map<
      std::tuple<int64_t, int64_t, int64_t, int64_t, std::vector<int64_t>>,
      int64_t>
      peaks;
  std::lock_guard<std::mutex> guard(lock);
  auto [it, inserted] = peaks.try_emplace(
      {pp, v, m, stage,
       std::vector<int64_t>(chunkBlocks.begin(), chunkBlocks.end())});
  if (inserted)
    it->second = mlir::dist::peakInFlight(
        mlir::dist::pipelineOrder(kind, pp, v, m, stage), chunkBlocks);
  return double(it->second);
}

int64_t triax::cost::heldReceives(Schedule schedule, int64_t pp, int64_t m,
                                  int64_t stage, int64_t virtualStages) {
  // [P4]
  if (pp <= 1 ||
      (schedule != Schedule::Interleaved && schedule != Schedule::ZeroBubbleH1))
    return 0;
  const mlir::dist::PipelineSchedule kind = pipelineScheduleOf(schedule);
  const int64_t v = std::max<int64_t>(virtualStages, 1);
  m = std::min(m, 2 * pp);
  if (!mlir::dist::scheduleError(kind, pp, v, m).empty())
    return 0;
  static std::mutex lock;
  static std::map<std::tuple<Schedule, int64_t, int64_t, int64_t>,
                  std::vector<int64_t>>
      held;
  std::lock_guard<std::mutex> guard(lock);
  auto [it, inserted] = held.try_emplace({schedule, pp, v, m});
  if (inserted)
    for (const auto &program : mlir::dist::pipelinePrograms(kind, pp, v, m))
      it->second.push_back(mlir::dist::peakHeldReceives(program));
  return stage >= 0 && stage < pp ? it->second[stage] : 0;
}

//===----------------------------------------------------------------------===//
// Communication
//===----------------------------------------------------------------------===//

int64_t triax::cost::allReduceBytes(int64_t n, int64_t elemBytes, int64_t p,
                                    int64_t position) {
  // [C1] The ring's reduce-scatter sends every chunk but chunk pos+1, its
  // all-gather every chunk but chunk pos+2 (runtime/lib/cpu/comm.cpp).
  if (p <= 1 || n <= 0)
    return 0;
  auto len = [&](int64_t c) {
    c = ((c % p) + p) % p;
    return n * (c + 1) / p - n * c / p;
  };
  return (2 * n - len(position + 1) - len(position + 2)) * elemBytes;
}

int64_t triax::cost::reduceScatterBytes(int64_t blockElems, int64_t elemBytes,
                                        int64_t p) {
  return p <= 1 ? 0 : (p - 1) * blockElems * elemBytes; // [C2]
}

int64_t triax::cost::allGatherBytes(int64_t blockElems, int64_t elemBytes,
                                    int64_t p) {
  return p <= 1 ? 0 : (p - 1) * blockElems * elemBytes; // [C2]
}

int64_t triax::cost::allToAllBytes(int64_t n, int64_t elemBytes, int64_t p) {
  return p <= 1 ? 0 : (p - 1) * (n / p) * elemBytes; // [C8]
}

//===----------------------------------------------------------------------===//
// Schedule, FLOPs, time
//===----------------------------------------------------------------------===//

/// [P1]'s m: the fill and drain idle (p-1)/M of the step's compute, M = m
/// (GPipe, 1F1B), v m (interleaved: chunks of 1/v stage), 3 m (ZB-H1: only
/// T_F of a pass's T_F + T_B + T_W idles).
static double bubbleMicroBatches(int64_t m, int64_t virtualStages,
                                 Schedule schedule) {
  return double(std::max<int64_t>(m, 1)) *
         (schedule == Schedule::ZeroBubbleH1
              ? 3.0
              : double(std::max<int64_t>(virtualStages, 1)));
}

std::vector<double> triax::cost::stageLoads(llvm::ArrayRef<double> flops) {
  double total = 0;
  for (double f : flops)
    total += f;
  std::vector<double> loads;
  if (total > 0)
    for (double f : flops)
      loads.push_back(f * double(flops.size()) / total);
  return loads;
}

double triax::cost::bubbleFraction(int64_t pp, int64_t microBatches,
                                   int64_t virtualStages, Schedule schedule) {
  // [P1]
  if (pp <= 1)
    return 0;
  return double(pp - 1) /
         (bubbleMicroBatches(microBatches, virtualStages, schedule) + pp - 1);
}

double triax::cost::flopsPerToken(double params, int64_t layers, int64_t hidden,
                                  int64_t seq) {
  // [F1]
  return 6 * params + 12.0 * double(layers) * double(hidden) * double(seq);
}

double triax::cost::recomputeFlopsPerToken(double layerParams, int64_t layers,
                                           int64_t hidden, int64_t seq,
                                           Recompute recompute) {
  // [F2] the attention core's forward is 4 s h per token and layer (QK^T
  // and AV, 2 s h each); full recomputation adds the layers' forward 2 N_L.
  const double core = 4.0 * double(layers) * double(hidden) * double(seq);
  switch (recompute) {
  case Recompute::None:
    return 0;
  case Recompute::Selective:
    return core;
  case Recompute::Full:
    return 2 * layerParams + core;
  }
  return 0;
}

StepTime triax::cost::predictStepTime(const Hardware &hw, const Plan &plan,
                                      double flopsPerTok, double tokensPerStep,
                                      int64_t numRanks,
                                      llvm::ArrayRef<CommLoad> comm,
                                      double efficiency) {
  StepTime t;
  const double ranks = double(std::max<int64_t>(numRanks, 1));
  const double stepFlops = flopsPerTok * tokensPerStep;
  // [T1] every rank does 1/ranks of the step's FLOPs at `efficiency`.
  t.compute = stepFlops / ranks / (hw.peakFlops * efficiency);
  // [T2] each collective's bytes over its link, plus alpha per call.
  for (const CommLoad &c : comm) {
    double bw = c.spanRanks <= hw.gpusPerNode ? hw.nvlinkBandwidth
                                              : hw.interNodeBandwidth;
    t.comm += double(c.bytes) / bw + double(c.calls) * hw.latency;
  }
  // [T3] the pipeline's idle time: (p-1)/M of the busy time ([P1]'s M).
  if (plan.pp > 1)
    t.bubble = t.compute * double(plan.pp - 1) /
               bubbleMicroBatches(plan.microBatches, plan.virtualStages,
                                  plan.schedule);
  t.total = t.compute + t.comm + t.bubble; // [T4]
  if (t.total > 0) {
    t.tokensPerSecond = tokensPerStep / t.total;
    t.mfu = stepFlops / (t.total * ranks * hw.peakFlops); // [T5]
  }
  return t;
}

mlir::dist::MeshShape triax::cost::Plan::mesh() const {
  mlir::dist::MeshShape shape;
  for (const mlir::dist::AxisRoleInfo &row : mlir::dist::axisRoles())
    if (const int64_t *size = axisField(*this, row.role))
      if (*size > 1 ||
          (row.role != TRX_AXIS_CONTEXT && row.role != TRX_AXIS_EXPERT))
        shape.set(row.role, *size);
  return shape;
}
