//===- cost-model-test.cpp - The cost model's formulas by hand
//-------------===//
//
// Every formula of docs/cost-model.md against values computed by hand in
// the comments. Prints one line per check and "N checks, N failed".
//
//===----------------------------------------------------------------------===//

#include "triax/CostModel/CostModel.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>

using namespace triax::cost;

namespace {
int checks = 0, failed = 0;

void expectEq(const char *what, int64_t got, int64_t want) {
  ++checks;
  bool ok = got == want;
  failed += !ok;
  llvm::outs() << (ok ? "ok   " : "FAIL ") << what << ": " << got;
  if (!ok)
    llvm::outs() << " (expected " << want << ")";
  llvm::outs() << "\n";
}

void expectNear(const char *what, double got, double want) {
  ++checks;
  bool ok = std::fabs(got - want) <= 1e-12 * std::max(1.0, std::fabs(want));
  failed += !ok;
  llvm::outs() << (ok ? "ok   " : "FAIL ") << what << ": " << got;
  if (!ok)
    llvm::outs() << " (expected " << want << ")";
  llvm::outs() << "\n";
}

void expectState(const char *what, StateBytes got, int64_t p, int64_t g,
                 int64_t o) {
  std::string w(what);
  expectEq((w + " params").c_str(), got.params, p);
  expectEq((w + " grads").c_str(), got.grads, g);
  expectEq((w + " optim").c_str(), got.optim, o);
}

void expectError(const char *what, const char *json, llvm::StringRef want) {
  ++checks;
  auto hw = parseHardwareJSON(json);
  std::string msg = hw ? std::string("(no error)") : toString(hw.takeError());
  bool ok = llvm::StringRef(msg).contains(want);
  failed += !ok;
  llvm::outs() << (ok ? "ok   " : "FAIL ") << what << ": " << msg << "\n";
}
} // namespace

