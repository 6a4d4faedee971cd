//===- ScalarElementwiseOpInterface.h - Scalar formula ---------*- C++ -*-===//

#ifndef TRIAX_DIALECT_TRIAX_INTERFACES_SCALARELEMENTWISEOPINTERFACE_H
#define TRIAX_DIALECT_TRIAX_INTERFACES_SCALARELEMENTWISEOPINTERFACE_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpDefinition.h"

#include "triax/Dialect/Triax/Interfaces/ScalarElementwiseOpInterface.h.inc"

#endif // TRIAX_DIALECT_TRIAX_INTERFACES_SCALARELEMENTWISEOPINTERFACE_H
