//===- Report.cpp - The dist-report text and JSON -------------------------===//

#include "triax/CostModel/CostModel.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

using namespace triax::cost;

namespace {

const char *dtypeName(DTypeMode m) {
  return m == DTypeMode::Mixed ? "mixed precision AdamW (2 + 2 + 12 bytes "
                                 "per parameter)"
                               : "fp32 AdamW (4 + 4 + 8 bytes per parameter)";
}

std::string formulaOf(const CollectiveKey &key) {
  if (key.kind == "all_reduce")
    return "[C1] ring all_reduce 2(p-1)/p S";
  if (key.kind == "send" || key.kind == "recv")
    return "[C6] point to point: the tensor's bytes (recv: received)";
  return "[C2] ring " + key.kind + " (p-1)/p S = (p-1) x block";
}

} // namespace

Report triax::cost::makeReport(ModuleFacts facts, const Hardware &hw,
                               double efficiency) {
  Report r;
  r.hardware = hw;
  r.efficiency = efficiency;
  const Plan &plan = facts.plan;
  r.activationsPerLayer = keptBytesPerLayer(
      facts.layer, facts.seq, facts.microBatch, plan.tp, plan.sequenceParallel,
      plan.recompute, plan.cp, facts.activationBytes);
  r.bubble = bubbleFraction(plan.pp, plan.microBatches, plan.virtualStages,
                            plan.schedule);
  r.flopsPerToken =
      flopsPerToken(facts.flopParams, facts.layers, facts.hidden, facts.seq);
  // What triax-recompute adds: the forward it redoes in the backward.
  r.recomputeFlopsPerToken = recomputeFlopsPerToken(
      facts.layerParams, facts.layers, facts.hidden, facts.seq, plan.recompute);
  r.flopsPerToken += r.recomputeFlopsPerToken;
  std::vector<CommLoad> loads;
  for (const auto &[key, total] : facts.collectives)
    loads.push_back(
        {total.bytes, total.calls, total.groupSize, total.spanRanks});
  int64_t ranks = 1;
  for (int64_t s : facts.axisSizes)
    ranks *= s;
  // [P3] the pipeline at its slowest stage's pace.
  double slowest = 1;
  for (double load : facts.stageLoad)
    slowest = std::max(slowest, load);
  r.step = predictStepTime(hw, plan, r.flopsPerToken * slowest,
                           double(facts.globalBatch * facts.seq), ranks, loads,
                           efficiency);
  r.step.mfu /= slowest; // (MFU counts the model's FLOPs once)
  r.facts = std::move(facts);
  return r;
}

