// The generated gpt2 round-trips through triax-opt, and one block has the
// published GPT-2 shapes (hidden 768, 12 heads, MLP 3072, vocab 50257).
// RUN: triax-model gpt2 | triax-opt | triax-opt | FileCheck %s

// CHECK-LABEL: triax.model @gpt2
// CHECK-SAME: global_batch = 8, micro_batch = 8, seq = 1024, compute = f32, master = f32
// CHECK: triax.param @wte.weight : tensor<50257x768xf32> init <normal, std = 0.02> decay
// CHECK: triax.param @wpe.weight : tensor<1024x768xf32> init <normal, std = 0.01> decay
// CHECK: triax.param @h.0.ln_1.weight : tensor<768xf32> init <ones>
// CHECK: triax.param @h.0.ln_1.bias : tensor<768xf32> init <zeros>
// Checkpoints store q, k and v as HF GPT-2's fused c_attn.
// CHECK: triax.param @h.0.attn.q.weight : tensor<768x768xf32> init <normal, std = 0.02> decay {triax.checkpoint_name = "h.0.attn.c_attn.weight"}
// CHECK: triax.param @h.0.attn.q.bias : tensor<768xf32> init <zeros> {triax.checkpoint_name = "h.0.attn.c_attn.bias"}
// CHECK: triax.param @h.0.attn.k.weight : tensor<768x768xf32>
// CHECK: triax.param @h.0.attn.v.weight : tensor<768x768xf32>
// Residual projections are scaled by 1/sqrt(2 * 12 layers).
// CHECK: triax.param @h.0.attn.c_proj.weight : tensor<768x768xf32> init <normal, std = 0.0040824829046386
// CHECK: triax.param @h.0.mlp.c_fc.weight : tensor<768x3072xf32>
// CHECK: triax.param @h.0.mlp.c_proj.weight : tensor<3072x768xf32>
// CHECK: triax.param @h.11.mlp.c_proj.bias : tensor<768xf32> init <zeros>
// CHECK: triax.param @ln_f.bias : tensor<768xf32>
// CHECK-NOT: triax.param

// CHECK-LABEL: func.func @forward
// CHECK-SAME: (%[[TOK:.*]]: tensor<8x1024xi32>, %[[TGT:.*]]: tensor<8x1024xi32>) -> tensor<f32>
// CHECK: %[[WTE:.*]] = triax.get_param @wte.weight : tensor<50257x768xf32>
// CHECK: triax.embedding %[[TOK]], %[[WTE]] : (tensor<8x1024xi32>, tensor<50257x768xf32>) -> tensor<8x1024x768xf32>
// CHECK: triax.position_ids : tensor<8x1024xi32>
// CHECK: %[[X0:.*]] = triax.add
// CHECK: triax.block "h.0"(%[[X0]]) : (tensor<8x1024x768xf32>) -> tensor<8x1024x768xf32> {
// CHECK-NEXT: ^bb0(%[[IN:.*]]: tensor<8x1024x768xf32>):
// CHECK: %[[LN1:.*]] = triax.layer_norm %[[IN]]
// CHECK: %[[Q:.*]] = triax.linear %[[LN1]], {{.*}} : (tensor<8x1024x768xf32>, tensor<768x768xf32>, tensor<768xf32>) -> tensor<8x1024x768xf32>
// CHECK: %[[K:.*]] = triax.linear %[[LN1]]
// CHECK: %[[V:.*]] = triax.linear %[[LN1]]
// CHECK: %[[A:.*]] = triax.attention %[[Q]], %[[K]], %[[V]] heads = 12 :
// CHECK: %[[O:.*]] = triax.linear %[[A]]
// CHECK: %[[R1:.*]] = triax.add %[[IN]], %[[O]]
// CHECK: %[[LN2:.*]] = triax.layer_norm %[[R1]]
// CHECK: %[[FC:.*]] = triax.linear %[[LN2]], {{.*}} -> tensor<8x1024x3072xf32>
// CHECK: %[[G:.*]] = triax.gelu %[[FC]] : tensor<8x1024x3072xf32>
// CHECK: %[[P:.*]] = triax.linear %[[G]], {{.*}} -> tensor<8x1024x768xf32>
// CHECK: %[[R2:.*]] = triax.add %[[R1]], %[[P]]
// CHECK: triax.yield %[[R2]] : tensor<8x1024x768xf32>
// CHECK: triax.block "h.11"
// CHECK: triax.yield
// CHECK: %[[HF:.*]] = triax.layer_norm
// The LM head is tied: it reads wte as [out, in].
// CHECK: %[[LOGITS:.*]] = triax.linear %[[HF]], %[[WTE]] {transpose_weight} : (tensor<8x1024x768xf32>, tensor<50257x768xf32>) -> tensor<8x1024x50257xf32>
// CHECK: triax.cross_entropy %[[LOGITS]], %[[TGT]] : (tensor<8x1024x50257xf32>, tensor<8x1024xi32>) -> tensor<f32>
