//===- CostOpInterface.cpp ------------------------------------------------===//

#include "triax/Dialect/Triax/Interfaces/CostOpInterface.h"

#include "triax/Dialect/Triax/Interfaces/CostOpInterface.cpp.inc"
