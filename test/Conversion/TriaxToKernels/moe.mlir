// The mixture-of-experts ops: their VJPs (triax-autodiff) and their loop
// kernels (convert-triax-to-kernels, MoEKernels.cpp). E = 3 experts, top-2,
// capacity 2 rows per expert and sequence, B = 2 sequences of S = 4 tokens.
// RUN: triax-opt %s --triax-autodiff | FileCheck %s --check-prefix=VJP
// RUN: triax-opt %s --convert-triax-to-kernels --canonicalize --cse | FileCheck %s
triax.model @m config = #triax.train_config<micro_batch = 2, seq = 4> {
  triax.param @emb : tensor<16x8xf32> init <normal, std = 0.02> decay
  triax.param @router : tensor<8x3xf32> init <normal, std = 0.02> decay
  triax.param @w : tensor<3x8x8xf32> init <normal, std = 0.02> decay
  func.func @forward(%tokens: tensor<2x4xi32>, %targets: tensor<2x4xi32>) -> tensor<f32> {
    %emb = triax.get_param @emb : tensor<16x8xf32>
    %x = triax.embedding %tokens, %emb : (tensor<2x4xi32>, tensor<16x8xf32>) -> tensor<2x4x8xf32>
    %wr = triax.get_param @router : tensor<8x3xf32>
    %l = triax.linear %x, %wr : (tensor<2x4x8xf32>, tensor<8x3xf32>) -> tensor<2x4x3xf32>
    %g, %e, %s, %a, %aux = triax.moe_route %l {top_k = 2, capacity = 2, aux_coeff = 0.01, renormalize} : (tensor<2x4x3xf32>) -> (tensor<2x4x2xf32>, tensor<2x4x2xi32>, tensor<2x4x2xi32>, tensor<2x6xi32>, tensor<f32>)
    %buf = triax.moe_dispatch %x, %s, %a : (tensor<2x4x8xf32>, tensor<2x4x2xi32>, tensor<2x6xi32>) -> tensor<3x4x8xf32>
    %w = triax.get_param @w : tensor<3x8x8xf32>
    %o = triax.expert_linear %buf, %w : (tensor<3x4x8xf32>, tensor<3x8x8xf32>) -> tensor<3x4x8xf32>
    %y = triax.moe_combine %o, %s, %a gates %g : (tensor<3x4x8xf32>, tensor<2x4x2xi32>, tensor<2x6xi32>, tensor<2x4x2xf32>) -> tensor<2x4x8xf32>
    %logits = triax.linear %y, %emb {transpose_weight} : (tensor<2x4x8xf32>, tensor<16x8xf32>) -> tensor<2x4x16xf32>
    %ce = triax.cross_entropy %logits, %targets : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> tensor<f32>
    %loss = triax.add %ce, %aux : tensor<f32>
    return %loss : tensor<f32>
  }
}

// The combine's gradient is a dispatch weighted by the gates and the gates'
// gradient; the experts' is the transposed product and the weight gradient;
// the dispatch's is an unweighted combine; the router's gradient takes the
// gates' and the balancing loss's gradients.
// VJP-LABEL: func.func @forward_backward
// VJP: %[[G:.*]], %[[E:.*]], %[[S:.*]], %[[A:.*]], %[[AUX:.*]] = triax.moe_route
// VJP: %[[BUF:.*]] = triax.moe_dispatch %{{.*}}, %[[S]], %[[A]] :
// VJP: %[[O:.*]] = triax.expert_linear %[[BUF]], %[[W:.*]] :
// VJP: triax.moe_combine %[[O]], %[[S]], %[[A]] gates %[[G]]
// VJP: %[[DBUF:.*]] = triax.moe_dispatch %[[DY:.*]], %[[S]], %[[A]] gates %[[G]]
// VJP: %[[DG:.*]] = triax.moe_gates_grad %[[DY]], %[[O]], %[[S]]
// VJP: %[[DX:.*]] = triax.expert_linear %[[DBUF]], %[[W]] {transpose_weight}
// VJP: %[[DW:.*]] = triax.expert_linear_weight_grad %[[BUF]], %[[DBUF]]
// VJP-NEXT: triax.accumulate_grad @w, %[[DW]] : tensor<3x8x8xf32>
// VJP: triax.moe_combine %[[DX]], %[[S]], %[[A]] :
// VJP: triax.moe_route_grad %{{.*}}, %[[E]], %[[DG]], %{{.*}} {aux_coeff = 1.000000e-02 : f64, renormalize}

