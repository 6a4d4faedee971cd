// dist-tensor-parallel on a one-block GPT (triax-model tiny --layers 1
// --hidden 8 --heads 4 --ffn 32 --vocab 16 --seq 4 --batch 2): Megatron's
// column/row splits of attention and MLP, the vocab-parallel embedding and
// loss, and the backward collectives triax-autodiff derives from them.
// RUN: triax-opt %s --dist-tensor-parallel=tp=2 | FileCheck %s
// RUN: triax-opt %s --dist-tensor-parallel=tp=2 --triax-autodiff | FileCheck %s --check-prefix=AD
// An existing mesh with the axis is used as it is (tp-axis names it):
// RUN: sed 's/^\/\/ MESH: //' %s | triax-opt --dist-tensor-parallel=tp-axis=model | FileCheck %s --check-prefix=EXISTING

// Split parameters: the declaration keeps the global type and says how it
// is split; norms, wpe and the row-split biases stay replicated.
// CHECK: dist.mesh @mesh <["tp"=2]>
// CHECK: triax.param @wte.weight : tensor<16x8xf32> {{.*}} {dist.sharding = #dist.sharding<@mesh, [{"tp"}, {}]>}
// CHECK: triax.param @wpe.weight : tensor<4x8xf32> init <normal, std = 0.01> decay{{$}}
// CHECK: triax.param @h.0.ln_1.weight : tensor<8xf32> init <ones>{{$}}
// CHECK: triax.param @h.0.attn.q.weight : tensor<8x8xf32> {{.*}} {dist.sharding = #dist.sharding<@mesh, [{}, {"tp"}]>}
// CHECK: triax.param @h.0.attn.q.bias : tensor<8xf32> {{.*}} {dist.sharding = #dist.sharding<@mesh, [{"tp"}]>}
// CHECK: triax.param @h.0.attn.k.weight : {{.*}} {dist.sharding = #dist.sharding<@mesh, [{}, {"tp"}]>}
// CHECK: triax.param @h.0.attn.v.weight : {{.*}} {dist.sharding = #dist.sharding<@mesh, [{}, {"tp"}]>}
// CHECK: triax.param @h.0.attn.c_proj.weight : tensor<8x8xf32> {{.*}} {dist.sharding = #dist.sharding<@mesh, [{"tp"}, {}]>}
// CHECK: triax.param @h.0.attn.c_proj.bias : tensor<8xf32> init <zeros>{{$}}
// CHECK: triax.param @h.0.mlp.c_fc.weight : tensor<8x32xf32> {{.*}} {dist.sharding = #dist.sharding<@mesh, [{}, {"tp"}]>}
// CHECK: triax.param @h.0.mlp.c_fc.bias : tensor<32xf32> {{.*}} {dist.sharding = #dist.sharding<@mesh, [{"tp"}]>}
// CHECK: triax.param @h.0.mlp.c_proj.weight : tensor<32x8xf32> {{.*}} {dist.sharding = #dist.sharding<@mesh, [{"tp"}, {}]>}
// CHECK: triax.param @h.0.mlp.c_proj.bias : tensor<8xf32> init <zeros>{{$}}
// CHECK: triax.param @ln_f.weight : tensor<8xf32> init <ones>{{$}}

// Vocab-parallel token embedding: local rows, then the sum over tp.
// CHECK-LABEL: func.func @forward(
// CHECK: %[[WTE:.*]] = triax.get_param @wte.weight : tensor<8x8xf32>
// CHECK: %[[EMB:.*]] = triax.embedding %{{.*}}, %[[WTE]] vocab_parallel over @mesh ["tp"] : (tensor<2x4xi32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
// CHECK-NEXT: %[[X:.*]] = dist.all_reduce sum %[[EMB]] over @mesh ["tp"] : tensor<2x4x8xf32>
// The position embedding is replicated.
// CHECK: triax.embedding %{{.*}}, %{{.*}} : (tensor<2x4xi32>, tensor<4x8xf32>) -> tensor<2x4x8xf32>
// CHECK: triax.add %[[X]], %{{.*}} : tensor<2x4x8xf32>

