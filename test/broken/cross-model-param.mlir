// A model reading a parameter that another model declares.
// RUN: not triax-opt %s 2>&1 | FileCheck %s
// CHECK: {{.*}}cross-model-param.mlir:[[@LINE+12]]:{{[0-9]+}}: error: 'triax.get_param' op 'wte' does not name a triax.param of the enclosing model
// CHECK-NOT: {{Stack dump|PLEASE submit}}

triax.model @a config = #triax.train_config<micro_batch = 2, seq = 4> {
  triax.param @wte : tensor<16x8xf32> init <normal, std = 0.02> decay
  func.func @forward(%tokens: tensor<2x4xi32>, %targets: tensor<2x4xi32>) -> tensor<f32> {
    %zero = arith.constant dense<0.0> : tensor<f32>
    return %zero : tensor<f32>
  }
}
triax.model @b config = #triax.train_config<micro_batch = 2, seq = 4> {
  func.func @forward(%tokens: tensor<2x4xi32>, %targets: tensor<2x4xi32>) -> tensor<f32> {
    %w = triax.get_param @wte : tensor<16x8xf32>
    %zero = arith.constant dense<0.0> : tensor<f32>
    return %zero : tensor<f32>
  }
}
