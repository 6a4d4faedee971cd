// convert-triax-to-kernels{accumulate-in-gemm} (set by triax-lower-cuda): a
// weight gradient whose only user is its accumulate_grad is one GEMM into
// the parameter's gradient buffer (trx_state_2d(kGrad = 3, index)) with
// beta = 1. Without the option: a GEMM into a new buffer (beta 0), then an
// accumulation loop into the gradient buffer.
// RUN: triax-opt %s --convert-triax-to-kernels=accumulate-in-gemm | FileCheck %s
// RUN: triax-opt %s --convert-triax-to-kernels | FileCheck %s --check-prefix=SEPARATE

// CHECK-LABEL: func.func @triax_forward_backward(
// CHECK:         %[[G:.*]] = call @trx_state_2d(%c3_i32{{.*}}, %c1_i64{{.*}}) : (i32, i64) -> memref<?x?xf32>
// CHECK:         %[[GV:.*]] = memref.cast %[[G]] : memref<?x?xf32> to memref<4x2xf32>
// CHECK-NOT:     memref.alloc() {{.*}}memref<4x2xf32>
// CHECK:         %[[C:.*]] = memref.cast %[[GV]]
// CHECK:         %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK:         %[[BETA:.*]] = arith.constant 1.000000e+00 : f32
// CHECK:         call @trx_sgemm(%{{.*}}, %{{.*}}, %[[C]], %{{.*}}, %{{.*}}, %[[ONE]], %[[BETA]])
// The flat accumulation loop (over the 8 elements of dW) is gone.
// CHECK-NOT:     memref<8xf32>
// The bias gradient: each column's sum is added into the gradient buffer
// (trx_state_1d(kGrad = 3, 2)) by the column-sum loop itself.
// CHECK:         %[[GB:.*]] = call @trx_state_1d(%c3_i32{{.*}}, %c2_i64{{.*}})
// CHECK:         %[[GBV:.*]] = memref.cast %[[GB]] : memref<?xf32> to memref<2xf32>
// CHECK:         scf.parallel (%[[N:.*]]) =
// CHECK:           %[[SUM:.*]] = scf.for
// CHECK:           %[[OLD:.*]] = memref.load %[[GBV]][%[[N]]] : memref<2xf32>
// CHECK:           %[[NEW:.*]] = arith.addf %[[OLD]], %[[SUM]] : f32
// CHECK:           memref.store %[[NEW]], %[[GBV]][%[[N]]] : memref<2xf32>
// CHECK:         return

// SEPARATE-LABEL: func.func @triax_forward_backward(
// SEPARATE:         %[[DW:.*]] = memref.alloc() {{.*}}: memref<4x2xf32>
// SEPARATE:         %[[BETA:.*]] = arith.constant 0.000000e+00 : f32
// SEPARATE:         call @trx_sgemm(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[BETA]])
// SEPARATE:         call @trx_state_2d(%c3_i32{{.*}}, %c1_i64{{.*}})
// SEPARATE:         scf.parallel
// SEPARATE:           memref.load %{{.*}} : memref<8xf32>
// SEPARATE:           arith.addf
// SEPARATE:         memref.alloc() {{.*}}: memref<2xf32>
// SEPARATE:         call @trx_state_1d(%c3_i32{{.*}}, %c2_i64{{.*}})

triax.model @m config = #triax.train_config<micro_batch = 1, seq = 2> {
  triax.param @emb : tensor<4x2xf32> init <normal, std = 0.02> decay
  triax.param @w : tensor<4x2xf32> init <normal, std = 0.02> decay
  triax.param @b : tensor<2xf32> init <zeros>
  func.func @forward(%tokens: tensor<1x2xi32>, %targets: tensor<1x2xi32>) -> tensor<f32> {
    %loss = arith.constant dense<0.0> : tensor<f32>
    return %loss : tensor<f32>
  }
  func.func @forward_backward(%x: tensor<1x2x4xf32>, %dy: tensor<1x2x2xf32>) -> tensor<f32> {
    %dw = triax.linear_weight_grad %x, %dy : (tensor<1x2x4xf32>, tensor<1x2x2xf32>) -> tensor<4x2xf32>
    triax.accumulate_grad @w, %dw : tensor<4x2xf32>
    %db = triax.bias_grad %dy : tensor<1x2x2xf32> -> tensor<2xf32>
    triax.accumulate_grad @b, %db : tensor<2xf32>
    %loss = arith.constant dense<0.0> : tensor<f32>
    return %loss : tensor<f32>
  }
}
