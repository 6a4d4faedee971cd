// [A9] by hand under bf16 compute over f32 parameters: the kernel
// conversion makes one bf16 copy of each parameter per function, at its
// start, and every later conversion of it reads that copy
// (hoistParamCopies); the copy is freed after its last read. [A10] of
// docs/cost-model.md.
// RUN: triax-report %s | FileCheck %s
//
//   op (bf16 tensors, 2 bytes an element)  allocates  live after the op
//   the copies of @emb (8 x 4), @w (4 x 4) 64 + 32     96
//   %x = embedding (1 x 4 x 4)             32         128
//   %big = linear %x, %e^T (1 x 4 x 8)     64         192 -> 160 (%x dead)
//   %s = linear %big, %e                   32         192 -> 128 (%big dead)
//   h.0: linear %s, @w's copy              32         160 -> 128 (%s dead)
//   h.1: linear, @w's copy again           32         160 -> 96 (%h0, @w's
//                                                     copy dead)
//   %l = linear %h1, %e^T (1 x 4 x 8)      64         160 -> 64
//   %loss = cross_entropy                  4 (f32)    68
// peak 192 (160 if each block converted @w where it reads it: @w's copy
// is alive from the start, beside %big).
// CHECK: activation peak of one micro-batch from the IR's liveness: 192  [A9]

triax.model @m config = #triax.train_config<micro_batch = 1, seq = 4, compute = bf16> {
  triax.param @emb : tensor<8x4xf32> init <normal, std = 0.02> decay
  triax.param @w : tensor<4x4xf32> init <normal, std = 0.02> decay
  func.func @forward(%tokens: tensor<1x4xi32>, %targets: tensor<1x4xi32>) -> tensor<f32> {
    %emb = triax.get_param @emb : tensor<8x4xf32>
    %e = triax.convert %emb : tensor<8x4xf32> to tensor<8x4xbf16>
    %x = triax.embedding %tokens, %e : (tensor<1x4xi32>, tensor<8x4xbf16>) -> tensor<1x4x4xbf16>
    %l = triax.linear %x, %e {transpose_weight} : (tensor<1x4x4xbf16>, tensor<8x4xbf16>) -> tensor<1x4x8xbf16>
    %loss = triax.cross_entropy %l, %targets : (tensor<1x4x8xbf16>, tensor<1x4xi32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
  func.func @forward_backward(%tokens: tensor<1x4xi32>, %targets: tensor<1x4xi32>) -> tensor<f32> {
    %emb = triax.get_param @emb : tensor<8x4xf32>
    %e = triax.convert %emb : tensor<8x4xf32> to tensor<8x4xbf16>
    %x = triax.embedding %tokens, %e : (tensor<1x4xi32>, tensor<8x4xbf16>) -> tensor<1x4x4xbf16>
    %big = triax.linear %x, %e {transpose_weight} : (tensor<1x4x4xbf16>, tensor<8x4xbf16>) -> tensor<1x4x8xbf16>
    %s = triax.linear %big, %e : (tensor<1x4x8xbf16>, tensor<8x4xbf16>) -> tensor<1x4x4xbf16>
    %h0 = triax.block "h.0"(%s) : (tensor<1x4x4xbf16>) -> tensor<1x4x4xbf16> {
    ^bb0(%in: tensor<1x4x4xbf16>):
      %w = triax.get_param @w : tensor<4x4xf32>
      %wb = triax.convert %w : tensor<4x4xf32> to tensor<4x4xbf16>
      %h = triax.linear %in, %wb : (tensor<1x4x4xbf16>, tensor<4x4xbf16>) -> tensor<1x4x4xbf16>
      triax.yield %h : tensor<1x4x4xbf16>
    }
    %h1 = triax.block "h.1"(%h0) : (tensor<1x4x4xbf16>) -> tensor<1x4x4xbf16> {
    ^bb0(%in: tensor<1x4x4xbf16>):
      %w = triax.get_param @w : tensor<4x4xf32>
      %wb = triax.convert %w : tensor<4x4xf32> to tensor<4x4xbf16>
      %h = triax.linear %in, %wb : (tensor<1x4x4xbf16>, tensor<4x4xbf16>) -> tensor<1x4x4xbf16>
      triax.yield %h : tensor<1x4x4xbf16>
    }
    %l = triax.linear %h1, %e {transpose_weight} : (tensor<1x4x4xbf16>, tensor<8x4xbf16>) -> tensor<1x4x8xbf16>
    %loss = triax.cross_entropy %l, %targets : (tensor<1x4x8xbf16>, tensor<1x4xi32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}
