// [A9] by hand with a GELU gradient that convert-triax-to-kernels computes
// in the epilogue of its upstream gradient's GEMM (gelu-epilogue, on by
// default): the linear (no bias, its only use the gelu_grad, the GELU's
// input made before it) and the gelu_grad share one buffer
// (geluGradEpilogueOf, asked by the lowering and by
// GeluGradOp::getResultStorage).
// RUN: triax-report %s | FileCheck %s
//
//   op                                   allocates  live after the op
//   %x = embedding (1 x 4 x 4 f32)       64         64
//   %a = linear %x, @w1 (1 x 4 x 16)     256        320
//   %d = linear %x, @w2 (1 x 4 x 16)     256        576 -> 512 (%x dead)
//   %dx = gelu_grad %a, %d               over %d    512 -> 256 (%a dead)
//   %y = linear %dx, @w3 (1 x 4 x 4)     64         320 -> 64 (%dx dead)
//   %l = linear %y, @emb^T (1 x 4 x 8)   128        192 -> 128
//   %loss = cross_entropy                4          132
// peak 576 (768 if the gradient had a buffer of its own: 512 + 256 at the
// gelu_grad).
// CHECK: activation peak of one micro-batch from the IR's liveness: 576  [A9]

triax.model @m config = #triax.train_config<micro_batch = 1, seq = 4> {
  triax.param @emb : tensor<8x4xf32> init <normal, std = 0.02> decay
  triax.param @w1 : tensor<4x16xf32> init <normal, std = 0.02> decay
  triax.param @w2 : tensor<4x16xf32> init <normal, std = 0.02> decay
  triax.param @w3 : tensor<16x4xf32> init <normal, std = 0.02> decay
  func.func @forward(%tokens: tensor<1x4xi32>, %targets: tensor<1x4xi32>) -> tensor<f32> {
    %emb = triax.get_param @emb : tensor<8x4xf32>
    %x = triax.embedding %tokens, %emb : (tensor<1x4xi32>, tensor<8x4xf32>) -> tensor<1x4x4xf32>
    %l = triax.linear %x, %emb {transpose_weight} : (tensor<1x4x4xf32>, tensor<8x4xf32>) -> tensor<1x4x8xf32>
    %loss = triax.cross_entropy %l, %targets : (tensor<1x4x8xf32>, tensor<1x4xi32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
  func.func @forward_backward(%tokens: tensor<1x4xi32>, %targets: tensor<1x4xi32>) -> tensor<f32> {
    %emb = triax.get_param @emb : tensor<8x4xf32>
    %w1 = triax.get_param @w1 : tensor<4x16xf32>
    %w2 = triax.get_param @w2 : tensor<4x16xf32>
    %w3 = triax.get_param @w3 : tensor<16x4xf32>
    %x = triax.embedding %tokens, %emb : (tensor<1x4xi32>, tensor<8x4xf32>) -> tensor<1x4x4xf32>
    %a = triax.linear %x, %w1 : (tensor<1x4x4xf32>, tensor<4x16xf32>) -> tensor<1x4x16xf32>
    %d = triax.linear %x, %w2 : (tensor<1x4x4xf32>, tensor<4x16xf32>) -> tensor<1x4x16xf32>
    %dx = triax.gelu_grad %a, %d : tensor<1x4x16xf32>
    %y = triax.linear %dx, %w3 : (tensor<1x4x16xf32>, tensor<16x4xf32>) -> tensor<1x4x4xf32>
    %l = triax.linear %y, %emb {transpose_weight} : (tensor<1x4x4xf32>, tensor<8x4xf32>) -> tensor<1x4x8xf32>
    %loss = triax.cross_entropy %l, %targets : (tensor<1x4x8xf32>, tensor<1x4xi32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}
