//===- Compiler.cpp - triaxc: model IR to a training binary ---------------===//
//
//   parse + verify -> triax-autodiff (unless done) -> triax-lower-cpu
//   -> LLVM IR (-O3) -> object -> + model descriptor (C) -> link with the
//   runtime and BLAS.
//
// Each step can be shown (--emit) and timed (-v).
//
//===----------------------------------------------------------------------===//

#include "triax/Driver/Compiler.h"

#include "triax/Conversion/Passes.h"
#include "triax/CostModel/CostModel.h"
#include "triax/CostModel/KernelReport.h"
#include "triax/CostModel/Planner.h"

#include "triax/Dialect/Dist/Transforms/MeshAxis.h"
#include "triax/Dialect/Dist/Transforms/Passes.h"
#include "triax/Dialect/Triax/IR/Triax.h"
#include "triax/Dialect/Triax/Transforms/Passes.h"
#include "triax/InitAll.h"
#include "triax/Pipelines/Pipelines.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/GPU/GPUToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/NVVM/NVVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/OpenMP/OpenMPToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Target/TargetOptions.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/SubtargetFeature.h"
#include "llvm/Transforms/Utils/Cloning.h"

#include <chrono>
#include <memory>

using namespace mlir;

namespace {
/// Prints "[triaxc] <stage> <ms>" for each stage with -v.
class StageTimer {
public:
  StageTimer(bool enabled, llvm::raw_ostream &os) : enabled(enabled), os(os) {}
  void done(llvm::StringRef stage) {
    auto now = std::chrono::steady_clock::now();
    if (enabled)
      os << llvm::formatv(
          "[triaxc] {0,-28} {1,8:f1} ms\n", stage,
          std::chrono::duration<double, std::milli>(now - last).count());
    last = now;
  }

private:
  bool enabled;
  llvm::raw_ostream &os;
  std::chrono::steady_clock::time_point last = std::chrono::steady_clock::now();
};
} // namespace

/// `path` opened for writing (removed unless kept), or null with the
/// error reported.
static std::unique_ptr<llvm::ToolOutputFile>
openForWriting(llvm::StringRef path, llvm::raw_ostream &errs) {
  std::string error;
  std::unique_ptr<llvm::ToolOutputFile> file = openOutputFile(path, &error);
  if (!file)
    errs << "triaxc: " << error << "\n";
  return file;
}

/// Writes `text` to `path` (a file that fails to be written is removed).
static LogicalResult writeFile(llvm::StringRef path, llvm::StringRef text,
                               llvm::raw_ostream &errs) {
  std::unique_ptr<llvm::ToolOutputFile> file = openForWriting(path, errs);
  if (!file)
    return failure();
  file->os() << text;
  file->keep();
  return success();
}

static std::unique_ptr<llvm::TargetMachine> createHostTargetMachine(
    llvm::raw_ostream &errs,
    llvm::CodeGenOptLevel level = llvm::CodeGenOptLevel::Aggressive) {
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  llvm::Triple triple(llvm::sys::getDefaultTargetTriple());
  std::string error;
  const llvm::Target *target =
      llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target) {
    errs << "triaxc: no target for " << triple.str() << ": " << error << "\n";
    return nullptr;
  }
  llvm::SubtargetFeatures features;
  for (const auto &[name, enabled] : llvm::sys::getHostCPUFeatures())
    features.AddFeature(name, enabled);
  return std::unique_ptr<llvm::TargetMachine>(target->createTargetMachine(
      triple, llvm::sys::getHostCPUName(), features.getString(),
      llvm::TargetOptions(), llvm::Reloc::PIC_, std::nullopt, level));
}

/// Writes `module` as an object file at `path` with `machine`.
static LogicalResult emitObjectFile(llvm::Module &module,
                                    llvm::TargetMachine &machine,
                                    const std::string &path,
                                    llvm::raw_ostream &errs) {
  std::unique_ptr<llvm::ToolOutputFile> obj = openForWriting(path, errs);
  if (!obj)
    return failure();
  llvm::legacy::PassManager codegen;
  if (machine.addPassesToEmitFile(codegen, obj->os(), nullptr,
                                  llvm::CodeGenFileType::ObjectFile)) {
    errs << "triaxc: the target cannot emit object files\n";
    return failure();
  }
  codegen.run(module);
  obj->os().flush();
  obj->keep();
  return success();
}

