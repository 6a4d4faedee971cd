//===- triax-report.cpp - dist-report: memory, traffic, time per rank -----===//
//
// Reads a module after triax-parallelize and prints what the cost model
// predicts for one rank (docs/cost-model.md):
//
//   triaxc tiny.mlir --mesh dp=2 --zero 3 --emit=mlir | triax-report
//
// or, on a model before parallelization, ranks the plans (dist-plan):
//
//   triax-report gpt2.mlir --plan gpus=8,gpu=h100-80g [--trace s.json]
//
//===----------------------------------------------------------------------===//

#include "triax/CostModel/CostModel.h"
#include "triax/CostModel/Planner.h"
#include "triax/InitAll.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Support/FileUtilities.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

namespace cl = llvm::cl;

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::OptionCategory cat("triax-report options");
  cl::opt<std::string> input(cl::Positional, cl::desc("<module.mlir>"),
                             cl::init("-"), cl::cat(cat));
  cl::opt<std::string> hardware(
      "hardware",
      cl::desc("a100-40g, a100-80g, h100-80g, h200-141g or a JSON file "
               "(docs/cost-model.md)"),
      cl::init("h100-80g"), cl::cat(cat));
  cl::opt<int64_t> rank("rank", cl::desc("The rank to report"), cl::init(0),
                        cl::cat(cat));
  cl::opt<double> efficiency("efficiency",
                             cl::desc("Assumed fraction of peak FLOP/s (0, 1]"),
                             cl::init(0.5), cl::cat(cat));
  cl::opt<bool> json("json", cl::desc("Print JSON"), cl::cat(cat));
  cl::opt<std::string> plan(
      "plan",
      cl::desc("On a model before parallelization: rank the plans that fit "
               "(as triaxc --plan)"),
      cl::value_desc("gpus=N,gpu=NAME[,...]"), cl::init(""), cl::cat(cat));
  cl::opt<std::string> trace(
      "trace", cl::desc("With --plan: the top plan's schedule, Chrome trace"),
      cl::init(""), cl::cat(cat));
  cl::opt<std::string> svg(
      "svg", cl::desc("With --plan: the top plan's schedule, SVG"),
      cl::init(""), cl::cat(cat));
  cl::HideUnrelatedOptions(cat);
  cl::ParseCommandLineOptions(
      argc, argv,
      "triax-report: per-rank memory, per-step traffic and time of a "
      "parallelized module\n\n"
      "  triaxc tiny.mlir --mesh dp=2 --zero 3 --emit=mlir | triax-report\n");

  auto fail = [](const llvm::Twine &msg) {
    llvm::errs() << "triax-report: " << msg << "\n";
    return 1;
  };
  if (!(efficiency > 0 && efficiency <= 1))
    return fail("--efficiency must be in (0, 1]");
  auto hw = triax::cost::loadHardware(hardware);
  if (!hw)
    return fail(llvm::toString(hw.takeError()));

  mlir::DialectRegistry registry;
  triax::registerAllDialects(registry);
  mlir::MLIRContext context(registry);
  context.loadAllAvailableDialects();
  std::string error;
  auto file = mlir::openInputFile(input, &error);
  if (!file)
    return fail(error);
  llvm::SourceMgr sources;
  sources.AddNewSourceBuffer(std::move(file), llvm::SMLoc());
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceFile<mlir::ModuleOp>(sources, &context);
  if (!module)
    return 1;
  if (!plan.empty()) {
    auto result =
        triax::cost::runPlan(*module, plan, json,
                             /*fixMicroBatch=*/false, trace, svg, llvm::outs());
    if (!result)
      return fail(llvm::toString(result.takeError()));
    return 0;
  }
  if (!trace.empty() || !svg.empty())
    return fail("--trace and --svg draw the plan --plan chooses");
  auto facts = triax::cost::analyzeModule(*module, rank);
  if (!facts)
    return fail(llvm::toString(facts.takeError()));
  triax::cost::Report report =
      triax::cost::makeReport(std::move(*facts), *hw, efficiency);
  if (json)
    triax::cost::printReportJSON(llvm::outs(), report);
  else
    triax::cost::printReport(llvm::outs(), report);
  return 0;
}
