// Tokens of rank 3 where the config says [micro_batch, seq].
// RUN: not triax-opt %s 2>&1 | FileCheck %s
// CHECK: {{.*}}tokens-rank.mlir:[[@LINE+3]]:{{[0-9]+}}: error: 'triax.model' op @forward's tokens have shape [2, 4, 1], expected [micro_batch, seq] = [2, 4]
// CHECK-NOT: {{Stack dump|PLEASE submit}}

triax.model @tiny config = #triax.train_config<micro_batch = 2, seq = 4> {
  func.func @forward(%tokens: tensor<2x4x1xi32>, %targets: tensor<2x4xi32>) -> tensor<f32> {
    %zero = arith.constant dense<0.0> : tensor<f32>
    return %zero : tensor<f32>
  }
}
