// Found by triax-fuzz: triax-autodiff on an attention whose keys are a
// constant read freed memory (ASan: heap-use-after-free; a crash or a wrong
// program without it). One triax.attention_grad computes the query, key and
// value gradients; for the constant key, autodiff erased it as dead before
// the value's gradient was taken from it and added to the query's.
// RUN: triax-opt --triax-autodiff %s | FileCheck %s
// CHECK-LABEL: func.func @forward_backward
// CHECK: %[[DQ:[a-z_0-9]+]], %{{[a-z_0-9]+}}, %[[DV:[a-z_0-9]+]] = triax.attention_grad
// CHECK: %[[DX:.*]] = triax.add %[[DQ]], %[[DV]]
// CHECK: triax.embedding_grad %{{.*}}, %[[DX]] :

triax.model @m config = #triax.train_config<micro_batch = 1, seq = 4> {
  triax.param @emb : tensor<4x2xf32> init <normal, std = 0.02>
  func.func @forward(%tokens: tensor<1x4xi32>, %targets: tensor<1x4xi32>) -> tensor<f32> {
    %emb = triax.get_param @emb : tensor<4x2xf32>
    %x = triax.embedding %tokens, %emb : (tensor<1x4xi32>, tensor<4x2xf32>) -> tensor<1x4x2xf32>
    %k = arith.constant dense<1.0> : tensor<1x4x2xf32>
    %a = triax.attention %x, %k, %x heads = 1 : (tensor<1x4x2xf32>, tensor<1x4x2xf32>, tensor<1x4x2xf32>) -> tensor<1x4x2xf32>
    %logits = triax.linear %a, %emb {transpose_weight} : (tensor<1x4x2xf32>, tensor<4x2xf32>) -> tensor<1x4x4xf32>
    %loss = triax.cross_entropy %logits, %targets : (tensor<1x4x4xf32>, tensor<1x4xi32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}
