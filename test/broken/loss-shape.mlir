// Cross-entropy targets that do not match the logits.
// RUN: not triax-opt %s 2>&1 | FileCheck %s
// CHECK: {{.*}}loss-shape.mlir:[[@LINE+7]]:{{[0-9]+}}: error: 'triax.cross_entropy' op logits [2, 4, 16] must be the targets' shape [4, 2] plus a vocabulary dimension
// CHECK-NOT: {{Stack dump|PLEASE submit}}

triax.model @tiny config = #triax.train_config<micro_batch = 2, seq = 4> {
  func.func @forward(%tokens: tensor<2x4xi32>, %targets: tensor<2x4xi32>) -> tensor<f32> {
    %logits = arith.constant dense<0.0> : tensor<2x4x16xf32>
    %t = arith.constant dense<0> : tensor<4x2xi32>
    %loss = triax.cross_entropy %logits, %t : (tensor<2x4x16xf32>, tensor<4x2xi32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}
