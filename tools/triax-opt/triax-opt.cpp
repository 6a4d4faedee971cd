//===- triax-opt.cpp - Triax's `mlir-opt` ---------------------------------===//
//
// Parses, verifies, transforms and prints Triax IR; every pass of the
// compiler can be run on its own here.
//
//===----------------------------------------------------------------------===//

#include "triax/InitAll.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  triax::registerAllDialects(registry);
  triax::registerAllPasses();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "Triax optimizer driver\n", registry));
}
