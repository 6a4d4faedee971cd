// linear and its gradients: GEMMs through the runtime with the right
// transposes, the bias as the forward GEMM's epilogue (trx_sgemm_bias, no
// fill loop); parameters are runtime-owned state views.
// RUN: triax-opt %s --convert-triax-to-kernels --cse | FileCheck %s
// RUN: triax-opt %s --convert-triax-to-kernels=column-sums=rows --cse | FileCheck %s --check-prefix=ROWS

triax.model @m config = #triax.train_config<micro_batch = 2, seq = 4> {
  triax.param @emb : tensor<16x8xf32> init <normal, std = 0.02> decay
  triax.param @w : tensor<8x12xf32> init <normal, std = 0.02> decay
  triax.param @b : tensor<12xf32> init <zeros>
  func.func @forward(%tokens: tensor<2x4xi32>, %targets: tensor<2x4xi32>) -> tensor<f32> {
    %emb = triax.get_param @emb : tensor<16x8xf32>
    %x = triax.embedding %tokens, %emb : (tensor<2x4xi32>, tensor<16x8xf32>) -> tensor<2x4x8xf32>
    %w = triax.get_param @w : tensor<8x12xf32>
    %b = triax.get_param @b : tensor<12xf32>
    %y = triax.linear %x, %w, %b : (tensor<2x4x8xf32>, tensor<8x12xf32>, tensor<12xf32>) -> tensor<2x4x12xf32>
    %dx = triax.linear %y, %w {transpose_weight} : (tensor<2x4x12xf32>, tensor<8x12xf32>) -> tensor<2x4x8xf32>
    %dw = triax.linear_weight_grad %x, %y : (tensor<2x4x8xf32>, tensor<2x4x12xf32>) -> tensor<8x12xf32>
    %dwt = triax.linear_weight_grad %x, %y {transpose_weight} : (tensor<2x4x8xf32>, tensor<2x4x12xf32>) -> tensor<12x8xf32>
    %db = triax.bias_grad %y : tensor<2x4x12xf32> -> tensor<12xf32>
    %logits = triax.linear %dx, %emb {transpose_weight} : (tensor<2x4x8xf32>, tensor<16x8xf32>) -> tensor<2x4x16xf32>
    %loss = triax.cross_entropy %logits, %targets : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// The model is gone; the runtime ABI is declared once.
// CHECK-NOT: triax.model
// CHECK-DAG: func.func private @trx_sgemm(memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>, i32, i32, f32, f32) attributes {llvm.emit_c_interface}
// CHECK-DAG: func.func private @trx_sgemm_bias(memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?xf32>, i32, i32, f32) attributes {llvm.emit_c_interface}
// CHECK-DAG: func.func private @trx_gemm_bf16_bias(memref<?x?xbf16, strided<[?, ?], offset: ?>>, memref<?x?xbf16, strided<[?, ?], offset: ?>>, memref<?x?xbf16, strided<[?, ?], offset: ?>>, memref<?xbf16>, i32, i32, f32) attributes {llvm.emit_c_interface}
// CHECK-DAG: func.func private @trx_state_1d(i32, i64) -> memref<?xf32> attributes {llvm.emit_c_interface}
// CHECK-DAG: func.func private @trx_state_2d(i32, i64) -> memref<?x?xf32> attributes {llvm.emit_c_interface}

// CHECK-LABEL: func.func @triax_forward(
// CHECK-SAME: %{{.*}}: memref<2x4xi32>, %{{.*}}: memref<2x4xi32>) -> f32 attributes {llvm.emit_c_interface}
// Parameters are views of runtime state: kind 0, index = position in the model.
// CHECK: call @trx_state_2d(%{{.*}}, %{{.*}}) : (i32, i64) -> memref<?x?xf32>
// CHECK: %[[I1:.*]] = arith.constant 1 : i64
// CHECK: call @trx_state_2d(%{{.*}}, %[[I1]]) : (i32, i64) -> memref<?x?xf32>
// CHECK: memref.cast %{{.*}} : memref<?x?xf32> to memref<8x12xf32>
// y = x W + b in one GEMM whose epilogue adds b to every row: no loop
// writes y first.
// CHECK: %[[B:.*]] = memref.cast %{{.*}} : memref<?xf32> to memref<12xf32>
// CHECK: %[[Y:.*]] = memref.alloc() {{.*}}: memref<2x4x12xf32>
// CHECK: %[[YR:.*]] = memref.collapse_shape %[[Y]] {{\[}}[0, 1], [2]] : memref<2x4x12xf32> into memref<8x12xf32>
// CHECK-NOT: scf.parallel
// CHECK: %[[YC:.*]] = memref.cast %[[YR]] : memref<8x12xf32> to memref<?x?xf32, strided<[?, ?], offset: ?>>
// CHECK: %[[BC:.*]] = memref.cast %[[B]] : memref<12xf32> to memref<?xf32>
// CHECK: call @trx_sgemm_bias(%{{.*}}, %{{.*}}, %[[YC]], %[[BC]], %c0_i32, %c0_i32, %[[ONE:.*]]) :
// dx = dy W^T: transB, no bias (beta 0).
// CHECK: call @trx_sgemm(%{{.*}}, %{{.*}}, %{{.*}}, %c0_i32, %c1_i32, %[[ONE]], %{{.*}})
// dW = x^T dy and (transposed layout) dy^T x: transA.
// CHECK: call @trx_sgemm(%{{.*}}, %{{.*}}, %{{.*}}, %c1_i32, %c0_i32,
// CHECK: call @trx_sgemm(%{{.*}}, %{{.*}}, %{{.*}}, %c1_i32, %c0_i32,
// Bias gradient: one column per parallel iteration, a sequential sum.
// CHECK: scf.parallel (%[[COL:.*]]) =
// CHECK:   scf.for %{{.*}} = {{.*}} iter_args(%[[ACC:.*]] = %{{.*}}) -> (f32)
// CHECK:     arith.addf %[[ACC]]
// No tensors are left, and every buffer is freed.
// CHECK-NOT: tensor<
// CHECK: memref.dealloc
// CHECK: return %{{.*}} : f32

// column-sums=rows (the CPU pipeline): one parallel iteration per block of
// columns (here all 12), a sequential loop over the 8 rows; row 0 starts
// every column at 0 + dy[0, n], later rows add into db[n]; the innermost
// loop runs along the row's block (contiguous).
// ROWS: call @trx_sgemm(%{{.*}}, %{{.*}}, %{{.*}}, %c1_i32, %c0_i32,
// ROWS: call @trx_sgemm(%{{.*}}, %{{.*}}, %{{.*}}, %c1_i32, %c0_i32,
// ROWS: %[[DB:.*]] = memref.alloc() {{.*}}: memref<12xf32>
// ROWS: scf.parallel (%[[NB:.*]]) = (%{{.*}}) to (%c1{{.*}}) step
// ROWS:   %[[BASE:.*]] = arith.muli %[[NB]], %c12
// ROWS:   scf.for %[[M:.*]] = %{{.*}} to %c8{{.*}} step
// ROWS:     %[[FIRST:.*]] = arith.cmpi eq, %[[M]], %{{.*}} : index
// ROWS:     scf.for %[[J:.*]] = %{{.*}} to %c12{{.*}} step
// ROWS:       %[[N:.*]] = arith.addi %[[BASE]], %[[J]] : index
// ROWS:       %[[OLD:.*]] = memref.load %[[DB]][%[[N]]] : memref<12xf32>
// ROWS:       %[[START:.*]] = arith.select %[[FIRST]], %{{.*}}, %[[OLD]] : f32
// ROWS:       %[[X:.*]] = memref.load %{{.*}}[%[[M]], %[[N]]] : memref<8x12xf32>
// ROWS:       %[[S:.*]] = arith.addf %[[START]], %[[X]] : f32
// ROWS:       memref.store %[[S]], %[[DB]][%[[N]]] : memref<12xf32>
