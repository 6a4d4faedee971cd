// Gradient check of rope: the compiled backward (the inverse rotation of
// the result's gradient) against central finite differences of the
// compiled forward, every parameter, 3 directions each (f32; tolerance
// 1e-2 relative, see --gradcheck in runtime/README.md). The rotation feeds
// a linear so that the loss sees each rotated pair; theta 100 makes the
// 8 positions turn the pairs by up to 7 radians.
// RUN: triaxc %s -o %t && %t --gradcheck 3 | FileCheck %s
// CHECK: gradcheck: 0 of {{[0-9]+}} tensors over tolerance
triax.model @rope config = #triax.train_config<micro_batch = 2, seq = 8, grad_clip = 0.0> {
  triax.param @wte : tensor<256x16xf32> init <normal, std = 0.5> decay
  triax.param @w : tensor<16x16xf32> init <normal, std = 0.5> decay
  func.func @forward(%tokens: tensor<2x8xi32>, %targets: tensor<2x8xi32>) -> tensor<f32> {
    %wte = triax.get_param @wte : tensor<256x16xf32>
    %x = triax.embedding %tokens, %wte : (tensor<2x8xi32>, tensor<256x16xf32>) -> tensor<2x8x16xf32>
    %p = triax.position_ids : tensor<2x8xi32>
    %r = triax.rope %x, %p heads = 2 {theta = 100.0 : f64} : (tensor<2x8x16xf32>, tensor<2x8xi32>) -> tensor<2x8x16xf32>
    %w = triax.get_param @w : tensor<16x16xf32>
    %y = triax.linear %r, %w : (tensor<2x8x16xf32>, tensor<16x16xf32>) -> tensor<2x8x16xf32>
    %logits = triax.linear %y, %wte {transpose_weight} : (tensor<2x8x16xf32>, tensor<256x16xf32>) -> tensor<2x8x256xf32>
    %loss = triax.cross_entropy %logits, %targets : (tensor<2x8x256xf32>, tensor<2x8xi32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}
