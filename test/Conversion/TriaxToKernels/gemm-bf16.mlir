// bf16 operands pick the bf16 GEMMs: a bf16 result -> trx_gemm_bf16, an f32
// result (or an f32 weight gradient) -> trx_gemm_bf16_f32; fp32 accumulation
// in both (see RuntimeABI.h).
// RUN: triax-opt %s --convert-triax-to-kernels --cse | FileCheck %s

triax.model @m config = #triax.train_config<micro_batch = 2, seq = 4> {
  triax.param @emb : tensor<16x8xf32> init <normal, std = 0.02> decay
  triax.param @w : tensor<8x12xf32> init <normal, std = 0.02> decay
  func.func @forward(%tokens: tensor<2x4xi32>, %targets: tensor<2x4xi32>) -> tensor<f32> {
    %emb = triax.get_param @emb : tensor<16x8xf32>
    %x = triax.embedding %tokens, %emb : (tensor<2x4xi32>, tensor<16x8xf32>) -> tensor<2x4x8xf32>
    %xb = triax.convert %x : tensor<2x4x8xf32> to tensor<2x4x8xbf16>
    %w = triax.get_param @w : tensor<8x12xf32>
    %wb = triax.convert %w : tensor<8x12xf32> to tensor<8x12xbf16>
    %y = triax.linear %xb, %wb : (tensor<2x4x8xbf16>, tensor<8x12xbf16>) -> tensor<2x4x12xbf16>
    %yf = triax.linear %xb, %wb : (tensor<2x4x8xbf16>, tensor<8x12xbf16>) -> tensor<2x4x12xf32>
    %dw = triax.linear_weight_grad %xb, %y : (tensor<2x4x8xbf16>, tensor<2x4x12xbf16>) -> tensor<8x12xf32>
    %loss = triax.cross_entropy %yf, %targets : (tensor<2x4x12xf32>, tensor<2x4xi32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// CHECK-LABEL: func.func @triax_forward(
// y = x W in bf16.
// CHECK: %[[X:.*]] = memref.cast %{{.*}} : memref<8x8xbf16> to memref<?x?xbf16, strided<[?, ?], offset: ?>>
// CHECK: %[[W:.*]] = memref.cast %{{.*}} : memref<8x12xbf16> to memref<?x?xbf16, strided<[?, ?], offset: ?>>
// CHECK: %[[Y:.*]] = memref.cast %{{.*}} : memref<8x12xbf16> to memref<?x?xbf16, strided<[?, ?], offset: ?>>
// CHECK: call @trx_gemm_bf16(%[[X]], %[[W]], %[[Y]], %c0_i32, %c0_i32,
// The same product into f32.
// CHECK: %[[YF:.*]] = memref.cast %{{.*}} : memref<8x12xf32> to memref<?x?xf32, strided<[?, ?], offset: ?>>
// CHECK: call @trx_gemm_bf16_f32(%[[X]], %[[W]], %[[YF]], %c0_i32, %c0_i32,
// dW = x^T dy from bf16 operands into an f32 gradient: transA.
// CHECK: %[[DW:.*]] = memref.cast %{{.*}} : memref<8x12xf32> to memref<?x?xf32, strided<[?, ?], offset: ?>>
// CHECK: call @trx_gemm_bf16_f32(%[[X]], %[[Y]], %[[DW]], %c1_i32, %c0_i32,
// CHECK-NOT: call @trx_sgemm(
