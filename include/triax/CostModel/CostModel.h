//===- CostModel.h - Memory, communication and time formulas ----*- C++ -*-===//
//
// The first piece of Triax's cost model (issue 6): hardware descriptions,
// the per-rank memory and per-step communication formulas, and the facts a
// parallelized module states about itself (per-rank parameter elements,
// bytes each collective moves). docs/cost-model.md labels every formula;
// the labels in comments here ([M1], [C1], ...) are the same.
//
//===----------------------------------------------------------------------===//

#ifndef TRIAX_COSTMODEL_COSTMODEL_H
#define TRIAX_COSTMODEL_COSTMODEL_H

#include "triax/Dialect/Dist/IR/MeshShape.h"
#include "triax/Dialect/Dist/Transforms/PipelineSchedule.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

namespace llvm {
class raw_ostream;
} // namespace llvm

namespace mlir {
class ModuleOp;
class Operation;
} // namespace mlir

namespace triax::cost {

//===----------------------------------------------------------------------===//
// Hardware
//===----------------------------------------------------------------------===//

/// One accelerator and its interconnect, the datasheet figures (bandwidths
/// per GPU in bytes per second as the vendor states them: NVLink's is the
/// sum of both directions); docs/cost-model.md cites the sources.
struct Hardware {
  std::string name;
  double hbmBytes = 0;           // HBM capacity
  double peakFlops = 0;          // dense bf16 FLOP/s (tensor cores)
  double hbmBandwidth = 0;       // bytes/s
  double nvlinkBandwidth = 0;    // bytes/s per GPU inside a node
  int64_t gpusPerNode = 0;       // GPUs sharing one NVLink domain
  double interNodeBandwidth = 0; // bytes/s per GPU between nodes
  double latency = 0;            // seconds per collective call (alpha)
  /// FP32 FLOP/s without tensor cores (CUDA cores: what a generated kernel
  /// of scalar loops reaches at best); 0 when unknown (then peakFlops).
  double fp32Flops = 0;
  /// The fraction of peakFlops the vendor GEMM library was measured to
  /// reach on a transformer's bf16 GEMMs (the kernel report's step time at
  /// that efficiency, beside its roofline); 0 when not measured.
  double gemmEfficiency = 0;
};

/// a100-40g, a100-80g, h100-80g, h200-141g.
llvm::ArrayRef<Hardware> builtinHardware();
/// The built-in named `name`, or null.
const Hardware *findBuiltinHardware(llvm::StringRef name);
/// Parses a JSON hardware description (docs/cost-model.md has the format):
/// every field required, positive, no unknown keys.
llvm::Expected<Hardware> parseHardwareJSON(llvm::StringRef text);
/// A built-in name, or the path of a JSON file.
llvm::Expected<Hardware> loadHardware(llvm::StringRef nameOrPath);

//===----------------------------------------------------------------------===//
// Plan
//===----------------------------------------------------------------------===//

enum class DTypeMode { FP32, Mixed };
/// A plan's pipeline schedule: one of dist-pipeline's, or none without a
/// pipeline.
enum class Schedule { None, GPipe, OneFOneB, Interleaved, ZeroBubbleH1 };
/// dist-pipeline's schedule `s` is (None: 1f1b, whose one stage runs F(j)
/// B(j) as no pipeline does), and back.
mlir::dist::PipelineSchedule pipelineScheduleOf(Schedule s);
Schedule scheduleOf(mlir::dist::PipelineSchedule s);
enum class Recompute { None, Selective, Full };

/// The field of `role`'s axis in a plan, or in a planner request (whose
/// fields have the same names, each optional): the one place a role of the
/// axis-role table meets the cost model's fields. nullptr for a role the
/// cost model does not model yet (the planner does not search it).
template <typename PlanOrRequest>
auto *axisField(PlanOrRequest &p, trx_axis_role role) {
  switch (role) {
  case TRX_AXIS_DATA:
    return &p.dp;
  case TRX_AXIS_PIPELINE:
    return &p.pp;
  case TRX_AXIS_CONTEXT:
    return &p.cp;
  case TRX_AXIS_TENSOR:
    return &p.tp;
  case TRX_AXIS_EXPERT:
    return &p.ep;
  default:
    return decltype(&p.dp)(nullptr);
  }
}

struct Plan {
  /// The mesh: the sizes of the axes by role (the formulas are each
  /// role's). axisField() is where a role of the axis-role table meets its
  /// field.
  int64_t dp = 1, tp = 1, pp = 1;
  /// Context parallelism (the cp axis): each rank holds seq / cp tokens.
  int64_t cp = 1;
  /// Expert parallelism (the ep axis): each rank holds E / ep of every MoE
  /// layer's experts and trains on its own sequences (data ranks: dp x ep).
  int64_t ep = 1;
  int zeroStage = 0;
  int64_t microBatches = 1; // per rank per optimizer step
  Schedule schedule = Schedule::None;
  /// Model chunks per pipeline rank (the interleaved schedule's virtual
  /// stages; 1 otherwise).
  int64_t virtualStages = 1;
  bool sequenceParallel = false;
  /// ZB-H1 with sequence parallelism: the B pass hands the W pass the
  /// tensors it gathered whole (dist-pipeline's carry-gathered) instead of
  /// W gathering them again ([A12]).
  bool carryGathered = false;
  DTypeMode dtype = DTypeMode::FP32;
  Recompute recompute = Recompute::None;

