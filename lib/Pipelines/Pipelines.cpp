//===- Pipelines.cpp - Triax's pass pipelines, step by step ---------------===//

#include "triax/Pipelines/Pipelines.h"

#include "triax/Conversion/KernelsToGPU/Passes.h"
#include "triax/Conversion/Passes.h"
#include "triax/Dialect/Dist/Transforms/Passes.h"
#include "triax/Dialect/Dist/Transforms/PipelineSchedule.h"
#include "triax/Dialect/Triax/Transforms/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

#include <cstdio>

using namespace mlir;

namespace triax {
std::string checkParallelizeOptions(const ParallelizeConfig &o) {
  std::string error;
  if (!o.mesh.empty() && failed(mlir::dist::MeshShape::parse(o.mesh, error)))
    return "mesh=" + o.mesh + ": " + error;
  mlir::dist::MeshShape mesh = meshShapeOf(o);
  int64_t dp = mesh.size(TRX_AXIS_DATA), pp = mesh.size(TRX_AXIS_PIPELINE),
          tp = mesh.size(TRX_AXIS_TENSOR);
  if (pp > 1 && o.zero > 1)
    return "ZeRO-" + std::to_string(o.zero) +
           " with pipeline parallelism (pp=" + std::to_string(pp) +
           ") is not supported (DeepSpeed refuses it too); use zero=1";
  std::optional<mlir::dist::PipelineSchedule> schedule =
      mlir::dist::parseSchedule(o.schedule.empty() ? "1f1b" : o.schedule);
  if (!schedule)
    return "unknown schedule '" + o.schedule +
           "'; expected gpipe, 1f1b, interleaved or zb-h1";
  if (o.virtualStages < 1)
    return "virtual-stages=" + std::to_string(o.virtualStages) +
           " is not a count (expected >= 1)";
  // (dist-pipeline's own rule.)
  if (std::string error = mlir::dist::chunksError(*schedule, o.virtualStages);
      !error.empty())
    return error;
  if (!(o.bucketMb > 0) && !(o.bucketMb == 0 && o.zero > 0)) {
    char size[32];
    snprintf(size, sizeof(size), "%g", o.bucketMb);
    return "bucket-mb=" + std::string(size) +
           " is not a bucket size (expected MiB > 0; 0, one collective per "
           "tensor, only with zero)";
  }
  if (o.padVocab < 0)
    return "pad-vocab=" + std::to_string(o.padVocab) +
           " is not a multiple (expected >= 1, or 0: the target's default)";
  if (o.microbatches < 0)
    return "microbatches=" + std::to_string(o.microbatches) +
           " is not a count (expected >= 1, or 0: the model's)";
  if (pp == 1 && (o.microbatches != 0 || !o.stageLayers.empty() ||
                  !o.schedule.empty() || o.virtualStages != 1))
    return "microbatches, schedule, virtual-stages and stage-layers apply to "
           "pipeline parallelism (pp >= 2; the mesh has none)";
  if (o.carryGathered &&
      (!mlir::dist::splitsWeightPass(*schedule) || !o.sequenceParallel))
    return "carry-gathered applies to the zb-h1 schedule with sequence "
           "parallelism (its W pass's all_gathers)";
  if (!o.cpComm.empty() && o.cpComm != "ring" && o.cpComm != "all-gather")
    return "unknown cp-comm '" + o.cpComm + "'; expected ring or all-gather";
  if (!o.cpComm.empty() && mesh.size(TRX_AXIS_CONTEXT) < 2)
    return "cp-comm applies to context parallelism (cp >= 2; the mesh has "
           "none)";

  if (o.sequenceParallel && tp < 2)
    return "sequence parallelism splits the sequence over tensor-parallel "
           "ranks: sequence-parallel needs tp >= 2 (tp=" +
           std::to_string(tp) + ")";
  if (o.recompute != "none" && o.recompute != "selective" &&
      o.recompute != "full")
    return "unknown recompute mode '" + o.recompute +
           "'; expected none, selective or full";
  if (o.zero < 0 || o.zero > 3)
    return "ZeRO stage " + std::to_string(o.zero) +
           " does not exist (expected 0, 1, 2 or 3)";
  if (o.precision != "fp32" && o.precision != "bf16")
    return "unknown precision '" + o.precision + "'; expected fp32 or bf16";
  // ZeRO shards over dp x cp (context parallelism's gradient sums fold
  // into its reduce-scatters).
  int64_t cp = mesh.size(TRX_AXIS_CONTEXT);
  if (o.zero > 0 && dp * cp < 2)
    return "ZeRO shards the training state over data-parallel ranks (dp x "
           "cp): zero=" +
           std::to_string(o.zero) +
           " needs dp >= 2 or cp >= 2 (dp=" + std::to_string(dp) +
           ", cp=" + std::to_string(cp) + ")";
  return "";
}

int64_t padVocabMultiple(const ParallelizeConfig &o) {
  return std::max<int64_t>(o.padVocab, 1) *
         meshShapeOf(o).size(TRX_AXIS_TENSOR);
}

int64_t defaultPadVocab(llvm::StringRef target) {
  return target == "cuda" ? 64 : 1;
}

mlir::dist::MeshShape meshShapeOf(const ParallelizeConfig &o) {
  std::string error;
  FailureOr<mlir::dist::MeshShape> mesh =
      mlir::dist::MeshShape::parse(o.mesh, error);
  return o.mesh.empty() || failed(mesh) ? mlir::dist::MeshShape() : *mesh;
}
} // namespace triax

