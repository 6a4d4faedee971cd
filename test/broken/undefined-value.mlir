// A use of a value that is never defined.
// RUN: not triax-opt %s 2>&1 | FileCheck %s
// CHECK: {{.*}}undefined-value.mlir:[[@LINE+5]]:{{[0-9]+}}: error: use of undeclared SSA value name
// CHECK-NOT: {{Stack dump|PLEASE submit}}

triax.model @tiny config = #triax.train_config<micro_batch = 2, seq = 4> {
  func.func @forward(%tokens: tensor<2x4xi32>, %targets: tensor<2x4xi32>) -> tensor<f32> {
    %g = triax.gelu %hidden : tensor<2x4x8xf32>
    %zero = arith.constant dense<0.0> : tensor<f32>
    return %zero : tensor<f32>
  }
}
