//===- triax-fuzz.cpp - Fuzz the parser, verifier, pipelines and report ---===//
//
// The fuzz target of everything a malformed or unusual .mlir file reaches in
// Triax's tools: the parser with Triax's dialects, the verifier, the pass
// pipelines (triax-parallelize, triax-lower-cpu, triax-lower-cuda,
// triax-kernels-to-cuda, with a spread of options) and the cost model that
// triax-report runs. Errors are expected and their diagnostics dropped; a
// crash, an ASan or UBSan report, an LLVM fatal error or a timeout is a
// finding. docs/fuzzing.md says how to build, run and reproduce.
//
// An input is one byte that picks the plan (kPlans: which options) followed
// by the MLIR text; the byte is not part of the text. Every attempt of a plan
// runs on its own clone of the parsed module, so that a model, a trained
// program and kernel IR each go deep whatever the byte.
//
// Built with clang (-fsanitize=fuzzer), this file is a libFuzzer target.
// Built without libFuzzer (g++), it carries its own driver below: a mutation
// loop without coverage feedback (byte, token and line mutations, numbers,
// splices between corpus files) run in a child process, so that a crash is
// saved, counted and the loop goes on; and a replay of the files it is given.
//
//===----------------------------------------------------------------------===//

#include "triax/CostModel/CostModel.h"
#include "triax/CostModel/Planner.h"
#include "triax/InitAll.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"

#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

using namespace mlir;

