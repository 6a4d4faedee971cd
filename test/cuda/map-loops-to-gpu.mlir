// RUN: triax-opt %s -split-input-file -verify-diagnostics \
// RUN:   --pass-pipeline='builtin.module(func.func(triax-map-loops-to-gpu))' \
// RUN:   | FileCheck %s
// RUN: triax-opt %s -split-input-file -verify-diagnostics \
// RUN:   --pass-pipeline='builtin.module(func.func(triax-map-loops-to-gpu{block-size=128}))' \
// RUN:   | FileCheck %s --check-prefix=B128
// No CUDA needed: the pass only builds gpu.launch ops.

// A 2-D nest: 512 x 64 = 32768 iterations, 128 blocks of 256 threads; the
// id is delinearized innermost first (j = id mod 64, i = id / 64).
// CHECK-LABEL: func.func @copy_2d
// CHECK-DAG:     %[[C128:.*]] = arith.constant 128 : index
// CHECK-DAG:     %[[C256:.*]] = arith.constant 256 : index
// CHECK-DAG:     %[[C32768:.*]] = arith.constant 32768 : index
// CHECK:         gpu.launch blocks(%[[BX:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}) threads(%[[TX:.*]], %{{.*}}, %{{.*}}) in
// CHECK:           %[[BASE:.*]] = arith.muli %[[BX]], %{{.*}} : index
// CHECK:           %[[ID:.*]] = arith.addi %[[BASE]], %[[TX]] : index
// CHECK:           %[[IN:.*]] = arith.cmpi ult, %[[ID]], %{{.*}} : index
// CHECK:           scf.if %[[IN]] {
// CHECK:             %[[J:.*]] = arith.remui %[[ID]], %{{.*}} : index
// CHECK:             %[[I:.*]] = arith.divui %[[ID]], %{{.*}} : index
// CHECK:             %[[X:.*]] = memref.load %{{.*}}[%{{.*}}, %{{.*}}] : memref<512x64xf32>
// CHECK:             memref.store %[[X]], %{{.*}}[%{{.*}}, %{{.*}}] : memref<512x64xf32>
// CHECK:           gpu.terminator
// CHECK-NOT:     scf.parallel
// B128-LABEL: func.func @copy_2d
// B128:         gpu.launch
// B128-SAME:      threads
func.func @copy_2d(%a: memref<512x64xf32>, %b: memref<512x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %c512 = arith.constant 512 : index
  scf.parallel (%i, %j) = (%c0, %c0) to (%c512, %c64) step (%c1, %c1) {
    %x = memref.load %a[%i, %j] : memref<512x64xf32>
    memref.store %x, %b[%i, %j] : memref<512x64xf32>
    scf.reduce
  }
  return
}

// -----

// A row-wise kernel (one thread per row, the row loop inside) and a nest
// with a bound that is not a multiple of the block: 50257 rows, 197 blocks,
// the guard skips the last 175 threads.
// CHECK-LABEL: func.func @row_sum
// CHECK-DAG:     arith.constant 197 : index
// CHECK-DAG:     arith.constant 50257 : index
// CHECK:         gpu.launch
// CHECK:           scf.if
// CHECK:             scf.for
// CHECK:               arith.addf
func.func @row_sum(%a: memref<50257x64xf32>, %out: memref<50257xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %c50257 = arith.constant 50257 : index
  %zero = arith.constant 0.0 : f32
  scf.parallel (%i) = (%c0) to (%c50257) step (%c1) {
    %s = scf.for %j = %c0 to %c64 step %c1 iter_args(%acc = %zero) -> (f32) {
      %x = memref.load %a[%i, %j] : memref<50257x64xf32>
      %y = arith.addf %acc, %x : f32
      scf.yield %y : f32
    }
    memref.store %s, %out[%i] : memref<50257xf32>
    scf.reduce
  }
  return
}

// -----

// The attention's shape: a host loop around a runtime GEMM call and a
// parallel nest. The loop and the call stay on the host, the nest inside
// becomes a launch; a nest that calls a function stays on the host.
func.func private @trx_sgemm(memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>, i32, i32, f32, f32)
func.func private @host_fn(index)
// CHECK-LABEL: func.func @per_head
// CHECK:         scf.for
// CHECK:           func.call @trx_sgemm
// CHECK:           gpu.launch
// CHECK:         scf.parallel
// CHECK:           func.call @host_fn
func.func @per_head(%a: memref<?x?xf32, strided<[?, ?], offset: ?>>, %s: memref<4x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c64 = arith.constant 64 : index
  %i0 = arith.constant 0 : i32
  %f1 = arith.constant 1.0 : f32
  %f0 = arith.constant 0.0 : f32
  scf.for %h = %c0 to %c4 step %c1 {
    func.call @trx_sgemm(%a, %a, %a, %i0, %i0, %f1, %f0) : (memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>, i32, i32, f32, f32) -> ()
    scf.parallel (%j) = (%c0) to (%c64) step (%c1) {
      %x = memref.load %s[%h, %j] : memref<4x64xf32>
      %y = arith.mulf %x, %x : f32
      memref.store %y, %s[%h, %j] : memref<4x64xf32>
      scf.reduce
    }
  }
  // expected-remark @below {{loop nest stays on the host: its body calls 'func.call'}}
  scf.parallel (%j) = (%c0) to (%c4) step (%c1) {
    func.call @host_fn(%j) : (index) -> ()
    scf.reduce
  }
  return
}

// -----

// A nest that reduces into a value stays on the host.
// CHECK-LABEL: func.func @reduction
// CHECK-NOT:     gpu.launch
func.func @reduction(%a: memref<64xf32>) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %zero = arith.constant 0.0 : f32
  // expected-remark @below {{loop nest stays on the host: it reduces into 1 value(s)}}
  %r = scf.parallel (%i) = (%c0) to (%c64) step (%c1) init (%zero) -> f32 {
    %x = memref.load %a[%i] : memref<64xf32>
    scf.reduce(%x : f32) {
    ^bb0(%l: f32, %r: f32):
      %s = arith.addf %l, %r : f32
      scf.reduce.return %s : f32
    }
  }
  return %r : f32
}
