// RUN: triax-opt %s -split-input-file -verify-diagnostics \
// RUN:   --pass-pipeline='builtin.module(func.func(triax-map-loops-to-gpu))' \
// RUN:   | FileCheck %s
// The mapping runs two iterations in two threads only when it has proved
// that they write different elements (WriteDisjointness.cpp). No CUDA needed.

// The embedding backward: parallel over features, a loop over tokens that
// adds each token's gradient into its row of the table. Two tokens may share
// a row, so splitting the token loop over a block's threads (rows=block)
// would lose updates: the row kernel keeps one thread per feature, and the
// tokens run in order inside it (deterministic).
// CHECK-LABEL: func.func @embedding_grad
// CHECK:         gpu.launch blocks
// CHECK:           scf.if
// CHECK:             scf.for %[[T:.*]] = %c0 to %c512 step %c1 {
// CHECK:               memref.load %{{.*}}[%[[T]]] : memref<512xi32>
// CHECK:               memref.store
// CHECK-NOT:     gpu.all_reduce
// CHECK-NOT:     gpu.barrier
func.func @embedding_grad(%ids: memref<512xi32>, %dy: memref<512x64xf32>, %table: memref<256x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %c512 = arith.constant 512 : index
  // expected-remark @below {{row kernel keeps one thread per row: splitting its row loop would race}}
  scf.parallel (%h) = (%c0) to (%c64) step (%c1) {
    scf.for %t = %c0 to %c512 step %c1 {
      %raw = memref.load %ids[%t] : memref<512xi32>
      %id = arith.index_cast %raw : i32 to index
      %g = memref.load %dy[%t, %h] : memref<512x64xf32>
      %old = memref.load %table[%id, %h] : memref<256x64xf32>
      %new = arith.addf %old, %g : f32
      // expected-note @below {{its index [arith.index_cast, %arg0] is not a one-to-one function of the parallel loop variable}}
      memref.store %new, %table[%id, %h] : memref<256x64xf32>
    }
    scf.reduce
  }
  return
}

// -----

// The same scatter-add written as a 2-D nest: the token dimension is not
// proved (the row is data), so it runs sequentially in each thread and only
// the feature dimension is parallel (64 threads, one block).
// CHECK-LABEL: func.func @scatter_add_2d
// CHECK:         gpu.launch blocks
// CHECK:           %[[ID:.*]] = arith.addi
// CHECK:           arith.cmpi ult, %[[ID]], %c64
// CHECK:           scf.for %{{.*}} = %c0 to %c512 step %c1 {
// CHECK:             memref.store
func.func @scatter_add_2d(%ids: memref<512xi32>, %dy: memref<512x64xf32>, %table: memref<256x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %c512 = arith.constant 512 : index
  // expected-remark @below {{dimension 0 runs sequentially in each thread: its iterations may write the same element}}
  scf.parallel (%t, %h) = (%c0, %c0) to (%c512, %c64) step (%c1, %c1) {
    %raw = memref.load %ids[%t] : memref<512xi32>
    %id = arith.index_cast %raw : i32 to index
    %g = memref.load %dy[%t, %h] : memref<512x64xf32>
    %old = memref.load %table[%id, %h] : memref<256x64xf32>
    %new = arith.addf %old, %g : f32
    // expected-note @below {{its index [arith.index_cast, %arg1] is not a one-to-one function of the parallel loop variable}}
    memref.store %new, %table[%id, %h] : memref<256x64xf32>
    scf.reduce
  }
  return
}

// -----

// A flattened index is proved one-to-one from the trip counts (i * 64 + j,
// j < 64): both dimensions stay parallel, no remark.
// CHECK-LABEL: func.func @flat_index
// CHECK:         gpu.launch
// CHECK-NOT:     scf.for
func.func @flat_index(%a: memref<512x64xf32>, %out: memref<32768xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %c512 = arith.constant 512 : index
  scf.parallel (%i, %j) = (%c0, %c0) to (%c512, %c64) step (%c1, %c1) {
    %x = memref.load %a[%i, %j] : memref<512x64xf32>
    %base = arith.muli %i, %c64 : index
    %k = arith.addi %base, %j : index
    memref.store %x, %out[%k] : memref<32768xf32>
    scf.reduce
  }
  return
}