void ::triax::buildParallelizePipeline(OpPassManager &pm,
                                       const ParallelizeConfig &options) {
  // The mesh first: every dist pass below finds its axis on it, and its
  // axis order (the axis-role table's, tp innermost) is the rank layout.
  mlir::dist::MeshShape shape = meshShapeOf(options);
  mlir::dist::DistMeshOptions mesh;
  mesh.axes = shape.withoutUnitAxes().str();
  pm.addPass(mlir::dist::createDistMesh(mesh));
  // The vocabulary padded for the GEMMs and the tp split (pad-vocab=0 is
  // the CPU's 1 here; triaxc resolves the target's, defaultPadVocab).
  if (int64_t padMultiple = padVocabMultiple(options); padMultiple > 1) {
    mlir::triax::TriaxPadVocabOptions pad;
    pad.multiple = padMultiple;
    pm.addPass(mlir::triax::createTriaxPadVocab(pad));
  }
  // Tensor parallelism rewrites the forward model, before autodiff: the
  // backward's conjugate collectives then come from the collectives' VJPs.
  if (shape.size(TRX_AXIS_TENSOR) > 1) {
    mlir::dist::DistTensorParallelOptions tensor;
    tensor.sequenceParallel = options.sequenceParallel;
    pm.addPass(mlir::dist::createDistTensorParallel(tensor));
  }
  // Context parallelism after it (it keeps tensor parallelism's split and
  // changes only the sequence), also on the forward model.
  if (shape.size(TRX_AXIS_CONTEXT) > 1) {
    mlir::dist::DistContextParallelOptions context;
    context.comm = options.cpComm.empty() ? "ring" : options.cpComm;
    pm.addPass(mlir::dist::createDistContextParallel(context));
  }
  // Expert parallelism on the forward model too: its exchanges' gradients
  // come from the all_to_alls' VJPs.
  if (shape.size(TRX_AXIS_EXPERT) > 1)
    pm.addPass(mlir::dist::createDistExpertParallel());
  pm.addPass(mlir::triax::createTriaxAutodiff());
  // Recomputation right after autodiff, on the forward/backward block pairs
  // it built: the passes below then see the recomputed parameter reads as
  // backward reads (ZeRO-3 gathers them again) and dist-pipeline finds the
  // pairs still in one function. With recompute=none too: the backward
  // gathers again what an all_gather gathered (sequence parallelism's norm
  // outputs) and keeps only the shard.
  mlir::triax::TriaxRecomputeOptions recompute;
  recompute.mode = options.recompute;
  pm.addPass(mlir::triax::createTriaxRecompute(recompute));
  // Pipeline parallelism cuts the training step autodiff built into
  // stages and schedules the micro-batches; it also makes the optimizer
  // step per stage, which the data-parallel passes below then work on.
  if (shape.size(TRX_AXIS_PIPELINE) > 1) {
    mlir::dist::DistPipelineOptions pipeline;
    pipeline.microbatches = options.microbatches;
    pipeline.schedule = options.schedule.empty() ? "1f1b" : options.schedule;
    pipeline.stageLayers = options.stageLayers;
    pipeline.virtualStages = options.virtualStages;
    pipeline.carryGathered = options.carryGathered;
    pm.addPass(mlir::dist::createDistPipeline(pipeline));
  }
  // Data parallelism works on the training step: ZeRO reduce-scatters the
  // gradients and shards the state; plain data parallelism all-reduces the
  // gradients (in @forward_backward's backward, or after the pipeline's
  // flush in each stage's optimizer step).
  if (options.zero > 0) {
    mlir::dist::DistZeroOptions zero;
    zero.stage = options.zero;
    zero.bucketMb = options.bucketMb;
    pm.addPass(mlir::dist::createDistZero(zero));
  } else if (shape.size(TRX_AXIS_DATA) > 1 || shape.size(TRX_AXIS_EXPERT) > 1 ||
             shape.size(TRX_AXIS_CONTEXT) > 1) {
    // (Expert-parallel ranks train on their own sequences too; context
    // parallelism's gradient sums join the once-per-step reduction.)
    mlir::dist::DistDataParallelOptions dataParallel;
    dataParallel.bucketMb = options.bucketMb;
    pm.addPass(mlir::dist::createDistDataParallel(dataParallel));
  }
  // Mixed precision last: it decides on the final training program which
  // values are activations (bf16) and which reach the fp32 master state or
  // a collective (f32), so every pass above works on f32 as before.
  if (options.precision == "bf16") {
    mlir::triax::TriaxMixedPrecisionOptions precision;
    precision.compute = "bf16";
    pm.addPass(mlir::triax::createTriaxMixedPrecision(precision));
  }
}

