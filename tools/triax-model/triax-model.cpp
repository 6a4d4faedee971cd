//===- triax-model.cpp - Emit a model as Triax IR -------------------------===//
//
//   triax-model gpt2 > gpt2.mlir
//   triax-model tiny --layers 4 --hidden 128 --print-param-count
//
// A thin command line over lib/Models: pick a named configuration, override
// any field, get verified IR.
//
//===----------------------------------------------------------------------===//

#include "triax/InitAll.h"
#include "triax/Models/GPT.h"

#include "triax/Dialect/Triax/IR/Triax.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

using namespace llvm;

static cl::OptionCategory category("triax-model options");

static cl::opt<std::string> modelName(cl::Positional, cl::desc("<config>"),
                                      cl::init("tiny"), cl::cat(category));
static cl::opt<std::string>
    outputFile("o", cl::desc("Output file (default: stdout)"),
               cl::value_desc("file"), cl::init("-"), cl::cat(category));
static cl::opt<bool> printParamCount(
    "print-param-count",
    cl::desc("Print the number of parameters instead of the IR"),
    cl::cat(category));
static cl::opt<bool> listConfigs("list", cl::desc("List the named configs"),
                                 cl::cat(category));

#define INT_FLAG(var, flag, help)                                              \
  static cl::opt<int64_t> var(flag, cl::desc(help), cl::init(0),               \
                              cl::value_desc("n"), cl::cat(category))
INT_FLAG(layers, "layers", "Number of transformer blocks");
INT_FLAG(hidden, "hidden", "Hidden size (d_model)");
INT_FLAG(heads, "heads", "Attention heads");
INT_FLAG(kvHeads, "kv-heads",
         "Key/value heads (grouped-query attention; default: heads)");
INT_FLAG(ffn, "ffn", "MLP inner size (default: 4 x hidden for the GPT family)");
INT_FLAG(vocab, "vocab", "Vocabulary size");
INT_FLAG(seqLen, "seq",
         "Sequence length (also the number of learned positions)");
INT_FLAG(batch, "batch", "Global batch in sequences per optimizer step");
INT_FLAG(microBatch, "micro-batch",
         "Sequences per forward/backward pass (default: batch)");
INT_FLAG(experts, "experts",
         "Mixture of experts: expert MLPs per block (0: a dense MLP)");
INT_FLAG(topK, "top-k", "Experts each token is routed to (default 2)");
#undef INT_FLAG
static cl::opt<std::string> dtype("dtype",
                                  cl::desc("Parameter and compute dtype: f32, "
                                           "or bf16 (bf16 weights, gradients "
                                           "and activations; f32 master "
                                           "weights and AdamW moments: 2 + 2 "
                                           "+ 12 bytes per parameter)"),
                                  cl::init(""), cl::cat(category));
static cl::opt<double> lr("lr", cl::desc("Peak learning rate"), cl::init(0),
                          cl::cat(category));
static cl::opt<double> capacityFactor(
    "capacity-factor",
    cl::desc("MoE: rows per expert and sequence as a multiple of an even "
             "share, ceil(factor * seq * top-k / experts); 0 drops nothing "
             "(the default)"),
    cl::init(-1), cl::cat(category));
static cl::opt<double> auxLossCoeff(
    "aux-loss-coeff",
    cl::desc("MoE: weight of the load-balancing loss (default 0.01)"),
    cl::init(-1), cl::cat(category));
static cl::opt<double> ropeTheta(
    "rope-theta",
    cl::desc("LLaMA family: the rotary embedding's frequency base (default "
             "10000; mixtral-8x7b 1e6)"),
    cl::init(0), cl::cat(category));
static cl::opt<std::string> name("name", cl::desc("Symbol name of the model"),
                                 cl::init(""), cl::cat(category));

