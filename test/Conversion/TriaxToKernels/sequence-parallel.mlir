// dist.all_gather and dist.reduce_scatter along a dimension become the
// runtime's flat collectives (trx_all_gather_f32 / trx_reduce_scatter_f32:
// contiguous buffers, blocks in group order). Along dimension 1 of
// [batch, seq, hidden] (sequence parallelism) member c's block is not
// contiguous: the input is packed into group-major order
// packed[c, b, s, h] = x[b, c * S/n + s, h] before a reduce_scatter, and an
// all_gather's group-major result is unpacked the same way. Along the
// outermost dimension the buffers are used as they are. The
// sequence-parallel position ids start at the rank's tp position times the
// local sequence length. (tp is bit 1 of the mask; dp bit 0.)
// RUN: triax-opt %s --triax-autodiff --convert-triax-to-kernels --canonicalize --cse | FileCheck %s

dist.mesh @mesh <["dp"=2, "tp"=2]>
// The conversion needs a model; this one only comes along.
triax.model @m config = #triax.train_config<micro_batch = 1, seq = 2> {
  triax.param @emb : tensor<4x2xf32> init <normal, std = 0.02> decay
  func.func @forward(%tokens: tensor<1x2xi32>, %targets: tensor<1x2xi32>) -> tensor<f32> {
    %emb = triax.get_param @emb : tensor<4x2xf32>
    %x = triax.embedding %tokens, %emb : (tensor<1x2xi32>, tensor<4x2xf32>) -> tensor<1x2x2xf32>
    %logits = triax.linear %x, %emb {transpose_weight} : (tensor<1x2x2xf32>, tensor<4x2xf32>) -> tensor<1x2x4xf32>
    %loss = triax.cross_entropy %logits, %targets : (tensor<1x2x4xf32>, tensor<1x2xi32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// CHECK-LABEL: func.func @gather(
// CHECK-SAME: %[[X:.*]]: memref<2x3x4xf32>) -> memref<2x6x4xf32>
// CHECK-DAG: %[[TP:.*]] = arith.constant 2 : i64
// CHECK: %[[OUT:.*]] = memref.alloc() : memref<2x6x4xf32>
// CHECK: %[[TMP:.*]] = memref.alloc() : memref<48xf32>
// CHECK: %[[XF:.*]] = memref.collapse_shape %[[X]] {{\[\[}}0, 1, 2]] : memref<2x3x4xf32> into memref<24xf32>
// CHECK: %[[XD:.*]] = memref.cast %[[XF]] : memref<24xf32> to memref<?xf32>
// CHECK: %[[TD:.*]] = memref.cast %[[TMP]] : memref<48xf32> to memref<?xf32>
// CHECK: call @trx_all_gather_f32(%[[XD]], %[[TD]], %[[TP]]) : (memref<?xf32>, memref<?xf32>, i64) -> ()
// CHECK: %[[OF:.*]] = memref.collapse_shape %[[OUT]] {{\[\[}}0, 1, 2]] : memref<2x6x4xf32> into memref<48xf32>
// Over (c, b, s, h) in [2, 2, 3, 4]: out[((b * 2 + c) * 3 + s) * 4 + h] =
// tmp[((c * 2 + b) * 3 + s) * 4 + h].
// CHECK: scf.parallel (%[[C:.*]], %[[B:.*]], %[[S:.*]], %[[H:.*]]) = {{.*}} to (%c2, %c2, %c3, %c4)
// CHECK: %[[B2:.*]] = arith.muli %[[B]], %c2 : index
// CHECK: %[[ROW:.*]] = arith.addi %[[B2]], %[[C]] : index
// CHECK: %[[C2:.*]] = arith.muli %[[C]], %c2 : index
// CHECK: %[[BLK:.*]] = arith.addi %[[C2]], %[[B]] : index
// CHECK: %[[V:.*]] = memref.load %[[TMP]][%{{.*}}] : memref<48xf32>
// CHECK: memref.store %[[V]], %[[OF]][%{{.*}}] : memref<48xf32>
// CHECK: memref.dealloc %[[TMP]] : memref<48xf32>
// CHECK: return %[[OUT]] : memref<2x6x4xf32>
func.func @gather(%x: tensor<2x3x4xf32>) -> tensor<2x6x4xf32> {
  %y = dist.all_gather %x over @mesh ["tp"] dim 1 : tensor<2x3x4xf32> -> tensor<2x6x4xf32>
  return %y : tensor<2x6x4xf32>
}

// CHECK-LABEL: func.func @scatter(
// CHECK-SAME: %[[X:.*]]: memref<2x6x4xf32>) -> memref<2x3x4xf32>
// CHECK-DAG: %[[TP:.*]] = arith.constant 2 : i64
// CHECK-DAG: %[[SUM:.*]] = arith.constant 0 : i32
// CHECK: %[[TMP:.*]] = memref.alloc() : memref<48xf32>
// CHECK: %[[XF:.*]] = memref.collapse_shape %[[X]] {{\[\[}}0, 1, 2]] : memref<2x6x4xf32> into memref<48xf32>
// CHECK: scf.parallel ({{.*}}) = {{.*}} to (%c2, %c2, %c3, %c4)
// CHECK: %[[V:.*]] = memref.load %[[XF]][%{{.*}}] : memref<48xf32>
// CHECK: memref.store %[[V]], %[[TMP]][%{{.*}}] : memref<48xf32>
// CHECK: %[[OUT:.*]] = memref.alloc() : memref<2x3x4xf32>
// CHECK: %[[TD:.*]] = memref.cast %[[TMP]] : memref<48xf32> to memref<?xf32>
// CHECK: %[[OF:.*]] = memref.collapse_shape %[[OUT]]
// CHECK: %[[OD:.*]] = memref.cast %[[OF]] : memref<24xf32> to memref<?xf32>
// CHECK: call @trx_reduce_scatter_f32(%[[TD]], %[[OD]], %[[SUM]], %[[TP]]) : (memref<?xf32>, memref<?xf32>, i32, i64) -> ()
// CHECK: memref.dealloc %[[TMP]] : memref<48xf32>
// CHECK: return %[[OUT]] : memref<2x3x4xf32>
func.func @scatter(%x: tensor<2x6x4xf32>) -> tensor<2x3x4xf32> {
  %y = dist.reduce_scatter sum %x over @mesh ["tp"] dim 1 : tensor<2x6x4xf32> -> tensor<2x3x4xf32>
  return %y : tensor<2x3x4xf32>
}

// Dimension 0: no copy.
// CHECK-LABEL: func.func @gather0(
// CHECK-NOT: scf.parallel
// CHECK: call @trx_all_gather_f32(%{{.*}}, %{{.*}}, %c1_i64)
// CHECK-NOT: scf.parallel
// CHECK: return
func.func @gather0(%x: tensor<3x4xf32>) -> tensor<6x4xf32> {
  %y = dist.all_gather %x over @mesh ["dp"] dim 0 : tensor<3x4xf32> -> tensor<6x4xf32>
  return %y : tensor<6x4xf32>
}

// CHECK-LABEL: func.func @positions()
// CHECK: %[[POS:.*]] = call @trx_group_position(%c2_i64) : (i64) -> i64
// CHECK: %[[I:.*]] = arith.index_cast %[[POS]] : i64 to index
// CHECK: %[[OFF:.*]] = arith.muli %[[I]], %c3 : index
// CHECK: scf.parallel (%[[B:.*]], %[[S:.*]]) = {{.*}} to (%c2, %c3)
// CHECK: %[[P:.*]] = arith.addi %[[OFF]], %[[S]] : index
// CHECK: %[[P32:.*]] = arith.index_cast %[[P]] : index to i32
// CHECK: memref.store %[[P32]], %{{.*}}[%[[B]], %[[S]]] : memref<2x3xi32>
func.func @positions() -> tensor<2x3xi32> {
  %p = triax.position_ids sequence_parallel over @mesh ["tp"] : tensor<2x3xi32>
  return %p : tensor<2x3xi32>
}
