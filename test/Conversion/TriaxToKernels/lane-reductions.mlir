// RUN: triax-opt %s --split-input-file --triax-lane-reductions="lanes=2" | FileCheck %s
// RUN: triax-opt %s --split-input-file --triax-lane-reductions | FileCheck %s --check-prefix=EIGHT
// RUN: not triax-opt %s --triax-lane-reductions="lanes=3" 2>&1 | FileCheck %s --check-prefix=BAD
// triax-lane-reductions (Passes.td): the sums and maxima of a CPU kernel's
// sequential loops in interleaved accumulators, combined after the loop in
// a fixed tree.

// A row sum: two accumulators (lanes=2), the first from the loop's initial
// value, the second from -0; iteration j + 1's copy of the body after
// iteration j's; one add after the loop.
// CHECK-LABEL: func.func private @row_sum
// CHECK-DAG:     %[[C2:.*]] = arith.constant 2 : index
// CHECK-DAG:     %[[NEG0:.*]] = arith.constant -0.000000e+00 : f32
// CHECK:         %[[S:.*]]:2 = scf.for %[[J:.*]] = %c0 to %c256 step %[[C2]] iter_args(%[[A0:.*]] = %[[INIT:.*]], %[[A1:.*]] = %[[NEG0]]) -> (f32, f32) {
// CHECK:           %[[X0:.*]] = memref.load %{{.*}}[%[[J]]]
// CHECK:           %[[N0:.*]] = arith.addf %[[A0]], %[[X0]] : f32
// CHECK:           %[[J1:.*]] = arith.addi %[[J]], %{{.*}} : index
// CHECK:           %[[X1:.*]] = memref.load %{{.*}}[%[[J1]]]
// CHECK:           %[[N1:.*]] = arith.addf %[[A1]], %[[X1]] : f32
// CHECK:           scf.yield %[[N0]], %[[N1]] : f32, f32
// CHECK:         %[[SUM:.*]] = arith.addf %[[S]]#0, %[[S]]#1 : f32
// CHECK:         memref.store %[[SUM]]
// Eight lanes: ((0 + 4) + (2 + 6)) + ((1 + 5) + (3 + 7)).
// EIGHT-LABEL: func.func private @row_sum
// EIGHT:         %[[S:.*]]:8 = scf.for
// EIGHT-COUNT-8:   arith.addf
// EIGHT:         %[[P04:.*]] = arith.addf %[[S]]#0, %[[S]]#4 : f32
// EIGHT:         %[[P15:.*]] = arith.addf %[[S]]#1, %[[S]]#5 : f32
// EIGHT:         %[[P26:.*]] = arith.addf %[[S]]#2, %[[S]]#6 : f32
// EIGHT:         %[[P37:.*]] = arith.addf %[[S]]#3, %[[S]]#7 : f32
// EIGHT:         %[[Q0:.*]] = arith.addf %[[P04]], %[[P26]] : f32
// EIGHT:         %[[Q1:.*]] = arith.addf %[[P15]], %[[P37]] : f32
// EIGHT:         arith.addf %[[Q0]], %[[Q1]] : f32
func.func private @row_sum(%x: memref<256xf32>, %out: memref<1xf32>) attributes {triax_kernel} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c256 = arith.constant 256 : index
  %zero = arith.constant 0.0 : f32
  %s = scf.for %i = %c0 to %c256 step %c1 iter_args(%acc = %zero) -> (f32) {
    %v = memref.load %x[%i] : memref<256xf32>
    %n = arith.addf %acc, %v : f32
    scf.yield %n : f32
  }
  memref.store %s, %out[%c0] : memref<1xf32>
  return
}

// -----