static std::string configHelp() {
  return R"(Configs (published shapes; every field can be overridden):
  tiny         2 layers, hidden 64, 4 heads, vocab 256 (bytes), seq 64 - for tests
  tiny-moe     tiny with a mixture of 4 experts (ffn 128) per block, top-2
  gpt2         124M: 12 layers, hidden 768, 12 heads, vocab 50257, seq 1024,
               learned positions, biases, LM head tied to wte
  gpt2-medium  350M: 24 layers, hidden 1024, 16 heads
  gpt2-large   774M: 36 layers, hidden 1280, 20 heads
  gpt2-xl      1.5B: 48 layers, hidden 1600, 25 heads
  gpt3-175b    96 layers, hidden 12288, 96 heads, seq 2048, batch 1536
  llama2-7b    32 layers, hidden 4096, 32 heads, ffn 11008, vocab 32000,
               seq 4096, RMSNorm, SwiGLU, rotary positions (RoPE, theta
               1e4), no biases, untied head
  mixtral-8x7b 46.7B: llama2-7b's shape with 8 kv-heads, RoPE theta 1e6 and
               a mixture of 8 SwiGLU experts of ffn 14336 per block, top-2
)";
}

int main(int argc, char **argv) {
  InitLLVM y(argc, argv);
  cl::HideUnrelatedOptions(category);
  cl::AddExtraVersionPrinter([](raw_ostream &os) { os << "triax-model\n"; });
  std::string overview =
      "Triax model generator: prints a model as Triax IR\n\n" + configHelp();
  cl::ParseCommandLineOptions(argc, argv, overview);

  if (listConfigs) {
    for (const std::string &n : triax::namedConfigNames())
      outs() << n << "\n";
    return 0;
  }
  std::optional<triax::GPTConfig> config = triax::getNamedConfig(modelName);
  if (!config) {
    errs() << "triax-model: unknown config '" << modelName
           << "'; expected one of:";
    for (const std::string &n : triax::namedConfigNames())
      errs() << " " << n;
    errs() << "\n";
    return 1;
  }
  triax::GPTConfig &c = *config;
  bool hiddenChanged = hidden != 0;
  if (layers)
    c.layers = layers;
  if (hidden)
    c.hidden = hidden;
  if (heads)
    c.heads = c.kvHeads = heads;
  if (kvHeads)
    c.kvHeads = kvHeads;
  if (ffn)
    c.ffn = ffn;
  else if (hiddenChanged && !c.swiglu)
    c.ffn = 4 * c.hidden;
  if (vocab)
    c.vocab = vocab;
  if (seqLen)
    c.seq = seqLen;
  if (batch)
    c.batch = c.microBatch = batch;
  if (microBatch)
    c.microBatch = microBatch;
  if (ropeTheta.getNumOccurrences()) {
    if (c.learnedPositions) {
      errs() << "triax-model: --rope-theta: " << modelName
             << " has learned positions (wpe), not rotary ones\n";
      return 1;
    }
    if (!(ropeTheta > 0)) {
      errs() << "triax-model: --rope-theta must be positive, got " << ropeTheta
             << "\n";
      return 1;
    }
    c.ropeTheta = ropeTheta;
  }
  if (!dtype.empty())
    c.dtype = dtype;
  if (experts.getNumOccurrences())
    c.experts = experts;
  if (topK.getNumOccurrences())
    c.topK = topK;
  if (capacityFactor.getNumOccurrences())
    c.capacityFactor = capacityFactor;
  if (auxLossCoeff.getNumOccurrences())
    c.auxLossCoeff = auxLossCoeff;
  if (lr != 0)
    c.lr = lr;
  if (!name.empty())
    c.name = name;
  if (std::optional<std::string> error = triax::validate(c)) {
    errs() << "triax-model: " << *error << "\n";
    return 1;
  }

  mlir::MLIRContext context;
  mlir::DialectRegistry registry;
  triax::registerAllDialects(registry);
  context.appendDialectRegistry(registry);
  mlir::OwningOpRef<mlir::ModuleOp> module = triax::buildGPT(&context, c);
  if (failed(mlir::verify(*module))) {
    errs() << "triax-model: internal error: the generated model does not "
              "verify\n";
    return 1;
  }

  std::string error;
  std::unique_ptr<ToolOutputFile> output =
      mlir::openOutputFile(outputFile, &error);
  if (!output) {
    errs() << "triax-model: " << error << "\n";
    return 1;
  }
  if (printParamCount) {
    auto model = *module->getOps<mlir::triax::ModelOp>().begin();
    output->os() << model.getNumParameters() << "\n";
  } else {
    module->print(output->os());
  }
  output->keep();
  return 0;
}