void triax::cost::printReport(llvm::raw_ostream &os, const Report &r) {
  const ModuleFacts &f = r.facts;
  const Plan &plan = f.plan;
  std::string mesh;
  int64_t ranks = 1;
  for (size_t i = 0; i < f.axisNames.size(); ++i) {
    mesh += (mesh.empty() ? "" : " x ") + f.axisNames[i] + "=" +
            std::to_string(f.axisSizes[i]);
    ranks *= f.axisSizes[i];
  }
  if (mesh.empty())
    mesh = "one rank";
  os << "dist-report: rank " << f.rank << " of mesh " << mesh << " (" << ranks
     << " ranks), hardware " << r.hardware.name << "\n";
  os << "model: " << f.numParams << " parameters, " << f.layers
     << " layers, hidden " << f.hidden << ", " << f.heads << " heads, seq "
     << f.seq << "; global batch " << f.globalBatch << ", micro-batch "
     << f.microBatch << ", " << plan.microBatches
     << " micro-batches per rank per step\n";
  // (Expert-parallel ranks train on their own sequences too.)
  const int64_t dataRanks = plan.dp * plan.ep;
  if (f.microBatch * dataRanks > 0 &&
      f.globalBatch % (f.microBatch * dataRanks) != 0)
    os << "warning: global batch " << f.globalBatch
       << " is not a multiple of micro-batch x dp x ep = "
       << f.microBatch * dataRanks << "; " << plan.microBatches
       << " micro-batch per rank assumed\n";
  os << "state: " << dtypeName(plan.dtype);
  if (plan.zeroStage)
    os << ", ZeRO-" << plan.zeroStage;
  if (plan.sequenceParallel)
    os << ", sequence parallel";
  if (plan.recompute != Recompute::None)
    os << (plan.recompute == Recompute::Full ? ", full" : ", selective")
       << " recomputation";
  os << "\n\nmemory per rank (bytes):\n";
  os << "  predicted peak bytes: params " << f.state.params << " grads "
     << f.state.grads << " optim " << f.state.optim << " = " << f.state.total()
     << "\n";
  os << "    [M1] params: (stage 3 ? ceil(n/g) : stage 1, 2 ? g ceil(n/g) : "
        "n) x 4|2 per tensor, n its elements on this rank after "
        "dist.sharding\n";
  os << "    [M2] grads: (stage >= 2 ? ceil(n/g) : n) x 4|2\n";
  os << "    [M3] optim: (stage >= 1 ? ceil(n/g) : n) x 8|12\n";
  os << "  activations per layer: "
     << llvm::format("%.0f", r.activationsPerLayer) << "  "
     << keptFormulaLabel(f.layer, plan.tp, plan.sequenceParallel,
                         plan.recompute, plan.cp)
     << " (s=" << f.seq << ", b=" << f.microBatch << ", h=" << f.hidden
     << ", t=" << plan.tp
     << (plan.cp > 1 ? ", cp=" + std::to_string(plan.cp) : std::string())
     << "; " << f.activationBytes * 8 << "-bit activations)\n";
  const bool piped = plan.pp > 1 && f.stageLayers > 0;
  os << "  activation peak of "
     << (piped ? "this rank's stage of the pipeline schedule"
               : "one micro-batch")
     << " from the IR's liveness: " << f.activationPeak
     << "  [A9] (the runtime's measured 'activ')\n";
  const int64_t peak = f.state.total() + f.activationPeak;
  os << "  peak (state + [A9]): " << peak << "\n";

  os << "\ncommunication per step (ring; bytes rank " << f.rank << " sends):\n";
  if (f.collectives.empty())
    os << "  none\n";
  for (const auto &[key, t] : f.collectives) {
    os << "  " << key.kind << " over " << key.axes << ": " << t.bytes
       << " bytes " << (key.kind == "recv" ? "received" : "sent")
       << " by this rank in " << t.calls << " calls\n";
    os << "    " << formulaOf(key) << ", p = " << t.groupSize << "; from";
    for (const std::string &s : t.sources)
      os << " " << s;
    os << "\n";
  }
  if (!f.unmodelled.empty()) {
    os << "  not modelled:";
    for (const std::string &s : f.unmodelled)
      os << " " << s;
    os << "\n";
  }

  os << "\nschedule and time (predicted, not yet validated):\n";
  const bool interleaved = plan.virtualStages > 1,
             zeroBubble = plan.schedule == Schedule::ZeroBubbleH1;
  os << "  bubble: " << llvm::format("%.4f", r.bubble) << "  [P1] "
     << (interleaved  ? "(p-1)/(v m+p-1)"
         : zeroBubble ? "(p-1)/(3m+p-1)"
                      : "(p-1)/(m+p-1)")
     << ", p = " << plan.pp << ", m = " << plan.microBatches;
  if (interleaved)
    os << ", v = " << plan.virtualStages << " (interleaved)";
  else if (zeroBubble)
    os << " (zb-h1)";
  os << "\n";
  os << "  FLOPs per token: " << llvm::format("%.4g", r.flopsPerToken)
     << "  [F1] 6N + 12Lhs";
  if (plan.recompute != Recompute::None)
    os << " + [F2] "
       << (plan.recompute == Recompute::Full ? "2N_L + 4Lhs" : "4Lhs")
       << " recomputed = "
       << llvm::format("%.4g", r.flopsPerToken - r.recomputeFlopsPerToken)
       << " + " << llvm::format("%.4g", r.recomputeFlopsPerToken);
  os << "\n";
  os << "  step on " << r.hardware.name << " at "
     << llvm::format("%.0f", r.efficiency * 100) << "% of peak: compute "
     << llvm::format("%.4g", r.step.compute * 1e3) << " ms [T1]";
  if (!f.stageLoad.empty()) {
    os << " (the slowest stage's:";
    for (double load : f.stageLoad)
      os << " " << llvm::format("%.3f", load);
    os << " x the mean [P3])";
  }
  os << " + communication " << llvm::format("%.4g", r.step.comm * 1e3)
     << " ms [T2] + bubble " << llvm::format("%.4g", r.step.bubble * 1e3)
     << " ms [T3] = " << llvm::format("%.4g", r.step.total * 1e3)
     << " ms [T4]\n";
  os << "  tokens/s: " << llvm::format("%.4g", r.step.tokensPerSecond)
     << ", MFU: " << llvm::format("%.4f", r.step.mfu) << " [T5]\n";
}

