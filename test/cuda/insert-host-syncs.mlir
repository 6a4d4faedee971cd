// RUN: triax-opt %s -split-input-file -verify-diagnostics \
// RUN:   --pass-pipeline='builtin.module(func.func(triax-map-loops-to-gpu), triax-insert-host-syncs)' \
// RUN:   | FileCheck %s
// No CUDA needed: the pass only inserts calls. The launches come from
// triax-map-loops-to-gpu (triax-opt does not parse the gpu dialect).

// A scalar reduction left on the host after a launch (a reduction the
// kernels keep on the device in a training step, here written by hand): one
// sync in front of the host loop, none inside it (not per iteration).
// CHECK-LABEL: func.func @loss_after_launch
// CHECK:         gpu.launch
// CHECK:           gpu.terminator
// CHECK-NEXT:    }
// CHECK-NEXT:    call @trx_cuda_host_sync() : () -> ()
// CHECK-NEXT:    %{{.*}} = scf.for
// CHECK-NOT:       call @trx_cuda_host_sync
// CHECK:           memref.load
// CHECK:         return
// CHECK:       func.func private @trx_cuda_host_sync()
func.func @loss_after_launch(%buf: memref<64xf32>) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %zero = arith.constant 0.0 : f32
  scf.parallel (%t) = (%c0) to (%c64) step (%c1) {
    memref.store %zero, %buf[%t] : memref<64xf32>
    scf.reduce
  }
  %sum = scf.for %i = %c0 to %c64 step %c1 iter_args(%acc = %zero) -> f32 {
    %x = memref.load %buf[%i] : memref<64xf32>
    %s = arith.addf %acc, %x : f32
    scf.yield %s : f32
  }
  return %sum : f32
}

// -----

// A function starts unsynchronized (its caller may have launched);
// consecutive host accesses share one sync; a call (a kernel function, a
// GEMM) and an allocation (zero-filled on the stream) need a new one; the
// runtime's view calls do not.
// CHECK-LABEL: func.func @sequence
// CHECK:         arith.constant 0 : i64
// CHECK-NEXT:    call @trx_cuda_host_sync()
// CHECK-NEXT:    memref.load
// CHECK-NEXT:    memref.store
// CHECK-NEXT:    call @trx_state_1d
// CHECK-NEXT:    memref.load
// CHECK-NEXT:    call @kernel
// CHECK-NEXT:    call @trx_cuda_host_sync()
// CHECK-NEXT:    memref.store
// CHECK-NEXT:    memref.alloc
// CHECK-NEXT:    call @trx_cuda_host_sync()
// CHECK-NEXT:    memref.store
// CHECK-NEXT:    memref.load
// CHECK-NEXT:    memref.dealloc
// CHECK-NEXT:    return
func.func private @kernel(memref<f32>)
func.func private @trx_state_1d(i32, i64) -> memref<?xf32>
func.func @sequence(%a: memref<f32>, %b: memref<f32>) -> f32 {
  %c0 = arith.constant 0 : index
  %k = arith.constant 0 : i32
  %p = arith.constant 0 : i64
  %x = memref.load %a[] : memref<f32>
  memref.store %x, %b[] : memref<f32>
  %view = call @trx_state_1d(%k, %p) : (i32, i64) -> memref<?xf32>
  %y = memref.load %view[%c0] : memref<?xf32>
  call @kernel(%a) : (memref<f32>) -> ()
  memref.store %y, %b[] : memref<f32>
  %t = memref.alloc() : memref<f32>
  memref.store %y, %t[] : memref<f32>
  %z = memref.load %t[] : memref<f32>
  memref.dealloc %t : memref<f32>
  return %z : f32
}

// -----

// A host loop around GEMM calls and launches (attention's per-head loop):
// handled inside; each iteration's host access follows the previous
// iteration's launches, so its sync is in the body; after the loop the
// state is unsynchronized again.
// CHECK-LABEL: func.func @host_loop_with_launches
// CHECK:         scf.for
// CHECK-NEXT:      call @gemm
// CHECK-NOT:       trx_cuda_host_sync
// CHECK:           gpu.launch
// CHECK:           call @trx_cuda_host_sync()
// CHECK-NEXT:      memref.store
// CHECK:         }
// CHECK-NEXT:    call @trx_cuda_host_sync()
// CHECK-NEXT:    memref.load
func.func private @gemm(memref<4xf32>)
func.func @host_loop_with_launches(%buf: memref<4xf32>, %out: memref<4xf32>) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %one = arith.constant 1.0 : f32
  scf.for %h = %c0 to %c4 step %c1 {
    func.call @gemm(%buf) : (memref<4xf32>) -> ()
    scf.parallel (%t) = (%c0) to (%c4) step (%c1) {
      memref.store %one, %buf[%t] : memref<4xf32>
      scf.reduce
    }
    memref.store %one, %out[%h] : memref<4xf32>
  }
  %r = memref.load %out[%c0] : memref<4xf32>
  return %r : f32
}

// -----

// A host-private scalar (stored, launches, read back): no sync for the
// read; a buffer a launch also uses gets one.
// CHECK-LABEL: func.func @host_private
// CHECK:         call @trx_cuda_host_sync()
// CHECK-NEXT:    memref.store %{{.*}}, %[[P:.*]][]
// CHECK:         gpu.launch
// CHECK:         gpu.terminator
// CHECK-NEXT:    }
// CHECK-NEXT:    %{{.*}} = memref.load %[[P]][]
// CHECK-NEXT:    memref.dealloc %[[P]]
// CHECK-NEXT:    call @trx_cuda_host_sync()
// CHECK-NEXT:    memref.load %{{.*}}[%{{.*}}] : memref<4xf32>
func.func @host_private(%buf: memref<4xf32>, %x: f32) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %p = memref.alloc() : memref<f32>
  memref.store %x, %p[] : memref<f32>
  scf.parallel (%t) = (%c0) to (%c4) step (%c1) {
    memref.store %x, %buf[%t] : memref<4xf32>
    scf.reduce
  }
  %r = memref.load %p[] : memref<f32>
  memref.dealloc %p : memref<f32>
  %s = memref.load %buf[%c0] : memref<4xf32>
  %sum = arith.addf %r, %s : f32
  return %sum : f32
}

// -----

// Only launches and pure arithmetic: nothing to wait for, and no
// declaration is added.
// CHECK-LABEL: func.func @device_only
// CHECK-NOT:     trx_cuda_host_sync
func.func @device_only(%buf: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %one = arith.constant 1.0 : f32
  scf.parallel (%t) = (%c0) to (%c4) step (%c1) {
    memref.store %one, %buf[%t] : memref<4xf32>
    scf.reduce
  }
  return
}

// -----

// expected-error @+1 {{'trx_cuda_host_sync' exists and is not a function of type () -> ()}}
func.func private @trx_cuda_host_sync(i32)
func.func @clash(%a: memref<f32>) -> f32 {
  %x = memref.load %a[] : memref<f32>
  return %x : f32
}
