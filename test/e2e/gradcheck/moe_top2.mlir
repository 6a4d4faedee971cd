// Gradient check of a mixture-of-experts layer, Mixtral-style: top-2 of 4
// experts with the gates renormalized over the two, a capacity of 5 rows
// per expert and sequence (second choices drop), the load-balancing loss
// (weight 0.5) added to the loss. See moe_top1.mlir.
// RUN: triaxc %s -o %t && %t --gradcheck 3 | FileCheck %s
// CHECK: gradcheck: 0 of 4 tensors over tolerance
triax.model @moe_top2 config = #triax.train_config<micro_batch = 2, seq = 8, grad_clip = 0.0> {
  triax.param @wte : tensor<256x16xf32> init <normal, std = 1.0> decay
  triax.param @router : tensor<16x4xf32> init <normal, std = 1.0> decay
  triax.param @w1 : tensor<4x16x24xf32> init <normal, std = 0.3> decay
  triax.param @w2 : tensor<4x24x16xf32> init <normal, std = 0.3> decay
  func.func @forward(%tokens: tensor<2x8xi32>, %targets: tensor<2x8xi32>) -> tensor<f32> {
    %wte = triax.get_param @wte : tensor<256x16xf32>
    %x = triax.embedding %tokens, %wte : (tensor<2x8xi32>, tensor<256x16xf32>) -> tensor<2x8x16xf32>
    %wr = triax.get_param @router : tensor<16x4xf32>
    %l = triax.linear %x, %wr : (tensor<2x8x16xf32>, tensor<16x4xf32>) -> tensor<2x8x4xf32>
    %g, %e, %s, %a, %aux = triax.moe_route %l {top_k = 2, capacity = 5, aux_coeff = 0.5, renormalize} : (tensor<2x8x4xf32>) -> (tensor<2x8x2xf32>, tensor<2x8x2xi32>, tensor<2x8x2xi32>, tensor<2x20xi32>, tensor<f32>)
    %buf = triax.moe_dispatch %x, %s, %a : (tensor<2x8x16xf32>, tensor<2x8x2xi32>, tensor<2x20xi32>) -> tensor<4x10x16xf32>
    %w1 = triax.get_param @w1 : tensor<4x16x24xf32>
    %h = triax.expert_linear %buf, %w1 : (tensor<4x10x16xf32>, tensor<4x16x24xf32>) -> tensor<4x10x24xf32>
    %act = triax.gelu %h : tensor<4x10x24xf32>
    %w2 = triax.get_param @w2 : tensor<4x24x16xf32>
    %o = triax.expert_linear %act, %w2 : (tensor<4x10x24xf32>, tensor<4x24x16xf32>) -> tensor<4x10x16xf32>
    %y = triax.moe_combine %o, %s, %a gates %g : (tensor<4x10x16xf32>, tensor<2x8x2xi32>, tensor<2x20xi32>, tensor<2x8x2xf32>) -> tensor<2x8x16xf32>
    %r = triax.add %x, %y : tensor<2x8x16xf32>
    %logits = triax.linear %r, %wte {transpose_weight} : (tensor<2x8x16xf32>, tensor<256x16xf32>) -> tensor<2x8x256xf32>
    %ce = triax.cross_entropy %logits, %targets : (tensor<2x8x256xf32>, tensor<2x8xi32>) -> tensor<f32>
    %loss = triax.add %ce, %aux : tensor<f32>
    return %loss : tensor<f32>
  }
}
