//===- Pipelines.h - Triax's pass pipelines ---------------------*- C++ -*-===//

#ifndef TRIAX_PIPELINES_PIPELINES_H
#define TRIAX_PIPELINES_PIPELINES_H

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"

namespace triax {

struct LowerCPUOptions : public mlir::PassPipelineOptions<LowerCPUOptions> {
  Option<bool> openmp{*this, "openmp",
                      llvm::cl::desc("Run the kernels' parallel loops on "
                                     "OpenMP threads"),
                      llvm::cl::init(false)};
};

/// Model after triax-autodiff -> LLVM dialect, for the CPU.
void buildLowerCPUPipeline(mlir::OpPassManager &pm,
                           const LowerCPUOptions &options);

/// Registers `triax-lower-cpu` (and the pipelines later issues add).
void registerPipelines();

} // namespace triax

#endif // TRIAX_PIPELINES_PIPELINES_H