/// `module` as two modules: (everything but the kernels, the kernels).
/// The glue declares the kernels, which are made hidden external symbols
/// so that its calls link to them. The kernels' module also keeps a
/// private copy of every local definition (the runtime-call wrappers a
/// kernel may call, as the host loop of batched-GEMM attention does, and
/// private constants) and declares the rest.
static std::pair<std::unique_ptr<llvm::Module>, std::unique_ptr<llvm::Module>>
splitKernels(llvm::Module &module, const llvm::StringSet<> &kernels) {
  auto isKernel = [&](const llvm::GlobalValue *gv) {
    return llvm::isa<llvm::Function>(gv) && kernels.contains(gv->getName());
  };
  for (llvm::Function &fn : module)
    if (isKernel(&fn) && fn.hasLocalLinkage()) {
      fn.setLinkage(llvm::GlobalValue::ExternalLinkage);
      fn.setVisibility(llvm::GlobalValue::HiddenVisibility);
    }
  llvm::ValueToValueMapTy glueMap, kernelMap;
  std::unique_ptr<llvm::Module> glue =
      llvm::CloneModule(module, glueMap, [&](const llvm::GlobalValue *gv) {
        return !isKernel(gv);
      });
  std::unique_ptr<llvm::Module> kernelPart =
      llvm::CloneModule(module, kernelMap, [&](const llvm::GlobalValue *gv) {
        return isKernel(gv) || gv->hasLocalLinkage();
      });
  return {std::move(glue), std::move(kernelPart)};
}

static int run(llvm::ArrayRef<std::string> argv, llvm::raw_ostream &errs,
               bool verbose) {
  llvm::ErrorOr<std::string> program = llvm::sys::findProgramByName(argv[0]);
  if (!program) {
    errs << "triaxc: cannot find '" << argv[0] << "' on PATH\n";
    return 1;
  }
  llvm::SmallVector<llvm::StringRef> args(argv.begin(), argv.end());
  if (verbose) {
    errs << "[triaxc]";
    for (llvm::StringRef a : args)
      errs << " " << a;
    errs << "\n";
  }
  std::string error;
  int rc =
      llvm::sys::ExecuteAndWait(*program, args, std::nullopt, {}, 0, 0, &error);
  if (rc != 0)
    errs << "triaxc: '" << argv[0] << "' failed"
         << (error.empty() ? "" : ": " + error) << "\n";
  return rc;
}

/// The lowering's options of the other target (LoweringOptions.def) are
/// refused, naming the flags given.
static LogicalResult checkTargetOptions(const ::triax::CompileOptions &options,
                                        llvm::raw_ostream &errs) {
  bool cuda = options.target == "cuda";
  const ::triax::LoweringConfig defaults;
  llvm::SmallVector<llvm::StringRef> misplaced;
#define TRIAX_LOWERING_CPU_OPTION(Type, Field, Name, Flag, Default, Value,     \
                                  Help)                                        \
  if (cuda && options.lowering.Field != defaults.Field)                        \
    misplaced.push_back("--" Flag);
#define TRIAX_LOWERING_CUDA_OPTION(Type, Field, Name, Flag, Default, Value,    \
                                   Help)                                       \
  if (!cuda && options.lowering.Field != defaults.Field)                       \
    misplaced.push_back("--" Flag);
#include "triax/Pipelines/LoweringOptions.def"
  if (misplaced.empty())
    return success();
  errs << "triaxc: " << llvm::join(misplaced, ", ")
       << (misplaced.size() == 1 ? " applies" : " apply") << " to --target "
       << (cuda ? "cpu" : "cuda") << "\n";
  return failure();
}

/// --target cuda: the lowering's options checked, and the toolkit and
/// runtime that the compilation and the link need.
static LogicalResult checkCUDATarget(const ::triax::CompileOptions &options,
                                     llvm::raw_ostream &errs) {
  std::string problem = ::triax::checkLowerCUDAOptions(options.lowering);
  if (!problem.empty()) {
    errs << "triaxc: --cuda-arch/--cuda-features/--cuda-rows: " << problem
         << "\n";
    return failure();
  }
  // --kernel-report stops before the device code is compiled: no toolkit.
  std::string ptxas = options.lowering.toolkit + "/bin/ptxas";
  if (options.kernelReport.empty() && !llvm::sys::fs::can_execute(ptxas)) {
    errs << "triaxc: --target cuda needs the CUDA toolkit: no ptxas at '"
         << ptxas << "' (set --cuda-toolkit)\n";
    return failure();
  }
  bool linking = options.emit.empty() && options.kernelReport.empty();
  std::string runtime = options.runtimeLibDir + "/libtriax_rt_cuda.a";
  if (linking && !llvm::sys::fs::exists(runtime)) {
    errs << "triaxc: --target cuda links with the CUDA runtime, but '"
         << runtime
         << "' does not exist (Triax was configured without CUDA: see "
            "docs/cuda.md)\n";
    return failure();
  }
  std::string cudnn = options.runtimeLibDir + "/libtriax_rt_cudnn.a";
  if (linking && options.lowering.attention == "cudnn" &&
      !llvm::sys::fs::exists(cudnn)) {
    errs << "triaxc: --attention=cudnn links with the runtime's cuDNN "
            "attention, but '"
         << cudnn << "' does not exist (build the target triax_rt_cudnn)\n";
    return failure();
  }
  return success();
}