// -----

// i * 32 + j with j < 64 is not one-to-one ((0, 32) and (1, 0) collide): no
// dimension can be proved, and the kernel is refused.
func.func @overlapping_index(%a: memref<512x64xf32>, %out: memref<16448xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %c64 = arith.constant 64 : index
  %c512 = arith.constant 512 : index
  // expected-note @below {{the parallel loop nest}}
  scf.parallel (%i, %j) = (%c0, %c0) to (%c512, %c64) step (%c1, %c1) {
    %x = memref.load %a[%i, %j] : memref<512x64xf32>
    %base = arith.muli %i, %c32 : index
    %k = arith.addi %base, %j : index
    // expected-error @below {{kernel 'overlapping_index' cannot run on the GPU without a race: iterations (d0 = 0, d1 = 0) and (d0 = 1, d1 = 0) may write the same element (its index [arith.addi] is not a one-to-one function of the parallel loop variable), and no dimension of the nest is proved to write apart}}
    memref.store %x, %out[%k] : memref<16448xf32>
    scf.reduce
  }
  return
}

// -----

// A scatter through data-dependent indices in a 1-D nest: nothing can run
// in parallel, an error names the kernel, the store and two iterations.
func.func @scatter(%ids: memref<512xi32>, %x: memref<512xf32>, %out: memref<256xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c512 = arith.constant 512 : index
  // expected-note @below {{the parallel loop nest}}
  scf.parallel (%t) = (%c0) to (%c512) step (%c1) {
    %raw = memref.load %ids[%t] : memref<512xi32>
    %id = arith.index_cast %raw : i32 to index
    %v = memref.load %x[%t] : memref<512xf32>
    // expected-error @below {{kernel 'scatter' cannot run on the GPU without a race: iterations (d0 = 0) and (d0 = 1) may write the same element}}
    memref.store %v, %out[%id] : memref<256xf32>
    scf.reduce
  }
  return
}

// -----

// Every iteration writes element 0: a certain collision.
func.func @same_element(%x: memref<512xf32>, %out: memref<1xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c512 = arith.constant 512 : index
  // expected-note @below {{the parallel loop nest}}
  scf.parallel (%t) = (%c0) to (%c512) step (%c1) {
    %v = memref.load %x[%t] : memref<512xf32>
    // expected-error @below {{iterations (d0 = 0) and (d0 = 1) write the same element (its index [0] does not depend on the parallel loop variable)}}
    memref.store %v, %out[%c0] : memref<1xf32>
    scf.reduce
  }
  return
}

// -----

// Reading a neighbour's element of a buffer the kernel writes is a race
// (thread i may read x[i + 1] before or after thread i + 1 writes it).
func.func @shift_in_place(%x: memref<513xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c512 = arith.constant 512 : index
  // expected-note @below {{the parallel loop nest}}
  scf.parallel (%i) = (%c0) to (%c512) step (%c1) {
    %n = arith.addi %i, %c1 : index
    // expected-error @below {{it reads an element of a buffer the kernel writes, at indices other than its own store's}}
    %v = memref.load %x[%n] : memref<513xf32>
    memref.store %v, %x[%i] : memref<513xf32>
    scf.reduce
  }
  return
}

// -----

// An in-place update reads and writes the same element in one thread: safe.
// CHECK-LABEL: func.func @accumulate
// CHECK:         gpu.launch
func.func @accumulate(%g: memref<4096xf32>, %x: memref<4096xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4096 = arith.constant 4096 : index
  scf.parallel (%i) = (%c0) to (%c4096) step (%c1) {
    %a = memref.load %g[%i] : memref<4096xf32>
    %b = memref.load %x[%i] : memref<4096xf32>
    %s = arith.addf %a, %b : f32
    memref.store %s, %g[%i] : memref<4096xf32>
    scf.reduce
  }
  return
}

// -----