namespace {

/// One way through the pipelines. Its attempts, each on a fresh clone:
///   1. `parallelize`, then triax-report's analysis of the result, then
///      `lowering` (an input that is a model);
///   2. `lowering` alone (an input already trained: after triax-autodiff);
///   3. triax-kernels-to-cuda with the lowering's options, when `lowering`
///      is triax-lower-cuda (an input that is kernel IR);
///   4. dist-verify-schedule (an input with a pipeline schedule);
/// and, on the input itself, triax-report's analysis of rank `rank` and,
/// with a `cluster`, its planner (triax-report --plan).
struct Plan {
  const char *parallelize;
  const char *lowering;
  int64_t rank;
  const char *cluster;
};

/// The CUDA plans embed PTX (format=isa: fatbin would start ptxas for every
/// input) compiled by LLVM at -O0 (a third of the time of -O3, which tunes
/// upstream's NVPTX code, not Triax's); what Triax builds is the same.
const Plan kPlans[] = {
    {"triax-parallelize", "triax-lower-cpu", 0, "gpus=8"},
    {"triax-parallelize{mesh=dp=2 zero=1}", "triax-lower-cpu{openmp=true}", 1,
     nullptr},
    {"triax-parallelize{mesh=dp=2,pp=2,tp=2 schedule=gpipe}",
     "triax-lower-cpu{attention=batched-gemm fuse-optimizer=true}", 5,
     "gpus=16,gpus-per-node=8"},
    {"triax-parallelize{mesh=dp=2,tp=2 sequence-parallel=true zero=3 "
     "recompute=selective}",
     "triax-lower-cpu{gelu-epilogue=false}", 3, nullptr},
    {"triax-parallelize{mesh=pp=2 microbatches=4 stage-layers=1,1 "
     "recompute=full}",
     "triax-lower-cpu{openmp=true attention=batched-gemm}", 1, nullptr},
    {"triax-parallelize{mesh=cp=2,tp=2 precision=bf16}",
     "triax-lower-cuda{format=isa opt-level=0}", 2, "gpus=64,gpu=h100-80g"},
    {"triax-parallelize{mesh=dp=2,pp=2 zero=1 schedule=1f1b precision=bf16}",
     "triax-lower-cuda{format=isa opt-level=0 chip=sm_75 rows=thread "
     "attention=batched-gemm}",
     0, nullptr},
    {"triax-parallelize{mesh=dp=4 zero=2}",
     "triax-lower-cuda{format=isa opt-level=0 block-size=128 attention=flash "
     "gelu-epilogue=false}",
     3, nullptr},
};
constexpr size_t kNumPlans = sizeof(kPlans) / sizeof(kPlans[0]);

/// How far inputs got; the driver below prints them. In the driver's child
/// process they live in memory shared with its parent.
struct Counters {
  uint64_t inputs = 0;   // inputs run
  uint64_t parsed = 0;   // ... that parsed
  uint64_t verified = 0; // ... and verified
  uint64_t attempts = 0; // pipeline attempts run on verified inputs
  uint64_t passed = 0;   // ... that succeeded
};
Counters localCounters;
Counters *counters = &localCounters;

/// --verbose (for a replay): print the diagnostics and what each pipeline
/// did.
bool verbose = false;

DialectRegistry &registry() {
  static DialectRegistry *registry = [] {
    auto *r = new DialectRegistry;
    triax::registerAllDialects(*r);
    return r;
  }();
  return *registry;
}

/// The text of plan `p`'s lowering with `name` in place of its pipeline name
/// (triax-lower-cuda{...} -> triax-kernels-to-cuda{...}).
std::string renamedLowering(const Plan &p, llvm::StringRef name) {
  llvm::StringRef lowering = p.lowering;
  return (name + lowering.substr(std::min(lowering.find('{'), lowering.size())))
      .str();
}

/// Whether plan `p` lowers to CUDA (and so also tries triax-kernels-to-cuda).
bool lowersToCUDA(const Plan &p) {
  return llvm::StringRef(p.lowering).starts_with("triax-lower-cuda");
}

/// Runs the textual pipeline `pipeline` (nested in builtin.module) on
/// `module`, with the verifier after every pass.
LogicalResult runPipeline(MLIRContext &context, ModuleOp module,
                          llvm::StringRef pipeline) {
  PassManager pm(&context);
  pm.enableVerifier(true);
  if (failed(parsePassPipeline(pipeline, pm, llvm::errs()))) {
    // The plans are fixed: checkPlans() refused a broken one at start.
    llvm::errs() << "triax-fuzz: cannot build pipeline '" << pipeline << "'\n";
    abort();
  }
  ++counters->attempts;
  LogicalResult result = pm.run(module);
  if (succeeded(result))
    ++counters->passed;
  if (verbose)
    llvm::errs() << "  " << pipeline << ": "
                 << (succeeded(result) ? "ok" : "failed") << "\n";
  return result;
}

/// triax-report's analysis (text and JSON into nowhere).
void runReport(ModuleOp module, int64_t rank) {
  llvm::Expected<triax::cost::ModuleFacts> facts =
      triax::cost::analyzeModule(module, rank);
  if (!facts) {
    llvm::consumeError(facts.takeError());
    return;
  }
  const triax::cost::Hardware *hardware =
      triax::cost::findBuiltinHardware("h100-80g");
  if (!hardware)
    hardware = &triax::cost::builtinHardware().front();
  triax::cost::Report report =
      triax::cost::makeReport(std::move(*facts), *hardware, 0.5);
  triax::cost::printReport(llvm::nulls(), report);
  triax::cost::printReportJSON(llvm::nulls(), report);
}

/// Everything one input reaches; the fuzz target proper.
void runInput(const uint8_t *data, size_t size) {
  ++counters->inputs;
  if (size == 0)
    return;
  const Plan &plan = kPlans[data[0] % kNumPlans];

  // A context per input: nothing one input uniques or loads changes how
  // the next one runs, so every finding replays from its file alone.
  MLIRContext context(registry(), MLIRContext::Threading::DISABLED);
  context.printOpOnDiagnostic(false);
  ScopedDiagnosticHandler diagnostics(&context, [](Diagnostic &diag) {
    if (verbose)
      llvm::errs() << "  " << diag.getLocation() << ": " << diag << "\n";
    return success();
  });

  // A copy, so that the buffer ends in the NUL the lexer expects.
  llvm::SourceMgr sources;
  sources.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(
          llvm::StringRef(reinterpret_cast<const char *>(data) + 1, size - 1),
          "input"),
      llvm::SMLoc());
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(
      sources, ParserConfig(&context, /*verifyAfterParse=*/false));
  if (!module)
    return;
  ++counters->parsed;
  if (failed(verify(*module)))
    return;
  ++counters->verified;

