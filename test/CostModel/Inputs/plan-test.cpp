//===- plan-test.cpp - The planner's formulas and rules by hand -----------===//
//
// The formulas dist-plan adds to docs/cost-model.md ([A6], [P2], [F2],
// [M5], [C3]-[C6], [S1]) and every rejection rule, on a model whose
// numbers are written out here, against values computed by hand in the
// comments. Prints one line per check and "N checks, N failed".
//
//===----------------------------------------------------------------------===//

#include "triax/CostModel/Planner.h"

#include "llvm/Support/raw_ostream.h"

#include <cmath>

using namespace triax::cost;

namespace {
int checks = 0, failed = 0;

void expectNear(const std::string &what, double got, double want) {
  ++checks;
  bool ok = std::fabs(got - want) <= 1e-9 * std::max(1.0, std::fabs(want));
  failed += !ok;
  llvm::outs() << (ok ? "ok   " : "FAIL ") << what << ": " << got;
  if (!ok)
    llvm::outs() << " (expected " << want << ")";
  llvm::outs() << "\n";
}

void expectText(const std::string &what, const std::string &got,
                const std::string &want) {
  ++checks;
  bool ok = got == want;
  failed += !ok;
  llvm::outs() << (ok ? "ok   " : "FAIL ") << what << ": " << got;
  if (!ok)
    llvm::outs() << " (expected '" << want << "')";
  llvm::outs() << "\n";
}

double commBytes(const Candidate &c, const std::string &name) {
  for (const auto &[n, l] : c.comm)
    if (n == name)
      return double(l.bytes);
  return -1;
}
double commCalls(const Candidate &c, const std::string &name) {
  for (const auto &[n, l] : c.comm)
    if (n == name)
      return double(l.calls);
  return -1;
}

/// tiny's blocks, four of them (triax-model tiny --layers 4 --batch 16
/// --micro-batch 4): per block the tp-split parameters are q, k, v
/// (64x64 + 64 each: 12480), c_proj.weight 4096, c_fc 64x256 + 256 =
/// 16640, mlp c_proj.weight 16384: 49600; replicated: two layer norms
/// (4 x 64) and the two row-split biases (2 x 64): 384. wte 256 x 64 =
/// 16384 (split, tied to the head), wpe 64 x 64 = 4096, ln_f 128.
/// N = 4 x 49984 + 16384 + 4096 + 128 = 220544.
ModelShape handModel() {
  ModelShape m;
  m.name = "hand";
  m.layers = 4;
  m.hidden = 64;
  m.heads = 4;
  m.kvHeads = 4;
  m.ffn = 256;
  m.vocab = 256;
  m.seq = 64;
  m.globalBatch = 16;
  m.microBatch = 4;
  m.dtype = DTypeMode::FP32;
  m.activationBytes = 4;
  m.layer.mlpTensors = 2; // GELU: the product and its activation
  m.layer.norms = 2;      // LayerNorms: mean and rstd each
  m.layer.normStats = 4;
  m.layer.biases = true;
  m.layerSplit = 4 * 49600;
  m.layerRepl = 4 * 384;
  m.firstSplit = 16384;
  m.firstRepl = 4096;
  m.lastRepl = 128;
  m.tiedSplit = 16384;
  m.layerTensors = 64;
  m.firstTensors = 2;
  m.lastTensors = 2;
  m.layerReplTensors = 24; // per block: 2 norms x 2, 2 row-split biases
  m.firstReplTensors = 1;  // wpe
  m.lastReplTensors = 2;   // ln_f
  m.params = 220544;
  m.flopParams = 220544;
  return m;
}

PlanRequest handRequest(int64_t gpus) {
  PlanRequest r;
  r.gpus = gpus;
  // peak 1e15 FLOP/s, NVLink 1e11 B/s, inter-node 1e10 B/s, 8 per node,
  // 1 us per call; HBM 80e9.
  r.hardware = Hardware{"test", 80e9, 1e15, 3e12, 1e11, 8, 1e10, 1e-6};
  return r;
}

Plan makePlan(int64_t dp, int64_t tp, int64_t pp, int zero, int64_t m,
              Schedule s = Schedule::None, bool sp = false,
              Recompute r = Recompute::None) {
  Plan p;
  p.dp = dp;
  p.tp = tp;
  p.pp = pp;
  p.zeroStage = zero;
  p.microBatches = m;
  p.schedule = s;
  p.sequenceParallel = sp;
  p.recompute = r;
  return p;
}

void expectReason(const std::string &what, const Candidate &c,
                  const std::string &reason, const std::string &detail) {
  expectText(what + " region", c.reason, reason);
  expectText(what + " detail", c.detail, detail);
}
} // namespace