void ::triax::buildLowerCPUPipeline(OpPassManager &pm,
                                    const LoweringConfig &options) {
  // Chains of elementwise ops -> one triax.fused_elementwise each, so that
  // the kernel conversion emits one loop per chain (each input read once,
  // no buffers for the values used only inside it) instead of one loop and
  // one buffer per op. It runs on the whole module and fuses within each
  // block it finds: function bodies and triax.block regions alike (the
  // conversion inlines the blocks later, so nothing fuses across them).
  pm.addPass(mlir::triax::createTriaxFuseElementwise());
  // Layer ops -> loop nests on buffers + runtime GEMM/state calls; buffers
  // are freed after their last use. Target-neutral up to here.
  mlir::triax::ConvertTriaxToKernelsOptions kernels;
  kernels.fuseOptimizer = options.fuseOptimizer;
  kernels.fuseBucketCopies = options.fuseOptimizer;
  kernels.geluEpilogue = options.geluEpilogue;
  kernels.fuseProjectionsOption = options.fuseProjections;
  kernels.attention = options.attention.empty() ? "flash" : options.attention;
  kernels.kernelParamBytes = 0; // a CPU loop passes no kernel parameters
  kernels.embeddingGradThreads = options.embeddingGradThreads;
  // Bias and norm weight gradients by blocks of columns, row by row
  // (vectorized, bit-identical).
  kernels.columnSums = "rows";
  // Flash attention's dot products in one vector register (bit-identical).
  kernels.vectorDots = true;
  // ... and its loops over keys 8 at a time: one vector exp per 8 keys, the
  // accumulators in registers (the last bits change: AttentionBlocks.cpp).
  kernels.keyBlocks = true;
  // Cross-entropy's online max and sum in 8 vector lanes (the last bits of
  // the loss change: LossKernels.cpp).
  kernels.rowLanes = true;
  // ... and its gradient over the logits' buffer (bit-identical).
  kernels.lossGradInPlace = true;
  // ... and elementwise results over an operand nothing reads afterwards
  // (bit-identical).
  kernels.elementwiseInPlace = true;
  // The clipping scale read once in front of the AdamW loops (vectorized).
  kernels.scalarsBeforeNests = true;
  // Weight gradients go straight into the gradient buffers (OpenBLAS,
  // beta = 1): no buffer and no accumulation pass per weight. OpenBLAS
  // adds C into its partial sums: the same bits as the separate loop for a
  // step's first micro-batch, the last bits differ for the later ones.
  kernels.accumulateInGemm = true;
  pm.addPass(mlir::triax::createConvertTriaxToKernels(kernels));
  // One function per kernel: keeps the lowering below and LLVM linear in the
  // model's size (a 96-layer model has thousands of loop nests).
  pm.addPass(mlir::triax::createTriaxOutlineKernels());
  // Every layer's copy of a kernel is built the same way, so the copies are
  // identical already: keep one of each before the canonicalizer and CSE
  // work on them (gpt3-175b: 96 copies of each layer kernel; the flash
  // kernels of key-blocks are large). The second run below catches kernels
  // that only the canonicalizer makes identical.
  pm.addPass(mlir::triax::createTriaxDedupeKernels());
  // Fold the index arithmetic and views the kernels were written with.
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  // One function per distinct kernel (every layer's copies call it): what
  // follows works in proportion to the distinct kernels, not the layers.
  pm.addPass(mlir::triax::createTriaxDedupeKernels());
  // tanh as arithmetic the LLVM vectorizer handles (the GELU loops), the
  // formula the runtime's GELU epilogue evaluates too.
  pm.addPass(mlir::triax::createTriaxExpandMath());
  // Sums and maxima of sequential loops (LayerNorm statistics, the global
  // norm's square sums) in 8 interleaved lanes instead of one chain of
  // dependent adds (the last bits of the sums change: Passes.td).
  pm.addPass(mlir::triax::createTriaxLaneReductions());
  // Parallel loop nests onto OpenMP worksharing loops (one team per nest).
  if (options.openmp) {
    pm.addPass(createConvertSCFToOpenMPPass());
    // It wraps each loop body in a memref.alloca_scope (a stack save and
    // restore per iteration, which keeps LLVM from vectorizing the loop);
    // the canonicalizer inlines the scopes that hold no alloca (all here).
    pm.addPass(createCanonicalizerPass());
  }
  // Views (subview/collapse_shape) into plain pointer arithmetic.
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  // The flash kernels' vector<8xf32> loads, shuffles and extracts.
  pm.addPass(createConvertVectorToLLVMPass());
  // Before SCF->CF: OpenMP regions must still be single-block here.
  // Generic allocation functions: the runtime counts activation memory.
  FinalizeMemRefToLLVMConversionPassOptions memrefOptions;
  memrefOptions.useGenericFunctions = true;
  pm.addPass(createFinalizeMemRefToLLVMConversionPass(memrefOptions));
  pm.addPass(createSCFToControlFlowPass());
  // bf16 conversions (mixed precision) as integer arithmetic (round to
  // nearest even, NaN kept), so the object code needs no bf16 support from
  // the CPU or a helper library. It also expands the few other ops it knows
  // (maximumf as compare and select), exactly.
  arith::ArithExpandOpsPassOptions expand;
  expand.includeBf16 = true;
  pm.addPass(arith::createArithExpandOpsPass(expand));
  // What is left without an LLVM intrinsic (tanh of other types) calls
  // libm; the rest map to intrinsics.
  pm.addPass(createConvertMathToLibmPass());
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createConvertFuncToLLVMPass());
  if (options.openmp)
    pm.addPass(createConvertOpenMPToLLVMPass());
  pm.addPass(createConvertIndexToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
}

