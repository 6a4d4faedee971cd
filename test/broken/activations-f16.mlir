// Activations in f16: the layer ops compute in f32 or bf16.
// RUN: not triax-opt %s 2>&1 | FileCheck %s
// CHECK: {{.*}}activations-f16.mlir:[[@LINE+6]]:{{[0-9]+}}: error: 'triax.gelu' op operand #0 must be ranked tensor of 32-bit float or bfloat16 type values, but got 'tensor<2x4x8xf16>'
// CHECK-NOT: {{Stack dump|PLEASE submit}}

triax.model @tiny config = #triax.train_config<micro_batch = 2, seq = 4> {
  func.func @forward(%tokens: tensor<2x4xi32>, %targets: tensor<2x4xi32>) -> tensor<f32> {
    %x = arith.constant dense<0.0> : tensor<2x4x8xf16>
    %g = triax.gelu %x : tensor<2x4x8xf16>
    %zero = arith.constant dense<0.0> : tensor<f32>
    return %zero : tensor<f32>
  }
}