  {
    OwningOpRef<ModuleOp> copy = module->clone();
    if (succeeded(runPipeline(context, *copy, plan.parallelize))) {
      runReport(*copy, plan.rank);
      (void)runPipeline(context, *copy, plan.lowering);
    }
  }
  {
    OwningOpRef<ModuleOp> copy = module->clone();
    (void)runPipeline(context, *copy, plan.lowering);
  }
  if (lowersToCUDA(plan)) {
    OwningOpRef<ModuleOp> copy = module->clone();
    (void)runPipeline(context, *copy,
                      renamedLowering(plan, "triax-kernels-to-cuda"));
  }
  {
    OwningOpRef<ModuleOp> copy = module->clone();
    (void)runPipeline(context, *copy, "dist-verify-schedule");
  }
  runReport(*module, plan.rank);
  if (plan.cluster) {
    llvm::Expected<triax::cost::PlanResult> planned = triax::cost::runPlan(
        *module, plan.cluster, /*json=*/false, /*fixMicroBatch=*/false,
        /*tracePath=*/"", /*svgPath=*/"", llvm::nulls());
    if (!planned)
      llvm::consumeError(planned.takeError());
  }
}

/// Registers the passes and builds every plan's pipelines once, so that a
/// plan that does not parse stops the run before any input does.
void initialize() {
  triax::registerAllPasses();
  MLIRContext context(registry(), MLIRContext::Threading::DISABLED);
  for (const Plan &plan : kPlans) {
    std::vector<std::string> pipelines = {plan.parallelize, plan.lowering};
    if (lowersToCUDA(plan))
      pipelines.push_back(renamedLowering(plan, "triax-kernels-to-cuda"));
    for (const std::string &pipeline : pipelines) {
      PassManager pm(&context);
      if (failed(parsePassPipeline(pipeline, pm, llvm::errs()))) {
        llvm::errs() << "triax-fuzz: plan pipeline '" << pipeline
                     << "' does not parse\n";
        exit(2);
      }
    }
  }
}

/// --list-plans: one line per plan, the byte values that pick it first.
void listPlans() {
  for (size_t i = 0; i < kNumPlans; ++i)
    llvm::outs() << "plan " << i << " (first byte " << i << " mod " << kNumPlans
                 << "): " << kPlans[i].parallelize << " | "
                 << kPlans[i].lowering << " | report rank " << kPlans[i].rank
                 << (kPlans[i].cluster
                         ? std::string(" | plan ") + kPlans[i].cluster
                         : std::string())
                 << "\n";
}

bool hasFlag(int argc, char **argv, const char *flag) {
  for (int i = 1; i < argc; ++i)
    if (!strcmp(argv[i], flag))
      return true;
  return false;
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int *argc, char ***argv) {
  // libFuzzer ignores flags that start with "--".
  if (hasFlag(*argc, *argv, "--list-plans")) {
    listPlans();
    exit(0);
  }
  verbose = hasFlag(*argc, *argv, "--verbose");
  initialize();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  runInput(data, size);
  return 0;
}

#ifndef TRIAX_FUZZ_LIBFUZZER
//===----------------------------------------------------------------------===//
// The driver without libFuzzer
//===----------------------------------------------------------------------===//
//
//   triax-fuzz [--seconds N] [--runs N] [--seed N] [--timeout N]
//              [--artifacts DIR] CORPUS_DIR...   # fuzz
//   triax-fuzz [--verbose] FILE...               # replay
//   triax-fuzz --list-plans
//
// Fuzzing: a supervisor forks a child that mutates corpus inputs and runs
// them. The child writes each input to ARTIFACTS/current-input before it
// runs it, and its stderr goes to ARTIFACTS/current-log. When the child
// dies (a sanitizer report, a signal, an LLVM fatal error, SIGALRM after
// --timeout seconds on one input), the supervisor keeps the input as
// crash-<hash> (timeout-<hash>) with its report beside it (.log), prints it
// once per distinct report and starts a new child. Without coverage
// feedback, the child keeps the mutants that verify in its pool, so that
// mutations stack.

#include <chrono>
#include <csignal>
#include <dirent.h>
#include <fcntl.h>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

namespace {

struct Options {
  double seconds = 0;          // 0: no limit
  uint64_t runs = 0;           // 0: no limit
  uint64_t seed = 1;           // the mutations' random seed
  unsigned timeout = 60;       // seconds one input may take
  std::string artifacts = "."; // where findings go
  std::vector<std::string> paths;
};

std::string readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

void writeFile(const std::string &path, const std::string &bytes) {
  FILE *f = fopen(path.c_str(), "wb");
  if (!f) {
    fprintf(stderr, "triax-fuzz: cannot write %s\n", path.c_str());
    exit(2);
  }
  fwrite(bytes.data(), 1, bytes.size(), f);
  fclose(f);
}

bool isDirectory(const std::string &path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

/// Every regular file under `dir`, recursively, in name order.
void listFiles(const std::string &dir, std::vector<std::string> &files) {
  DIR *d = opendir(dir.c_str());
  if (!d)
    return;
  std::vector<std::string> names;
  while (dirent *e = readdir(d))
    if (e->d_name[0] != '.')
      names.push_back(dir + "/" + e->d_name);
  closedir(d);
  std::sort(names.begin(), names.end());
  for (const std::string &name : names) {
    if (isDirectory(name))
      listFiles(name, files);
    else
      files.push_back(name);
  }
}

uint64_t fnv1a(const std::string &bytes) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : bytes)
    h = (h ^ c) * 1099511628211ull;
  return h;
}

