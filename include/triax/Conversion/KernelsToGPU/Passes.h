//===- Passes.h - Kernel loops to GPU kernels --------------------*- C++
//-*-===//
//
// The passes of the CUDA lowering that are Triax's own (the rest of
// triax-lower-cuda is upstream's GPU and NVVM lowering).
//
//===----------------------------------------------------------------------===//

#ifndef TRIAX_CONVERSION_KERNELSTOGPU_PASSES_H
#define TRIAX_CONVERSION_KERNELSTOGPU_PASSES_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::triax {

#define GEN_PASS_DECL
#include "triax/Conversion/KernelsToGPU/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "triax/Conversion/KernelsToGPU/Passes.h.inc"

} // namespace mlir::triax

#endif // TRIAX_CONVERSION_KERNELSTOGPU_PASSES_H
