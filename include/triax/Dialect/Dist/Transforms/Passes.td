//===- Passes.td - Dist dialect passes ---------------------*- tablegen -*-===//

#ifndef TRIAX_DIALECT_DIST_TRANSFORMS_PASSES_TD
#define TRIAX_DIALECT_DIST_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def DistMesh : Pass<"dist-mesh", "::mlir::ModuleOp"> {
  let summary = "Declare the device mesh: dp, pp and tp, tp innermost";
  let description = [{
    Creates `dist.mesh @mesh` with the axes whose size is given (> 0), in
    the order dp, pp, tp. Ranks are numbered row-major over the mesh, the
    last axis innermost:

        rank = (dp_i * pp + pp_i) * tp + tp_i

    so the members of a tensor-parallel group (the most communication per
    step) are neighbours, i.e. on one node, and a data-parallel group
    strides over the others (Megatron-LM's layout). A module that already
    has a mesh keeps it; every given size must equal its axis's (an error
    names both).

    `dist-mesh{dp=2 tp=2}` on a module without a mesh:
    ```mlir
    dist.mesh @mesh <["dp"=2, "tp"=2]>
    ```
  }];
  let options = [
    Option<"dp", "dp", "int64_t", /*default=*/"0",
           "Size of the data-parallel axis (0: no such axis)">,
    Option<"pp", "pp", "int64_t", /*default=*/"0",
           "Size of the pipeline axis (0: no such axis)">,
    Option<"tp", "tp", "int64_t", /*default=*/"0",
           "Size of the tensor-parallel axis (0: no such axis)">
  ];
  let dependentDialects = ["::mlir::dist::DistDialect"];
}

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

