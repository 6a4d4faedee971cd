// Found by triax-fuzz: a schedule over a mesh axis of 2^63 - 1 stages.
// dist-verify-schedule kept a program per stage and ended the process
// allocating them (std::length_error; 2^31 - 1 stages: ASan out of memory).
// RUN: not triax-opt --dist-verify-schedule %s 2>&1 | FileCheck %s
// CHECK: [[@LINE+5]]:12: error: dist-verify-schedule: axis "pp" of mesh @mesh has 9223372036854775807 stages; the checker simulates at most 4096
// CHECK-NOT: {{Stack dump|PLEASE submit|terminate called}}

dist.mesh @mesh <["pp"=9223372036854775807]>
func.func @huge(%x: tensor<4xf32>) {
  %stage = dist.axis_index @mesh ["pp"] : index
  scf.index_switch %stage
  case 0 {
    dist.send %x over @mesh ["pp"] to 1 tag 0 : tensor<4xf32>
    scf.yield
  }
  default {
  }
  return
}
