//===- TriaxOps.td - Triax operations ----------------------*- tablegen -*-===//

#ifndef TRIAX_DIALECT_TRIAX_IR_TRIAXOPS_TD
#define TRIAX_DIALECT_TRIAX_IR_TRIAXOPS_TD

include "triax/Dialect/Triax/IR/TriaxBase.td"
include "triax/Dialect/Triax/IR/TriaxAttrs.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"
include "triax/Dialect/Triax/Interfaces/CostOpInterface.td"
include "triax/Dialect/Triax/Interfaces/DifferentiableOpInterface.td"
include "triax/Dialect/Triax/Interfaces/ScalarElementwiseOpInterface.td"
include "triax/Dialect/Triax/Interfaces/ShardingRuleOpInterface.td"

//===----------------------------------------------------------------------===//
// Structure: model, parameters, blocks
//===----------------------------------------------------------------------===//

def Triax_ModelOp : Triax_Op<"model", [
    Symbol, SymbolTable, IsolatedFromAbove, NoRegionArguments, SingleBlock,
    NoTerminator]> {
  let summary = "A model: its parameters, its forward graph and its config";
  let description = [{
    A `triax.model` is a symbol table holding the model's `triax.param`s and
    a `func.func @forward(%tokens, %targets) -> tensor<f32>` that computes
    the mean loss of one micro-batch. The forward function's token and
    target types must be `tensor<micro_batch x seq x i32>` (or i64) as the
    training config says.

    ```mlir
    triax.model @tiny config = #triax.train_config<micro_batch = 4, seq = 8> {
      triax.param @wte.weight : tensor<256x64xf32> init <normal, std = 2.000000e-02> decay
      func.func @forward(%tokens: tensor<4x8xi32>, %targets: tensor<4x8xi32>) -> tensor<f32> {
        ...
      }
    }
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name,
                       Triax_TrainConfigAttr:$config);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    $sym_name `config` `=` qualified($config) attr-dict-with-keyword $body
  }];
  let hasRegionVerifier = 1;
  let extraClassDeclaration = [{
    /// The functions a model holds, by role (the program's structure): the
    /// forward (triax-model), the training step and the optimizer step
    /// (triax-autodiff), the pipeline's schedule (dist-pipeline). Passes
    /// find and create them by these names.
    static constexpr ::llvm::StringLiteral kForwardName = "forward";
    static constexpr ::llvm::StringLiteral kForwardBackwardName =
        "forward_backward";
    static constexpr ::llvm::StringLiteral kOptimizerStepName =
        "optimizer_step";
    static constexpr ::llvm::StringLiteral kPipelineStepName =
        "pipeline_step";
    /// A backward block's name: its forward block's plus this suffix.
    static constexpr ::llvm::StringLiteral kGradSuffix = ".grad";
    /// The forward function, or null.
    ::mlir::func::FuncOp getForward();
    /// The training step (forward, backward, gradients accumulated), or
    /// null before triax-autodiff.
    ::mlir::func::FuncOp getForwardBackward();
    /// The optimizer step, or null before triax-autodiff.
    ::mlir::func::FuncOp getOptimizerStep();
    /// The pipeline's schedule, or null without dist-pipeline.
    ::mlir::func::FuncOp getPipelineStep();
    /// The parameters in declaration order.
    auto getParams() { return getBody().front().getOps<ParamOp>(); }
    /// The number of trainable scalars (the sum over all parameters; of a
    /// padded one, its triax.valid_shape block: the padding is not the
    /// model's, so not in its FLOPs either).
    int64_t getNumParameters();
    /// The parameters one token's forward multiplies by (N in [F1]'s 6N):
    /// every parameter once, but a stacked expert weight [E, in, out] by
    /// the rows its triax.expert_linear computes per token of the
    /// micro-batch (E * C / S: the whole stack when dropless, capacity
    /// factor x top_k / E of it otherwise), which is what the kernels do.
    double getFlopParameters();
  }];
}

def Triax_ParamOp : Triax_Op<"param", [Symbol, HasParent<"ModelOp">]> {
  let summary = "A trainable parameter";
  let description = [{
    Declares a parameter of the enclosing model: its name, its tensor type
    (f32 or bf16, static shape), how it is initialized and whether AdamW
    applies weight decay to it (`decay`).

    ```mlir
    triax.param @h.0.mlp.c_fc.weight : tensor<64x256xf32> init <normal, std = 2.000000e-02> decay
    triax.param @h.0.mlp.c_fc.bias : tensor<256xf32> init <zeros>
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name,
                       TypeAttrOf<Triax_FloatTensor>:$type,
                       Triax_InitAttr:$init,
                       UnitAttr:$decay);
  let assemblyFormat = [{
    $sym_name `:` $type `init` $init (`decay` $decay^)? attr-dict
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    ::mlir::RankedTensorType getTensorType() {
      return ::llvm::cast<::mlir::RankedTensorType>(getType());
    }
    int64_t getNumElements() { return getTensorType().getNumElements(); }
  }];
}

def Triax_GetParamOp : Triax_Op<"get_param", [
    Pure, Triax_MasterPrecision, DeclareOpInterfaceMethods<SymbolUserOpInterface>,
    DeclareOpInterfaceMethods<CostOpInterface, ["getResultStorage"]>]> {
  let summary = "Reads a parameter of the enclosing model";
  let description = [{
    ```mlir
    %w = triax.get_param @h.0.attn.q.weight : tensor<64x64xf32>
    ```
    The symbol must name a `triax.param` of the enclosing model and the
    result type must equal the parameter's type.
  }];
  let arguments = (ins FlatSymbolRefAttr:$name);
  let results = (outs Triax_FloatTensor:$result);
  let assemblyFormat = "$name attr-dict `:` type($result)";
}

def Triax_BlockOp : Triax_Op<"block", [IsolatedFromAbove, DeclareOpInterfaceMethods<CostOpInterface, ["describeModel"]>]> {
  let summary = "One transformer block: the unit pipeline stages are cut along";
  let description = [{
    A named region computing one block of the model from explicit inputs.
    It is isolated from above: all it uses is its inputs and the model's
    parameters, so a pipeline pass can move it to any stage.

    ```mlir
    %y = triax.block "h.0" (%x) : (tensor<4x8x64xf32>) -> tensor<4x8x64xf32> {
    ^bb0(%in: tensor<4x8x64xf32>):
      ...
      triax.yield %out : tensor<4x8x64xf32>
    }
    ```
  }];
  let arguments = (ins StrAttr:$name, Variadic<AnyRankedTensor>:$inputs);
  let results = (outs Variadic<AnyRankedTensor>:$results);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    $name `(` $inputs `)` attr-dict `:` functional-type($inputs, results)
    $body
  }];
  let hasRegionVerifier = 1;
}