/// The PTX ISA version of `features` ("+ptx81" -> 81; several
/// comma-separated features may be given), or 0 when none is named.
static unsigned ptxVersion(llvm::StringRef features) {
  llvm::SmallVector<llvm::StringRef> parts;
  features.split(parts, ',');
  for (llvm::StringRef part : parts) {
    part = part.trim();
    unsigned version = 0;
    if (part.consume_front("+ptx") && !part.getAsInteger(10, version))
      return version;
  }
  return 0;
}

/// The oldest PTX ISA (x10) that can target sm_<sm> (`arch`: the "a"
/// variant), as LLVM's NVPTX backend requires it.
static unsigned minPtxVersion(unsigned sm, bool arch) {
  if (sm >= 120)
    return 87;
  if (sm >= 100)
    return 86;
  if (sm >= 90)
    return arch ? 80 : 78;
  if (sm >= 89)
    return 78;
  if (sm >= 87)
    return 74;
  if (sm >= 86)
    return 71;
  if (sm >= 80)
    return 70;
  return 63;
}

/// N of a chip name sm_N (or sm_Na); 0 when it is not one.
static unsigned smVersion(llvm::StringRef chip) {
  unsigned sm = 0;
  if (!chip.consume_front("sm_") || chip.consumeInteger(10, sm) ||
      !(chip.empty() || chip == "a"))
    return 0;
  return sm;
}

/// mma.sync.m16n8k16 with bf16 operands (attention=flash-mma) came with
/// Ampere.
static constexpr unsigned kFirstBF16MmaSm = 80;