std::string hex(uint64_t v) {
  char buf[17];
  snprintf(buf, sizeof(buf), "%016llx", (unsigned long long)v);
  return buf;
}

//===----------------------------------------------------------------------===//
// Mutations
//===----------------------------------------------------------------------===//

/// A token of MLIR text: a run of identifier characters (names, numbers,
/// %values, @symbols, #attributes, !types, ^blocks, dialect.op names), a
/// run of white space, or one other character.
bool isWordChar(unsigned char c) { return isalnum(c) || strchr("_.$%@#!^", c); }

std::vector<std::pair<size_t, size_t>> tokenize(const std::string &text) {
  std::vector<std::pair<size_t, size_t>> tokens;
  for (size_t i = 0; i < text.size();) {
    size_t j = i + 1;
    unsigned char c = text[i];
    if (isWordChar(c))
      while (j < text.size() && isWordChar(text[j]))
        ++j;
    else if (isspace(c))
      while (j < text.size() && isspace((unsigned char)text[j]))
        ++j;
    tokens.push_back({i, j});
    i = j;
  }
  return tokens;
}

class Mutator {
public:
  Mutator(uint64_t seed, const std::vector<std::string> &seeds) : rng(seed) {
    std::set<std::string> words;
    for (const std::string &s : seeds)
      for (auto [b, e] : tokenize(s))
        if (isWordChar(s[b]) && e - b < 64)
          words.insert(s.substr(b, e - b));
    dictionary.assign(words.begin(), words.end());
  }

  /// A mutant of `input` (selector byte + text); `pool` gives splices.
  std::string mutate(const std::string &input,
                     const std::vector<std::string> &pool) {
    std::string text = input.empty() ? std::string() : input.substr(1);
    unsigned char selector = input.empty() ? 0 : input[0];
    // One in eight mutants tries the same text under another plan.
    if (below(8) == 0)
      selector = below(256);
    // One mutation half of the time, two a quarter, ... up to four: most
    // mutants should still parse.
    unsigned n = 1;
    while (n < 4 && below(2))
      ++n;
    while (n--)
      mutateOnce(text, pool);
    if (text.size() > kMaxSize)
      text.resize(kMaxSize);
    return std::string(1, selector) + text;
  }

  uint64_t below(uint64_t n) { return n ? rng() % n : 0; }

private:
  static constexpr size_t kMaxSize = 1 << 20;

  void mutateOnce(std::string &text, const std::vector<std::string> &pool) {
    if (text.empty()) {
      text = randomWord();
      return;
    }
    auto tokens = tokenize(text);
    auto [tb, te] = tokens[below(tokens.size())];
    switch (below(12)) {
    case 0: // flip one bit
      text[below(text.size())] ^= 1 << below(8);
      break;
    case 1: { // set one byte to a character MLIR's grammar uses
      static const char chars[] = "{}()<>[]:,=%@#^!\"x-+.*?0123456789 \n";
      text[below(text.size())] =
          below(4) ? chars[below(sizeof(chars) - 1)] : char(below(256));
      break;
    }
    case 2: // insert a word of the corpus before a token
      text.insert(tb, randomWord() + (below(2) ? " " : ""));
      break;
    case 3: // replace a token by a word of the corpus
      text.replace(tb, te - tb, randomWord());
      break;
    case 4: { // delete a few tokens
      size_t i = below(tokens.size());
      size_t j = std::min(tokens.size(), i + 1 + below(6));
      text.erase(tokens[i].first, tokens[j - 1].second - tokens[i].first);
      break;
    }
    case 5: // delete a range of bytes
    {
      size_t at = below(text.size());
      text.erase(at, 1 + below(std::min<size_t>(64, text.size() - at)));
      break;
    }
    case 6: // duplicate a line somewhere else
    case 7: // delete a line
    case 8: // swap two lines
      mutateLines(text);
      break;
    case 9: // replace a number by an interesting one
      replaceNumber(text);
      break;
    case 10: // splice: tokens of another corpus input in place of some
    case 11:
      splice(text, tokens, pool);
      break;
    }
  }

