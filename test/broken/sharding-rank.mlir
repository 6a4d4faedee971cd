// An activation sharding with one entry per dimension too few.
// RUN: not triax-opt %s 2>&1 | FileCheck %s
// CHECK: {{.*}}sharding-rank.mlir:[[@LINE+7]]:{{[0-9]+}}: error: 'dist.sharding_constraint' op sharding has 2 dimensions but the tensor 'tensor<2x4x8xf32>' has rank 3
// CHECK-NOT: {{Stack dump|PLEASE submit}}

dist.mesh @cluster <["dp"=2, "tp"=2]>
triax.model @tiny config = #triax.train_config<micro_batch = 2, seq = 4> {
  func.func @forward(%tokens: tensor<2x4xi32>, %targets: tensor<2x4xi32>) -> tensor<f32> {
    %x = arith.constant dense<0.0> : tensor<2x4x8xf32>
    %s = dist.sharding_constraint %x <@cluster, [{"dp"}, {"tp"}]> : tensor<2x4x8xf32>
    %zero = arith.constant dense<0.0> : tensor<f32>
    return %zero : tensor<f32>
  }
}
