// A mesh that names one axis twice.
// RUN: not triax-opt %s 2>&1 | FileCheck %s
// CHECK: {{.*}}mesh-duplicate-axis.mlir:[[@LINE+3]]:{{[0-9]+}}: error: 'dist.mesh' op axis "dp" appears more than once
// CHECK-NOT: {{Stack dump|PLEASE submit}}

dist.mesh @cluster <["dp"=2, "pp"=2, "dp"=2]>
triax.model @tiny config = #triax.train_config<micro_batch = 2, seq = 4> {
  func.func @forward(%tokens: tensor<2x4xi32>, %targets: tensor<2x4xi32>) -> tensor<f32> {
    %zero = arith.constant dense<0.0> : tensor<f32>
    return %zero : tensor<f32>
  }
}
