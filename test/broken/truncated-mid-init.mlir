// The file ends inside the initializer of a parameter.
// RUN: not triax-opt %s 2>&1 | FileCheck %s
// CHECK: {{.*}}truncated-mid-init.mlir:[[@LINE+4]]:{{[0-9]+}}: error: expected '>'
// CHECK-NOT: {{Stack dump|PLEASE submit}}

triax.model @tiny config = #triax.train_config<micro_batch = 2, seq = 4> {
  triax.param @wte : tensor<16x8xf32> init <normal, std = 0.02