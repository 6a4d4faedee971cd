// An expert weight gradient with `scale` (expert parallelism's 1/ep, which
// triax-autodiff folds in) is the same batched GEMM into the gradient
// buffer with alpha = scale: no scaled copy of dW.
// RUN: triax-opt %s --convert-triax-to-kernels=accumulate-in-gemm | FileCheck %s

// CHECK-LABEL: func.func @triax_forward_backward(
// CHECK-NOT:     memref.alloc() {{.*}}memref<2x4x3xf32>
// CHECK:         %[[ALPHA:.*]] = arith.constant 2.500000e-01 : f32
// CHECK:         %[[BETA:.*]] = arith.constant 1.000000e+00 : f32
// CHECK:         call @trx_sgemm_batched(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[ALPHA]], %[[BETA]])
// CHECK-NOT:     memref<24xf32>
// CHECK:         return

triax.model @m config = #triax.train_config<micro_batch = 1, seq = 2> {
  triax.param @experts : tensor<2x4x3xf32> init <normal, std = 0.02> decay
  func.func @forward(%tokens: tensor<1x2xi32>, %targets: tensor<1x2xi32>) -> tensor<f32> {
    %loss = arith.constant dense<0.0> : tensor<f32>
    return %loss : tensor<f32>
  }
  func.func @forward_backward(%x: tensor<2x5x4xf32>, %dy: tensor<2x5x3xf32>) -> tensor<f32> {
    %dw = triax.expert_linear_weight_grad %x, %dy {scale = 0.25 : f64} : (tensor<2x5x4xf32>, tensor<2x5x3xf32>) -> tensor<2x4x3xf32>
    triax.accumulate_grad @experts, %dw : tensor<2x4x3xf32>
    %loss = arith.constant dense<0.0> : tensor<f32>
    return %loss : tensor<f32>
  }
}
