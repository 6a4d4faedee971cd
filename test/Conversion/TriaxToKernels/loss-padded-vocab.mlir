// convert-triax-to-kernels on a padded vocabulary (cross_entropy classes,
// triax-pad-vocab): the row statistics run over the first `classes` columns
// (13 of 16), the same loop as an unpadded row of 13; the gradient writes
// those columns as before and zeros into the padding's 3. Vocab-parallel
// (8 columns a rank, from p*8): the rank's classes are clamp(13 - p*8, 0,
// 8), a dynamic bound (rank 1 holds 5; a rank of padding only none, its
// online state then max -inf, sum 0), and the gradient is 0 where the
// global column is 13 or more.
// RUN: triax-opt %s --convert-triax-to-kernels --cse | FileCheck %s

// CHECK-LABEL: func.func @padded(
// The loss: one pass over columns 1..13 from column 0.
// CHECK:       scf.parallel
// CHECK:         %[[C13:.*]] = arith.constant 13 : index
// CHECK:         scf.for %{{.*}} = %c1 to %[[C13]] step %c1 iter_args
// CHECK:         } {triax_online_max_sum_exp}
// The gradient: the same pass, the classes' columns, then the padding's 0.
// CHECK:       scf.parallel
// CHECK:         scf.for %{{.*}} = %c1 to %[[C13B:.*]] step %c1 iter_args
// CHECK:         } {triax_online_max_sum_exp}
// CHECK:         scf.for %{{.*}} = %c0 to %[[C13B]] step %c1 {
// CHECK:           math.exp
// CHECK:           memref.store
// CHECK:         }
// CHECK:         %[[C3:.*]] = arith.constant 3 : index
// CHECK:         scf.for %[[J:.*]] = %c0 to %[[C3]] step %c1 {
// CHECK:           %[[COL:.*]] = arith.addi %[[J]], %[[C13B]] : index
// CHECK:           %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK:           memref.store %[[ZERO]], %{{.*}}[%{{.*}}, %[[COL]]] : memref<6x16xf32>
// CHECK:         }

// CHECK-LABEL: func.func @padded_vp(
// CHECK:         %[[P:.*]] = call @trx_group_position
// CHECK:         %[[PI:.*]] = arith.index_cast %[[P]]
// CHECK:         %[[OFF:.*]] = arith.muli %[[PI]], %c8 : index
// CHECK:       scf.parallel
// CHECK:         %[[LEFT:.*]] = arith.subi %{{.*}}, %[[OFF]] : index
// CHECK:         %[[POS:.*]] = arith.maxsi %[[LEFT]], %c0 : index
// CHECK:         %[[HELD:.*]] = arith.minsi %[[POS]], %c8 : index
// CHECK:         %[[NEGINF:.*]] = arith.constant 0xFF800000 : f32
// CHECK:         %[[ZERO64:.*]] = arith.constant 0.000000e+00 : f64
// CHECK:         scf.for %{{.*}} = %c0 to %[[HELD]] step %c1 iter_args(%{{.*}} = %[[NEGINF]], %{{.*}} = %[[ZERO64]])
// CHECK:         } {triax_online_max_sum_exp}
// The gradient: a select on global column < 13.
// CHECK:         scf.for %[[V:.*]] = %c0 to %c8 step %c1 {
// CHECK:           %[[G:.*]] = arith.addi %[[V]], %{{.*}} : index
// CHECK:           %[[ISCLASS:.*]] = arith.cmpi slt, %[[G]], %{{.*}} : index
// CHECK:           %[[GRAD:.*]] = arith.select %[[ISCLASS]], %{{.*}}, %{{.*}} : f32
// CHECK:           memref.store %[[GRAD]]

dist.mesh @mesh <["tp"=2]>
triax.model @m config = #triax.train_config<micro_batch = 2, seq = 3, global_batch = 2> {
  triax.param @wte : tensor<16x8xf32> init <normal, std = 0.02> {triax.valid_shape = array<i64: 13, 8>}
  func.func @forward(%tokens: tensor<2x3xi32>, %targets: tensor<2x3xi32>) -> tensor<f32> {
    %wte = triax.get_param @wte : tensor<16x8xf32>
    %x = triax.embedding %tokens, %wte : (tensor<2x3xi32>, tensor<16x8xf32>) -> tensor<2x3x8xf32>
    %logits = triax.linear %x, %wte {transpose_weight} : (tensor<2x3x8xf32>, tensor<16x8xf32>) -> tensor<2x3x16xf32>
    %loss = triax.cross_entropy %logits, %targets {classes = 13 : i64} : (tensor<2x3x16xf32>, tensor<2x3xi32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}
func.func @padded(%l: tensor<2x3x16xf32>, %t: tensor<2x3xi32>, %d: tensor<f32>) -> (tensor<f32>, tensor<2x3x16xf32>) {
  %loss = triax.cross_entropy %l, %t {classes = 13 : i64} : (tensor<2x3x16xf32>, tensor<2x3xi32>) -> tensor<f32>
  %g = triax.cross_entropy_grad %l, %t, %d {classes = 13 : i64} : (tensor<2x3x16xf32>, tensor<2x3xi32>, tensor<f32>) -> tensor<2x3x16xf32>
  return %loss, %g : tensor<f32>, tensor<2x3x16xf32>
}
func.func @padded_vp(%l: tensor<2x3x8xf32>, %t: tensor<2x3xi32>, %d: tensor<f32>) -> (tensor<f32>, tensor<2x3x8xf32>) {
  %loss = triax.cross_entropy %l, %t vocab_parallel over @mesh ["tp"] {classes = 13 : i64} : (tensor<2x3x8xf32>, tensor<2x3xi32>) -> tensor<f32>
  %g = triax.cross_entropy_grad %l, %t, %d vocab_parallel over @mesh ["tp"] {classes = 13 : i64} : (tensor<2x3x8xf32>, tensor<2x3xi32>, tensor<f32>) -> tensor<2x3x8xf32>
  return %loss, %g : tensor<f32>, tensor<2x3x8xf32>
}
