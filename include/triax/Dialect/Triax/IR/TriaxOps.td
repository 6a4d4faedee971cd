//===- TriaxOps.td - Triax operations ----------------------*- tablegen -*-===//

#ifndef TRIAX_DIALECT_TRIAX_IR_TRIAXOPS_TD
#define TRIAX_DIALECT_TRIAX_IR_TRIAXOPS_TD

include "triax/Dialect/Triax/IR/TriaxBase.td"
include "triax/Dialect/Triax/IR/TriaxAttrs.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"

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
    /// The forward function, or null.
    ::mlir::func::FuncOp getForward();
    /// The parameters in declaration order.
    auto getParams() { return getBody().front().getOps<ParamOp>(); }
    /// The number of trainable scalars (the sum over all parameters).
    int64_t getNumParameters();
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
    Pure, DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
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

def Triax_BlockOp : Triax_Op<"block", [IsolatedFromAbove]> {
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

def Triax_PositionIdsOp : Triax_Op<"position_ids", [Pure]> {
  let summary = "Position of each token in its sequence";
  let description = [{
    `%p = triax.position_ids : tensor<BxSxi32>` has `%p[b, s] = s`; it feeds
    the learned position embedding.
  }];
  let results = (outs Triax_IndexTensor:$result);
  let assemblyFormat = "attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Triax_EmbeddingOp : Triax_Op<"embedding", [Pure]> {
  let summary = "Table lookup: one row of the table per index";
  let description = [{
    `result[i..., :] = table[indices[i...], :]`; for indices of shape
    `[B, S]` and a table `[V, H]` the result is `[B, S, H]`.

    ```mlir
    %x = triax.embedding %tokens, %wte : (tensor<4x8xi32>, tensor<256x64xf32>) -> tensor<4x8x64xf32>
    ```
  }];
  let arguments = (ins Triax_IndexTensor:$indices, Triax_FloatTensor:$table);
  let results = (outs Triax_FloatTensor:$result);
  let assemblyFormat = [{
    $indices `,` $table attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Triax_LinearOp : Triax_Op<"linear", [Pure]> {
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

def Triax_LayerNormOp : Triax_Op<"layer_norm", [Pure]> {
  let summary = "Layer normalization over the last dimension";
  let description = [{
    `(x - mean) / sqrt(var + eps) * weight + bias`, statistics over the last
    dimension with the biased variance.
  }];
  let arguments = (ins Triax_FloatTensor:$input, Triax_FloatTensor:$weight,
                       Triax_FloatTensor:$bias,
                       DefaultValuedAttr<F64Attr, "1e-5">:$eps);
  let results = (outs Triax_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight `,` $bias attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Triax_RMSNormOp : Triax_Op<"rms_norm", [Pure]> {
  let summary = "Root-mean-square normalization over the last dimension";
  let description = [{
    `x / sqrt(mean(x^2) + eps) * weight`, as in LLaMA.
  }];
  let arguments = (ins Triax_FloatTensor:$input, Triax_FloatTensor:$weight,
                       DefaultValuedAttr<F64Attr, "1e-5">:$eps);
  let results = (outs Triax_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Triax_AttentionOp : Triax_Op<"attention", [Pure]> {
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
  }];
  let arguments = (ins Triax_FloatTensor:$query, Triax_FloatTensor:$key,
                       Triax_FloatTensor:$value,
                       I64Attr:$heads, OptionalAttr<I64Attr>:$kv_heads);
  let results = (outs Triax_FloatTensor:$result);
  let assemblyFormat = [{
    $query `,` $key `,` $value `heads` `=` $heads
    (`kv_heads` `=` $kv_heads^)? attr-dict `:`
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
    : Triax_Op<mnemonic, [Pure, Elementwise, SameOperandsAndResultType]> {
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
                          SameOperandsAndResultType]> {
  let summary = desc;
  let arguments = (ins Triax_FloatTensor:$lhs, Triax_FloatTensor:$rhs);
  let results = (outs Triax_FloatTensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($result)";
}

def Triax_AddOp : Triax_BinaryElementwiseOp<"add", "Elementwise sum">;
def Triax_MulOp : Triax_BinaryElementwiseOp<"mul", "Elementwise product">;

def Triax_CrossEntropyOp : Triax_Op<"cross_entropy", [Pure]> {
  let summary = "Mean cross-entropy loss over tokens";
  let description = [{
    `mean over positions of (logsumexp(logits[p, :]) - logits[p, target[p]])`;
    always returns an f32 scalar, whatever the logits' dtype.

    ```mlir
    %loss = triax.cross_entropy %logits, %targets : (tensor<4x8x256xf32>, tensor<4x8xi32>) -> tensor<f32>
    ```
  }];
  let arguments = (ins Triax_FloatTensor:$logits, Triax_IndexTensor:$targets);
  let results = (outs 0DTensorOf<[F32]>:$loss);
  let assemblyFormat = [{
    $logits `,` $targets attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

#endif // TRIAX_DIALECT_TRIAX_IR_TRIAXOPS_TD
