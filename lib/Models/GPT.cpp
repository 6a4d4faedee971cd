//===- GPT.cpp - Decoder-only transformer models as Triax IR --------------===//
//
// One builder for the GPT and LLaMA families: the families differ only in
// the norm, the MLP, position embeddings, biases, head tying and parameter
// names, which are all fields of GPTConfig.
//
//===----------------------------------------------------------------------===//

#include "triax/Models/GPT.h"

#include "triax/Dialect/Triax/IR/Triax.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

using namespace mlir;
using namespace mlir::triax;

namespace triax {

static GPTConfig gpt2Family(StringRef name, int64_t layers, int64_t hidden,
                            int64_t heads) {
  GPTConfig c;
  c.name = name.str();
  c.layers = layers;
  c.hidden = hidden;
  c.heads = c.kvHeads = heads;
  c.ffn = 4 * hidden;
  c.vocab = 50257;
  c.seq = 1024;
  return c;
}

std::vector<std::string> namedConfigNames() {
  return {"tiny",    "tiny-moe",  "gpt2",      "gpt2-medium", "gpt2-large",
          "gpt2-xl", "gpt3-175b", "llama2-7b", "mixtral-8x7b"};
}

std::optional<GPTConfig> getNamedConfig(StringRef name) {
  if (name == "tiny") {
    GPTConfig c; // 2 layers, hidden 64, 4 heads, vocab 256, seq 64
    c.name = "tiny";
    c.lr = 2e-3;
    return c;
  }
  if (name == "tiny-moe") {
    GPTConfig c = *getNamedConfig("tiny"); // 4 experts of ffn 128, top-2
    c.name = "tiny_moe";
    c.ffn = 128;
    c.experts = 4;
    c.topK = 2;
    return c;
  }
  // The published GPT-2 shapes (Radford et al. 2019; HF gpt2 configs).
  if (name == "gpt2")
    return gpt2Family(name, 12, 768, 12);
  if (name == "gpt2-medium")
    return gpt2Family(name, 24, 1024, 16);
  if (name == "gpt2-large")
    return gpt2Family(name, 36, 1280, 20);
  if (name == "gpt2-xl")
    return gpt2Family(name, 48, 1600, 25);
  if (name == "gpt3-175b") { // Brown et al. 2020, Table 2.1
    GPTConfig c = gpt2Family(name, 96, 12288, 96);
    c.seq = 2048;
    c.batch = 1536;
    c.microBatch = 1;
    return c;
  }
  if (name == "llama2-7b") { // Touvron et al. 2023; HF Llama-2-7b config
    GPTConfig c;
    c.family = "llama";
    c.name = name.str();
    c.layers = 32;
    c.hidden = 4096;
    c.heads = c.kvHeads = 32;
    c.ffn = 11008;
    c.vocab = 32000;
    c.seq = 4096;
    c.batch = 1024;
    c.microBatch = 1;
    c.learnedPositions = false;
    c.biases = false;
    c.tiedHead = false;
    c.rmsNorm = true;
    c.swiglu = true;
    c.lr = 3e-4;
    return c;
  }
  if (name == "mixtral-8x7b") { // Jiang et al. 2024; HF Mixtral-8x7B config
    GPTConfig c = *getNamedConfig("llama2-7b");
    c.name = "mixtral_8x7b";
    c.kvHeads = 8;
    c.ffn = 14336;
    c.experts = 8;
    c.topK = 2;
    c.auxLossCoeff = 0.02; // router_aux_loss_coef
    c.ropeTheta = 1e6;     // rope_theta
    // Mixtral trains dropless (MegaBlocks); Triax's experts run on buffers
    // of C rows per expert and sequence, which dropless pads to the whole
    // sequence: E/k = 4x the experts' useful FLOPs, memory and all_to_all
    // bytes. Switch Transformer's training factor instead.
    c.capacityFactor = 1.25;
    return c;
  }
  return std::nullopt;
}

int64_t expertCapacity(const GPTConfig &c) {
  if (c.capacityFactor <= 0 || c.experts <= 0)
    return c.seq;
  double rows = std::ceil(c.capacityFactor * double(c.seq) * double(c.topK) /
                          double(c.experts));
  return std::clamp<int64_t>(int64_t(rows), 1, c.seq);
}

std::optional<std::string> validate(const GPTConfig &c) {
  auto positive = [](int64_t v) { return v >= 1; };
  std::pair<const char *, int64_t> fields[] = {{"layers", c.layers},
                                               {"hidden", c.hidden},
                                               {"heads", c.heads},
                                               {"kv-heads", c.kvHeads},
                                               {"ffn", c.ffn},
                                               {"vocab", c.vocab},
                                               {"seq", c.seq},
                                               {"batch", c.batch},
                                               {"micro-batch", c.microBatch}};
  for (auto [name, value] : fields)
    if (!positive(value))
      return llvm::formatv("--{0} must be >= 1, got {1}", name, value).str();
  if (c.hidden % c.heads != 0)
    return llvm::formatv("hidden {0} is not divisible by heads {1}", c.hidden,
                         c.heads)
        .str();
  if (c.heads % c.kvHeads != 0)
    return llvm::formatv("heads {0} is not divisible by kv-heads {1}", c.heads,
                         c.kvHeads)
        .str();
  // The optimizer's numbers go into the IR's #triax.train_config, whose
  // parser takes finite numbers only (and AdamW would not train on others).
  std::pair<const char *, double> rates[] = {
      {"lr", c.lr},
      {"beta1", c.beta1},
      {"beta2", c.beta2},
      {"eps", c.eps},
      {"weight-decay", c.weightDecay},
      {"grad-clip", c.gradClip},
      {"init-std", c.initStd},
      {"capacity-factor", c.capacityFactor},
      {"aux-loss-coeff", c.auxLossCoeff}};
  auto number = [](double v) {
    char text[32];
    std::snprintf(text, sizeof(text), "%g", v);
    return std::string(text);
  };
  for (auto [name, value] : rates)
    if (!std::isfinite(value) || value < 0)
      return llvm::formatv("--{0} must be a finite number >= 0, got {1}", name,
                           number(value))
          .str();
  if (c.lr == 0)
    return "--lr must be > 0";
  if (c.beta1 >= 1 || c.beta2 >= 1)
    return "AdamW's betas must be below 1, got beta1 " + number(c.beta1) +
           ", beta2 " + number(c.beta2);
  if (c.batch % c.microBatch != 0)
    return llvm::formatv("batch {0} is not a multiple of micro-batch {1}",
                         c.batch, c.microBatch)
        .str();
  if (c.dtype != "f32" && c.dtype != "bf16")
    return "--dtype must be f32 or bf16, got " + c.dtype;
  if (c.experts < 0)
    return llvm::formatv("--experts must be >= 0, got {0}", c.experts).str();
  if (c.experts > 0 && (c.topK < 1 || c.topK > c.experts))
    return llvm::formatv("--top-k must be between 1 and the {0} experts, got "
                         "{1}",
                         c.experts, c.topK)
        .str();
  if (c.family != "gpt2" && c.family != "llama")
    return "family must be gpt2 or llama, got " + c.family;
  return std::nullopt;
}

namespace {
/// Builds the parameters (at the top of the model) and the forward graph.
class GPTBuilder {
public:
  GPTBuilder(MLIRContext *ctx, const GPTConfig &config)
      : c(config), b(ctx), paramBuilder(ctx),
        elt(config.dtype == "bf16" ? Type(b.getBF16Type())
                                   : Type(b.getF32Type())) {}