/// What triax-parallelize builds for a plan of the planner.
static ::triax::ParallelizeConfig
parallelizeConfigOf(const ::triax::cost::Plan &plan, bool bf16) {
  namespace cost = ::triax::cost;
  ::triax::ParallelizeConfig config;
  config.mesh = plan.mesh().str();
  config.zero = plan.zeroStage;
  config.sequenceParallel = plan.sequenceParallel;
  config.recompute = plan.recompute == cost::Recompute::Full ? "full"
                     : plan.recompute == cost::Recompute::Selective
                         ? "selective"
                         : "none";
  config.precision = bf16 ? "bf16" : "fp32";
  // The pipeline's micro-batches and schedule (dist-pipeline).
  if (plan.pp > 1) {
    config.microbatches = plan.microBatches;
    config.schedule =
        mlir::dist::scheduleName(cost::pipelineScheduleOf(plan.schedule)).str();
    config.virtualStages = plan.virtualStages;
    config.carryGathered = plan.carryGathered;
  }
  return config;
}

/// --plan: prints the ranked plans of the model (JSON with --report-json),
/// writes --trace / --svg of the top one, and with --apply returns in
/// `applied` what triax-parallelize builds for it. Returns the exit code.
static int runPlanner(const ::triax::CompileOptions &options, ModuleOp module,
                      llvm::raw_ostream &errs,
                      std::optional<::triax::ParallelizeConfig> &applied,
                      int64_t &gpusPerNode) {
  namespace cost = ::triax::cost;
  // triaxc --precision bf16 plans with bf16 activations unless the plan
  // says otherwise.
  std::string spec = options.plan;
  bool bf16 = options.parallelize.precision == "bf16";
  if (bf16 && !llvm::StringRef(spec).contains("precision="))
    spec += ",precision=bf16";
  // The vocabulary as this target compiles it (--pad-vocab).
  if (!llvm::StringRef(spec).contains("pad-vocab="))
    spec += ",pad-vocab=" +
            std::to_string(options.parallelize.padVocab
                               ? options.parallelize.padVocab
                               : ::triax::defaultPadVocab(options.target));
  llvm::Expected<cost::PlanResult> result =
      cost::runPlan(module, spec, options.report == "json",
                    /*fixMicroBatch=*/options.apply, options.traceFile,
                    options.svgFile, llvm::outs());
  if (!result) {
    errs << "triaxc: " << llvm::toString(result.takeError()) << "\n";
    return 1;
  }
  if (options.apply && result->top.empty()) {
    errs << "triaxc: --apply: no plan fits\n";
    return 1;
  }
  if (options.apply && result->request.globalBatch &&
      result->request.globalBatch != result->model.globalBatch) {
    errs << "triaxc: --apply: global-batch=" << result->request.globalBatch
         << " differs from the model's " << result->model.globalBatch
         << " (regenerate it with triax-model --batch "
         << result->request.globalBatch << ")\n";
    return 1;
  }
  if (!options.apply)
    return 0;
  // precision=bf16 in the plan compiles in bf16.
  if (result->request.activationBytes)
    bf16 = *result->request.activationBytes == 2;
  const cost::Plan &plan = result->top.front().plan;
  ::triax::ParallelizeConfig config = parallelizeConfigOf(plan, bf16);
  std::string problem = ::triax::checkParallelizeOptions(config);
  if (!problem.empty()) {
    errs << "triaxc: --apply: the top plan cannot be built yet: " << problem
         << "; refused (add pp=1 to --plan to choose among the plans "
            "without a pipeline)\n";
    return 1;
  }
  std::string pipeline;
  if (plan.pp > 1)
    pipeline =
        " --microbatches " + std::to_string(config.microbatches) +
        " --schedule " + config.schedule +
        (config.virtualStages > 1
             ? " --virtual-stages " + std::to_string(config.virtualStages)
             : "") +
        (config.carryGathered ? " --carry-gathered" : "");
  errs << "triaxc: --apply: compiling the top plan: --mesh " << config.mesh
       << " --zero " << config.zero
       << (config.sequenceParallel ? " --sequence-parallel" : "") << pipeline
       << (config.recompute != "none" ? " --recompute " + config.recompute : "")
       << (bf16 ? " --precision bf16" : "") << "\n";
  applied = config;
  gpusPerNode = result->request.hardware.gpusPerNode;
  return 0;
}

