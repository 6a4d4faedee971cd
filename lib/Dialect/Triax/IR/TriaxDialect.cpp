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
