// A fused group of elementwise ops is one parallel loop over the flattened
// elements: each input loaded once, the scalar body inlined, each result
// (every value used outside the group) stored; the values used only inside
// get no buffer.
// RUN: triax-opt %s --triax-fuse-elementwise --convert-triax-to-kernels | FileCheck %s
// Three ops, one loop: two loops fewer than without fusion (the embedding,
// the logits' add and the cross-entropy's rows and mean have the rest).
// RUN: triax-opt %s --convert-triax-to-kernels | grep -c scf.parallel | FileCheck --check-prefix=UNFUSED %s
// UNFUSED: {{^}}7{{$}}
// RUN: triax-opt %s --triax-fuse-elementwise --convert-triax-to-kernels | grep -c scf.parallel | FileCheck --check-prefix=FUSED %s
// FUSED: {{^}}5{{$}}

triax.model @m config = #triax.train_config<micro_batch = 2, seq = 4> {
  triax.param @emb : tensor<16x8xf32> init <normal, std = 0.02> decay
  func.func @forward(%tokens: tensor<2x4xi32>, %targets: tensor<2x4xi32>) -> tensor<f32> {
    %emb = triax.get_param @emb : tensor<16x8xf32>
    %x = triax.embedding %tokens, %emb : (tensor<2x4xi32>, tensor<16x8xf32>) -> tensor<2x4x8xf32>
    // silu(x) * x + x, keeping silu(x) (used by the second linear).
    %s = triax.silu %x : tensor<2x4x8xf32>
    %m = triax.mul %s, %x : tensor<2x4x8xf32>
    %a = triax.add %m, %x : tensor<2x4x8xf32>
    %l1 = triax.linear %a, %emb {transpose_weight} : (tensor<2x4x8xf32>, tensor<16x8xf32>) -> tensor<2x4x16xf32>
    %l2 = triax.linear %s, %emb {transpose_weight} : (tensor<2x4x8xf32>, tensor<16x8xf32>) -> tensor<2x4x16xf32>
    %logits = triax.add %l1, %l2 : tensor<2x4x16xf32>
    %loss = triax.cross_entropy %logits, %targets : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// The group's loop over the 64 flattened elements: x loaded once, silu, mul
// and add computed in a row, silu(x) and the sum stored (two buffers; the
// product gets none).
// CHECK: scf.parallel (%[[I:[a-z0-9_]+]]) = ({{.*}}) to ({{.*}}) step ({{.*}}) {
// CHECK-NEXT:   %[[V:.*]] = memref.load %{{.*}}[%[[I]]] : memref<64xf32>
// CHECK-NOT:    memref.load
// CHECK:        math.exp
// CHECK:        %[[SV:.*]] = arith.mulf %[[V]], %{{.*}} : f32
// CHECK-NEXT:   %[[MV:.*]] = arith.mulf %[[SV]], %[[V]] : f32
// CHECK-NEXT:   %[[AV:.*]] = arith.addf %[[MV]], %[[V]] : f32
// CHECK-NEXT:   memref.store %[[SV]], %{{.*}}[%[[I]]] : memref<64xf32>
// CHECK-NEXT:   memref.store %[[AV]], %{{.*}}[%[[I]]] : memref<64xf32>
// CHECK-NEXT:   scf.reduce
// CHECK-NEXT: }
// CHECK-NOT: triax.
