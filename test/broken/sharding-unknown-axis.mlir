// A parameter sharded over an axis the mesh does not have.
// RUN: not triax-opt %s 2>&1 | FileCheck %s
// CHECK: {{.*}}sharding-unknown-axis.mlir:[[@LINE+5]]:{{[0-9]+}}: error: 'triax.param' op unknown axis "sp" in mesh @cluster
// CHECK-NOT: {{Stack dump|PLEASE submit}}

dist.mesh @cluster <["dp"=2, "pp"=2, "tp"=2]>
triax.model @tiny config = #triax.train_config<micro_batch = 2, seq = 4> {
  triax.param @wte : tensor<16x8xf32> init <normal, std = 0.02> decay {dist.sharding = #dist.sharding<@cluster, [{"sp"}, {}]>}
  func.func @forward(%tokens: tensor<2x4xi32>, %targets: tensor<2x4xi32>) -> tensor<f32> {
    %zero = arith.constant dense<0.0> : tensor<f32>
    return %zero : tensor<f32>
  }
}
