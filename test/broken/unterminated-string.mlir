// A mesh axis name whose closing quote is missing.
// RUN: not triax-opt %s 2>&1 | FileCheck %s
// CHECK: {{.*}}unterminated-string.mlir:[[@LINE+3]]:{{[0-9]+}}: error: expected '"' in string literal
// CHECK-NOT: {{Stack dump|PLEASE submit}}

dist.mesh @cluster <["dp"=2, "tp=2]>
triax.model @tiny config = #triax.train_config<micro_batch = 2, seq = 4> {
}
