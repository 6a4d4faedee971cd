// The vocab-parallel kernels (vocab_parallel over @mesh ["tp"], mask 2 = bit
// 1: "tp" is the mesh's second axis). Each asks the runtime for the rank's
// position p in the group (trx_group_position) and holds vocabulary entries
// [p*V, (p+1)*V), V the local size (8 here). copy_to_group moves nothing;
// bias_add adds the bias along the last dimension.
// RUN: triax-opt %s --convert-triax-to-kernels | FileCheck %s

// CHECK: func.func private @trx_group_position(i64) -> i64
// CHECK-NOT: llvm.emit_c_interface

// The lookup: the global id minus the offset, compared unsigned with V (a
// negative difference is out of range too); rows elsewhere read 0.
// CHECK-LABEL: func.func @lookup(
// CHECK-SAME: %[[IDS:.*]]: memref<2x3xi32>, %[[TABLE:.*]]: memref<8x4xf32>
// CHECK: %[[P:.*]] = call @trx_group_position(%c2_i64) : (i64) -> i64
// CHECK: %[[PI:.*]] = arith.index_cast %[[P]] : i64 to index
// CHECK: %[[OFF:.*]] = arith.muli %[[PI]], %c8 : index
// CHECK: scf.parallel
// CHECK: %[[ID:.*]] = arith.index_cast
// CHECK: %[[LOCAL:.*]] = arith.subi %[[ID]], %[[OFF]] : index
// CHECK: %[[IN:.*]] = arith.cmpi ult, %[[LOCAL]], %{{.*}} : index
// CHECK: %[[ROW:.*]] = arith.select %[[IN]], %[[LOCAL]], %{{.*}} : index
// CHECK: %[[V:.*]] = memref.load %[[TABLE]][%[[ROW]], %{{.*}}] : memref<8x4xf32>
// CHECK: %[[Z:.*]] = arith.select %[[IN]], %[[V]], %{{.*}} : f32
// CHECK: memref.store %[[Z]]
// CHECK-NOT: trx_all_reduce
// CHECK: return

// The gradient: only this rank's rows receive anything.
// CHECK-LABEL: func.func @lookup_grad(
// CHECK: call @trx_group_position(%c2_i64)
// CHECK: scf.for
// CHECK: %[[IN:.*]] = arith.cmpi ult
// CHECK: %[[ROW:.*]] = arith.select %[[IN]]
// CHECK: %[[DY:.*]] = memref.load
// CHECK: %[[G:.*]] = arith.select %[[IN]], %[[DY]], %{{.*}} : f32
// CHECK: %[[OLD:.*]] = memref.load %{{.*}}[%[[ROW]], %{{.*}}] : memref<8x4xf32>
// CHECK: %[[NEW:.*]] = arith.addf %[[OLD]], %[[G]] : f32
// CHECK: memref.store %[[NEW]], %{{.*}}[%[[ROW]], %{{.*}}] : memref<8x4xf32>

// The loss: one pass over the local columns gives each row's local max and
// sum of exp(x - local max) (the online softmax) and the target logit (0
// off-rank); the maxima all_reduce max (2) over tp; each local sum is
// rescaled by exp(local max - group max); the sums and the target logits,
// one [2, rows] buffer, all_reduce sum (0). The logits are never sent.
// CHECK-LABEL: func.func @loss(
// CHECK: call @trx_group_position(%c2_i64)
// CHECK: %[[MAX:.*]] = memref.alloc() : memref<6xf32>
// CHECK: %[[STATS:.*]] = memref.alloc() : memref<2x6xf32>
// CHECK: %[[LOCAL:.*]] = memref.alloc() : memref<6xf32>
// CHECK: scf.parallel
// CHECK: scf.for {{.*}} -> (f32, f64)
// CHECK: math.exp
// CHECK: memref.store %{{.*}}, %[[MAX]]
// CHECK: memref.store %{{.*}}, %[[LOCAL]]
// CHECK: memref.store %{{.*}}, %[[STATS]][%c0
// CHECK: arith.cmpi ult
// CHECK: memref.store %{{.*}}, %[[STATS]][%c1
// CHECK: %[[MC:.*]] = memref.cast %[[MAX]] : memref<6xf32> to memref<?xf32>
// CHECK: call @trx_all_reduce_f32(%[[MC]], %c2_i32, %c2_i64{{.*}}) : (memref<?xf32>, i32, i64) -> ()
// CHECK: scf.parallel
// CHECK: %[[LM:.*]] = memref.load %[[LOCAL]]
// CHECK: %[[GM:.*]] = memref.load %[[MAX]]
// CHECK: %[[D:.*]] = arith.subf %[[LM]], %[[GM]] : f32
// CHECK: %[[SHIFT:.*]] = math.exp %[[D]] : f32
// CHECK: %[[SUM:.*]] = memref.load %[[STATS]]
// CHECK: %[[RESCALED:.*]] = arith.mulf %[[SUM]], %[[SHIFT]] : f32
// CHECK: memref.store %[[RESCALED]], %[[STATS]]
// CHECK: %[[FLAT:.*]] = memref.collapse_shape %[[STATS]] {{\[\[}}0, 1]] : memref<2x6xf32> into memref<12xf32>
// CHECK: %[[SC:.*]] = memref.cast %[[FLAT]] : memref<12xf32> to memref<?xf32>
// CHECK: call @trx_all_reduce_f32(%[[SC]], %c0_i32, %c2_i64{{.*}}) : (memref<?xf32>, i32, i64) -> ()
// CHECK: math.log
// CHECK-NOT: trx_all_reduce
// CHECK: return

