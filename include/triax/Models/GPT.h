//===- GPT.h - Decoder-only transformer models as Triax IR -------*- C++
//-*-===//
//
// Builds GPT-2/GPT-3 style (LayerNorm, GELU MLP, learned positions, tied
// head) and LLaMA style (RMSNorm, SwiGLU MLP, untied head) models as a
// `triax.model`. `triax-model` is a thin command line over this library.
//
//===----------------------------------------------------------------------===//

#ifndef TRIAX_MODELS_GPT_H
#define TRIAX_MODELS_GPT_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/StringRef.h"

#include <optional>
#include <string>
#include <vector>

namespace triax {

/// Everything that decides a model's shapes and its training configuration.
struct GPTConfig {
  /// Parameter naming: "gpt2" (HF GPT-2 names: wte.weight, h.0.attn...) or
  /// "llama" (HF LLaMA names: model.embed_tokens.weight, ...).
  std::string family = "gpt2";
  std::string name = "gpt";
  int64_t layers = 2, hidden = 64, heads = 4, kvHeads = 4, ffn = 256;
  int64_t vocab = 256, seq = 64;
  /// Sequences per optimizer step, and per forward/backward pass.
  int64_t batch = 8, microBatch = 8;
  /// "f32" or "bf16" (the compute dtype; master weights stay f32).
  std::string dtype = "f32";
  bool learnedPositions = true; ///< wpe; otherwise rotary (triax.rope on
                                ///< the queries and keys, ropeTheta)
  double ropeTheta = 10000.0;   ///< the rotary frequencies' base
  bool biases = true;           ///< biases on every linear and norm
  bool tiedHead = true;         ///< LM head reads the embedding table
  bool rmsNorm = false;         ///< RMSNorm instead of LayerNorm
  bool swiglu = false;          ///< SwiGLU MLP instead of GELU MLP
  /// Mixture of experts: with experts > 0 every block's MLP is a MoE layer
  /// of that many expert MLPs (no biases), each token routed to its top-k
  /// (gates renormalized over the k when k >= 2, Mixtral; the chosen
  /// probability when k = 1, Switch). capacityFactor 0 drops nothing;
  /// otherwise each expert takes ceil(factor * seq * k / experts) choices
  /// per sequence. auxLossCoeff scales the load-balancing loss added to
  /// the training loss.
  int64_t experts = 0, topK = 2;
  double capacityFactor = 0.0, auxLossCoeff = 0.01;
  double lr = 6e-4, beta1 = 0.9, beta2 = 0.95, eps = 1e-8, weightDecay = 0.1,
         gradClip = 1.0, initStd = 0.02;
};

/// The named configurations, in the order `--help` lists them.
std::vector<std::string> namedConfigNames();
/// A named configuration (tiny, gpt2, gpt2-medium, ..., llama2-7b).
std::optional<GPTConfig> getNamedConfig(llvm::StringRef name);

/// The rows of an expert per sequence (the MoE capacity C).
int64_t expertCapacity(const GPTConfig &config);

/// Checks that the configuration can be built; on failure returns a
/// message naming the offending fields and values.
std::optional<std::string> validate(const GPTConfig &config);

/// Builds `module { triax.model @<name> ... }`. The config must validate.
mlir::OwningOpRef<mlir::ModuleOp> buildGPT(mlir::MLIRContext *context,
                                           const GPTConfig &config);

} // namespace triax

#endif // TRIAX_MODELS_GPT_H
