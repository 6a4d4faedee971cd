// A misspelt dialect name.
// RUN: not triax-opt %s 2>&1 | FileCheck %s
// CHECK: {{.*}}unknown-dialect.mlir:[[@LINE+3]]:{{[0-9]+}}: error: Dialect `trax' not found for custom op 'trax.model'
// CHECK-NOT: {{Stack dump|PLEASE submit}}

trax.model @tiny config = #triax.train_config<micro_batch = 2, seq = 4> {
  func.func @forward(%tokens: tensor<2x4xi32>, %targets: tensor<2x4xi32>) -> tensor<f32> {
    %zero = arith.constant dense<0.0> : tensor<f32>
    return %zero : tensor<f32>
  }
}