  std::string randomWord() {
    if (dictionary.empty())
      return "x";
    return dictionary[below(dictionary.size())];
  }

  void mutateLines(std::string &text) {
    std::vector<std::string> lines;
    std::stringstream in(text);
    for (std::string line; std::getline(in, line);)
      lines.push_back(line);
    if (lines.empty())
      return;
    size_t a = below(lines.size()), b = below(lines.size());
    switch (below(3)) {
    case 0:
      lines.insert(lines.begin() + b, lines[a]);
      break;
    case 1:
      lines.erase(lines.begin() + a);
      break;
    case 2:
      std::swap(lines[a], lines[b]);
      break;
    }
    text.clear();
    for (const std::string &line : lines)
      text += line + "\n";
  }

  void replaceNumber(std::string &text) {
    static const char *const numbers[] = {"0",
                                          "1",
                                          "-1",
                                          "2",
                                          "3",
                                          "7",
                                          "8",
                                          "64",
                                          "255",
                                          "1024",
                                          "65536",
                                          "2147483647",
                                          "2147483648",
                                          "-2147483648",
                                          "4294967296",
                                          "9223372036854775807",
                                          "-9223372036854775808",
                                          "18446744073709551616",
                                          "1.0e+38",
                                          "0.0",
                                          "-0.0",
                                          "nan",
                                          "1e-45"};
    // The digit run at or after a random position.
    size_t at = below(text.size());
    while (at < text.size() && !isdigit((unsigned char)text[at]))
      ++at;
    if (at == text.size())
      return;
    size_t end = at;
    while (end < text.size() && isdigit((unsigned char)text[end]))
      ++end;
    text.replace(at, end - at,
                 numbers[below(sizeof(numbers) / sizeof(*numbers))]);
  }

  void splice(std::string &text,
              const std::vector<std::pair<size_t, size_t>> &tokens,
              const std::vector<std::string> &pool) {
    const std::string &other = pool[below(pool.size())];
    if (other.size() < 2)
      return;
    std::string otherText = other.substr(1);
    auto otherTokens = tokenize(otherText);
    size_t i = below(tokens.size()), j = std::min(tokens.size(), i + below(32));
    size_t k = below(otherTokens.size()),
           l = std::min(otherTokens.size(), k + 1 + below(32));
    size_t from = tokens[i].first,
           to = j > i ? tokens[j - 1].second : tokens[i].first;
    text.replace(
        from, to - from,
        otherText.substr(otherTokens[k].first,
                         otherTokens[l - 1].second - otherTokens[k].first));
  }

  std::mt19937_64 rng;
  std::vector<std::string> dictionary;
};

//===----------------------------------------------------------------------===//
// Child: the mutation loop
//===----------------------------------------------------------------------===//

/// What the child and the supervisor share.
struct Shared {
  Counters counters;
  uint64_t crashes = 0;
  uint64_t timeouts = 0;
};

double now() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

