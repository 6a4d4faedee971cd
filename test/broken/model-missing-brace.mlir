// The closing brace of the model is missing: the parser reaches the end of
// the file still inside the model's region.
// RUN: not triax-opt %s 2>&1 | FileCheck %s
// CHECK: {{.*}}model-missing-brace.mlir:[[@LINE+8]]:{{[0-9]+}}: error: expected operation name in quotes
// CHECK-NOT: {{Stack dump|PLEASE submit}}

triax.model @tiny config = #triax.train_config<micro_batch = 2, seq = 4> {
  triax.param @wte : tensor<16x8xf32> init <normal, std = 0.02> decay
  func.func @forward(%tokens: tensor<2x4xi32>, %targets: tensor<2x4xi32>) -> tensor<f32> {
    %zero = arith.constant dense<0.0> : tensor<f32>
    return %zero : tensor<f32>
  }
