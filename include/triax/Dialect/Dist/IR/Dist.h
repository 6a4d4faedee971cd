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

/// Whether a row-major buffer of `type` cut into `n` slices along `dim` is
/// already in group-major order (slice c contiguous, before slice c + 1):
/// n is 1 or every dimension before `dim` has size 1. Otherwise the
/// collectives that split or concatenate along `dim` pack or unpack it
/// through a copy of the whole buffer (the kernel conversion), which their
/// getScratchBytes counts.
bool isGroupMajor(RankedTensorType type, int64_t dim, int64_t n);

} // namespace mlir::dist

#endif // TRIAX_DIALECT_DIST_IR_DIST_H
