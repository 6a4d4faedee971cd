// The file ends in the middle of a triax.param, inside its tensor type.
// RUN: not triax-opt %s 2>&1 | FileCheck %s
// CHECK: {{.*}}truncated-mid-op.mlir:[[@LINE+5]]:{{[0-9]+}}: error: expected non-function type
// CHECK-NOT: {{Stack dump|PLEASE submit}}

triax.model @tiny config = #triax.train_config<micro_batch = 2, seq = 4> {
  triax.param @wte : tensor<16x8xf32> init <normal, std = 0.02> decay
  triax.param @wpe : tensor<4x