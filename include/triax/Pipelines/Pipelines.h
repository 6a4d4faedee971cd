//===- Pipelines.h - Triax's pass pipelines ---------------------*- C++ -*-===//

#ifndef TRIAX_PIPELINES_PIPELINES_H
#define TRIAX_PIPELINES_PIPELINES_H

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"
#include "triax/Dialect/Dist/IR/MeshShape.h"

namespace triax {

struct LowerCPUOptions : public mlir::PassPipelineOptions<LowerCPUOptions> {
  Option<bool> openmp{*this, "openmp",
                      llvm::cl::desc("Run the kernels' parallel loops on "
                                     "OpenMP threads"),
                      llvm::cl::init(false)};
  Option<bool> fuseOptimizer{
      *this, "fuse-optimizer",
      llvm::cl::desc("One parallel loop over all the AdamW updates of a step "
                     "(convert-triax-to-kernels{fuse-optimizer}; the cuda "
                     "target always does it)"),
      llvm::cl::init(false)};
  Option<std::string> attention{
      *this, "attention",
      llvm::cl::desc("Attention as flash (fused kernels, online softmax, no "
                     "T x T buffer; the default) or batched-gemm "
                     "(convert-triax-to-kernels{attention})"),
      llvm::cl::init("flash")};
  Option<bool> geluEpilogue{
      *this, "gelu-epilogue",
      llvm::cl::desc("GELU and its gradient in the GEMM epilogues "
                     "(convert-triax-to-kernels{gelu-epilogue})"),
      llvm::cl::init(true)};
};

/// Options of triax-lower-cuda (docs/cuda.md).
struct LowerCUDAOptions : public mlir::PassPipelineOptions<LowerCUDAOptions> {
  Option<std::string> chip{*this, "chip",
                           llvm::cl::desc("GPU architecture of the kernels "
                                          "(sm_75 or newer with CUDA 13)"),
                           llvm::cl::init("sm_90")};
  Option<std::string> features{
      *this, "features",
      llvm::cl::desc("PTX features; sm_90 needs PTX ISA 8.0 (+ptx80), and "
                     "8.1 (the default, +ptx81) allows 32764 bytes of "
                     "kernel parameters instead of 4352"),
      llvm::cl::init("+ptx81")};
  Option<std::string> format{
      *this, "format",
      llvm::cl::desc("What is embedded: fatbin (ptxas + fatbinary), bin "
                     "(cubin), isa (PTX, compiled by the driver at load)"),
      llvm::cl::init("fatbin")};
  Option<std::string> toolkit{
      *this, "toolkit",
      llvm::cl::desc("CUDA toolkit holding ptxas, fatbinary and libdevice"),
      llvm::cl::init("/usr/local/cuda")};
  Option<int64_t> blockSize{*this, "block-size",
                            llvm::cl::desc("Threads per block of the "
                                           "generated kernels"),
                            llvm::cl::init(256)};
  Option<std::string> rows{
      *this, "rows",
      llvm::cl::desc("Row-wise kernels (norms, softmax, cross-entropy): "
                     "block (one block per row, reductions through warp "
                     "shuffles; the default) or thread (one thread per row)"),
      llvm::cl::init("block")};
  Option<std::string> attention{
      *this, "attention",
      llvm::cl::desc("Attention as flash-mma (flash on tensor cores for bf16 "
                     "operands whose head dimension and sequence are "
                     "multiples of 16, flash otherwise; the default; sm_80 "
                     "or newer), flash (fused kernels, online softmax, no "
                     "T x T buffer, scalar FP32 dot products) or "
                     "batched-gemm (convert-triax-to-kernels{attention})"),
      llvm::cl::init("flash-mma")};
  Option<bool> geluEpilogue{
      *this, "gelu-epilogue",
      llvm::cl::desc("GELU and its gradient in the cuBLASLt GEMM epilogues "
                     "(convert-triax-to-kernels{gelu-epilogue})"),
      llvm::cl::init(true)};
  Option<unsigned> optLevel{*this, "opt-level",
                            llvm::cl::desc("LLVM optimization level of the "
                                           "device code"),
                            llvm::cl::init(3)};
};

/// Checks the options of triax-lower-cuda (chip name, format, block size);
/// returns a message naming the problem, or "" when they are usable.
std::string checkLowerCUDAOptions(const LowerCUDAOptions &options);

/// The attention lowering for CUDA `chip` when none is asked for:
/// flash-mma (bf16 mma.sync) from sm_80, flash before or for a chip name
/// that is not sm_N (checkLowerCUDAOptions reports that).
std::string defaultCUDAAttention(llvm::StringRef chip);

/// The most bytes of kernel parameters one launch may pass with PTX
/// `features`: 32764 from PTX ISA 8.1 (+ptx81 or later), else 4352.
int64_t kernelParamBytes(llvm::StringRef features);

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

/// Model (before triax-autodiff) -> the per-rank training program for a
/// dp x pp x tp mesh: dist-mesh, dist-tensor-parallel, triax-autodiff,
/// dist-pipeline, then dist-zero or dist-data-parallel, and
/// triax-mixed-precision with precision=bf16. The options must pass
/// checkParallelizeOptions.
void buildParallelizePipeline(mlir::OpPassManager &pm,
                              const ParallelizeConfig &options);

/// Model after triax-autodiff -> LLVM dialect, for the CPU.
void buildLowerCPUPipeline(mlir::OpPassManager &pm,
                           const LowerCPUOptions &options);

/// Model after triax-autodiff -> LLVM dialect for the host plus an embedded
/// GPU binary (gpu.binary) for NVIDIA GPUs: the CPU path's kernel IR with
/// each parallel loop nest turned into a CUDA kernel. The options must pass
/// checkLowerCUDAOptions.
void buildLowerCUDAPipeline(mlir::OpPassManager &pm,
                            const LowerCUDAOptions &options);

/// The second half of buildLowerCUDAPipeline, from the kernel IR of
/// triax-outline-kernels on (the kernel tests lower kernels alone with it).
void buildKernelsToCUDAPipeline(mlir::OpPassManager &pm,
                                const LowerCUDAOptions &options);

/// Registers `triax-lower-cpu` (and the pipelines later issues add).
void registerPipelines();

} // namespace triax

#endif // TRIAX_PIPELINES_PIPELINES_H
