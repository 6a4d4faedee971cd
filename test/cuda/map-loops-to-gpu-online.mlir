// RUN: triax-opt %s -split-input-file \
// RUN:   --pass-pipeline='builtin.module(func.func(triax-map-loops-to-gpu))' \
// RUN:   | FileCheck %s
// The cross-entropy's row statistics (LossKernels.cpp, rowMaxSumExp): one
// pass of the online softmax over a row, its loop marked
// triax_online_max_sum_exp. One block per row: each thread runs the same
// step over its share of the row from the identity (-inf, 0); the block's
// max is an all_reduce, each thread's sum is rescaled to it (0 where the
// thread saw nothing) and summed by a second all_reduce; then the loop's
// own initial state (logit 0, 1) joins the same way. Without the
// attribute the loop is no reduction the mapping knows, and each row stays
// in one thread (on the H200 that form took 29.4 ms for gpt2's 16384 rows
// of 50257 logits; bench/gpu/run.sh, docs/cuda.md).

// CHECK-LABEL: func.func @row_lse
// CHECK:         gpu.launch blocks(%[[ROW:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %c4, %{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}) threads(%[[TID:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %c256,
// CHECK:           %[[IS0:.*]] = arith.cmpi eq, %[[TID]], %{{.*}} : index
// CHECK:           %[[X0:.*]] = memref.load %{{.*}}[%[[ROW]], %c0] : memref<4x300xf32>
// CHECK:           %[[START:.*]] = arith.addi %[[TID]], %c1
// CHECK-DAG:       %[[NINF:.*]] = arith.constant 0xFF800000 : f32
// CHECK-DAG:       %[[Z:.*]] = arith.constant 0.000000e+00 : f64
// CHECK:           %[[P:.*]]:2 = scf.for %{{.*}} = %[[START]] to %c300 step %{{.*}} iter_args(%{{.*}} = %[[NINF]], %{{.*}} = %[[Z]]) -> (f32, f64) {
// CHECK:             arith.cmpf olt
// CHECK:             math.exp
// CHECK:           }
// CHECK:           %[[M:.*]] = gpu.all_reduce maximumf %[[P]]#0 uniform {
// CHECK:           %[[D:.*]] = arith.subf %[[P]]#0, %[[M]] : f32
// CHECK:           %[[E:.*]] = math.exp %[[D]] : f32
// CHECK:           %[[EW:.*]] = arith.extf %[[E]] : f32 to f64
// CHECK:           %[[EMPTY:.*]] = arith.cmpf oeq, %[[P]]#1, %[[Z2:.*]] : f64
// CHECK:           %[[SC:.*]] = arith.mulf %[[P]]#1, %[[EW]] : f64
// CHECK:           %[[SS:.*]] = arith.select %[[EMPTY]], %[[Z2]], %[[SC]] : f64
// CHECK:           %[[S:.*]] = gpu.all_reduce add %[[SS]] uniform {
// CHECK:           %[[MAX:.*]] = arith.maximumf %[[M]], %[[X0]] : f32
// CHECK:           arith.subf %[[X0]], %[[MAX]] : f32
// CHECK:           arith.subf %[[M]], %[[MAX]] : f32
// CHECK:           arith.mulf %[[S]], %{{.*}} : f64
// CHECK:           %[[SUM:.*]] = arith.addf
// CHECK:           scf.if %[[IS0]] {
// CHECK:             memref.store %[[MAX]], %{{.*}}[%[[ROW]]] : memref<4xf32>
// CHECK:           scf.if %[[IS0]] {
// CHECK:             memref.store %[[SUM]], %{{.*}}[%[[ROW]]] : memref<4xf64>
// CHECK:           gpu.terminator
// CHECK-NOT:     scf.parallel
func.func @row_lse(%logits: memref<4x300xf32>, %max: memref<4xf32>, %sum: memref<4xf64>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c300 = arith.constant 300 : index
  %one = arith.constant 1.000000e+00 : f64
  scf.parallel (%r) = (%c0) to (%c4) step (%c1) {
    %x0 = memref.load %logits[%r, %c0] : memref<4x300xf32>
    %s:2 = scf.for %v = %c1 to %c300 step %c1 iter_args(%m = %x0, %acc = %one) -> (f32, f64) {
      %x = memref.load %logits[%r, %v] : memref<4x300xf32>
      %grows = arith.cmpf olt, %m, %x : f32
      %low = arith.select %grows, %m, %x : f32
      %high = arith.select %grows, %x, %m : f32
      %d = arith.subf %low, %high : f32
      %e32 = math.exp %d : f32
      %e = arith.extf %e32 : f32 to f64
      %t = arith.mulf %acc, %e : f64
      %rescaled = arith.addf %t, %one : f64
      %added = arith.addf %acc, %e : f64
      %next = arith.select %grows, %rescaled, %added : f64
      scf.yield %high, %next : f32, f64
    } {triax_online_max_sum_exp}
    memref.store %s#0, %max[%r] : memref<4xf32>
    memref.store %s#1, %sum[%r] : memref<4xf64>
    scf.reduce
  }
  return
}

// -----

// The same loop without the attribute: one thread per row.
// CHECK-LABEL: func.func @row_lse_unmarked
// CHECK:         gpu.launch
// CHECK:           scf.for %{{.*}} = %c1 to %c300 step %c1 iter_args
// CHECK-NOT:       gpu.all_reduce
func.func @row_lse_unmarked(%logits: memref<4x300xf32>, %max: memref<4xf32>, %sum: memref<4xf64>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c300 = arith.constant 300 : index
  %one = arith.constant 1.000000e+00 : f64
  scf.parallel (%r) = (%c0) to (%c4) step (%c1) {
    %x0 = memref.load %logits[%r, %c0] : memref<4x300xf32>
    %s:2 = scf.for %v = %c1 to %c300 step %c1 iter_args(%m = %x0, %acc = %one) -> (f32, f64) {
      %x = memref.load %logits[%r, %v] : memref<4x300xf32>
      %grows = arith.cmpf olt, %m, %x : f32
      %low = arith.select %grows, %m, %x : f32
      %high = arith.select %grows, %x, %m : f32
      %d = arith.subf %low, %high : f32
      %e32 = math.exp %d : f32
      %e = arith.extf %e32 : f32 to f64
      %t = arith.mulf %acc, %e : f64
      %rescaled = arith.addf %t, %one : f64
      %added = arith.addf %acc, %e : f64
      %next = arith.select %grows, %rescaled, %added : f64
      scf.yield %high, %next : f32, f64
    }
    memref.store %s#0, %max[%r] : memref<4xf32>
    memref.store %s#1, %sum[%r] : memref<4xf64>
    scf.reduce
  }
  return
}
