// The runtime's GEMM family as convert-triax-to-kernels declares and calls
// it: all six entries (f32, bf16, bf16 -> f32; 2-D and strided-batched) with
// fully dynamic strided memrefs, and the f32 entry for f32 operands.
// RUN: triax-opt %s --convert-triax-to-kernels --cse | FileCheck %s

triax.model @m config = #triax.train_config<micro_batch = 2, seq = 4> {
  triax.param @emb : tensor<16x8xf32> init <normal, std = 0.02> decay
  triax.param @w : tensor<8x12xf32> init <normal, std = 0.02> decay
  func.func @forward(%tokens: tensor<2x4xi32>, %targets: tensor<2x4xi32>) -> tensor<f32> {
    %emb = triax.get_param @emb : tensor<16x8xf32>
    %x = triax.embedding %tokens, %emb : (tensor<2x4xi32>, tensor<16x8xf32>) -> tensor<2x4x8xf32>
    %w = triax.get_param @w : tensor<8x12xf32>
    %y = triax.linear %x, %w : (tensor<2x4x8xf32>, tensor<8x12xf32>) -> tensor<2x4x12xf32>
    %loss = triax.cross_entropy %y, %targets : (tensor<2x4x12xf32>, tensor<2x4xi32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// CHECK-DAG: func.func private @trx_sgemm(memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>, i32, i32, f32, f32) attributes {llvm.emit_c_interface}
// CHECK-DAG: func.func private @trx_gemm_bf16(memref<?x?xbf16, strided<[?, ?], offset: ?>>, memref<?x?xbf16, strided<[?, ?], offset: ?>>, memref<?x?xbf16, strided<[?, ?], offset: ?>>, i32, i32, f32, f32) attributes {llvm.emit_c_interface}
// CHECK-DAG: func.func private @trx_gemm_bf16_f32(memref<?x?xbf16, strided<[?, ?], offset: ?>>, memref<?x?xbf16, strided<[?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>, i32, i32, f32, f32) attributes {llvm.emit_c_interface}
// CHECK-DAG: func.func private @trx_sgemm_batched(memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, i32, i32, f32, f32) attributes {llvm.emit_c_interface}
// CHECK-DAG: func.func private @trx_gemm_bf16_batched(memref<?x?x?xbf16, strided<[?, ?, ?], offset: ?>>, memref<?x?x?xbf16, strided<[?, ?, ?], offset: ?>>, memref<?x?x?xbf16, strided<[?, ?, ?], offset: ?>>, i32, i32, f32, f32) attributes {llvm.emit_c_interface}
// CHECK-DAG: func.func private @trx_gemm_bf16_f32_batched(memref<?x?x?xbf16, strided<[?, ?, ?], offset: ?>>, memref<?x?x?xbf16, strided<[?, ?, ?], offset: ?>>, memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, i32, i32, f32, f32) attributes {llvm.emit_c_interface}

// CHECK-LABEL: func.func @triax_forward(
// f32 operands: the f32 entry, each operand cast to the dynamic strided type.
// CHECK: %[[A:.*]] = memref.cast %{{.*}} : memref<8x8xf32> to memref<?x?xf32, strided<[?, ?], offset: ?>>
// CHECK: %[[B:.*]] = memref.cast %{{.*}} : memref<8x12xf32> to memref<?x?xf32, strided<[?, ?], offset: ?>>
// CHECK: %[[C:.*]] = memref.cast %{{.*}} : memref<8x12xf32> to memref<?x?xf32, strided<[?, ?], offset: ?>>
// CHECK: call @trx_sgemm(%[[A]], %[[B]], %[[C]], %c0_i32, %c0_i32, %{{.*}}, %{{.*}})
// CHECK-NOT: call @trx_gemm_bf16
