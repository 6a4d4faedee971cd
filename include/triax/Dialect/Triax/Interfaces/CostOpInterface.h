//===- CostOpInterface.h - What an op costs ---------------------*- C++ -*-===//

#ifndef TRIAX_DIALECT_TRIAX_INTERFACES_COSTOPINTERFACE_H
#define TRIAX_DIALECT_TRIAX_INTERFACES_COSTOPINTERFACE_H

#include "mlir/IR/OpDefinition.h"

#include "triax/Dialect/Triax/Interfaces/CostOpInterface.h.inc"

#endif // TRIAX_DIALECT_TRIAX_INTERFACES_COSTOPINTERFACE_H
