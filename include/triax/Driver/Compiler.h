//===- Compiler.h - triaxc: model IR to a training binary --------*- C++
//-*-===//

#ifndef TRIAX_DRIVER_COMPILER_H
#define TRIAX_DRIVER_COMPILER_H

#include "triax/Pipelines/Pipelines.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

namespace triax {

struct CompileOptions {
  std::string inputFile = "-";
  std::string outputFile = "train";
  /// "cpu" or "cuda" (docs/cuda.md).
  std::string target = "cpu";
  /// --target cuda: the GPU architecture, its PTX features ("" = the
  /// pipeline's default, +ptx81) and the CUDA toolkit (ptxas, cuBLAS).
  std::string cudaArch = "sm_90";
  std::string cudaFeatures;
  std::string cudaToolkit = "/usr/local/cuda";
  /// --target cuda: row-wise kernels as one block ("block", the default) or
  /// one thread ("thread") per row.
  std::string cudaRows = "block";
  /// "" (link a binary), "mlir" (after autodiff), "mlir-after=<pass>",
  /// "llvm" (LLVM IR), "obj" (the model's object file) or "descriptor" (the
  /// C model descriptor).
  std::string emit;
  bool verbose = false;
  bool openmp = false;
  /// --target cpu: one loop over all AdamW updates of a step (the cuda
  /// target always fuses them).
  bool fuseOptimizer = false;
  /// GELU and its gradient in the GEMM epilogues (both targets).
  bool geluEpilogue = true;
  /// How attention is lowered: flash or batched-gemm (both targets),
  /// flash-mma (cuda); empty: the target's default (flash on the CPU,
  /// flash-mma on the GPU from sm_80, flash before).
  std::string attention;
  /// Where libtriax_rt.a and triax_rt.h are (defaults: the build tree).
  std::string runtimeLibDir, runtimeIncludeDir;
  /// The C compiler that compiles the model descriptor and links.
  std::string cc = "cc";
  /// The parallelization: mesh, ZeRO, sequence parallelism,
  /// recomputation, precision, pipeline (ParallelizeOptions.def). Empty
  /// mesh: one device, no parallel pass.
  ParallelizeConfig parallelize;
  /// "" (compile), "text" or "json": print the cost model's report of the
  /// parallelized model for rank 0 (docs/cost-model.md) and stop.
  std::string report;
  /// "" (compile), "text" or "json": print the static per-step report of
  /// the compiled program (kernels, GEMMs, collectives, syncs, memory
  /// traffic, roofline time; docs/cuda.md "Kernel report"), counted from
  /// the kernel-level IR of `target`, and stop.
  std::string kernelReport;
  /// The hardware the reports predict for: a built-in name or a JSON file.
  std::string hardware = "h100-80g";
  /// --plan: "gpus=N,gpu=..." (docs/cost-model.md "Planner"): print the
  /// ranked plans (JSON when report is "json") instead of compiling; with
  /// `apply`, compile the top one (its choice replaces `parallelize`).
  /// traceFile / svgFile: the top plan's predicted schedule as Chrome trace
  /// JSON / SVG.
  std::string plan;
  bool apply = false;
  std::string traceFile, svgFile;
};

/// Runs the whole compilation; errors are printed to `errs` with their
/// location. Returns the process exit code.
int compile(const CompileOptions &options, llvm::raw_ostream &errs);

/// The C source of the model descriptor (parameter table, training config,
/// wrappers around the compiled entry points, main) for `model`, whose
/// kernels run on `device` ("cpu" or "cuda", the target).
std::string emitModelDescriptor(mlir::ModuleOp module, llvm::StringRef device);

} // namespace triax

#endif // TRIAX_DRIVER_COMPILER_H
