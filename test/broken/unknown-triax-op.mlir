// An op the triax dialect does not have.
// RUN: not triax-opt %s 2>&1 | FileCheck %s
// CHECK: {{.*}}unknown-triax-op.mlir:[[@LINE+6]]:{{[0-9]+}}: error: custom op 'triax.matmul' is unknown
// CHECK-NOT: {{Stack dump|PLEASE submit}}

triax.model @tiny config = #triax.train_config<micro_batch = 2, seq = 4> {
  func.func @forward(%tokens: tensor<2x4xi32>, %targets: tensor<2x4xi32>) -> tensor<f32> {
    %x = arith.constant dense<0.0> : tensor<2x4x8xf32>
    %y = triax.matmul %x, %x : tensor<2x4x8xf32>
    %zero = arith.constant dense<0.0> : tensor<f32>
    return %zero : tensor<f32>
  }
}