// Attention: q, k, v column-split from one copy_to_group of the normalized
// input, heads halved, c_proj row-split, all_reduce, then its bias.
// CHECK: triax.block "h.0"
// CHECK: %[[LN1:.*]] = triax.layer_norm
// CHECK: %[[WQ:.*]] = triax.get_param @h.0.attn.q.weight : tensor<8x4xf32>
// CHECK: %[[BQ:.*]] = triax.get_param @h.0.attn.q.bias : tensor<4xf32>
// CHECK: %[[C1:.*]] = dist.copy_to_group %[[LN1]] over @mesh ["tp"] : tensor<2x4x8xf32>
// CHECK-NEXT: %[[Q:.*]] = triax.linear %[[C1]], %[[WQ]], %[[BQ]] : (tensor<2x4x8xf32>, tensor<8x4xf32>, tensor<4xf32>) -> tensor<2x4x4xf32>
// CHECK: %[[K:.*]] = triax.linear %[[C1]], %{{.*}}, %{{.*}} : (tensor<2x4x8xf32>, tensor<8x4xf32>, tensor<4xf32>) -> tensor<2x4x4xf32>
// CHECK: %[[V:.*]] = triax.linear %[[C1]], %{{.*}}, %{{.*}} : (tensor<2x4x8xf32>, tensor<8x4xf32>, tensor<4xf32>) -> tensor<2x4x4xf32>
// CHECK-NEXT: %[[A:.*]] = triax.attention %[[Q]], %[[K]], %[[V]] heads = 2 : (tensor<2x4x4xf32>, tensor<2x4x4xf32>, tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
// CHECK-NEXT: %[[WO:.*]] = triax.get_param @h.0.attn.c_proj.weight : tensor<4x8xf32>
// CHECK-NEXT: %[[BO:.*]] = triax.get_param @h.0.attn.c_proj.bias : tensor<8xf32>
// CHECK-NEXT: %[[O:.*]] = triax.linear %[[A]], %[[WO]] : (tensor<2x4x4xf32>, tensor<4x8xf32>) -> tensor<2x4x8xf32>
// CHECK-NEXT: %[[OS:.*]] = dist.all_reduce sum %[[O]] over @mesh ["tp"] : tensor<2x4x8xf32>
// CHECK-NEXT: %[[OB:.*]] = triax.bias_add %[[OS]], %[[BO]] : tensor<2x4x8xf32>, tensor<8xf32>
// CHECK-NEXT: %[[R:.*]] = triax.add %{{.*}}, %[[OB]] : tensor<2x4x8xf32>

// MLP: c_fc column-split, gelu on the local columns, c_proj row-split.
// CHECK: %[[LN2:.*]] = triax.layer_norm %[[R]]
// CHECK: %[[W1:.*]] = triax.get_param @h.0.mlp.c_fc.weight : tensor<8x16xf32>
// CHECK: %[[B1:.*]] = triax.get_param @h.0.mlp.c_fc.bias : tensor<16xf32>
// CHECK: %[[C2:.*]] = dist.copy_to_group %[[LN2]] over @mesh ["tp"] : tensor<2x4x8xf32>
// CHECK-NEXT: %[[H:.*]] = triax.linear %[[C2]], %[[W1]], %[[B1]] : (tensor<2x4x8xf32>, tensor<8x16xf32>, tensor<16xf32>) -> tensor<2x4x16xf32>
// CHECK-NEXT: %[[G:.*]] = triax.gelu %[[H]] : tensor<2x4x16xf32>
// CHECK-NEXT: %[[W2:.*]] = triax.get_param @h.0.mlp.c_proj.weight : tensor<16x8xf32>
// CHECK-NEXT: %[[B2:.*]] = triax.get_param @h.0.mlp.c_proj.bias : tensor<8xf32>
// CHECK-NEXT: %[[P:.*]] = triax.linear %[[G]], %[[W2]] : (tensor<2x4x16xf32>, tensor<16x8xf32>) -> tensor<2x4x8xf32>
// CHECK-NEXT: %[[PS:.*]] = dist.all_reduce sum %[[P]] over @mesh ["tp"] : tensor<2x4x8xf32>
// CHECK-NEXT: %[[PB:.*]] = triax.bias_add %[[PS]], %[[B2]] : tensor<2x4x8xf32>, tensor<8xf32>
// CHECK-NEXT: triax.add %[[R]], %[[PB]] : tensor<2x4x8xf32>

