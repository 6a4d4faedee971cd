// convert-triax-to-kernels{accumulate-in-gemm} (both pipelines set it) and a
// tied embedding: its gradient is the sum of the LM head's dW and the
// embedding's scatter, accumulated once (`accumulate_grad @emb, dW + dE`).
// The sum is accumulated term by term, so each term goes into the gradient
// buffer where it is made: the head's GEMM with beta = 1, then the scatter
// adds its rows into the same buffer (trx_state_2d(kGrad = 3, 0) both
// times). No [V, d] buffer is allocated, zeroed or added. Without the
// option: dW and the zeroed table in their own buffers, their sum, and
// the accumulation loop.
// RUN: triax-opt %s --convert-triax-to-kernels=accumulate-in-gemm | FileCheck %s
// RUN: triax-opt %s --convert-triax-to-kernels | FileCheck %s --check-prefix=SEPARATE

// CHECK-LABEL: func.func @triax_forward_backward(
// CHECK-NOT:     memref.alloc() {{.*}}memref<8x2xf32>
// CHECK:         call @trx_state_2d(%c3_i32{{.*}}, %c0_i64{{.*}}) : (i32, i64) -> memref<?x?xf32>
// CHECK:         %[[ALPHA:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-NEXT:    %[[BETA:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-NEXT:    call @trx_sgemm(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[ALPHA]], %[[BETA]])
// CHECK-NOT:     memref.alloc() {{.*}}memref<8x2xf32>
// CHECK:         %[[G:.*]] = call @trx_state_2d(%c3_i32{{.*}}, %c0_i64{{.*}}) : (i32, i64) -> memref<?x?xf32>
// CHECK:         %[[GV:.*]] = memref.cast %[[G]] : memref<?x?xf32> to memref<8x2xf32>
// CHECK:         scf.parallel
// CHECK:           scf.for
// CHECK:             %[[OLD:.*]] = memref.load %[[GV]]
// CHECK:             %[[NEW:.*]] = arith.addf %[[OLD]], %{{.*}} : f32
// CHECK:             memref.store %[[NEW]], %[[GV]]
// CHECK-NOT:     memref.alloc() {{.*}}memref<8x2xf32>
// CHECK-NOT:     memref<16xf32>
// CHECK:         return

// SEPARATE-LABEL: func.func @triax_forward_backward(
// SEPARATE:         memref.alloc() {{.*}}: memref<8x2xf32>
// SEPARATE:         call @trx_sgemm
// SEPARATE:         memref.alloc() {{.*}}: memref<8x2xf32>
// SEPARATE:         memref.alloc() {{.*}}: memref<8x2xf32>
// SEPARATE:         call @trx_state_2d(%c3_i32{{.*}}, %c0_i64{{.*}})
// SEPARATE:         memref.load %{{.*}} : memref<16xf32>

triax.model @m config = #triax.train_config<micro_batch = 1, seq = 2> {
  triax.param @emb : tensor<8x2xf32> init <normal, std = 0.02> decay
  func.func @forward(%tokens: tensor<1x2xi32>, %targets: tensor<1x2xi32>) -> tensor<f32> {
    %loss = arith.constant dense<0.0> : tensor<f32>
    return %loss : tensor<f32>
  }
  func.func @forward_backward(%tokens: tensor<1x2xi32>, %h: tensor<1x2x2xf32>, %dlogits: tensor<1x2x8xf32>, %dx: tensor<1x2x2xf32>) -> tensor<f32> {
    %dw = triax.linear_weight_grad %h, %dlogits {transpose_weight} : (tensor<1x2x2xf32>, tensor<1x2x8xf32>) -> tensor<8x2xf32>
    %de = triax.embedding_grad %tokens, %dx : (tensor<1x2xi32>, tensor<1x2x2xf32>) -> tensor<8x2xf32>
    %sum = triax.add %dw, %de : tensor<8x2xf32>
    triax.accumulate_grad @emb, %sum : tensor<8x2xf32>
    %loss = arith.constant dense<0.0> : tensor<f32>
    return %loss : tensor<f32>
  }
}
