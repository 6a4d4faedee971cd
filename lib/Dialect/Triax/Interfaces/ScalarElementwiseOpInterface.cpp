//===- ScalarElementwiseOpInterface.cpp -----------------------------------===//

#include "triax/Dialect/Triax/Interfaces/ScalarElementwiseOpInterface.h"

#include "triax/Dialect/Triax/Interfaces/ScalarElementwiseOpInterface.cpp.inc"
