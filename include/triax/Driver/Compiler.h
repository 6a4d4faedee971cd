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
  /// How the model is lowered to the target (LoweringOptions.def): the
  /// attention kernels, the GEMM epilogues, OpenMP and the fused optimizer
  /// (cpu), the architecture, PTX features, toolkit and kernel shapes
  /// (cuda). An option of the other target is refused.
  LoweringConfig lowering;
  /// "" (link a binary), "mlir" (after autodiff), "mlir-after=<pass>",
  /// "llvm" (LLVM IR), "obj" (the model's object file) or "descriptor" (the
  /// C model descriptor).
  std::string emit;
  bool verbose = false;
  /// Where libtriax_rt.a and triax_rt.h are (defaults: the build tree).
  std::string runtimeLibDir, runtimeIncludeDir;
  /// The C compiler that compiles the model descriptor and links.
  std::string cc = "cc";
  /// The parallelization: mesh, ZeRO, sequence parallelism,
  /// recomputation, precision, pipeline (ParallelizeOptions.def). Empty
  /// mesh: one device, no parallel pass.
  ParallelizeConfig parallelize;
  /// "" (compile), "text" or "json": print the cost model's report of the
  /// parallelized model for rank `reportRank` (docs/cost-model.md) and stop.
  std::string report;
  int64_t reportRank = 0;
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
/// kernels run on `device` ("cpu" or "cuda", the target); planGpusPerNode:
/// the GPUs per node of the plan it was compiled from (--plan --apply), 0
/// for none.
std::string emitModelDescriptor(mlir::ModuleOp module, llvm::StringRef device,
                                int64_t planGpusPerNode = 0,
                                llvm::StringRef hfConfig = "");

/// The config.json transformers' from_pretrained needs for a checkpoint of
/// the model in `module` (read before it is parallelized), or "" when its
/// checkpoints are not in a transformers layout: GPT-2's (wte, wpe, a tied
/// head; the checkpoint's Conv1D weights are GPT-2's own). LLaMA-family
/// checkpoints keep Triax's [in, out] weights, which are not nn.Linear's.
std::string huggingFaceConfig(mlir::ModuleOp module);

} // namespace triax

#endif // TRIAX_DRIVER_COMPILER_H
