//===- DistDialect.cpp - Dist dialect registration and attribute checks ---===//

#include "triax/Dialect/Dist/IR/Dist.h"

#include "mlir/IR/DialectImplementation.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::dist;

#include "triax/Dialect/Dist/IR/DistDialect.cpp.inc"
#include "triax/Dialect/Dist/IR/DistEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "triax/Dialect/Dist/IR/DistAttrs.cpp.inc"

void DistDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "triax/Dialect/Dist/IR/DistOps.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "triax/Dialect/Dist/IR/DistAttrs.cpp.inc"
      >();
}

/// Checks a `dist.sharding` attribute placed on a value of type `type`.
static LogicalResult
verifyShardingAnnotation(Operation *op, NamedAttribute attr, Type type,
                         function_ref<InFlightDiagnostic()> emitError) {
  auto sharding = dyn_cast<ShardingAttr>(attr.getValue());
  if (!sharding)
    return emitError() << "'" << DistDialect::kShardingAttrName
                       << "' must be a #dist.sharding attribute, got "
                       << attr.getValue();
  if (!type)
    return emitError() << "'" << DistDialect::kShardingAttrName
                       << "' needs an op with one ranked tensor result or a "
                          "tensor 'type' attribute";
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor)
    return emitError() << "'" << DistDialect::kShardingAttrName
                       << "' needs a ranked tensor to shard, got " << type;
  MeshOp mesh = lookupMesh(op, sharding.getMesh());
  if (!mesh)
    return emitError() << "sharding refers to unknown mesh "
                       << sharding.getMesh();
  return verifySharding(sharding, tensor, mesh, emitError);
}

LogicalResult DistDialect::verifyOperationAttribute(Operation *op,
                                                    NamedAttribute attr) {
  if (attr.getName() != kShardingAttrName)
    return op->emitError("unknown dist attribute '")
           << attr.getName().getValue() << "'; expected '" << kShardingAttrName
           << "'";
  // The sharded tensor is the op's `type` attribute (e.g. triax.param) or
  // its single result.
  Type type;
  if (auto typeAttr = op->getAttrOfType<TypeAttr>("type"))
    type = typeAttr.getValue();
  else if (op->getNumResults() == 1)
    type = op->getResult(0).getType();
  return verifyShardingAnnotation(op, attr, type,
                                  [&] { return op->emitOpError(); });
}

LogicalResult DistDialect::verifyRegionArgAttribute(Operation *op,
                                                    unsigned regionIndex,
                                                    unsigned argIndex,
                                                    NamedAttribute attr) {
  if (attr.getName() != kShardingAttrName)
    return op->emitError("unknown dist argument attribute '")
           << attr.getName().getValue() << "'";
  // Declarations have no entry block: take the type from the signature.
  Type type;
  if (auto fn = dyn_cast<FunctionOpInterface>(op))
    type = fn.getArgumentTypes()[argIndex];
  else
    type = op->getRegion(regionIndex).getArgument(argIndex).getType();
  return verifyShardingAnnotation(op, attr, type, [&] {
    return op->emitOpError("argument #") << argIndex << ": ";
  });
}

LogicalResult DistDialect::verifyRegionResultAttribute(Operation *op,
                                                       unsigned regionIndex,
                                                       unsigned resultIndex,
                                                       NamedAttribute attr) {
  if (attr.getName() != kShardingAttrName)
    return op->emitError("unknown dist result attribute '")
           << attr.getName().getValue() << "'";
  auto fn = dyn_cast<FunctionOpInterface>(op);
  if (!fn)
    return op->emitOpError("'")
           << kShardingAttrName << "' on a result needs a function";
  return verifyShardingAnnotation(
      op, attr, fn.getResultTypes()[resultIndex],
      [&] { return op->emitOpError("result #") << resultIndex << ": "; });
}