// A row kernel whose scalar code adds into the row's element (a bias
// gradient added into its gradient buffer): the scalar code's store runs in
// thread 0 alone, so the read-modify-write is one; the row's sum is still
// one block per row.
// CHECK-LABEL: func.func @row_rmw
// CHECK:         gpu.launch blocks
// CHECK:           %[[T0:.*]] = arith.cmpi eq, %{{.*}}, %c0
// CHECK:           %[[P:.*]] = scf.for
// CHECK:           %[[S:.*]] = gpu.all_reduce add %[[P]]
// CHECK:           %[[OLD:.*]] = memref.load
// CHECK:           %[[NEW:.*]] = arith.addf %[[OLD]], %{{.*}} : f32
// CHECK:           scf.if %[[T0]] {
// CHECK-NEXT:        memref.store %[[NEW]]
// CHECK-NOT:       gpu.barrier
// CHECK:           gpu.terminator
func.func @row_rmw(%a: memref<512x64xf32>, %out: memref<512xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %c512 = arith.constant 512 : index
  %zero = arith.constant 0.0 : f32
  scf.parallel (%r) = (%c0) to (%c512) step (%c1) {
    %s = scf.for %j = %c0 to %c64 step %c1 iter_args(%acc = %zero) -> (f32) {
      %x = memref.load %a[%r, %j] : memref<512x64xf32>
      %n = arith.addf %acc, %x : f32
      scf.yield %n : f32
    }
    %old = memref.load %out[%r] : memref<512xf32>
    %new = arith.addf %old, %s : f32
    memref.store %new, %out[%r] : memref<512xf32>
    scf.reduce
  }
  return
}

// -----

// The scalar code reads what it writes and uses it for more than the write
// (here the row loop scales by it): another thread could read thread 0's
// new value. The kernel keeps one thread per row.
// CHECK-LABEL: func.func @row_read_back
// CHECK:         gpu.launch
// CHECK-NOT:     gpu.all_reduce
func.func @row_read_back(%a: memref<512x64xf32>, %out: memref<512xf32>, %y: memref<512x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %c512 = arith.constant 512 : index
  %zero = arith.constant 0.0 : f32
  // expected-remark @below {{row kernel keeps one thread per row: splitting its row loop would race}}
  scf.parallel (%r) = (%c0) to (%c512) step (%c1) {
    %s = scf.for %j = %c0 to %c64 step %c1 iter_args(%acc = %zero) -> (f32) {
      %x = memref.load %a[%r, %j] : memref<512x64xf32>
      %n = arith.addf %acc, %x : f32
      scf.yield %n : f32
    }
    // expected-note @below {{the row's scalar code reads a buffer it writes, and uses the value for more than the write}}
    %old = memref.load %out[%r] : memref<512xf32>
    %new = arith.addf %old, %s : f32
    memref.store %new, %out[%r] : memref<512xf32>
    scf.for %j = %c0 to %c64 step %c1 {
      %x = memref.load %a[%r, %j] : memref<512x64xf32>
      %z = arith.mulf %x, %old : f32
      memref.store %z, %y[%r, %j] : memref<512x64xf32>
    }
    scf.reduce
  }
  return
}

// -----

// The embedding backward on the GPU (convert-triax-to-kernels
// {embedding-grad-threads}): slices of 4 vocabulary rows; iteration (s, h)
// adds only the tokens whose row is in [4 s, 4 s + 4), which the guard
// proves. Both dimensions run in parallel (64 x 64 threads, 16 blocks).
// CHECK-LABEL: func.func @embedding_grad_slices
// CHECK-DAG:     %[[C16:.*]] = arith.constant 16 : index
// CHECK:         gpu.launch blocks(%{{.*}}, %{{.*}}, %{{.*}}) in (%{{.*}} = %[[C16]],
// CHECK:             scf.for %{{.*}} = %c0 to %c512 step %c1 {
// CHECK:               scf.if
// CHECK:                 memref.store
func.func @embedding_grad_slices(%ids: memref<512xi32>, %dy: memref<512x64xf32>, %table: memref<256x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c64 = arith.constant 64 : index
  %c512 = arith.constant 512 : index
  scf.parallel (%s, %h) = (%c0, %c0) to (%c64, %c64) step (%c1, %c1) {
    %first = arith.muli %s, %c4 : index
    scf.for %t = %c0 to %c512 step %c1 {
      %raw = memref.load %ids[%t] : memref<512xi32>
      %id = arith.index_cast %raw : i32 to index
      %rel = arith.subi %id, %first : index
      %mine = arith.cmpi ult, %rel, %c4 : index
      scf.if %mine {
        %g = memref.load %dy[%t, %h] : memref<512x64xf32>
        %old = memref.load %table[%id, %h] : memref<256x64xf32>
        %new = arith.addf %old, %g : f32
        memref.store %new, %table[%id, %h] : memref<256x64xf32>
      }
    }
    scf.reduce
  }
  return
}

