// Attention whose hidden size does not split into the heads.
// RUN: not triax-opt %s 2>&1 | FileCheck %s
// CHECK: {{.*}}attention-heads.mlir:[[@LINE+6]]:{{[0-9]+}}: error: 'triax.attention' op hidden size 8 is not divisible by heads 3
// CHECK-NOT: {{Stack dump|PLEASE submit}}

triax.model @tiny config = #triax.train_config<micro_batch = 2, seq = 4> {
  func.func @forward(%tokens: tensor<2x4xi32>, %targets: tensor<2x4xi32>) -> tensor<f32> {
    %q = arith.constant dense<0.0> : tensor<2x4x8xf32>
    %a = triax.attention %q, %q, %q heads = 3 : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
    %zero = arith.constant dense<0.0> : tensor<f32>
    return %zero : tensor<f32>
  }
}
