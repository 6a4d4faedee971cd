// RUN: triax-opt %s --triax-dedupe-kernels | FileCheck %s

// @k0 and @k2 are the same kernel (another name, the same body and types):
// @k2's call goes to @k0 and @k2 is gone. @k1 differs in a constant, @k3 in
// its argument's shape, @k4 in an attribute: each is kept. @helper is not
// a kernel (no triax_kernel) and is kept although it prints like @k0.
// CHECK-LABEL: func.func @entry(
// CHECK:         call @k0(%{{.*}}) : (memref<8xf32>) -> ()
// CHECK-NEXT:    call @k1(%{{.*}}) : (memref<8xf32>) -> ()
// CHECK-NEXT:    call @k0(%{{.*}}) : (memref<8xf32>) -> ()
// CHECK-NEXT:    call @k3(%{{.*}}) : (memref<4xf32>) -> ()
// CHECK-NEXT:    call @k4(%{{.*}}) : (memref<8xf32>) -> ()
// CHECK-NEXT:    call @k0(%{{.*}}) : (memref<8xf32>) -> ()
// CHECK-NEXT:    call @helper(%{{.*}}) : (memref<8xf32>) -> ()
// CHECK:       func.func private @k0(
// CHECK:       func.func private @k1(
// CHECK-NOT:   func.func private @k2(
// CHECK:       func.func private @k3(
// CHECK:       func.func private @k4(
// CHECK:       func.func private @helper(
func.func @entry(%a: memref<8xf32>, %b: memref<4xf32>) {
  call @k0(%a) : (memref<8xf32>) -> ()
  call @k1(%a) : (memref<8xf32>) -> ()
  call @k2(%a) : (memref<8xf32>) -> ()
  call @k3(%b) : (memref<4xf32>) -> ()
  call @k4(%a) : (memref<8xf32>) -> ()
  call @k0(%a) : (memref<8xf32>) -> ()
  call @helper(%a) : (memref<8xf32>) -> ()
  return
}
func.func private @k0(%x: memref<8xf32>) attributes {triax_kernel} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %two = arith.constant 2.0 : f32
  scf.parallel (%i) = (%c0) to (%c8) step (%c1) {
    %v = memref.load %x[%i] : memref<8xf32>
    %w = arith.mulf %v, %two : f32
    memref.store %w, %x[%i] : memref<8xf32>
  }
  return
}
func.func private @k1(%x: memref<8xf32>) attributes {triax_kernel} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %three = arith.constant 3.0 : f32
  scf.parallel (%i) = (%c0) to (%c8) step (%c1) {
    %v = memref.load %x[%i] : memref<8xf32>
    %w = arith.mulf %v, %three : f32
    memref.store %w, %x[%i] : memref<8xf32>
  }
  return
}
func.func private @k2(%y: memref<8xf32>) attributes {triax_kernel} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %two = arith.constant 2.0 : f32
  scf.parallel (%j) = (%c0) to (%c8) step (%c1) {
    %v = memref.load %y[%j] : memref<8xf32>
    %w = arith.mulf %v, %two : f32
    memref.store %w, %y[%j] : memref<8xf32>
  }
  return
}
func.func private @k3(%x: memref<4xf32>) attributes {triax_kernel} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %two = arith.constant 2.0 : f32
  scf.parallel (%i) = (%c0) to (%c4) step (%c1) {
    %v = memref.load %x[%i] : memref<4xf32>
    %w = arith.mulf %v, %two : f32
    memref.store %w, %x[%i] : memref<4xf32>
  }
  return
}
func.func private @k4(%x: memref<8xf32>) attributes {triax_kernel, other} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %two = arith.constant 2.0 : f32
  scf.parallel (%i) = (%c0) to (%c8) step (%c1) {
    %v = memref.load %x[%i] : memref<8xf32>
    %w = arith.mulf %v, %two : f32
    memref.store %w, %x[%i] : memref<8xf32>
  }
  return
}
func.func private @helper(%x: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %two = arith.constant 2.0 : f32
  scf.parallel (%i) = (%c0) to (%c8) step (%c1) {
    %v = memref.load %x[%i] : memref<8xf32>
    %w = arith.mulf %v, %two : f32
    memref.store %w, %x[%i] : memref<8xf32>
  }
  return
}
