// RUN: triax-opt %s -split-input-file -verify-diagnostics \
// RUN:   --pass-pipeline='builtin.module(func.func(triax-map-loops-to-gpu{rows=thread}))' \
// RUN:   | FileCheck %s
// RUN: triax-opt %s -split-input-file -verify-diagnostics \
// RUN:   --pass-pipeline='builtin.module(func.func(triax-map-loops-to-gpu{block-size=128 rows=thread}))' \
// RUN:   | FileCheck %s --check-prefix=B128
// One block per row is the default.
// RUN: triax-opt %s -split-input-file -verify-diagnostics \
// RUN:   --pass-pipeline='builtin.module(func.func(triax-map-loops-to-gpu))' \
// RUN:   | FileCheck %s --check-prefix=ROWS
// rows=warp: one warp per row, 8 rows in a block of 256 threads.
// RUN: triax-opt %s -split-input-file -verify-diagnostics \
// RUN:   --pass-pipeline='builtin.module(func.func(triax-map-loops-to-gpu{rows=warp}))' \
// RUN:   | FileCheck %s --check-prefix=WARP
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

// -----

// A layer_norm-like row kernel. rows=thread: one thread per row, as any
// nest. rows=block: one block of 64 threads (the row length) per row; each
// reduction is a strided partial loop, a gpu.all_reduce and the loop's
// initial value combined last; a barrier follows the elementwise loop.
// CHECK-LABEL: func.func @layer_norm
// CHECK:         gpu.launch
// CHECK:           scf.if
// CHECK:             scf.for %{{.*}} = %c0 to %c64 step %c1 iter_args
// ROWS-LABEL: func.func @layer_norm
// ROWS:         gpu.launch blocks(%[[ROW:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %c512, %{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}) threads(%[[T:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %c64{{.*}},
// ROWS-NOT:       scf.if
// ROWS:           %[[P:.*]] = scf.for %{{.*}} = %[[T]] to %{{.*}} step %{{.*}} iter_args(%[[ACC:.*]] = %{{.*}}) -> (f32) {
// ROWS:             memref.load %{{.*}}[%[[ROW]], %{{.*}}] : memref<512x64xf32>
// ROWS:           }
// ROWS:           %[[S:.*]] = gpu.all_reduce add %[[P]] uniform
// ROWS:           %[[SUM:.*]] = arith.addf %{{.*}}, %[[S]] : f32
// ROWS:           arith.divf %[[SUM]]
// ROWS:           %[[Q:.*]]:2 = scf.for
// ROWS:             arith.maximumf
// ROWS:           gpu.all_reduce maximumf %[[Q]]#0 uniform
// ROWS:           arith.maximumf
// ROWS:           gpu.all_reduce add %[[Q]]#1 uniform
// ROWS:           memref.store %{{.*}}, %{{.*}}[%[[ROW]]] : memref<512xf32>
// ROWS:           scf.for %{{.*}} = %[[T]] to
// ROWS:             memref.store
// ROWS:           gpu.barrier
// ROWS:           gpu.terminator
// rows=warp: 64 blocks of (32 lanes, 8 rows); the warp's row is
// block * 8 + y, and a warp past row 511 does nothing. Lane t takes
// elements t, t + 32; each sum is a butterfly of shuffles (xor 16 .. 1)
// and no gpu.all_reduce or gpu.barrier is left: lane 0 stores the row's
// statistic, and the elementwise loop ends with bar.warp.sync.
// WARP-LABEL: func.func @layer_norm
// WARP-DAG:     %[[C8:.*]] = arith.constant 8 : index
// WARP-DAG:     %[[C32:.*]] = arith.constant 32 : index
// WARP:         gpu.launch blocks(%[[BX:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %c64{{.*}}, %{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}) threads(%[[LANE:.*]], %[[WY:.*]], %{{.*}}) in (%{{.*}} = %[[C32]], %{{.*}} = %[[C8]], %{{.*}} = %{{.*}})
// WARP:           %[[FIRSTROW:.*]] = arith.muli %[[BX]], %[[C8]] : index
// WARP:           %[[ROW:.*]] = arith.addi %[[FIRSTROW]], %[[WY]] : index
// WARP:           %[[IN:.*]] = arith.cmpi ult, %[[ROW]], %c512 : index
// WARP:           scf.if %[[IN]] {
// WARP:             %[[P:.*]] = scf.for %{{.*}} = %[[LANE]] to %c64 step %{{.*}} iter_args(%{{.*}} = %{{.*}}) -> (f32) {
// WARP:               memref.load %{{.*}}[%[[ROW]], %{{.*}}] : memref<512x64xf32>
// WARP:             gpu.shuffle  xor %[[P]], %c16_i32
// WARP:             gpu.shuffle  xor %{{.*}}, %c8_i32
// WARP:             gpu.shuffle  xor %{{.*}}, %c4_i32
// WARP:             gpu.shuffle  xor %{{.*}}, %c2_i32
// WARP:             %[[LAST:.*]], %{{.*}} = gpu.shuffle  xor %{{.*}}, %c1_i32
// WARP:             %[[S:.*]] = arith.addf %{{.*}}, %[[LAST]] : f32
// WARP:             arith.addf %{{.*}}, %[[S]] : f32
// WARP-NOT:         gpu.all_reduce
// WARP:             scf.if
// WARP:               memref.store %{{.*}}, %{{.*}}[%[[ROW]]] : memref<512xf32>
// WARP:             nvvm.bar.warp.sync
// WARP:             scf.for %{{.*}} = %[[LANE]] to
// WARP:               memref.store
// WARP:             nvvm.bar.warp.sync
// WARP-NOT:         gpu.barrier
// WARP:           gpu.terminator
func.func @layer_norm(%a: memref<512x64xf32>, %w: memref<64xf32>, %out: memref<512x64xf32>, %stats: memref<512xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %c512 = arith.constant 512 : index
  %zero = arith.constant 0.0 : f32
  %n = arith.constant 64.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  scf.parallel (%i) = (%c0) to (%c512) step (%c1) {
    %s = scf.for %j = %c0 to %c64 step %c1 iter_args(%acc = %zero) -> (f32) {
      %x = memref.load %a[%i, %j] : memref<512x64xf32>
      %y = arith.addf %acc, %x : f32
      scf.yield %y : f32
    }
    %m = arith.divf %s, %n : f32
    %mx:2 = scf.for %j = %c0 to %c64 step %c1 iter_args(%acc = %ninf, %acc2 = %zero) -> (f32, f32) {
      %x = memref.load %a[%i, %j] : memref<512x64xf32>
      %d = arith.subf %x, %m : f32
      %y = arith.maximumf %acc, %x : f32
      %sq = arith.mulf %d, %d : f32
      %z = arith.addf %acc2, %sq : f32
      scf.yield %y, %z : f32, f32
    }
    memref.store %mx#0, %stats[%i] : memref<512xf32>
    scf.for %j = %c0 to %c64 step %c1 {
      %x = memref.load %a[%i, %j] : memref<512x64xf32>
      %wj = memref.load %w[%j] : memref<64xf32>
      %d = arith.subf %x, %m : f32
      %v = arith.mulf %d, %mx#1 : f32
      %r = arith.mulf %v, %wj : f32
      memref.store %r, %out[%i, %j] : memref<512x64xf32>
    }
    scf.reduce
  }
  return
}

// -----

// A reduction whose accumulator is used beyond its combine (an online
// softmax's running max rescales the sum) is not a row kernel: one thread
// per row even with rows=block.
// ROWS-LABEL: func.func @online
// ROWS:         gpu.launch
// ROWS:           scf.if
// ROWS-NOT:       gpu.all_reduce
func.func @online(%a: memref<8x64xf32>, %out: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c64 = arith.constant 64 : index
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  scf.parallel (%i) = (%c0) to (%c8) step (%c1) {
    %r:2 = scf.for %j = %c0 to %c64 step %c1 iter_args(%m = %ninf, %s = %zero) -> (f32, f32) {
      %x = memref.load %a[%i, %j] : memref<8x64xf32>
      %m2 = arith.maximumf %m, %x : f32
      %d = arith.subf %m, %m2 : f32
      %e = math.exp %d : f32
      %s2 = arith.mulf %s, %e : f32
      scf.yield %m2, %s2 : f32, f32
    }
    memref.store %r#1, %out[%i] : memref<8xf32>
    scf.reduce
  }
  return
}