// -----

// Slices that overlap (8 rows wide, 4 apart) prove nothing for the slice
// dimension: it runs sequentially in each thread.
// CHECK-LABEL: func.func @overlapping_slices
// CHECK:         gpu.launch
// CHECK:             scf.for %{{.*}} = %c0 to %c64 step %c1 {
// CHECK:               scf.for %{{.*}} = %c0 to %c512 step %c1 {
func.func @overlapping_slices(%ids: memref<512xi32>, %dy: memref<512x64xf32>, %table: memref<256x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %c64 = arith.constant 64 : index
  %c512 = arith.constant 512 : index
  // expected-remark @below {{dimension 0 runs sequentially in each thread: its iterations may write the same element}}
  scf.parallel (%s, %h) = (%c0, %c0) to (%c64, %c64) step (%c1, %c1) {
    %first = arith.muli %s, %c4 : index
    scf.for %t = %c0 to %c512 step %c1 {
      %raw = memref.load %ids[%t] : memref<512xi32>
      %id = arith.index_cast %raw : i32 to index
      %rel = arith.subi %id, %first : index
      %mine = arith.cmpi ult, %rel, %c8 : index
      scf.if %mine {
        %g = memref.load %dy[%t, %h] : memref<512x64xf32>
        %old = memref.load %table[%id, %h] : memref<256x64xf32>
        %new = arith.addf %old, %g : f32
        // expected-note @below {{its index [arith.index_cast, %arg1] is not a one-to-one function of the parallel loop variable}}
        memref.store %new, %table[%id, %h] : memref<256x64xf32>
      }
    }
    scf.reduce
  }
  return
}

// -----

// A thread's own sequential offsets (the flash-attention kernels' features):
// iteration (h, i) writes out[i, h*4 + c] for c in [0, 4). c moves the
// column by at most 3 < 4, the step of h, so distinct (h, i) write distinct
// elements: both dimensions run in parallel, no remark.
// CHECK-LABEL: func.func @own_feature_offsets
// CHECK:         gpu.launch
// CHECK:           scf.for %{{.*}} = %c0 to %c4 step %c1 {
// CHECK:             memref.store
func.func @own_feature_offsets(%x: memref<8x16xf32>, %out: memref<8x16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  scf.parallel (%h, %i) = (%c0, %c0) to (%c4, %c8) step (%c1, %c1) {
    %base = arith.muli %h, %c4 : index
    scf.for %c = %c0 to %c4 step %c1 {
      %col = arith.addi %base, %c : index
      %v = memref.load %x[%i, %col] : memref<8x16xf32>
      memref.store %v, %out[%i, %col] : memref<8x16xf32>
    }
    scf.reduce
  }
  return
}

// -----

// The same with offsets c in [0, 5): h*4 + 4 of one head is h*4 + 0 of the
// next, so two heads may write the same element: h runs sequentially.
// CHECK-LABEL: func.func @overlapping_feature_offsets
// CHECK:         gpu.launch
// CHECK:           scf.for %{{.*}} = %c0 to %c4 step %c1 {
// CHECK:             scf.for %{{.*}} = %c0 to %c5 step %c1 {
func.func @overlapping_feature_offsets(%x: memref<8x20xf32>, %out: memref<8x20xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c5 = arith.constant 5 : index
  %c8 = arith.constant 8 : index
  // expected-remark @below {{dimension 0 runs sequentially in each thread: its iterations may write the same element}}
  scf.parallel (%h, %i) = (%c0, %c0) to (%c4, %c8) step (%c1, %c1) {
    %base = arith.muli %h, %c4 : index
    scf.for %c = %c0 to %c5 step %c1 {
      %col = arith.addi %base, %c : index
      %v = memref.load %x[%i, %col] : memref<8x20xf32>
      // expected-note @below {{its index [%arg1, arith.addi] is not a one-to-one function of the parallel loop variable}}
      memref.store %v, %out[%i, %col] : memref<8x20xf32>
    }
    scf.reduce
  }
  return
}

