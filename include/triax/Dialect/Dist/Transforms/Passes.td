//===- Passes.td - Dist dialect passes ---------------------*- tablegen -*-===//

#ifndef TRIAX_DIALECT_DIST_TRANSFORMS_PASSES_TD
#define TRIAX_DIALECT_DIST_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def DistDataParallel : Pass<"dist-data-parallel", "::mlir::ModuleOp"> {
  let summary = "Average the gradients over the data-parallel mesh axis";
  let description = [{
    Data parallelism: every rank of the `dp-axis` holds the whole model and
    trains on its own share of the global batch; the gradients are averaged
    over the axis before the optimizer uses them, so every rank applies the
    same update and the replicas stay identical.

    The pass runs after `triax-autodiff`. It needs a module-level
    `dist.mesh` with the axis `dp-axis`: an existing mesh is used as it is
    (an error names the missing axis; `dp`, when given, must equal the
    axis's size), otherwise it creates `dist.mesh @mesh <["dp"=N]>` with
    N = `dp`. In each model's `@optimizer_step` (an error if a model has
    none) every `%g = triax.get_grad @p` gets
    `dist.all_reduce avg %g over @mesh ["dp"]`, and every use of `%g` reads
    the average instead: the global norm, the clipping factor and AdamW all
    see the averaged gradient.

    Why there: the gradient buffers sum every micro-batch of a step
    (`@forward_backward` adds to them with `triax.accumulate_grad`, the
    runtime zeroes them before the first micro-batch), and `@optimizer_step`
    runs once per step after the last micro-batch. Reducing where it reads
    them is one reduction per parameter per step, whatever the accumulation,
    and the clipping norm is the norm of the global-batch gradient, exactly
    as on one rank. With `grad_scale` = 1 / (micro-batches per rank), the
    update equals the single-rank update over the global batch.

    Not yet: bucketing small gradients into one collective and issuing each
    bucket as soon as its last gradient is produced in `@forward_backward`
    (overlapping communication with backward compute) are a later step;
    here every reduction waits for the whole backward pass.

    Before:
    ```mlir
    triax.model @m config(...) {
      triax.param @w : tensor<16x8xf32> init(normal, 0.02) decay
      func.func @optimizer_step(%lr: f32, %step: i64, %grad_scale: f32) -> f32 {
        %g = triax.get_grad @w : tensor<16x8xf32>
        %norm = triax.global_norm %g : tensor<16x8xf32> -> tensor<f32>
        ...
        triax.adamw @w, %g, lr %lr, step %step, scale %s {...} : tensor<16x8xf32>
      }
    }
    ```
    After (`dist-data-parallel{dp=2}`):
    ```mlir
    dist.mesh @mesh <["dp"=2]>
    triax.model @m config(...) {
      triax.param @w : tensor<16x8xf32> init(normal, 0.02) decay
      func.func @optimizer_step(%lr: f32, %step: i64, %grad_scale: f32) -> f32 {
        %g = triax.get_grad @w : tensor<16x8xf32>
        %avg = dist.all_reduce avg %g over @mesh ["dp"] : tensor<16x8xf32>
        %norm = triax.global_norm %avg : tensor<16x8xf32> -> tensor<f32>
        ...
        triax.adamw @w, %avg, lr %lr, step %step, scale %s {...} : tensor<16x8xf32>
      }
    }
    ```
  }];
  let options = [
    Option<"dpAxis", "dp-axis", "std::string", /*default=*/"\"dp\"",
           "The mesh axis the batch is split over">,
    Option<"dp", "dp", "int64_t", /*default=*/"0",
           "Size of the dp axis when the pass creates the mesh (0: the "
           "module must have a mesh already)">
  ];
  let dependentDialects = ["::mlir::dist::DistDialect"];
}

#endif // TRIAX_DIALECT_DIST_TRANSFORMS_PASSES_TD