auto ::triax::defaultCUDAAttention(llvm::StringRef chip) -> std::string {
  return smVersion(chip) >= kFirstBF16MmaSm ? "flash-mma" : "flash";
}

auto ::triax::defaultCUDAToolkit() -> std::string {
  return TRIAX_CUDA_TOOLKIT_DIR;
}

/// The attention lowering of `o` on CUDA: the one asked for, or the chip's
/// default.
static std::string cudaAttention(const ::triax::LoweringConfig &o) {
  return o.attention.empty() ? ::triax::defaultCUDAAttention(o.chip)
                             : o.attention;
}

auto ::triax::checkLowerCUDAOptions(const LoweringConfig &o) -> std::string {
  unsigned sm = smVersion(o.chip);
  if (sm == 0)
    return "chip '" + o.chip + "' is not an NVIDIA architecture such as sm_90";
  // CUDA 13's ptxas dropped everything before Turing.
  if (sm < 75)
    return "chip '" + o.chip +
           "' is older than sm_75, the oldest CUDA 13 supports";
  // LLVM's NVPTX backend stops with a fatal error on a PTX ISA too old for
  // the chip: say it here, with what would work.
  unsigned ptx = ptxVersion(o.features),
           least = minPtxVersion(sm, llvm::StringRef(o.chip).ends_with("a"));
  if (ptx && ptx < least)
    return "features '" + o.features + "': PTX ISA " +
           std::to_string(ptx / 10) + "." + std::to_string(ptx % 10) +
           " cannot target " + o.chip + ", which needs " +
           std::to_string(least / 10) + "." + std::to_string(least % 10) +
           " or newer (+ptx" + std::to_string(least) +
           "; the default is +ptx81)";
  if (o.format != "fatbin" && o.format != "bin" && o.format != "isa")
    return "format '" + o.format + "' is not fatbin, bin or isa";
  if (o.blockSize < 32 || o.blockSize > 1024 || o.blockSize % 32 != 0)
    return "block-size " + std::to_string(o.blockSize) +
           " is not a multiple of 32 in [32, 1024]";
  if (o.rows != "thread" && o.rows != "block" && o.rows != "warp")
    return "rows '" + o.rows + "' is not thread, block or warp";
  std::string attention = cudaAttention(o);
  if (attention != "flash" && attention != "flash-mma" &&
      attention != "batched-gemm" && attention != "cudnn")
    return "attention '" + attention +
           "' is not flash, flash-mma, batched-gemm or cudnn";
  // (cudnn's kernels behind the call are flash-mma's.)
  if ((attention == "flash-mma" || attention == "cudnn") &&
      sm < kFirstBF16MmaSm)
    return "attention '" + attention +
           "' needs sm_80 or newer (bf16 mma.sync); " + o.chip +
           " can use flash";
  return "";
}

/// The most bytes of kernel parameters a fused launch (AdamW, the bf16
/// copies, the gradient norm's sums) passes: 4352, the limit before PTX ISA
/// 8.1, also where 8.1 allows 32764. NVPTX keeps every pointer parameter of
/// a kernel live from its entry, so the 32764-byte launches (gpt2: all 196
/// bf16 copies in one kernel, all 196 AdamW updates in another) took 143
/// and 127 registers, one block per SM, and ran at 60 GB/s on the H200
/// (12.6 and 5.6 ms a step, ncu); with 4352 bytes ptxas gives them 17 and
/// 24-28 registers.
constexpr int64_t kFusedLaunchParamBytes = 4352;

