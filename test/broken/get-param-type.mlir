// A get_param whose type is not the parameter's (transposed).
// RUN: not triax-opt %s 2>&1 | FileCheck %s
// CHECK: {{.*}}get-param-type.mlir:[[@LINE+6]]:{{[0-9]+}}: error: 'triax.get_param' op result type 'tensor<8x16xf32>' does not match parameter @wte of type 'tensor<16x8xf32>'; expected them equal
// CHECK-NOT: {{Stack dump|PLEASE submit}}

triax.model @tiny config = #triax.train_config<micro_batch = 2, seq = 4> {
  triax.param @wte : tensor<16x8xf32> init <normal, std = 0.02> decay
  func.func @forward(%tokens: tensor<2x4xi32>, %targets: tensor<2x4xi32>) -> tensor<f32> {
    %w = triax.get_param @wte : tensor<8x16xf32>
    %zero = arith.constant dense<0.0> : tensor<f32>
    return %zero : tensor<f32>
  }
}
