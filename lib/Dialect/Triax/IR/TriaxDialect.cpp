//===- TriaxDialect.cpp - Triax dialect registration ----------------------===//

#include "triax/Dialect/Triax/IR/Triax.h"

#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::triax;

#include "triax/Dialect/Triax/IR/TriaxDialect.cpp.inc"
#include "triax/Dialect/Triax/IR/TriaxEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "triax/Dialect/Triax/IR/TriaxAttrs.cpp.inc"

void TriaxDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "triax/Dialect/Triax/IR/TriaxOps.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "triax/Dialect/Triax/IR/TriaxAttrs.cpp.inc"
      >();
}

LogicalResult TriaxDialect::verifyOperationAttribute(Operation *op,
                                                     NamedAttribute attr) {
  // On a backward triax.block: what triax-recompute made it recompute.
  if (attr.getName() == "triax.recompute") {
    auto mode = dyn_cast<StringAttr>(attr.getValue());
    if (!isa<BlockOp>(op))
      return op->emitOpError("'triax.recompute' applies to triax.block only");
    if (!mode || (mode.getValue() != "full" && mode.getValue() != "selective"))
      return op->emitOpError("'triax.recompute' must be \"full\" or "
                             "\"selective\", got ")
             << attr.getValue();
    return success();
  }
  if (attr.getName() == kCheckpointTransposedAttrName) {
    auto param = dyn_cast<ParamOp>(op);
    if (!param)
      return op->emitOpError("'") << kCheckpointTransposedAttrName
                                  << "' applies to triax.param only";
    if (!isa<UnitAttr>(attr.getValue()))
      return op->emitOpError("'")
             << kCheckpointTransposedAttrName << "' is a unit attribute, got "
             << attr.getValue();
    if (param.getTensorType().getRank() != 2)
      return op->emitOpError("'")
             << kCheckpointTransposedAttrName
             << "' transposes a 2-D parameter, got " << param.getTensorType();
    if (op->hasAttr(kCheckpointNameAttrName))
      return op->emitOpError("'")
             << kCheckpointTransposedAttrName << "' and '"
             << kCheckpointNameAttrName
             << "' together: a transposed parameter is its own tensor";
    return success();
  }
  if (attr.getName() != kCheckpointNameAttrName)
    return op->emitError("unknown triax attribute '")
           << attr.getName().getValue() << "'; expected '"
           << kCheckpointNameAttrName << "' or '"
           << kCheckpointTransposedAttrName << "'";
  if (!isa<ParamOp>(op))
    return op->emitOpError("'")
           << kCheckpointNameAttrName << "' applies to triax.param only";
  auto name = dyn_cast<StringAttr>(attr.getValue());
  if (!name || name.getValue().empty())
    return op->emitOpError("'")
           << kCheckpointNameAttrName << "' must be a non-empty string, got "
           << attr.getValue();
  return success();
}
