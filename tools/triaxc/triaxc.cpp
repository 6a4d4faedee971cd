//===- triaxc.cpp - Compile a model to a training binary ------------------===//
//
//   triaxc model.mlir --target cpu -o train
//   triaxc model.mlir --emit=mlir-after=convert-triax-to-kernels
//
// Option parsing only; the work is lib/Driver.
//
//===----------------------------------------------------------------------===//

#include "triax/Driver/Compiler.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"

using namespace llvm;

static cl::OptionCategory category("triaxc options");
static triax::CompileOptions options;
// The parallelization's flags, declared with triax-parallelize's options
// (ParallelizeOptions.def), stored in options.parallelize.
#define TRIAX_PARALLELIZE_OPTION(Type, Field, Flag, Default, Value, Help)      \
  static cl::opt<Type, /*ExternalStorage=*/true> Field##Arg(                   \
      Flag, cl::desc(Help), cl::value_desc(Value),                             \
      cl::location(options.parallelize.Field), cl::init(Default),              \
      cl::cat(category));
#include "triax/Pipelines/ParallelizeOptions.def"
// The lowering's flags (LoweringOptions.def), stored in options.lowering;
// the help of those of one target starts with it.
#define TRIAX_LOWERING_FLAG(Type, Field, Name, Flag, Default, Value, Help,     \
                            Target)                                            \
  static cl::opt<Type, /*ExternalStorage=*/true> Field##Arg(                   \
      Flag, cl::desc(Target Help), cl::value_desc(Value),                      \
      cl::location(options.lowering.Field), cl::init(Default),                 \
      cl::cat(category));
#define TRIAX_LOWERING_COMMON_OPTION(...) TRIAX_LOWERING_FLAG(__VA_ARGS__, "")
#define TRIAX_LOWERING_CPU_OPTION(...)                                         \
  TRIAX_LOWERING_FLAG(__VA_ARGS__, "--target cpu: ")
#define TRIAX_LOWERING_CUDA_OPTION(...)                                        \
  TRIAX_LOWERING_FLAG(__VA_ARGS__, "--target cuda: ")
#include "triax/Pipelines/LoweringOptions.def"
#undef TRIAX_LOWERING_FLAG
static cl::opt<std::string> input(cl::Positional, cl::desc("<model.mlir>"),
                                  cl::init("-"), cl::cat(category));
static cl::opt<std::string> output("o", cl::desc("Output binary"),
                                   cl::value_desc("file"), cl::init("train"),
                                   cl::cat(category));
static cl::opt<std::string> target("target",
                                   cl::desc("Target: cpu or cuda (NVIDIA "
                                            "GPUs, docs/cuda.md)"),
                                   cl::init("cpu"), cl::cat(category));
static cl::opt<std::string>
    emit("emit",
         cl::desc("Stop early and print a stage: mlir (after autodiff), "
                  "mlir-after=<pass> (after that pass of triax-lower-cpu), "
                  "llvm (optimized LLVM IR), obj (write the object to -o), "
                  "descriptor (the C model descriptor linked with the "
                  "runtime)"),
         cl::init(""), cl::cat(category));
static cl::opt<bool> verbose("v", cl::desc("Print each stage and its time"),
                             cl::cat(category));
static cl::opt<std::string>
    runtimeDir("runtime-dir", cl::desc("Directory holding libtriax_rt.a"),
               cl::init(TRIAX_RUNTIME_LIB_DIR), cl::cat(category));
static cl::opt<std::string>
    runtimeInclude("runtime-include", cl::desc("Directory holding triax_rt.h"),
                   cl::init(TRIAX_RUNTIME_INCLUDE_DIR), cl::cat(category));
static cl::opt<bool>
    report("report",
           cl::desc("Print the predicted per-rank memory, per-step traffic "
                    "and step time of the parallelized model and stop "
                    "(docs/cost-model.md)"),
           cl::cat(category));
static cl::opt<bool> reportJson("report-json",
                                cl::desc("The same report as JSON"),
                                cl::cat(category));