def Triax_YieldOp : Triax_Op<"yield", [
    Pure, Terminator, ReturnLike, HasParent<"BlockOp">]> {
  let summary = "Returns the results of a triax.block";
  let arguments = (ins Variadic<AnyType>:$values);
  let assemblyFormat = "attr-dict ($values^ `:` type($values))?";
  let builders = [OpBuilder<(ins), [{ /* nothing to yield */ }]>];
}

//===----------------------------------------------------------------------===//
// Layer ops
//===----------------------------------------------------------------------===//

def Triax_PositionIdsOp : Triax_Op<"position_ids", [Pure, DeclareOpInterfaceMethods<CostOpInterface, ["describeModel"]>]> {
  let summary = "Position of each token in its sequence";
  let description = [{
    `%p = triax.position_ids : tensor<BxSxi32>` has `%p[b, s] = s`; it feeds
    the learned position embedding.

    Sequence-parallel (`sequence_parallel over @mesh [axes]`, built by
    `dist-tensor-parallel{sequence-parallel=true}`): the result is this
    rank's slice of the sequence, split over the group of those mesh axes;
    member `c` holds the `S/n` positions starting at `c*S/n` (`S/n` is the
    result's second dimension), so `%p[b, s] = c*S/n + s`.
    ```mlir
    %p = triax.position_ids sequence_parallel over @mesh ["tp"] : tensor<8x32xi32>
    ```
  }];
  let arguments = (ins OptionalAttr<FlatSymbolRefAttr>:$mesh,
                       OptionalAttr<StrArrayAttr>:$axes);
  let results = (outs Triax_IndexTensor:$result);
  let assemblyFormat = [{
    (`sequence_parallel` `over` $mesh^ $axes)? attr-dict `:` type($result)
  }];
  let builders = [
    OpBuilder<(ins "::mlir::Type":$result), [{
      build($_builder, $_state, result, nullptr, nullptr);
    }]>
  ];
  let hasVerifier = 1;
}

def Triax_EmbeddingOp : Triax_Op<"embedding", [Pure, DeclareOpInterfaceMethods<DifferentiableOpInterface>, DeclareOpInterfaceMethods<CostOpInterface, ["describeModel"]>, DeclareOpInterfaceMethods<ShardingRuleOpInterface, ["getSplitRule"]>]> {
  let summary = "Table lookup: one row of the table per index";
  let description = [{
    `result[i..., :] = table[indices[i...], :]`; for indices of shape
    `[B, S]` and a table `[V, H]` the result is `[B, S, H]`.

    ```mlir
    %x = triax.embedding %tokens, %wte : (tensor<4x8xi32>, tensor<256x64xf32>) -> tensor<4x8x64xf32>
    ```

    Vocab-parallel (`vocab_parallel over @mesh [axes]`, built by
    `dist-tensor-parallel`): the table is this rank's block of rows of a
    table split along the vocabulary over the group of those mesh axes;
    member `c` of a group of `n` holds the `V/n` rows starting at `c*V/n`
    (`V/n` is the local table's first dimension). Indices stay global: a
    row the rank holds is looked up, any other index gives a row of zeros,
    so the sum over the group (a `dist.all_reduce sum` after the op) is the
    full lookup.
    ```mlir
    %x = triax.embedding %tokens, %wte vocab_parallel over @mesh ["tp"] : (tensor<4x8xi32>, tensor<128x64xf32>) -> tensor<4x8x64xf32>
    %y = dist.all_reduce sum %x over @mesh ["tp"] : tensor<4x8x64xf32>
    ```
  }];
  let arguments = (ins Triax_IndexTensor:$indices, Triax_FloatTensor:$table,
                       OptionalAttr<FlatSymbolRefAttr>:$mesh,
                       OptionalAttr<StrArrayAttr>:$axes);
  let results = (outs Triax_FloatTensor:$result);
  let assemblyFormat = [{
    $indices `,` $table (`vocab_parallel` `over` $mesh^ $axes)? attr-dict `:`
    functional-type(operands, results)
  }];
  let builders = [
    OpBuilder<(ins "::mlir::Type":$result, "::mlir::Value":$indices,
                   "::mlir::Value":$table), [{
      build($_builder, $_state, result, indices, table, nullptr, nullptr);
    }]>
  ];
  let hasVerifier = 1;
}

def Triax_LinearOp : Triax_Op<"linear", [Pure, DeclareOpInterfaceMethods<DifferentiableOpInterface>, DeclareOpInterfaceMethods<CostOpInterface, ["getForwardFlops", "describeModel"]>, DeclareOpInterfaceMethods<ShardingRuleOpInterface, ["getSplitRule"]>]> {
  let summary = "Affine map over the last dimension: x W + b";
  let description = [{
    `result = input @ weight (+ bias)` over the last dimension of `input`.
    The weight is `[in, out]`; with `transpose_weight` it is `[out, in]`,
    which is how a head tied to an embedding table `[V, H]` reads it.

    ```mlir
    %y = triax.linear %x, %w, %b : (tensor<4x8x64xf32>, tensor<64x256xf32>, tensor<256xf32>) -> tensor<4x8x256xf32>
    %logits = triax.linear %h, %wte {transpose_weight} : (tensor<4x8x64xf32>, tensor<256x64xf32>) -> tensor<4x8x256xf32>
    ```
  }];
  let arguments = (ins Triax_FloatTensor:$input, Triax_FloatTensor:$weight,
                       Optional<Triax_FloatTensor>:$bias,
                       UnitAttr:$transpose_weight);
  let results = (outs Triax_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight (`,` $bias^)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Triax_LayerNormOp : Triax_Op<"layer_norm", [Pure, DeclareOpInterfaceMethods<DifferentiableOpInterface, ["buildWithResiduals", "getNumResiduals"]>, DeclareOpInterfaceMethods<CostOpInterface, ["describeModel"]>, DeclareOpInterfaceMethods<ShardingRuleOpInterface, ["getSplitRule"]>]> {
  let summary = "Layer normalization over the last dimension";
  let description = [{
    `(x - mean) / sqrt(var + eps) * weight + bias`, statistics over the last
    dimension with the biased variance.

    `stats`, added by `triax-autodiff` where the op is differentiated: each
    row's `mean` and `rstd = 1 / sqrt(var + eps)` (the input's shape
    without its last dimension, f32), kept for `triax.layer_norm_grad`
    instead of recomputed from the input.
    ```mlir
    %y, %mean, %rstd = triax.layer_norm %x, %w, %b : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x4x8xf32>, tensor<2x4xf32>, tensor<2x4xf32>)
    ```
  }];
  let arguments = (ins Triax_FloatTensor:$input, Triax_FloatTensor:$weight,
                       Triax_FloatTensor:$bias,
                       DefaultValuedAttr<F64Attr, "1e-5">:$eps);
  let results = (outs Triax_FloatTensor:$result,
                      Variadic<RankedTensorOf<[F32]>>:$stats);
  let assemblyFormat = [{
    $input `,` $weight `,` $bias attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Triax_RMSNormOp : Triax_Op<"rms_norm", [Pure, DeclareOpInterfaceMethods<DifferentiableOpInterface, ["buildWithResiduals", "getNumResiduals"]>, DeclareOpInterfaceMethods<CostOpInterface, ["describeModel"]>, DeclareOpInterfaceMethods<ShardingRuleOpInterface, ["getSplitRule"]>]> {
  let summary = "Root-mean-square normalization over the last dimension";
  let description = [{
    `x / sqrt(mean(x^2) + eps) * weight`, as in LLaMA. `stats`, added by
    `triax-autodiff` where the op is differentiated: each row's
    `rstd = 1 / sqrt(mean(x^2) + eps)` (f32), kept for
    `triax.rms_norm_grad`.
  }];
  let arguments = (ins Triax_FloatTensor:$input, Triax_FloatTensor:$weight,
                       DefaultValuedAttr<F64Attr, "1e-5">:$eps);
  let results = (outs Triax_FloatTensor:$result,
                      Variadic<RankedTensorOf<[F32]>>:$stats);
  let assemblyFormat = [{
    $input `,` $weight attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Triax_RopeOp : Triax_Op<"rope", [Triax_ReadsRowViews, Pure, DeclareOpInterfaceMethods<DifferentiableOpInterface>, DeclareOpInterfaceMethods<ShardingRuleOpInterface, ["getSplitRule", "verifySplit", "applySplit"]>]> {
  let summary = "Rotary position embedding of queries or keys (RoFormer, LLaMA)";
  let description = [{
    Rotates each head's features by its token's position (Su et al., 2021),
    in the rotate-half layout of LLaMA and Hugging Face transformers: for
    input `[B, S, heads*d]` (`d` even), positions `p = positions[b, s]` and
    frequencies `f_i = theta^(-2i/d)` (f32), the pair `(x_i, x_{i+d/2})` of
    each head, `i < d/2`, becomes
    `(x_i cos(p f_i) - x_{i+d/2} sin(p f_i), x_{i+d/2} cos(p f_i) + x_i sin(p f_i))`.
    `inverse` rotates by `-p f_i` instead: the gradient of the rotation
    (its transpose) is the inverse rotation of the result's gradient.

    ```mlir
    %p = triax.position_ids : tensor<4x8xi32>
    %qr = triax.rope %q, %p heads = 4 : (tensor<4x8x64xf32>, tensor<4x8xi32>) -> tensor<4x8x64xf32>
    ```

    The positions are an operand, so a slice of the sequence (context
    parallelism, whose chunks are not contiguous) rotates by its tokens'
    own positions; along the features a member rotates whole heads (tensor
    parallelism divides `heads`).
  }];
  let arguments = (ins Triax_FloatTensor:$input, Triax_IndexTensor:$positions,
                       I64Attr:$heads,
                       DefaultValuedAttr<F64Attr, "10000.0">:$theta,
                       UnitAttr:$inverse);
  let results = (outs Triax_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $positions `heads` `=` $heads attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Triax_AttentionOp : Triax_Op<"attention", [Pure, Triax_ReadsRowViews, DeclareOpInterfaceMethods<DifferentiableOpInterface, ["isRecomputedSelectively", "buildWithResiduals", "getNumResiduals"]>, DeclareOpInterfaceMethods<CostOpInterface, ["getForwardFlops", "describeModel", "getCollectives", "getScratchBytes"]>, DeclareOpInterfaceMethods<ShardingRuleOpInterface, ["getSplitRule", "verifySplit", "applySplit", "applyRingSplit"]>]> {
  let summary = "Causal multi-head (or grouped-query) self-attention core";
  let description = [{
    Takes the projected queries `[B, S, heads*d]` and keys and values
    `[B, S, kv_heads*d]` and returns `[B, S, heads*d]`: per head,
    `softmax(q k^T / sqrt(d) + causal mask) v`, heads concatenated. Head `j`
    is the column slice `[j*d, (j+1)*d)`; query head `j` reads key/value head
    `j / (heads / kv_heads)`. `kv_heads` defaults to `heads`. The input and
    output projections are separate `triax.linear` ops.

    ```mlir
    %a = triax.attention %q, %k, %v heads = 4 : (tensor<4x8x64xf32>, tensor<4x8x64xf32>, tensor<4x8x64xf32>) -> tensor<4x8x64xf32>
    ```

    Context-parallel (`context_parallel over @mesh [axes]`, built by
    `dist-context-parallel`): the sequence of `2n` equal chunks is split
    over the `n` members of the group of those mesh axes, member `c`
    holding chunks `c` and `2n-1-c` (every member then has the same causal
    work). The queries (and the result) are this member's `S/n` tokens in
    that order; the keys and values are the whole group's `S` tokens as
    `dist.all_gather` along the sequence concatenates them (member 0's two
    chunks, then member 1's, ...). The causal mask compares the tokens'
    positions in the full sequence.
    ```mlir
    %a = triax.attention %q, %k, %v heads = 4 context_parallel over @mesh ["cp"] : (tensor<4x8x64xf32>, tensor<4x16x64xf32>, tensor<4x16x64xf32>) -> tensor<4x8x64xf32>
    ```

    With `ring` (ring attention, `dist-context-parallel{comm=ring}`) the
    keys and values are this member's own tokens, laid out as the queries,
    and the op passes them around the group's ring itself: at step `s` of
    `n` it computes its queries against the block of member `c - s` while
    that block moves on to member `c + 1` (the online softmax carried from
    block to block), so no member ever holds more than two blocks.
    ```mlir
    %a = triax.attention %q, %k, %v heads = 4 context_parallel over @mesh ["cp"] ring : (tensor<4x8x64xf32>, tensor<4x8x64xf32>, tensor<4x8x64xf32>) -> tensor<4x8x64xf32>
    ```

    A second result `lse` (`[B, heads, S]`, f32), added by `triax-autodiff`
    where the op is differentiated, holds each query row's log-sum-exp of
    its scaled scores, `L = m + log(sum exp(s - m))`: the statistics the
    flash-attention backward needs (FlashAttention-2), kept with the output
    instead of recomputed by running the forward's loop again (for a ring
    attention, a trip of the blocks around the ring).
    ```mlir
    %a, %lse = triax.attention %q, %k, %v heads = 4 : (tensor<4x8x64xf32>, tensor<4x8x64xf32>, tensor<4x8x64xf32>) -> (tensor<4x8x64xf32>, tensor<4x4x8xf32>)
    ```
  }];
  let arguments = (ins Triax_FloatTensor:$query, Triax_FloatTensor:$key,
                       Triax_FloatTensor:$value,
                       I64Attr:$heads, OptionalAttr<I64Attr>:$kv_heads,
                       OptionalAttr<FlatSymbolRefAttr>:$mesh,
                       OptionalAttr<StrArrayAttr>:$axes, UnitAttr:$ring);
  let results = (outs Triax_FloatTensor:$result,
                      Optional<RankedTensorOf<[F32]>>:$lse);
  let assemblyFormat = [{
    $query `,` $key `,` $value `heads` `=` $heads
    (`kv_heads` `=` $kv_heads^)?
    (`context_parallel` `over` $mesh^ $axes)? (`ring` $ring^)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    int64_t getNumKVHeads() { return getKvHeads().value_or(getHeads()); }
    int64_t getHeadDim() {
      return getQuery().getType().getShape().back() / getHeads();
    }
  }];
}

class Triax_UnaryElementwiseOp<string mnemonic, string desc>
    : Triax_Op<mnemonic, [Pure, Elementwise, SameOperandsAndResultType,
                          DeclareOpInterfaceMethods<DifferentiableOpInterface>,
                          DeclareOpInterfaceMethods<ScalarElementwiseOpInterface>,
                          ShardingRuleOpInterface]> {
  let summary = desc;
  let arguments = (ins Triax_FloatTensor:$input);
  let results = (outs Triax_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
}

def Triax_GeluOp : Triax_UnaryElementwiseOp<"gelu",
    "GELU, tanh approximation (as GPT-2)"> {
  let description = [{
    `0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))`.
  }];
}

def Triax_SiluOp : Triax_UnaryElementwiseOp<"silu", "SiLU: x * sigmoid(x)">;

class Triax_BinaryElementwiseOp<string mnemonic, string desc>
    : Triax_Op<mnemonic, [Pure, Elementwise, Commutative,
                          SameOperandsAndResultType,
                          DeclareOpInterfaceMethods<DifferentiableOpInterface>,
                          DeclareOpInterfaceMethods<ScalarElementwiseOpInterface>,
                          ShardingRuleOpInterface,
                          DeclareOpInterfaceMethods<CostOpInterface, ["getResultStorage"]>]> {
  let summary = desc;
  let arguments = (ins Triax_FloatTensor:$lhs, Triax_FloatTensor:$rhs);
  let results = (outs Triax_FloatTensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($result)";
}

def Triax_AddOp : Triax_BinaryElementwiseOp<"add", "Elementwise sum">;
def Triax_MulOp : Triax_BinaryElementwiseOp<"mul", "Elementwise product">;

def Triax_BiasAddOp : Triax_Op<"bias_add", [
    Pure, AllTypesMatch<["input", "result"]>,
    DeclareOpInterfaceMethods<DifferentiableOpInterface>,
    DeclareOpInterfaceMethods<ShardingRuleOpInterface, ["getSplitRule"]>]> {
  let summary = "Adds a vector along the last dimension: x + b";
  let description = [{
    `result[..., n] = input[..., n] + bias[n]`. `dist-tensor-parallel`
    builds it for the bias of a row-split linear, which must be added once
    after the partial products are summed over the group, not on every
    member:
    ```mlir
    %p = triax.linear %a, %w : (tensor<4x8x32xf32>, tensor<32x64xf32>) -> tensor<4x8x64xf32>
    %s = dist.all_reduce sum %p over @mesh ["tp"] : tensor<4x8x64xf32>
    %y = triax.bias_add %s, %b : tensor<4x8x64xf32>, tensor<64xf32>
    ```
  }];
  let arguments = (ins Triax_FloatTensor:$input, Triax_FloatTensor:$bias);
  let results = (outs Triax_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $bias attr-dict `:` type($input) `,` type($bias)
  }];
  let hasVerifier = 1;
}

def Triax_CrossEntropyOp : Triax_Op<"cross_entropy", [Pure, DeclareOpInterfaceMethods<DifferentiableOpInterface>, DeclareOpInterfaceMethods<CostOpInterface, ["getCollectives"]>, DeclareOpInterfaceMethods<ShardingRuleOpInterface, ["getSplitRule"]>]> {
  let summary = "Mean cross-entropy loss over tokens";
  let description = [{
    `mean over positions of (logsumexp(logits[p, :]) - logits[p, target[p]])`;
    always returns an f32 scalar, whatever the logits' dtype.

    ```mlir
    %loss = triax.cross_entropy %logits, %targets : (tensor<4x8x256xf32>, tensor<4x8xi32>) -> tensor<f32>
    ```

    Vocab-parallel (`vocab_parallel over @mesh [axes]`, built by
    `dist-tensor-parallel`): the logits are this rank's block of the
    vocabulary (member `c` of a group of `n` holds the `V/n` columns
    starting at `c*V/n`); targets stay global. The row maximum, the sum of
    exponentials and the target's logit are each reduced over the group
    (the logits are never gathered), and every member gets the loss of the
    whole vocabulary.
    ```mlir
    %loss = triax.cross_entropy %logits, %targets vocab_parallel over @mesh ["tp"] : (tensor<4x8x128xf32>, tensor<4x8xi32>) -> tensor<f32>
    ```

    A padded vocabulary (`classes`, set by `triax-pad-vocab`): only the
    first `classes` columns of the whole vocabulary are classes; the
    columns after them pad the GEMMs, are left out of the softmax and get a
    zero gradient, so the loss is the one of the unpadded logits.
    ```mlir
    %loss = triax.cross_entropy %logits, %targets {classes = 250 : i64} : (tensor<4x8x256xf32>, tensor<4x8xi32>) -> tensor<f32>
    ```
  }];
  let arguments = (ins Triax_FloatTensor:$logits, Triax_IndexTensor:$targets,
                       OptionalAttr<FlatSymbolRefAttr>:$mesh,
                       OptionalAttr<StrArrayAttr>:$axes,
                       OptionalAttr<ConfinedAttr<I64Attr, [IntPositive]>>:$classes);
  let results = (outs 0DTensorOf<[F32]>:$loss);
  let assemblyFormat = [{
    $logits `,` $targets (`vocab_parallel` `over` $mesh^ $axes)? attr-dict `:`
    functional-type(operands, results)
  }];
  let builders = [
    OpBuilder<(ins "::mlir::Type":$loss, "::mlir::Value":$logits,
                   "::mlir::Value":$targets), [{
      build($_builder, $_state, loss, logits, targets, nullptr, nullptr,
            nullptr);
    }]>
  ];
  let hasVerifier = 1;
}


//===----------------------------------------------------------------------===//
// Backward ops (built by triax-autodiff through DifferentiableOpInterface)
//===----------------------------------------------------------------------===//

def Triax_LinearWeightGradOp : Triax_Op<"linear_weight_grad", [Pure, Triax_ReadsRowViews, DeclareOpInterfaceMethods<CostOpInterface, ["getResultStorage"]>]> {
  let summary = "Gradient of a linear op's weight: x^T dy over all tokens";
  let description = [{
    `dW[k, n] = sum over leading positions of x[..., k] * dy[..., n]`; with
    `transpose_weight` the result is `[n, k]`, the layout of the weight.

    ```mlir
    %dw = triax.linear_weight_grad %x, %dy : (tensor<4x8x64xf32>, tensor<4x8x256xf32>) -> tensor<64x256xf32>
    ```
  }];
  let arguments = (ins Triax_FloatTensor:$input, Triax_FloatTensor:$result_grad,
                       UnitAttr:$transpose_weight);
  let results = (outs Triax_FloatTensor:$weight_grad);
  let assemblyFormat = [{
    $input `,` $result_grad attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Triax_BiasGradOp : Triax_Op<"bias_grad", [Pure, Triax_ReadsRowViews]> {
  let summary = "Sum over all leading dimensions: the gradient of a bias";
  let description = [{
    ```mlir
    %db = triax.bias_grad %dy : tensor<4x8x256xf32> -> tensor<256xf32>
    ```
  }];
  let arguments = (ins Triax_FloatTensor:$result_grad);
  let results = (outs Triax_FloatTensor:$bias_grad);
  let assemblyFormat = [{
    $result_grad attr-dict `:` type($result_grad) `->` type($bias_grad)
  }];
  let hasVerifier = 1;
}

def Triax_EmbeddingGradOp : Triax_Op<"embedding_grad", [Pure, DeclareOpInterfaceMethods<CostOpInterface, ["getResultStorage", "getScratchBytes"]>]> {
  let summary = "Gradient of an embedding table: scatter-add of rows";
  let description = [{
    `dtable[v, :] = sum over positions p with indices[p] = v of dy[p, :]`.
    With `vocab_parallel over @mesh [axes]` (the gradient of a
    vocab-parallel `triax.embedding`) the result is this rank's block of
    rows, and only the indices that fall in it contribute.
  }];
  let arguments = (ins Triax_IndexTensor:$indices, Triax_FloatTensor:$result_grad,
                       OptionalAttr<FlatSymbolRefAttr>:$mesh,
                       OptionalAttr<StrArrayAttr>:$axes);
  let results = (outs Triax_FloatTensor:$table_grad);
  let assemblyFormat = [{
    $indices `,` $result_grad (`vocab_parallel` `over` $mesh^ $axes)?
    attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Triax_LayerNormGradOp : Triax_Op<"layer_norm_grad", [Pure]> {
  let summary = "Gradients of layer_norm: input, weight and bias";
  let description = [{
    Returns `(dx, dweight, dbias)` from the input (cheaper to keep than the
    normalized activations) and the row statistics: `saved(%mean, %rstd)`,
    the forward's `stats`, or else recomputed from `input`.
  }];
  let arguments = (ins Triax_FloatTensor:$input, Triax_FloatTensor:$weight,
                       Triax_FloatTensor:$result_grad,
                       Variadic<RankedTensorOf<[F32]>>:$saved,
                       DefaultValuedAttr<F64Attr, "1e-5">:$eps);
  let results = (outs Triax_FloatTensor:$input_grad,
                      Triax_FloatTensor:$weight_grad,
                      Triax_FloatTensor:$bias_grad);
  let assemblyFormat = [{
    $input `,` $weight `,` $result_grad (`saved` `(` $saved^ `)`)? attr-dict
    `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Triax_RMSNormGradOp : Triax_Op<"rms_norm_grad", [Pure]> {
  let summary = "Gradients of rms_norm: input and weight";
  let description = [{
    With `saved(%rstd)` (the forward's `stats`) the rows' rstd is read, not
    recomputed from `input`.
  }];
  let arguments = (ins Triax_FloatTensor:$input, Triax_FloatTensor:$weight,
                       Triax_FloatTensor:$result_grad,
                       Variadic<RankedTensorOf<[F32]>>:$saved,
                       DefaultValuedAttr<F64Attr, "1e-5">:$eps);
  let results = (outs Triax_FloatTensor:$input_grad,
                      Triax_FloatTensor:$weight_grad);
  let assemblyFormat = [{
    $input `,` $weight `,` $result_grad (`saved` `(` $saved^ `)`)? attr-dict
    `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Triax_AttentionGradOp : Triax_Op<"attention_grad", [Pure, Triax_ReadsRowViews, DeclareOpInterfaceMethods<CostOpInterface, ["getScratchBytes", "getCollectives"]>]> {
  let summary = "Gradients of causal attention: query, key and value";
  let description = [{
    Recomputes the attention probabilities from `query` and `key` (as a
    flash-attention backward does) and returns `(dq, dk, dv)`; with grouped
    query attention the key/value gradients sum over the query heads that
    share them. With `context_parallel over @mesh [axes]` (the gradient of
    a context-parallel `triax.attention`) the operands are laid out as
    there, and `dk` and `dv` are this member's part of the gradients of
    the whole group's keys and values (summed over the group by the
    `dist.reduce_scatter` that differentiates their `dist.all_gather`).
    With `ring` as well (the gradient of a ring attention) the keys and
    values are the member's own, and so are `dk` and `dv`: the op passes
    the key and value blocks around the ring (twice without `saved`: once
    to recompute each query's softmax statistics, once for the gradients)
    and each block's dK and dV accumulators travel with it, back to their
    owner after `n` steps.

    With `saved(%out, %lse)` (the forward's result and its rows'
    log-sum-exp, the two results of the `triax.attention` it
    differentiates) the probabilities are `exp(s - L)` from the saved `L`
    and the softmax backward's `D = rowsum(dO * out)` reads the saved
    output: the forward's loop is not run again.
    ```mlir
    %dq, %dk, %dv = triax.attention_grad %q, %k, %v, %dout saved(%a, %lse) heads = 4 : (tensor<4x8x64xf32>, tensor<4x8x64xf32>, tensor<4x8x64xf32>, tensor<4x8x64xf32>, tensor<4x8x64xf32>, tensor<4x4x8xf32>) -> (tensor<4x8x64xf32>, tensor<4x8x64xf32>, tensor<4x8x64xf32>)
    ```
  }];
  let arguments = (ins Triax_FloatTensor:$query, Triax_FloatTensor:$key,
                       Triax_FloatTensor:$value, Triax_FloatTensor:$result_grad,
                       Variadic<Triax_FloatTensor>:$saved,
                       I64Attr:$heads, OptionalAttr<I64Attr>:$kv_heads,
                       OptionalAttr<FlatSymbolRefAttr>:$mesh,
                       OptionalAttr<StrArrayAttr>:$axes, UnitAttr:$ring);
  let results = (outs Triax_FloatTensor:$query_grad,
                      Triax_FloatTensor:$key_grad,
                      Triax_FloatTensor:$value_grad);
  let assemblyFormat = [{
    $query `,` $key `,` $value `,` $result_grad
    (`saved` `(` $saved^ `)`)? `heads` `=` $heads
    (`kv_heads` `=` $kv_heads^)?
    (`context_parallel` `over` $mesh^ $axes)? (`ring` $ring^)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The forward's result and its rows' log-sum-exp (`saved`), or null.
    Value getSavedResult() {
      return getSaved().empty() ? Value() : getSaved()[0];
    }
    Value getSavedLse() {
      return getSaved().size() < 2 ? Value() : getSaved()[1];
    }
  }];
}

class Triax_ActivationGradOp<string mnemonic, string desc,
                             list<Trait> traits = []>
    : Triax_Op<mnemonic, !listconcat([Pure, Elementwise, SameOperandsAndResultType,
                          DeclareOpInterfaceMethods<ScalarElementwiseOpInterface>,
                          ShardingRuleOpInterface], traits)> {
  let summary = desc;
  let arguments = (ins Triax_FloatTensor:$input, Triax_FloatTensor:$result_grad);
  let results = (outs Triax_FloatTensor:$input_grad);
  let assemblyFormat = "$input `,` $result_grad attr-dict `:` type($input_grad)";
}

def Triax_GeluGradOp : Triax_ActivationGradOp<"gelu_grad",
    "dy * gelu'(x), tanh approximation",
    [DeclareOpInterfaceMethods<CostOpInterface, ["getResultStorage"]>]>;
def Triax_SiluGradOp : Triax_ActivationGradOp<"silu_grad", "dy * silu'(x)",
    [DeclareOpInterfaceMethods<CostOpInterface, ["getResultStorage"]>]>;

def Triax_CrossEntropyGradOp : Triax_Op<"cross_entropy_grad", [Pure, DeclareOpInterfaceMethods<CostOpInterface, ["getCollectives", "getResultStorage"]>]> {
  let summary = "Gradient of the mean cross-entropy with respect to logits";
  let description = [{
    `dlogits = (softmax(logits) - onehot(targets)) * dloss / tokens`.
    With `vocab_parallel over @mesh [axes]` (the gradient of a
    vocab-parallel `triax.cross_entropy`) the logits and the result are
    this rank's block of the vocabulary; the softmax uses the maximum and
    the sum of exponentials reduced over the group. With `classes` (a
    padded vocabulary, as on `triax.cross_entropy`) the columns from
    `classes` on are 0.
  }];
  let arguments = (ins Triax_FloatTensor:$logits, Triax_IndexTensor:$targets,
                       0DTensorOf<[F32]>:$loss_grad,
                       OptionalAttr<FlatSymbolRefAttr>:$mesh,
                       OptionalAttr<StrArrayAttr>:$axes,
                       OptionalAttr<ConfinedAttr<I64Attr, [IntPositive]>>:$classes);
  let results = (outs Triax_FloatTensor:$logits_grad);
  let assemblyFormat = [{
    $logits `,` $targets `,` $loss_grad (`vocab_parallel` `over` $mesh^ $axes)?
    attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Optimizer ops
//===----------------------------------------------------------------------===//

def Triax_AccumulateGradOp : Triax_Op<"accumulate_grad", [
    Triax_MasterPrecision,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "Adds a gradient to the gradient buffer of a parameter";
  let description = [{
    Every parameter has a gradient buffer next to it (zeroed by the runtime
    before the first micro-batch of a step). The backward pass adds each
    parameter's gradient to it, so micro-batches accumulate; data-parallel
    passes reduce these buffers across ranks.

    ```mlir
    triax.accumulate_grad @wte.weight, %g : tensor<256x64xf32>
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$param, Triax_FloatTensor:$grad);
  let assemblyFormat = "$param `,` $grad attr-dict `:` type($grad)";
}

def Triax_GetGradOp : Triax_Op<"get_grad", [
    Triax_MasterPrecision,
    MemoryEffects<[MemRead]>,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>,
    DeclareOpInterfaceMethods<CostOpInterface, ["getResultStorage"]>]> {
  let summary = "Reads the gradient buffer of a parameter";
  let description = [{
    ```mlir
    %g = triax.get_grad @wte.weight : tensor<256x64xf32>
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$param);
  let results = (outs Triax_FloatTensor:$grad);
  let assemblyFormat = "$param attr-dict `:` type($grad)";
}

def Triax_GlobalNormOp : Triax_Op<"global_norm", [Pure, Triax_MasterPrecision, DeclareOpInterfaceMethods<CostOpInterface, ["getCollectives"]>]> {
  let summary = "L2 norm of all gradients taken together";
  let description = [{
    `sqrt(sum over every tensor and element of g^2)`, in f32.
    ```mlir
    %n = triax.global_norm %g0, %g1 : tensor<256x64xf32>, tensor<64xf32> -> tensor<f32>
    ```
    With `partial over @mesh [axes]` each rank holds only pieces of the
    gradients (ZeRO chunks, tensor-parallel blocks): the sum of squares of
    the local pieces is summed over the group of those mesh axes before the
    square root. `replicas`, one per operand (default 1), says on how many
    members of that group the same piece lives (a norm weight replicated
    over "tp" has `tp` copies); its square sum is divided by that count so
    every element is counted once.
    ```mlir
    %n = triax.global_norm %g0, %g1 partial over @mesh ["dp", "tp"] replicas [1, 2] : tensor<4096xf32>, tensor<32xf32> -> tensor<f32>
    ```
  }];
  let arguments = (ins Variadic<Triax_FloatTensor>:$grads,
                       OptionalAttr<FlatSymbolRefAttr>:$mesh,
                       OptionalAttr<StrArrayAttr>:$axes,
                       OptionalAttr<DenseI64ArrayAttr>:$replicas);
  let results = (outs 0DTensorOf<[F32]>:$norm);
  let assemblyFormat = [{
    $grads (`partial` `over` $mesh^ $axes)? (`replicas` $replicas^)?
    attr-dict `:` type($grads) `->` type($norm)
  }];
  let hasVerifier = 1;
}

def Triax_AdamWOp : Triax_Op<"adamw", [
    Triax_MasterPrecision,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "One AdamW step on a parameter and its optimizer state";
  let description = [{
    Updates parameter `@name` in place, with its first and second moments
    (which live with the parameter), from gradient `grad` scaled by
    `grad_scale` (the clipping factor):
    ```
    g = grad * grad_scale
    m = beta1 m + (1 - beta1) g;    v = beta2 v + (1 - beta2) g^2
    p = p - lr (m / (1 - beta1^step) / (sqrt(v / (1 - beta2^step)) + eps) + weight_decay p)
    ```
    `step` counts from 1. `weight_decay` is 0 for parameters without `decay`.
    The moments are f32. A bf16 parameter (`triax-model --dtype bf16`: the
    ZeRO paper's mixed-precision Adam, 2 + 2 + 12 bytes per parameter) has a
    bf16 gradient and an f32 master copy next to its moments: `p` above is
    the master copy, and the parameter becomes its rounding to nearest even.
    A `grad_scale` that is not finite (NaN or an infinity) updates nothing:
    `p`, `m` and `v` keep their values. `triax-autodiff`'s optimizer step
    passes a NaN scale when the global gradient norm is not finite, so a
    step whose gradients overflowed or are NaN leaves the model as it was.

    ```mlir
    triax.adamw @wte.weight, %g, lr %lr, step %t, scale %s {beta1 = 0.9, beta2 = 0.95, eps = 1.0e-8, weight_decay = 0.1} : tensor<256x64xf32>
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$param, Triax_FloatTensor:$grad,
                       F32:$lr, I64:$step, F32:$grad_scale,
                       F64Attr:$beta1, F64Attr:$beta2, F64Attr:$eps,
                       F64Attr:$weight_decay);
  let assemblyFormat = [{
    $param `,` $grad `,` `lr` $lr `,` `step` $step `,` `scale` $grad_scale
    attr-dict `:` type($grad)
  }];
}

//===----------------------------------------------------------------------===//
// Precision
//===----------------------------------------------------------------------===//

def Triax_ConvertOp : Triax_Op<"convert", [
    Pure, Elementwise,
    DeclareOpInterfaceMethods<ScalarElementwiseOpInterface>,
    ShardingRuleOpInterface]> {
  let summary = "Converts a tensor to another float element type";
  let description = [{
    `result[i] = input[i]` in the result's element type: f32 to bf16 rounds
    to nearest even, bf16 to f32 is exact. `triax-mixed-precision` puts it
    where the fp32 master state (parameters, gradient buffers) and the
    collectives meet the bf16 activations. It is an elementwise op like the
    others: one loop, or part of a `triax.fused_elementwise` (where the
    values stay f32 and are rounded when stored).

    ```mlir
    %w = triax.get_param @h.0.mlp.c_fc.weight : tensor<64x256xf32>
    %wb = triax.convert %w : tensor<64x256xf32> to tensor<64x256xbf16>
    ```
    A conversion to the same type folds away, and so does a round trip
    through a wider type (bf16 to f32 and back).
  }];
  let arguments = (ins Triax_FloatTensor:$input);
  let results = (outs Triax_FloatTensor:$result);
  let assemblyFormat = [{
    $input attr-dict `:` type($input) `to` type($result)
  }];
  // Elementwise verifies that input and result have one shape.
  let hasFolder = 1;
}

include "triax/Dialect/Triax/IR/TriaxFusedOps.td"
include "triax/Dialect/Triax/IR/TriaxMoEOps.td"

#endif // TRIAX_DIALECT_TRIAX_IR_TRIAXOPS_TD