def DistTensorParallel : Pass<"dist-tensor-parallel", "::mlir::ModuleOp"> {
  let summary = "Megatron tensor parallelism: split linears, heads and the "
                "vocabulary over the tp mesh axis";
  let description = [{
    Megatron-LM's tensor parallelism (Shoeybi et al., 2019) on each model's
    `@forward`, before `triax-autodiff`: the backward collectives then come
    from the vector-Jacobian products of the forward ones (`dist.copy_to_group`
    -> `dist.all_reduce sum`; `dist.all_reduce sum` -> identity).

    The pass reads the structure from the ops, not from parameter names:

    - **Column/row pairs.** A `triax.linear` (row) whose input is computed
      from the results of other `triax.linear`s (columns) only through
      elementwise ops (`gelu`, `silu`, `mul`, ...) and `triax.attention`
      (as its query, key and value), with no other use of those values, is
      a pair. Each column linear's weight is split along its output
      dimension and its bias with it; its input, replicated, goes through
      `dist.copy_to_group` (Megatron's `f`). The ops in between run on the
      local columns: `triax.attention` gets `heads / tp` and
      `kv_heads / tp`. The row linear's weight is split along its input
      dimension; its partial products are summed by
      `dist.all_reduce sum` (Megatron's `g`), and its bias, replicated, is
      added once after the sum with `triax.bias_add` (adding it inside the
      linear would add it `tp` times). An MLP (`c_fc`, `gelu`, `c_proj`)
      and an attention (`q`, `k`, `v`, `attention`, `c_proj`) are such
      pairs.
    - **Vocab-parallel head and loss.** A `triax.cross_entropy` whose
      logits come from a `triax.linear` (the LM head) gets
      `vocab_parallel over @mesh ["tp"]`: the head is a column linear
      producing this rank's `V / tp` logits, and the loss reduces the row
      maximum, the sum of exponentials and the target logit over the
      group without ever gathering the logits.
    - **Vocab-parallel embedding.** A `triax.embedding` of the token ids
      (the first argument of `@forward`), or of a table the head splits
      (tied embeddings), is split along the vocabulary: it gets
      `vocab_parallel over @mesh ["tp"]` (rows outside the rank's block
      read as zeros) followed by `dist.all_reduce sum`. The position
      embedding, the norms and the residual stream stay replicated.

    Every split parameter gets a `dist.sharding` naming the split
    dimension (see the example below); its `triax.param` keeps the
    global type while `triax.get_param` (and, after autodiff, the gradient
    and optimizer ops) use the rank's local shape, the global one divided
    by `tp` along the split dimension.

    The mesh is found or created as by `dist-data-parallel`: an existing
    `dist.mesh` must have the axis `tp-axis` (and `tp`, when given, must
    equal its size); without a mesh the pass creates
    `dist.mesh @mesh <["tp"=N]>` with N = `tp`. Errors: `tp` not dividing
    the heads, the key/value heads, a split linear's output size (the
    hidden or ffn size) or the vocabulary; a model that already has
    `@forward_backward` (run the pass before `triax-autodiff`) or split
    parameters; a split parameter also read by an op the pass does not
    split.

    Before (one MLP):
    ```mlir
    %w1 = triax.get_param @fc.weight : tensor<64x256xf32>
    %b1 = triax.get_param @fc.bias : tensor<256xf32>
    %h = triax.linear %x, %w1, %b1 : (tensor<8x64x64xf32>, tensor<64x256xf32>, tensor<256xf32>) -> tensor<8x64x256xf32>
    %g = triax.gelu %h : tensor<8x64x256xf32>
    %w2 = triax.get_param @proj.weight : tensor<256x64xf32>
    %b2 = triax.get_param @proj.bias : tensor<64xf32>
    %y = triax.linear %g, %w2, %b2 : (tensor<8x64x256xf32>, tensor<256x64xf32>, tensor<64xf32>) -> tensor<8x64x64xf32>
    ```
    After (`dist-tensor-parallel{tp=2}`):
}] #
    "    ```mlir\n"
    "    dist.mesh @mesh <[\"tp\"=2]>\n"
    "    triax.param @fc.weight : tensor<64x256xf32> ... {dist.sharding = #dist.sharding<@mesh, [{}, {\"tp\"}]>}\n"
    "    triax.param @fc.bias : tensor<256xf32> ... {dist.sharding = #dist.sharding<@mesh, [{\"tp\"}]>}\n"
    "    triax.param @proj.weight : tensor<256x64xf32> ... {dist.sharding = #dist.sharding<@mesh, [{\"tp\"}, {}]>}\n"
    "    ...\n"
    "    %x1 = dist.copy_to_group %x over @mesh [\"tp\"] : tensor<8x64x64xf32>\n"
    "    %w1 = triax.get_param @fc.weight : tensor<64x128xf32>\n"
    "    %b1 = triax.get_param @fc.bias : tensor<128xf32>\n"
    "    %h = triax.linear %x1, %w1, %b1 : (tensor<8x64x64xf32>, tensor<64x128xf32>, tensor<128xf32>) -> tensor<8x64x128xf32>\n"
    "    %g = triax.gelu %h : tensor<8x64x128xf32>\n"
    "    %w2 = triax.get_param @proj.weight : tensor<128x64xf32>\n"
    "    %b2 = triax.get_param @proj.bias : tensor<64xf32>\n"
    "    %p = triax.linear %g, %w2 : (tensor<8x64x128xf32>, tensor<128x64xf32>) -> tensor<8x64x64xf32>\n"
    "    %s = dist.all_reduce sum %p over @mesh [\"tp\"] : tensor<8x64x64xf32>\n"
    "    %y = triax.bias_add %s, %b2 : tensor<8x64x64xf32>, tensor<64xf32>\n"
    "    ```\n";
  let options = [
    Option<"tpAxis", "tp-axis", "std::string", /*default=*/"\"tp\"",
           "The mesh axis the layers are split over">,
    Option<"tp", "tp", "int64_t", /*default=*/"0",
           "Size of the tp axis when the pass creates the mesh (0: the "
           "module must have a mesh already)">
  ];
  let dependentDialects = ["::mlir::dist::DistDialect",
                           "::mlir::triax::TriaxDialect"];
}

def DistZero : Pass<"dist-zero", "::mlir::ModuleOp"> {
  let summary = "ZeRO stages 1, 2 and 3: shard the training state over dp";
  let description = [{
    ZeRO (Rajbhandari et al., 2020) removes data parallelism's redundancy:
    with plain data parallelism every dp rank keeps the same parameters,
    gradients and AdamW moments. This pass splits them over the `dp-axis`
    and replaces `dist-data-parallel` (it reduces the gradients itself; run
    one or the other, after `triax-autodiff`).

    Every parameter gets `dist.zero = #dist.zero<@mesh, ["dp"], stage = S>`.
    A sharded buffer is a flat chunk: the row-major elements padded with
    zeros to a multiple of dp, rank i holding chunk i of ceil(numel / dp)
    elements, so a size that does not divide is padded, never left
    replicated.

    - Stage 1 (moments sharded): in `@optimizer_step` each gradient is
      `dist.reduce_scatter_flat avg`-ed to this rank's chunk, the global
      norm becomes `partial over @mesh ["dp"]` (the square sums of the
      chunks are summed over dp), `triax.adamw` updates only the chunk (and
      the moments are chunk-sized), then `dist.all_gather_param` gathers the
      updated chunks into every rank's whole parameter.
    - Stage 2 (+ gradients sharded): the reduce-scatter moves into
      `@forward_backward`, right after each gradient is produced, and the
      gradient buffer keeps only the chunk (`triax.accumulate_grad` of the
      chunk); `@optimizer_step` reads chunk-sized gradients.
    - Stage 3 (+ parameters sharded): each rank stores only its chunk of
      each parameter; every `triax.get_param` (forward, each backward block,
      `@forward`) becomes a read of the chunk and a `dist.all_gather_flat`
      of the whole parameter, which is freed after its last use. No
      parameter gather follows the update.

    Communication per step and rank, for G gradient bytes in a ring of n:
    stage 1 and 2 move (n-1)/n G in the reduce-scatter and (n-1)/n G in the
    parameter gather, the same 2(n-1)/n G as data parallelism's all_reduce;
    stage 3 gathers the parameters twice (forward and backward) per
    micro-batch: 3(n-1)/n G with one micro-batch, 1.5x data parallelism.

    Not yet: prefetching the next block's gathers (stage 3) one block
    early, and bucketing.

    Before (after `triax-autodiff`):
    ```mlir
    func.func @optimizer_step(%lr: f32, %step: i64, %grad_scale: f32) -> f32 {
      %g = triax.get_grad @w : tensor<10x5xf32>
      %norm = triax.global_norm %g : tensor<10x5xf32> -> tensor<f32>
      ...
      triax.adamw @w, %g, lr %lr, step %step, scale %s {...} : tensor<10x5xf32>
    }
    ```
    After `dist-zero{stage=1 dp=4}`:
    ```mlir
    dist.mesh @mesh <["dp"=4]>
    triax.param @w : tensor<10x5xf32> ... {dist.zero = #dist.zero<@mesh, ["dp"], stage = 1>}
    func.func @optimizer_step(%lr: f32, %step: i64, %grad_scale: f32) -> f32 {
      %g = triax.get_grad @w : tensor<10x5xf32>
      %c = dist.reduce_scatter_flat avg %g over @mesh ["dp"] : tensor<10x5xf32> -> tensor<13xf32>
      %norm = triax.global_norm %c partial over @mesh ["dp"] : tensor<13xf32> -> tensor<f32>
      ...
      triax.adamw @w, %c, lr %lr, step %step, scale %s {...} : tensor<13xf32>
      dist.all_gather_param @w over @mesh ["dp"]
    }
    ```
  }];
  let options = [
    Option<"stage", "stage", "int64_t", /*default=*/"1",
           "ZeRO stage: 1 (optimizer state), 2 (+ gradients), 3 (+ "
           "parameters)">,
    Option<"dpAxis", "dp-axis", "std::string", /*default=*/"\"dp\"",
           "The data-parallel mesh axis the state is sharded over">,
    Option<"dp", "dp", "int64_t", /*default=*/"0",
           "Size of the dp axis when the pass creates the mesh (0: the "
           "module must have a mesh already)">
  ];
  let dependentDialects = ["::mlir::dist::DistDialect"];
}

#endif // TRIAX_DIALECT_DIST_TRANSFORMS_PASSES_TD
