// REQUIRES: mlir-runner
// triax-expand-math's exp of a vector of f32, run: the largest distance in
// f32 ulps between the expanded exp and the f64 exp (which the pass leaves
// to libm) rounded to f32, over x = -104 + i * 1e-4 up to 90 (1.94 million
// points, 8 lanes at a time; past 88.72 both are +inf, below -103.97 both
// 0, and from -87.3 down the results are subnormal); then over [-87, 88],
// where they are normal; then the edges. A wrong constant or a lost term
// moves the ulps by orders of magnitude.
// RUN: triax-opt %s --triax-expand-math | FileCheck %s --check-prefix=EXPANDED
// RUN: triax-opt %s --triax-expand-math | mlir-opt --convert-vector-to-scf=full-unroll=true --convert-vector-to-llvm --convert-scf-to-cf --convert-math-to-llvm --convert-arith-to-llvm --convert-func-to-llvm --convert-cf-to-llvm --reconcile-unrealized-casts | mlir-runner -e main -entry-point-result=void -shared-libs=%mlir_runner_libs | FileCheck %s
// EXPANDED-LABEL: func.func @exp_lanes
// EXPANDED-NOT:     math.exp {{.*}} : vector<8xf32>
// EXPANDED-COUNT-7: vector.fma {{.*}} : vector<8xf32>
// EXPANDED-NOT:     math.exp {{.*}} : vector<8xf32>
// EXPANDED:         math.exp {{.*}} : vector<8xf64>
// EXPANDED-LABEL: func.func @exp_of
// EXPANDED-NOT:     math.exp
// CHECK:      1
// CHECK-NEXT: 1
// CHECK-NEXT: ( nan, 0, inf, 1, 0, inf, 3.78351e-44, 2.71828 )
func.func @exp_lanes(%x: vector<8xf32>) -> vector<8xi32> {
  %e = math.exp %x : vector<8xf32>
  %xd = arith.extf %x : vector<8xf32> to vector<8xf64>
  %ed = math.exp %xd : vector<8xf64>
  %ref = arith.truncf %ed : vector<8xf64> to vector<8xf32>
  %a = arith.bitcast %e : vector<8xf32> to vector<8xi32>
  %b = arith.bitcast %ref : vector<8xf32> to vector<8xi32>
  %diff = arith.subi %a, %b : vector<8xi32>
  %z = arith.constant dense<0> : vector<8xi32>
  %neg = arith.subi %z, %diff : vector<8xi32>
  %abs = arith.maxsi %diff, %neg : vector<8xi32>
  return %abs : vector<8xi32>
}
func.func @maxulps_exp(%lo: f32, %step: f32, %n: index) -> i32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %lanes = arith.constant dense<[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]> : vector<8xf32>
  %steps = vector.broadcast %step : f32 to vector<8xf32>
  %offsets = arith.mulf %lanes, %steps : vector<8xf32>
  %z = arith.constant 0 : i32
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%m = %z) -> (i32) {
    %first = arith.muli %i, %c8 : index
    %ii = arith.index_cast %first : index to i32
    %fi = arith.sitofp %ii : i32 to f32
    %d = arith.mulf %fi, %step : f32
    %base = arith.addf %lo, %d : f32
    %bases = vector.broadcast %base : f32 to vector<8xf32>
    %x = arith.addf %bases, %offsets : vector<8xf32>
    %u = func.call @exp_lanes(%x) : (vector<8xf32>) -> vector<8xi32>
    %most = vector.reduction <maxsi>, %u : vector<8xi32> into i32
    %mm = arith.maxsi %m, %most : i32
    scf.yield %mm : i32
  }
  return %r : i32
}
// Through a function, so that nothing folds the edges to constants first.
func.func @exp_of(%x: vector<8xf32>) -> vector<8xf32> {
  %e = math.exp %x : vector<8xf32>
  return %e : vector<8xf32>
}
func.func @main() {
  %step = arith.constant 0.0001 : f32
  %lo = arith.constant -104.0 : f32
  %n = arith.constant 242500 : index
  %all = call @maxulps_exp(%lo, %step, %n) : (f32, f32, index) -> i32
  vector.print %all : i32
  %lo2 = arith.constant -87.0 : f32
  %n2 = arith.constant 218750 : index
  %normal = call @maxulps_exp(%lo2, %step, %n2) : (f32, f32, index) -> i32
  vector.print %normal : i32
  // NaN, -inf, +inf, 0, below the clamp, past the overflow, a subnormal
  // result, 1.
  %edges = arith.constant dense<[0x7FC00000, 0xFF800000, 0x7F800000, 0.0, -104.5, 88.8, -100.0, 1.0]> : vector<8xf32>
  %e = call @exp_of(%edges) : (vector<8xf32>) -> vector<8xf32>
  vector.print %e : vector<8xf32>
  return
}
