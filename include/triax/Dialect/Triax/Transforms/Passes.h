//===- Passes.h - Triax dialect passes ---------------------------*- C++
//-*-===//

#ifndef TRIAX_DIALECT_TRIAX_TRANSFORMS_PASSES_H
#define TRIAX_DIALECT_TRIAX_TRANSFORMS_PASSES_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::triax {

#define GEN_PASS_DECL
#include "triax/Dialect/Triax/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "triax/Dialect/Triax/Transforms/Passes.h.inc"

} // namespace mlir::triax

#endif // TRIAX_DIALECT_TRIAX_TRANSFORMS_PASSES_H