void ::triax::buildLowerCUDAPipeline(OpPassManager &pm,
                                     const LoweringConfig &options) {
  // The same kernel IR as the CPU path (see buildLowerCPUPipeline): fused
  // elementwise chains, layer ops as loop nests and runtime calls, one
  // function per kernel.
  pm.addPass(mlir::triax::createTriaxFuseElementwise());
  // A few kernels for the AdamW updates of a step (not one per
  // parameter): consecutive triax.adamw ops share one parallel loop, as
  // many as kFusedLaunchParamBytes of kernel parameters hold.
  mlir::triax::ConvertTriaxToKernelsOptions kernels;
  kernels.fuseOptimizer = true;
  kernels.fuseBucketCopies = true;
  kernels.kernelParamBytes = kFusedLaunchParamBytes;
  kernels.geluEpilogue = options.geluEpilogue;
  kernels.fuseProjectionsOption = options.fuseProjections;
  kernels.attention = cudaAttention(options);
  // The embedding backward has `hidden` race-free iterations (tokens may
  // share a row); 768 threads would leave an H200 idle for milliseconds.
  // Vocabulary slices give it ~32k (see the option), still without
  // atomics: the same sums in the same order, proved disjoint by
  // triax-map-loops-to-gpu.
  kernels.embeddingGradThreads = 32768;
  // Bias and norm weight gradients as (row chunk, column) threads, then
  // the chunks per column: coalesced, ~64k threads (one thread or one
  // block per column read each warp's loads from 32 rows: 11.9 ms of a
  // gpt2 bf16 step on the H200).
  kernels.columnSums = "chunks";
  // Weight gradients go straight into the gradient buffers (cuBLASLt,
  // beta = 1): ~150 launches and allocations fewer per gpt2 step.
  kernels.accumulateInGemm = true;
  // Elementwise results over an operand nothing reads afterwards, as on
  // the CPU (one thread loads an element, then stores the result's, at
  // the same index; no dist op reads the operand, so no collective on the
  // second stream is still reading it), and the loss gradient over its
  // logits (each row's threads write only after the row's statistics,
  // block or warp reductions every one of them joins): the buffers the
  // planner counts (gpt2 bf16 16 x 1024: 1.65 GB of logits gradient).
  kernels.elementwiseInPlace = true;
  kernels.lossGradInPlace = true;
  pm.addPass(mlir::triax::createConvertTriaxToKernels(kernels));
  pm.addPass(mlir::triax::createTriaxOutlineKernels());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  buildKernelsToCUDAPipeline(pm, options);
}

void ::triax::buildKernelsToCUDAPipeline(OpPassManager &pm,
                                         const LoweringConfig &options) {
  // Each outermost parallel nest -> gpu.launch, one thread per iteration,
  // coalesced. The kernel functions stay host functions that launch; GEMM,
  // state and collective calls stay host calls into the CUDA runtime.
  mlir::triax::TriaxMapLoopsToGPUOptions map;
  map.blockSize = options.blockSize;
  map.rows = options.rows;
  pm.addNestedPass<func::FuncOp>(mlir::triax::createTriaxMapLoopsToGPU(map));
  // Launches and GEMMs are asynchronous (stream-ordered): code left on the
  // host waits for the device before it touches memory (the loss, the
  // gradient norm, scalar reductions), once per run of host accesses.
  pm.addPass(mlir::triax::createTriaxInsertHostSyncs());
  // Constants and index arithmetic into the launch bodies (else they
  // become kernel parameters), launch bodies -> gpu.func kernels, then all
  // kernels into one gpu.module: one device compilation and one ptxas run
  // instead of one per kernel.
  pm.addPass(createGpuLaunchSinkIndexComputationsPass());
  pm.addPass(createGpuKernelOutliningPass());
  pm.addPass(mlir::triax::createTriaxMergeGPUModules());
  // The device target: chip and PTX features decide what ptxas accepts.
  GpuNVVMAttachTargetOptions target;
  target.chip = options.chip;
  target.features = options.features;
  target.optLevel = options.optLevel;
  pm.addPass(createGpuNVVMAttachTarget(target));
  // Host and device alike: views into pointer arithmetic, structured
  // control flow into blocks (the NVVM and LLVM conversions expect both).
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createSCFToControlFlowPass());
  // Device code -> NVVM/LLVM first, so that the host conversions below
  // (math to libm in particular) find nothing left in the gpu.module.
  pm.addNestedPass<gpu::GPUModuleOp>(createConvertGpuOpsToNVVMOps());
  pm.addNestedPass<gpu::GPUModuleOp>(createCanonicalizerPass());
  pm.addNestedPass<gpu::GPUModuleOp>(createCSEPass());
  pm.addNestedPass<gpu::GPUModuleOp>(createReconcileUnrealizedCastsPass());
  // Host code exactly as on the CPU: generic allocation functions, so that
  // the runtime places and counts activation buffers (managed memory on
  // CUDA), tanh through libm.
  FinalizeMemRefToLLVMConversionPassOptions memrefOptions;
  memrefOptions.useGenericFunctions = true;
  pm.addPass(createFinalizeMemRefToLLVMConversionPass(memrefOptions));
  pm.addPass(createConvertMathToLibmPass());
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createConvertFuncToLLVMPass());
  pm.addPass(createConvertIndexToLLVMPass());
  // gpu.launch_func keeps its op (the LLVM IR translation emits the mgpu*
  // calls); its operands become LLVM values here.
  pm.addPass(createGpuToLLVMConversionPass());
  // The gpu.module -> PTX (LLVM NVPTX) -> ptxas -> fatbin, embedded as
  // gpu.binary; loaded by a global constructor through mgpuModuleLoad.
  GpuModuleToBinaryPassOptions binary;
  binary.compilationTarget = options.format;
  binary.toolkitPath = options.toolkit;
  pm.addPass(createGpuModuleToBinaryPass(binary));
  pm.addPass(createReconcileUnrealizedCastsPass());
}

