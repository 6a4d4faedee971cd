// A model with nothing in it (an empty file is a valid empty module; an
// empty model is not: it has no forward function).
// RUN: not triax-opt %s 2>&1 | FileCheck %s
// CHECK: {{.*}}empty-model.mlir:[[@LINE+3]]:{{[0-9]+}}: error: 'triax.model' op expects a 'func.func @forward' computing the loss
// CHECK-NOT: {{Stack dump|PLEASE submit}}

triax.model @tiny config = #triax.train_config<micro_batch = 2, seq = 4> {
}
