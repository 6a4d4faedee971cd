// LLaMA-2 style: RMSNorm, SwiGLU, no biases, untied head, grouped-query
// attention when --kv-heads is given.
// RUN: triax-model llama2-7b --layers 1 --kv-heads 8 | triax-opt | FileCheck %s

// CHECK-LABEL: triax.model @"llama2-7b"
// CHECK: triax.param @model.embed_tokens.weight : tensor<32000x4096xf32>
// CHECK-NOT: bias
// CHECK: triax.param @model.layers.0.self_attn.k_proj.weight : tensor<4096x1024xf32>
// CHECK: triax.param @model.layers.0.mlp.gate_proj.weight : tensor<4096x11008xf32>
// CHECK: triax.param @model.layers.0.mlp.down_proj.weight : tensor<11008x4096xf32>
// CHECK: triax.param @lm_head.weight : tensor<4096x32000xf32>
// CHECK-NOT: triax.position_ids
// CHECK: triax.rms_norm
// CHECK: triax.attention %{{.*}}, %{{.*}}, %{{.*}} heads = 32 kv_heads = 8 : (tensor<1x4096x4096xf32>, tensor<1x4096x1024xf32>, tensor<1x4096x1024xf32>) -> tensor<1x4096x4096xf32>
// CHECK: %[[GATE:.*]] = triax.linear {{.*}} -> tensor<1x4096x11008xf32>
// CHECK: %[[UP:.*]] = triax.linear {{.*}} -> tensor<1x4096x11008xf32>
// CHECK: %[[S:.*]] = triax.silu %[[GATE]]
// CHECK: triax.mul %[[S]], %[[UP]]
// CHECK: triax.linear {{.*}}, %{{.*}} : (tensor<1x4096x4096xf32>, tensor<4096x32000xf32>) -> tensor<1x4096x32000xf32>
