// convert-triax-to-kernels{fuse-projections} (triaxc's default on cuda):
// the linears that read one input, whose results only ops with
// Triax_ReadsRowViews read (attention, attention_grad, linear_weight_grad,
// bias_grad), are one GEMM over their weights side by side, [8, 24] here,
// and their results are column views of its [2, 4, 24] output (no copies);
// the sum of their input gradients is one GEMM (K = 24) over dq, dk, dv,
// which the attention gradient writes side by side into one buffer.
// Numerics: test/e2e/fuse-projections.test.
// RUN: triax-opt %s --split-input-file --convert-triax-to-kernels=fuse-projections > %t
// RUN: FileCheck %s --implicit-check-not=unrealized_conversion_cast < %t
// RUN: triax-opt %s --split-input-file --convert-triax-to-kernels | FileCheck %s --check-prefix=OFF

// The weights side by side: one parallel nest (three column ranges), the
// biases the same; then the one GEMM with the bias epilogue.
// CHECK-LABEL: func.func @qkv(
// CHECK:         %[[W:.*]] = memref.alloc() : memref<8x24xf32>
// CHECK:         scf.parallel (%{{.*}}, %[[C:.*]]) = {{.*}} to (%c8{{.*}}, %c24{{.*}})
// CHECK:           arith.cmpi ult, %[[C]], %c8
// CHECK:           arith.cmpi ult, %[[C]], %c16
// CHECK:         %[[B:.*]] = memref.alloc() : memref<24xf32>
// CHECK:         %[[Y:.*]] = memref.alloc() : memref<2x4x24xf32>
// CHECK:         call @trx_sgemm_bias(
// CHECK-NOT:     call @trx_sgemm
// q, k and v: views of its columns 0, 8 and 16, read by attention as they
// are (no buffer of their own).
// CHECK:         %[[Q:.*]] = memref.subview %[[Y]][0, 0, 0] [2, 4, 8] [1, 1, 1] : memref<2x4x24xf32> to memref<2x4x8xf32, strided<[96, 24, 1]>>
// CHECK:         %[[K:.*]] = memref.subview %[[Y]][0, 0, 8] [2, 4, 8] [1, 1, 1] : memref<2x4x24xf32> to memref<2x4x8xf32, strided<[96, 24, 1], offset: 8>>
// CHECK:         %[[V:.*]] = memref.subview %[[Y]][0, 0, 16] [2, 4, 8] [1, 1, 1] : memref<2x4x24xf32> to memref<2x4x8xf32, strided<[96, 24, 1], offset: 16>>
// CHECK:         memref.collapse_shape %[[Q]] {{\[}}[0, 1], [2]] : memref<2x4x8xf32, strided<[96, 24, 1]>> into memref<8x8xf32, strided<[24, 1]>>
// CHECK-NOT:     memref.alloc() : memref<2x4x8xf32>
// The gradient: dq, dk, dv as columns of one buffer.
// CHECK:         %[[DY:.*]] = memref.alloc() : memref<2x4x24xf32>
// CHECK:         memref.subview %[[DY]][0, 0, 0] [2, 4, 8]
// CHECK:         memref.subview %[[DY]][0, 0, 8] [2, 4, 8]
// CHECK:         memref.subview %[[DY]][0, 0, 16] [2, 4, 8]
// Then dx = [dq dk dv] [Wq Wk Wv]^T: one GEMM on the buffer itself and the
// weights side by side (no sum kernel: the only buffer of dx's shape is
// the GEMM's result), then dWq and dbq from dq's view.
// CHECK:         memref.alloc() : memref<2x4x8xf32>
// CHECK-NOT:     memref.alloc() : memref<2x4x8xf32>
// CHECK:         %[[DYROWS:.*]] = memref.collapse_shape %[[DY]] {{\[}}[0, 1], [2]] : memref<2x4x24xf32> into memref<8x24xf32>
// CHECK:         memref.cast %[[DYROWS]]
// CHECK:         memref.cast %[[W]]
// CHECK:         call @trx_sgemm(%{{.*}}, %{{.*}}, %{{.*}}, %c0_i32{{.*}}, %c1_i32
// CHECK-NOT:     arith.addf
// CHECK:         call @trx_sgemm(
// CHECK-NOT:     call @trx_sgemm
// CHECK:         return
// OFF-LABEL:   func.func @qkv(
// OFF-COUNT-3:   call @trx_sgemm_bias(
// OFF-NOT:       memref.subview
// OFF-COUNT-4:   call @trx_sgemm(
// OFF-NOT:       call @trx_sgemm
// OFF:           return