  /// The plan's mesh, every modelled axis in the table's order (cp and ep
  /// only when > 1: a mesh without them is the same program).
  mlir::dist::MeshShape mesh() const;
};

//===----------------------------------------------------------------------===//
// Memory per rank
//===----------------------------------------------------------------------===//

struct StateBytes {
  int64_t params = 0, grads = 0, optim = 0;
  int64_t total() const { return params + grads + optim; }
};

/// [M0] Bytes of parameter, gradient and optimizer state per parameter on
/// one rank: fp32 AdamW 4 + 4 + 8 (two f32 moments); mixed precision
/// 2 + 2 + 12 (bf16 parameter and gradient, f32 master copy and moments).
StateBytes bytesPerParam(DTypeMode mode);

/// [M4] ZeRO's flat chunk of a tensor of `numel` elements over a group of
/// g: ceil(numel / g) (the tensor is padded to g chunks).
int64_t zeroChunk(int64_t numel, int64_t g);

/// [M1]-[M3] The training state per rank of tensors with these per-rank
/// (after tensor parallelism) element counts, ZeRO stage `stage` over a
/// group of g (stage 0: no sharding). Stage 1 shards the optimizer state,
/// 2 also the gradients, 3 also the parameters, each as zeroChunk per
/// tensor; under stages 1 and 2 a parameter is held padded to g chunks.
StateBytes stateBytesPerRank(llvm::ArrayRef<int64_t> tensorElems, int64_t g,
                             int stage, DTypeMode mode);

/// What one transformer layer is made of, as [A8] counts what it keeps
/// (readModelShape reads it off the model's IR).
struct LayerShape {
  int64_t hidden = 0, heads = 0, kvHeads = 0, ffn = 0;
  /// The MLP's tensors kept per token, in units of ffn: 2 for a GELU MLP
  /// (the product and its activation), 4 for SwiGLU (two products, the
  /// SiLU and their product); 0 where the layer's MLP is a MoE's ([A7]).
  int64_t mlpTensors = 2;
  /// The norms of a layer (their inputs and outputs are the h-wide tensors
  /// tensor parallelism does not split), and the f32 statistics they keep
  /// per token together (LayerNorm 2: mean and rstd; RMSNorm 1).
  int64_t norms = 2, normStats = 4;
  /// Whether the linears add biases (GPT-2's; LLaMA's do not).
  bool biases = false;
};

/// A layer's shape, read off the first forward `triax.block` of `model` (a
/// `triax.model`; the planner reads it before parallelization, the report
/// after: the blocks of a transformer are alike): its norms and their
/// statistics (CostOpInterface::describeModel), and the MLP's tensors, 2 per
/// linear as wide as `ffn` (each linear's whole-model width, its weight
/// parameter's; `ffn` 0: the block's widest linear). Where ffn is h, the
/// attention's q and output projections and the MLP's second linear are as
/// wide, and not the MLP's products.
LayerShape readLayerShape(mlir::Operation *model, int64_t hidden, int64_t heads,
                          int64_t kvHeads, int64_t ffn = 0);

/// [A8] Activation bytes one transformer layer keeps for its backward per
/// rank, as Triax builds it (its flash attention keeps the output and the
/// rows' log-sum-exp, never the s x s probabilities; no dropout masks; the
/// MLP's products and activations; each norm's input and output): per
/// token, elements of `elemBytes`
///   none:      2n h + (2q + 2kv + k ffn)/t   (n norms, q = h, kv = h kvHeads /
///              heads, k the MLP's tensors; with sequence parallelism the
///              norms' inputs and outputs are split too, the backward
///              gathering the outputs again: (2n h + 2q + 2kv + k ffn)/t)
///   selective: the attention's output recomputed: q/t fewer
///   full:      h (h/t with sequence parallelism), the layer's input
/// plus f32 statistics: the norms' (split by t with sequence parallelism)
/// and, unless recomputed, the attention's heads/t log-sum-exps; s b / cp
/// tokens per rank. Measured against the IR's liveness [A9] per layer in
/// test/CostModel/plan-activations.test.
double keptBytesPerLayer(const LayerShape &layer, int64_t s, int64_t b,
                         int64_t t, bool sequenceParallel, Recompute recompute,
                         int64_t cp, int64_t elemBytes);
/// Under full recomputation, what the backward of one layer holds on top
/// of the layers' inputs: the layer's [A8] without recomputation, rebuilt,
/// and its widest gradient, the MLP's (ffn/t per token; with sequence
/// parallelism also an all-gathered h-wide one, and the norms' outputs
/// whole where [A8] keeps their shards: n h (1 - 1/t)).
double recomputedLayerBytes(const LayerShape &layer, int64_t s, int64_t b,
                            int64_t t, bool sequenceParallel, int64_t cp,
                            int64_t elemBytes);
/// [A8]'s label with this layer's coefficients, "[A8] sbh(4 + 12/t)" for a
/// GPT-2 layer.
std::string keptFormulaLabel(const LayerShape &layer, int64_t tp,
                             bool sequenceParallel, Recompute recompute,
                             int64_t cp = 1);

/// [A6] What the head holds on a rank of the last stage: for each of the
/// `inFlight` micro-batches whose forward is done and backward is not, the
/// logits, s b V/t elements of `elemBytes` (the cross-entropy writes their
/// gradient over them; on a pipeline's last stage dist-pipeline runs it at
/// the end of the forward function), and the final norm's input and
/// output, 2 s b h (the input split over t with sequence parallelism);
/// once, the head's input gradient, s b h. With `weightCopy` (a compute
/// type narrower than the f32 master weights, under ZeRO-3, which converts
/// the gathered weight where the head reads it; otherwise [A10] counts the
/// copy) also the head's weight in the compute type, V/t h. (Korthikanti
/// et al. count 2 s b V/t, logits and gradient.)
double logitsBytes(int64_t s, int64_t b, int64_t vocab, int64_t h, int64_t t,
                   int64_t elemBytes, bool weightCopy = false,
                   bool sequenceParallel = false, double inFlight = 1);

/// What a pipeline stage's backward function holds besides the stage's
/// kept activations while it runs through a layer (the planner adds the
/// gradient it received, an argument its caller holds): the residual
/// stream's gradient and the MLP's gradients: for a GELU MLP s b (2h + ffn/t)
/// elements (its product's gradient is the GEMM's epilogue output,
/// gelu-epilogue: one ffn-wide buffer, and the MLP's input gradient is made
/// beside it; GPT-2: 6h a token), for SwiGLU's s b max(2h + 2 ffn/t, 3h +
/// ffn/t) (the product's gradient, then the up and SiLU gradients it splits
/// into, each written over one it no longer needs, elementwise-in-place,
/// beside the first input gradient; then the SiLU's beside both input
/// gradients). With sequence parallelism at least s b
/// ((k/2) ffn/t + 3h + h/t) (2h with b = 1): the norm's output gathered
/// again for the first MLP linear's weight gradient and its group-major
/// copy, the MLP's input gradient whole and the residual gradient's shard.
/// A MoE layer's experts' gradients (`experts` bytes, the planner's [A7])
/// are beside the residual gradient in place of a dense MLP's. With context
/// parallelism at least the ring attention backward's: its scratch beside
/// the residual gradient and s b (2h + 2kv)/t of the attention output's and
/// the query, key and value gradients. Without a pipeline the head's peak
/// hides it. (ZB-H1's B pass holds [A12]'s instead.)
double backwardWorkingBytes(const LayerShape &layer, int64_t s, int64_t b,
                            int64_t t, int64_t cp, int64_t elemBytes,
                            bool sequenceParallel = false,
                            double experts = 0.0);

/// [A12] What a micro-batch holds of one layer between its B pass and its W
/// pass under ZB-H1 (the weight gradients split off, dist-pipeline's
/// splitWeightPass), per token in elements of `elemBytes`: each linear's
/// input, which its weight gradient reads, `kept` from the forward (the
/// norms' n outputs, n h, their shards h/t under sequence parallelism,
/// which the W pass gathers again; the attention's output q/t; the MLP's
/// last linear's input ffn/t), and each linear's output gradient, which
/// the B pass returns, `carried`: (q + 2kv)/t, the MLP's first linears'
/// (k/2) ffn/t and the two row linears' 2h (with sequence parallelism
/// their shards, 2h/t: B gathers them for the input gradient, W again,
/// and the row biases' gradients read the shards). Under recomputation
/// the inputs B rebuilds are carried too (selective: the attention's
/// output; full: all, the norms' outputs as shards under sequence
/// parallelism, which W gathers again, and for the MLP's last
/// linear what the W pass rebuilds its input from, (k/2) ffn/t: GELU's
/// product, SwiGLU's SiLU and product). `carryGathered` (dist-pipeline's
/// carry-gathered, with sequence parallelism): B hands W the row linears'
/// output gradients whole, 2h (beside their shards, 2 (h + h/t), where
/// the row biases' gradients read those), and under full
/// recomputation the norms' outputs whole, n h, and W gathers none of
/// them again. A MoE layer's experts are the planner's ([A7]): here its
/// attention's, one row linear. What the rest of the micro-batch's [A8]
/// held is freed at B.
struct WeightPassHandOver {
  double kept = 0, carried = 0;
  double total() const { return kept + carried; }
};
WeightPassHandOver
weightPassHandOver(const LayerShape &layer, int64_t s, int64_t b, int64_t t,
                   bool sequenceParallel, Recompute recompute, int64_t cp,
                   int64_t elemBytes, bool carryGathered = false);

/// Context parallelism's ring attention backward: the f32 scratch its
/// kernels hold (AttentionGradOp::getScratchBytes), per token of the rank
/// s b / cp: the online softmax's row statistics and accumulator, 4 (2 heads
/// + q)/t, less the saved log-sum-exp, 4 heads/t; the key and value blocks
/// arriving in the compute type, 2 kv/t (twice beyond two members); and the
/// dK and dV accumulators in hand and arriving, 16 kv/t.
double ringAttentionGradScratch(const LayerShape &layer, int64_t s, int64_t b,
                                int64_t t, int64_t cp, int64_t elemBytes);

/// [P2] Micro-batches whose activations stage `stage` of `pp` holds at its
/// peak, in units of the stage's layers: GPipe all m (every forward before
/// the first backward), 1F1B min(pp - stage, m) (its warm-up forwards plus
/// one), interleaved over v chunks min(2 (pp - stage - 1) + (v - 1) pp + 1,
/// v m) chunks' worth, over v (stage 0: 1 + (pp - 1) / (v pp) times
/// 1F1B's), ZB-H1 min(pp, m) on every stage (a W pass frees them, stage s
/// defers s of them); 1 without a pipeline.
double inFlightMicroBatches(Schedule schedule, int64_t pp, int64_t m,
                            int64_t stage, int64_t virtualStages = 1);

/// [P2] in blocks: the most blocks whose activations stage `stage` of `pp`
/// holds at once, its chunks holding `chunkBlocks` blocks each (by chunk;
/// dist-pipeline cuts the blocks into pp x v virtual stages balanced by
/// FLOPs, which need not be equal). Equal chunks: their sum times
/// inFlightMicroBatches. Unequal ones (interleaved): peakInFlight weighted
/// by them over the schedule's order, which repeats itself beyond m = 2 pp
/// (plan-test checks it): m is capped there and each (pp, v, m, stage,
/// chunks) simulated once.
double blocksInFlight(Schedule schedule, int64_t pp, int64_t m, int64_t stage,
                      int64_t virtualStages,
                      llvm::ArrayRef<int64_t> chunkBlocks);

/// [P4] Messages (each a micro-batch's activation or gradient at a stage
/// boundary) stage `stage` of `pp` holds received ahead of their pass at a
/// backward's start: peakHeldReceives of the program dist-pipeline emits.
/// GPipe and 1F1B receive right before each pass (0); interleaved and
/// ZB-H1 run pipelinePrograms, whose holding does not change beyond m = 2
/// pp (plan-test checks it), so m is capped there and each (schedule, pp,
/// v) simulated once.
int64_t heldReceives(Schedule schedule, int64_t pp, int64_t m, int64_t stage,
                     int64_t virtualStages = 1);

//===----------------------------------------------------------------------===//
// Communication (ring collectives, bytes one rank sends)
//===----------------------------------------------------------------------===//

/// [C1] A ring all_reduce of n elements of `elemBytes` over p ranks, as the
/// runtime cuts it (chunk c = [n c / p, n (c + 1) / p)), bytes the member
/// at `position` sends: 2(p-1)/p S when p divides n.
int64_t allReduceBytes(int64_t n, int64_t elemBytes, int64_t p,
                       int64_t position = 0);
/// [C2] A ring reduce_scatter or all_gather whose per-member block is
/// `blockElems`: (p-1) blocks, (p-1)/p S of the whole padded tensor S.
int64_t reduceScatterBytes(int64_t blockElems, int64_t elemBytes, int64_t p);
int64_t allGatherBytes(int64_t blockElems, int64_t elemBytes, int64_t p);
/// [C8] An all_to_all of an input of n elements over p ranks (p slices of
/// n / p): the p - 1 slices that go to the other members.
int64_t allToAllBytes(int64_t n, int64_t elemBytes, int64_t p);

//===----------------------------------------------------------------------===//
// Schedule, FLOPs, time
//===----------------------------------------------------------------------===//

/// [P1] Pipeline bubble fraction (idle over total, equal stage times) of
/// GPipe and 1F1B, (p-1)/(m+p-1); interleaved over v chunks per rank
/// divides the bubble by v, (p-1)/(v m+p-1) (Narayanan et al. 2021);
/// ZB-H1 idles (p-1)(T_F + T_B - T_W) instead of (p-1)(T_F + T_B + T_W)
/// (Qi et al. 2024), with the backward twice the forward and B = W:
/// (p-1)/(3m+p-1).
double bubbleFraction(int64_t pp, int64_t microBatches,
                      int64_t virtualStages = 1,
                      Schedule schedule = Schedule::OneFOneB);

/// [P3] Each stage's FLOPs over the stages' mean (empty when they sum to 0).
std::vector<double> stageLoads(llvm::ArrayRef<double> flops);

/// [F1] Training FLOPs per token: 6 N + 12 L h s (Kaplan et al. 2020;
/// the attention scores and values, forward and backward).
double flopsPerToken(double params, int64_t layers, int64_t hidden,
                     int64_t seq);

/// [F2] FLOPs per token that recomputation adds to [F1] (Korthikanti et
/// al. 2022, section 5): selective recomputes the attention core's forward,
/// QK^T and AV, 4 L h s; full recomputes every layer's forward, 2 N_L +
/// 4 L h s (N_L the parameters of the layers).
double recomputeFlopsPerToken(double layerParams, int64_t layers,
                              int64_t hidden, int64_t seq, Recompute recompute);

/// [T1]-[T4] A predicted optimizer step.
struct StepTime {
  double compute = 0; // [T1] s
  double comm = 0;    // [T2] s
  double bubble = 0;  // [T3] s
  double total = 0;   // [T4] s
  double tokensPerSecond = 0;
  double mfu = 0; // [T5]
};

struct CommLoad {
  int64_t bytes = 0; // sent by one rank per step
  int64_t calls = 0;
  int64_t groupSize = 1;
  int64_t spanRanks = 1; // consecutive ranks the group spans
};

/// Compute: tokens per rank per step x flopsPerToken / (peak x efficiency);
/// communication: bytes / bandwidth (NVLink when the group
/// spans at most gpusPerNode ranks, else inter-node) + calls x latency,
/// not overlapped with compute; bubble: (p-1)/m of the compute.
StepTime predictStepTime(const Hardware &hw, const Plan &plan,
                         double flopsPerTok, double tokensPerStep,
                         int64_t numRanks, llvm::ArrayRef<CommLoad> comm,
                         double efficiency);

//===----------------------------------------------------------------------===//
// Facts of a parallelized module
//===----------------------------------------------------------------------===//

struct CollectiveKey {
  std::string kind; // all_reduce, all_gather, reduce_scatter (runtime names)
  std::string axes; // mesh axes in mesh order, comma-separated
  bool operator<(const CollectiveKey &o) const {
    return std::tie(axes, kind) < std::tie(o.axes, o.kind);
  }
};

struct CollectiveTotal {
  int64_t bytes = 0, calls = 0, groupSize = 1, spanRanks = 1;
  std::vector<std::string> sources; // op names contributing, for the report
};

struct ModuleFacts {
  std::vector<std::string> axisNames;
  std::vector<int64_t> axisSizes;
  int64_t rank = 0;
  int64_t numParams = 0;                // whole model, elements
  double flopParams = 0;                // [F1]'s N (ModelOp::getFlopParameters)
  std::vector<int64_t> localParamElems; // per tensor on this rank (TP)
  StateBytes state;                     // this rank, from the IR
  Plan plan;
  int64_t globalBatch = 0, microBatch = 0, seq = 0;
  int64_t layers = 0, hidden = 0, heads = 0;
  /// The first block's shape, whole-model sizes ([A8]), and the bytes of
  /// the compute type.
  LayerShape layer;
  int64_t activationBytes = 4;
  double layerParams = 0; // elements of the blocks' parameters (N_L, [F2])
  /// [A9] peak bytes of @forward_backward's tensors, one micro-batch, from
  /// the IR's liveness (what the CPU runtime measures as "activ").
  int64_t activationPeak = 0;
  std::map<CollectiveKey, CollectiveTotal> collectives; // per step
  std::vector<std::string> unmodelled; // ops whose traffic is not counted
  /// [P3] each pipeline rank's forward FLOPs (its stages' @stage<k>_forward,
  /// virtual stage k on rank k mod pp) over the mean rank's; empty without a
  /// pipeline.
  std::vector<double> stageLoad;
  /// The rank's pipeline stage and the blocks its stage functions hold (0
  /// without a pipeline).
  int64_t stage = 0, stageLayers = 0;
};

/// Walks a module after triax-parallelize: the per-rank training state of
/// every `triax.param` (local shape under `dist.sharding`, chunks under
/// `dist.zero`) and the bytes every collective of @forward_backward (per
/// micro-batch; `dist.all_reduce_grads` once per step) and @optimizer_step
/// (once per step) sends from rank `rank`.
llvm::Expected<ModuleFacts> analyzeModule(mlir::ModuleOp module,
                                          int64_t rank = 0);

//===----------------------------------------------------------------------===//
// Report
//===----------------------------------------------------------------------===//

/// Everything the report shows, computed once from the facts.
struct Report {
  ModuleFacts facts;
  Hardware hardware;
  double efficiency = 0.5;
  double activationsPerLayer = 0;    // bytes, [A8]
  double bubble = 0;                 // [P1]
  double flopsPerToken = 0;          // [F1] + [F2]
  double recomputeFlopsPerToken = 0; // [F2], included in flopsPerToken
  StepTime step;
};

Report makeReport(ModuleFacts facts, const Hardware &hw, double efficiency);
/// The text report; its traffic lines read like the runtime's -v lines
/// ("all_gather over dp: N bytes sent by this rank in C calls").
void printReport(llvm::raw_ostream &os, const Report &report);
/// The same as one JSON object.
void printReportJSON(llvm::raw_ostream &os, const Report &report);

} // namespace triax::cost

#endif // TRIAX_COSTMODEL_COSTMODEL_H