/// The pass after which --kernel-report reads the IR: the last point where
/// the structure is visible. CUDA: after triax-insert-host-syncs (launches
/// are gpu.launch with their sizes, loops still scf, runtime calls
/// func.call, and the syncs are in). CPU: the cleanup (canonicalize, cse)
/// right after triax-outline-kernels, the IR the CUDA pipeline maps.
static llvm::StringRef kernelReportStage(bool cuda) {
  return cuda ? "triax-insert-host-syncs" : "cse";
}

/// The passes of `pipeline` up to and including the first top-level pass
/// whose argument is `last`, in `prefix`: the passes' textual form (which
/// every registered pass round-trips) cut there and parsed again.
static LogicalResult pipelineUpTo(OpPassManager &pipeline, llvm::StringRef last,
                                  OpPassManager &prefix,
                                  llvm::raw_ostream &errs) {
  static bool registered = [] {
    ::triax::registerAllPasses();
    return true;
  }();
  (void)registered;
  std::string text;
  llvm::raw_string_ostream os(text);
  bool found = false;
  for (Pass &pass : pipeline.getPasses()) {
    if (!text.empty())
      os << ",";
    pass.printAsTextualPipeline(os);
    if (pass.getArgument() == last) {
      found = true;
      break;
    }
  }
  if (!found) {
    errs << "triaxc: --kernel-report: the pipeline has no pass '" << last
         << "' to stop after; it runs:";
    for (Pass &pass : pipeline.getPasses())
      errs << " " << pass.getArgument();
    errs << "\n";
    return failure();
  }
  std::string problem;
  llvm::raw_string_ostream problemOs(problem);
  if (failed(parsePassPipeline(text, prefix, problemOs))) {
    errs << "triaxc: --kernel-report: cannot rebuild the pipeline up to '"
         << last << "': " << problem << "\n";
    return failure();
  }
  return success();
}

/// --kernel-report: lowers `module` (parallelized, rank 0) up to the
/// target's kernel stage and prints what one step runs. Returns the exit
/// code.
static int runKernelReport(const ::triax::CompileOptions &options,
                           ModuleOp module, OpPassManager &lowering, bool cuda,
                           llvm::raw_ostream &errs) {
  namespace cost = ::triax::cost;
  llvm::Expected<cost::Hardware> hw = cost::loadHardware(options.hardware);
  if (!hw) {
    errs << "triaxc: --hardware: " << llvm::toString(hw.takeError()) << "\n";
    return 1;
  }
  // The training config, the mesh and the parameters: the kernel IR no
  // longer has the triax.model that states them.
  llvm::Expected<cost::ModuleFacts> facts =
      cost::analyzeModule(module, /*rank=*/0);
  if (!facts) {
    errs << "triaxc: --kernel-report: " << llvm::toString(facts.takeError())
         << "\n";
    return 1;
  }
  std::string model =
      (*module.getOps<mlir::triax::ModelOp>().begin()).getSymName().str();
  PassManager pm(module.getContext());
  if (failed(pipelineUpTo(lowering, kernelReportStage(cuda), pm, errs)))
    return 1;
  if (failed(pm.run(module)))
    return 1;
  // A model built in bf16 (bf16 parameters, f32 master copy) computes in
  // bf16 whatever --precision says.
  std::string precision = facts->plan.dtype == cost::DTypeMode::Mixed
                              ? std::string("bf16")
                              : options.parallelize.precision;
  llvm::Expected<cost::KernelReport> report = cost::analyzeKernelModule(
      module, *facts, *hw,
      cuda ? cost::KernelTarget::CUDA : cost::KernelTarget::CPU, model,
      precision);
  if (!report) {
    errs << "triaxc: --kernel-report: " << llvm::toString(report.takeError())
         << "\n";
    return 1;
  }
  if (options.kernelReport == "json")
    cost::printKernelReportJSON(llvm::outs(), *report);
  else
    cost::printKernelReport(llvm::outs(), *report);
  return 0;
}

/// Where the binary (or --emit=obj's object) goes: checked before any work,
/// so that a bad -o is reported at once and by the name the user gave, not
/// after compiling by the name of an intermediate file.
static LogicalResult checkOutputPath(const ::triax::CompileOptions &options,
                                     llvm::raw_ostream &errs) {
  bool writes = (options.emit.empty() || options.emit == "obj") &&
                options.report.empty() && options.kernelReport.empty() &&
                (options.plan.empty() || options.apply);
  if (!writes)
    return success();
  llvm::StringRef path = options.outputFile;
  if (path.empty()) {
    errs << "triaxc: -o: empty output path\n";
    return failure();
  }
  if (llvm::sys::fs::is_directory(path)) {
    errs << "triaxc: -o " << path
         << " is a directory; name the binary inside it (for example -o "
         << path << (path.ends_with("/") ? "" : "/") << "train)\n";
    return failure();
  }
  llvm::StringRef dir = llvm::sys::path::parent_path(path);
  if (dir.empty())
    dir = ".";
  if (!llvm::sys::fs::is_directory(dir)) {
    errs << "triaxc: -o " << path << ": the directory '" << dir
         << "' does not exist\n";
    return failure();
  }
  if (llvm::sys::fs::access(dir, llvm::sys::fs::AccessMode::Write)) {
    errs << "triaxc: -o " << path << ": cannot write in '" << dir << "'\n";
    return failure();
  }
  return success();
}

