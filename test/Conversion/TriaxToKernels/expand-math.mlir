// RUN: triax-opt %s --triax-expand-math | FileCheck %s
// RUN: triax-opt %s --triax-expand-math --convert-math-to-llvm --convert-arith-to-llvm --convert-func-to-llvm | FileCheck %s --check-prefix=LLVM

// f32 tanh: |x| clamped to 9 by a select (NaN passes through), n = the
// integer nearest -2|x| / ln 2, the Cody-Waite remainder, expm1's Taylor
// polynomial (1/7! first, 1/2! last), 2^n from its exponent bits, and
// -e / (2 + e) with x's sign put back on the bits. No call is left.
// CHECK-LABEL: func.func @tanh_f32
// CHECK-SAME:    (%[[X:.*]]: f32)
// CHECK-NOT:     math.tanh
// CHECK-DAG:     %[[NINE:.*]] = arith.constant 9.000000e+00 : f32
// CHECK-DAG:     %[[LOG2E:.*]] = arith.constant 1.44269502 : f32
// CHECK-DAG:     %[[LN2HI:.*]] = arith.constant 0.693145751 : f32
// CHECK-DAG:     %[[C7:.*]] = arith.constant 1.98412701E-4 : f32
// CHECK-DAG:     %[[SIGN:.*]] = arith.constant -2147483648 : i32
// CHECK-DAG:     %[[MAG:.*]] = arith.constant 2147483647 : i32
// CHECK:         %[[A:.*]] = math.absf %[[X]] : f32
// CHECK:         %[[BIG:.*]] = arith.cmpf ogt, %[[A]], %[[NINE]] : f32
// CHECK:         %[[CL:.*]] = arith.select %[[BIG]], %[[NINE]], %[[A]] : f32
// CHECK:         %[[Y:.*]] = arith.mulf %[[CL]], {{.*}} : f32
// CHECK:         %[[Z:.*]] = arith.mulf %[[Y]], %[[LOG2E]] : f32
// CHECK:         %[[N:.*]] = arith.fptosi {{.*}} : f32 to i32
// CHECK:         %[[NF:.*]] = arith.sitofp %[[N]] : i32 to f32
// CHECK:         arith.mulf %[[NF]], %[[LN2HI]] : f32
// CHECK:         arith.mulf {{.*}}, %[[C7]] : f32
// CHECK:         %[[E127:.*]] = arith.addi %[[N]], {{.*}} : i32
// CHECK:         %[[BITS:.*]] = arith.shli %[[E127]], {{.*}} : i32
// CHECK:         %[[S:.*]] = arith.bitcast %[[BITS]] : i32 to f32
// CHECK:         %[[T:.*]] = arith.divf
// CHECK:         %[[TB:.*]] = arith.bitcast %[[T]] : f32 to i32
// CHECK:         %[[TM:.*]] = arith.andi %[[TB]], %[[MAG]] : i32
// CHECK:         %[[XB:.*]] = arith.bitcast %[[X]] : f32 to i32
// CHECK:         %[[XS:.*]] = arith.andi %[[XB]], %[[SIGN]] : i32
// CHECK:         %[[R:.*]] = arith.ori %[[TM]], %[[XS]] : i32
// CHECK:         %[[RF:.*]] = arith.bitcast %[[R]] : i32 to f32
// CHECK:         return %[[RF]] : f32
func.func @tanh_f32(%x: f32) -> f32 {
  %t = math.tanh %x : f32
  return %t : f32
}

// Other element types keep math.tanh (the CPU pipeline's math-to-libm
// calls libm for them).
// CHECK-LABEL: func.func @tanh_f64
// CHECK:         math.tanh %{{.*}} : f64
func.func @tanh_f64(%x: f64) -> f64 {
  %t = math.tanh %x : f64
  return %t : f64
}

// In a loop, as the GELU kernels have it: the body is plain arithmetic and
// lowers to LLVM with no call, which is what lets the vectorizer at it.
// LLVM-LABEL: llvm.func @tanh_f32
// LLVM-NOT:     llvm.call
// LLVM-NOT:     tanh
// LLVM:         llvm.fdiv
// LLVM:         llvm.return
