// A global batch that is not a multiple of the micro-batch.
// RUN: not triax-opt %s 2>&1 | FileCheck %s
// CHECK: {{.*}}config-global-batch.mlir:[[@LINE+3]]:{{[0-9]+}}: error: global_batch 6 must be a positive multiple of micro_batch 4
// CHECK-NOT: {{Stack dump|PLEASE submit}}

triax.model @tiny config = #triax.train_config<global_batch = 6, micro_batch = 4, seq = 4> {
  func.func @forward(%tokens: tensor<4x4xi32>, %targets: tensor<4x4xi32>) -> tensor<f32> {
    %zero = arith.constant dense<0.0> : tensor<f32>
    return %zero : tensor<f32>
  }
}