// The router: per token, the softmax into a scratch, then top-k by
// repeated arg-max (the second excludes the first), the gates renormalized.
// CHECK-LABEL: func.func @triax_forward(
// CHECK: memref.alloc() : memref<f32>
// CHECK-NEXT: %[[PROBS:.*]] = memref.alloc() : memref<2x4x3xf32>
// CHECK-NEXT: %[[ROUTED:.*]] = memref.alloc() : memref<2x3xi32>
// CHECK-NEXT: memref.alloc() : memref<2xf32>
// CHECK: scf.parallel (%{{.*}}, %{{.*}}) = (%c0, %c0) to (%c2, %c4)
// CHECK: arith.maximumf
// CHECK: math.exp
// CHECK: memref.store %{{.*}}, %[[PROBS]]
// CHECK: %[[FIRST:.*]]:2 = scf.for {{.*}} -> (f32, i32)
// CHECK: arith.cmpf ogt
// CHECK: %[[SECOND:.*]]:2 = scf.for {{.*}} -> (f32, i32)
// CHECK: arith.cmpi ne, %{{.*}}, %[[FIRST]]#1 : i32
// CHECK: %[[SUM:.*]] = arith.addf
// CHECK: arith.divf %{{.*}}, %[[SUM]]
// The capacity scan: one iteration per sequence, choices then tokens, a
// row kept while its expert has fewer than 2, assign written only then.
// CHECK: scf.parallel (%[[B:.*]]) = (%c0) to (%c2)
// CHECK: memref.store %c-1_i32
// CHECK: scf.for %[[J:.*]] = %c0 to %c2
// CHECK-NEXT: scf.for %[[T:.*]] = %c0 to %c4
// CHECK: %[[C:.*]] = memref.load %[[ROUTED]][%[[B]], %{{.*}}] : memref<2x3xi32>
// CHECK: %[[KEEP:.*]] = arith.cmpi slt, %[[C]], %c2_i32 : i32
// CHECK: scf.if %[[KEEP]] {
// CHECK: memref.store %{{.*}}, %{{.*}}[%[[B]], %{{.*}}] : memref<2x6xi32>
// The balancing loss: one iteration (a one-thread kernel on the GPU;
// folded into straight-line code here by --canonicalize) storing through
// the scalar's one-element view.
// CHECK: memref.expand_shape %{{.*}} [] output_shape [1] : memref<f32> into memref<1xf32>
// CHECK: memref.store %{{.*}}, %{{.*}}[%c0] : memref<1xf32>
// The runtime's counters: one iteration per counter adds to its element
// the choices dropped, sum of max(n[b, e] - 2, 0) (counter 0), or all
// B S k = 16 choices (counter 1).
// CHECK: %[[CNT:.*]] = call @trx_moe_counters() : () -> memref<?xf32>
// CHECK: scf.parallel (%[[I:.*]]) = (%c0) to (%c2)
// CHECK: memref.load %[[ROUTED]]
// CHECK: arith.maxsi %{{.*}}, %c0_i32 : i32
// CHECK: arith.select %{{.*}}, %{{.*}}, %cst{{.*}} : f32
// CHECK: %[[OLD:.*]] = memref.load %[[CNT]][%[[I]]] : memref<?xf32>
// CHECK: memref.store %{{.*}}, %[[CNT]][%[[I]]] : memref<?xf32>
// The dispatch: parallel over (expert, row, feature), a gather by assign.
// CHECK: scf.parallel (%{{.*}}, %{{.*}}, %{{.*}}) = (%c0, %c0, %c0) to (%c3, %c4, %c8)
// CHECK: arith.cmpi sge
// The experts: the stacked weight (held as [24, 8]) viewed as [3, 8, 8],
// one batched GEMM.
// CHECK: %[[W2D:.*]] = memref.cast %{{.*}} : memref<?x?xf32> to memref<24x8xf32>
// CHECK: memref.expand_shape %[[W2D]] {{\[}}[0, 1], [2]] output_shape [3, 8, 8]
// CHECK: call @trx_sgemm_batched
// The combine: parallel over tokens and features, the two choices added in
// order, each weighted by its gate.
// CHECK: scf.parallel (%{{.*}}, %{{.*}}, %{{.*}}) = (%c0, %c0, %c0) to (%c2, %c4, %c8)
// CHECK-COUNT-2: arith.select

// A route whose balancing loss nothing reads (triax-recompute's copy in a
// backward block) adds nothing to the counters.
// RUN: sed 's/%loss = triax.add %ce, %aux : tensor<f32>/%loss = triax.add %ce, %ce : tensor<f32>/' %s | triax-opt --convert-triax-to-kernels | FileCheck %s --check-prefix=UNCOUNTED
// UNCOUNTED-LABEL: func.func @triax_forward(
// UNCOUNTED-NOT: call @trx_moe_counters
// UNCOUNTED: return
