// convert-triax-to-kernels{column-sums=chunks} (set by triax-lower-cuda):
// a column sum over [rows, cols] is two nests. The first has one parallel
// iteration per (chunk of rows, column), the column fastest (consecutive
// GPU threads read consecutive columns of a row), each summing its chunk
// in row order into a [chunks, cols] f32 scratch; the second one per
// column, adding its chunks in order (into the gradient buffer when the
// sum is accumulated there). Here rows = 4 x 16 = 64 and cols = 8: about
// 65536 iterations are wanted, but chunks keep at least 16 rows, so 4
// chunks of 16 rows.
// RUN: triax-opt %s -split-input-file --convert-triax-to-kernels="column-sums=chunks accumulate-in-gemm" | FileCheck %s
// RUN: triax-opt %s -split-input-file --convert-triax-to-kernels="column-sums=columns accumulate-in-gemm" | FileCheck %s --check-prefix=COLUMNS
// An unknown form is an error naming the three.
// RUN: not triax-opt %s -split-input-file --convert-triax-to-kernels=column-sums=tiles 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: error: convert-triax-to-kernels: unknown column-sums 'tiles'; expected columns, rows or chunks

// The bias gradient, accumulated into its gradient buffer.
// CHECK-LABEL: func.func @triax_forward_backward(
// CHECK:         %[[GB:.*]] = memref.cast %{{.*}} : memref<?xf32> to memref<8xf32>
// CHECK:         %[[P:.*]] = memref.alloc() {{.*}}: memref<4x8xf32>
// CHECK:         scf.parallel (%[[CH:.*]], %[[C:.*]]) = ({{.*}}) to (%c4, %c8) step
// CHECK:           %[[LO:.*]] = arith.muli %[[CH]], %c16 : index
// CHECK:           %[[HI:.*]] = arith.addi %[[LO]], %c16{{.*}} : index
// CHECK:           %[[SUM:.*]] = scf.for %[[R:.*]] = %[[LO]] to %[[HI]] step %{{.*}} iter_args(%[[ACC:.*]] = %cst{{.*}}) -> (f32) {
// CHECK:             %[[X:.*]] = memref.load %{{.*}}[%[[R]], %[[C]]] : memref<64x8xf32>
// CHECK:             arith.addf %[[ACC]], %[[X]] : f32
// CHECK:           memref.store %[[SUM]], %[[P]][%[[CH]], %[[C]]] : memref<4x8xf32>
// CHECK:         scf.parallel (%[[N:.*]]) = ({{.*}}) to (%c8{{.*}}) step
// CHECK:           %[[TOTAL:.*]] = scf.for %[[K:.*]] = %{{.*}} to %c4{{.*}} step %{{.*}} iter_args(%[[T:.*]] = %cst{{.*}}) -> (f32) {
// CHECK:             %[[PART:.*]] = memref.load %[[P]][%[[K]], %[[N]]] : memref<4x8xf32>
// CHECK:             arith.addf %[[T]], %[[PART]] : f32
// CHECK:           %[[OLD:.*]] = memref.load %[[GB]][%[[N]]] : memref<8xf32>
// CHECK:           %[[NEW:.*]] = arith.addf %[[OLD]], %[[TOTAL]] : f32
// CHECK:           memref.store %[[NEW]], %[[GB]][%[[N]]] : memref<8xf32>
// CHECK:         return

// COLUMNS-LABEL: func.func @triax_forward_backward(
// COLUMNS-NOT:     memref<4x8xf32>
// COLUMNS:         scf.parallel (%{{.*}}) = ({{.*}}) to (%c8{{.*}}) step
// COLUMNS:           scf.for %{{.*}} = %{{.*}} to %c64{{.*}} step
triax.model @m config = #triax.train_config<micro_batch = 4, seq = 16> {
  triax.param @b : tensor<8xf32> init <zeros>
  func.func @forward(%tokens: tensor<4x16xi32>, %targets: tensor<4x16xi32>) -> tensor<f32> {
    %loss = arith.constant dense<0.0> : tensor<f32>
    return %loss : tensor<f32>
  }
  func.func @forward_backward(%dy: tensor<4x16x8xf32>) -> tensor<f32> {
    %db = triax.bias_grad %dy : tensor<4x16x8xf32> -> tensor<8xf32>
    triax.accumulate_grad @b, %db : tensor<8xf32>
    %loss = arith.constant dense<0.0> : tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// LayerNorm's weight and bias gradients: one scratch each, both summed in
// the same two nests (the terms dy * xhat and dy).
// CHECK-LABEL: func.func @triax_forward(
// CHECK:         %[[PW:.*]] = memref.alloc() {{.*}}: memref<4x8xf32>
// CHECK:         %[[PB:.*]] = memref.alloc() {{.*}}: memref<4x8xf32>
// CHECK:         scf.parallel (%[[CH:.*]], %[[C:.*]]) = ({{.*}}) to (%c4{{.*}}, %c8{{.*}}) step
// CHECK:           %[[S:.*]]:2 = scf.for %{{.*}} iter_args(%{{.*}} = %cst{{.*}}, %{{.*}} = %cst{{.*}}) -> (f32, f32) {
// CHECK:           memref.store %[[S]]#0, %[[PW]][%[[CH]], %[[C]]]
// CHECK:           memref.store %[[S]]#1, %[[PB]][%[[CH]], %[[C]]]
// CHECK:         scf.parallel (%[[N:.*]]) = ({{.*}}) to (%c8{{.*}}) step
// CHECK:           %[[T:.*]]:2 = scf.for %[[K:.*]] = %{{.*}} to %c4{{.*}} step %{{.*}} iter_args(
// CHECK:             memref.load %[[PW]][%[[K]], %[[N]]]
// CHECK:             memref.load %[[PB]][%[[K]], %[[N]]]
// CHECK:           memref.store %[[T]]#0, %{{.*}}[%[[N]]] : memref<8xf32>
// CHECK:           memref.store %[[T]]#1, %{{.*}}[%[[N]]] : memref<8xf32>
triax.model @norm config = #triax.train_config<micro_batch = 4, seq = 16, global_batch = 4> {
  triax.param @wte : tensor<16x8xf32> init <normal, std = 0.02>
  triax.param @g : tensor<8xf32> init <ones>
  triax.param @b : tensor<8xf32> init <zeros>
  func.func @forward(%tokens: tensor<4x16xi32>, %targets: tensor<4x16xi32>) -> tensor<f32> {
    %wte = triax.get_param @wte : tensor<16x8xf32>
    %g = triax.get_param @g : tensor<8xf32>
    %b = triax.get_param @b : tensor<8xf32>
    %x = triax.embedding %tokens, %wte : (tensor<4x16xi32>, tensor<16x8xf32>) -> tensor<4x16x8xf32>
    %dx, %dw, %db = triax.layer_norm_grad %x, %g, %x : (tensor<4x16x8xf32>, tensor<8xf32>, tensor<4x16x8xf32>) -> (tensor<4x16x8xf32>, tensor<8xf32>, tensor<8xf32>)
    %y = triax.layer_norm %dx, %dw, %db {eps = 1.0e-6 : f64} : (tensor<4x16x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<4x16x8xf32>
    %logits = triax.linear %y, %wte {transpose_weight} : (tensor<4x16x8xf32>, tensor<16x8xf32>) -> tensor<4x16x16xf32>
    %loss = triax.cross_entropy %logits, %targets : (tensor<4x16x16xf32>, tensor<4x16xi32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}
