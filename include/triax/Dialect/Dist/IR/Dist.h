//===- Dist.h - Dist dialect, attributes and ops -----------------*- C++
//-*-===//

#ifndef TRIAX_DIALECT_DIST_IR_DIST_H
#define TRIAX_DIALECT_DIST_IR_DIST_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "triax/Dialect/Triax/Interfaces/CostOpInterface.h"
#include "triax/Dialect/Triax/Interfaces/DifferentiableOpInterface.h"
#include "triax/Dialect/Triax/Interfaces/ShardingRuleOpInterface.h"

#include "triax/Dialect/Dist/IR/DistDialect.h.inc"
#include "triax/Dialect/Dist/IR/DistEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "triax/Dialect/Dist/IR/DistAttrs.h.inc"

#define GET_OP_CLASSES
#include "triax/Dialect/Dist/IR/DistOps.h.inc"

namespace mlir::dist {

/// Finds mesh `name` in the nearest enclosing symbol table that defines it
/// (a mesh is usually declared at module level, above a `triax.model`).
MeshOp lookupMesh(Operation *from, FlatSymbolRefAttr name,
                  SymbolTableCollection *symbolTable = nullptr);

/// Checks `sharding` against a tensor of type `type` on `mesh`: one entry
/// per dimension, every axis in the mesh, every sharded static dimension
/// divisible by the product of its axes' sizes.
LogicalResult verifySharding(ShardingAttr sharding, RankedTensorType type,
                             MeshOp mesh,
                             function_ref<InFlightDiagnostic()> emitError);

} // namespace mlir::dist

#endif // TRIAX_DIALECT_DIST_IR_DIST_H