// The loss gradient: the same statistics, then softmax with the global max
// and sum, minus 1 where the local column plus the offset is the target.
// CHECK-LABEL: func.func @loss_grad(
// CHECK: %[[P:.*]] = call @trx_group_position(%c2_i64)
// CHECK: %[[PI:.*]] = arith.index_cast %[[P]] : i64 to index
// CHECK: %[[OFF:.*]] = arith.muli %[[PI]], %c8 : index
// CHECK: call @trx_all_reduce_f32({{.*}}, %c2_i32,
// CHECK: call @trx_all_reduce_f32({{.*}}, %c0_i32,
// CHECK: scf.for %[[V:.*]] = 
// CHECK: arith.divf
// CHECK: %[[GLOBAL:.*]] = arith.addi %[[V]], %[[OFF]] : index
// CHECK: arith.cmpi eq, %[[GLOBAL]], %{{.*}} : index

// CHECK-LABEL: func.func @copy(
// CHECK-SAME: %[[X:.*]]: memref<2x4xf32>, %[[B:.*]]: memref<4xf32>
// CHECK-NOT: call
// CHECK: scf.parallel (%[[I:.*]], %[[J:.*]]) =
// CHECK: %[[XV:.*]] = memref.load %[[X]][%[[I]], %[[J]]]
// CHECK: %[[BV:.*]] = memref.load %[[B]][%[[J]]]
// CHECK: arith.addf %[[XV]], %[[BV]] : f32
dist.mesh @mesh <["dp"=2, "tp"=2]>
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
func.func @lookup(%ids: tensor<2x3xi32>, %table: tensor<8x4xf32>) -> tensor<2x3x4xf32> {
  %x = triax.embedding %ids, %table vocab_parallel over @mesh ["tp"] : (tensor<2x3xi32>, tensor<8x4xf32>) -> tensor<2x3x4xf32>
  return %x : tensor<2x3x4xf32>
}
func.func @lookup_grad(%ids: tensor<2x3xi32>, %dy: tensor<2x3x4xf32>) -> tensor<8x4xf32> {
  %g = triax.embedding_grad %ids, %dy vocab_parallel over @mesh ["tp"] : (tensor<2x3xi32>, tensor<2x3x4xf32>) -> tensor<8x4xf32>
  return %g : tensor<8x4xf32>
}
func.func @loss(%logits: tensor<2x3x8xf32>, %t: tensor<2x3xi32>) -> tensor<f32> {
  %l = triax.cross_entropy %logits, %t vocab_parallel over @mesh ["tp"] : (tensor<2x3x8xf32>, tensor<2x3xi32>) -> tensor<f32>
  return %l : tensor<f32>
}
func.func @loss_grad(%logits: tensor<2x3x8xf32>, %t: tensor<2x3xi32>, %d: tensor<f32>) -> tensor<2x3x8xf32> {
  %g = triax.cross_entropy_grad %logits, %t, %d vocab_parallel over @mesh ["tp"] : (tensor<2x3x8xf32>, tensor<2x3xi32>, tensor<f32>) -> tensor<2x3x8xf32>
  return %g : tensor<2x3x8xf32>
}
func.func @copy(%x: tensor<2x4xf32>, %b: tensor<4xf32>) -> tensor<2x4xf32> {
  %c = dist.copy_to_group %x over @mesh ["tp"] : tensor<2x4xf32>
  %y = triax.bias_add %c, %b : tensor<2x4xf32>, tensor<4xf32>
  return %y : tensor<2x4xf32>
}
