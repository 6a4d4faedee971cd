// A parameter dimension that does not divide over its shards.
// RUN: not triax-opt %s 2>&1 | FileCheck %s
// CHECK: {{.*}}shard-indivisible.mlir:[[@LINE+5]]:{{[0-9]+}}: error: 'triax.param' op dimension 0 of size 10 is not divisible by 4, the number of shards over its axes
// CHECK-NOT: {{Stack dump|PLEASE submit}}

dist.mesh @cluster <["dp"=2, "tp"=4]>
triax.model @tiny config = #triax.train_config<micro_batch = 2, seq = 4> {
  triax.param @wte : tensor<10x8xf32> init <normal, std = 0.02> decay {dist.sharding = #dist.sharding<@cluster, [{"tp"}, {}]>}
  func.func @forward(%tokens: tensor<2x4xi32>, %targets: tensor<2x4xi32>) -> tensor<f32> {
    %zero = arith.constant dense<0.0> : tensor<f32>
    return %zero : tensor<f32>
  }
}
