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
    auto name = op->getAttrOfType<StringAttr>(kCheckpointNameAttrName);
    bool perExpert = name && name.getValue().count('*') == 1;
    int64_t rank = param.getTensorType().getRank();
    if (rank == 3 && !perExpert)
      return op->emitOpError("'")
             << kCheckpointTransposedAttrName
             << "' on stacked experts needs a '" << kCheckpointNameAttrName
             << "' with one '*' (each expert's tensor)";
    if (rank != 2 && rank != 3)
      return op->emitOpError("'")
             << kCheckpointTransposedAttrName
             << "' transposes a 2-D parameter (or each expert of a 3-D "
                "one), got "
             << param.getTensorType();
    if (rank == 2 && name)
      return op->emitOpError("'")
             << kCheckpointTransposedAttrName << "' and '"
             << kCheckpointNameAttrName
             << "' together: a transposed parameter is its own tensor";
    return success();
  }
  if (attr.getName() == kValidShapeAttrName) {
    auto param = dyn_cast<ParamOp>(op);
    if (!param)
      return op->emitOpError("'")
             << kValidShapeAttrName << "' applies to triax.param only";
    auto shape = dyn_cast<DenseI64ArrayAttr>(attr.getValue());
    ArrayRef<int64_t> dims = param.getTensorType().getShape();
    if (!shape || shape.size() != int64_t(dims.size()) || dims.size() > 2 ||
        llvm::any_of(llvm::zip(shape.asArrayRef(), dims), [](auto pair) {
          auto [valid, dim] = pair;
          return valid < 1 || valid > dim;
        }))
      return op->emitOpError("'")
             << kValidShapeAttrName
             << "' must be a leading block of the parameter's shape "
             << param.getTensorType()
             << " (array<i64: ...>, one positive size per dimension, "
                "rank 1 or 2), got "
             << attr.getValue();
    if (op->hasAttr(kCheckpointNameAttrName))
      return op->emitOpError("'")
             << kValidShapeAttrName << "' and '" << kCheckpointNameAttrName
             << "' together: a padded parameter is its own checkpoint tensor";
    return success();
  }
  if (attr.getName() != kCheckpointNameAttrName)
    return op->emitError("unknown triax attribute '")
           << attr.getName().getValue() << "'; expected '"
           << kCheckpointNameAttrName << "', '" << kCheckpointTransposedAttrName
           << "' or '" << kValidShapeAttrName << "'";
  if (!isa<ParamOp>(op))
    return op->emitOpError("'")
           << kCheckpointNameAttrName << "' applies to triax.param only";
  auto name = dyn_cast<StringAttr>(attr.getValue());
  if (!name || name.getValue().empty())
    return op->emitOpError("'")
           << kCheckpointNameAttrName << "' must be a non-empty string, got "
           << attr.getValue();
  if (name.getValue().contains('*') &&
      (name.getValue().count('*') != 1 ||
       !op->hasAttr(kCheckpointTransposedAttrName) ||
       cast<ParamOp>(op).getTensorType().getRank() != 3))
    return op->emitOpError("'")
           << kCheckpointNameAttrName << "' with a '*' names each expert of "
           << "stacked experts (one '*', a 3-D parameter with '"
           << kCheckpointTransposedAttrName << "'), got \"" << name.getValue()
           << "\"";
  return success();
}
