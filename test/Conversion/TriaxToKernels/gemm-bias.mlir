// A linear's bias is its GEMM's epilogue: f32 -> trx_sgemm_bias, bf16
// (operands, bias and result: LinearOp's operands share one element type)
// -> trx_gemm_bf16_bias, with no loop filling y first. bf16 operands into an
// f32 result have no bias entry: y is filled with the bias and the product
// accumulated into it (trx_gemm_bf16_f32, beta = 1).
// RUN: triax-opt %s --convert-triax-to-kernels --cse | FileCheck %s

triax.model @m config = #triax.train_config<micro_batch = 2, seq = 4> {
  triax.param @emb : tensor<16x8xf32> init <normal, std = 0.02> decay
  triax.param @w : tensor<8x12xf32> init <normal, std = 0.02> decay
  triax.param @wt : tensor<12x8xf32> init <normal, std = 0.02> decay
  triax.param @b : tensor<12xf32> init <zeros>
  func.func @forward(%tokens: tensor<2x4xi32>, %targets: tensor<2x4xi32>) -> tensor<f32> {
    %emb = triax.get_param @emb : tensor<16x8xf32>
    %x = triax.embedding %tokens, %emb : (tensor<2x4xi32>, tensor<16x8xf32>) -> tensor<2x4x8xf32>
    %w = triax.get_param @w : tensor<8x12xf32>
    %wt = triax.get_param @wt : tensor<12x8xf32>
    %b = triax.get_param @b : tensor<12xf32>
    %y = triax.linear %x, %wt, %b {transpose_weight} : (tensor<2x4x8xf32>, tensor<12x8xf32>, tensor<12xf32>) -> tensor<2x4x12xf32>
    %xb = triax.convert %x : tensor<2x4x8xf32> to tensor<2x4x8xbf16>
    %wb = triax.convert %w : tensor<8x12xf32> to tensor<8x12xbf16>
    %bb = triax.convert %b : tensor<12xf32> to tensor<12xbf16>
    %yb = triax.linear %xb, %wb, %bb : (tensor<2x4x8xbf16>, tensor<8x12xbf16>, tensor<12xbf16>) -> tensor<2x4x12xbf16>
    %yf = triax.linear %xb, %wb, %bb : (tensor<2x4x8xbf16>, tensor<8x12xbf16>, tensor<12xbf16>) -> tensor<2x4x12xf32>
    %ybf = triax.convert %yb : tensor<2x4x12xbf16> to tensor<2x4x12xf32>
    %s = triax.add %y, %ybf : tensor<2x4x12xf32>
    %t = triax.add %s, %yf : tensor<2x4x12xf32>
    %loss = triax.cross_entropy %t, %targets : (tensor<2x4x12xf32>, tensor<2x4xi32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// CHECK-LABEL: func.func @triax_forward(
// The bf16 copies of @w and @b come first (param-copies.mlir).
// CHECK: memref.alloc() : memref<8x12xbf16>
// CHECK: scf.parallel
// CHECK: memref.alloc() : memref<12xbf16>
// CHECK: scf.parallel
// f32, the weight [out, in]: transB, the bias vector cast to memref<?xf32>.
// CHECK: %[[B:.*]] = memref.cast %{{.*}} : memref<?xf32> to memref<12xf32>
// CHECK-NOT: scf.parallel
// CHECK: %[[BC:.*]] = memref.cast %[[B]] : memref<12xf32> to memref<?xf32>
// CHECK: call @trx_sgemm_bias(%{{.*}}, %{{.*}}, %{{.*}}, %[[BC]], %c0_i32, %c1_i32, %{{.*}}) : (memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?xf32>, i32, i32, f32) -> ()
// bf16 throughout: the bf16 bias entry, no fill loop before it.
// CHECK: %[[YB:.*]] = memref.alloc() {{.*}}: memref<2x4x12xbf16>
// CHECK-NOT: scf.parallel
// CHECK: call @trx_gemm_bf16_bias(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %c0_i32, %c0_i32, %{{.*}}) : (memref<?x?xbf16, strided<[?, ?], offset: ?>>, memref<?x?xbf16, strided<[?, ?], offset: ?>>, memref<?x?xbf16, strided<[?, ?], offset: ?>>, memref<?xbf16>, i32, i32, f32) -> ()
// bf16 into f32: the bias fill (the bf16 bias widened), then beta = 1.
// CHECK: %[[YF:.*]] = memref.alloc() {{.*}}: memref<2x4x12xf32>
// CHECK: %[[YFR:.*]] = memref.collapse_shape %[[YF]]
// CHECK: scf.parallel (%[[M:.*]], %[[N:.*]]) =
// CHECK:   %[[V:.*]] = memref.load %{{.*}}[%[[N]]] : memref<12xbf16>
// CHECK:   %[[E:.*]] = arith.extf %[[V]] : bf16 to f32
// CHECK:   memref.store %[[E]], %[[YFR]][%[[M]], %[[N]]] : memref<8x12xf32>
// CHECK: call @trx_gemm_bf16_f32(%{{.*}}, %{{.*}}, %{{.*}}, %c0_i32, %c0_i32, %[[ONE:.*]], %[[ONE]])
// CHECK-NOT: call @trx_gemm_bf16_bias(
