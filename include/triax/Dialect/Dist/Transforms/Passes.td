//===- Passes.td - Dist dialect passes ---------------------*- tablegen -*-===//

#ifndef TRIAX_DIALECT_DIST_TRANSFORMS_PASSES_TD
#define TRIAX_DIALECT_DIST_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def DistMesh : Pass<"dist-mesh", "::mlir::ModuleOp"> {
  let summary = "Declare the device mesh: named axes in the axis-role "
                "table's order";
  let description = [{
    Creates `dist.mesh @mesh` with the axes of `axes` ("dp=2,tp=2", the
    form of triaxc's `--mesh`, parsed by the same code), in the order of
    the axis-role table (lib/Dialect/Dist/IR/MeshShape.cpp): dp, pp, ep,
    cp, tp. Ranks are numbered row-major over the mesh, the last axis
    innermost:

        rank = (dp_i * pp + pp_i) * tp + tp_i

    so the members of a tensor-parallel group (the most communication per
    step) are neighbours, i.e. on one node, and a data-parallel group
    strides over the others (Megatron-LM's layout). A module that already
    has a mesh keeps it; every given size must equal its axis's (an error
    names both). Unknown axes, axes of roles not implemented yet, repeated
    axes and bad sizes are errors.

    `dist-mesh{axes=dp=2,tp=2}` on a module without a mesh:
    ```mlir
    dist.mesh @mesh <["dp"=2, "tp"=2]>
    ```
  }];
  let options = [
    Option<"axes", "axes", "std::string", /*default=*/"\"\"",
           "The axes and their sizes, axis=size items separated by commas "
           "(\"\": no mesh unless the module has one)">
  ];
  let dependentDialects = ["::mlir::dist::DistDialect"];
}