/// triax-parallelize as a registered pipeline: its options are checked
/// first, so a plan that cannot be built is an error, not a silent change.
static LogicalResult buildCheckedParallelizePipeline(
    OpPassManager &pm, const ::triax::ParallelizeConfig &options,
    function_ref<LogicalResult(const Twine &)> errorHandler) {
  std::string problem = ::triax::checkParallelizeOptions(options);
  if (!problem.empty())
    return errorHandler("triax-parallelize: " + problem);
  ::triax::buildParallelizePipeline(pm, options);
  return success();
}

void ::triax::registerPipelines() {
  registerPassPipeline(
      "triax-parallelize",
      "Make a model (before triax-autodiff) the per-rank training program of "
      "a dp x pp x tp mesh: mesh, tensor parallelism, autodiff, pipeline, "
      "ZeRO or data parallelism",
      [](OpPassManager &pm, StringRef text,
         function_ref<LogicalResult(const Twine &)> errorHandler) {
        ::triax::ParallelizeOptions options;
        if (failed(options.parseFromString(text)))
          return failure();
        return buildCheckedParallelizePipeline(pm, options.config(),
                                               errorHandler);
      },
      [](function_ref<void(const detail::PassOptions &)> optHandler) {
        optHandler(::triax::ParallelizeOptions());
      });
  PassPipelineRegistration<::triax::LowerCPUOptions>(
      "triax-lower-cpu",
      "Lower a trained model (after triax-autodiff) to the LLVM dialect for "
      "the CPU: kernels, runtime calls, OpenMP (option), LLVM",
      [](OpPassManager &pm, const ::triax::LowerCPUOptions &options) {
        ::triax::buildLowerCPUPipeline(pm, options.config());
      });
  mlir::triax::registerTriaxKernelsToGPUPasses();
  registerPassPipeline(
      "triax-lower-cuda",
      "Lower a trained model (after triax-autodiff) to the LLVM dialect for "
      "NVIDIA GPUs: kernels as CUDA kernels, runtime calls, an embedded "
      "fatbin (docs/cuda.md)",
      [](OpPassManager &pm, StringRef text,
         function_ref<LogicalResult(const Twine &)> errorHandler) {
        ::triax::LowerCUDAOptions options;
        if (failed(options.parseFromString(text)))
          return failure();
        std::string problem = ::triax::checkLowerCUDAOptions(options.config());
        if (!problem.empty())
          return errorHandler("triax-lower-cuda: " + problem);
        ::triax::buildLowerCUDAPipeline(pm, options.config());
        return success();
      },
      [](function_ref<void(const detail::PassOptions &)> optHandler) {
        optHandler(::triax::LowerCUDAOptions());
      });
  registerPassPipeline(
      "triax-kernels-to-cuda",
      "The second half of triax-lower-cuda: kernel IR (after "
      "triax-outline-kernels) to the LLVM dialect and an embedded fatbin",
      [](OpPassManager &pm, StringRef text,
         function_ref<LogicalResult(const Twine &)> errorHandler) {
        ::triax::LowerCUDAOptions options;
        if (failed(options.parseFromString(text)))
          return failure();
        std::string problem = ::triax::checkLowerCUDAOptions(options.config());
        if (!problem.empty())
          return errorHandler("triax-kernels-to-cuda: " + problem);
        ::triax::buildKernelsToCUDAPipeline(pm, options.config());
        return success();
      },
      [](function_ref<void(const detail::PassOptions &)> optHandler) {
        optHandler(::triax::LowerCUDAOptions());
      });
}
