//===- Pipelines.cpp - Triax's pass pipelines, step by step ---------------===//

#include "triax/Pipelines/Pipelines.h"

#include "triax/Conversion/Passes.h"
#include "triax/Dialect/Triax/Transforms/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

void ::triax::buildLowerCPUPipeline(OpPassManager &pm,
                                    const LowerCPUOptions &options) {
  // Chains of elementwise ops -> one triax.fused_elementwise each, so that
  // the kernel conversion emits one loop per chain (each input read once,
  // no buffers for the values used only inside it) instead of one loop and
  // one buffer per op. It runs on the whole module and fuses within each
  // block it finds: function bodies and triax.block regions alike (the
  // conversion inlines the blocks later, so nothing fuses across them).
  pm.addPass(mlir::triax::createTriaxFuseElementwise());
  // Layer ops -> loop nests on buffers + runtime GEMM/state calls; buffers
  // are freed after their last use. Target-neutral up to here.
  pm.addPass(mlir::triax::createConvertTriaxToKernels());
  // One function per kernel: keeps the lowering below and LLVM linear in the
  // model's size (a 96-layer model has thousands of loop nests).
  pm.addPass(mlir::triax::createTriaxOutlineKernels());
  // Fold the index arithmetic and views the kernels were written with.
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  // Parallel loop nests onto OpenMP worksharing loops (one team per nest).
  if (options.openmp)
    pm.addPass(createConvertSCFToOpenMPPass());
  // Views (subview/collapse_shape) into plain pointer arithmetic.
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  // Before SCF->CF: OpenMP regions must still be single-block here.
  // Generic allocation functions: the runtime counts activation memory.
  FinalizeMemRefToLLVMConversionPassOptions memrefOptions;
  memrefOptions.useGenericFunctions = true;
  pm.addPass(createFinalizeMemRefToLLVMConversionPass(memrefOptions));
  pm.addPass(createSCFToControlFlowPass());
  // tanh has no LLVM intrinsic: call libm's; the rest map to intrinsics.
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

void ::triax::registerPipelines() {
  PassPipelineRegistration<::triax::LowerCPUOptions>(
      "triax-lower-cpu",
      "Lower a trained model (after triax-autodiff) to the LLVM dialect for "
      "the CPU: kernels, runtime calls, OpenMP (option), LLVM",
      ::triax::buildLowerCPUPipeline);
}
