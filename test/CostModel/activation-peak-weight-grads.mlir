// [A9] by hand for weight gradients: one that only its accumulate_grad
// reads (directly, or through the yield of the block it leaves) is computed
// into the gradient buffer by its GEMM (accumulate-in-gemm) and is not a
// buffer; one read by anything else is.
// RUN: triax-report %s | FileCheck %s
//
//   op                                    allocates  live after the op
//   %a = embedding (1 x 4 x 32)           512        512
//   %d1 = linear_weight_grad %a, %a       into @w    512
//   %d3 = block { linear_weight_grad }    into @w    512
//   %c = embedding (1 x 4 x 4)            64         576
//   %d4 = linear_weight_grad %c, %c       64         640 -> 576 (%c dead)
//   %s = add %d4, %d4                     64         640 -> 576 (%d4 dead)
//   accumulate_grad @v, %s                           512 (%s dead)
//   %l = linear %a                        128        640 -> 128 (%a dead)
//   %loss = cross_entropy %l              4          132 -> 4
// peak 640; counting %d1 or %d3 (32 x 32 f32 = 4096 bytes) would make it
// 4608.
// CHECK: activation peak of one micro-batch from the IR's liveness: 640  [A9]

triax.model @m config = #triax.train_config<micro_batch = 1, seq = 4> {
  triax.param @big : tensor<8x32xf32> init <normal, std = 0.02> decay
  triax.param @w : tensor<32x32xf32> init <normal, std = 0.02> decay
  triax.param @v : tensor<4x4xf32> init <normal, std = 0.02> decay
  func.func @forward(%tokens: tensor<1x4xi32>, %targets: tensor<1x4xi32>) -> tensor<f32> {
    %big = triax.get_param @big : tensor<8x32xf32>
    %a = triax.embedding %tokens, %big : (tensor<1x4xi32>, tensor<8x32xf32>) -> tensor<1x4x32xf32>
    %l = triax.linear %a, %big {transpose_weight} : (tensor<1x4x32xf32>, tensor<8x32xf32>) -> tensor<1x4x8xf32>
    %loss = triax.cross_entropy %l, %targets : (tensor<1x4x8xf32>, tensor<1x4xi32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
  func.func @forward_backward(%tokens: tensor<1x4xi32>, %targets: tensor<1x4xi32>) -> tensor<f32> {
    %big = triax.get_param @big : tensor<8x32xf32>
    %a = triax.embedding %tokens, %big : (tensor<1x4xi32>, tensor<8x32xf32>) -> tensor<1x4x32xf32>
    %d1 = triax.linear_weight_grad %a, %a : (tensor<1x4x32xf32>, tensor<1x4x32xf32>) -> tensor<32x32xf32>
    triax.accumulate_grad @w, %d1 : tensor<32x32xf32>
    %d3 = triax.block "h.0"(%a) : (tensor<1x4x32xf32>) -> tensor<32x32xf32> {
    ^bb0(%in: tensor<1x4x32xf32>):
      %g = triax.linear_weight_grad %in, %in : (tensor<1x4x32xf32>, tensor<1x4x32xf32>) -> tensor<32x32xf32>
      triax.yield %g : tensor<32x32xf32>
    }
    triax.accumulate_grad @w, %d3 : tensor<32x32xf32>
    %vw = triax.get_param @v : tensor<4x4xf32>
    %c = triax.embedding %tokens, %vw : (tensor<1x4xi32>, tensor<4x4xf32>) -> tensor<1x4x4xf32>
    %d4 = triax.linear_weight_grad %c, %c : (tensor<1x4x4xf32>, tensor<1x4x4xf32>) -> tensor<4x4xf32>
    %s = triax.add %d4, %d4 : tensor<4x4xf32>
    triax.accumulate_grad @v, %s : tensor<4x4xf32>
    %l = triax.linear %a, %big {transpose_weight} : (tensor<1x4x32xf32>, tensor<8x32xf32>) -> tensor<1x4x8xf32>
    %loss = triax.cross_entropy %l, %targets : (tensor<1x4x8xf32>, tensor<1x4xi32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}
