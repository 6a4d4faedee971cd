// Round trip of triax.fused_elementwise and triax.fused_yield: parse,
// print, parse again, and the same through the generic form.
// RUN: triax-opt %s | triax-opt | FileCheck %s
// RUN: triax-opt %s --mlir-print-op-generic | triax-opt | FileCheck %s

// SwiGLU keeping silu(a): two inputs, two results.
// CHECK-LABEL: func.func @swiglu
func.func @swiglu(%a: tensor<2x4x8xf32>, %b: tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>) {
  // CHECK: %[[R:.*]]:2 = triax.fused_elementwise(%{{.*}}, %{{.*}}) : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>) {
  // CHECK-NEXT: ^bb0(%[[X:.*]]: f32, %[[Y:.*]]: f32):
  // CHECK: %[[S:.*]] = arith.mulf %[[X]], %{{.*}} : f32
  // CHECK: %[[P:.*]] = arith.mulf %[[S]], %[[Y]] : f32
  // CHECK: triax.fused_yield %[[S]], %[[P]] : f32, f32
  // CHECK-NEXT: }
  %r:2 = triax.fused_elementwise(%a, %b) : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>) {
  ^bb0(%x: f32, %y: f32):
    %one = arith.constant 1.0 : f32
    %nx = arith.negf %x : f32
    %e = math.exp %nx : f32
    %d = arith.addf %one, %e : f32
    %sg = arith.divf %one, %d : f32
    %s = arith.mulf %x, %sg : f32
    %p = arith.mulf %s, %y : f32
    triax.fused_yield %s, %p : f32, f32
  }
  // CHECK: return %[[R]]#0, %[[R]]#1
  return %r#0, %r#1 : tensor<2x4x8xf32>, tensor<2x4x8xf32>
}

// A yielded input, a bf16 group (its scalars are f32, the compute type of
// bf16) and a 0-d one.
// CHECK-LABEL: func.func @forms
func.func @forms(%a: tensor<4xbf16>, %c: tensor<f32>) -> (tensor<4xbf16>, tensor<f32>) {
  // CHECK: triax.fused_elementwise(%{{.*}}) : (tensor<4xbf16>) -> tensor<4xbf16> {
  // CHECK-NEXT: ^bb0(%[[X:.*]]: f32):
  // CHECK-NEXT: triax.fused_yield %[[X]] : f32
  %r = triax.fused_elementwise(%a) : (tensor<4xbf16>) -> tensor<4xbf16> {
  ^bb0(%x: f32):
    triax.fused_yield %x : f32
  }
  // CHECK: triax.fused_elementwise(%{{.*}}) : (tensor<f32>) -> tensor<f32> {
  // CHECK: math.tanh
  %t = triax.fused_elementwise(%c) : (tensor<f32>) -> tensor<f32> {
  ^bb0(%x: f32):
    %y = math.tanh %x : f32
    triax.fused_yield %y : f32
  }
  return %r, %t : tensor<4xbf16>, tensor<f32>
}
