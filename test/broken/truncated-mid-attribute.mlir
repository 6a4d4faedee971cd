// The file ends inside the #triax.train_config of the model.
// RUN: not triax-opt %s 2>&1 | FileCheck %s
// CHECK: {{.*}}truncated-mid-attribute.mlir:[[@LINE+3]]:{{[0-9]+}}: error: unbalanced '<' character in pretty dialect name
// CHECK-NOT: {{Stack dump|PLEASE submit}}

triax.model @tiny config = #triax.train_config<micro_batch = 2, seq