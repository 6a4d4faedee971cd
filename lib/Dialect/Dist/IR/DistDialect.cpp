//===- DistDialect.cpp - Dist dialect registration and attribute checks ---===//

#include "triax/Dialect/Dist/IR/Dist.h"

#include "mlir/IR/DialectImplementation.h"
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
static LogicalResult verifyShardingAnnotation(Operation *op,
                                              NamedAttribute attr, Type type,
                                              function_ref<InFlightDiagnostic()>
                                                  emitError) {
  auto sharding = dyn_cast<ShardingAttr>(attr.getValue());
  if (!sharding)
    return emitError() << "'" << DistDialect::kShardingAttrName
                       << "' must be a #dist.sharding attribute, got "
                       << attr.getValue();
  auto tensor = dyn_cast_or_null<RankedTensorType>(type);
  if (!tensor)
    return emitError() << "'" << DistDialect::kShardingAttrName
                       << "' needs a ranked tensor to shard, got "
                       << (type ? type : Type());
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
           << attr.getName() << "'; expected '" << kShardingAttrName << "'";
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
           << attr.getName() << "'";
  BlockArgument arg = op->getRegion(regionIndex).getArgument(argIndex);
  return verifyShardingAnnotation(op, attr, arg.getType(), [&] {
    return op->emitOpError("argument #") << argIndex << ": ";
  });
}
