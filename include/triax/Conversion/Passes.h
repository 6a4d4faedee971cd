//===- Passes.h - Triax conversion passes ------------------------*- C++
//-*-===//

#ifndef TRIAX_CONVERSION_PASSES_H
#define TRIAX_CONVERSION_PASSES_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::triax {

/// The unit attribute triax-outline-kernels puts on each kernel function.
/// It stays on the function through the LLVM conversion (llvm.func).
inline constexpr llvm::StringLiteral kKernelFuncAttr = "triax_kernel";

#define GEN_PASS_DECL
#include "triax/Conversion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "triax/Conversion/Passes.h.inc"

} // namespace mlir::triax

#endif // TRIAX_CONVERSION_PASSES_H