// B = 2, S = 4, 2 heads of d = 4: q, k, v [2, 4, 8].
triax.model @m config = #triax.train_config<micro_batch = 2, seq = 4, global_batch = 2> {
  triax.param @w : tensor<4x2xf32> init <normal, std = 0.02>
  func.func @forward(%tokens: tensor<2x4xi32>, %targets: tensor<2x4xi32>) -> tensor<f32> {
    %w = triax.get_param @w : tensor<4x2xf32>
    %x = triax.embedding %tokens, %w : (tensor<2x4xi32>, tensor<4x2xf32>) -> tensor<2x4x2xf32>
    %l = triax.cross_entropy %x, %targets : (tensor<2x4x2xf32>, tensor<2x4xi32>) -> tensor<f32>
    return %l : tensor<f32>
  }
}

func.func @qkv(%x: tensor<2x4x8xf32>, %wq: tensor<8x8xf32>, %wk: tensor<8x8xf32>, %wv: tensor<8x8xf32>, %bq: tensor<8xf32>, %bk: tensor<8xf32>, %bv: tensor<8xf32>, %do: tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<8x8xf32>, tensor<8xf32>) {
  %q = triax.linear %x, %wq, %bq : (tensor<2x4x8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  %k = triax.linear %x, %wk, %bk : (tensor<2x4x8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  %v = triax.linear %x, %wv, %bv : (tensor<2x4x8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  %o, %lse = triax.attention %q, %k, %v heads = 2 : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<2x2x4xf32>)
  %dq, %dk, %dv = triax.attention_grad %q, %k, %v, %do saved(%o, %lse) heads = 2 : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x2x4xf32>) -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>)
  %a = triax.linear %dv, %wv {transpose_weight} : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
  %b = triax.linear %dk, %wk {transpose_weight} : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
  %s = triax.add %a, %b : tensor<2x4x8xf32>
  %c = triax.linear %dq, %wq {transpose_weight} : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
  %dx = triax.add %s, %c : tensor<2x4x8xf32>
  %dwq = triax.linear_weight_grad %x, %dq : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<8x8xf32>
  %dbq = triax.bias_grad %dq : tensor<2x4x8xf32> -> tensor<8xf32>
  return %o, %dx, %dwq, %dbq : tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<8x8xf32>, tensor<8xf32>
}

// -----

// Not fused: a result another op reads (GELU reads its rows whole), a
// linear of another input, and a result read before the last projection.
// CHECK-LABEL: func.func @apart(
// CHECK-NOT:     memref.subview
// CHECK-COUNT-4: call @trx_sgemm(
// CHECK-NOT:     memref.subview
// CHECK:         return
triax.model @m config = #triax.train_config<micro_batch = 2, seq = 4, global_batch = 2> {
  triax.param @w : tensor<4x2xf32> init <normal, std = 0.02>
  func.func @forward(%tokens: tensor<2x4xi32>, %targets: tensor<2x4xi32>) -> tensor<f32> {
    %w = triax.get_param @w : tensor<4x2xf32>
    %x = triax.embedding %tokens, %w : (tensor<2x4xi32>, tensor<4x2xf32>) -> tensor<2x4x2xf32>
    %l = triax.cross_entropy %x, %targets : (tensor<2x4x2xf32>, tensor<2x4xi32>) -> tensor<f32>
    return %l : tensor<f32>
  }
}

func.func @apart(%x: tensor<2x4x8xf32>, %y: tensor<2x4x8xf32>, %w1: tensor<8x8xf32>, %w2: tensor<8x8xf32>, %w3: tensor<8x8xf32>) -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>) {
  %g = triax.linear %x, %w1 : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
  %h = triax.gelu %g : tensor<2x4x8xf32>
  %p = triax.linear %x, %w2 : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
  %db = triax.bias_grad %p : tensor<2x4x8xf32> -> tensor<8xf32>
  %r = triax.linear %x, %w3 : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
  %o = triax.attention %p, %r, %r heads = 2 : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %z = triax.linear %y, %w3 : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
  %s = triax.add %o, %z : tensor<2x4x8xf32>
  return %h, %s : tensor<2x4x8xf32>, tensor<2x4x8xf32>
}
