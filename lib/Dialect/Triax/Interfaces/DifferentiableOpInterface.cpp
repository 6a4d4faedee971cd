//===- DifferentiableOpInterface.cpp --------------------------------------===//

#include "triax/Dialect/Triax/Interfaces/DifferentiableOpInterface.h"

#include "triax/Dialect/Triax/Interfaces/DifferentiableOpInterface.cpp.inc"
