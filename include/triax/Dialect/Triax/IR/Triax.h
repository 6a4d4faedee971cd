//===- Triax.h - Triax dialect, attributes and ops ---------------*- C++
//-*-===//
//
// One header for everything the `triax` dialect defines.
//
//===----------------------------------------------------------------------===//

#ifndef TRIAX_DIALECT_TRIAX_IR_TRIAX_H
#define TRIAX_DIALECT_TRIAX_IR_TRIAX_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "triax/Dialect/Triax/Interfaces/CostOpInterface.h"
#include "triax/Dialect/Triax/Interfaces/DifferentiableOpInterface.h"
#include "triax/Dialect/Triax/Interfaces/ScalarElementwiseOpInterface.h"
#include "triax/Dialect/Triax/Interfaces/ShardingRuleOpInterface.h"

#include "triax/Dialect/Triax/IR/TriaxDialect.h.inc"
#include "triax/Dialect/Triax/IR/TriaxEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "triax/Dialect/Triax/IR/TriaxAttrs.h.inc"

namespace mlir::triax {
/// Marks the ops on the fp32 master state of the parameters
/// (Triax_MasterPrecision in TriaxBase.td): their float tensors stay f32
/// under mixed precision.
template <typename ConcreteType>
class MasterPrecision
    : public ::mlir::OpTrait::TraitBase<ConcreteType, MasterPrecision> {};

/// Marks the ops whose kernels read their float tensor operands as strided
/// rows (Triax_ReadsRowViews in TriaxBase.td): a column slice reaches them
/// as a view of the wider buffer.
template <typename ConcreteType>
class ReadsRowViews
    : public ::mlir::OpTrait::TraitBase<ConcreteType, ReadsRowViews> {};

/// The type the kernels compute an element of type `elementType` in: f32
/// for bf16 (loads extend, stores round to nearest even), the type itself
/// otherwise.
Type getComputeElementType(Type elementType);

/// An `arith.constant` of float tensor type `type` with every element
/// `value` (a zero gradient, the loss's seed, a gradient's scale).
Value createFloatSplat(OpBuilder &b, Location loc, Type type, double value);

/// Replaces each `triax.block` nested in `root` by its body (the kernel
/// lowering, and dist-pipeline's weight-pass split, see through blocks).
void inlineBlocks(Operation *root);
} // namespace mlir::triax

#define GET_OP_CLASSES
#include "triax/Dialect/Triax/IR/TriaxOps.h.inc"

#endif // TRIAX_DIALECT_TRIAX_IR_TRIAX_H
