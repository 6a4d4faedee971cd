// triax.rope and its gradient (triax-autodiff makes it the inverse
// rotation of the result's gradient); convert-triax-to-kernels
// (EmbeddingKernels.cpp) builds two nests: the cosine and sine of every
// (batch, token, pair)'s angle once for all the heads (1 / theta^(2j/d) in
// f32, times the position), then one thread per (batch, token, head)
// rotating the head's d features in order. B = 2, S = 4, 2 heads of d = 8.
// RUN: triax-opt %s --triax-autodiff | FileCheck %s --check-prefix=VJP
// RUN: triax-opt %s --convert-triax-to-kernels --canonicalize --cse | FileCheck %s
triax.model @m config = #triax.train_config<micro_batch = 2, seq = 4> {
  triax.param @emb : tensor<16x16xf32> init <normal, std = 0.02> decay
  func.func @forward(%tokens: tensor<2x4xi32>, %targets: tensor<2x4xi32>) -> tensor<f32> {
    %emb = triax.get_param @emb : tensor<16x16xf32>
    %x = triax.embedding %tokens, %emb : (tensor<2x4xi32>, tensor<16x16xf32>) -> tensor<2x4x16xf32>
    %p = triax.position_ids : tensor<2x4xi32>
    %r = triax.rope %x, %p heads = 2 {theta = 100.0 : f64} : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> tensor<2x4x16xf32>
    %logits = triax.linear %r, %emb {transpose_weight} : (tensor<2x4x16xf32>, tensor<16x16xf32>) -> tensor<2x4x16xf32>
    %loss = triax.cross_entropy %logits, %targets : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// VJP-LABEL: func.func @forward_backward
// VJP: %[[P:.*]] = triax.position_ids : tensor<2x4xi32>
// VJP: triax.rope %{{.*}}, %[[P]] heads = 2 {theta = 1.000000e+02 : f64} :
// VJP: triax.rope %{{.*}}, %[[P]] heads = 2 {inverse, theta = 1.000000e+02 : f64} : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> tensor<2x4x16xf32>

// CHECK-LABEL: func.func @triax_forward
// The table: [2, 4, 4] cosines and sines, one pair j per iteration.
// CHECK: %[[COS:.*]] = memref.alloc() : memref<2x4x4xf32>
// CHECK-NEXT: %[[SIN:.*]] = memref.alloc() : memref<2x4x4xf32>
// CHECK-NEXT: scf.parallel (%[[B:.*]], %[[S:.*]], %[[J:.*]]) = {{.*}} to (%c2, %c4, %c4)
// CHECK: math.powf
// CHECK: math.cos
// CHECK: memref.store {{.*}}, %[[COS]][%[[B]], %[[S]], %[[J]]]
// CHECK: math.sin
// CHECK: memref.store {{.*}}, %[[SIN]][%[[B]], %[[S]], %[[J]]]
// The rotation: (batch, token, head) in parallel, the head's 8 features in
// order, each reading its pair's cosine and sine.
// CHECK: scf.parallel (%{{.*}}, %{{.*}}, %{{.*}}) = {{.*}} to (%c2, %c4, %c2)
// CHECK: scf.for %{{.*}} = %c0 to %c8 step %c1
// CHECK: memref.load %[[COS]]
// CHECK: memref.load %[[SIN]]
// CHECK-NOT: math.cos
// CHECK: memref.store
