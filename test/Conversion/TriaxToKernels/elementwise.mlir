// Elementwise ops: one parallel loop over all elements each; GELU is the
// tanh approximation.
// RUN: triax-opt %s --convert-triax-to-kernels | FileCheck %s

triax.model @m config = #triax.train_config<micro_batch = 2, seq = 4> {
  triax.param @emb : tensor<16x8xf32> init <normal, std = 0.02> decay
  func.func @forward(%tokens: tensor<2x4xi32>, %targets: tensor<2x4xi32>) -> tensor<f32> {
    %emb = triax.get_param @emb : tensor<16x8xf32>
    %x = triax.embedding %tokens, %emb : (tensor<2x4xi32>, tensor<16x8xf32>) -> tensor<2x4x8xf32>
    %a = triax.add %x, %x : tensor<2x4x8xf32>
    %m = triax.mul %a, %x : tensor<2x4x8xf32>
    %g = triax.gelu %m : tensor<2x4x8xf32>
    %s = triax.silu %g : tensor<2x4x8xf32>
    %dg = triax.gelu_grad %m, %s : tensor<2x4x8xf32>
    %ds = triax.silu_grad %g, %dg : tensor<2x4x8xf32>
    %logits = triax.linear %ds, %emb {transpose_weight} : (tensor<2x4x8xf32>, tensor<16x8xf32>) -> tensor<2x4x16xf32>
    %loss = triax.cross_entropy %logits, %targets : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// CHECK-LABEL: func.func @triax_forward
// Embedding: out[t, h] = table[ids[t], h].
// CHECK: scf.parallel (%[[T:.*]], %[[H:.*]]) =
// CHECK:   %[[ID:.*]] = memref.load %{{.*}}[%[[T]]] : memref<8xi32>
// CHECK:   %[[IDX:.*]] = arith.index_cast %[[ID]] : i32 to index
// CHECK:   memref.load %{{.*}}[%[[IDX]], %[[H]]] : memref<16x8xf32>
// add: one flat loop over 64 elements.
// CHECK: memref.collapse_shape %{{.*}} {{\[}}[0, 1, 2]] : memref<2x4x8xf32> into memref<64xf32>
// CHECK: scf.parallel (%[[I:.*]]) =
// CHECK:   arith.addf
// CHECK: scf.parallel
// CHECK:   arith.mulf
// gelu: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
// CHECK: scf.parallel
// CHECK-DAG: arith.constant 0.797884583 : f32
// CHECK-DAG: arith.constant 4.471500e-02 : f32
// CHECK:   math.tanh
// silu: x * sigmoid(x).
// CHECK: scf.parallel
// CHECK:   math.exp
// gelu': uses 3 * 0.044715.
// CHECK: scf.parallel
// CHECK:   math.tanh
// CHECK:   arith.constant 1.341450e-01 : f32
// CHECK: scf.parallel
// CHECK:   math.exp
