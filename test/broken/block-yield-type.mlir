// A block that yields a type other than its result type.
// RUN: not triax-opt %s 2>&1 | FileCheck %s
// CHECK: {{.*}}block-yield-type.mlir:[[@LINE+6]]:{{[0-9]+}}: error: 'triax.block' op yields ('tensor<2x4x8xf32>') but the results are ('tensor<2x4x16xf32>')
// CHECK-NOT: {{Stack dump|PLEASE submit}}

triax.model @tiny config = #triax.train_config<micro_batch = 2, seq = 4> {
  func.func @forward(%tokens: tensor<2x4xi32>, %targets: tensor<2x4xi32>) -> tensor<f32> {
    %x = arith.constant dense<0.0> : tensor<2x4x8xf32>
    %y = triax.block "h.0" (%x) : (tensor<2x4x8xf32>) -> tensor<2x4x16xf32> {
    ^bb0(%in: tensor<2x4x8xf32>):
      triax.yield %in : tensor<2x4x8xf32>
    }
    %zero = arith.constant dense<0.0> : tensor<f32>
    return %zero : tensor<f32>
  }
}
