// [A9] by hand for expert weight gradients ([E, in, out]): one that only
// its accumulate_grad reads is computed into the gradient buffer by the
// batched GEMM (accumulate-in-gemm; accumulate-expert-grad.mlir) and is not
// a buffer; one read by anything else is.
// RUN: triax-report %s | FileCheck %s
//
//   op                                      allocates  live after the op
//   %ids = constant (2 x 2 i32)             16         16
//   %x = embedding (2 x 2 x 32)             512        528 -> 512 (%ids dead)
//   %d1 = expert_linear_weight_grad %x, %x  into @e    512
//   %d2 = expert_linear_weight_grad %x, %x  8192       8704 -> 8192 (%x dead)
//   %s = mul %d2, %d2                       over %d2   8192
//   accumulate_grad @f, %s                             0
//   accumulate_grad @e, %d1
// (the product is written over %d2, which nothing reads after it:
// elementwise-in-place). Peak 8704; counting %d1 (2 x 32 x 32 f32, alive
// to its accumulation) would make it 16896.
// CHECK: activation peak of one micro-batch from the IR's liveness: 8704  [A9]

triax.model @m config = #triax.train_config<micro_batch = 1, seq = 4> {
  triax.param @big : tensor<8x32xf32> init <normal, std = 0.02> decay
  triax.param @e : tensor<2x32x32xf32> init <normal, std = 0.02> decay
  triax.param @f : tensor<2x32x32xf32> init <normal, std = 0.02> decay
  func.func @forward(%tokens: tensor<1x4xi32>, %targets: tensor<1x4xi32>) -> tensor<f32> {
    %loss = arith.constant dense<0.0> : tensor<f32>
    return %loss : tensor<f32>
  }
  func.func @forward_backward(%tokens: tensor<1x4xi32>, %targets: tensor<1x4xi32>) -> tensor<f32> {
    %big = triax.get_param @big : tensor<8x32xf32>
    %ids = arith.constant dense<0> : tensor<2x2xi32>
    %x = triax.embedding %ids, %big : (tensor<2x2xi32>, tensor<8x32xf32>) -> tensor<2x2x32xf32>
    %d1 = triax.expert_linear_weight_grad %x, %x : (tensor<2x2x32xf32>, tensor<2x2x32xf32>) -> tensor<2x32x32xf32>
    %d2 = triax.expert_linear_weight_grad %x, %x : (tensor<2x2x32xf32>, tensor<2x2x32xf32>) -> tensor<2x32x32xf32>
    %s = triax.mul %d2, %d2 : tensor<2x32x32xf32>
    triax.accumulate_grad @f, %s : tensor<2x32x32xf32>
    triax.accumulate_grad @e, %d1 : tensor<2x32x32xf32>
    %loss = arith.constant dense<0.0> : tensor<f32>
    return %loss : tensor<f32>
  }
}
