//===- DifferentiableOpInterface.h - How an op differentiates ----*- C++
//-*-===//

#ifndef TRIAX_DIALECT_TRIAX_INTERFACES_DIFFERENTIABLEOPINTERFACE_H
#define TRIAX_DIALECT_TRIAX_INTERFACES_DIFFERENTIABLEOPINTERFACE_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpDefinition.h"

#include "triax/Dialect/Triax/Interfaces/DifferentiableOpInterface.h.inc"

#endif // TRIAX_DIALECT_TRIAX_INTERFACES_DIFFERENTIABLEOPINTERFACE_H
