// triax-fuse-elementwise: connected chains of same-shape elementwise ops of
// one block become one triax.fused_elementwise whose body is the ops' scalar
// formulas; every value used outside a group is one of its results.
// RUN: triax-opt %s --triax-fuse-elementwise | FileCheck %s
// The fused IR verifies and prints back the same.
// RUN: triax-opt %s --triax-fuse-elementwise | triax-opt | FileCheck %s

// SwiGLU, silu(gate) * up: one fused op, one result; silu is x * sigmoid(x).
// CHECK-LABEL: func.func @swiglu
// CHECK-SAME: (%[[GATE:.*]]: tensor<2x4x16xf32>, %[[UP:.*]]: tensor<2x4x16xf32>)
// CHECK-NEXT: %[[R:.*]] = triax.fused_elementwise(%[[GATE]], %[[UP]]) : (tensor<2x4x16xf32>, tensor<2x4x16xf32>) -> tensor<2x4x16xf32> {
// CHECK-NEXT: ^bb0(%[[X:.*]]: f32, %[[Y:.*]]: f32):
// CHECK-NEXT:   %[[NX:.*]] = arith.negf %[[X]] : f32
// CHECK-NEXT:   %[[E:.*]] = math.exp %[[NX]] : f32
// CHECK-NEXT:   %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-NEXT:   %[[D:.*]] = arith.addf %[[ONE]], %[[E]] : f32
// CHECK-NEXT:   %[[ONE2:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-NEXT:   %[[SG:.*]] = arith.divf %[[ONE2]], %[[D]] : f32
// CHECK-NEXT:   %[[S:.*]] = arith.mulf %[[X]], %[[SG]] : f32
// CHECK-NEXT:   %[[P:.*]] = arith.mulf %[[S]], %[[Y]] : f32
// CHECK-NEXT:   triax.fused_yield %[[P]] : f32
// CHECK-NEXT: }
// CHECK-NEXT: return %[[R]]
// CHECK-NOT: triax.silu
func.func @swiglu(%gate: tensor<2x4x16xf32>, %up: tensor<2x4x16xf32>) -> tensor<2x4x16xf32> {
  %s = triax.silu %gate : tensor<2x4x16xf32>
  %p = triax.mul %s, %up : tensor<2x4x16xf32>
  return %p : tensor<2x4x16xf32>
}

// The backward of a GELU MLP: gelu_grad then the residual add, one group.
// CHECK-LABEL: func.func @gelu_grad_add
// CHECK-SAME: (%[[X:.*]]: tensor<2x4x16xf32>, %[[DY:.*]]: tensor<2x4x16xf32>, %[[RES:.*]]: tensor<2x4x16xf32>)
// CHECK-NEXT: %[[R:.*]] = triax.fused_elementwise(%[[X]], %[[DY]], %[[RES]]) : (tensor<2x4x16xf32>, tensor<2x4x16xf32>, tensor<2x4x16xf32>) -> tensor<2x4x16xf32> {
// CHECK-NEXT: ^bb0(%[[A:.*]]: f32, %[[B:.*]]: f32, %[[C:.*]]: f32):
// CHECK:        math.tanh
// CHECK:        arith.constant 1.341450e-01 : f32
// CHECK:        %[[G:.*]] = arith.mulf %[[B]], %{{.*}} : f32
// CHECK-NEXT:   %[[S:.*]] = arith.addf %[[G]], %[[C]] : f32
// CHECK-NEXT:   triax.fused_yield %[[S]] : f32
// CHECK-NEXT: }
// CHECK-NEXT: return %[[R]]
func.func @gelu_grad_add(%x: tensor<2x4x16xf32>, %dy: tensor<2x4x16xf32>, %res: tensor<2x4x16xf32>) -> tensor<2x4x16xf32> {
  %g = triax.gelu_grad %x, %dy : tensor<2x4x16xf32>
  %s = triax.add %g, %res : tensor<2x4x16xf32>
  return %s : tensor<2x4x16xf32>
}

