// layer_norm, rms_norm and their gradients: one scf.parallel over the rows
// per forward op (statistics in sequential reduction loops, then the row),
// and for the gradients dx parallel over rows and the parameter gradients
// parallel over columns with a sequential sum over rows.
// RUN: triax-opt %s --convert-triax-to-kernels | FileCheck %s --implicit-check-not=triax.
// RUN: triax-opt %s --convert-triax-to-kernels=column-sums=rows | FileCheck %s --check-prefix=ROWS

// column-sums=rows (the CPU pipeline): the weight and bias gradients as
// one parallel iteration per block of columns (here all 8), walking the 6
// rows in order; row 0 starts each sum at 0 + its term, later rows add to
// it (the same additions as the column walk above, so the same bits).
// ROWS-LABEL: func.func @triax_forward(
// ROWS: %[[DW:.*]] = memref.alloc() : memref<8xf32>
// ROWS: %[[DB:.*]] = memref.alloc() : memref<8xf32>
// ROWS: %[[MEANS:.*]] = memref.alloc() : memref<6xf32>
// ROWS: %[[RSTDS:.*]] = memref.alloc() : memref<6xf32>
// ROWS: scf.parallel (%[[NB:.*]]) = (%{{.*}}) to (%c1{{.*}}) step
// ROWS:   %[[BASE:.*]] = arith.muli %[[NB]], %c8
// ROWS:   scf.for %[[ROW:.*]] = %{{.*}} to %c6{{.*}} step
// ROWS:     %[[FIRST:.*]] = arith.cmpi eq, %[[ROW]], %{{.*}} : index
// ROWS:     scf.for %[[J:.*]] = %{{.*}} to %c8{{.*}} step
// ROWS:       %[[H:.*]] = arith.addi %[[BASE]], %[[J]] : index
// ROWS:       %[[OLDW:.*]] = memref.load %[[DW]][%[[H]]] : memref<8xf32>
// ROWS:       %[[STARTW:.*]] = arith.select %[[FIRST]], %{{.*}}, %[[OLDW]] : f32
// ROWS:       %[[OLDB:.*]] = memref.load %[[DB]][%[[H]]] : memref<8xf32>
// ROWS:       %[[STARTB:.*]] = arith.select %[[FIRST]], %{{.*}}, %[[OLDB]] : f32
// ROWS-DAG:   memref.load %[[MEANS]][%[[ROW]]]
// ROWS-DAG:   memref.load %[[RSTDS]][%[[ROW]]]
// ROWS:       %[[NEWW:.*]] = arith.addf %[[STARTW]], %{{.*}} : f32
// ROWS:       memref.store %[[NEWW]], %[[DW]][%[[H]]]
// ROWS:       %[[NEWB:.*]] = arith.addf %[[STARTB]], %{{.*}} : f32
// ROWS:       memref.store %[[NEWB]], %[[DB]][%[[H]]]
// rms_norm_grad's weight gradient the same way.
// ROWS: scf.parallel (%{{.*}}) = (%{{.*}}) to (%c1{{.*}}) step
// ROWS:   scf.for %{{.*}} = %{{.*}} to %c6{{.*}} step
// ROWS:     scf.for %{{.*}} = %{{.*}} to %c8{{.*}} step
// ROWS:       arith.select

