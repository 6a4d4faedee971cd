//===- Planner.h - dist-plan: the fastest plan that fits ---------*- C++
//-*-===//
//
// The planner of issue 6 (DESIGN.md §3 dist-plan): from a model's facts
// (read from its IR before parallelization) and a request such as
// "gpus=64,gpu=h100-80g", it enumerates dp x tp x pp x ZeRO stage x
// micro-batches x schedule x sequence parallelism x recomputation, rejects
// what cannot run (with the reason), predicts the step time of the rest
// with the formulas of CostModel.h, and ranks them. It also simulates the
// pipeline schedule of a plan, the same order dist-pipeline emits, for the
// Chrome trace and SVG timeline. docs/cost-model.md labels the formulas
// ([A6], [F2], [C3]-[C6], [M5], [S1]) as the comments here do.
//
//===----------------------------------------------------------------------===//

#ifndef TRIAX_COSTMODEL_PLANNER_H
#define TRIAX_COSTMODEL_PLANNER_H

#include "triax/CostModel/CostModel.h"

#include <map>
#include <optional>

namespace triax::cost {

//===----------------------------------------------------------------------===//
// The model, before parallelization
//===----------------------------------------------------------------------===//

/// What the planner needs of a model: its transformer shape, its batch and
/// its parameters split by how tensor parallelism cuts them.
struct ModelShape {
  std::string name;
  int64_t layers = 0, hidden = 0, heads = 0, kvHeads = 0, ffn = 0, vocab = 0;
  int64_t seq = 0, globalBatch = 0, microBatch = 0;
  DTypeMode dtype = DTypeMode::FP32;
  int64_t activationBytes = 4; // the compute type's bytes per element
  int64_t params = 0;          // N, whole model
  double flopParams = 0;       // [F1]'s N: ModelOp::getFlopParameters
  // Mixture of experts: experts per MoE layer (0: none), rows per expert
  // and sequence (the capacity C), and the stacked expert weights of all
  // blocks (split over ep, whole on every tp rank; not in layerRepl).
  int64_t experts = 0, expertRows = 0;
  int64_t expertTopK = 0; // the router's k: choices per token
  int64_t layerExpert = 0, layerExpertTensors = 0;
  // The experts' MLP intermediates per buffer row, in units of ffn (2: GELU's
  // product and activation; 4: SwiGLU's two products, SiLU and product).
  int64_t expertMlpTensors = 0;
  // What [A8] and [A12] count of a layer (its first block's,
  // readLayerShape): the dense MLP's kept tensors per token in ffn (0 for a
  // MoE layer), its norms and their f32 statistics per token, its biases.
  // layerShape() gives it the model's dimensions above.
  LayerShape layer{0, 0, 0, 0, 0, 0, 0};
  LayerShape layerShape() const {
    LayerShape l = layer;
    l.hidden = hidden;
    l.heads = heads;
    l.kvHeads = kvHeads;
    l.ffn = ffn;
    return l;
  }
  // Parameter elements. "split": cut by tp (linear weights, the biases of
  // column-split linears, the token embedding over the vocabulary);
  // "repl": whole on every tp rank (norms, row-split biases, positions).
  int64_t layerSplit = 0, layerRepl = 0; // all blocks together
  int64_t firstSplit = 0, firstRepl = 0; // embeddings (the first stage)
  int64_t lastSplit = 0, lastRepl = 0;   // final norm, head (the last stage)
  int64_t tiedSplit = 0; // embedding elements the head reuses (tied): the
                         // last stage holds a copy when pp > 1
  // Of those, the elements no gradient reads (biases, position tables):
  // [A10] counts no bf16 copy of them in the backward.
  int64_t layerUnreadSplit = 0, layerUnreadRepl = 0;
  int64_t firstUnreadSplit = 0, firstUnreadRepl = 0;
  int64_t lastUnreadSplit = 0, lastUnreadRepl = 0;
  int64_t layerTensors = 0, firstTensors = 0, lastTensors = 0;
  // Of those, the replicated ones (sequence parallelism all-reduces their
  // gradients over tp every micro-batch).
  int64_t layerReplTensors = 0, firstReplTensors = 0, lastReplTensors = 0;
  // What dist-pipeline weighs its stages by (StagePartition.h): each
  // block's forward FLOPs, and those of what runs before the blocks (the
  // embeddings: the first stage) and after them (the head and the loss: the
  // last). Empty: equal blocks, nothing before or after.
  std::vector<double> blockFlops;
  double beforeFlops = 0, afterFlops = 0;
  // The partitions computed so far, by (stages, padded vocabulary): a
  // search asks for the same few in thousands of plans.
  mutable std::map<std::pair<int64_t, int64_t>, std::vector<int64_t>>
      stageCounts;
  // Why dist-tensor-parallel cannot split the model ("" when it can); the
  // planner then rejects every plan with tp > 1 for this reason, and the
  // counts above treat every parameter as replicated.
  std::string tensorParallelError;
};

/// Reads a model (a module with one triax.model whose @forward is not yet
/// differentiated or parallelized): L = its triax.blocks, h, heads and
/// kv-heads from triax.attention, ffn from the widest column linear of a
/// block, vocab and seq from the token embedding and the train config.
llvm::Expected<ModelShape> readModelShape(mlir::ModuleOp module);

//===----------------------------------------------------------------------===//
// The request
//===----------------------------------------------------------------------===//

/// "gpus=N,gpu=NAME|file.json[,gpus-per-node=G][,global-batch=B]
/// [,micro-batch=b][,microbatches=m][,dp=][,tp=][,pp=][,zero=]
/// [,schedule=gpipe|1f1b|interleaved|zb-h1][,virtual-stages=v]
/// [,sequence-parallel=0|1][,carry-gathered=0|1][,recompute=none|
/// selective|full][,efficiency=e][,headroom=G][,top=k]": the keys after
/// gpu= fix that dimension of the search (the others are enumerated).
struct PlanRequest {
  int64_t gpus = 0;
  Hardware hardware;
  int64_t globalBatch = 0; // 0: the model's
  std::optional<int64_t> microBatch, microBatches, dp, tp, pp, cp, ep;
  std::optional<int> zero;
  std::optional<Schedule> schedule;
  /// The interleaved schedule's chunks per rank (with schedule=interleaved).
  int64_t virtualStages = 1;
  std::optional<bool> sequenceParallel;
  /// carry-gathered=on|off: ZB-H1's W pass reads what B gathered instead
  /// of gathering again (unset: both are tried where they differ).
  std::optional<bool> carryGathered;
  std::optional<Recompute> recompute;
  /// precision=fp32|bf16: the compute type's bytes per activation element
  /// (4 or 2; unset: the model's). The state stays as the model has it
  /// (triaxc --precision bf16 keeps f32 parameters, gradients, moments).
  std::optional<int64_t> activationBytes;
  /// pad-vocab=N: the compiler pads the vocabulary to a multiple of N x tp
  /// (triax-pad-vocab), so tp need not divide it; the padding's rows are
  /// parameters and its columns logits. triaxc passes the target's.
  int64_t padVocab = 1;
  double efficiency = 0.5;
  /// headroom=G: GiB of HBM a plan leaves free, for what the planner does
  /// not count (CUDA context, NCCL buffers, cuBLAS workspaces, allocator
  /// fragmentation); the plan's peak must fit the rest.
  double headroomBytes = 0;
  int64_t top = 5;
  std::string text; // as given
};

/// Parses a --plan value; an error names the key and what is expected.
llvm::Expected<PlanRequest> parsePlanRequest(llvm::StringRef text);

//===----------------------------------------------------------------------===//
// Candidates and the search
//===----------------------------------------------------------------------===//

struct MemoryBreakdown {
  double params = 0, grads = 0, optim = 0; // [M1]-[M3] of the stage
  double zeroGather = 0;                   // [M5] ZeRO-3's gathered layers
  // [A10] bf16 compute over f32 state: the stage's bf16 parameter copies.
  double weightCopies = 0;
  // [A11] bf16 parameters: the token table's gradient summed in f32 at the
  // end of the first stage's backward (not at the same time as the rest).
  double tableScratch = 0;
  double activations = 0; // [A8] x layers x in flight
  double logits = 0;      // [A6] the last stage
  // Full recomputation: one layer's [A8] rebuilt in the backward (not at
  // the same time as the logits: the peak takes the larger).
  double recomputed = 0;
  // A pipeline stage's backward working set (backwardWorkingBytes).
  double working = 0;
  // [A12] ZB-H1: what the micro-batches whose W pass is deferred hold
  // between their B and W passes (`deferred` of them on the stage).
  double handOver = 0;
  double deferred = 0;
  double experts = 0; // [A7] the MoE buffers x layers x in flight
  // [P4] the messages the stage received ahead of their pass, at its
  // backward's start (`held` of them).
  double receivedAhead = 0;
  int64_t held = 0;
  // What of the peak is not state ([M1]-[M3], [M5]): the activations at
  // their peak, as the scripts that compare it with [A9] read it.
  double activationPeak = 0;
  double peak = 0;     // the sum, on the fullest stage
  int64_t stage = 0;   // the fullest stage
  double inFlight = 1; // micro-batches it holds (interleaved: fractional)
  int64_t layers = 0;  // the blocks it holds
};

struct Candidate {
  Plan plan;
  int64_t microBatch = 0; // sequences per micro-batch (b)
  MemoryBreakdown memory;
  StepTime step;
  double flopsPerToken = 0;     // [F1], the model's
  double stepFlopsPerToken = 0; // [F1] + [F2], what the GPUs compute
  double bubbleFraction = 0;    // [P1]
  // Each pipeline rank's forward FLOPs over their mean, as dist-pipeline
  // partitions the blocks ([P3]; {1} without a pipeline).
  std::vector<double> stageLoad;
  // Each virtual stage's (k = chunk x pp + rank) over their mean: the
  // simulated schedule's durations.
  std::vector<double> chunkLoad;
  // The blocks of each virtual stage, as dist-pipeline cuts them (empty
  // without a pipeline).
  std::vector<int64_t> stageBlocks;
  // Every pipeline stage costed (all of them, or stages 0, 1 and p - 1 of a
  // plan with more stages than blocks): its peak and the activations' part
  // of it; `memory` is the fullest's breakdown.
  struct StagePeak {
    int64_t stage = 0;
    double peak = 0, activationPeak = 0;
  };
  std::vector<StagePeak> stagePeaks;
  std::vector<std::pair<std::string, CommLoad>> comm; // [C3]-[C6]
  std::string reason;   // "" when it fits; else the rejected region
  std::string detail;   // the reason with this plan's numbers
  double overBytes = 0; // out of memory: peak - HBM
};

struct PlanResult {
  ModelShape model;
  PlanRequest request;
  int64_t searched = 0, fits = 0;
  std::vector<Candidate> top; // the fastest first
  struct Region {
    std::string reason;
    int64_t count = 0;
    Candidate best, worst; // least / most over memory, else fastest / slowest
  };
  std::vector<Region> rejected;         // the most plans first
  std::vector<std::string> suggestions; // when nothing fits
};

/// Enumerates, checks, predicts and ranks (docs/cost-model.md "Planner").
PlanResult planModel(const ModelShape &model, const PlanRequest &request);

/// One plan's memory, traffic and time without the search (the same
/// numbers planModel gives it); `reason` is set when it cannot run.
Candidate evaluatePlan(const ModelShape &model, const PlanRequest &request,
                       const Plan &plan, int64_t microBatch);

/// dist-plan as the tools run it (triaxc --plan, triax-report --plan):
/// parses `spec`, reads the model's shape, plans (with `fixMicroBatch`, at
/// the model's micro-batch unless the spec gives one: its shapes fix it),
/// prints the text or JSON to `os`, and writes the top plan's Chrome trace
/// and SVG to the paths that are not empty. An error says which step
/// failed ("--plan: ...", "--trace: ...").
llvm::Expected<PlanResult> runPlan(mlir::ModuleOp module, llvm::StringRef spec,
                                   bool json, bool fixMicroBatch,
                                   llvm::StringRef tracePath,
                                   llvm::StringRef svgPath,
                                   llvm::raw_ostream &os);

void printPlan(llvm::raw_ostream &os, const PlanResult &result);
void printPlanJSON(llvm::raw_ostream &os, const PlanResult &result);
/// "dp=2 tp=4 pp=1 zero=1 m=4 schedule=- sp=off recompute=none".
std::string describePlan(const Candidate &c);

//===----------------------------------------------------------------------===//
// The pipeline schedule of a plan, simulated
//===----------------------------------------------------------------------===//

struct TraceEvent {
  std::string name;   // "F3", "B3", "F3.1", "send F3", "all_reduce dp"
  std::string stream; // "compute", "send", "recv", or the data axis (dp)
  int64_t rank = 0, stage = 0, microBatch = -1;
  int64_t chunk = -1;             // the model chunk of a pass or send
  double start = 0, duration = 0; // seconds
};

struct ScheduleTrace {
  std::string title;
  int64_t stages = 1, microBatches = 1, virtualStages = 1;
  std::vector<int64_t> ranks; // the rank of each stage (dp 0, tp 0)
  std::vector<TraceEvent> events;
  double makespan = 0;        // the last event's end
  double flush = 0;           // the last backward's end
  std::vector<double> bubble; // per stage: 1 - busy / flush
};

/// [S1] Runs each stage's forwards and backwards in dist-pipeline's order
/// (mlir::dist::pipelineOrder: GPipe F0..F(m-1) then B0..B(m-1); 1F1B w =
/// min(p-s-1, m) forwards, then F(w+j) B(j), then the remaining backwards;
/// interleaved Megatron-LM's order over `virtualStages` chunks per rank);
/// an F waits for the previous virtual stage's F of the same micro-batch
/// plus the send, a B for the next one's B plus the send. Durations per
/// micro-batch and stage (a chunk takes 1/v of them): forward `fwd`,
/// backward `bwd`, a send `p2p`, each pass of virtual stage k (chunk c of
/// rank s: k = c p + s) `load[k]` times those (its FLOPs over the mean
/// virtual stage's: [P3]; 1 where not given); after its last backward each
/// rank runs `collectives` (name, seconds) on the data axis's stream (dp).
ScheduleTrace
simulateSchedule(int64_t stages, int64_t microBatches, Schedule schedule,
                 double fwd, double bwd, double p2p,
                 llvm::ArrayRef<std::pair<std::string, double>> collectives,
                 llvm::ArrayRef<int64_t> ranks = {}, int64_t virtualStages = 1,
                 llvm::ArrayRef<double> load = {});

/// The schedule of a candidate, with its predicted durations.
ScheduleTrace traceOf(const ModelShape &model, const PlanRequest &request,
                      const Candidate &c);

/// Chrome trace JSON (Perfetto): "traceEvents" of ph "X" with ts/dur in us,
/// pid = rank, tid = the stream (named by thread_name metadata).
void printChromeTrace(llvm::raw_ostream &os, const ScheduleTrace &trace);
/// An SVG timeline: one row per rank, F/B boxes labelled with the
/// micro-batch, the idle time left white.
void printScheduleSVG(llvm::raw_ostream &os, const ScheduleTrace &trace);

} // namespace triax::cost

#endif // TRIAX_COSTMODEL_PLANNER_H
