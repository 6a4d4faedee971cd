// Found by triax-fuzz: a mesh of 2 x (2^63 - 1) devices. Its device count
// overflowed int64 wherever it was taken (UBSan: signed integer overflow in
// triax-report's analysis, ModuleFacts.cpp); the verifier refuses it now.
// RUN: not triax-opt %s 2>&1 | FileCheck %s
// CHECK: [[@LINE+3]]:1: error: 'dist.mesh' op has more than 9223372036854775807 devices
// CHECK-NOT: {{Stack dump|PLEASE submit|runtime error}}

dist.mesh @cluster <["dp"=2, "tp"=9223372036854775807]>