int main() {
  // [M0] bytes per parameter.
  expectState("M0 fp32", bytesPerParam(DTypeMode::FP32), 4, 4, 8);
  expectState("M0 mixed", bytesPerParam(DTypeMode::Mixed), 2, 2, 12);

  // [M4] ceil(n/g): 10 over 4 is 3 (padded to 12), 8 over 4 is 2.
  expectEq("M4 chunk 10/4", zeroChunk(10, 4), 3);
  expectEq("M4 chunk 8/4", zeroChunk(8, 4), 2);
  expectEq("M4 chunk 5/1", zeroChunk(5, 1), 5);

  // [M1]-[M3] two tensors of 10 and 8 elements (18), g = 4: chunks 3 + 2 = 5.
  int64_t two[] = {10, 8};
  // stage 0: 4 x 18 = 72, 72, 8 x 18 = 144.
  expectState("M1-3 stage 0", stateBytesPerRank(two, 4, 0, DTypeMode::FP32), 72,
              72, 144);
  // stage 1: optimizer 8 x 5 = 40; parameters padded to 4 chunks:
  // 4 x (12 + 8) = 80.
  expectState("M1-3 stage 1", stateBytesPerRank(two, 4, 1, DTypeMode::FP32), 80,
              72, 40);
  // stage 2: gradients 4 x 5 = 20.
  expectState("M1-3 stage 2", stateBytesPerRank(two, 4, 2, DTypeMode::FP32), 80,
              20, 40);
  // stage 3: parameters 4 x 5 = 20.
  expectState("M1-3 stage 3", stateBytesPerRank(two, 4, 3, DTypeMode::FP32), 20,
              20, 40);
  // mixed, stage 3: 2 x 5, 2 x 5, 12 x 5.
  expectState("M1-3 mixed stage 3",
              stateBytesPerRank(two, 4, 3, DTypeMode::Mixed), 10, 10, 60);
  // tiny (120,576 parameters) on one rank: 16 bytes each = 1,929,216.
  int64_t tiny[] = {120576};
  expectEq("M1-3 tiny one rank",
           stateBytesPerRank(tiny, 1, 0, DTypeMode::FP32).total(), 1929216);
  // dp = 2, ZeRO-1: 4 + 4 + 8/2 = 12 bytes each = 1,446,912.
  expectEq("M1-3 tiny dp=2 zero-1",
           stateBytesPerRank(tiny, 2, 1, DTypeMode::FP32).total(), 1446912);

  // [A8] a GPT-2 layer of tiny (h = 64, 4 heads, GELU MLP of 256, two
  // LayerNorms), s = 64, b = 8 (512 tokens), f32, against the IR's
  // liveness per layer ([A9] of 2 blocks minus 1, plan-activations.test):
  // 4h + (2h + 2h + 2 x 256)/t elements and 4 + 4/t f32 statistics a token.
  {
    LayerShape gpt{64, 4, 4, 256, 2, 2, 4};
    auto kept = [&](int64_t t, bool sp, Recompute r, int64_t cp = 1,
                    int64_t bytes = 4) {
      return keptBytesPerLayer(gpt, 64, 8, t, sp, r, cp, bytes);
    };
    // 512 x (256 + 768 + 8) x 4.
    expectNear("A8 one rank", kept(1, false, Recompute::None), 2113536);
    // 512 x (256 + 384 + 4 + 2) x 4.
    expectNear("A8 tp=2", kept(2, false, Recompute::None), 1323008);
    // The norms' inputs and outputs split too (the backward gathers the
    // outputs again): 512 x ((256 + 768)/2 + 2 + 2) x 4.
    expectNear("A8 tp=2 sp", kept(2, true, Recompute::None), 1056768);
    // The attention's output and log-sum-exps recomputed: 512 x (256 +
    // 704 + 4) x 4.
    expectNear("A8 selective", kept(1, false, Recompute::Selective), 1974272);
    // The layer's input: 512 x 64 x 4; split over tp with SP.
    expectNear("A8 full", kept(1, false, Recompute::Full), 131072);
    expectNear("A8 full tp=2 sp", kept(2, true, Recompute::Full), 65536);
    // bf16: 512 x (1,024 x 2 + 8 x 4).
    expectNear("A8 bf16", kept(1, false, Recompute::None, 1, 2), 1064960);
    // cp = 2: half the tokens.
    expectNear("A8 cp=2", kept(1, false, Recompute::None, 2), 1056768);
    std::string label = keptFormulaLabel(gpt, 2, false, Recompute::None);
    expectEq(("A8 label " + label).c_str(), label == "[A8] sbh(4 + 12/t)", 1);
  }

  // [C1] ring all_reduce. n = 8 f32 (S = 32) over 2: 2(1/2) 32 = 32.
  expectEq("C1 all_reduce 8 over 2", allReduceBytes(8, 4, 2), 32);
  // over 4: 2(3/4) 32 = 48.
  expectEq("C1 all_reduce 8 over 4", allReduceBytes(8, 4, 4), 48);
  // tiny's 8x64x64 f32 activation over tp = 2: 131,072.
  expectEq("C1 all_reduce activation", allReduceBytes(8 * 64 * 64, 4, 2),
           131072);
  // One f32 over 4: chunks of 0, 0, 0, 1 elements; rank 0 sends chunk 3
  // in both phases (8 bytes), rank 2 only in one (4 bytes).
  expectEq("C1 all_reduce scalar over 4, position 0", allReduceBytes(1, 4, 4),
           8);
  expectEq("C1 all_reduce scalar over 4, position 2",
           allReduceBytes(1, 4, 4, 2), 4);
  expectEq("C1 all_reduce over 1", allReduceBytes(8, 4, 1), 0);
  // [C2] (p-1) blocks: 8192 f32 over 2 = 32,768; 3 f32 over 4 = 36.
  expectEq("C2 reduce_scatter 8192 over 2", reduceScatterBytes(8192, 4, 2),
           32768);
  expectEq("C2 all_gather 3 over 4", allGatherBytes(3, 4, 4), 36);

  // [P1] (p-1)/(m+p-1): p = 4, m = 8: 3/11; p = 2, m = 1: 1/2.
  expectNear("P1 bubble p=4 m=8", bubbleFraction(4, 8), 3.0 / 11.0);
  expectNear("P1 bubble p=2 m=1", bubbleFraction(2, 1), 0.5);
  expectNear("P1 bubble p=1", bubbleFraction(1, 8), 0);

  // [F1] tiny: 6 x 120576 + 12 x 2 x 64 x 64 = 723,456 + 98,304 = 821,760.
  expectNear("F1 tiny", flopsPerToken(120576, 2, 64, 64), 821760);

  // [T1]-[T5] peak 1e15, NVLink 1e11, inter-node 1e10, 8 per node, 1 us.
  Hardware hw{"test", 80e9, 1e15, 3e12, 1e11, 8, 1e10, 1e-6};
  Plan plan;
  plan.pp = 2;
  plan.microBatches = 4;
  // Intra-node 1e10 bytes in 10 calls: 0.1 + 1e-5 s; inter-node 1e10: 1 s.
  CommLoad loads[] = {{10000000000, 10, 8, 8}, {10000000000, 0, 2, 16}};
  // 1e6 tokens x 1e9 FLOPs over 8 ranks at 50%: 1e15 / 8 / 5e14 = 0.25 s;
  // bubble 0.25 x (2-1)/4 = 0.0625 s.
  StepTime t = predictStepTime(hw, plan, 1e9, 1e6, 8, loads, 0.5);
  expectNear("T1 compute", t.compute, 0.25);
  expectNear("T2 communication", t.comm, 1.10001);
  expectNear("T3 bubble", t.bubble, 0.0625);
  expectNear("T4 total", t.total, 1.41251);
  expectNear("T4 tokens/s", t.tokensPerSecond, 1e6 / 1.41251);
  // MFU = 1e15 / (1.41251 x 8 x 1e15).
  expectNear("T5 MFU", t.mfu, 1.0 / (1.41251 * 8));

  // Hardware: the built-ins and the JSON format.
  const Hardware *h100 = findBuiltinHardware("h100-80g");
  expectNear("h100-80g bf16 FLOP/s", h100 ? h100->peakFlops : 0, 989e12);
  const Hardware *h200 = findBuiltinHardware("h200-141g");
  expectNear("h200-141g HBM bytes", h200 ? h200->hbmBytes : 0, 141e9);
  expectNear("h200-141g GEMM efficiency", h200 ? h200->gemmEfficiency : 0,
             0.59);
  expectEq("built-ins", int64_t(builtinHardware().size()), 4);
  auto custom = parseHardwareJSON(
      R"({"name": "mi300x", "hbm_gb": 192, "bf16_tflops": 1307,
          "hbm_tb_s": 5.3, "nvlink_gb_s": 896, "gpus_per_node": 8,
          "internode_gb_s": 50, "latency_us": 5})");
  if (!custom) {
    llvm::outs() << "FAIL json: " << toString(custom.takeError()) << "\n";
    ++checks, ++failed;
  } else {
    expectNear("json bf16 FLOP/s", custom->peakFlops, 1307e12);
    expectNear("json HBM bandwidth", custom->hbmBandwidth, 5.3e12);
    expectNear("json latency", custom->latency, 5e-6);
    expectNear("json GEMM efficiency (none)", custom->gemmEfficiency, 0);
  }
  auto measured = parseHardwareJSON(
      R"({"name": "x", "hbm_gb": 1, "bf16_tflops": 1, "hbm_tb_s": 1,
          "nvlink_gb_s": 1, "gpus_per_node": 8, "internode_gb_s": 1,
          "latency_us": 0, "gemm_efficiency": 0.7})");
  expectNear("json GEMM efficiency", measured ? measured->gemmEfficiency : 0,
             0.7);
  if (!measured)
    llvm::consumeError(measured.takeError());
  expectError("json missing field", R"({"name": "x", "hbm_gb": 1})",
              "missing field 'bf16_tflops'");
  expectError("json unknown field",
              R"({"name": "x", "hbm_gb": 1, "tflops": 2})",
              "unknown field 'tflops'");
  expectError("json negative",
              R"({"name": "x", "hbm_gb": -1, "bf16_tflops": 1,
                  "hbm_tb_s": 1, "nvlink_gb_s": 1, "gpus_per_node": 8,
                  "internode_gb_s": 1, "latency_us": 0})",
              "field 'hbm_gb' must be positive");
  expectError("json syntax", "{", "hardware JSON:");
  expectError("json GEMM efficiency above 1",
              R"({"name": "x", "hbm_gb": 1, "bf16_tflops": 1,
                  "hbm_tb_s": 1, "nvlink_gb_s": 1, "gpus_per_node": 8,
                  "internode_gb_s": 1, "latency_us": 0,
                  "gemm_efficiency": 1.5})",
              "field 'gemm_efficiency' must be a number in (0, 1]");

  llvm::outs() << checks << " checks, " << failed << " failed\n";
  return failed ? 1 : 0;
}