  OwningOpRef<ModuleOp> build();

private:
  enum class Init { Normal, Zeros, Ones };

  /// Declares parameter `name` and reads it at the current insertion point.
  /// `nnLinear`: checkpointed as PyTorch's nn.Linear holds it, [out, in]
  /// (each expert's, for stacked experts): triax.checkpoint_transposed.
  Value param(StringRef name, ArrayRef<int64_t> shape, Init init,
              double std = 0.0, StringRef checkpointName = {},
              bool nnLinear = false);
  /// A linear's [in, out] weight: in the LLaMA family, checkpointed as
  /// nn.Linear's [out, in] (Hugging Face's layout).
  Value linearWeight(StringRef name, int64_t in, int64_t out, double std,
                     StringRef checkpointName = {});
  Value norm(Value x, StringRef prefix);
  Value linear(Value x, StringRef prefix, int64_t in, int64_t out, double std,
               StringRef checkpointPrefix = {});
  /// Block `layer` on x; with experts, `aux` is the sum of the earlier
  /// blocks' load-balancing losses (null before the first), and the result
  /// carries it on with this block's added.
  std::pair<Value, Value> block(Value x, Value aux, int64_t layer);
  Value moe(Value h, Value &aux, int64_t layer, double residualStd);
  RankedTensorType act(int64_t features) {
    return RankedTensorType::get({c.microBatch, c.seq, features}, elt);
  }
  std::string layerName(int64_t layer, StringRef suffix) const {
    return llvm::formatv(c.family == "llama" ? "model.layers.{0}.{1}"
                                             : "h.{0}.{1}",
                         layer, suffix);
  }

