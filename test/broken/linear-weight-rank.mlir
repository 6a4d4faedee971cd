// A linear layer whose weight has rank 3.
// RUN: not triax-opt %s 2>&1 | FileCheck %s
// CHECK: {{.*}}linear-weight-rank.mlir:[[@LINE+8]]:{{[0-9]+}}: error: 'triax.linear' op weight must have rank 2, got 'tensor<1x8x8xf32>'
// CHECK-NOT: {{Stack dump|PLEASE submit}}

triax.model @tiny config = #triax.train_config<micro_batch = 2, seq = 4> {
  triax.param @w : tensor<1x8x8xf32> init <normal, std = 0.02> decay
  func.func @forward(%tokens: tensor<2x4xi32>, %targets: tensor<2x4xi32>) -> tensor<f32> {
    %x = arith.constant dense<0.0> : tensor<2x4x8xf32>
    %w = triax.get_param @w : tensor<1x8x8xf32>
    %y = triax.linear %x, %w : (tensor<2x4x8xf32>, tensor<1x8x8xf32>) -> tensor<2x4x8xf32>
    %zero = arith.constant dense<0.0> : tensor<f32>
    return %zero : tensor<f32>
  }
}