// Values used outside the group are results, in the order of their ops: the
// SwiGLU of a forward_backward keeps silu(gate) for the backward pass; a
// value used by a later non-elementwise op is one too; a value used only
// inside (the product) is not. A value used twice inside is computed once.
// CHECK-LABEL: func.func @outside_uses
// CHECK-NEXT: %[[R:.*]]:2 = triax.fused_elementwise(%{{.*}}, %{{.*}}) : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>) {
// CHECK-NEXT: ^bb0(%[[X:.*]]: f32, %[[Y:.*]]: f32):
// CHECK:        %[[S:.*]] = arith.mulf %[[X]], %{{.*}} : f32
// CHECK-NEXT:   %[[P:.*]] = arith.mulf %[[S]], %[[Y]] : f32
// CHECK-NEXT:   %[[Q:.*]] = arith.addf %[[P]], %[[S]] : f32
// CHECK-NEXT:   triax.fused_yield %[[S]], %[[Q]] : f32, f32
// CHECK-NEXT: }
// CHECK-NEXT: %[[N:.*]] = triax.rms_norm %[[R]]#1, %{{.*}} :
// CHECK-NEXT: return %[[N]], %[[R]]#0
func.func @outside_uses(%gate: tensor<2x4x8xf32>, %up: tensor<2x4x8xf32>, %w: tensor<8xf32>) -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>) {
  %s = triax.silu %gate : tensor<2x4x8xf32>
  %p = triax.mul %s, %up : tensor<2x4x8xf32>
  %q = triax.add %p, %s : tensor<2x4x8xf32>
  %n = triax.rms_norm %q, %w : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  return %n, %s : tensor<2x4x8xf32>, tensor<2x4x8xf32>
}

// Different shapes are different groups: the linear between them changes
// the shape and is not fused.
// CHECK-LABEL: func.func @shapes
// CHECK: %[[A:.*]] = triax.fused_elementwise(%{{.*}}, %{{.*}}) : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32> {
// CHECK:   math.tanh
// CHECK: }
// CHECK: %[[L:.*]] = triax.linear %[[A]], %{{.*}} : (tensor<2x4x8xf32>, tensor<8x16xf32>) -> tensor<2x4x16xf32>
// CHECK: %[[B:.*]] = triax.fused_elementwise(%[[L]], %{{.*}}) : (tensor<2x4x16xf32>, tensor<2x4x16xf32>) -> tensor<2x4x16xf32> {
// CHECK:   math.exp
// CHECK: }
// CHECK: return %[[B]]
func.func @shapes(%x: tensor<2x4x8xf32>, %y: tensor<2x4x8xf32>, %w: tensor<8x16xf32>, %z: tensor<2x4x16xf32>) -> tensor<2x4x16xf32> {
  %a = triax.add %x, %y : tensor<2x4x8xf32>
  %g = triax.gelu %a : tensor<2x4x8xf32>
  %l = triax.linear %g, %w : (tensor<2x4x8xf32>, tensor<8x16xf32>) -> tensor<2x4x16xf32>
  %s = triax.silu %l : tensor<2x4x16xf32>
  %m = triax.mul %s, %z : tensor<2x4x16xf32>
  return %m : tensor<2x4x16xf32>
}

