// REQUIRES: mlir-runner
// triax-expand-math's tanh, run: the largest distance in f32 ulps between
// the expanded f32 tanh and the f64 tanh (which the pass leaves to libm)
// rounded to f32, over x = -12 + i * 1e-5 up to 12 (2.4 million points),
// then the edges: NaN, +-0, +-inf, the clamp at 9. A wrong constant or a
// lost term moves the ulps by orders of magnitude. (kernel_test's testTanh
// checks the runtime's copy of the formula against the double tanh, 2.49
// ulps.)
// RUN: triax-opt %s --triax-expand-math | mlir-opt --convert-scf-to-cf --convert-math-to-llvm --convert-math-to-libm --convert-arith-to-llvm --convert-func-to-llvm --convert-cf-to-llvm --reconcile-unrealized-casts | mlir-runner -e main -entry-point-result=void -shared-libs=%mlir_runner_libs | FileCheck %s
// CHECK:      tanh max ulps
// CHECK-NEXT: 2
// CHECK-NEXT: edges
// CHECK-NEXT: nan, 0, -0, 1, -1, 1, -1
func.func @maxulps_tanh(%lo: f32, %step: f32, %n: index) -> i32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %z = arith.constant 0 : i32
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%m = %z) -> (i32) {
    %ii = arith.index_cast %i : index to i32
    %fi = arith.sitofp %ii : i32 to f32
    %d = arith.mulf %fi, %step : f32
    %x = arith.addf %lo, %d : f32
    %e = math.tanh %x : f32
    %xd = arith.extf %x : f32 to f64
    %ed = math.tanh %xd : f64
    %ref = arith.truncf %ed : f64 to f32
    %a = arith.bitcast %e : f32 to i32
    %b = arith.bitcast %ref : f32 to i32
    %diff = arith.subi %a, %b : i32
    %neg = arith.subi %z, %diff : i32
    %abs = arith.maxsi %diff, %neg : i32
    %mm = arith.maxsi %m, %abs : i32
    scf.yield %mm : i32
  }
  return %r : i32
}
func.func private @printI64(i64)
func.func private @printNewline()
func.func private @printString(!llvm.ptr)
func.func private @printF32(f32)
func.func private @printComma()
llvm.mlir.global internal constant @tanh_title("tanh max ulps\0A\00")
llvm.mlir.global internal constant @edges_title("edges\0A\00")
// Through a function, so that nothing folds the edges to constants first.
func.func @tanh_of(%x: f32) -> f32 {
  %t = math.tanh %x : f32
  return %t : f32
}
func.func @main() {
  %tanh_title = llvm.mlir.addressof @tanh_title : !llvm.ptr
  call @printString(%tanh_title) : (!llvm.ptr) -> ()
  %lo = arith.constant -12.0 : f32
  %step = arith.constant 0.00001 : f32
  %n = arith.constant 2400000 : index
  %t = call @maxulps_tanh(%lo, %step, %n) : (f32, f32, index) -> i32
  %t64 = arith.extsi %t : i32 to i64
  call @printI64(%t64) : (i64) -> ()
  call @printNewline() : () -> ()
  %edges_title = llvm.mlir.addressof @edges_title : !llvm.ptr
  call @printString(%edges_title) : (!llvm.ptr) -> ()
  %nan = arith.constant 0x7FC00000 : f32
  %zero = arith.constant 0.0 : f32
  %nzero = arith.constant -0.0 : f32
  %inf = arith.constant 0x7F800000 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %nine = arith.constant 9.5 : f32
  %nnine = arith.constant -9.5 : f32
  %t0 = call @tanh_of(%nan) : (f32) -> f32
  call @printF32(%t0) : (f32) -> ()
  call @printComma() : () -> ()
  %t1 = call @tanh_of(%zero) : (f32) -> f32
  call @printF32(%t1) : (f32) -> ()
  call @printComma() : () -> ()
  %t2 = call @tanh_of(%nzero) : (f32) -> f32
  call @printF32(%t2) : (f32) -> ()
  call @printComma() : () -> ()
  %t3 = call @tanh_of(%inf) : (f32) -> f32
  call @printF32(%t3) : (f32) -> ()
  call @printComma() : () -> ()
  %t4 = call @tanh_of(%ninf) : (f32) -> f32
  call @printF32(%t4) : (f32) -> ()
  call @printComma() : () -> ()
  %t5 = call @tanh_of(%nine) : (f32) -> f32
  call @printF32(%t5) : (f32) -> ()
  call @printComma() : () -> ()
  %t6 = call @tanh_of(%nnine) : (f32) -> f32
  call @printF32(%t6) : (f32) -> ()
  call @printNewline() : () -> ()
  return
}
