//===- Passes.h - Dist dialect passes ----------------------------*- C++
//-*-===//

#ifndef TRIAX_DIALECT_DIST_TRANSFORMS_PASSES_H
#define TRIAX_DIALECT_DIST_TRANSFORMS_PASSES_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::dist {

#define GEN_PASS_DECL
#include "triax/Dialect/Dist/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "triax/Dialect/Dist/Transforms/Passes.h.inc"

} // namespace mlir::dist

#endif // TRIAX_DIALECT_DIST_TRANSFORMS_PASSES_H
