// Round trip of the ops and attributes tensor parallelism uses:
// dist.copy_to_group, the vocab_parallel forms of the embedding and
// cross-entropy ops and their gradients, and triax.bias_add.
// RUN: triax-opt %s | triax-opt | FileCheck %s
// RUN: triax-opt %s --mlir-print-op-generic | triax-opt | FileCheck %s

dist.mesh @mesh <["dp"=2, "tp"=2]>

// CHECK-LABEL: func.func @tp
func.func @tp(%x: tensor<2x4x8xf32>, %ids: tensor<2x4xi32>, %table: tensor<8x8xf32>, %b: tensor<8xf32>, %dl: tensor<f32>) -> tensor<f32> {
  // CHECK: dist.copy_to_group %{{.*}} over @mesh ["tp"] : tensor<2x4x8xf32>
  %c = dist.copy_to_group %x over @mesh ["tp"] : tensor<2x4x8xf32>
  // CHECK: triax.bias_add %{{.*}}, %{{.*}} : tensor<2x4x8xf32>, tensor<8xf32>
  %y = triax.bias_add %c, %b : tensor<2x4x8xf32>, tensor<8xf32>
  // CHECK: triax.embedding %{{.*}}, %{{.*}} vocab_parallel over @mesh ["tp"] : (tensor<2x4xi32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
  %e = triax.embedding %ids, %table vocab_parallel over @mesh ["tp"] : (tensor<2x4xi32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
  // CHECK: triax.embedding_grad %{{.*}}, %{{.*}} vocab_parallel over @mesh ["tp"] : (tensor<2x4xi32>, tensor<2x4x8xf32>) -> tensor<8x8xf32>
  %dt = triax.embedding_grad %ids, %e vocab_parallel over @mesh ["tp"] : (tensor<2x4xi32>, tensor<2x4x8xf32>) -> tensor<8x8xf32>
  // CHECK: triax.cross_entropy %{{.*}}, %{{.*}} vocab_parallel over @mesh ["dp", "tp"] : (tensor<2x4x8xf32>, tensor<2x4xi32>) -> tensor<f32>
  %l = triax.cross_entropy %y, %ids vocab_parallel over @mesh ["dp", "tp"] : (tensor<2x4x8xf32>, tensor<2x4xi32>) -> tensor<f32>
  // CHECK: triax.cross_entropy_grad %{{.*}}, %{{.*}}, %{{.*}} vocab_parallel over @mesh ["tp"] : (tensor<2x4x8xf32>, tensor<2x4xi32>, tensor<f32>) -> tensor<2x4x8xf32>
  %dy = triax.cross_entropy_grad %y, %ids, %dl vocab_parallel over @mesh ["tp"] : (tensor<2x4x8xf32>, tensor<2x4xi32>, tensor<f32>) -> tensor<2x4x8xf32>
  return %l : tensor<f32>
}
