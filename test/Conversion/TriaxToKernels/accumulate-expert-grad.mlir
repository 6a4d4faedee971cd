// convert-triax-to-kernels{accumulate-in-gemm}: an expert weight gradient
// whose only user is its accumulate_grad is one batched GEMM into the
// stacked parameter's gradient buffer (the runtime's rows of it,
// trx_state_2d(kGrad = 3, index) [E*in, out], viewed as [E, in, out]) with
// beta = 1, as a linear's weight gradient is (accumulate-in-gemm.mlir):
// no [E, in, out] buffer per expert linear kept until the accumulation.
// Without the option: a batched GEMM into a new buffer (beta 0), then the
// accumulation loop.
// RUN: triax-opt %s --convert-triax-to-kernels=accumulate-in-gemm | FileCheck %s
// RUN: triax-opt %s --convert-triax-to-kernels | FileCheck %s --check-prefix=SEPARATE

// CHECK-LABEL: func.func @triax_forward_backward(
// CHECK:         %[[G:.*]] = call @trx_state_2d(%c3_i32{{.*}}, %c0_i64{{.*}}) : (i32, i64) -> memref<?x?xf32>
// CHECK:         %[[GV:.*]] = memref.cast %[[G]] : memref<?x?xf32> to memref<8x3xf32>
// CHECK:         %[[G3:.*]] = memref.expand_shape %[[GV]] {{\[\[}}0, 1], [2]] output_shape [2, 4, 3] : memref<8x3xf32> into memref<2x4x3xf32>
// CHECK-NOT:     memref.alloc() {{.*}}memref<2x4x3xf32>
// CHECK:         %[[C:.*]] = memref.cast %[[G3]]
// CHECK:         %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK:         %[[BETA:.*]] = arith.constant 1.000000e+00 : f32
// CHECK:         call @trx_sgemm_batched(%{{.*}}, %{{.*}}, %[[C]], %{{.*}}, %{{.*}}, %[[ONE]], %[[BETA]])
// The flat accumulation loop (over the 24 elements of dW) is gone.
// CHECK-NOT:     memref<24xf32>
// CHECK:         return

// SEPARATE-LABEL: func.func @triax_forward_backward(
// SEPARATE:         memref.alloc() {{.*}}: memref<2x4x3xf32>
// SEPARATE:         %[[BETA:.*]] = arith.constant 0.000000e+00 : f32
// SEPARATE:         call @trx_sgemm_batched(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[BETA]])
// SEPARATE:         call @trx_state_2d(%c3_i32{{.*}}, %c0_i64{{.*}})
// SEPARATE:         scf.parallel
// SEPARATE:           memref.load %{{.*}} : memref<24xf32>
// SEPARATE:           arith.addf

triax.model @m config = #triax.train_config<micro_batch = 1, seq = 2> {
  triax.param @experts : tensor<2x4x3xf32> init <normal, std = 0.02> decay
  func.func @forward(%tokens: tensor<1x2xi32>, %targets: tensor<1x2xi32>) -> tensor<f32> {
    %loss = arith.constant dense<0.0> : tensor<f32>
    return %loss : tensor<f32>
  }
  func.func @forward_backward(%x: tensor<2x5x4xf32>, %dy: tensor<2x5x3xf32>) -> tensor<f32> {
    %dw = triax.expert_linear_weight_grad %x, %dy : (tensor<2x5x4xf32>, tensor<2x5x3xf32>) -> tensor<2x4x3xf32>
    triax.accumulate_grad @experts, %dw : tensor<2x4x3xf32>
    %loss = arith.constant dense<0.0> : tensor<f32>
    return %loss : tensor<f32>
  }
}