// Non-elementwise ops are never fused, and a group of one op stays as it
// is: add -> layer_norm -> gelu is three ops.
// CHECK-LABEL: func.func @not_elementwise
// CHECK-NEXT: triax.add
// CHECK-NEXT: triax.layer_norm
// CHECK-NEXT: triax.gelu
// CHECK-NEXT: return
// CHECK-NOT: triax.fused_elementwise
func.func @not_elementwise(%x: tensor<2x4x8xf32>, %w: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<2x4x8xf32> {
  %a = triax.add %x, %x : tensor<2x4x8xf32>
  %n = triax.layer_norm %a, %w, %b : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  %g = triax.gelu %n : tensor<2x4x8xf32>
  return %g : tensor<2x4x8xf32>
}

// %h is used by the layer_norm before the mul that uses it again: fusing
// %h into the mul would move %h below a use of it. Both stay unfused.
// CHECK-LABEL: func.func @dominance
// CHECK-NEXT: %[[H:.*]] = triax.add
// CHECK-NEXT: %[[N:.*]] = triax.layer_norm %[[H]]
// CHECK-NEXT: triax.mul %[[H]], %[[N]]
// CHECK-NEXT: return
func.func @dominance(%x: tensor<2x4x8xf32>, %y: tensor<2x4x8xf32>, %w: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<2x4x8xf32> {
  %h = triax.add %x, %y : tensor<2x4x8xf32>
  %n = triax.layer_norm %h, %w, %b : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  %r = triax.mul %h, %n : tensor<2x4x8xf32>
  return %r : tensor<2x4x8xf32>
}

// The residual of a GPT block: the same holds for the residual add %h, but
// the gelu and the add after it fuse, with %h as an input.
// CHECK-LABEL: func.func @residual
// CHECK-NEXT: %[[H:.*]] = triax.add
// CHECK-NEXT: %[[N:.*]] = triax.layer_norm %[[H]]
// CHECK-NEXT: %[[R:.*]] = triax.fused_elementwise(%[[N]], %[[H]]) : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32> {
// CHECK-NEXT: ^bb0(%[[A:.*]]: f32, %[[B:.*]]: f32):
// CHECK:        math.tanh
// CHECK:        %[[S:.*]] = arith.addf %[[B]], %{{.*}} : f32
// CHECK-NEXT:   triax.fused_yield %[[S]] : f32
// CHECK-NEXT: }
// CHECK-NEXT: return %[[R]]
func.func @residual(%x: tensor<2x4x8xf32>, %y: tensor<2x4x8xf32>, %w: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<2x4x8xf32> {
  %h = triax.add %x, %y : tensor<2x4x8xf32>
  %n = triax.layer_norm %h, %w, %b : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  %g = triax.gelu %n : tensor<2x4x8xf32>
  %r = triax.add %h, %g : tensor<2x4x8xf32>
  return %r : tensor<2x4x8xf32>
}

// Moving a group down is fine when what lies between neither uses its
// values nor is used by it: %t is defined between the adds and is an input.
// The group goes where its last op was.
// CHECK-LABEL: func.func @move_down
// CHECK-NEXT: %[[T:.*]] = triax.linear
// CHECK-NEXT: %[[R:.*]] = triax.fused_elementwise(%{{.*}}, %{{.*}}, %[[T]])
// CHECK: return %[[R]]
func.func @move_down(%x: tensor<2x4x8xf32>, %y: tensor<2x4x8xf32>, %w: tensor<8x8xf32>) -> tensor<2x4x8xf32> {
  %a = triax.add %x, %y : tensor<2x4x8xf32>
  %t = triax.linear %y, %w : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
  %b = triax.add %a, %t : tensor<2x4x8xf32>
  return %b : tensor<2x4x8xf32>
}

// No group moves below an op that may write memory (the kernels read
// parameters and gradient buffers in place): the add stays above the store
// and the mul is a group of one.
// CHECK-LABEL: func.func @write_between
// CHECK-NEXT: triax.add
// CHECK-NEXT: arith.constant
// CHECK-NEXT: memref.store
// CHECK-NEXT: triax.mul
// CHECK-NEXT: return
func.func @write_between(%x: tensor<2x4x8xf32>, %y: tensor<2x4x8xf32>, %m: memref<4xf32>, %f: f32) -> tensor<2x4x8xf32> {
  %a = triax.add %x, %y : tensor<2x4x8xf32>
  %c0 = arith.constant 0 : index
  memref.store %f, %m[%c0] : memref<4xf32>
  %b = triax.mul %a, %y : tensor<2x4x8xf32>
  return %b : tensor<2x4x8xf32>
}

// Each block is fused on its own: the chain inside the triax.block is one
// group, and its result does not fuse with the silu after the block.
// CHECK-LABEL: func.func @blocks
// CHECK: triax.block "h.0"
// CHECK-NEXT: ^bb0(%[[IN:.*]]: tensor<2x4x8xf32>):
// CHECK-NEXT: %[[R:.*]] = triax.fused_elementwise(%[[IN]]) : (tensor<2x4x8xf32>) -> tensor<2x4x8xf32> {
// CHECK: triax.yield %[[R]]
// CHECK: triax.silu
func.func @blocks(%x: tensor<2x4x8xf32>) -> tensor<2x4x8xf32> {
  %y = triax.block "h.0" (%x) : (tensor<2x4x8xf32>) -> tensor<2x4x8xf32> {
  ^bb0(%in: tensor<2x4x8xf32>):
    %g = triax.gelu %in : tensor<2x4x8xf32>
    %m = triax.mul %g, %in : tensor<2x4x8xf32>
    triax.yield %m : tensor<2x4x8xf32>
  }
  %s = triax.silu %y : tensor<2x4x8xf32>
  return %s : tensor<2x4x8xf32>
}

// A chain whose values nobody uses is left to dead-code removal.
// CHECK-LABEL: func.func @dead
// CHECK-NEXT: triax.gelu
// CHECK-NEXT: triax.silu
// CHECK-NEXT: return
func.func @dead(%x: tensor<2x4x8xf32>) {
  %g = triax.gelu %x : tensor<2x4x8xf32>
  %s = triax.silu %g : tensor<2x4x8xf32>
  return
}
