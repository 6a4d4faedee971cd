//===- InitAll.cpp - Register Triax's dialects and passes -----------------===//

#include "triax/InitAll.h"

#include "triax/Conversion/Passes.h"
#include "triax/Dialect/Dist/IR/Dist.h"
#include "triax/Dialect/Dist/Transforms/Passes.h"
#include "triax/Dialect/Triax/IR/Triax.h"
#include "triax/Dialect/Triax/Transforms/Passes.h"
#include "triax/Pipelines/Pipelines.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/OpenMP/OpenMPDialect.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllPasses.h"

void triax::registerAllDialects(mlir::DialectRegistry &registry) {
  registry.insert<mlir::triax::TriaxDialect, mlir::dist::DistDialect,
                  mlir::func::FuncDialect, mlir::arith::ArithDialect,
                  mlir::tensor::TensorDialect, mlir::math::MathDialect,
                  mlir::memref::MemRefDialect, mlir::scf::SCFDialect,
                  mlir::LLVM::LLVMDialect, mlir::omp::OpenMPDialect,
                  mlir::cf::ControlFlowDialect, mlir::vector::VectorDialect>();
}

void triax::registerAllPasses() {
  // Every upstream pass, so that any stage of a Triax pipeline can be
  // reproduced and inspected with triax-opt.
  mlir::registerAllPasses();
  mlir::triax::registerTriaxPasses();
  mlir::dist::registerDistPasses();
  mlir::triax::registerTriaxConversionPasses();
  triax::registerPipelines();
}