  const GPTConfig &c;
  OpBuilder b, paramBuilder;
  Type elt;
  Location loc = b.getUnknownLoc();
  bool llama() const { return c.family == "llama"; }
};
} // namespace

Value GPTBuilder::param(StringRef name, ArrayRef<int64_t> shape, Init init,
                        double std, StringRef checkpointName, bool nnLinear) {
  auto type = RankedTensorType::get(shape, elt);
  InitKind kind = init == Init::Normal  ? InitKind::normal
                  : init == Init::Zeros ? InitKind::zeros
                                        : InitKind::ones;
  // AdamW decays matrices (weights, embeddings), not biases or norm gains.
  bool decay = shape.size() >= 2;
  Location paramLoc = NameLoc::get(b.getStringAttr(name));
  auto op = ParamOp::create(paramBuilder, paramLoc, b.getStringAttr(name),
                            TypeAttr::get(type),
                            InitAttr::get(b.getContext(), kind, std),
                            decay ? b.getUnitAttr() : UnitAttr());
  if (!checkpointName.empty())
    op->setAttr(TriaxDialect::kCheckpointNameAttrName,
                b.getStringAttr(checkpointName));
  if (nnLinear)
    op->setAttr(TriaxDialect::kCheckpointTransposedAttrName, b.getUnitAttr());
  return GetParamOp::create(b, paramLoc, type,
                            FlatSymbolRefAttr::get(b.getContext(), name));
}

Value GPTBuilder::linearWeight(StringRef name, int64_t in, int64_t out,
                               double std, StringRef checkpointName) {
  return param(name, {in, out}, Init::Normal, std, checkpointName, llama());
}

Value GPTBuilder::norm(Value x, StringRef prefix) {
  auto type = cast<RankedTensorType>(x.getType());
  Location l = NameLoc::get(b.getStringAttr(prefix));
  Value w = param((prefix + ".weight").str(), {c.hidden}, Init::Ones);
  if (c.rmsNorm)
    return RMSNormOp::create(b, l, type, /*stats=*/TypeRange{}, x, w,
                             b.getF64FloatAttr(1e-5))
        .getResult();
  Value bias = param((prefix + ".bias").str(), {c.hidden}, Init::Zeros);
  return LayerNormOp::create(b, l, type, /*stats=*/TypeRange{}, x, w, bias,
                             b.getF64FloatAttr(1e-5))
      .getResult();
}

Value GPTBuilder::linear(Value x, StringRef prefix, int64_t in, int64_t out,
                         double std, StringRef checkpointPrefix) {
  auto ckpt = [&](StringRef suffix) {
    return checkpointPrefix.empty() ? std::string()
                                    : (checkpointPrefix + suffix).str();
  };
  Value w =
      linearWeight((prefix + ".weight").str(), in, out, std, ckpt(".weight"));
  Value bias;
  if (c.biases)
    bias =
        param((prefix + ".bias").str(), {out}, Init::Zeros, 0.0, ckpt(".bias"));
  return LinearOp::create(b, NameLoc::get(b.getStringAttr(prefix)), act(out), x,
                          w, bias, UnitAttr());
}

/// The MoE layer of block `layer` on the normalized h: the router (a
/// linear without bias), the routing, the dispatch into [E, B*C, H], the
/// experts' MLP (GELU, or SwiGLU for the LLaMA family) as batched GEMMs,
/// and the combine weighted by the gates. Its load-balancing loss is added
/// to `aux`.
Value GPTBuilder::moe(Value h, Value &aux, int64_t layer, double residualStd) {
  int64_t e = c.experts, k = c.topK, cap = expertCapacity(c);
  std::string prefix = layerName(layer, llama() ? "block_sparse_moe" : "moe");
  auto name = [&](StringRef suffix) { return (prefix + "." + suffix).str(); };
  Location l = NameLoc::get(b.getStringAttr(prefix));
  Value router = linearWeight(name(llama() ? "gate.weight" : "router.weight"),
                              c.hidden, e, c.initStd);
  Value logits = LinearOp::create(b, l, act(e), h, router, Value(), UnitAttr());
  auto perChoice = [&](Type elt) {
    return RankedTensorType::get({c.microBatch, c.seq, k}, elt);
  };
  Type i32 = b.getI32Type();
  auto route = MoERouteOp::create(
      b, l, perChoice(elt), perChoice(i32), perChoice(i32),
      RankedTensorType::get({c.microBatch, e * cap}, i32),
      RankedTensorType::get({}, b.getF32Type()), logits, b.getI64IntegerAttr(k),
      b.getI64IntegerAttr(cap), b.getF64FloatAttr(c.auxLossCoeff),
      k >= 2 ? b.getUnitAttr() : UnitAttr());
  auto rows = [&](int64_t width) {
    return RankedTensorType::get({e, c.microBatch * cap, width}, elt);
  };
  Value buf = MoEDispatchOp::create(b, l, rows(c.hidden), h, route.getSlots(),
                                    route.getAssign(), Value());
  auto experts = [&](Value x, StringRef weight, int64_t in, int64_t out,
                     double std) -> Value {
    // The LLaMA family's experts are checkpointed as Mixtral's: expert N's
    // nn.Linear [out, in] as experts.N.<weight>.
    std::string own = name(("experts." + weight).str());
    std::string ckpt =
        llama() ? name(("experts.*." + weight).str()) : std::string();
    Value w = param(own, {e, in, out}, Init::Normal, std, ckpt, llama());
    return ExpertLinearOp::create(b, l, rows(out), x, w, UnitAttr());
  };
  Value out;
  if (c.swiglu) {
    Value gate = experts(buf, "w1.weight", c.hidden, c.ffn, c.initStd);
    Value up = experts(buf, "w3.weight", c.hidden, c.ffn, c.initStd);
    Value act1 = SiluOp::create(b, loc, rows(c.ffn), gate);
    Value prod = MulOp::create(b, loc, rows(c.ffn), act1, up);
    out = experts(prod, "w2.weight", c.ffn, c.hidden, residualStd);
  } else {
    Value fc = experts(buf, "c_fc.weight", c.hidden, c.ffn, c.initStd);
    Value g = GeluOp::create(b, loc, rows(c.ffn), fc);
    out = experts(g, "c_proj.weight", c.ffn, c.hidden, residualStd);
  }
  aux = aux ? AddOp::create(b, loc, aux.getType(), aux, route.getAux())
                  .getResult()
            : route.getAux();
  return MoECombineOp::create(b, l, act(c.hidden), out, route.getSlots(),
                              route.getAssign(), route.getGates());
}

std::pair<Value, Value> GPTBuilder::block(Value input, Value aux,
                                          int64_t layer) {
  int64_t headDim = c.hidden / c.heads, kv = c.kvHeads * headDim;
  // GPT-2 scales the init of the projections into the residual stream by
  // 1/sqrt(2 * layers) so the residual's variance does not grow with depth.
  double residualStd = c.initStd / std::sqrt(2.0 * c.layers);
  std::string blockName =
      llvm::formatv(llama() ? "model.layers.{0}" : "h.{0}", layer);
  auto scalar = RankedTensorType::get({}, b.getF32Type());
  SmallVector<Type> results = {act(c.hidden)};
  SmallVector<Value> inputs = {input};
  if (c.experts > 0)
    results.push_back(scalar);
  if (aux)
    inputs.push_back(aux);
  auto blockOp = BlockOp::create(b, NameLoc::get(b.getStringAttr(blockName)),
                                 results, b.getStringAttr(blockName), inputs);
  OpBuilder::InsertionGuard guard(b);
  SmallVector<Type> argTypes(ValueRange(inputs).getTypes());
  Block *body = b.createBlock(&blockOp.getBody(), {}, argTypes,
                              SmallVector<Location>(inputs.size(), loc));
  Value x = body->getArgument(0);
  Value blockAux = aux ? body->getArgument(1) : Value();

  auto name = [&](StringRef gpt, StringRef llamaName) {
    return layerName(layer, llama() ? llamaName : gpt);
  };
  Value h = norm(x, name("ln_1", "input_layernorm"));
  // GPT-2 checkpoints hold q, k and v as one fused c_attn projection.
  std::string cAttn = llama() ? "" : layerName(layer, "attn.c_attn");
  Value q = linear(h, name("attn.q", "self_attn.q_proj"), c.hidden, c.hidden,
                   c.initStd, cAttn);
  Value k = linear(h, name("attn.k", "self_attn.k_proj"), c.hidden, kv,
                   c.initStd, cAttn);
  Value v = linear(h, name("attn.v", "self_attn.v_proj"), c.hidden, kv,
                   c.initStd, cAttn);
  if (!c.learnedPositions) {
    // Rotary positions: the queries and keys rotated by their tokens'
    // positions, head by head.
    auto ids = RankedTensorType::get({c.microBatch, c.seq}, b.getI32Type());
    Value pos = PositionIdsOp::create(b, loc, ids);
    auto rope = [&](Value v, int64_t heads, StringRef which) {
      return RopeOp::create(b,
                            NameLoc::get(b.getStringAttr(
                                name("attn", "self_attn") + which.str())),
                            v.getType(), v, pos, b.getI64IntegerAttr(heads),
                            b.getF64FloatAttr(c.ropeTheta),
                            /*inverse=*/nullptr);
    };
    q = rope(q, c.heads, ".q_rope");
    k = rope(k, c.kvHeads, ".k_rope");
  }
  IntegerAttr kvHeads =
      c.kvHeads == c.heads ? IntegerAttr() : b.getI64IntegerAttr(c.kvHeads);
  Value a = AttentionOp::create(
                b, NameLoc::get(b.getStringAttr(name("attn", "self_attn"))),
                act(c.hidden), /*lse=*/Type(), q, k, v,
                b.getI64IntegerAttr(c.heads), kvHeads,
                /*mesh=*/nullptr, /*axes=*/nullptr, /*ring=*/nullptr)
                .getResult();
  Value o = linear(a, name("attn.c_proj", "self_attn.o_proj"), c.hidden,
                   c.hidden, residualStd);
  x = AddOp::create(b, loc, act(c.hidden), x, o);

  h = norm(x, name("ln_2", "post_attention_layernorm"));
  Value m;
  if (c.experts > 0) {
    m = moe(h, blockAux, layer, residualStd);
  } else if (c.swiglu) {
    Value gate = linear(h, name("mlp.gate", "mlp.gate_proj"), c.hidden, c.ffn,
                        c.initStd);
    Value up =
        linear(h, name("mlp.up", "mlp.up_proj"), c.hidden, c.ffn, c.initStd);
    Value act1 = SiluOp::create(b, loc, act(c.ffn), gate);
    Value prod = MulOp::create(b, loc, act(c.ffn), act1, up);
    m = linear(prod, name("mlp.down", "mlp.down_proj"), c.ffn, c.hidden,
               residualStd);
  } else {
    Value fc =
        linear(h, name("mlp.c_fc", "mlp.fc"), c.hidden, c.ffn, c.initStd);
    Value g = GeluOp::create(b, loc, act(c.ffn), fc);
    m = linear(g, name("mlp.c_proj", "mlp.proj"), c.ffn, c.hidden, residualStd);
  }
  x = AddOp::create(b, loc, act(c.hidden), x, m);
  SmallVector<Value> yields = {x};
  if (blockAux)
    yields.push_back(blockAux);
  YieldOp::create(b, loc, yields);
  return {blockOp.getResult(0), c.experts > 0 ? blockOp.getResult(1) : Value()};
}

OwningOpRef<ModuleOp> GPTBuilder::build() {
  MLIRContext *ctx = b.getContext();
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  b.setInsertionPointToEnd(module->getBody());
  auto config = TrainConfigAttr::get(
      ctx, "adamw", llvm::APFloat(c.lr), llvm::APFloat(c.beta1),
      llvm::APFloat(c.beta2), llvm::APFloat(c.eps),
      llvm::APFloat(c.weightDecay), llvm::APFloat(c.gradClip), c.batch,
      c.microBatch, c.seq, elt, b.getF32Type());
  auto model = ModelOp::create(b, loc, b.getStringAttr(c.name), config);
  Block *modelBody = b.createBlock(&model.getBody());
  paramBuilder.setInsertionPointToStart(modelBody);

  auto tokens = RankedTensorType::get({c.microBatch, c.seq}, b.getI32Type());
  auto loss = RankedTensorType::get({}, b.getF32Type());
  b.setInsertionPointToEnd(modelBody);
  auto forward =
      func::FuncOp::create(b, loc, ModelOp::kForwardName,
                           b.getFunctionType({tokens, tokens}, {loss}));
  Block *entry = forward.addEntryBlock();
  // Parameters go above the forward function, in the order they are used.
  paramBuilder.setInsertionPoint(forward);
  b.setInsertionPointToStart(entry);
  Value tok = entry->getArgument(0), targets = entry->getArgument(1);

  StringRef embName = llama() ? "model.embed_tokens" : "wte";
  Value wte = param((embName + ".weight").str(), {c.vocab, c.hidden},
                    Init::Normal, c.initStd);
  Value x = EmbeddingOp::create(b, NameLoc::get(b.getStringAttr(embName)),
                                act(c.hidden), tok, wte);
  if (c.learnedPositions) {
    Value wpe =
        param("wpe.weight", {c.seq, c.hidden}, Init::Normal, c.initStd / 2);
    Value pos = PositionIdsOp::create(b, loc, tokens);
    Value pe = EmbeddingOp::create(b, NameLoc::get(b.getStringAttr("wpe")),
                                   act(c.hidden), pos, wpe);
    x = AddOp::create(b, loc, act(c.hidden), x, pe);
  }
  // The blocks' load-balancing losses, summed through them (MoE only).
  Value aux;
  for (int64_t layer = 0; layer < c.layers; ++layer)
    std::tie(x, aux) = block(x, aux, layer);
  x = norm(x, llama() ? "model.norm" : "ln_f");
  Value logits;
  if (c.tiedHead) {
    logits = LinearOp::create(b, NameLoc::get(b.getStringAttr("lm_head")),
                              act(c.vocab), x, wte, Value(), b.getUnitAttr());
  } else {
    Value head = linearWeight("lm_head.weight", c.hidden, c.vocab, c.initStd);
    logits = LinearOp::create(b, NameLoc::get(b.getStringAttr("lm_head")),
                              act(c.vocab), x, head, Value(), UnitAttr());
  }
  Value l = CrossEntropyOp::create(b, NameLoc::get(b.getStringAttr("loss")),
                                   loss, logits, targets);
  if (aux)
    l = AddOp::create(b, NameLoc::get(b.getStringAttr("loss")), loss, l, aux);
  func::ReturnOp::create(b, loc, l);
  return module;
}

OwningOpRef<ModuleOp> buildGPT(MLIRContext *context, const GPTConfig &config) {
  context->loadDialect<TriaxDialect, func::FuncDialect>();
  return GPTBuilder(context, config).build();
}

} // namespace triax