void triax::cost::printReportJSON(llvm::raw_ostream &os, const Report &r) {
  const ModuleFacts &f = r.facts;
  llvm::json::Object mesh;
  for (size_t i = 0; i < f.axisNames.size(); ++i)
    mesh[f.axisNames[i]] = f.axisSizes[i];
  llvm::json::Array comm;
  for (const auto &[key, t] : f.collectives) {
    llvm::json::Array sources;
    for (const std::string &s : t.sources)
      sources.push_back(s);
    comm.push_back(llvm::json::Object{{"kind", key.kind},
                                      {"axes", key.axes},
                                      {"bytes", t.bytes},
                                      {"calls", t.calls},
                                      {"group_size", t.groupSize},
                                      {"formula", formulaOf(key)},
                                      {"sources", std::move(sources)}});
  }
  llvm::json::Array unmodelled;
  for (const std::string &s : f.unmodelled)
    unmodelled.push_back(s);
  llvm::json::Object root{
      {"rank", f.rank},
      {"hardware", r.hardware.name},
      {"mesh", std::move(mesh)},
      {"model",
       llvm::json::Object{{"params", f.numParams},
                          {"layers", f.layers},
                          {"hidden", f.hidden},
                          {"heads", f.heads},
                          {"seq", f.seq},
                          {"global_batch", f.globalBatch},
                          {"micro_batch", f.microBatch},
                          {"micro_batches_per_rank", f.plan.microBatches}}},
      {"memory",
       llvm::json::Object{
           {"params", f.state.params},
           {"grads", f.state.grads},
           {"optim", f.state.optim},
           {"total", f.state.total()},
           {"formulas", "[M0]-[M4]"},
           {"zero_stage", f.plan.zeroStage},
           {"mixed_precision", f.plan.dtype == DTypeMode::Mixed},
           {"activations_per_layer", r.activationsPerLayer},
           {"activation_peak_liveness", f.activationPeak},
           {"activations_formula",
            keptFormulaLabel(f.layer, f.plan.tp, f.plan.sequenceParallel,
                             f.plan.recompute, f.plan.cp)}}},
      {"communication", std::move(comm)},
      {"unmodelled", std::move(unmodelled)},
      {"bubble", r.bubble},
      {"stage_load", llvm::json::Array(f.stageLoad)},
      {"flops_per_token", r.flopsPerToken},
      {"recompute_flops_per_token", r.recomputeFlopsPerToken},
      {"step", llvm::json::Object{{"efficiency", r.efficiency},
                                  {"compute_s", r.step.compute},
                                  {"comm_s", r.step.comm},
                                  {"bubble_s", r.step.bubble},
                                  {"total_s", r.step.total},
                                  {"tokens_per_s", r.step.tokensPerSecond},
                                  {"mfu", r.step.mfu}}}};
  os << llvm::formatv("{0:2}", llvm::json::Value(std::move(root))) << "\n";
}