// Two values carried (a LayerNorm backward's two sums), an f64 square sum
// (the global norm's), and a maximum (its second lane from -inf), inside
// a parallel loop; the combines keep their fastmath flags.
// CHECK-LABEL: func.func private @several
// CHECK:         scf.parallel
// CHECK:           %[[S:.*]]:4 = scf.for {{.*}} -> (f32, f32, f64, f64)
// CHECK:           arith.addf %[[S]]#0, %[[S]]#1 fastmath<contract> : f32
// CHECK:           arith.addf %[[S]]#2, %[[S]]#3 : f64
// CHECK:           %[[NEGINF:.*]] = arith.constant 0xFF800000 : f32
// CHECK:           %[[M:.*]]:2 = scf.for {{.*}} iter_args(%{{.*}} = %{{.*}}, %{{.*}} = %[[NEGINF]]) -> (f32, f32)
// CHECK:             arith.maximumf
// CHECK:             arith.maximumf
// CHECK:           arith.maximumf %[[M]]#0, %[[M]]#1 : f32
func.func private @several(%x: memref<8x64xf32>, %out: memref<8x3xf32>, %sq: memref<8xf64>) attributes {triax_kernel} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c8 = arith.constant 8 : index
  %c64 = arith.constant 64 : index
  %zero = arith.constant 0.0 : f32
  %zd = arith.constant 0.0 : f64
  %ninf = arith.constant 0xFF800000 : f32
  scf.parallel (%r) = (%c0) to (%c8) step (%c1) {
    %s:2 = scf.for %i = %c0 to %c64 step %c1 iter_args(%a = %zero, %q = %zd) -> (f32, f64) {
      %v = memref.load %x[%r, %i] : memref<8x64xf32>
      %n = arith.addf %a, %v fastmath<contract> : f32
      %d = arith.extf %v : f32 to f64
      %d2 = arith.mulf %d, %d : f64
      %nq = arith.addf %d2, %q : f64
      scf.yield %n, %nq : f32, f64
    }
    %m = scf.for %i = %c0 to %c64 step %c1 iter_args(%a = %ninf) -> (f32) {
      %v = memref.load %x[%r, %i] : memref<8x64xf32>
      %n = arith.maximumf %a, %v : f32
      scf.yield %n : f32
    }
    memref.store %s#0, %out[%r, %c0] : memref<8x3xf32>
    memref.store %m, %out[%r, %c1] : memref<8x3xf32>
    memref.store %s#1, %sq[%r] : memref<8xf64>
    scf.reduce
  }
  return
}

// -----

// Left alone: a carried value used for more than its sum (the running
// value scales each element), a trip count that is not a multiple of the
// lanes (lanes=2: 7), too few trips (lanes=8: 8 < 16), bounds that are not
// constants, and any loop outside a triax_kernel function.
// CHECK-LABEL: func.func private @left_alone
// CHECK:         scf.for %{{.*}} = %c0 to %c64 step %c1 iter_args(%{{.*}} = %{{.*}}) -> (f32)
// CHECK:         scf.for %{{.*}} = %c0 to %c7 step %c1 iter_args(%{{.*}} = %{{.*}}) -> (f32)
// CHECK:         scf.for %{{.*}} = %c0 to %{{.*}} step %c1 iter_args(%{{.*}} = %{{.*}}) -> (f32)
// EIGHT-LABEL: func.func private @left_alone
// EIGHT:         scf.for %{{.*}} = %c0 to %c8 step %c1 iter_args(%{{.*}} = %{{.*}}) -> (f32)
func.func private @left_alone(%x: memref<64xf32>, %n: index, %out: memref<5xf32>) attributes {triax_kernel} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %c7 = arith.constant 7 : index
  %c8 = arith.constant 8 : index
  %c64 = arith.constant 64 : index
  %zero = arith.constant 0.0 : f32
  %a = scf.for %i = %c0 to %c64 step %c1 iter_args(%acc = %zero) -> (f32) {
    %v = memref.load %x[%i] : memref<64xf32>
    %w = arith.mulf %v, %acc : f32
    %s = arith.addf %acc, %w : f32
    scf.yield %s : f32
  }
  %b = scf.for %i = %c0 to %c7 step %c1 iter_args(%acc = %zero) -> (f32) {
    %v = memref.load %x[%i] : memref<64xf32>
    %s = arith.addf %acc, %v : f32
    scf.yield %s : f32
  }
  %c = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %zero) -> (f32) {
    %v = memref.load %x[%i] : memref<64xf32>
    %s = arith.addf %acc, %v : f32
    scf.yield %s : f32
  }
  %d = scf.for %i = %c0 to %c8 step %c1 iter_args(%acc = %zero) -> (f32) {
    %v = memref.load %x[%i] : memref<64xf32>
    %s = arith.addf %acc, %v : f32
    scf.yield %s : f32
  }
  memref.store %a, %out[%c0] : memref<5xf32>
  memref.store %b, %out[%c1] : memref<5xf32>
  memref.store %c, %out[%c2] : memref<5xf32>
  memref.store %d, %out[%c3] : memref<5xf32>
  return
}

// CHECK-LABEL: func.func @host_code
// CHECK:         scf.for %{{.*}} = %c0 to %c64 step %c1 iter_args
func.func @host_code(%x: memref<64xf32>) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %zero = arith.constant 0.0 : f32
  %a = scf.for %i = %c0 to %c64 step %c1 iter_args(%acc = %zero) -> (f32) {
    %v = memref.load %x[%i] : memref<64xf32>
    %s = arith.addf %acc, %v : f32
    scf.yield %s : f32
  }
  return %a : f32
}

// BAD: error: triax-lane-reductions: lanes must be a power of two >= 2, got 3