// The tied head: local logits from the replicated hidden states, and a
// vocab-parallel loss (no gather of the logits).
// CHECK: %[[LNF:.*]] = triax.layer_norm
// CHECK-NEXT: %[[C3:.*]] = dist.copy_to_group %[[LNF]] over @mesh ["tp"] : tensor<2x4x8xf32>
// CHECK-NEXT: %[[LOGITS:.*]] = triax.linear %[[C3]], %[[WTE]] {transpose_weight} : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
// CHECK-NEXT: %[[LOSS:.*]] = triax.cross_entropy %[[LOGITS]], %{{.*}} vocab_parallel over @mesh ["tp"] : (tensor<2x4x8xf32>, tensor<2x4xi32>) -> tensor<f32>
// CHECK-NEXT: return %[[LOSS]]
// CHECK-NOT: dist.

// After autodiff: the forward collectives are kept in @forward_backward, and
// each copy_to_group's VJP sums the gradient of its input over tp where that
// gradient is produced (the all_reduce's VJP adds nothing).
// AD-LABEL: func.func @forward_backward(
// AD: dist.all_reduce sum
// AD: triax.block "h.0"
// AD: %[[C1:.*]] = dist.copy_to_group
// AD: dist.all_reduce sum
// AD: dist.copy_to_group
// AD: dist.all_reduce sum
// AD: triax.yield
// AD: %[[HC:.*]] = dist.copy_to_group
// AD: %[[LOGITS:.*]] = triax.linear %[[HC]], %[[WTE:.*]] {transpose_weight}
// The loss gradient on the local logits, with the global softmax.
// AD: %[[DL:.*]] = triax.cross_entropy_grad %[[LOGITS]], %{{.*}}, %{{.*}} vocab_parallel over @mesh ["tp"] : (tensor<2x4x8xf32>, tensor<2x4xi32>, tensor<f32>) -> tensor<2x4x8xf32>
// AD-NEXT: %[[DH:.*]] = triax.linear %[[DL]], %[[WTE]] : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
// AD-NEXT: triax.linear_weight_grad %[[HC]], %[[DL]] {transpose_weight} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<8x8xf32>
// The head's input gradient is partial on each rank: summed over tp (f's VJP).
// AD-NEXT: %[[DHS:.*]] = dist.all_reduce sum %[[DH]] over @mesh ["tp"] : tensor<2x4x8xf32>
// AD-NEXT: triax.layer_norm_grad %{{.*}}, %{{.*}}, %[[DHS]]
// In the block's backward: the MLP input gradient, then attention's (the
// three column linears' input gradients added before the one sum).
// AD: triax.block "h.0.grad"
// AD: %[[DFC:.*]] = triax.linear %{{.*}}, %{{.*}} {transpose_weight} : (tensor<2x4x16xf32>, tensor<8x16xf32>) -> tensor<2x4x8xf32>
// AD: %[[DFCS:.*]] = dist.all_reduce sum %[[DFC]] over @mesh ["tp"] : tensor<2x4x8xf32>
// AD-NEXT: triax.layer_norm_grad %{{.*}}, %{{.*}}, %[[DFCS]]
// AD: triax.attention_grad {{.*}} heads = 2 :
// AD: triax.add
// AD: %[[DQKV:.*]] = triax.add
// AD-NEXT: %[[DQKVS:.*]] = dist.all_reduce sum %[[DQKV]] over @mesh ["tp"] : tensor<2x4x8xf32>
// AD-NEXT: triax.layer_norm_grad %{{.*}}, %{{.*}}, %[[DQKVS]]
// AD: triax.yield
// Gradients and optimizer state have the local shapes.
// AD: triax.accumulate_grad @h.0.attn.q.weight, %{{.*}} : tensor<8x4xf32>
// AD: triax.accumulate_grad @h.0.attn.c_proj.weight, %{{.*}} : tensor<4x8xf32>
// AD: triax.accumulate_grad @h.0.attn.c_proj.bias, %{{.*}} : tensor<8xf32>
// AD: triax.accumulate_grad @h.0.mlp.c_fc.weight, %{{.*}} : tensor<8x16xf32>
// The token embedding's gradient covers this rank's rows only.
// AD: triax.embedding_grad %{{.*}}, %{{.*}} vocab_parallel over @mesh ["tp"] : (tensor<2x4xi32>, tensor<2x4x8xf32>) -> tensor<8x8xf32>
// AD: triax.accumulate_grad @wte.weight, %{{.*}} : tensor<8x8xf32>
// AD-LABEL: func.func @optimizer_step(
// AD: triax.get_grad @wte.weight : tensor<8x8xf32>
// AD: triax.get_grad @h.0.mlp.c_proj.weight : tensor<16x8xf32>
// The gradient norm sums the squares over tp; a gradient every tp rank
// holds whole (wpe, norms, row-split biases) counts once (replicas 2).
// AD: triax.global_norm {{.*}} partial over @mesh ["tp"] replicas [1, 2, 2, 2, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2] :
// AD: triax.adamw @wte.weight, %{{.*}} : tensor<8x8xf32>