[[noreturn]] void fuzzChild(const Options &options, Shared &shared,
                            const std::vector<std::string> &seeds,
                            double deadline, uint64_t seed) {
  std::string logPath = options.artifacts + "/current-log";
  int log = open(logPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (log >= 0) {
    dup2(log, 2);
    close(log);
  }
  counters = &shared.counters;
  Mutator mutator(seed, seeds);
  std::vector<std::string> pool = seeds;
  const size_t maxPool = 4 * seeds.size() + 256;
  std::string current = options.artifacts + "/current-input";
  while ((!options.runs || shared.counters.inputs < options.runs) &&
         (!options.seconds || now() < deadline)) {
    const std::string &parent = pool[mutator.below(pool.size())];
    std::string input = mutator.mutate(parent, pool);
    // Saved before it runs: an abort leaves it behind.
    writeFile(current, input);
    uint64_t verifiedBefore = shared.counters.verified;
    alarm(options.timeout);
    runInput(reinterpret_cast<const uint8_t *>(input.data()), input.size());
    alarm(0);
    if (shared.counters.verified != verifiedBefore) {
      if (pool.size() < maxPool)
        pool.push_back(std::move(input));
      else
        pool[seeds.size() + mutator.below(maxPool - seeds.size())] =
            std::move(input);
    }
  }
  fflush(stderr);
  _exit(0);
}

//===----------------------------------------------------------------------===//
// Supervisor
//===----------------------------------------------------------------------===//

/// What the finding's report says: the sanitizer's SUMMARY line or an LLVM
/// fatal error, and the first frames of its stack without their
/// addresses; the way the child ended when the log says nothing.
std::string signatureOf(const std::string &log, int status) {
  std::stringstream lines(log);
  std::string summary, frames;
  int framesTaken = 0;
  for (std::string line; std::getline(lines, line);) {
    if (summary.empty() && (line.rfind("SUMMARY:", 0) == 0 ||
                            line.find("LLVM ERROR:") != std::string::npos ||
                            line.find("runtime error:") != std::string::npos))
      summary = line;
    size_t function = line.find(" in ");
    if (framesTaken < 4 && line.find("    #") == 0 &&
        function != std::string::npos &&
        line.find("__interceptor") == std::string::npos &&
        line.find("__asan") == std::string::npos &&
        line.find("__sanitizer") == std::string::npos) {
      frames += line.substr(function) + "\n";
      ++framesTaken;
    }
  }
  if (summary.empty()) {
    summary = WIFSIGNALED(status)
                  ? "signal " + std::to_string(WTERMSIG(status))
                  : "exit " + std::to_string(WEXITSTATUS(status));
  }
  return summary + "\n" + frames;
}

int fuzz(const Options &options) {
  std::vector<std::string> files;
  for (const std::string &path : options.paths)
    listFiles(path, files);
  std::vector<std::string> seeds;
  for (const std::string &file : files)
    seeds.push_back(readFile(file));
  if (seeds.empty())
    seeds.push_back(std::string(1, '\0'));
  mkdir(options.artifacts.c_str(), 0755);

  auto *shared = static_cast<Shared *>(mmap(nullptr, sizeof(Shared),
                                            PROT_READ | PROT_WRITE,
                                            MAP_SHARED | MAP_ANONYMOUS, -1, 0));
  if (shared == MAP_FAILED) {
    perror("triax-fuzz: mmap");
    return 2;
  }
  new (shared) Shared();

  double start = now(), deadline = start + options.seconds;
  printf("triax-fuzz: %zu corpus inputs from %zu paths, %zu plans, seed "
         "%llu; findings in %s\n",
         seeds.size(), options.paths.size(), kNumPlans,
         (unsigned long long)options.seed, options.artifacts.c_str());
  fflush(stdout);

  std::map<std::string, unsigned> signatures; // report -> finding number
  uint64_t restartsWithoutProgress = 0;
  for (uint64_t child = 0;; ++child) {
    uint64_t before = shared->counters.inputs;
    pid_t pid = fork();
    if (pid < 0) {
      perror("triax-fuzz: fork");
      return 2;
    }
    if (pid == 0)
      fuzzChild(options, *shared, seeds, deadline,
                options.seed * 1000003 + child);
    // Progress every 30 s while the child runs.
    int status = 0;
    double lastReport = now();
    while (waitpid(pid, &status, WNOHANG) == 0) {
      usleep(200 * 1000);
      if (now() - lastReport >= 30) {
        lastReport = now();
        const Counters &c = shared->counters;
        printf("triax-fuzz: %llu inputs (%llu parsed, %llu verified) in "
               "%.0f s, %.0f/s; %llu crashes\n",
               (unsigned long long)c.inputs, (unsigned long long)c.parsed,
               (unsigned long long)c.verified, now() - start,
               c.inputs / (now() - start), (unsigned long long)shared->crashes);
        fflush(stdout);
      }
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
      break; // the budget is spent
    // A finding: the child died on the input it saved last (and counted).
    std::string input = readFile(options.artifacts + "/current-input");
    std::string log = readFile(options.artifacts + "/current-log");
    bool timeout = WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM;
    std::string signature =
        timeout ? std::string("timeout") : signatureOf(log, status);
    std::string name = options.artifacts + "/" +
                       (timeout ? "timeout-" : "crash-") + hex(fnv1a(input));
    ++(timeout ? shared->timeouts : shared->crashes);
    auto [it, isNew] = signatures.insert({signature, signatures.size() + 1});
    if (isNew) {
      writeFile(name, input);
      writeFile(name + ".log", log);
      printf("triax-fuzz: NEW %s #%u after %llu inputs: %s\n  input: %s\n"
             "  report: %s.log\n",
             timeout ? "timeout" : "crash", it->second,
             (unsigned long long)shared->counters.inputs,
             signature.substr(0, signature.find('\n')).c_str(), name.c_str(),
             name.c_str());
    } else {
      printf("triax-fuzz: crash again like #%u after %llu inputs\n", it->second,
             (unsigned long long)shared->counters.inputs);
    }
    fflush(stdout);
    restartsWithoutProgress =
        shared->counters.inputs == before ? restartsWithoutProgress + 1 : 0;
    if (restartsWithoutProgress >= 3) {
      printf("triax-fuzz: the child dies before it runs an input; see %s\n",
             (options.artifacts + "/current-log").c_str());
      return 2;
    }
    if (options.seconds && now() >= deadline)
      break;
    if (options.runs && shared->counters.inputs >= options.runs)
      break;
  }
  const Counters &c = shared->counters;
  double elapsed = now() - start;
  printf("triax-fuzz: %llu inputs run in %.0f s (%.0f/s): %llu parsed, %llu "
         "verified; %llu pipeline attempts, %llu succeeded; %llu crashes (%zu "
         "distinct), %llu timeouts\n",
         (unsigned long long)c.inputs, elapsed, c.inputs / elapsed,
         (unsigned long long)c.parsed, (unsigned long long)c.verified,
         (unsigned long long)c.attempts, (unsigned long long)c.passed,
         (unsigned long long)shared->crashes, signatures.size(),
         (unsigned long long)shared->timeouts);
  return shared->crashes || shared->timeouts ? 1 : 0;
}

/// Runs each file once, as the fuzz loop would, saying what each attempt
/// did; a crash ends the process with its report.
int replay(const Options &options) {
  for (const std::string &path : options.paths) {
    std::string input = readFile(path);
    if (input.empty()) {
      printf("%s: empty\n", path.c_str());
      continue;
    }
    printf("%s: plan %zu\n", path.c_str(),
           size_t((unsigned char)input[0]) % kNumPlans);
    fflush(stdout);
    Counters before = *counters;
    runInput(reinterpret_cast<const uint8_t *>(input.data()), input.size());
    printf("%s: %s\n", path.c_str(),
           counters->verified != before.verified ? "verified; no crash"
           : counters->parsed != before.parsed   ? "parsed, did not verify"
                                                 : "did not parse");
    fflush(stdout);
  }
  return 0;
}

[[noreturn]] void usage() {
  fprintf(stderr,
          "usage: triax-fuzz [--seconds N] [--runs N] [--seed N] [--timeout "
          "N] [--artifacts DIR] CORPUS_DIR...\n"
          "       triax-fuzz [--verbose] FILE...    (replay)\n"
          "       triax-fuzz --list-plans\n"
          "An input is one byte that picks the plan, then MLIR text "
          "(docs/fuzzing.md).\n");
  exit(2);
}

} // namespace

int main(int argc, char **argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc)
        usage();
      return argv[++i];
    };
    if (arg == "--seconds")
      options.seconds = atof(value().c_str());
    else if (arg == "--runs")
      options.runs = strtoull(value().c_str(), nullptr, 10);
    else if (arg == "--seed")
      options.seed = strtoull(value().c_str(), nullptr, 10);
    else if (arg == "--timeout")
      options.timeout = atoi(value().c_str());
    else if (arg == "--artifacts")
      options.artifacts = value();
    else if (arg == "-v" || arg == "--verbose")
      verbose = true;
    else if (arg == "--list-plans") {
      listPlans();
      return 0;
    } else if (arg == "-h" || arg == "--help" || arg[0] == '-')
      usage();
    else
      options.paths.push_back(arg);
  }
  if (options.paths.empty())
    usage();
  initialize();
  bool directories =
      std::all_of(options.paths.begin(), options.paths.end(),
                  [](const std::string &p) { return isDirectory(p); });
  bool files =
      std::none_of(options.paths.begin(), options.paths.end(),
                   [](const std::string &p) { return isDirectory(p); });
  if (!directories && !files) {
    fprintf(stderr, "triax-fuzz: give corpus directories (fuzz) or files "
                    "(replay), not both\n");
    return 2;
  }
  return directories ? fuzz(options) : replay(options);
}
#endif // TRIAX_FUZZ_LIBFUZZER
