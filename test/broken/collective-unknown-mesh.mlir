// A collective over a mesh that is not declared.
// RUN: not triax-opt %s 2>&1 | FileCheck %s
// CHECK: {{.*}}collective-unknown-mesh.mlir:[[@LINE+6]]:{{[0-9]+}}: error: 'dist.all_reduce' op refers to unknown mesh @cluster
// CHECK-NOT: {{Stack dump|PLEASE submit}}

triax.model @tiny config = #triax.train_config<micro_batch = 2, seq = 4> {
  func.func @forward(%tokens: tensor<2x4xi32>, %targets: tensor<2x4xi32>) -> tensor<f32> {
    %x = arith.constant dense<0.0> : tensor<2x4x8xf32>
    %s = dist.all_reduce sum %x over @cluster ["dp"] : tensor<2x4x8xf32>
    %zero = arith.constant dense<0.0> : tensor<f32>
    return %zero : tensor<f32>
  }
}
