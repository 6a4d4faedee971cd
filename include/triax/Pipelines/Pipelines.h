//===- Pipelines.h - Triax's pass pipelines ---------------------*- C++ -*-===//

#ifndef TRIAX_PIPELINES_PIPELINES_H
#define TRIAX_PIPELINES_PIPELINES_H

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"
#include "triax/Dialect/Dist/IR/MeshShape.h"

namespace triax {

/// The CUDA toolkit found when Triax was configured (/usr/local/cuda when
/// none was).
std::string defaultCUDAToolkit();

/// How a trained model is lowered to its target: the attention kernels,
/// the GEMM epilogues, OpenMP and the fused optimizer on the CPU, the GPU's
/// architecture, PTX features, toolkit and kernel shapes on CUDA. Its
/// fields, their defaults and their help are declared once, in
/// LoweringOptions.def, as are the pipelines' textual options below and
/// triaxc's flags.
struct LoweringConfig {
#define TRIAX_LOWERING_OPTION(Type, Field, Name, Flag, Default, Value, Help)   \
  Type Field = Default;
#include "triax/Pipelines/LoweringOptions.def"
};

/// A pipeline's textual options from LoweringOptions.def: the common ones
/// and those of one target.
#define TRIAX_LOWERING_PIPELINE_OPTION(Type, Field, Name, Flag, Default,       \
                                       Value, Help)                            \
  Option<Type> Field{*this, Name, llvm::cl::desc(Help),                        \
                     llvm::cl::value_desc(Value), llvm::cl::init(Default)};
#define TRIAX_LOWERING_PIPELINE_FIELD(Type, Field, ...) config.Field = Field;

/// Options of triax-lower-cpu.
struct LowerCPUOptions : public mlir::PassPipelineOptions<LowerCPUOptions> {
#define TRIAX_LOWERING_COMMON_OPTION TRIAX_LOWERING_PIPELINE_OPTION
#define TRIAX_LOWERING_CPU_OPTION TRIAX_LOWERING_PIPELINE_OPTION
#include "triax/Pipelines/LoweringOptions.def"

  /// The values parsed (the CUDA options keep their defaults).
  LoweringConfig config() const {
    LoweringConfig config;
#define TRIAX_LOWERING_COMMON_OPTION TRIAX_LOWERING_PIPELINE_FIELD
#define TRIAX_LOWERING_CPU_OPTION TRIAX_LOWERING_PIPELINE_FIELD
#include "triax/Pipelines/LoweringOptions.def"
    return config;
  }
};

/// Options of triax-lower-cuda and triax-kernels-to-cuda (docs/cuda.md).
struct LowerCUDAOptions : public mlir::PassPipelineOptions<LowerCUDAOptions> {
#define TRIAX_LOWERING_COMMON_OPTION TRIAX_LOWERING_PIPELINE_OPTION
#define TRIAX_LOWERING_CUDA_OPTION TRIAX_LOWERING_PIPELINE_OPTION
#include "triax/Pipelines/LoweringOptions.def"

  /// The values parsed (the CPU options keep their defaults).
  LoweringConfig config() const {
    LoweringConfig config;
#define TRIAX_LOWERING_COMMON_OPTION TRIAX_LOWERING_PIPELINE_FIELD
#define TRIAX_LOWERING_CUDA_OPTION TRIAX_LOWERING_PIPELINE_FIELD
#include "triax/Pipelines/LoweringOptions.def"
    return config;
  }
};

#undef TRIAX_LOWERING_PIPELINE_OPTION
#undef TRIAX_LOWERING_PIPELINE_FIELD

/// Checks the CUDA options of `options` (chip name, PTX features, format,
/// block size, rows, attention); returns a message naming the problem, or
/// "" when they are usable.
std::string checkLowerCUDAOptions(const LoweringConfig &options);

/// The attention lowering for CUDA `chip` when none is asked for:
/// flash-mma (bf16 mma.sync) from sm_80, flash before or for a chip name
/// that is not sm_N (checkLowerCUDAOptions reports that).
std::string defaultCUDAAttention(llvm::StringRef chip);

