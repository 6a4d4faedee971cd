//===- Passes.td - Triax dialect passes --------------------*- tablegen -*-===//

#ifndef TRIAX_DIALECT_TRIAX_TRANSFORMS_PASSES_TD
#define TRIAX_DIALECT_TRIAX_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def TriaxAutodiff : Pass<"triax-autodiff", "::mlir::ModuleOp"> {
  let summary = "Build the backward graph and the AdamW update of each model";
  let description = [{
    For every `triax.model`, adds

    - `func.func @forward_backward(%tokens, %targets) -> loss`: the forward
      graph of `@forward`, then its backward graph, with one
      `triax.accumulate_grad` per parameter (gradient buffers sum over the
      micro-batches of a step) right after the op that makes its gradient
      (a backward block: its parameters' in declaration order), so that
      each gradient lives for a moment, not until the end of the backward;
    - `func.func @optimizer_step(%lr: f32, %step: i64, %grad_scale: f32) ->
      f32`: reads the gradient buffers, scales them by `%grad_scale`
      (1 / micro-batches), computes the global norm (returned), the
      clipping factor, and applies one `triax.adamw` per parameter.

    `@forward` stays as it is (evaluation). The split is where the parallel
    passes act: data parallelism reduces the gradient buffers between the
    two functions, ZeRO shards what `@optimizer_step` touches.

    The backward graph is built by walking the forward ops in reverse and
    asking each for its vector-Jacobian product through
    `DifferentiableOpInterface`; the pass never switches on op kind. Values
    reaching an op more than once have their gradients summed (the tied
    embedding of GPT-2 gets the lookup's and the LM head's). A
    `triax.block "h.0"` gets a backward block `triax.block "h.0.grad"`; the
    activations the backward block needs become extra results of the
    forward block, so they are explicit values that later passes count,
    shard or recompute. Parameter reads and position ids are re-read in the
    backward block, not kept.

    Weight decay applies to parameters marked `decay`; `grad_clip = 0`
    turns clipping off.

    Before:
    ```mlir
    func.func @forward(%tokens: tensor<2x4xi32>, %targets: tensor<2x4xi32>) -> tensor<f32> {
      %w = triax.get_param @w : tensor<16x8xf32>
      %x = triax.embedding %tokens, %w : ...
      %logits = triax.linear %x, %w {transpose_weight} : ...
      %loss = triax.cross_entropy %logits, %targets : ...
      return %loss : tensor<f32>
    }
    ```
    After (added):
    ```mlir
    func.func @forward_backward(%tokens: tensor<2x4xi32>, %targets: tensor<2x4xi32>) -> tensor<f32> {
      ... forward ...
      %one = arith.constant dense<1.0> : tensor<f32>
      %dlogits = triax.cross_entropy_grad %logits, %targets, %one : ...
      %dx = triax.linear %dlogits, %w : ...
      %dw1 = triax.linear_weight_grad %x, %dlogits {transpose_weight} : ...
      %dw2 = triax.embedding_grad %tokens, %dx : ...
      %dw = triax.add %dw1, %dw2 : tensor<16x8xf32>
      triax.accumulate_grad @w, %dw : tensor<16x8xf32>
      return %loss : tensor<f32>
    }
    func.func @optimizer_step(%lr: f32, %step: i64, %grad_scale: f32) -> f32 {
      %g = triax.get_grad @w : tensor<16x8xf32>
      %n = triax.global_norm %g : tensor<16x8xf32> -> tensor<f32>
      ... clipping factor %s ...
      triax.adamw @w, %g, lr %lr, step %step, scale %s {...} : tensor<16x8xf32>
      return %norm : f32
    }
    ```
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::tensor::TensorDialect"];
}

def TriaxPadVocab : Pass<"triax-pad-vocab", "::mlir::ModuleOp"> {
  let summary = "Pad the vocabulary to a multiple of N for the GEMMs and "
                "tensor parallelism";
  let description = [{
    GPT-2's vocabulary of 50,257 makes the LM head's GEMMs odd-sized (no
    aligned tensor-core kernels) and does not split over tp ranks. This
    pass computes the model with the vocabulary rounded up to a multiple of
    `multiple` (50,304 for 64) and keeps the padding invisible:

    - the LM head's weight (the tied embedding table `[V, d]` or an untied
      head `[d, V]`), its bias, and every table looked up by the token ids
      of the same vocabulary get the padded shape, with
      `triax.valid_shape` saying which leading block holds values: the
      padding starts at zero, checkpoints and initialization see only the
      block (the runtime's trx_param_desc::valid_shape);
    - the head's logits get the padded width and the `triax.cross_entropy`
      reading them `classes = V`: padded columns are left out of the
      softmax and get a zero gradient, so the padding's weights stay zero
      (AdamW on a zero gradient and a zero weight moves nothing) and the
      loss is the unpadded one.

    triax-parallelize runs it before tensor parallelism with multiple = N x
    tp (`--pad-vocab=N`), so that every tp rank holds a multiple of N
    columns. A vocabulary that is already a multiple is left as it is.

    Before (`multiple=64`, vocabulary 250):
    ```mlir
    triax.param @wte : tensor<250x16xf32> init <normal, std = 0.02>
    ...
    %w = triax.get_param @wte : tensor<250x16xf32>
    %logits = triax.linear %x, %w {transpose_weight} : (tensor<2x4x16xf32>, tensor<250x16xf32>) -> tensor<2x4x250xf32>
    %loss = triax.cross_entropy %logits, %targets : (tensor<2x4x250xf32>, tensor<2x4xi32>) -> tensor<f32>
    ```
    After:
    ```mlir
    triax.param @wte : tensor<256x16xf32> init <normal, std = 0.02> {triax.valid_shape = array<i64: 250, 16>}
    ...
    %w = triax.get_param @wte : tensor<256x16xf32>
    %logits = triax.linear %x, %w {transpose_weight} : (tensor<2x4x16xf32>, tensor<256x16xf32>) -> tensor<2x4x256xf32>
    %loss = triax.cross_entropy %logits, %targets {classes = 250 : i64} : (tensor<2x4x256xf32>, tensor<2x4xi32>) -> tensor<f32>
    ```

    It runs on a model before triax-autodiff and tensor parallelism, and
    refuses (with the reason, at the op) logits that are not a linear of a
    parameter, and a padded parameter read by anything but the head and
    embedding lookups.
  }];
  let options = [
    Option<"multiple", "multiple", "int64_t", /*default=*/"64",
           "Pad the vocabulary to a multiple of this (>= 1; 1: no padding)">
  ];
}

def TriaxRecompute : Pass<"triax-recompute", "::mlir::ModuleOp"> {
  let summary = "Recompute activations in the backward blocks instead of "
                "keeping them from the forward blocks";
  let description = [{
    Activation recomputation (Korthikanti et al. 2022) on the training
    step `triax-autodiff` built: each backward block `"h.i.grad"` rebuilds
    some of the values it reads from its forward block `"h.i"` from the
    forward block's inputs, and the forward block stops yielding them, so
    their buffers are freed right after their last forward use instead of
    living until the backward block.

    - `mode=full`: the backward block recomputes the whole forward body it
      needs from the block's inputs; the forward block yields only its
      outputs, and only the block inputs stay alive between the forward
      and the backward pass ([A5] in docs/cost-model.md).
    - `mode=selective`: only the results of ops that say so through
      `DifferentiableOpInterface::isRecomputedSelectively` (the attention
      core, `triax.attention`) are recomputed, from their operands, which
      stay saved (their own gradient needs them); everything else is kept
      as before ([A4]). Triax's attention never keeps its probabilities
      (`triax.attention_grad` recomputes them, as flash attention does), so
      what this drops is the attention output.
    - `mode=none`: only what every mode redoes: the results of ops that
      say `DifferentiableOpInterface::isRecomputedAlways` (`dist.all_gather`,
      sequence parallelism's gathered norm outputs: the backward gathers
      them again from the shard the forward keeps, as Megatron-LM does);
      nothing else changes, and the backward block gets no mark. In
      `selective` and `full` these are redone too.

    The recomputed ops are cloned into the backward block, each right
    before its first use there (so they are alive no longer than needed).
    The cloned ops carry no mark; the backward block gets
    `triax.recompute = "full"` or `"selective"`.

    Order: after `triax-autodiff` (and after `dist-tensor-parallel`, which
    runs before it: a recomputed row-split linear repeats its
    `dist.all_reduce` in the backward block), before `dist-pipeline`,
    `dist-zero` and `dist-data-parallel`, which then treat the recomputed
    parameter reads like any other backward read (ZeRO-3 gathers them
    again). It refuses a module without `@forward_backward` (before
    autodiff), a backward block whose forward block is not in the same
    function (after `dist-pipeline`), and a second run.

    Before (`mode=full`, abridged):
    ```mlir
    %h:3 = triax.block "h.0"(%x) : (tensor<4x8x64xf32>) -> (tensor<4x8x64xf32>, tensor<4x8x256xf32>, tensor<4x8x64xf32>) {
    ^bb0(%in: tensor<4x8x64xf32>):
      ... %a = triax.linear %in, ... ; %g = triax.gelu %a ...
      triax.yield %out, %a, %g : ...
    }
    ...
    %d:3 = triax.block "h.0.grad"(%dy, %h#1, %h#2, %x) : ... {
    ^bb0(%dout: ..., %a: ..., %g: ..., %in: ...):
      ... backward ops reading %a, %g, %in ...
    }
    ```
    After:
    ```mlir
    %h = triax.block "h.0"(%x) : (tensor<4x8x64xf32>) -> tensor<4x8x64xf32> {
      ...
      triax.yield %out : tensor<4x8x64xf32>
    }
    ...
    %d:3 = triax.block "h.0.grad"(%dy, %x) {triax.recompute = "full"} : ... {
    ^bb0(%dout: ..., %in: ...):
      %a = triax.linear %in, ...      // recomputed
      %g = triax.gelu %a ...          // recomputed
      ... backward ops reading %a, %g, %in ...
    }
    ```
  }];
  let options = [
    Option<"mode", "mode", "std::string", /*default=*/"\"full\"",
           "What the backward blocks recompute: none, selective (the "
           "attention core) or full (the whole block from its inputs)">,
  ];
}

def TriaxMixedPrecision : Pass<"triax-mixed-precision", "::mlir::ModuleOp"> {
  let summary = "bf16 activations with fp32 master weights, gradients, "
                "optimizer and collectives";
  let description = [{
    Mixed-precision training as Megatron-LM does it (`compute=bf16`): the
    parameters, their gradient buffers, the AdamW moments and the optimizer
    step stay f32 (ops marked `Triax_MasterPrecision`: `get_param`,
    `get_grad`, `accumulate_grad`, `global_norm`, `adamw`), the collectives
    of the `dist` dialect stay f32, and the activations between layer ops
    become bf16. Kernels compute every element in f32 whatever the storage
    type (a bf16 element is extended when loaded and rounded to nearest even
    when stored), so norm statistics, softmax maxima and sums and the loss
    are f32 accumulators, and the GEMMs take bf16 operands and accumulate in
    f32.

    Which values become bf16 is decided on the IR, never on op kind. The
    candidates are the rank >= 1 f32 tensors that layer ops, `triax.block`s
    and calls of the model's functions produce, and the arguments of blocks
    and called functions. Values that must share a type form one class: a
    block's inputs and arguments, its yield and results, a call's operands
    and results with the callee's arguments and returns, and the operands
    and results of ops that infer their result type (`add`, `gelu`,
    `bias_add`, ...). A class is bf16 when a layer op reads it; a class read
    only by master-state ops and collectives stays f32, so its producers
    write f32: weight gradients (a bf16 x bf16 GEMM with an f32 result, norm
    and bias gradients summed in f32) and partial sums on their way to an
    all_reduce. Layer ops accept that: their float operands share one
    element type, and a result has it or f32.

    Where a value meets a user that needs the other type, a `triax.convert`
    is inserted right after the value's definition (one per value and
    type): parameter reads feeding layer ops, activations reaching a
    collective or a gradient buffer, collective results read by layer ops.
    Entry functions keep their signatures (tokens in, f32 loss out); the
    signatures of called functions (pipeline stages) follow their values.
    The model's `train_config` says `compute = bf16` afterwards.

    It runs after `triax-autodiff` and the parallel passes (in
    `triax-parallelize{precision=bf16}`), before `triax-fuse-elementwise`
    (which fuses conversions into elementwise chains like any elementwise
    op). It refuses a model without a training step, a model that already
    computes in bf16 and parameters that are not f32. `compute=f32` leaves
    the module as it is.

    Before (abridged):
    ```mlir
    %w = triax.get_param @h.0.mlp.c_fc.weight : tensor<64x256xf32>
    %y = triax.linear %x, %w : (tensor<4x8x64xf32>, tensor<64x256xf32>) -> tensor<4x8x256xf32>
    %g = triax.gelu %y : tensor<4x8x256xf32>
    ...
    %dw = triax.linear_weight_grad %x, %dy : (tensor<4x8x64xf32>, tensor<4x8x256xf32>) -> tensor<64x256xf32>
    triax.accumulate_grad @h.0.mlp.c_fc.weight, %dw : tensor<64x256xf32>
    ```
    After:
    ```mlir
    %w = triax.get_param @h.0.mlp.c_fc.weight : tensor<64x256xf32>
    %wb = triax.convert %w : tensor<64x256xf32> to tensor<64x256xbf16>
    %y = triax.linear %x, %wb : (tensor<4x8x64xbf16>, tensor<64x256xbf16>) -> tensor<4x8x256xbf16>
    %g = triax.gelu %y : tensor<4x8x256xbf16>
    ...
    %dw = triax.linear_weight_grad %x, %dy : (tensor<4x8x64xbf16>, tensor<4x8x256xbf16>) -> tensor<64x256xf32>
    triax.accumulate_grad @h.0.mlp.c_fc.weight, %dw : tensor<64x256xf32>
    ```
  }];
  let options = [
    Option<"compute", "compute", "std::string", /*default=*/"\"bf16\"",
           "The activations' type: bf16 (mixed precision) or f32 (nothing "
           "changes)">,
  ];
}

def TriaxFuseElementwise : Pass<"triax-fuse-elementwise", "::mlir::ModuleOp"> {
  let summary = "Fuse chains of elementwise ops into triax.fused_elementwise";
  let description = [{
    Groups connected chains of elementwise ops (those implementing
    `ScalarElementwiseOpInterface`: `add`, `mul`, `gelu`, `silu`,
    `gelu_grad`, `silu_grad`) whose tensors all have one shape into one
    `triax.fused_elementwise`, so that the CPU lowering emits one loop over
    the elements per group, loading each input once and storing only the
    values used outside the group, instead of one loop and one buffer per
    op. It runs at the start of `triax-lower-cpu`, after `triax-autodiff`
    (a fused op is not differentiable).

    Every block of the module is handled on its own (function bodies and
    the `triax.block` regions, which the kernel conversion inlines later);
    nothing is fused across blocks. Ops are taken in block order: an op
    joins the groups of the operands it uses when they have its shape and
    when moving those groups down to it is legal, that is when no value of
    theirs is used by an op outside the group that comes before it (such a
    use would then precede its definition) and when no op between them may
    write memory (the kernels read parameters and gradient buffers through
    views, so a read must not move below a write). A group keeps as
    results the values used outside it; a group of one op is left as it
    is. The pass never switches on op kind: the fused region is built from
    each op's `buildScalar`.

    Design: the region holds the scalar computation (`arith`/`math` on the
    element type, built through the interface when the group is formed)
    rather than the triax ops on tensors. The region is then the loop body
    as it is: the lowering clones it into one `scf.parallel` without asking
    any op anything, the verifier can state exactly what a body may hold
    (scalars, no memory effects) and the IR after this pass shows the exact
    per-element formula of each group. Keeping tensor ops in the region
    would give ops whose types say "whole tensor" but that the lowering
    reads as "one element", and a second tensor-to-scalar walk in the
    lowering. What the scalar form gives up, the op-level meaning inside a
    group, is only read by `triax-autodiff`, which runs before.

    Before:
    ```mlir
    %s = triax.silu %a : tensor<4x8x128xf32>
    %p = triax.mul %s, %b : tensor<4x8x128xf32>
    ```
    After:
    ```mlir
    %p = triax.fused_elementwise(%a, %b) : (tensor<4x8x128xf32>, tensor<4x8x128xf32>) -> tensor<4x8x128xf32> {
    ^bb0(%x: f32, %y: f32):
      ... x * sigmoid(x) * y on f32 ...
      triax.fused_yield %r : f32
    }
    ```
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect"];
}

#endif // TRIAX_DIALECT_TRIAX_TRANSFORMS_PASSES_TD
