// Two parameters with one name.
// RUN: not triax-opt %s 2>&1 | FileCheck %s
// CHECK: {{.*}}duplicate-param.mlir:[[@LINE+5]]:{{[0-9]+}}: error: redefinition of symbol named 'wte'
// CHECK-NOT: {{Stack dump|PLEASE submit}}

triax.model @tiny config = #triax.train_config<micro_batch = 2, seq = 4> {
  triax.param @wte : tensor<16x8xf32> init <normal, std = 0.02> decay
  triax.param @wte : tensor<16x8xf32> init <zeros>
  func.func @forward(%tokens: tensor<2x4xi32>, %targets: tensor<2x4xi32>) -> tensor<f32> {
    %zero = arith.constant dense<0.0> : tensor<f32>
    return %zero : tensor<f32>
  }
}