/// What triax-parallelize builds: the mesh, ZeRO, sequence parallelism,
/// recomputation, precision and the pipeline's micro-batches, schedule and
/// stages. Its fields, their defaults and their help are declared once, in
/// ParallelizeOptions.def, as are ParallelizeOptions (the pass pipeline's
/// textual options) and triaxc's flags.
struct ParallelizeConfig {
#define TRIAX_PARALLELIZE_OPTION(Type, Field, Flag, Default, Value, Help)      \
  Type Field = Default;
#include "triax/Pipelines/ParallelizeOptions.def"
};

/// triax-parallelize's options as a pass pipeline's (triax-opt
/// --pass-pipeline='builtin.module(triax-parallelize{mesh=dp=2 zero=1})').
struct ParallelizeOptions
    : public mlir::PassPipelineOptions<ParallelizeOptions> {
#define TRIAX_PARALLELIZE_OPTION(Type, Field, Flag, Default, Value, Help)      \
  Option<Type> Field{*this, Flag, llvm::cl::desc(Help),                        \
                     llvm::cl::init(Default)};
#include "triax/Pipelines/ParallelizeOptions.def"

  /// The values parsed.
  ParallelizeConfig config() const {
    ParallelizeConfig config;
#define TRIAX_PARALLELIZE_OPTION(Type, Field, Flag, Default, Value, Help)      \
  config.Field = Field;
#include "triax/Pipelines/ParallelizeOptions.def"
    return config;
  }
};

/// Checks the plan of `options` (sizes, ZeRO without dp, ZeRO 2/3 with pp,
/// the schedule); returns a message naming the problem, or "" when it can
/// be built. What depends on the model (blocks per stage, micro-batches)
/// is checked by the passes.
std::string checkParallelizeOptions(const ParallelizeConfig &options);

/// The mesh of `options` (which must pass checkParallelizeOptions); no
/// axes for mesh="".
mlir::dist::MeshShape meshShapeOf(const ParallelizeConfig &options);

/// The multiple triax-pad-vocab rounds the vocabulary up to: pad-vocab (0
/// taken as 1) times tp; 1: no padding.
int64_t padVocabMultiple(const ParallelizeConfig &options);

/// pad-vocab's default on `target` (what 0 stands for): 64 on "cuda" (each
/// tp rank's share of the LM head a multiple of 64 columns, which the
/// aligned tensor-core GEMMs need), 1 on the CPU (padding measured no
/// faster there: docs/performance.md).
int64_t defaultPadVocab(llvm::StringRef target);

/// Model (before triax-autodiff) -> the per-rank training program for a
/// dp x pp x tp mesh: dist-mesh, dist-tensor-parallel, triax-autodiff,
/// dist-pipeline, then dist-zero or dist-data-parallel, and
/// triax-mixed-precision with precision=bf16. The options must pass
/// checkParallelizeOptions.
void buildParallelizePipeline(mlir::OpPassManager &pm,
                              const ParallelizeConfig &options);

/// Model after triax-autodiff -> LLVM dialect, for the CPU.
void buildLowerCPUPipeline(mlir::OpPassManager &pm,
                           const LoweringConfig &options);

/// Model after triax-autodiff -> LLVM dialect for the host plus an embedded
/// GPU binary (gpu.binary) for NVIDIA GPUs: the CPU path's kernel IR with
/// each parallel loop nest turned into a CUDA kernel. The options must pass
/// checkLowerCUDAOptions.
void buildLowerCUDAPipeline(mlir::OpPassManager &pm,
                            const LoweringConfig &options);

/// The second half of buildLowerCUDAPipeline, from the kernel IR of
/// triax-outline-kernels on (the kernel tests lower kernels alone with it).
void buildKernelsToCUDAPipeline(mlir::OpPassManager &pm,
                                const LoweringConfig &options);

/// Registers `triax-lower-cpu` (and the pipelines later issues add).
void registerPipelines();

} // namespace triax

#endif // TRIAX_PIPELINES_PIPELINES_H
