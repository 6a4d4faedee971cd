// RUN: triax-opt %s -verify-diagnostics \
// RUN:   --pass-pipeline='builtin.module(func.func(triax-map-loops-to-gpu), gpu-kernel-outlining, triax-merge-gpu-modules)'

// The merged module's name must be free.
// expected-error @below {{triax-merge-gpu-modules: a symbol named 'triax_kernels' exists already}}
module {
  func.func @triax_kernels() {
    return
  }
  func.func @k(%a: memref<64xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c64 = arith.constant 64 : index
    scf.parallel (%i) = (%c0) to (%c64) step (%c1) {
      %x = memref.load %a[%i] : memref<64xf32>
      memref.store %x, %a[%i] : memref<64xf32>
      scf.reduce
    }
    return
  }
}