int main() {
  // [A6] the logits (their gradient written over them) and 3 h-wide
  // tensors: s = 64, b = 8, V = 256 over t = 2, h = 64, 2 bytes:
  // 512 x (128 + 192) x 2 = 327,680; with the head's weight in 16 bits,
  // 128 x 64 x 2 = 16,384 more.
  expectNear("A6 logits", logitsBytes(64, 8, 256, 64, 2, 2), 327680);
  expectNear("A6 logits and weight copy",
             logitsBytes(64, 8, 256, 64, 2, 2, true), 344064);

  // [A8] a LLaMA-shaped layer (h = 64, 4 heads, 2 kv-heads, SwiGLU ffn
  // 128, 2 RMSNorms), s = 32, b = 4, f32: per token 4h = 256 whole,
  // q + k + v + output 64 + 32 + 32 + 64 and 4 x 128 split, 2 + 4 f32
  // statistics: 128 x (256 + 704 + 6) x 4 = 494,592 (the IR's liveness
  // per layer, plan-activations.test); tp = 2 with sequence parallelism
  // (the norms' inputs and outputs split, the outputs gathered again in the
  // backward): (256 + 704) / 2 = 480, statistics 1 + 2: 128 x 483 x 4 =
  // 247,296; full recomputation: the input, 128 x 64 x 4 = 32,768.
  {
    LayerShape llama{64, 4, 2, 128, 4, 2, 2};
    expectNear("A8 llama",
               keptBytesPerLayer(llama, 32, 4, 1, false, Recompute::None, 1, 4),
               494592);
    expectNear("A8 llama tp=2 sp",
               keptBytesPerLayer(llama, 32, 4, 2, true, Recompute::None, 1, 4),
               247296);
    expectNear("A8 llama full",
               keptBytesPerLayer(llama, 32, 4, 1, false, Recompute::Full, 1, 4),
               32768);
    expectText("A8 llama label",
               keptFormulaLabel(llama, 2, true, Recompute::None),
               "[A8] sbh(15)/t");
    expectText("A8 full sp label",
               keptFormulaLabel(llama, 2, true, Recompute::Full, 2),
               "[A8] sbh/t / cp");
    // A 1F1B stage's backward working set: the gradient received, SwiGLU's
    // two ffn-wide gradients (each of the products' written over one it no
    // longer needs) and the first input gradient, 128 x (2 x 64 + 2 x 128)
    // x 4 = 196,608 (more than 3h + ffn, the SiLU's gradient beside both
    // input gradients).
    expectNear("working llama", backwardWorkingBytes(llama, 32, 4, 1, 1, 4),
               196608);
    // [A12] what a deferred W pass holds of the layer: kept, the inputs of
    // the weight gradients, 2h + q + ffn = 128 + 64 + 128 = 320 a token
    // (163,840); carried, the output gradients, q + 2kv + 2 ffn + 2h = 64
    // + 64 + 256 + 128 = 512 (262,144). tp = 2 with sequence parallelism:
    // the norms' shards, 64 + 32 + 64 = 160 (81,920); (64 + 64 + 256)/2 +
    // the row linears' shards 128/2 = 256 (131,072; W gathers them again).
    // Selective: the attention's output (64) carried instead of kept
    // (131,072, 294,912). Full: all carried, the SiLU and up products for
    // the last linear: 512 + 320 + 128 = 960 (491,520); with tp = 2 and
    // sequence parallelism 256 + 160 + 64 = 480 (245,760). carry-gathered
    // (B hands W the gathered row gradients, 2h; LLaMA has no row biases,
    // whose gradients would read the shards): 192 + 128 = 320 carried
    // (163,840); under full recomputation also the norms' outputs whole,
    // 480 + 64 + 64 = 608 (311,296).
    auto handOver = [&](int64_t t, bool sp, Recompute r, bool carry = false) {
      WeightPassHandOver w =
          weightPassHandOver(llama, 32, 4, t, sp, r, 1, 4, carry);
      return std::to_string(int64_t(w.kept)) + " " +
             std::to_string(int64_t(w.carried));
    };
    expectText("A12 llama", handOver(1, false, Recompute::None),
               "163840 262144");
    expectText("A12 llama tp=2 sp", handOver(2, true, Recompute::None),
               "81920 131072");
    expectText("A12 llama selective", handOver(1, false, Recompute::Selective),
               "131072 294912");
    expectText("A12 llama full", handOver(1, false, Recompute::Full),
               "0 491520");
    expectText("A12 llama full tp=2 sp", handOver(2, true, Recompute::Full),
               "0 245760");
    expectText("A12 llama tp=2 sp carry",
               handOver(2, true, Recompute::None, true), "81920 163840");
    expectText("A12 llama full tp=2 sp carry",
               handOver(2, true, Recompute::Full, true), "0 311296");
    // With row biases (GPT-2's) B hands over the shards too: 2 (h + h/t),
    // 64 more a token (32,768).
    LayerShape biased = llama;
    biased.biases = true;
    expectNear(
        "A12 biased tp=2 sp carry",
        weightPassHandOver(biased, 32, 4, 2, true, Recompute::None, 1, 4, true)
                .carried -
            weightPassHandOver(llama, 32, 4, 2, true, Recompute::None, 1, 4,
                               true)
                .carried,
        32768);
    // Ring attention's backward scratch, cp = 2, s = 64, b = 2: 64 tokens a
    // rank, 4 (2 x 4 + 64) - 4 x 4 + 4 x 2 x 32 + 16 x 32 = 1,040 bytes a
    // token: 66,560.
    expectNear("ring attention grad scratch",
               ringAttentionGradScratch(llama, 64, 2, 1, 2, 4), 66560);
  }

  // [P2] in flight: GPipe all m; 1F1B min(p - s, m); no pipeline 1.
  expectNear("P2 gpipe p=4 m=8 stage 0",
             inFlightMicroBatches(Schedule::GPipe, 4, 8, 0), 8);
  expectNear("P2 1f1b p=4 m=8 stage 0",
             inFlightMicroBatches(Schedule::OneFOneB, 4, 8, 0), 4);
  expectNear("P2 1f1b p=4 m=8 stage 3",
             inFlightMicroBatches(Schedule::OneFOneB, 4, 8, 3), 1);
  expectNear("P2 no pipeline", inFlightMicroBatches(Schedule::None, 1, 8, 0),
             1);

  // [F2] GPT-2 124M: L = 12, h = 768, s = 1024, N_L = 12 x 7,087,872 =
  // 85,054,464. Selective 4 x 12 x 768 x 1024 = 37,748,736; full
  // 2 x 85,054,464 + 37,748,736 = 207,857,664.
  expectNear("F2 none",
             recomputeFlopsPerToken(85054464, 12, 768, 1024, Recompute::None),
             0);
  expectNear(
      "F2 selective",
      recomputeFlopsPerToken(85054464, 12, 768, 1024, Recompute::Selective),
      37748736);
  expectNear("F2 full",
             recomputeFlopsPerToken(85054464, 12, 768, 1024, Recompute::Full),
             207857664);

  ModelShape model = handModel();

  // Case A: dp = 2, b = 4, m = 16 / (2 x 4) = 2, fp32, no ZeRO.
  {
    Candidate c =
        evaluatePlan(model, handRequest(2), makePlan(2, 1, 1, 0, 2), 4);
    expectText("A fits", c.reason, "");
    // 220,544 elements: 4 + 4 + 8 bytes each.
    expectNear("A params", c.memory.params, 4.0 * 220544);
    expectNear("A grads", c.memory.grads, 4.0 * 220544);
    expectNear("A optim", c.memory.optim, 8.0 * 220544);
    // [A8] 256 tokens x (4h + (2h + 2h + 2 x 256) = 1,024 elements + 8
    // f32 statistics) x 4 bytes = 1,056,768 per layer, x 4 layers, 1 in
    // flight: 4,227,072.
    expectNear("A activations", c.memory.activations, 4227072);
    // [A6] 256 x (256 + 3 x 64) x 4 = 458,752.
    expectNear("A logits", c.memory.logits, 458752);
    expectNear("A peak", c.memory.peak,
               882176 + 882176 + 1764352 + 4227072 + 458752);
    // [C3] all_reduce of 220,544 f32 over 2: 2 (1/2) S = S = 882,176
    // bytes, in ceil(882,176 / 25 MiB) = 1 bucket.
    expectNear("C3 all_reduce dp bytes", commBytes(c, "all_reduce dp"), 882176);
    expectNear("C3 all_reduce dp calls", commCalls(c, "all_reduce dp"), 1);
    // [F1] 6 x 220,544 + 12 x 4 x 64 x 64 = 1,323,264 + 196,608.
    expectNear("A F1", c.flopsPerToken, 1519872);
    // [T1] 1,024 tokens x 1,519,872 / 2 ranks / (1e15 x 0.5).
    double compute = 1024.0 * 1519872 / 2 / 5e14;
    expectNear("A T1 compute", c.step.compute, compute);
    // [T2] NVLink (the dp group spans 2 ranks): 882,176 / 1e11 + 1 us.
    double comm = 882176 / 1e11 + 1e-6;
    expectNear("A T2 communication", c.step.comm, comm);
    expectNear("A T4 step", c.step.total, compute + comm);
    expectNear("A T5 MFU", c.step.mfu,
               1024.0 * 1519872 / ((compute + comm) * 2 * 1e15));
  }

  // Case B: tp = 2 + sequence parallel, selective recompute, b = 4, m = 4.
  {
    Candidate c = evaluatePlan(
        model, handRequest(2),
        makePlan(1, 2, 1, 0, 4, Schedule::None, true, Recompute::Selective), 4);
    expectText("B fits", c.reason, "");
    // Per rank: 4 x (49,600 / 2 + 384) + 16,384 / 2 + 4,096 + 128 =
    // 100,736 + 12,288 + 128 = 113,152 elements, 16 bytes each.
    expectNear("B state", c.memory.params + c.memory.grads + c.memory.optim,
               16.0 * 113152);
    // [A8] selective with SP (the norms' inputs and outputs split, the
    // outputs gathered again in the backward): (4h + h + 2h + 2 x 256) / 2
    // = 480 elements and 4/2 f32 statistics per token (the log-sum-exps
    // recomputed): 256 x 482 x 4 = 493,568, x 4 layers = 1,974,272.
    expectNear("B activations", c.memory.activations, 1974272);
    // [A6] over t = 2, the final norm's input split too: 256 x (128 +
    // 2.5 x 64) x 4 = 294,912.
    expectNear("B logits", c.memory.logits, 294912);
    // [C5] 4 x 4 layers + 1 (embedding) + 1 (head) = 18 per micro-batch;
    // block of 16,384 / 2 f32: (2 - 1) x 8,192 x 4 = 32,768; x 18 x 4 =
    // 2,359,296 in 72 calls each; the all_gathers also gather each layer's
    // two norm outputs again in the backward: 26 x 4 = 104 calls,
    // 3,407,872 bytes.
    expectNear("C5 reduce_scatter tp", commBytes(c, "reduce_scatter tp"),
               2359296);
    expectNear("C5 all_gather tp", commBytes(c, "all_gather tp"), 3407872);
    expectNear("C5 calls", commCalls(c, "all_gather tp"), 104);
    // all_reduce over tp: per micro-batch the cross-entropy's 256 and 512
    // f32 (R = b s = 256) forward and backward, 2 x (1,024 + 2,048) =
    // 6,144, and the replicated parameters' gradients, 4 x 384 + 4,096 +
    // 128 = 5,760 f32 = 23,040 bytes (S for p = 2); x 4 micro-batches =
    // 116,736; + the global norm's f32 = 116,740. Calls: 4 x (4 + 27
    // tensors: 6 per block, wpe, ln_f's 2) + 1 = 125.
    expectNear("C5 all_reduce tp (SP)", commBytes(c, "all_reduce tp"), 116740);
    expectNear("C5 all_reduce tp (SP) calls", commCalls(c, "all_reduce tp"),
               125);
    // [F2] selective: 4 x 4 x 64 x 64 = 65,536 on top of 1,519,872.
    expectNear("B F1 + F2", c.stepFlopsPerToken, 1519872 + 65536);
    // MFU counts [F1] only.
    expectNear("B MFU", c.step.mfu,
               1024.0 * 1519872 / (c.step.total * 2 * 1e15));
  }

  // Case C: dp = 2 x pp = 2, ZeRO-1, GPipe, b = 2, m = 4, full recompute.
  {
    Candidate c = evaluatePlan(
        model, handRequest(4),
        makePlan(2, 1, 2, 1, 4, Schedule::GPipe, false, Recompute::Full), 2);
    expectText("C fits", c.reason, "");
    // Stage 0: 2 x 49,984 + 16,384 + 4,096 = 120,448; stage 1: 99,968 +
    // 128 + the tied head's copy 16,384 = 116,480. ZeRO-1 over 2:
    // params 4 x 116,480, grads 4 x 116,480, optim 8 x 58,240 = 465,920
    // each; [A8] under full recomputation the layer's input, 128 tokens
    // x 64 x 4 bytes = 32,768, x 2 layers x 4 in flight (GPipe) = 262,144,
    // and one layer recomputed in the backward with its MLP's gradient,
    // 128 x (4,128 + 256 x 4) = 659,456. Stage 1 holds the head of the 4
    // micro-batches in flight, [A6]: 128 x (4 x (256 + 2 x 64) + 64) x 4 =
    // 819,200, and keeps them while it rebuilds a layer (the backward
    // function frees a micro-batch's when it returns), all but the head's
    // input gradient (128 x 64 x 4 = 32,768): 786,432 + 659,456 =
    // 1,445,888. Stage 1: 3 x 465,920 + 262,144 + 1,445,888 = 3,105,792 >
    // stage 0's 3 x 481,792 + 262,144 + 659,456 = 2,366,976.
    expectNear("C fullest stage", double(c.memory.stage), 1);
    expectNear("C peak", c.memory.peak,
               3 * 465920.0 + 262144 + 819200 - 32768 + 659456);
    expectNear("C in flight", double(c.memory.inFlight), 4);
    // [C4] the busiest rank (stage 0, 120,448 elements in 34 tensors):
    // chunk 60,224; reduce_scatter (2 - 1) x 60,224 x 4 = 240,896, the
    // all_gather the same; 481,792 bytes of tensors are one 25 MiB bucket
    // each way (min(34 tensors, ceil(481,792 / 26,214,400))).
    expectNear("C4 reduce_scatter dp", commBytes(c, "reduce_scatter dp"),
               240896);
    expectNear("C4 all_gather dp", commBytes(c, "all_gather dp"), 240896);
    expectNear("C4 calls", commCalls(c, "all_gather dp"), 1);
    expectNear("C4 reduce_scatter calls", commCalls(c, "reduce_scatter dp"), 1);
    // [C6] pp = 2: each stage sends one way, m = 4 times b s h f32 =
    // 2 x 64 x 64 x 4 = 32,768: 131,072 bytes; and its part of the tied
    // table's gradient to the other stage once, 256 x 64 f32 = 65,536.
    expectNear("C6 send/recv pp", commBytes(c, "send/recv pp"), 131072);
    expectNear("C6 calls", commCalls(c, "send/recv pp"), 4);
    expectNear("C6 tied", commBytes(c, "send/recv pp (tied embedding)"), 65536);
    expectNear("C6 tied calls", commCalls(c, "send/recv pp (tied embedding)"),
               1);
    // The global norm's partial sum over the axes the gradients are
    // sharded over (ZeRO-1: dp, and pp): one f32 over 4 ranks, the ring
    // sends 2 of its 4 (empty or one-element) chunks: 8 bytes in 1 call.
    expectNear("C norm all_reduce dp,pp", commBytes(c, "all_reduce dp,pp"), 8);
    expectNear("C norm calls", commCalls(c, "all_reduce dp,pp"), 1);
    // [F2] full: 2 x (198,400 + 1,536) + 65,536 = 465,408.
    expectNear("C F1 + F2", c.stepFlopsPerToken, 1519872 + 465408);
    // [P1] (2 - 1) / (4 + 2 - 1) = 0.2; [T3] = [T1] x 1/4.
    expectNear("C P1", c.bubbleFraction, 0.2);
    expectNear("C T3", c.step.bubble, c.step.compute / 4);
  }

  // Case C2: pp = 4, 1F1B, b = 4, m = 4. A middle stage sends both ways,
  // 2 x 4 x (4 x 64 x 64 x 4 = 65,536) = 524,288 bytes in 8 calls; an end
  // stage 4 x 65,536 + the tied gradient's 65,536 = 327,680 in 5: the
  // middle one counts. No ZeRO: the norm over pp alone.
  {
    Candidate c = evaluatePlan(model, handRequest(4),
                               makePlan(1, 1, 4, 0, 4, Schedule::OneFOneB), 4);
    expectText("C2 fits", c.reason, "");
    expectNear("C2 send/recv pp", commBytes(c, "send/recv pp"), 524288);
    expectNear("C2 calls", commCalls(c, "send/recv pp"), 8);
    expectNear("C2 tied (a middle stage counts)",
               commBytes(c, "send/recv pp (tied embedding)"), -1);
    expectNear("C2 norm all_reduce pp", commBytes(c, "all_reduce pp"), 8);
  }

  // [P3] dist-pipeline's partition (balanceStages): 4 blocks of forward
  // FLOPs 1 each, the head's 1 after them. pp = 2: blocks 2 + 2 (stage
  // FLOPs 2 and 3: max 3) ties with 3 + 1 (3 and 2); the last stage starts
  // as early as it can, so 2 + 2, loads 2/2.5 = 0.8 and 3/2.5 = 1.2, and
  // [T1] is the slower stage's, 1.2 times the mean's. pp = 3 of 4 equal
  // blocks, nothing around them: 1 + 1 + 2, the last stage the fullest.
  {
    ModelShape weighed = model;
    weighed.blockFlops = {1, 1, 1, 1};
    weighed.afterFlops = 1;
    Candidate c = evaluatePlan(weighed, handRequest(2),
                               makePlan(1, 1, 2, 0, 4, Schedule::GPipe), 4);
    expectText("P3 fits", c.reason, "");
    expectNear("P3 stage 0 load", c.stageLoad.at(0), 0.8);
    expectNear("P3 stage 1 load", c.stageLoad.at(1), 1.2);
    Candidate even = evaluatePlan(model, handRequest(2),
                                  makePlan(1, 1, 2, 0, 4, Schedule::GPipe), 4);
    expectNear("P3 T1", c.step.compute, 1.2 * even.step.compute);
    expectNear("P3 T3", c.step.bubble, 1.2 * even.step.bubble);
    expectNear("P3 blocks on the fullest stage", double(c.memory.layers), 2);
    // Interleaved, v = 2: 4 virtual stages of one block, the head's 1 on
    // the last: chunk loads 1, 1, 1, 2 over their mean 1.25; rank 0 runs
    // chunks 0 and 2 (2 of the mean rank's 2.5), rank 1 chunks 1 and 3.
    Plan chunked = makePlan(1, 1, 2, 0, 4, Schedule::Interleaved);
    chunked.virtualStages = 2;
    Candidate v2 = evaluatePlan(weighed, handRequest(2), chunked, 4);
    expectText("P3 v=2 fits", v2.reason, "");
    expectNear("P3 v=2 chunk 3 load", v2.chunkLoad.at(3), 1.6);
    expectNear("P3 v=2 chunk 0 load", v2.chunkLoad.at(0), 0.8);
    expectNear("P3 v=2 rank 1 load", v2.stageLoad.at(1), 1.2);
    Candidate three = evaluatePlan(model, handRequest(3),
                                   makePlan(1, 1, 3, 0, 4, Schedule::GPipe), 4);
    expectText("P3 pp=3 fits", three.reason, "");
    expectNear("P3 pp=3 fullest stage", double(three.memory.stage), 2);
    expectNear("P3 pp=3 its blocks", double(three.memory.layers), 2);
  }

  // Case D: ZeRO-3 over dp = 4, b = 1, m = 4.
  {
    Candidate c =
        evaluatePlan(model, handRequest(4), makePlan(4, 1, 1, 3, 4), 1);
    expectText("D fits", c.reason, "");
    // chunk ceil(220,544 / 4) = 55,136: params 4 x, grads 4 x, optim 8 x.
    expectNear("D params", c.memory.params, 4.0 * 55136);
    expectNear("D optim", c.memory.optim, 8.0 * 55136);
    // [M5] the largest unit (a layer, 49,984 > the embeddings' 20,480)
    // and the next layer, whole: 4 x 99,968 = 399,872; and while a
    // layer's bucket (4 x 49,984 = 199,936 bytes < 25 MiB) is gathered,
    // its packed chunks (199,936 / 4) and the received packs (199,936):
    // 249,920; 649,792 in all.
    expectNear("M5 gathered", c.memory.zeroGather, 649792);
    // [C4] ZeRO-3: 2 m all_gathers of (4 - 1) x 55,136 x 4 = 661,632:
    // 5,293,056; each micro-batch gathers each of the 4 layers in one
    // bucket (16 tensors, 199,936 bytes) for its forward and again for its
    // backward, and the 4 tensors outside the layers one by one in the
    // forward: 4 x (2 x 4 + 4) = 48 calls. m reduce_scatters: 2,646,528.
    expectNear("C4 zero-3 all_gather", commBytes(c, "all_gather dp"), 5293056);
    expectNear("C4 zero-3 all_gather calls", commCalls(c, "all_gather dp"),
               48);
    expectNear("C4 zero-3 reduce_scatter", commBytes(c, "reduce_scatter dp"),
               2646528);
    // Each micro-batch's gradients (882,176 bytes) are one bucket.
    expectNear("C4 zero-3 reduce_scatter calls",
               commCalls(c, "reduce_scatter dp"), 4);
  }

  // Case D2: ZeRO-2 over dp = 4, m = 4: each micro-batch's gradients
  // reduce-scattered in the backward (m x 661,632 = 2,646,528 in 4 calls),
  // the updated parameters gathered once (661,632 in 1).
  {
    Candidate c =
        evaluatePlan(model, handRequest(4), makePlan(4, 1, 1, 2, 4), 1);
    expectText("D2 fits", c.reason, "");
    expectNear("C4 zero-2 reduce_scatter", commBytes(c, "reduce_scatter dp"),
               2646528);
    expectNear("C4 zero-2 reduce_scatter calls",
               commCalls(c, "reduce_scatter dp"), 4);
    expectNear("C4 zero-2 all_gather", commBytes(c, "all_gather dp"), 661632);
    expectNear("C4 zero-2 all_gather calls", commCalls(c, "all_gather dp"), 1);
  }

  // Every rejection rule, in the order they are checked.
  {
    auto eval = [&](const ModelShape &m, int64_t gpus, Plan p, int64_t b) {
      return evaluatePlan(m, handRequest(gpus), p, b);
    };
    expectReason(
        "tp across nodes", eval(model, 16, makePlan(1, 16, 1, 0, 4), 4),
        "tp across nodes", "tp=16 > 8 GPUs per node (tp stays on NVLink)");
    expectReason("heads", eval(model, 8, makePlan(1, 8, 1, 0, 4), 4),
                 "indivisible: tp does not divide heads",
                 "heads 4 is not divisible by tp=8");
    ModelShape gqa = model;
    gqa.kvHeads = 2;
    expectReason("kv-heads", eval(gqa, 4, makePlan(1, 4, 1, 0, 4), 4),
                 "indivisible: tp does not divide kv-heads",
                 "kv-heads 2 is not divisible by tp=4");
    ModelShape odd = model;
    odd.hidden = 66;
    expectReason("hidden", eval(odd, 4, makePlan(1, 4, 1, 0, 4), 4),
                 "indivisible: tp does not divide hidden",
                 "hidden 66 is not divisible by tp=4");
    ModelShape ffn = model;
    ffn.ffn = 99;
    expectReason("ffn", eval(ffn, 2, makePlan(1, 2, 1, 0, 4), 4),
                 "indivisible: tp does not divide ffn",
                 "ffn 99 is not divisible by tp=2");
    // A vocabulary tp does not divide is padded (triaxc's pad-vocab): 257
    // computes as 258 on tp=2 (one more row of the tied table, 129 a
    // rank), or as 384 with pad-vocab=64 (a multiple of 64 x tp).
    ModelShape vocab = model;
    vocab.vocab = 257;
    vocab.firstSplit = vocab.tiedSplit = 257 * 64;
    Candidate padded = eval(vocab, 2, makePlan(1, 2, 1, 0, 4), 4);
    expectText("vocab 257 on tp=2 fits", padded.reason, "");
    expectNear("vocab 257 on tp=2 params", padded.memory.params,
               4.0 * (4 * 49600 / 2 + 4 * 384 + 258 * 64 / 2 + 4096 + 128));
    expectNear("vocab 257 on tp=2 logits", padded.memory.logits,
               logitsBytes(64, 4, 258, 64, 2, 4));
    PlanRequest wide = handRequest(2);
    wide.padVocab = 64;
    Candidate wider = evaluatePlan(vocab, wide, makePlan(1, 2, 1, 0, 4), 4);
    expectNear("vocab 257 pad-vocab=64 params", wider.memory.params,
               4.0 * (4 * 49600 / 2 + 4 * 384 + 384 * 64 / 2 + 4096 + 128));
    expectNear("vocab 257 pad-vocab=64 logits", wider.memory.logits,
               logitsBytes(64, 4, 384, 64, 2, 4));
    expectReason("layers", eval(model, 5, makePlan(1, 1, 5, 0, 5), 4),
                 "a pipeline stage without a block",
                 "pp=5 stages but 4 blocks: every stage needs at least one "
                 "(dist-pipeline)");
    expectReason("batch", eval(model, 2, makePlan(2, 1, 1, 0, 2), 3),
                 "indivisible: dp x micro-batch does not divide the global "
                 "batch",
                 "global batch 16 is not divisible by dp=2 x micro-batch 3");
    ModelShape seq = model;
    seq.seq = 62;
    expectReason("seq",
                 eval(seq, 4, makePlan(1, 4, 1, 0, 4, Schedule::None, true), 4),
                 "indivisible: tp does not divide seq (sequence parallelism)",
                 "seq 62 is not divisible by tp=4");
    expectReason("zero pp",
                 eval(model, 4, makePlan(2, 1, 2, 2, 4, Schedule::GPipe), 2),
                 "zero-2/3 with pp > 1",
                 "zero=2 with pp=2: gradients and parameters sharded across "
                 "a pipeline's micro-batches (Triax refuses it, as DeepSpeed "
                 "does)");
    expectReason("zero dp", eval(model, 1, makePlan(1, 1, 1, 1, 4), 4),
                 "zero without data parallelism",
                 "zero=1 shards over dp x cp, a group of 1");
    expectReason(
        "sp", eval(model, 1, makePlan(1, 1, 1, 0, 4, Schedule::None, true), 4),
        "sequence parallelism without tp",
        "sequence-parallel needs tp >= 2 (tp=1)");
    Plan carried = makePlan(1, 2, 2, 0, 4, Schedule::OneFOneB, true);
    carried.carryGathered = true;
    expectReason("carry-gathered 1f1b", eval(model, 4, carried, 4),
                 "carry-gathered without zb-h1 and sequence parallelism",
                 "carry-gathered hands ZB-H1's W pass the tensors its B pass "
                 "gathered over tp: it needs schedule=zb-h1 and "
                 "sequence-parallel");
    expectReason(
        "1f1b", eval(model, 2, makePlan(1, 1, 2, 0, 1, Schedule::OneFOneB), 16),
        "1f1b with fewer micro-batches than stages",
        "1f1b needs m >= pp: m=1 < pp=2");
    Plan interleaved = makePlan(1, 1, 2, 0, 3, Schedule::Interleaved);
    interleaved.virtualStages = 2;
    expectReason("interleaved groups", eval(model, 2, interleaved, 16),
                 "interleaved with micro-batches not a multiple of pp",
                 "interleaved runs the micro-batches in groups of pp: m=3 is "
                 "not a multiple of pp=2");
    interleaved.microBatches = 4;
    interleaved.virtualStages = 4;
    interleaved.virtualStages = 3;
    expectReason("interleaved layers", eval(model, 2, interleaved, 16),
                 "a pipeline stage without a block",
                 "pp x virtual-stages = 2 x 3 = 6 stages but 4 blocks: every "
                 "stage needs at least one (dist-pipeline)");
    PlanRequest small = handRequest(1);
    small.hardware.hbmBytes = 1e6;
    Candidate oom = evaluatePlan(model, small, makePlan(1, 1, 1, 0, 4), 4);
    // Peak: 16 x 220,544 + 4,227,072 + 458,752 = 8,214,528 bytes =
    // 0.0077 GiB; over by 7,214,528 = 0.0067 GiB.
    expectReason("out of memory", oom, "out of memory",
                 "peak 0.01 GiB on stage 0 > 0.00 GiB HBM, over by 0.01 GiB");
    expectNear("out of memory by", oom.overBytes, 8214528 - 1e6);
  }

  // [S1] the simulated schedule, forward 1 s, backward 2 s, free sends.
  for (Schedule s : {Schedule::GPipe, Schedule::OneFOneB}) {
    std::string name = s == Schedule::GPipe ? "gpipe" : "1f1b";
    ScheduleTrace t = simulateSchedule(4, 8, s, 1, 2, 0, {});
    // Flush (m + p - 1)(f + b) = 11 x 3 = 33; every stage busy 8 x 3 = 24,
    // idle 9: 9/33 = 3/11 = (p - 1)/(m + p - 1).
    expectNear("S1 " + name + " flush", t.flush, 33);
    for (int64_t st = 0; st < 4; ++st)
      expectNear("S1 " + name + " bubble stage " + std::to_string(st),
                 t.bubble[st], 3.0 / 11.0);
  }
  {
    // 1F1B's order on stage 0 of pp = 4, m = 8: 3 warm-up forwards,
    // then F(3+j) B(j), then B5 B6 B7 (dist-pipeline's order).
    ScheduleTrace t = simulateSchedule(4, 8, Schedule::OneFOneB, 1, 2, 0, {});
    std::string order;
    for (const TraceEvent &e : t.events)
      if (e.stage == 0)
        order += (order.empty() ? "" : " ") + e.name;
    expectText("S1 1f1b stage 0 order", order,
               "F0 F1 F2 F3 B0 F4 B1 F5 B2 F6 B3 F7 B4 B5 B6 B7");
    // Stage 3 starts F0 at 3 (after three forwards upstream).
    for (const TraceEvent &e : t.events)
      if (e.stage == 3 && e.name == "F0")
        expectNear("S1 stage 3 F0 start", e.start, 3);
  }
  {
    // pp = 2, m = 2, GPipe, sends of 0.5 s, a 4 s all_reduce after the
    // flush: F0 [0,1] F1 [1,2] on stage 0; stage 1 F0 [1.5,2.5] F1
    // [2.5,3.5], B0 [3.5,5.5] B1 [5.5,7.5]; stage 0 B0 [6,8] B1 [8,10];
    // flush 10; stage 0's all_reduce ends at 14, stage 1's at 11.5.
    ScheduleTrace t = simulateSchedule(2, 2, Schedule::GPipe, 1, 2, 0.5,
                                       {{"all_reduce dp", 4}});
    expectNear("S1 sends flush", t.flush, 10);
    expectNear("S1 sends step", t.makespan, 14);
    // Stage 0 busy 6 of 10.
    expectNear("S1 sends bubble stage 0", t.bubble[0], 0.4);
    // [P3] loads 1 and 3, pp = 2, m = 1, GPipe, free sends: stage 0 F0
    // [0,1]; stage 1 F0 [1,4], B0 [4,10]; stage 0 B0 [10,12]. Flush 12;
    // stage 0 busy 3 of 12, stage 1 9.
    ScheduleTrace loaded =
        simulateSchedule(2, 1, Schedule::GPipe, 1, 2, 0, {}, {}, 1, {1.0, 3.0});
    expectNear("S1 loads flush", loaded.flush, 12);
    expectNear("S1 loads bubble stage 0", loaded.bubble[0], 0.75);
    expectNear("S1 loads bubble stage 1", loaded.bubble[1], 0.25);
    // No pipeline: no bubble.
    ScheduleTrace one = simulateSchedule(1, 4, Schedule::None, 1, 2, 0, {});
    expectNear("S1 no pipeline bubble", one.bubble[0], 0);
  }
  {
    // Interleaved, pp = 4, m = 8, v = 2 (a chunk: forward 0.5, backward
    // 1): flush (v m + p - 1)(f + b) / v = 19 x 1.5 = 28.5, every stage
    // busy 24, idle 4.5: 3/19 = (p - 1)/(v m + p - 1), the bubble of 1F1B
    // (3/11) divided by about v.
    ScheduleTrace t =
        simulateSchedule(4, 8, Schedule::Interleaved, 1, 2, 0, {}, {}, 2);
    expectNear("S1 interleaved flush", t.flush, 28.5);
    for (int64_t st = 0; st < 4; ++st)
      expectNear("S1 interleaved bubble stage " + std::to_string(st),
                 t.bubble[st], 3.0 / 19.0);
    expectNear("P1 1f1b", bubbleFraction(4, 8), 3.0 / 11.0);
    expectNear("P1 interleaved", bubbleFraction(4, 8, 2), 3.0 / 19.0);
    // Megatron-LM's order on stage 0: 2 (p - 1) + (v - 1) p = 10 warm-up
    // forwards through the chunks in groups of p micro-batches, then one
    // forward one backward (the backwards through the chunks in reverse).
    std::string order;
    for (const TraceEvent &e : t.events)
      if (e.stage == 0)
        order += (order.empty() ? "" : " ") + e.name;
    expectText("S1 interleaved stage 0 order", order,
               "F0.0 F1.0 F2.0 F3.0 F0.1 F1.1 F2.1 F3.1 F4.0 F5.0 F6.0 B0.1 "
               "F7.0 B1.1 F4.1 B2.1 F5.1 B3.1 F6.1 B0.0 F7.1 B1.0 B2.0 B3.0 "
               "B4.1 B5.1 B6.1 B7.1 B4.0 B5.0 B6.0 B7.0");
    // [P2] stage 0 holds 11 chunks' activations at its peak (after the
    // first steady forward), 5.5 stages' worth: 1 + (p - 1)/(v p) = 1.375
    // times 1F1B's 4; the last stage 2 (p - 1 - 3) + 4 + 1 = 5 chunks.
    expectNear("P2 interleaved stage 0",
               inFlightMicroBatches(Schedule::Interleaved, 4, 8, 0, 2), 5.5);
    expectNear("P2 interleaved stage 3",
               inFlightMicroBatches(Schedule::Interleaved, 4, 8, 3, 2), 2.5);
    expectNear("P2 1f1b stage 0",
               inFlightMicroBatches(Schedule::OneFOneB, 4, 8, 0), 4);
  }
  {
    // ZB-H1, pp = 4, m = 8, the backward (2) split into B 1 and W 1: the
    // paper's bubble (p - 1)(T_F + T_B - T_W) = 3 instead of 1F1B's
    // (p - 1)(T_F + T_B + T_W) = 9: flush 8 x 3 + 3 = 27, every stage busy
    // 24, idle 3/27 = 1/9 = (p - 1)/(3m + p - 1), below 1F1B's 3/11.
    ScheduleTrace t =
        simulateSchedule(4, 8, Schedule::ZeroBubbleH1, 1, 2, 0, {});
    expectNear("S1 zb-h1 flush", t.flush, 27);
    for (int64_t st = 0; st < 4; ++st)
      expectNear("S1 zb-h1 bubble stage " + std::to_string(st), t.bubble[st],
                 1.0 / 9.0);
    expectNear("P1 zb-h1", bubbleFraction(4, 8, 1, Schedule::ZeroBubbleH1),
               1.0 / 9.0);
    // The last stage defers 3 W passes; stage 0 none.
    std::string last, first;
    for (const TraceEvent &e : t.events) {
      if (e.stage == 3)
        last += (last.empty() ? "" : " ") + e.name;
      if (e.stage == 0)
        first += (first.empty() ? "" : " ") + e.name;
    }
    expectText("S1 zb-h1 stage 3 order", last,
               "F0 B0 F1 B1 F2 B2 F3 B3 W0 F4 B4 W1 F5 B5 W2 F6 B6 W3 F7 B7 "
               "W4 W5 W6 W7");
    expectText("S1 zb-h1 stage 0 order", first,
               "F0 F1 F2 F3 B0 W0 F4 B1 W1 F5 B2 W2 F6 B3 W3 F7 B4 W4 B5 W5 "
               "B6 W6 B7 W7");
    // [P2] every stage holds pp = 4 micro-batches at its peak (1F1B's stage
    // 0 peak), the last one too.
    for (int64_t st = 0; st < 4; ++st)
      expectNear("P2 zb-h1 stage " + std::to_string(st),
                 inFlightMicroBatches(Schedule::ZeroBubbleH1, 4, 8, st), 4);
  }
  {
    // [P2]'s closed forms against the peak of the orders dist-pipeline
    // emits (mlir::dist::peakInFlight: a forward saves a chunk's
    // activations, its backward or W pass frees them), every stage.
    int64_t checked = 0, differ = 0;
    for (Schedule s : {Schedule::GPipe, Schedule::OneFOneB,
                       Schedule::Interleaved, Schedule::ZeroBubbleH1})
      for (int64_t p : {2, 4, 8})
        for (int64_t m : {4, 8, 16})
          for (int64_t v : {1, 2, 3}) {
            mlir::dist::PipelineSchedule kind = pipelineScheduleOf(s);
            if (!mlir::dist::scheduleError(kind, p, v, m).empty())
              continue;
            for (int64_t st = 0; st < p; ++st) {
              double peak = double(mlir::dist::peakInFlight(
                                mlir::dist::pipelineOrder(kind, p, v, m, st))) /
                            double(v);
              ++checked;
              if (std::abs(peak - inFlightMicroBatches(s, p, m, st, v)) > 0)
                ++differ;
            }
          }
    expectNear("P2 closed forms = the orders' peaks (stages checked)",
               double(checked), 178);
    expectNear("P2 closed forms = the orders' peaks (differ)", double(differ),
               0);
  }
  {
    // [P2] in blocks: interleaved's unequal chunks (dist-pipeline balances
    // them by FLOPs: gpt2's 12 blocks on pp = 4, v = 2 are 1,1,1,2 | 2,2,2,1),
    // blocksInFlight at m capped to 2 pp against the order's weighted peak
    // at the full m, every stage; equal chunks give the closed form.
    int64_t checked = 0, differ = 0;
    for (int64_t p : {2, 3, 4, 6})
      for (int64_t v : {2, 3})
        for (int64_t m : {p, 2 * p, 3 * p, 5 * p})
          for (int64_t shift = 0; shift < 3; ++shift) {
            auto kind = pipelineScheduleOf(Schedule::Interleaved);
            for (int64_t st = 0; st < p; ++st) {
              llvm::SmallVector<int64_t> chunks;
              for (int64_t c = 0; c < v; ++c)
                chunks.push_back(1 + (c * p + st + shift) % 3);
              int64_t direct = mlir::dist::peakInFlight(
                  mlir::dist::pipelineOrder(kind, p, v, m, st), chunks);
              ++checked;
              if (double(direct) !=
                  blocksInFlight(Schedule::Interleaved, p, m, st, v, chunks))
                ++differ;
            }
          }
    expectNear("P2 blocks capped at m = 2 pp = the order's (stages checked)",
               double(checked), 360);
    expectNear("P2 blocks capped at m = 2 pp = the order's (differ)",
               double(differ), 0);
    expectNear("P2 blocks, equal chunks: 11 chunks of 2 blocks on stage 0",
               blocksInFlight(Schedule::Interleaved, 4, 8, 0, 2, {2, 2}), 22);
    expectNear("P2 blocks, 1F1B: 3 blocks x 4 in flight on stage 0",
               blocksInFlight(Schedule::OneFOneB, 4, 8, 0, 1, {3}), 12);
  }
  {
    // [P4]: the held receives of the programs dist-pipeline emits, at the
    // full m, against heldReceives (simulated at min(m, 2 pp)), every
    // stage; and its figures on interleaved's ranks.
    int64_t checked = 0, differ = 0, zbHeld = 0;
    for (Schedule s : {Schedule::Interleaved, Schedule::ZeroBubbleH1})
      for (int64_t p : {2, 3, 4, 6, 8, 12})
        for (int64_t m : {p, 2 * p, 3 * p, 5 * p, 5 * p + 1})
          for (int64_t v : {1, 2, 3}) {
            mlir::dist::PipelineSchedule kind = pipelineScheduleOf(s);
            if (!mlir::dist::scheduleError(kind, p, v, m).empty())
              continue;
            auto programs = mlir::dist::pipelinePrograms(kind, p, v, m);
            for (int64_t st = 0; st < p; ++st) {
              int64_t direct = mlir::dist::peakHeldReceives(programs[st]);
              ++checked;
              if (s == Schedule::ZeroBubbleH1)
                zbHeld += direct;
              if (direct != heldReceives(s, p, m, st, v))
                ++differ;
            }
          }
    expectNear("P4 capped at m = 2 pp = the programs' (stages checked)",
               double(checked), 455);
    expectNear("P4 capped at m = 2 pp = the programs' (differ)", double(differ),
               0);
    auto ranks = [](Schedule s, int64_t p, int64_t m, int64_t v) {
      std::string text;
      for (int64_t st = 0; st < p; ++st)
        text += std::to_string(heldReceives(s, p, m, st, v)) + " ";
      return text;
    };
    expectText("P4 interleaved p=8 v=2 m=16",
               ranks(Schedule::Interleaved, 8, 16, 2), "1 2 2 2 2 2 2 3 ");
    // (ZB-H1 receives ahead only before its peak: in its warm-up, a stage
    // receives its next forward's input before its first B pass.)
    expectNear("P4 zb-h1 holds none at its peak", double(zbHeld), 0);
    expectNear("P4 interleaved p=32 last stage",
               double(heldReceives(Schedule::Interleaved, 32, 64, 31, 2)), 10);
    expectNear("P4 1f1b", double(heldReceives(Schedule::OneFOneB, 8, 16, 7)),
               0);
  }

  // The request.
  {
    auto err = [](const char *text) {
      auto r = parsePlanRequest(text);
      return r ? std::string("(no error)") : toString(r.takeError());
    };
    expectText("spec unknown key", err("gpus=8,gpu=h100-80g,gpu-count=8"),
               "unknown key 'gpu-count' (keys: gpus, gpu, gpus-per-node, "
               "global-batch, micro-batch, microbatches, dp, tp, pp, zero, "
               "schedule, virtual-stages, sequence-parallel, carry-gathered, "
               "recompute, precision, pad-vocab, efficiency, headroom, top)");
    expectText("spec interleaved without v",
               err("gpus=8,gpu=h100-80g,schedule=interleaved"),
               "schedule=interleaved and virtual-stages=v (>= 2) go together");
    expectText("spec v without interleaved",
               err("gpus=8,gpu=h100-80g,virtual-stages=2"),
               "schedule=interleaved and virtual-stages=v (>= 2) go together");
    expectText("spec v=1", err("gpus=8,gpu=h100-80g,virtual-stages=1"),
               "virtual-stages=1: expected an integer >= 2");
    expectText("spec carry-gathered",
               err("gpus=8,gpu=h100-80g,carry-gathered=yes"),
               "carry-gathered=yes: expected on or off");
    expectText("spec gpus=0", err("gpus=0,gpu=h100-80g"),
               "gpus=0: expected an integer >= 1");
    expectText("spec tp", err("gpus=8,gpu=h100-80g,tp=3"),
               "tp=3 does not divide gpus=8");
    auto ok = parsePlanRequest("gpus=64,gpu=a100-40g,gpus-per-node=4,"
                               "global-batch=512,recompute=full,zero=1");
    if (!ok) {
      llvm::outs() << "FAIL spec: " << toString(ok.takeError()) << "\n";
      ++checks, ++failed;
    } else {
      expectNear("spec gpus", double(ok->gpus), 64);
      expectNear("spec gpus-per-node", double(ok->hardware.gpusPerNode), 4);
      expectNear("spec HBM", ok->hardware.hbmBytes, 40e9);
      expectNear("spec global batch", double(ok->globalBatch), 512);
      expectNear("spec zero", double(*ok->zero), 1);
    }
  }

  llvm::outs() << checks << " checks, " << failed << " failed\n";
  return failed ? 1 : 0;
}