static cl::opt<int64_t> reportRank(
    "report-rank",
    cl::desc("The rank --report and --report-json describe (default 0; on a "
             "pipeline each stage's ranks hold their own blocks)"),
    cl::value_desc("N"), cl::init(0), cl::cat(category));
static cl::opt<std::string> kernelReport(
    "kernel-report", cl::ValueOptional,
    cl::desc("Print what one training step of the compiled program runs "
             "(kernels, GEMMs, collectives, host syncs, memory traffic, "
             "roofline time on --hardware), counted from its kernel-level "
             "IR, and stop; =json for JSON (docs/cuda.md)"),
    cl::value_desc("json"), cl::init(""), cl::cat(category));
static cl::opt<std::string>
    hardware("hardware",
             cl::desc("Hardware of --report and --kernel-report: a100-40g, "
                      "a100-80g, h100-80g, h200-141g or a JSON file"),
             cl::init("h100-80g"), cl::cat(category));
// dist-plan (docs/cost-model.md "Planner"): choose the plan instead of
// compiling one, draw its schedule, or compile it (--apply).
static cl::opt<std::string>
    planSpec("plan",
             cl::desc("Rank the plans that fit (dp x tp x pp x cp x ep "
                      "(mixture-of-experts models) x zero x micro-batches x "
                      "schedule x sequence parallelism x recompute) and print "
                      "the top 5 and the rejected regions; with --report-json "
                      "as JSON"),
             cl::value_desc("gpus=N,gpu=NAME|file.json[,gpus-per-node=8]"
                            "[,global-batch=B][,micro-batch=b][,...]"),
             cl::init(""), cl::cat(category));
static cl::opt<bool>
    applyPlan("apply",
              cl::desc("With --plan: compile the top plan through "
                       "triax-parallelize (refused when it needs what the "
                       "compiler does not build yet)"),
              cl::cat(category));
static cl::opt<std::string>
    traceFile("trace",
              cl::desc("With --plan: write the top plan's predicted pipeline "
                       "schedule as Chrome trace JSON (Perfetto)"),
              cl::value_desc("schedule.json"), cl::init(""), cl::cat(category));
static cl::opt<std::string>
    svgFile("svg",
            cl::desc("With --plan: draw the same schedule as an SVG timeline"),
            cl::value_desc("schedule.svg"), cl::init(""), cl::cat(category));
static cl::opt<std::string> cc("cc", cl::desc("C compiler used to link"),
                               cl::init("cc"), cl::cat(category));

int main(int argc, char **argv) {
  InitLLVM y(argc, argv);
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(
      argc, argv,
      "triaxc: compile a Triax model into a training binary\n\n"
      "  triax-model tiny > tiny.mlir && triaxc tiny.mlir -o train && "
      "./train --steps 300\n");
  options.inputFile = input;
  options.outputFile = output;
  options.target = target;
  options.emit = emit;
  options.verbose = verbose;
  // OpenMP is on for the CPU unless --openmp=false.
  if (!openmpArg.getNumOccurrences())
    options.lowering.openmp = target == "cpu";
  // The projections are one GEMM on CUDA unless --fuse-projections=false;
  // on the CPU the weights' copy costs about what the GEMM saves
  // (docs/performance.md).
  if (!fuseProjectionsArg.getNumOccurrences())
    options.lowering.fuseProjections = target == "cuda";
  options.runtimeLibDir = runtimeDir;
  options.runtimeIncludeDir = runtimeInclude;
  options.cc = cc;
  options.report = reportJson ? "json" : report ? "text" : "";
  options.reportRank = reportRank;
  // --kernel-report alone means text.
  if (kernelReport.getNumOccurrences())
    options.kernelReport =
        kernelReport.empty() ? std::string("text") : kernelReport.getValue();
  options.hardware = hardware;
  options.plan = planSpec;
  options.apply = applyPlan;
  options.traceFile = traceFile;
  options.svgFile = svgFile;
  return triax::compile(options, errs());
}
