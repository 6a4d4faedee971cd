// A parameter with a dynamic dimension.
// RUN: not triax-opt %s 2>&1 | FileCheck %s
// CHECK: {{.*}}dynamic-param.mlir:[[@LINE+4]]:{{[0-9]+}}: error: 'triax.param' op parameter must have a static shape, got 'tensor<?x8xf32>'
// CHECK-NOT: {{Stack dump|PLEASE submit}}

triax.model @tiny config = #triax.train_config<micro_batch = 2, seq = 4> {
  triax.param @wte : tensor<?x8xf32> init <normal, std = 0.02> decay
  func.func @forward(%tokens: tensor<2x4xi32>, %targets: tensor<2x4xi32>) -> tensor<f32> {
    %zero = arith.constant dense<0.0> : tensor<f32>
    return %zero : tensor<f32>
  }
}
