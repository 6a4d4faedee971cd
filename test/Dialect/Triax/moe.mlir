// Round trip of the mixture-of-experts ops (TriaxMoEOps.td), forward and
// backward, parsed, printed and parsed again, and through the generic form.
// RUN: triax-opt %s | triax-opt | FileCheck %s
// RUN: triax-opt %s --mlir-print-op-generic | triax-opt | FileCheck %s

// CHECK-LABEL: func.func @moe
func.func @moe(%x: tensor<2x8x16xf32>, %logits: tensor<2x8x4xf32>, %w1: tensor<4x16x32xf32>, %w2: tensor<4x32x16xf32>) -> (tensor<2x8x16xf32>, tensor<f32>) {
  // CHECK: %[[G:.*]], %[[E:.*]], %[[S:.*]], %[[A:.*]], %[[AUX:.*]] = triax.moe_route %{{.*}} {aux_coeff = 1.000000e-02 : f64, capacity = 5 : i64, renormalize, top_k = 2 : i64} : (tensor<2x8x4xf32>) -> (tensor<2x8x2xf32>, tensor<2x8x2xi32>, tensor<2x8x2xi32>, tensor<2x20xi32>, tensor<f32>)
  %g, %e, %s, %a, %aux = triax.moe_route %logits {top_k = 2, capacity = 5, aux_coeff = 0.01, renormalize} : (tensor<2x8x4xf32>) -> (tensor<2x8x2xf32>, tensor<2x8x2xi32>, tensor<2x8x2xi32>, tensor<2x20xi32>, tensor<f32>)
  // CHECK: triax.moe_dispatch %{{.*}}, %[[S]], %[[A]] : (tensor<2x8x16xf32>, tensor<2x8x2xi32>, tensor<2x20xi32>) -> tensor<4x10x16xf32>
  %buf = triax.moe_dispatch %x, %s, %a : (tensor<2x8x16xf32>, tensor<2x8x2xi32>, tensor<2x20xi32>) -> tensor<4x10x16xf32>
  // CHECK: triax.expert_linear %{{.*}}, %{{.*}} : (tensor<4x10x16xf32>, tensor<4x16x32xf32>) -> tensor<4x10x32xf32>
  %h = triax.expert_linear %buf, %w1 : (tensor<4x10x16xf32>, tensor<4x16x32xf32>) -> tensor<4x10x32xf32>
  // CHECK: triax.expert_linear %{{.*}}, %{{.*}} {transpose_weight} : (tensor<4x10x16xf32>, tensor<4x32x16xf32>) -> tensor<4x10x32xf32>
  %ht = triax.expert_linear %buf, %w2 {transpose_weight} : (tensor<4x10x16xf32>, tensor<4x32x16xf32>) -> tensor<4x10x32xf32>
  %o = triax.expert_linear %h, %w2 : (tensor<4x10x32xf32>, tensor<4x32x16xf32>) -> tensor<4x10x16xf32>
  // CHECK: triax.moe_combine %{{.*}}, %[[S]], %[[A]] gates %[[G]] : (tensor<4x10x16xf32>, tensor<2x8x2xi32>, tensor<2x20xi32>, tensor<2x8x2xf32>) -> tensor<2x8x16xf32>
  %y = triax.moe_combine %o, %s, %a gates %g : (tensor<4x10x16xf32>, tensor<2x8x2xi32>, tensor<2x20xi32>, tensor<2x8x2xf32>) -> tensor<2x8x16xf32>
  // CHECK: triax.moe_dispatch %{{.*}}, %[[S]], %[[A]] gates %[[G]] : (tensor<2x8x16xf32>, tensor<2x8x2xi32>, tensor<2x20xi32>, tensor<2x8x2xf32>) -> tensor<4x10x16xf32>
  %dbuf = triax.moe_dispatch %y, %s, %a gates %g : (tensor<2x8x16xf32>, tensor<2x8x2xi32>, tensor<2x20xi32>, tensor<2x8x2xf32>) -> tensor<4x10x16xf32>
  // CHECK: triax.moe_gates_grad %{{.*}}, %{{.*}}, %[[S]] : (tensor<2x8x16xf32>, tensor<4x10x16xf32>, tensor<2x8x2xi32>) -> tensor<2x8x2xf32>
  %dg = triax.moe_gates_grad %y, %o, %s : (tensor<2x8x16xf32>, tensor<4x10x16xf32>, tensor<2x8x2xi32>) -> tensor<2x8x2xf32>
  // CHECK: triax.moe_route_grad %{{.*}}, %[[E]], %{{.*}}, %[[AUX]] {aux_coeff = 1.000000e-02 : f64, renormalize} : (tensor<2x8x4xf32>, tensor<2x8x2xi32>, tensor<2x8x2xf32>, tensor<f32>) -> tensor<2x8x4xf32>
  %dl = triax.moe_route_grad %logits, %e, %dg, %aux {aux_coeff = 0.01, renormalize} : (tensor<2x8x4xf32>, tensor<2x8x2xi32>, tensor<2x8x2xf32>, tensor<f32>) -> tensor<2x8x4xf32>
  // CHECK: triax.expert_linear_weight_grad %{{.*}}, %{{.*}} : (tensor<4x10x16xf32>, tensor<4x10x32xf32>) -> tensor<4x16x32xf32>
  %dw = triax.expert_linear_weight_grad %buf, %h : (tensor<4x10x16xf32>, tensor<4x10x32xf32>) -> tensor<4x16x32xf32>
  // CHECK: triax.expert_linear_weight_grad %{{.*}}, %{{.*}} {transpose_weight} : (tensor<4x10x16xf32>, tensor<4x10x32xf32>) -> tensor<4x32x16xf32>
  %dwt = triax.expert_linear_weight_grad %buf, %h {transpose_weight} : (tensor<4x10x16xf32>, tensor<4x10x32xf32>) -> tensor<4x32x16xf32>
  return %y, %aux : tensor<2x8x16xf32>, tensor<f32>
}
