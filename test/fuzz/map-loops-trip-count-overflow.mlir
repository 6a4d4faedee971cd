// Found by triax-fuzz (CI's run of 2026-12-07): a parallel loop from
// -2^63 to 512. triax-map-loops-to-gpu's trip count, (ub - lb + step - 1)
// / step, overflowed int64 (UBSan: signed integer overflow in tripCount,
// WriteDisjointness.cpp). The span ub - lb is now checked
// (llvm::checkedSub: no trip count when it overflows, as for bounds that
// are not constants) and rounded up as (span - 1) / step + 1; the nest is
// then refused for its race, as any nest that writes one element from
// every iteration.
// RUN: not triax-opt %s --triax-map-loops-to-gpu 2>&1 | FileCheck %s
// CHECK: [[@LINE+9]]:5: error: kernel 'same_element' cannot run on the GPU without a race: iterations (d0 = -9223372036854775808) and (d0 = -9223372036854775807) write the same element
// CHECK-NOT: {{Stack dump|PLEASE submit|runtime error}}

func.func @same_element(%x: memref<512xf32>, %out: memref<1xf32>) {
  %c0 = arith.constant -9223372036854775808 : index
  %c1 = arith.constant 1 : index
  %c512 = arith.constant 512 : index
  scf.parallel (%t) = (%c0) to (%c512) step (%c1) {
    %v = memref.load %x[%t] : memref<512xf32>
    memref.store %v, %out[%c0] : memref<1xf32>
    scf.reduce
  }
  return
}
