// dist.shard_sequence becomes a copy of this member's two chunks: member c
// of the cp group (bit 1 of the mask: dp is bit 0) keeps chunks c and
// 3 - c of the 4 chunks of 2 tokens, so local token j < 2 is global
// c * 2 + j and local token j >= 2 is global (3 - c) * 2 + (j - 2).
// RUN: triax-opt %s --convert-triax-to-kernels --canonicalize --cse | FileCheck %s

dist.mesh @mesh <["dp"=2, "cp"=2]>
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
func.func @shard(%t: tensor<2x8xi32>) -> tensor<2x4xi32> {
  %s = dist.shard_sequence %t over @mesh ["cp"] dim 1 : tensor<2x8xi32> -> tensor<2x4xi32>
  return %s : tensor<2x4xi32>
}
// CHECK-LABEL: func.func @shard(
// CHECK-SAME: %[[IN:.*]]: memref<2x8xi32>) -> memref<2x4xi32>
// CHECK-DAG: %[[C3:.*]] = arith.constant 3 : index
// CHECK-DAG: %[[C2:.*]] = arith.constant 2 : index
// CHECK-DAG: %[[CP:.*]] = arith.constant 2 : i64
// CHECK: %[[POS:.*]] = call @trx_group_position(%[[CP]]) : (i64) -> i64
// CHECK: %[[C:.*]] = arith.index_cast %[[POS]] : i64 to index
// CHECK: %[[OUT:.*]] = memref.alloc() : memref<2x4xi32>
// CHECK: scf.parallel (%[[B:.*]], %[[J:.*]]) =
// CHECK: %[[EARLY:.*]] = arith.cmpi ult, %[[J]], %[[C2]] : index
// CHECK: %[[MIRROR:.*]] = arith.subi %[[C3]], %[[C]] : index
// CHECK: %[[CHUNK:.*]] = arith.select %[[EARLY]], %[[C]], %[[MIRROR]] : index
// CHECK: %[[LATE:.*]] = arith.subi %[[J]], %[[C2]] : index
// CHECK: %[[IN_CHUNK:.*]] = arith.select %[[EARLY]], %[[J]], %[[LATE]] : index
// CHECK: %[[START:.*]] = arith.muli %[[CHUNK]], %[[C2]] : index
// CHECK: %[[S:.*]] = arith.addi %[[START]], %[[IN_CHUNK]] : index
// CHECK: %[[X:.*]] = memref.load %[[IN]][%[[B]], %[[S]]] : memref<2x8xi32>
// CHECK: memref.store %[[X]], %[[OUT]][%[[B]], %[[J]]] : memref<2x4xi32>

// The contiguous form (a sequence-parallel slice of a member's tokens):
// member c keeps tokens c * 4 .. c * 4 + 3.
func.func @slice(%t: tensor<2x8xi32>) -> tensor<2x4xi32> {
  %s = dist.shard_sequence %t over @mesh ["cp"] dim 1 contiguous : tensor<2x8xi32> -> tensor<2x4xi32>
  return %s : tensor<2x4xi32>
}
// CHECK-LABEL: func.func @slice(
// CHECK-SAME: %[[IN:.*]]: memref<2x8xi32>) -> memref<2x4xi32>
// CHECK-DAG: %[[C4:.*]] = arith.constant 4 : index
// CHECK-DAG: %[[CP:.*]] = arith.constant 2 : i64
// CHECK: %[[POS:.*]] = call @trx_group_position(%[[CP]]) : (i64) -> i64
// CHECK: %[[C:.*]] = arith.index_cast %[[POS]] : i64 to index
// CHECK: %[[OUT:.*]] = memref.alloc() : memref<2x4xi32>
// CHECK: scf.parallel (%[[B:.*]], %[[J:.*]]) =
// CHECK: %[[START:.*]] = arith.muli %[[C]], %[[C4]] : index
// CHECK: %[[S:.*]] = arith.addi %[[START]], %[[J]] : index
// CHECK: %[[X:.*]] = memref.load %[[IN]][%[[B]], %[[S]]] : memref<2x8xi32>
// CHECK: memref.store %[[X]], %[[OUT]][%[[B]], %[[J]]] : memref<2x4xi32>
