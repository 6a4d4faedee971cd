//===- Passes.td - Triax dialect passes --------------------*- tablegen -*-===//

#ifndef TRIAX_DIALECT_TRIAX_TRANSFORMS_PASSES_TD
#define TRIAX_DIALECT_TRIAX_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def TriaxAutodiff : Pass<"triax-autodiff", "::mlir::ModuleOp"> {
  let summary = "Build the backward graph and the AdamW update of each model";
  let description = [{
    For every `triax.model`, adds

    - `func.func @forward_backward(%tokens, %targets) -> loss`: the forward
      graph of `@forward`, then its backward graph, ending with one
      `triax.accumulate_grad` per parameter (gradient buffers sum over the
      micro-batches of a step);
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

#endif // TRIAX_DIALECT_TRIAX_TRANSFORMS_PASSES_TD
