//===- Compiler.h - triaxc: model IR to a training binary --------*- C++ -*-===//

#ifndef TRIAX_DRIVER_COMPILER_H
#define TRIAX_DRIVER_COMPILER_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

namespace triax {

struct CompileOptions {
  std::string inputFile = "-";
  std::string outputFile = "train";
  /// "cpu" (the only target built so far).
  std::string target = "cpu";
  /// "" (link a binary), "mlir" (after autodiff), "mlir-after=<pass>",
  /// "llvm" (LLVM IR) or "obj" (the model's object file).
  std::string emit;
  bool verbose = false;
  bool openmp = false;
  /// Where libtriax_rt.a and triax_rt.h are (defaults: the build tree).
  std::string runtimeLibDir, runtimeIncludeDir;
  /// The C compiler that compiles the model descriptor and links.
  std::string cc = "cc";
};

/// Runs the whole compilation; errors are printed to `errs` with their
/// location. Returns the process exit code.
int compile(const CompileOptions &options, llvm::raw_ostream &errs);

/// The C source of the model descriptor (parameter table, training config,
/// wrappers around the compiled entry points, main) for `model`.
std::string emitModelDescriptor(mlir::ModuleOp module);

} // namespace triax

#endif // TRIAX_DRIVER_COMPILER_H
