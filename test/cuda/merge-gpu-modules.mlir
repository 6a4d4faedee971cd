// RUN: triax-opt %s -split-input-file -verify-diagnostics \
// RUN:   --pass-pipeline='builtin.module(func.func(triax-map-loops-to-gpu), gpu-launch-sink-index-computations, gpu-kernel-outlining, triax-merge-gpu-modules)' \
// RUN:   | FileCheck %s
// The gpu.modules come from gpu-kernel-outlining (triax-opt does not parse
// the gpu dialect: it is loaded by the passes that make it).

// Two kernel functions: two modules become one.
// (The merged module sits where the first one was, after @k0.)
// CHECK-LABEL: module attributes {gpu.container_module}
// CHECK:         func.func @k0
// CHECK:           gpu.launch_func  @triax_kernels::@k0_kernel blocks
// CHECK:         gpu.module @triax_kernels {
// CHECK:           gpu.func @k0_kernel(%{{.*}}: memref<64xf32>) kernel
// CHECK:           gpu.func @k1_kernel(%{{.*}}: memref<64xf32>) kernel
// CHECK:         }
// CHECK-NOT:     gpu.module
// CHECK:         func.func @k1
// CHECK:           gpu.launch_func  @triax_kernels::@k1_kernel blocks
func.func @k0(%a: memref<64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  scf.parallel (%i) = (%c0) to (%c64) step (%c1) {
    %x = memref.load %a[%i] : memref<64xf32>
    %y = arith.addf %x, %x : f32
    memref.store %y, %a[%i] : memref<64xf32>
    scf.reduce
  }
  return
}
func.func @k1(%a: memref<64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  scf.parallel (%i) = (%c0) to (%c64) step (%c1) {
    %x = memref.load %a[%i] : memref<64xf32>
    %y = arith.mulf %x, %x : f32
    memref.store %y, %a[%i] : memref<64xf32>
    scf.reduce
  }
  return
}

// -----

// One host function with two launches (the attention's kernels): outlining
// names both kernels @two_kernel, in modules @two_kernel and @two_kernel_0.
// Each kernel takes its module's name.
// CHECK-LABEL: module attributes {gpu.container_module}
// CHECK:         func.func @two
// CHECK:           gpu.launch_func  @triax_kernels::@two_kernel blocks
// CHECK:           gpu.launch_func  @triax_kernels::@two_kernel_0 blocks
// CHECK:         gpu.module @triax_kernels {
// CHECK:           gpu.func @two_kernel(
// CHECK:           gpu.func @two_kernel_0(
// CHECK-NOT:     gpu.module
func.func @two(%a: memref<64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  scf.parallel (%i) = (%c0) to (%c64) step (%c1) {
    %x = memref.load %a[%i] : memref<64xf32>
    %y = arith.addf %x, %x : f32
    memref.store %y, %a[%i] : memref<64xf32>
    scf.reduce
  }
  scf.parallel (%i) = (%c0) to (%c64) step (%c1) {
    %x = memref.load %a[%i] : memref<64xf32>
    %y = arith.mulf %x, %x : f32
    memref.store %y, %a[%i] : memref<64xf32>
    scf.reduce
  }
  return
}