// EXISTING: dist.mesh @cluster <["dp"=2, "model"=2]>
// EXISTING: triax.param @wte.weight : {{.*}} {dist.sharding = #dist.sharding<@cluster, [{"model"}, {}]>}
// EXISTING: triax.embedding %{{.*}}, %{{.*}} vocab_parallel over @cluster ["model"] : (tensor<2x4xi32>, tensor<8x8xf32>)
// EXISTING: dist.copy_to_group %{{.*}} over @cluster ["model"]

module {
// MESH: dist.mesh @cluster <["dp"=2, "model"=2]>
  triax.model @tiny config = #triax.train_config<optimizer = adamw, lr = 0.002, beta1 = 0.9, beta2 = 0.95, eps = 1.0e-08, weight_decay = 0.1, grad_clip = 1.0, global_batch = 2, micro_batch = 2, seq = 4, compute = f32, master = f32> {
    triax.param @wte.weight : tensor<16x8xf32> init <normal, std = 0.02> decay
    triax.param @wpe.weight : tensor<4x8xf32> init <normal, std = 0.01> decay
    triax.param @h.0.ln_1.weight : tensor<8xf32> init <ones>
    triax.param @h.0.ln_1.bias : tensor<8xf32> init <zeros>
    triax.param @h.0.attn.q.weight : tensor<8x8xf32> init <normal, std = 0.02> decay
    triax.param @h.0.attn.q.bias : tensor<8xf32> init <zeros>
    triax.param @h.0.attn.k.weight : tensor<8x8xf32> init <normal, std = 0.02> decay
    triax.param @h.0.attn.k.bias : tensor<8xf32> init <zeros>
    triax.param @h.0.attn.v.weight : tensor<8x8xf32> init <normal, std = 0.02> decay
    triax.param @h.0.attn.v.bias : tensor<8xf32> init <zeros>
    triax.param @h.0.attn.c_proj.weight : tensor<8x8xf32> init <normal, std = 0.014142135623730949> decay
    triax.param @h.0.attn.c_proj.bias : tensor<8xf32> init <zeros>
    triax.param @h.0.ln_2.weight : tensor<8xf32> init <ones>
    triax.param @h.0.ln_2.bias : tensor<8xf32> init <zeros>
    triax.param @h.0.mlp.c_fc.weight : tensor<8x32xf32> init <normal, std = 0.02> decay
    triax.param @h.0.mlp.c_fc.bias : tensor<32xf32> init <zeros>
    triax.param @h.0.mlp.c_proj.weight : tensor<32x8xf32> init <normal, std = 0.014142135623730949> decay
    triax.param @h.0.mlp.c_proj.bias : tensor<8xf32> init <zeros>
    triax.param @ln_f.weight : tensor<8xf32> init <ones>
    triax.param @ln_f.bias : tensor<8xf32> init <zeros>
    func.func @forward(%arg0: tensor<2x4xi32>, %arg1: tensor<2x4xi32>) -> tensor<f32> {
      %0 = triax.get_param @wte.weight : tensor<16x8xf32>
      %1 = triax.embedding %arg0, %0 : (tensor<2x4xi32>, tensor<16x8xf32>) -> tensor<2x4x8xf32>
      %2 = triax.get_param @wpe.weight : tensor<4x8xf32>
      %3 = triax.position_ids : tensor<2x4xi32>
      %4 = triax.embedding %3, %2 : (tensor<2x4xi32>, tensor<4x8xf32>) -> tensor<2x4x8xf32>
      %5 = triax.add %1, %4 : tensor<2x4x8xf32>
      %6 = triax.block "h.0"(%5) : (tensor<2x4x8xf32>) -> tensor<2x4x8xf32> {
      ^bb0(%arg2: tensor<2x4x8xf32>):
        %12 = triax.get_param @h.0.ln_1.weight : tensor<8xf32>
        %13 = triax.get_param @h.0.ln_1.bias : tensor<8xf32>
        %14 = triax.layer_norm %arg2, %12, %13 : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
        %15 = triax.get_param @h.0.attn.q.weight : tensor<8x8xf32>
        %16 = triax.get_param @h.0.attn.q.bias : tensor<8xf32>
        %17 = triax.linear %14, %15, %16 : (tensor<2x4x8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
        %18 = triax.get_param @h.0.attn.k.weight : tensor<8x8xf32>
        %19 = triax.get_param @h.0.attn.k.bias : tensor<8xf32>
        %20 = triax.linear %14, %18, %19 : (tensor<2x4x8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
        %21 = triax.get_param @h.0.attn.v.weight : tensor<8x8xf32>
        %22 = triax.get_param @h.0.attn.v.bias : tensor<8xf32>
        %23 = triax.linear %14, %21, %22 : (tensor<2x4x8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
        %24 = triax.attention %17, %20, %23 heads = 4 : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
        %25 = triax.get_param @h.0.attn.c_proj.weight : tensor<8x8xf32>
        %26 = triax.get_param @h.0.attn.c_proj.bias : tensor<8xf32>
        %27 = triax.linear %24, %25, %26 : (tensor<2x4x8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
        %28 = triax.add %arg2, %27 : tensor<2x4x8xf32>
        %29 = triax.get_param @h.0.ln_2.weight : tensor<8xf32>
        %30 = triax.get_param @h.0.ln_2.bias : tensor<8xf32>
        %31 = triax.layer_norm %28, %29, %30 : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
        %32 = triax.get_param @h.0.mlp.c_fc.weight : tensor<8x32xf32>
        %33 = triax.get_param @h.0.mlp.c_fc.bias : tensor<32xf32>
        %34 = triax.linear %31, %32, %33 : (tensor<2x4x8xf32>, tensor<8x32xf32>, tensor<32xf32>) -> tensor<2x4x32xf32>
        %35 = triax.gelu %34 : tensor<2x4x32xf32>
        %36 = triax.get_param @h.0.mlp.c_proj.weight : tensor<32x8xf32>
        %37 = triax.get_param @h.0.mlp.c_proj.bias : tensor<8xf32>
        %38 = triax.linear %35, %36, %37 : (tensor<2x4x32xf32>, tensor<32x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
        %39 = triax.add %28, %38 : tensor<2x4x8xf32>
        triax.yield %39 : tensor<2x4x8xf32>
      }
      %7 = triax.get_param @ln_f.weight : tensor<8xf32>
      %8 = triax.get_param @ln_f.bias : tensor<8xf32>
      %9 = triax.layer_norm %6, %7, %8 : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
      %10 = triax.linear %9, %0 {transpose_weight} : (tensor<2x4x8xf32>, tensor<16x8xf32>) -> tensor<2x4x16xf32>
      %11 = triax.cross_entropy %10, %arg1 : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> tensor<f32>
      return %11 : tensor<f32>
    }
  }
}