int ::triax::compile(const CompileOptions &options, llvm::raw_ostream &errs) {
  StageTimer timer(options.verbose, errs);
  llvm::StringRef attention = options.lowering.attention;
  if (!attention.empty() && attention != "flash" && attention != "flash-mma" &&
      attention != "batched-gemm" && attention != "cudnn") {
    errs << "triaxc: unknown --attention value '" << attention
         << "'; expected flash, flash-mma, batched-gemm or cudnn\n";
    return 1;
  }
  if (attention == "flash-mma" && options.target != "cuda") {
    errs << "triaxc: --attention=flash-mma applies to --target cuda (NVIDIA "
            "tensor cores); the CPU has flash and batched-gemm\n";
    return 1;
  }
  if (attention == "cudnn" && options.target != "cuda") {
    errs << "triaxc: --attention=cudnn applies to --target cuda (cuDNN's "
            "fused attention, called by the CUDA runtime); the CPU has flash "
            "and batched-gemm\n";
    return 1;
  }
  llvm::StringRef emitKind = options.emit;
  if (!(emitKind.empty() || emitKind == "mlir" || emitKind == "llvm" ||
        emitKind == "obj" || emitKind == "descriptor" ||
        emitKind.starts_with("mlir-after="))) {
    errs << "triaxc: unknown --emit value '" << options.emit
         << "'; expected mlir, mlir-after=<pass>, llvm, obj or descriptor\n";
    return 1;
  }
  if (!options.kernelReport.empty()) {
    if (options.kernelReport != "text" && options.kernelReport != "json") {
      errs << "triaxc: unknown --kernel-report value '" << options.kernelReport
           << "'; expected --kernel-report or --kernel-report=json\n";
      return 1;
    }
    if (!options.emit.empty() || !options.report.empty() ||
        !options.plan.empty()) {
      errs << "triaxc: --kernel-report prints a report instead of compiling: "
              "it does not combine with --emit, --report or --plan\n";
      return 1;
    }
  }
  if (options.target != "cpu" && options.target != "cuda") {
    errs << "triaxc: unknown target '" << options.target
         << "'; expected cpu or cuda\n";
    return 1;
  }
  bool cuda = options.target == "cuda";
  if (failed(checkTargetOptions(options, errs)) ||
      (cuda && failed(checkCUDATarget(options, errs))) ||
      failed(checkOutputPath(options, errs)))
    return 1;

  // The mesh is checked before the model is read (the pipeline's options
  // check parses it again, with the same code).
  bool mesh = !options.parallelize.mesh.empty();
  std::string meshError;
  if (mesh && failed(mlir::dist::MeshShape::parse(options.parallelize.mesh,
                                                  meshError))) {
    errs << "triaxc: --mesh: " << meshError << "\n";
    return 1;
  }

  DialectRegistry registry;
  ::triax::registerAllDialects(registry);
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  registerOpenMPDialectTranslation(registry);
  // --target cuda: the kernels' gpu.binary and the launches on the host.
  registerGPUDialectTranslation(registry);
  registerNVVMDialectTranslation(registry);
  gpu::registerOffloadingLLVMTranslationInterfaceExternalModels(registry);
  MLIRContext context(registry);
  context.loadAllAvailableDialects();
  // Errors point at the model's source line; the IR of the failing op (a
  // whole gpu.module when ptxas fails) would bury the message.
  context.printOpOnDiagnostic(false);

  std::string error;
  std::unique_ptr<llvm::MemoryBuffer> input =
      openInputFile(options.inputFile, &error);
  if (!input) {
    errs << "triaxc: " << error << "\n";
    return 1;
  }
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(std::move(input), llvm::SMLoc());
  SourceMgrDiagnosticHandler diagnostics(sourceMgr, &context, errs);
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(sourceMgr, &context);
  if (!module)
    return 1;
  auto models = llvm::to_vector(module->getOps<mlir::triax::ModelOp>());
  if (models.size() != 1) {
    Location loc =
        models.size() > 1
            ? models[1].getLoc()
            : Location(FileLineColLoc::get(&context, options.inputFile, 1, 1));
    emitError(loc) << "triaxc compiles one triax.model per file, found "
                   << models.size();
    return 1;
  }
  timer.done("parse + verify");
  // --plan --apply: the planner's choice replaces the parallelization
  // asked for, and the compilation goes on with the model already read.
  // Checkpoints' config.json, from the model as written (before
  // parallelization changes its shapes).
  std::string hfConfig = ::triax::huggingFaceConfig(*module);
  ::triax::ParallelizeConfig plan = options.parallelize;
  // The plan's GPUs per node, which the binary checks the job's nodes
  // against (0: not compiled from a plan).
  int64_t planGpusPerNode = 0;
  if (options.reportRank != 0 &&
      (options.report.empty() || !options.plan.empty())) {
    errs << "triaxc: --report-rank chooses the rank of --report (or "
            "--report-json) on a mesh; "
         << (options.plan.empty() ? "add --report" : "--plan reports no rank")
         << "\n";
    return 1;
  }
  if (!options.plan.empty()) {
    std::optional<::triax::ParallelizeConfig> applied;
    if (int rc = runPlanner(options, *module, errs, applied, planGpusPerNode);
        rc || !applied)
      return rc;
    plan = *applied;
    plan.padVocab = options.parallelize.padVocab;
    mesh = !plan.mesh.empty();
  } else if (!options.traceFile.empty() || !options.svgFile.empty() ||
             options.apply) {
    errs << "triaxc: --trace, --svg and --apply work on the plan --plan "
            "chooses: add --plan gpus=N,gpu=NAME\n";
    return 1;
  }

  // The vocabulary's padding: the target's default unless --pad-vocab.
  if (plan.padVocab == 0)
    plan.padVocab = ::triax::defaultPadVocab(options.target);
  // The parallelization (triax-parallelize): the mesh, vocabulary padding,
  // tensor parallelism on the forward model, autodiff, then ZeRO or data
  // parallelism on the training step. Without --mesh and --zero: autodiff
  // alone.
  std::string problem = ::triax::checkParallelizeOptions(plan);
  if (!problem.empty()) {
    errs << "triaxc: " << problem << "\n";
    return 1;
  }
  // A binary whose data-parallel ranks cannot take whole micro-batches
  // would refuse to start: say so now (the reports and --emit still show
  // such a plan).
  bool linking = options.emit.empty() && options.report.empty() &&
                 options.kernelReport.empty();
  if (linking &&
      failed(mlir::dist::accumulationSteps(
          models.front(),
          ::triax::meshShapeOf(plan).size(TRX_AXIS_DATA) *
              ::triax::meshShapeOf(plan).size(TRX_AXIS_EXPERT),
          "triaxc --mesh " + (plan.mesh.empty() ? "(none)" : plan.mesh))))
    return 1;
  if (!models.front().getForwardBackward()) {
    PassManager pm(&context);
    ::triax::buildParallelizePipeline(pm, plan);
    if (failed(pm.run(*module)))
      return 1;
    timer.done("triax-parallelize");
  } else if (mesh || plan.zero || plan.sequenceParallel ||
             plan.recompute != "none" || options.parallelize.padVocab > 1) {
    emitError(models.front().getLoc())
        << "triaxc: the model is already differentiated (it has "
           "@forward_backward); --mesh, --zero, --recompute and --pad-vocab "
           "apply to a model before triax-autodiff";
    return 1;
  } else if (plan.precision == "bf16") {
    // A differentiated model: mixed precision alone, as triax-parallelize
    // would have run it last.
    PassManager pm(&context);
    mlir::triax::TriaxMixedPrecisionOptions precision;
    precision.compute = "bf16";
    pm.addPass(mlir::triax::createTriaxMixedPrecision(precision));
    if (failed(pm.run(*module)))
      return 1;
    timer.done("triax-mixed-precision");
  }
  // The cost model's view of one rank (--report-rank, default 0) of the
  // plan just built (with --plan, --report-json has printed the planner's
  // ranking instead).
  if (!options.report.empty() && options.plan.empty()) {
    llvm::Expected<::triax::cost::Hardware> hw =
        ::triax::cost::loadHardware(options.hardware);
    if (!hw) {
      errs << "triaxc: --hardware: " << llvm::toString(hw.takeError()) << "\n";
      return 1;
    }
    llvm::Expected<::triax::cost::ModuleFacts> facts =
        ::triax::cost::analyzeModule(*module, options.reportRank);
    if (!facts) {
      errs << "triaxc: --report: " << llvm::toString(facts.takeError()) << "\n";
      return 1;
    }
    ::triax::cost::Report report =
        ::triax::cost::makeReport(std::move(*facts), *hw, /*efficiency=*/0.5);
    if (options.report == "json")
      ::triax::cost::printReportJSON(llvm::outs(), report);
    else
      ::triax::cost::printReport(llvm::outs(), report);
    return 0;
  }
  if (options.emit == "mlir") {
    module->print(llvm::outs());
    return 0;
  }
  std::string descriptor =
      emitModelDescriptor(*module, options.target, planGpusPerNode, hfConfig);
  if (options.emit == "descriptor") {
    llvm::outs() << descriptor;
    return 0;
  }

  PassManager pm(&context);
  if (cuda)
    ::triax::buildLowerCUDAPipeline(pm, options.lowering);
  else
    ::triax::buildLowerCPUPipeline(pm, options.lowering);
  if (!options.kernelReport.empty())
    return runKernelReport(options, *module, pm, cuda, errs);
  llvm::StringRef emit = options.emit;
  bool stopAfterLowering = emit.consume_front("mlir-after=");
  if (stopAfterLowering) {
    std::string passName = emit.str();
    int runs = 0;
    for (Pass &pass : pm.getPasses())
      runs += pass.getArgument() == passName;
    if (runs == 0) {
      errs << "triaxc: --emit=mlir-after=" << passName
           << ": no such pass in the pipeline; it runs:";
      for (Pass &pass : pm.getPasses())
        errs << " " << pass.getArgument();
      errs << "\n";
      return 1;
    }
    // IR printing needs one thread. A pass the pipeline runs more than once
    // (triax-dedupe-kernels) prints after its last run.
    context.disableMultithreading();
    auto seen = std::make_shared<int>(0);
    pm.enableIRPrinting(
        /*shouldPrintBeforePass=*/[](Pass *, Operation *) { return false; },
        /*shouldPrintAfterPass=*/
        [passName, runs, seen](Pass *pass, Operation *) {
          return pass->getArgument() == passName && ++*seen == runs;
        },
        /*printModuleScope=*/true, /*printAfterOnlyOnChange=*/false,
        /*printAfterOnlyOnFailure=*/false, llvm::outs());
  }
  if (options.verbose)
    pm.enableTiming();
  // The lowered module is verified once, at the end, not after each of the
  // pipeline's passes: verifying gpt3-175b's 96 layers of kernels after
  // every pass was a third of the lowering's time.
  pm.enableVerifier(false);
  if (failed(pm.run(*module)) || failed(verify(*module)))
    return 1;
  timer.done(cuda ? "triax-lower-cuda" : "triax-lower-cpu");
  if (stopAfterLowering)
    return 0;

  // On the CPU, LLVM inlines no function into another. Every kernel stays
  // a function of its own, so -O3 and code generation see functions of one
  // kernel's size instead of one entry with every kernel inlined, and a
  // kernel that the layers share (triax-dedupe-kernels) is compiled once.
  // So do the wrappers of the runtime's calls (they pack memref descriptors
  // for _mlir_ciface_trx_*; inlined, the entries became long straight lines
  // of descriptor stores where the SLP vectorizer spent half of -O3's
  // time) and the entries (inlined into their _mlir_ciface_ wrappers, each
  // entry was compiled twice). A call costs nothing beside the work it
  // does (the 4-layer bench model's step: 249 vs 250 ms).
  llvm::StringSet<> kernelNames;
  if (!cuda)
    module->walk([&](LLVM::LLVMFuncOp fn) {
      if (!fn.isExternal())
        fn.setNoInline(true);
      if (fn->hasAttr(mlir::triax::kKernelFuncAttr))
        kernelNames.insert(fn.getName());
    });
  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> llvmModule =
      translateModuleToLLVMIR(*module, llvmContext, "triax-model");
  if (!llvmModule) {
    errs << "triaxc: translation to LLVM IR failed\n";
    return 1;
  }
  timer.done("LLVM IR");
  std::unique_ptr<llvm::TargetMachine> machine = createHostTargetMachine(errs);
  if (!machine)
    return 1;
  llvmModule->setDataLayout(machine->createDataLayout());
  llvmModule->setTargetTriple(machine->getTargetTriple());
  if (llvm::Error err =
          makeOptimizingTransformer(3, 0, machine.get())(llvmModule.get())) {
    errs << "triaxc: LLVM optimization failed: "
         << llvm::toString(std::move(err)) << "\n";
    return 1;
  }
  timer.done("LLVM IR -O3");
  if (options.emit == "llvm") {
    llvmModule->print(llvm::outs(), nullptr);
    return 0;
  }

  std::string objPath =
      options.emit == "obj" ? options.outputFile : options.outputFile + ".o";
  std::vector<std::string> objects = {objPath};
  if (cuda || options.emit == "obj") {
    if (failed(emitObjectFile(*llvmModule, *machine, objPath, errs)))
      return 1;
  } else {
    // On the CPU the kernels and the glue (the entries, their _mlir_ciface_
    // wrappers and the runtime-call wrappers: allocations, views and calls
    // in one straight line) go through code generation apart. The kernels
    // at the -O3 level; the glue at -O0 (fast instruction selection and
    // register allocation, linear in its size), which costs a step nothing
    // measurable but saves most of the time of a deep model: gpt3-175b's
    // forward_backward is one basic block of 32,000 instructions with
    // thousands of buffers live across it, where greedy register
    // allocation and the selection DAG took 8.3 s (llc -O3) against 2.6 s
    // (llc -O0). Both were optimized as one module above.
    std::unique_ptr<llvm::TargetMachine> glueMachine =
        createHostTargetMachine(errs, llvm::CodeGenOptLevel::None);
    if (!glueMachine)
      return 1;
    auto [glue, kernelPart] = splitKernels(*llvmModule, kernelNames);
    std::string gluePath = options.outputFile + ".glue.o";
    objects.push_back(gluePath);
    if (failed(emitObjectFile(*kernelPart, *machine, objPath, errs)) ||
        failed(emitObjectFile(*glue, *glueMachine, gluePath, errs)))
      return 1;
  }
  timer.done("object");
  if (options.emit == "obj")
    return 0;

  // The model descriptor, compiled and linked with the runtime.
  std::string descPath = options.outputFile + ".desc.c";
  if (failed(writeFile(descPath, descriptor, errs)))
    return 1;
  std::vector<std::string> link = {options.cc, "-O2", "-o", options.outputFile};
  link.insert(link.end(), objects.begin(), objects.end());
  link.insert(link.end(), {descPath, "-I" + options.runtimeIncludeDir});
  // The CUDA runtime, whole: nothing names its objects, which register
  // the CUDA device (allocator, copies, GEMMs; runtime/lib/cpu/device.h)
  // and the NCCL transport from global constructors. The CPU runtime
  // supplies the rest (driver, data, checkpoints, communicators).
  // `--attention=cudnn` binaries also take cuDNN's attention
  // (libtriax_rt_cudnn.a, which registers it with the CUDA device from a
  // constructor; the cudnn-frontend's code, 1 MB, only where it is called).
  bool cudnn = cuda && options.lowering.attention == "cudnn";
  if (cuda) {
    link.insert(link.end(), {"-Wl,--whole-archive",
                             options.runtimeLibDir + "/libtriax_rt_cuda.a"});
    if (cudnn)
      link.push_back(options.runtimeLibDir + "/libtriax_rt_cudnn.a");
    link.push_back("-Wl,--no-whole-archive");
  }
  link.push_back(options.runtimeLibDir + "/libtriax_rt.a");
  // The CUDA runtime's cblas_sgemm runs on cuBLAS: no OpenBLAS there.
  if (!cuda)
    link.push_back("-lopenblas");
  link.insert(link.end(), {"-lstdc++", "-lm"});
  if (cudnn)
    link.push_back("-ldl"); // libcudnn, loaded at run time
  // MPI (the runtime's distributed part): mpicc's link flags, found when
  // triaxc was configured. A one-device binary runs without mpirun.
  llvm::SmallVector<llvm::StringRef> mpiFlags;
  llvm::StringRef(TRIAX_MPI_LINK_FLAGS).split(mpiFlags, ' ', -1, false);
  for (llvm::StringRef flag : mpiFlags)
    link.push_back(flag.str());
  // LLVM's OpenMP runtime, kept even where nothing but the runtime's weak
  // references name it (the GEMMs cut among its threads).
  if (options.lowering.openmp)
    link.insert(link.end(), {"-Wl,--push-state,--no-as-needed",
                             "-l:libomp.so.5", "-Wl,--pop-state"});
  if (cuda) {
    // cuBLAS and cuBLASLt (the GEMMs) from the toolkit (found at run time
    // through the rpath, or LD_LIBRARY_PATH on another machine); the driver
    // API from the stub library (the real libcuda.so.1 comes with the GPU
    // driver).
    std::string lib64 = options.lowering.toolkit + "/lib64";
    // NCCL (the collectives' transport) lies next to cuBLAS.
    link.insert(link.end(),
                {"-L" + lib64, "-Wl,-rpath," + lib64, "-lcublas", "-lcublasLt",
                 "-lnccl", "-L" + lib64 + "/stubs", "-lcuda", "-lstdc++"});
  }
  int rc = run(link, errs, options.verbose);
  for (const std::string &object : objects)
    llvm::sys::fs::remove(object);
  llvm::sys::fs::remove(descPath);
  if (rc != 0)
    return rc;
  timer.done("link");
  return 0;
}