def DistDataParallel : Pass<"dist-data-parallel", "::mlir::ModuleOp"> {
  let summary = "Average the gradients over the data-parallel mesh axis, in "
                "buckets overlapping the backward pass";
  let description = [{
    Data parallelism: every rank of the `dp-axis` holds the whole model and
    trains on its own share of the global batch; the gradients are averaged
    over the axis before the optimizer uses them, so every rank applies the
    same update and the replicas stay identical.

    The pass runs after `triax-autodiff`. It needs a module-level
    `dist.mesh` with the axis `dp-axis`: an existing mesh is used as it is
    (an error names the missing axis; `dp`, when given, must equal the
    axis's size), otherwise it creates `dist.mesh @mesh <["dp"=N]>` with
    N = `dp`.

    In `@forward_backward` (where `triax-autodiff` put each
    `triax.accumulate_grad` right after the op that makes its gradient)
    the gradients are grouped, in the order they are produced (last
    layer first), into buckets of `bucket-mb` MiB, one open bucket per
    group of axes and element type (under expert parallelism the experts'
    gradients, averaged over dp, and the others', over dp and ep, fill two
    buckets side by side). After the last accumulation of each bucket
    comes one
    `dist.all_reduce_grads avg [@p, @q, ...] over @mesh ["dp"]`: the
    bucket's gradient buffers packed into one message and averaged in
    place, while the backward pass of the layers below is still to run (on
    a GPU, on the communication stream). It reduces at the accumulation
    boundary only — the last micro-batch of a step — so each gradient is
    reduced once per step whatever the accumulation, and
    `@optimizer_step` (global norm, clipping, AdamW) reads averaged
    buffers. With `grad_scale` = 1 / (micro-batches per rank), the update
    equals the single-rank update over the global batch.

    Under pipeline parallelism (the model has `@pipeline_step`: run after
    `dist-pipeline`) `@forward_backward` does not run and is left alone;
    the gradients are averaged after the pipeline's flush, as DeepSpeed's
    pipeline engine does: at the start of each stage's case of the
    per-stage `@optimizer_step`, before its `triax.get_grad`s, one
    `dist.all_reduce_grads avg [...] over @mesh ["dp"]` per bucket of that
    stage's gradients, in the order the case reads them. A tied parameter
    is averaged on each of its stages (before its parts are exchanged). A
    `@pipeline_step` without the per-stage `@optimizer_step` is an error.

    Context parallelism's sums are folded in, as Megatron-LM reduces over
    dp x cp: when the mesh has `cp-axis`, every parameter's gradient is
    partial over it (`dist.partial_grad`, from `dist-context-parallel`) and
    every `triax.accumulate_grad` of the model adds a
    `dist.all_reduce sum` over it (triax-autodiff's, per micro-batch, out
    of place), those sums lose the axis (and go where none is left), the
    buffers accumulate the partial gradients in place, and the buckets
    average over the data axes and cp at the accumulation boundary. The
    average over cp of gradients partial over it is their sum divided by
    cp, so `@optimizer_step`'s `%grad_scale` is multiplied by cp at its
    entry (the norm and the clipping read the scaled value too). A mesh
    with cp and no dp is taken as it is. Where the model does not have
    that shape, autodiff's sums stay, which is right too.

    Before (after `triax-autodiff`):
    ```mlir
    func.func @forward_backward(%tokens: ..., %targets: ...) -> tensor<f32> {
      ...
      %b:17 = triax.block "h.1.grad"(...) {...}
      ...
      %c:17 = triax.block "h.0.grad"(...) {...}
      ...
      triax.accumulate_grad @h.1.mlp.c_proj.weight, %b#2 : tensor<256x64xf32>
      triax.accumulate_grad @h.0.mlp.c_proj.weight, %c#2 : tensor<256x64xf32>
      ...
    }
    ```
    After (`dist-data-parallel{dp=2 bucket-mb=0.25}`):
    ```mlir
    dist.mesh @mesh <["dp"=2]>
    func.func @forward_backward(%tokens: ..., %targets: ...) -> tensor<f32> {
      %b:17 = triax.block "h.1.grad"(...) {...}
      triax.accumulate_grad @h.1.ln_2.weight, %b#1 : tensor<64xf32>
      triax.accumulate_grad @h.1.mlp.c_proj.weight, %b#2 : tensor<256x64xf32>
      ...
      dist.all_reduce_grads avg [@h.1.ln_2.weight, @h.1.mlp.c_proj.weight, ...] over @mesh ["dp"]
      %c:17 = triax.block "h.0.grad"(...) {...}
      ...
    }
    ```
  }];
  let options = [
    Option<"dpAxis", "dp-axis", "std::string", /*default=*/"\"dp\"",
           "The mesh axis the batch is split over">,
    Option<"dp", "dp", "int64_t", /*default=*/"0",
           "Size of the dp axis when the pass creates the mesh (0: the "
           "module must have a mesh already)">,
    Option<"bucketMb", "bucket-mb", "double", /*default=*/"25.0",
           "Bucket size in MiB: gradients are reduced in messages of about "
           "this size (PyTorch DDP's default, 25)">,
    Option<"epAxis", "ep-axis", "std::string", /*default=*/"\"ep\"",
           "Expert parallelism's axis: when the mesh has it, the batch is "
           "split over it too, and a gradient is averaged over dp and ep "
           "except on the axes its parameter is split over "
           "(dist-expert-parallel's experts: dp only)">,
    Option<"cpAxis", "cp-axis", "std::string", /*default=*/"\"cp\"",
           "Context parallelism's axis: when every gradient is partial over "
           "it (dist-context-parallel), its sums are folded into the "
           "once-per-step average over the data axes and it">
  ];
  let dependentDialects = ["::mlir::dist::DistDialect",
                           "::mlir::arith::ArithDialect"];
}

def DistExpertParallel : Pass<"dist-expert-parallel", "::mlir::ModuleOp"> {
  let summary = "Expert parallelism: each MoE layer's experts split over the "
                "ep mesh axis, tokens exchanged with all_to_all";
  let description = [{
    GShard's expert parallelism (Lepikhin et al., 2020), on each model's
    `@forward` before `triax-autodiff`. The ranks of the `ep-axis` train on
    their own sequences, like data-parallel ranks, and each holds `E/ep` of
    every mixture-of-experts layer's experts (member `j` experts
    `j*E/ep .. (j+1)*E/ep - 1`: dimension 0 of each stacked expert weight is
    split over the axis, `dist.sharding`).

    Between a `triax.moe_dispatch` and its `triax.moe_combine` the pass
    inserts two exchanges. The dispatched buffer `[E, B*C, H]` goes to the
    experts' members (`split 0 concat 1`: member `j` receives its experts'
    rows of every member's sequences, `[E/ep, ep*B*C, H]`, member `i`'s rows
    at `i*B*C`); the experts run on it; their output comes back in the
    dispatch's layout (`split 1 concat 0`). The ops in between must work
    expert by expert (`triax.expert_linear` on a parameter read only there,
    elementwise ops of the rows, and the tp collectives
    `dist-tensor-parallel` put around each expert's MLP): they keep their
    rows and take `[E/ep, ep*B*C, ...]`. A weight tensor parallelism split
    already keeps its split and adds ep on dimension 0 (the first expert
    product's weight is then split over ep on dimension 0 and over tp on
    dimension 2). The backward's exchanges are the all_to_alls'
    vector-Jacobian products.

    ```mlir
    %buf = triax.moe_dispatch %h, %slots, %assign : (...) -> tensor<4x512x64xf32>
    %mine = dist.all_to_all %buf over @mesh ["ep"] split 0 concat 1 : tensor<4x512x64xf32> -> tensor<2x1024x64xf32>
    %w = triax.get_param @h.0.moe.experts.c_fc.weight : tensor<2x64x128xf32>
    %fc = triax.expert_linear %mine, %w : (tensor<2x1024x64xf32>, tensor<2x64x128xf32>) -> tensor<2x1024x128xf32>
    ...
    %back = dist.all_to_all %out over @mesh ["ep"] split 1 concat 0 : tensor<2x1024x64xf32> -> tensor<4x512x64xf32>
    %y = triax.moe_combine %back, %slots, %assign gates %gates : (...)
    ```

    Gradients: an expert weight's gradient sums the contributions of every
    member's tokens, whose losses are means over that member's tokens, so
    the pass marks the weight `dist.grad_scale = 1/ep` (triax-autodiff
    scales it before accumulating); `dist-data-parallel` then averages every
    gradient over the data axes the parameter is replicated on: dp and ep
    for all the others, dp for the experts.

    The number of experts must be a multiple of the axis size. The mesh is
    found or created as for the other passes (`ep` gives the size when the
    pass creates it).
  }];
  let options = [
    Option<"epAxis", "ep-axis", "std::string", /*default=*/"\"ep\"",
           "The mesh axis the experts are split over">,
    Option<"ep", "ep", "int64_t", /*default=*/"0",
           "Size of the ep axis when the pass creates the mesh (0: the "
           "module must have a mesh already)">
  ];
  let dependentDialects = ["::mlir::dist::DistDialect",
                           "::mlir::triax::TriaxDialect"];
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
      from the results of other `triax.linear`s (columns) only through ops
      whose rule along the features (`ShardingRuleOpInterface`) is `Local`
      (elementwise ops: `gelu`, `silu`, `mul`, ...) or `Heads`
      (`triax.attention`, as its query, key and value), with no other use
      of those values, is a pair. Each column linear's weight is split along its output
      dimension and its bias with it; its input, replicated, goes through
      `dist.copy_to_group` (Megatron's `f`). The ops in between run on the
      local columns: the op's `applySplit` changes what else the split
      changes (`triax.attention` gets `heads / tp` and `kv_heads / tp`;
      its `verifySplit` checks they divide). The row linear's weight is split along its input
      dimension; its partial products are summed by
      `dist.all_reduce sum` (Megatron's `g`), and its bias, replicated, is
      added once after the sum with `triax.bias_add` (adding it inside the
      linear would add it `tp` times). An MLP (`c_fc`, `gelu`, `c_proj`)
      and an attention (`q`, `k`, `v`, `attention`, `c_proj`) are such
      pairs. So are the experts' MLPs of a MoE layer: `triax.expert_linear`
      (one product per expert, weights `[E, in, out]`, no bias) pairs as
      `triax.linear` does, its weights split along out (columns) or in
      (rows) (Megatron's expert-tensor parallelism; `dist-expert-parallel`
      then splits the experts' dimension of the same weights over ep).
      When the pair's columns read a `triax.moe_dispatch`'s buffer (and
      nothing else does) and its row products only feed a
      `triax.moe_combine`, the collectives go on the tokens' side, since
      dispatch and combine are linear in the rows: the dispatch's tokens
      and the combine's gates go through `dist.copy_to_group` (the gates'
      gradient reads the experts' partial rows) and the combine's result,
      `[B, S, H]`, through `dist.all_reduce sum`, instead of the buffer
      `[E, B*C, H]`, capacity factor x k times larger. Otherwise the buffer
      goes through `dist.copy_to_group` and the partial products through
      `dist.all_reduce sum` (an error under sequence parallelism).
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

    - **Sequence parallelism** (`sequence-parallel=true`; Korthikanti et
      al., 2022). The activations between the tensor-parallel regions (the
      residual stream, the norms, the residual adds, the embeddings' sum)
      are split along the sequence (dimension 1 of `[batch, seq, hidden]`)
      over tp: each rank holds `seq / tp` tokens. Each row linear's
      `dist.all_reduce sum` becomes `dist.reduce_scatter sum ... dim 1`
      (its bias is then added to the local tokens), and each column
      group's (and the head's) `dist.copy_to_group` becomes
      `dist.all_gather ... dim 1`; their VJPs give an all_gather and a
      reduce_scatter in the backward. The vocab-parallel embedding's
      all_reduce becomes a reduce_scatter, and `triax.position_ids` gets
      `sequence_parallel over @mesh ["tp"]` (this rank's positions). The
      replicated parameters applied to the local tokens (norm weights and
      biases, row biases, the position embedding) get
      `dist.partial_grad`: `triax-autodiff` sums their gradients over tp.
      The loss still sees every token (the head gathers the sequence).
      A MoE layer's experts, summed on the tokens' side, take the
      sequence like a dense MLP: the dispatch's tokens through
      `dist.all_gather ... dim 1`, the combine's sum through
      `dist.reduce_scatter sum ... dim 1`; the router's linear runs on the
      slice (its weight's gradient partial) and its logits are gathered
      with `replicated_grad` before `triax.moe_route`, whose capacity scan
      takes the whole sequence: every member routes it alike, so the
      logits' gradient is the same on every member and each keeps its
      slice of it.
      The ops kept on the slice are those whose rule along the sequence
      (`ShardingRuleOpInterface`) is `Local`; a linear outside any pair
      runs on the slice too, its weight's gradient partial.
      Errors: `tp` not dividing the sequence; an op between the regions
      that cannot run on a slice of the sequence (with its rule's reason).

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
           "module must have a mesh already)">,
    Option<"sequenceParallel", "sequence-parallel", "bool",
           /*default=*/"false",
           "Megatron sequence parallelism: split the activations between "
           "the tensor-parallel regions along the sequence over tp "
           "(reduce_scatter / all_gather instead of all_reduce / "
           "copy_to_group)">
  ];
  let dependentDialects = ["::mlir::dist::DistDialect",
                           "::mlir::triax::TriaxDialect"];
}

def DistContextParallel : Pass<"dist-context-parallel", "::mlir::ModuleOp"> {
  let summary = "Context parallelism: split every activation along the "
                "sequence over the cp mesh axis";
  let description = [{
    Context parallelism (Megatron-Core's `context_parallel_size`: ring
    attention, or Llama 3's all-gather variant) on each model's
    `@forward`, before `triax-autodiff` (and after `dist-tensor-parallel`,
    whose split it keeps): each of the
    `n` members of the cp group holds `1/n` of the tokens of every
    sequence, in every activation of the model.

    - **The split.** The sequence of `S` tokens is cut into `2n` chunks;
      member `c` holds chunks `c` and `2n-1-c` (`dist.shard_sequence`), so
      that under the causal mask every member does the same attention work.
      The pass shards the per-token inputs, `@forward`'s `[batch, seq]`
      integer arguments (token ids, targets) and `triax.position_ids` (the
      tokens' positions in the full sequence), and from there every value
      computed from them has `S/n` tokens. Each op follows by its rule
      along the sequence (`ShardingRuleOpInterface`): the `Local` ones,
      which treat tokens one by one (linears, norms, embeddings,
      elementwise ops, the tensor-parallel collectives), and `triax.block`
      only change their types.
    - **Attention**, the one op that mixes tokens (its rule is `Gather` of
      the keys and values, with `ring`), with `comm=all-gather`: its keys
      and values are gathered over the group (`dist.all_gather ... dim 1`) and its `applySplit` gives it
      `context_parallel over @mesh ["cp"]` (causal mask on positions in the
      full sequence). Its VJP gathers them again (a clone of the gathers:
      only the member's own keys and values are kept for the backward) and
      gives this member's part of the gradients of the whole sequence's,
      which the all_gather's VJP (`dist.reduce_scatter sum`) sums back to
      their owners.
    - **The loss.** Each member's `triax.cross_entropy` (rule
      `PartialMean`) is the mean over its tokens; the pass divides it by `n` and sums it over the group
      (`dist.all_reduce sum`): every member gets the mean over the whole
      sequence, and its VJP scales the loss gradient by `1/n`.
    - **Gradients.** Every parameter is replicated over cp and applied to
      the member's tokens only, so it gets `dist.partial_grad` over cp:
      `triax-autodiff` sums its gradient over the group before it is
      accumulated; `dist-data-parallel` and `dist-zero` fold those sums
      into their reductions over dp x cp.

    - **With sequence parallelism** (dist-tensor-parallel's, run first):
      its `dist.reduce_scatter` and `dist.all_gather` along the sequence
      over tp work within the member's tokens (local along the sequence);
      its positions (`triax.position_ids sequence_parallel`) become the
      whole sequence's, cut to the member's chunks, then to the tp rank's
      contiguous slice of them (`dist.shard_sequence ... contiguous`); the
      parameters it made partial over tp become partial over tp and cp.

    - **The ring** (`comm=ring`, ring attention): an op whose rule
      gathers operands but can pass them around the ring itself
      (`SplitRule::ring`: attention) keeps the member's own keys and values
      and becomes `context_parallel over @mesh ["cp"] ring`
      (`applyRingSplit`); no `dist.all_gather` is built, and its gradient
      passes them around again.

    The mesh is found or created as by `dist-tensor-parallel` (`cp-axis`,
    `cp`). Errors: a sequence that does not split into `2n` equal chunks;
    a model that already has `@forward_backward` (run the pass before
    `triax-autodiff`); an op computed from the split tokens that has no
    rule along the sequence, or refuses it (the error names it and the
    rule's reason); a result (a sequence-parallel slice) that does not
    split into the members' tokens.

    Before (`cp=2`, one attention; positions and the loss alike):
    ```mlir
    func.func @forward(%tokens: tensor<8x64xi32>, %targets: tensor<8x64xi32>) -> tensor<f32> {
      %x = triax.embedding %tokens, %wte : (tensor<8x64xi32>, tensor<256x64xf32>) -> tensor<8x64x64xf32>
      ...
      %a = triax.attention %q, %k, %v heads = 4 : (tensor<8x64x64xf32>, tensor<8x64x64xf32>, tensor<8x64x64xf32>) -> tensor<8x64x64xf32>
    ```
    After, with `comm=all-gather` (with `comm=ring`, the default, the
    attention takes `%k` and `%v` as they are and is marked `ring`):
    ```mlir
      %t = dist.shard_sequence %tokens over @mesh ["cp"] dim 1 : tensor<8x64xi32> -> tensor<8x32xi32>
      %x = triax.embedding %t, %wte : (tensor<8x32xi32>, tensor<256x64xf32>) -> tensor<8x32x64xf32>
      ...
      %kf = dist.all_gather %k over @mesh ["cp"] dim 1 : tensor<8x32x64xf32> -> tensor<8x64x64xf32>
      %vf = dist.all_gather %v over @mesh ["cp"] dim 1 : tensor<8x32x64xf32> -> tensor<8x64x64xf32>
      %a = triax.attention %q, %kf, %vf heads = 4 context_parallel over @mesh ["cp"] : (tensor<8x32x64xf32>, tensor<8x64x64xf32>, tensor<8x64x64xf32>) -> tensor<8x32x64xf32>
    ```
  }];
  let options = [
    Option<"cpAxis", "cp-axis", "std::string", /*default=*/"\"cp\"",
           "The mesh axis the sequence is split over">,
    Option<"cp", "cp", "int64_t", /*default=*/"0",
           "Size of the cp axis when the pass creates the mesh (0: the "
           "module must have a mesh already)">,
    Option<"comm", "comm", "std::string", /*default=*/"\"ring\"",
           "How attention gets the other members' keys and values: ring "
           "(the op passes them around the group's ring itself: `ring`) "
           "or all-gather (dist.all_gather before the op)">
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::dist::DistDialect",
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
    With expert parallelism (the mesh has an `ep` axis, whose ranks train
    on their own sequences too) a parameter's group is the data axes it is
    replicated on: `["dp", "ep"]`, and `["dp"]` for the experts
    `dist-expert-parallel` split over ep; its gradient is reduce-scattered,
    and its chunks gathered, over that group. Context parallelism's
    gradient sums are folded in as `dist-data-parallel` folds them (when
    the mesh has `cp`, every gradient is partial over it and each
    accumulation adds triax-autodiff's sum over it): the sums go, the
    group gains cp (`["dp", "cp"]`: the state is sharded over dp x cp, as
    Megatron's distributed optimizer does) and `%grad_scale` is multiplied
    by cp. A mesh with cp but no dp (or dp = 1) is sharded over cp alone
    (`["cp"]`); one whose group would hold one rank (no dp >= 2 and no
    folded cp) is an error.
    A sharded buffer is a flat chunk: the row-major elements padded with
    zeros to a multiple of dp, rank i holding chunk i of ceil(numel / dp)
    elements, so a size that does not divide is padded, never left
    replicated.

    - Stage 1 (moments sharded): in `@optimizer_step` each gradient is
      `dist.reduce_scatter_flat avg`-ed to this rank's chunk, the global
      norm becomes `partial over @mesh ["dp"]` (the square sums of the
      chunks are summed over dp), `triax.adamw` updates only the chunk (and
      the moments are chunk-sized), then `dist.all_gather_params` gathers the
      updated chunks into every rank's whole parameter. The gathers follow
      the last update, in the updates' order, so that the updates stay
      consecutive (one fused launch on the GPU).
    - Stage 2 (+ gradients sharded): the reduce-scatter moves into
      `@forward_backward`, right after each gradient is produced, and the
      gradient buffer keeps only the chunk (`triax.accumulate_grad` of the
      chunk); `@optimizer_step` reads chunk-sized gradients.
    - Stage 3 (+ parameters sharded): each rank stores only its chunk of
      each parameter; every `triax.get_param` (forward, each backward block,
      `@forward`) becomes a read of the chunk and a `dist.all_gather_flat`
      of the whole parameter, which is freed after its last use; the
      gathers of one `triax.block` join in buckets
      (`dist.all_gather_bucket`, below). No parameter gather follows the
      update. With `prefetch` (the default),
      the gathers of each `triax.block` after the first of a sequence
      (forward blocks, then backward blocks) are issued one block early,
      right before the previous block, and passed to their block as extra
      inputs: two blocks' gathered parameters are alive at once, and each
      gather has a block of compute to overlap with where the target has
      a communication stream (the CPU runtime's MPI calls are blocking:
      there the order changes, not the time).

    Communication per step and rank, for G gradient bytes in a ring of n:
    stage 1 and 2 move (n-1)/n G in the reduce-scatter and (n-1)/n G in the
    parameter gather, the same 2(n-1)/n G as data parallelism's all_reduce;
    stage 3 gathers the parameters twice (forward and backward) per
    micro-batch: 3(n-1)/n G with one micro-batch, 1.5x data parallelism.

    Under pipeline parallelism (after `dist-pipeline`) stage 1 works in
    each stage's case of `@optimizer_step`: a tied parameter's exchanged
    sum is reduce-scattered (the exchange stays whole) and the norm is
    partial over pp and dp. Stages 2 and 3 with pipeline parallelism are
    an error (DeepSpeed refuses them with its pipeline engine too): their
    gradient chunks would be reduced per micro-batch inside the stage
    functions.

    Buckets (`bucket-mb`, default 25 MiB of whole tensors, as
    `dist-data-parallel`): the gradients' reduce-scatters and the
    parameter gathers go in buckets, each one message
    (`dist.reduce_scatter_bucket`, `dist.all_gather_params` at stages 1
    and 2, `dist.all_gather_bucket` at stage 3), so a step makes a few
    large collectives instead of two per parameter. A bucket
    holds tensors of one block of ops, one group and one element type (a
    MoE layer's experts and the rest of the layer fill two buckets side by
    side), closed at the tensor that fills `bucket-mb`: stage 1's
    gradients in the order the optimizer step reads them, each bucket
    reduced after its last gradient is read and before any of them is
    used; the backward's (stages 2 and 3) in the order it produces them,
    each bucket reduced right after its last gradient is produced and
    followed by its accumulations; the gathers in the updates' order. The chunks are the same as one collective per tensor (each
    member's part of the message packs its chunk of every tensor), so the
    state's layout and checkpoints do not change. Stage 3 gathers each
    block's parameters (a layer's, used together: the unit FSDP wraps) in
    buckets of one group and element type, each issued where its first
    gather was (all of them a block early with `prefetch`); the
    parameters read outside the blocks (embeddings, final norm) are
    gathered one by one where they are read. `bucket-mb=0`: one collective
    per tensor.

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
      // ... the other updates, then the gathers in the same order:
      dist.all_gather_params [@w] over @mesh ["dp"]
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
           "module must have a mesh already)">,
    Option<"prefetch", "prefetch", "bool", /*default=*/"true",
           "Stage 3: issue each block's parameter gathers one block early">,
    Option<"bucketMb", "bucket-mb", "double", /*default=*/"25.0",
           "The gradient reduce-scatters and the parameter gathers (at "
           "stage 3, each block's) in buckets of this many MiB of whole "
           "tensors (0: one collective per tensor)">
  ];
  let dependentDialects = ["::mlir::dist::DistDialect"];
}

def DistPipeline : Pass<"dist-pipeline", "::mlir::ModuleOp"> {
  let summary = "Pipeline parallelism: cut the blocks into stages and "
                "schedule micro-batches (GPipe, 1F1B, interleaved, ZB-H1)";
  let description = [{
    Runs after `triax-autodiff` on each model's `@forward_backward` (an
    error if a model has none). `@forward` and `@forward_backward` are
    kept; the pass adds the stage functions and `@pipeline_step`, and makes
    `@optimizer_step` per stage.

    **Partition.** The forward `triax.block`s (in order) are cut into `pp`
    contiguous stages: by `stage-layers` (e.g. `4,4,3,5`: `pp` counts
    >= 1 summing to the number of blocks), or else by cost: each block
    costs the FLOPs of its ops (2·M·N·K per `triax.linear`,
    4·b·s²·h per `triax.attention`), the ops before the first block (the
    embedding) count on stage 0 and those after the last (final norm,
    head, loss) on the last stage, and the cut minimising the most
    expensive stage is taken (ties: the earliest). Every other op of
    `@forward_backward` goes with the blocks it depends on: a forward op
    on the latest stage of its operands, a backward op (not feeding the
    loss) on the earliest; `h.i.grad` on the stage of `h.i`. Parameters get
    `dist.stage = S` (the stage reading them); a parameter read on several
    stages (an embedding tied to the head) gets the first and
    `dist.tied_stages = array<i64: ...>`, and a gradient summed from
    several stages (`triax.add` before its `triax.accumulate_grad`) is
    accumulated on each stage separately (the optimizer step sums the
    parts, below).

    **Stage functions.** For each stage s, `@stage<s>_forward` is the
    stage's forward ops for one micro-batch. Arguments: the
    `@forward_backward` arguments it reads (tokens on stage 0, targets on
    the last), then the activations received from stage s-1. Results: the
    activations sent to stage s+1 (the loss instead on the last stage),
    then the values its backward needs (saved activations).
    `@stage<s>_backward` is the stage's backward ops including their
    `triax.accumulate_grad`s. Arguments: the `@forward_backward` arguments
    it reads, the received activations it reads, the saved activations, and
    the gradients received from stage s+1 (none on the last stage: it
    starts from the loss). Results: the gradients sent to stage s-1 (none
    on stage 0). Parameter reads and constants are cloned into every
    function that uses them.

    **Micro-batches.** `microbatches` is the training config's
    accumulation per data-parallel rank, global_batch / (micro_batch · dp)
    with dp the size of the mesh's `dp-axis` (1 without it): 0 (the
    default) takes it, any other value must equal it (the error gives the
    `triax-model --batch` that would make it so), and a global batch not
    divisible by micro_batch · dp is an error.

    **Schedule.** `@pipeline_step(%tokens, %targets) -> f32` takes the
    `microbatches` micro-batches of one step stacked along dimension 0
    and returns the mean micro-batch loss as a scalar on the last stage
    (each micro-batch's `tensor<f32>` loss `tensor.extract`ed, summed with
    `arith.addf` in micro-batch order, times the constant 1/m) and
    `0.0 : f32` on the other stages and in the default region.
    Its body is one `scf.index_switch` on `dist.axis_index @mesh ["pp"]`
    with one case per stage, each the stage's unrolled program: the
    micro-batch's `tensor.extract_slice` of tokens/targets, `func.call`s
    of the stage functions and `dist.send`/`dist.recv` over `["pp"]` to
    the neighbouring stage, tagged `2·mb` (activations, forward) or
    `2·mb + 1` (gradients, backward) (times the number of values per
    boundary, plus their index, when a boundary carries several).

    - `gpipe`: all forwards (recv, forward, send), then all backwards in
      the same micro-batch order.
    - `1f1b` (PipeDream-Flush, Narayanan et al. 2021): stage s runs
      w = min(pp-s-1, m) warm-up forwards, then m-w steady steps
      F(w+j), B(j), then the w remaining backwards. In a steady step the
      gradient of B(j) is received before the activation of F(w+j) is
      sent (Megatron's send_forward_recv_backward exchange, serialised):
      sending first would deadlock with blocking send/recv, as the next
      stage is sending the gradient at the same time.

    - `interleaved` (Megatron-LM's interleaved 1F1B), with
      `virtual-stages=v` >= 2: the blocks are cut into pp·v virtual stages
      (`stage-layers` then has pp·v counts); virtual stage k runs on rank
      k % pp as its chunk k / pp, its stage functions `@stage<k>_...`
      carry `dist.chunk = k / pp`, and `dist.stage` of a parameter is its
      rank. Rank r warms up with min(2(pp-r-1) + (v-1)pp, m·v) forwards
      going through its chunks in groups of pp micro-batches, then
      alternates one forward, one backward (the backwards through the
      chunks in reverse), then cools down; `microbatches` must be a
      multiple of pp. Messages over the boundary after virtual stage k
      are tagged (2·mb + dir)·v + k/pp (times the values per boundary,
      plus their index).
    - `zb-h1` (Qi et al. 2024): each stage's backward is split by a
      dataflow slice (its blocks inlined) into `@stage<s>_backward`, B:
      what the gradients it sends depend on, returning after them the
      values the rest reads, and `@stage<s>_weight`, W: the rest (weight
      gradients, `triax.accumulate_grad`s), taking the backward's
      arguments it reads and those values. 1F1B's order with W(j-s) after
      B(j) on stage s and the s deferred W passes at the end. A
      `dist.all_gather` of B's whose result W reads too (under sequence
      parallelism: each row linear's output gradient, which B gathers for
      its input gradient and W reads for the weight gradient; under full
      recomputation also the norms' outputs B's rebuilt forward gathers) is
      cloned into W, which gathers again from the shard B hands over: 1/t
      of the tensor held between B and W for one all_gather more. With
      `carry-gathered` B hands over the gathered tensor instead (t times
      the bytes, no second all_gather); the planner chooses per plan
      (docs/cost-model.md [A12]).

    The order of every schedule is `mlir::dist::pipelineOrder`
    (PipelineSchedule.h), the one the cost model simulates. GPipe and 1F1B
    place each send and recv as above; the others place them by a
    simulation of the order with unit times: messages in one global order
    of (time their pass ends, sender, position), each rank's sends and
    recvs in that order, which no blocking execution can deadlock.

    The idle fraction (bubble) of GPipe and 1F1B is (p-1)/(m+p-1),
    interleaved (p-1)/(v·m+p-1), ZB-H1 (p-1)/(3m+p-1) (backward = 2
    forwards, B = W); 1F1B keeps at most pp-s micro-batches' activations
    alive on stage s instead of m, ZB-H1 pp on every stage.

    **Per-stage optimizer step.** `@optimizer_step(%lr, %step, %scale) ->
    f32` keeps its signature; its body becomes one `scf.index_switch` on
    `dist.axis_index @mesh ["pp"]` (the default region, never taken,
    yields 0.0), case s a copy of the original body restricted to the
    parameters of stage s (`dist.stage = s`, or s in `dist.tied_stages`;
    a parameter no stage reads stays on stage 0): the other stages'
    per-parameter ops (those with a `param` symbol: `triax.adamw`,
    `triax.get_grad`, ...) are erased and their gradients leave
    `triax.global_norm`, which becomes `partial over @mesh [.., "pp", ..]`
    (pp inserted in mesh order) with each operand's `replicas` multiplied
    by its number of stages (2 for a tied embedding), so the norm and the
    clipping are the same on every stage. A tied parameter's gradient
    buffer holds this stage's part: right after its `triax.get_grad` the
    parts are exchanged pairwise with each other tied stage over `["pp"]`
    (the lower stage sends then receives, the higher receives then sends:
    deadlock-free with blocking send/recv), tagged 2·m·w + i (above every
    schedule tag; w values per boundary, i the tied parameter's index),
    and summed with `triax.add` in stage order, the first stage's part on
    the left on every rank, so the copies get bitwise the same update; the
    norm and `triax.adamw` read the sum.
    ```mlir
    func.func @optimizer_step(%lr: f32, %step: i64, %scale: f32) -> f32 {
      %s = dist.axis_index @mesh ["pp"] : index
      %r = scf.index_switch %s -> f32
      case 0 {
        %w = triax.get_grad @wte.weight : tensor<256x64xf32>
        dist.send %w over @mesh ["pp"] to 1 tag 8 : tensor<256x64xf32>
        %p = dist.recv over @mesh ["pp"] from 1 tag 8 : tensor<256x64xf32>
        %sum = triax.add %w, %p : tensor<256x64xf32>
        %g = triax.get_grad @wpe.weight : tensor<64x64xf32>
        ...
        %n = triax.global_norm %sum, %g, ... partial over @mesh ["pp"] replicas [2, 1, ...] : ...
        ...
        triax.adamw @wte.weight, %sum, lr %lr, step %step, scale %c {...} : tensor<256x64xf32>
        ...
        scf.yield %norm : f32
      }
      case 1 {
        %w = triax.get_grad @wte.weight : tensor<256x64xf32>
        %p = dist.recv over @mesh ["pp"] from 0 tag 8 : tensor<256x64xf32>
        dist.send %w over @mesh ["pp"] to 0 tag 8 : tensor<256x64xf32>
        %sum = triax.add %p, %w : tensor<256x64xf32>
        ...
      }
      default { ... }
      return %r : f32
    }
    ```
    `dist-data-parallel` and `dist-zero{stage=1}` then work inside each
    case.

    Errors: `pp` (times `virtual-stages`) larger than the number of
    blocks; `stage-layers` with a count != pp (x `virtual-stages`), a zero
    entry, or not summing to the number of blocks; an unknown schedule;
    `virtual-stages` other than 1 without `interleaved`, or below 2 with
    it; `carry-gathered` without `zb-h1`; `microbatches` < `pp` with
    `1f1b` or `zb-h1`, not a multiple of `pp` with `interleaved`, other
    than the training config's, or
    a batch it does not divide; no `@forward_backward` or
    `@optimizer_step`; a model already data-parallel (`dist-data-parallel`
    or `dist-zero` ran: they run after this pass); a mesh
    without the `pp-axis` axis or of another size (the mesh is found or
    created as by `dist-data-parallel`); a value crossing more than one
    stage boundary. The pass ends by running the `dist-verify-schedule`
    check on the schedule it built.

    After `dist-pipeline{pp=2 microbatches=2 schedule=gpipe}` (abridged):
    ```mlir
    dist.mesh @mesh <["pp"=2]>
    triax.param @h.0.ln_1.weight : tensor<64xf32> init <ones> {dist.stage = 0 : i64}
    func.func @stage0_forward(%tokens: tensor<8x64xi32>) -> (tensor<8x64x64xf32>, ...)
    func.func @stage1_backward(...) -> tensor<8x64x64xf32>
    func.func @pipeline_step(%tokens: tensor<16x64xi32>, %targets: tensor<16x64xi32>) -> f32 {
      %stage = dist.axis_index @mesh ["pp"] : index
      %loss = scf.index_switch %stage -> f32
      case 0 {
        %t0 = tensor.extract_slice %tokens[0, 0] [8, 64] [1, 1] : tensor<16x64xi32> to tensor<8x64xi32>
        %f0:11 = func.call @stage0_forward(%t0) : ...
        dist.send %f0#0 over @mesh ["pp"] to 1 tag 0 : tensor<8x64x64xf32>
        ...
        %g0 = dist.recv over @mesh ["pp"] from 1 tag 1 : tensor<8x64x64xf32>
        func.call @stage0_backward(%t0, %f0#1, ..., %g0) : ...
        ...
      }
      case 1 { ... }
      default { ... }
      return %loss : f32
    }
    ```
  }];
  let options = [
    Option<"pp", "pp", "int64_t", /*default=*/"0",
           "Number of stages (size of the pp axis; 0: take it from the "
           "module's mesh)">,
    Option<"ppAxis", "pp-axis", "std::string", /*default=*/"\"pp\"",
           "The mesh axis the stages are laid out along">,
    Option<"microbatches", "microbatches", "int64_t", /*default=*/"0",
           "Micro-batches per step on each dp rank (each of "
           "@forward_backward's batch); 0: the training config's "
           "global_batch / (micro_batch x dp), which any other value must "
           "equal">,
    Option<"dpAxis", "dp-axis", "std::string", /*default=*/"\"dp\"",
           "The data-parallel mesh axis (its size divides the accumulation)">,
    Option<"schedule", "schedule", "std::string", /*default=*/"\"1f1b\"",
           "gpipe, 1f1b, interleaved or zb-h1">,
    Option<"virtualStages", "virtual-stages", "int64_t", /*default=*/"1",
           "Model chunks per rank (interleaved: >= 2; the others: 1)">,
    Option<"stageLayers", "stage-layers", "std::string", /*default=*/"\"\"",
           "Blocks per stage, comma-separated (empty: balance by FLOPs)">,
    Option<"carryGathered", "carry-gathered", "bool", /*default=*/"false",
           "zb-h1: B hands W the tensors it all-gathered that W reads too "
           "(sequence parallelism's) instead of W gathering them again from "
           "their shards: t times the bytes between B and W, fewer "
           "all_gathers">
  ];
  let dependentDialects = ["::mlir::dist::DistDialect",
                           "::mlir::func::FuncDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::tensor::TensorDialect",
                           "::mlir::arith::ArithDialect"];
}

def DistVerifySchedule : Pass<"dist-verify-schedule", "::mlir::ModuleOp"> {
  let summary = "Prove that a pipeline schedule's sends and recvs match "
                "and cannot deadlock";
  let description = [{
    For every `scf.index_switch` on a `dist.axis_index @mesh [axis]`, case
    k (or the default region when there is no case k) is the program of
    the device at coordinate k, for k in 0 .. size(axis)-1. Its
    `dist.send`/`dist.recv` over `[axis]`, in program order, are executed
    symbolically with blocking (rendezvous) semantics, whatever the
    buffering of the runtime: a send to j completes only together with j's
    recv from this device with the same tag, and the types must be equal.
    All devices advance while some pair can; when none can and some device
    has not finished, the schedule can deadlock and the pass fails with an
    error at a blocked op naming the op it is blocked on (a note at it). A
    send or recv nested in other control flow inside a case is rejected,
    as are a peer outside the axis and a send left without a recv.
    `@pipeline_step` and the per-stage `@optimizer_step` (the tied
    gradients' exchange) are both such switches and both checked.

    A crossed pair (stage 0 sends tag 0 then tag 2, stage 1 receives tag 2
    then tag 0) is rejected:
    ```
    error: dist-verify-schedule: deadlock: stage 0 blocks in this send
      (send to stage 1 with tag 0), while stage 1 waits in a recv from
      stage 0 with tag 2
    note: stage 1 waits in this recv
    ```
  }];
  let dependentDialects = ["::mlir::dist::DistDialect"];
}

#endif // TRIAX_DIALECT_DIST_TRANSFORMS_PASSES_TD
