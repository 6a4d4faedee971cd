// A misspelt training-config key.
// RUN: not triax-opt %s 2>&1 | FileCheck %s
// CHECK: {{.*}}config-unknown-key.mlir:[[@LINE+3]]:{{[0-9]+}}: error: unknown train_config key 'micro_batches'
// CHECK-NOT: {{Stack dump|PLEASE submit}}

triax.model @tiny config = #triax.train_config<micro_batches = 2, seq = 4> {
  func.func @forward(%tokens: tensor<2x4xi32>, %targets: tensor<2x4xi32>) -> tensor<f32> {
    %zero = arith.constant dense<0.0> : tensor<f32>
    return %zero : tensor<f32>
  }
}
