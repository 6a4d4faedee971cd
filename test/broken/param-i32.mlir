// A parameter of integer type: parameters are f32 or bf16.
// RUN: not triax-opt %s 2>&1 | FileCheck %s
// CHECK: {{.*}}param-i32.mlir:[[@LINE+4]]:{{[0-9]+}}: error: 'triax.param' op attribute 'type' failed to satisfy constraint: type attribute of ranked tensor of 32-bit float or bfloat16 type values
// CHECK-NOT: {{Stack dump|PLEASE submit}}

triax.model @tiny config = #triax.train_config<micro_batch = 2, seq = 4> {
  triax.param @wte : tensor<16x8xi32> init <normal, std = 0.02> decay
  func.func @forward(%tokens: tensor<2x4xi32>, %targets: tensor<2x4xi32>) -> tensor<f32> {
    %zero = arith.constant dense<0.0> : tensor<f32>
    return %zero : tensor<f32>
  }
}
