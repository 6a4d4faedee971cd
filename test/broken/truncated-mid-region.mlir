// The file ends inside the body of @forward: neither the function nor the
// model is closed.
// RUN: not triax-opt %s 2>&1 | FileCheck %s
// CHECK: {{.*}}truncated-mid-region.mlir:[[@LINE+7]]:{{[0-9]+}}: error: expected operation name in quotes
// CHECK-NOT: {{Stack dump|PLEASE submit}}

triax.model @tiny config = #triax.train_config<micro_batch = 2, seq = 4> {
  triax.param @wte : tensor<16x8xf32> init <normal, std = 0.02> decay
  func.func @forward(%tokens: tensor<2x4xi32>, %targets: tensor<2x4xi32>) -> tensor<f32> {
    %w = triax.get_param @wte : tensor<16x8xf32>
    %x = triax.embedding %tokens, %w : (tensor<2x4xi32>, tensor<16x8xf32>) -> tensor<2x4x8xf32>
