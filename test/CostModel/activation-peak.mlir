// [A9] by hand: the activation peak of @forward_backward from the IR's
// liveness (docs/cost-model.md). Every tensor an op makes is a buffer from
// that op to its last use (or its aliases': a block's argument is its
// input, its result what it yields); parameter reads are views.
// RUN: triax-report %s | FileCheck %s
//
//   op                          allocates  live after the op, its dead freed
//   get_param @emb              view       0
//   %x = embedding              64         64
//   %g = gelu %in (= %x)        64         128
//   %h = gelu %g                64         192 -> 128 (%g dead)
//   %z = add %x, %y (= %h)      64         192 -> 64 (%x, %h dead)
//   %l = linear %z              128        192 -> 128 (%z dead)
//   %loss = cross_entropy %l    4          132 -> 4
// peak 192 (1 x 4 x 4 f32 = 64 bytes, logits 1 x 4 x 8 f32 = 128).
// CHECK: activation peak of one micro-batch from the IR's liveness: 192  [A9]

triax.model @m config = #triax.train_config<micro_batch = 1, seq = 4> {
  triax.param @emb : tensor<8x4xf32> init <normal, std = 0.02> decay
  func.func @forward(%tokens: tensor<1x4xi32>, %targets: tensor<1x4xi32>) -> tensor<f32> {
    %emb = triax.get_param @emb : tensor<8x4xf32>
    %x = triax.embedding %tokens, %emb : (tensor<1x4xi32>, tensor<8x4xf32>) -> tensor<1x4x4xf32>
    %l = triax.linear %x, %emb {transpose_weight} : (tensor<1x4x4xf32>, tensor<8x4xf32>) -> tensor<1x4x8xf32>
    %loss = triax.cross_entropy %l, %targets : (tensor<1x4x8xf32>, tensor<1x4xi32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
  func.func @forward_backward(%tokens: tensor<1x4xi32>, %targets: tensor<1x4xi32>) -> tensor<f32> {
    %emb = triax.get_param @emb : tensor<8x4xf32>
    %x = triax.embedding %tokens, %emb : (tensor<1x4xi32>, tensor<8x4xf32>) -> tensor<1x4x4xf32>
    %y = triax.block "h.0"(%x) : (tensor<1x4x4xf32>) -> tensor<1x4x4xf32> {
    ^bb0(%in: tensor<1x4x4xf32>):
      %g = triax.gelu %in : tensor<1x4x4xf32>
      %h = triax.gelu %g : tensor<1x4x4xf32>
      triax.yield %h : tensor<1x4x4xf32>
    }
    %z = triax.add %x, %y : tensor<1x4x4xf32>
    %l = triax.linear %z, %emb {transpose_weight} : (tensor<1x4x4xf32>, tensor<8x4xf32>) -> tensor<1x4x8xf32>
    %loss = triax.cross_entropy %l, %targets : (tensor<1x4x8xf32>, tensor<1x4xi32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}