// -----

// vector.store of 8 lanes covers 8 elements from its index on: iteration
// (h, i) writes out[i, h*16 + 8*c .. + 7] for c in [0, 2), at most 15 past
// h*16, under the step of h. Both dimensions run in parallel, no remark.
// CHECK-LABEL: func.func @vector_store_lanes
// CHECK:         gpu.launch
// CHECK:           scf.for %{{.*}} = %c0 to %c2 step %c1 {
// CHECK:             vector.store
func.func @vector_store_lanes(%x: memref<8x64xf32>, %out: memref<8x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  scf.parallel (%h, %i) = (%c0, %c0) to (%c4, %c8) step (%c1, %c1) {
    %base = arith.muli %h, %c16 : index
    scf.for %c = %c0 to %c2 step %c1 {
      %off = arith.muli %c, %c8 : index
      %col = arith.addi %base, %off : index
      %v = vector.load %x[%i, %col] : memref<8x64xf32>, vector<8xf32>
      vector.store %v, %out[%i, %col] : memref<8x64xf32>, vector<8xf32>
    }
    scf.reduce
  }
  return
}

// -----

// 8 lanes stored 4 apart: iteration h's lanes 4..7 are iteration h + 1's
// lanes 0..3, so h runs sequentially (as a scalar index would with a loop
// over 8 offsets).
// CHECK-LABEL: func.func @overlapping_vector_store
// CHECK:         gpu.launch
// CHECK:           scf.for %{{.*}} = %c0 to %c8 step %c1 {
// CHECK:             vector.store
func.func @overlapping_vector_store(%x: memref<8x36xf32>, %out: memref<8x36xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  // expected-remark @below {{dimension 0 runs sequentially in each thread: its iterations may write the same element}}
  scf.parallel (%h, %i) = (%c0, %c0) to (%c8, %c8) step (%c1, %c1) {
    %col = arith.muli %h, %c4 : index
    %v = vector.load %x[%i, %col] : memref<8x36xf32>, vector<8xf32>
    // expected-note @below {{its index [%arg1, arith.muli] is not a one-to-one function of the parallel loop variable}}
    vector.store %v, %out[%i, %col] : memref<8x36xf32>, vector<8xf32>
    scf.reduce
  }
  return
}

// -----

// A vector read of a buffer the kernel writes is indexed like a scalar one:
// thread i reads lanes [i + 1, i + 9), which other threads write.
func.func @vector_read_of_written(%x: memref<520xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c512 = arith.constant 512 : index
  // expected-note @below {{the parallel loop nest}}
  scf.parallel (%i) = (%c0) to (%c512) step (%c1) {
    %n = arith.addi %i, %c1 : index
    // expected-error @below {{it reads an element of a buffer the kernel writes, at indices other than its own store's}}
    %v = vector.load %x[%n] : memref<520xf32>, vector<8xf32>
    %s = vector.extract %v[0] : f32 from vector<8xf32>
    memref.store %s, %x[%i] : memref<520xf32>
    scf.reduce
  }
  return
}

// -----

// A masked vector read of a written buffer cannot be indexed: refused.
func.func @masked_read_of_written(%x: memref<520xf32>, %m: vector<8xi1>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c512 = arith.constant 512 : index
  %pass = arith.constant dense<0.0> : vector<8xf32>
  // expected-note @below {{the parallel loop nest}}
  scf.parallel (%i) = (%c0) to (%c512) step (%c1) {
    // expected-error @below {{it reads memory the kernel writes, in a form the analysis cannot index}}
    %v = vector.maskedload %x[%i], %m, %pass : memref<520xf32>, vector<8xi1>, vector<8xf32> into vector<8xf32>
    %s = vector.extract %v[0] : f32 from vector<8xf32>
    memref.store %s, %x[%i] : memref<520xf32>
    scf.reduce
  }
  return
}