triax.model @norms config = #triax.train_config<micro_batch = 2, seq = 3, global_batch = 2> {
  triax.param @wte : tensor<16x8xf32> init <normal, std = 0.02>
  triax.param @g : tensor<8xf32> init <ones>
  triax.param @b : tensor<8xf32> init <zeros>
  func.func @forward(%tokens: tensor<2x3xi32>, %targets: tensor<2x3xi32>) -> tensor<f32> {
    %wte = triax.get_param @wte : tensor<16x8xf32>
    %g = triax.get_param @g : tensor<8xf32>
    %b = triax.get_param @b : tensor<8xf32>
    %x = triax.embedding %tokens, %wte : (tensor<2x3xi32>, tensor<16x8xf32>) -> tensor<2x3x8xf32>
    %y = triax.layer_norm %x, %g, %b {eps = 1.0e-6 : f64} : (tensor<2x3x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x3x8xf32>
    %dx, %dw, %db = triax.layer_norm_grad %x, %g, %y : (tensor<2x3x8xf32>, tensor<8xf32>, tensor<2x3x8xf32>) -> (tensor<2x3x8xf32>, tensor<8xf32>, tensor<8xf32>)
    %r = triax.rms_norm %dx, %dw : (tensor<2x3x8xf32>, tensor<8xf32>) -> tensor<2x3x8xf32>
    %dr, %drw = triax.rms_norm_grad %r, %db, %y : (tensor<2x3x8xf32>, tensor<8xf32>, tensor<2x3x8xf32>) -> (tensor<2x3x8xf32>, tensor<8xf32>)
    %logits = triax.linear %dr, %wte {transpose_weight} : (tensor<2x3x8xf32>, tensor<16x8xf32>) -> tensor<2x3x16xf32>
    %loss = triax.cross_entropy %logits, %targets : (tensor<2x3x16xf32>, tensor<2x3xi32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// CHECK-LABEL: func.func @triax_forward(
// CHECK-DAG: %[[G:.*]] = memref.cast %{{.*}} : memref<?xf32> to memref<8xf32>
// CHECK-DAG: %[[B:.*]] = memref.cast %{{.*}} : memref<?xf32> to memref<8xf32>
// CHECK: %[[X:.*]] = memref.alloc() : memref<2x3x8xf32>

// layer_norm: mean, then the biased variance of x - mean, then the row.
// CHECK: %[[Y:.*]] = memref.alloc() : memref<2x3x8xf32>
// CHECK: %[[XR:.*]] = memref.collapse_shape %[[X]] {{\[}}[0, 1], [2]] : memref<2x3x8xf32> into memref<6x8xf32>
// CHECK: %[[YR:.*]] = memref.collapse_shape %[[Y]] {{\[}}[0, 1], [2]] : memref<2x3x8xf32> into memref<6x8xf32>
// CHECK: scf.parallel (%[[R:.*]]) = (%{{.*}}) to (%c6{{.*}}) step
// CHECK-NOT: scf.parallel
// CHECK: %[[SUM:.*]] = scf.for %[[C:.*]] = %{{.*}} to %c8{{.*}} iter_args(%[[ACC:.*]] = %{{.*}}) -> (f32) {
// CHECK-NEXT: %[[XV:.*]] = memref.load %[[XR]][%[[R]], %[[C]]] : memref<6x8xf32>
// CHECK-NEXT: arith.addf %[[ACC]], %[[XV]] : f32
// CHECK: %[[MEAN:.*]] = arith.divf %[[SUM]], %{{.*}} : f32
// CHECK: scf.for {{.*}} iter_args
// CHECK: arith.subf %{{.*}}, %[[MEAN]] : f32
// CHECK: arith.constant 9.99999997E-7 : f32
// CHECK: math.sqrt
// CHECK: %[[RSTD:.*]] = arith.divf %{{.*}}, %{{.*}} : f32
// CHECK: scf.for %[[C2:.*]] = %{{.*}} to %c8
// CHECK: arith.subf %{{.*}}, %[[MEAN]] : f32
// CHECK: arith.mulf %{{.*}}, %[[RSTD]] : f32
// CHECK-DAG: memref.load %[[G]][%[[C2]]]
// CHECK-DAG: memref.load %[[B]][%[[C2]]]
// CHECK: memref.store %{{.*}}, %[[YR]][%[[R]], %[[C2]]] : memref<6x8xf32>
// CHECK: scf.reduce

// layer_norm_grad: dx per row (statistics kept for the column sums), then
// dw and db per column, summed over the rows in order.
// CHECK: %[[DX:.*]] = memref.alloc() : memref<2x3x8xf32>
// CHECK: %[[DW:.*]] = memref.alloc() : memref<8xf32>
// CHECK: %[[DB:.*]] = memref.alloc() : memref<8xf32>
// CHECK: %[[MEANS:.*]] = memref.alloc() : memref<6xf32>
// CHECK: %[[RSTDS:.*]] = memref.alloc() : memref<6xf32>
// CHECK: scf.parallel (%[[R:.*]]) = (%{{.*}}) to (%c6{{.*}}) step
// CHECK-NOT: scf.parallel
// CHECK: arith.constant 9.99999974E-6 : f32
// CHECK: memref.store %[[M:.*]], %[[MEANS]][%[[R]]]
// CHECK: memref.store %[[S:.*]], %[[RSTDS]][%[[R]]]
// CHECK: %{{.*}}:2 = scf.for {{.*}} -> (f32, f32) {
// CHECK: scf.for
// CHECK: memref.store %{{.*}}, %{{.*}}[%[[R]], %{{.*}}] : memref<6x8xf32>
// CHECK: scf.reduce
// CHECK: scf.parallel (%[[H:.*]]) = (%{{.*}}) to (%c8{{.*}}) step
// CHECK: %[[SUMS:.*]]:2 = scf.for %[[ROW:.*]] = %{{.*}} to %c6{{.*}} iter_args({{.*}}) -> (f32, f32) {
// CHECK-DAG: memref.load %[[RSTDS]][%[[ROW]]]
// CHECK-DAG: memref.load %[[MEANS]][%[[ROW]]]
// CHECK: scf.yield
// CHECK: memref.store %[[SUMS]]#0, %[[DW]][%[[H]]]
// CHECK: memref.store %[[SUMS]]#1, %[[DB]][%[[H]]]

// rms_norm: rstd from the mean of squares, then the row.
// CHECK: scf.parallel (%[[R:.*]]) = (%{{.*}}) to (%c6{{.*}}) step
// CHECK-NOT: scf.parallel
// CHECK: scf.for {{.*}} iter_args({{.*}}) -> (f32)
// CHECK: math.sqrt
// CHECK: scf.for
// CHECK: memref.store %{{.*}}, %{{.*}}[%[[R]], %{{.*}}] : memref<6x8xf32>
// CHECK: scf.reduce

// rms_norm_grad: dx per row, then dw per column.
// CHECK: %[[RDW:.*]] = memref.alloc() : memref<8xf32>
// CHECK: %[[RRSTDS:.*]] = memref.alloc() : memref<6xf32>
// CHECK: scf.parallel (%[[R:.*]]) = (%{{.*}}) to (%c6{{.*}}) step
// CHECK-NOT: scf.parallel
// CHECK: math.sqrt
// CHECK: memref.store %{{.*}}, %[[RRSTDS]][%[[R]]]
// CHECK: scf.for {{.*}} iter_args({{.*}}) -> (f32)
// CHECK: scf.for
// CHECK: memref.store %{{.*}}, %{{.*}}[%[[R]], %{{.*}}] : memref<6x8xf32>
// CHECK: scf.reduce
// CHECK: scf.parallel (%[[H:.*]]) = (%{{.*}}) to (%c8{{.*}}) step
// CHECK: %[[RSUM:.*]] = scf.for %{{.*}} = %{{.*}} to %c6{{.*}} iter_args({{.*}}) -> (f32)
// CHECK: memref.store %[[RSUM]], %[[RDW]][%[[H]]]
// CHECK: call @trx_sgemm
// CHECK: return
