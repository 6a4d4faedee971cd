// dist-tensor-parallel on a MoE layer's experts (each expert's MLP a
// column/row pair of triax.expert_linear, Megatron's expert-tensor
// parallelism): the dispatch is a gather of token rows and the combine a
// gate-weighted sum of expert rows, both linear in the rows, so the pass
// sums on the tokens' side. The dispatch reads the tokens through
// copy_to_group, the experts' products run on the local columns with no
// collective between them, the combine reads the gates through
// copy_to_group, and its partial result [B, S, H] is summed over tp (the
// buffer [E, B*C, H] is capacity_factor * k times that). The router stays
// replicated, off the copied tokens.
// RUN: triax-opt %s -split-input-file --dist-tensor-parallel=tp=2 | FileCheck %s
// The backward (triax-autodiff, from the collectives' VJPs): the gates'
// gradient, made from the experts' partial rows, is summed over tp before
// the router's gradient reads it; the dispatch input's gradient is summed
// (copy_to_group's VJP) and then added to the router's path, which is the
// same on every member and so is not summed.
// RUN: triax-opt %s -split-input-file --dist-tensor-parallel=tp=2 --triax-autodiff | FileCheck %s --check-prefix=GRAD
// Sequence parallelism: the dispatch gathers the sequence, the combine's
// sum is reduce-scattered (a dense MLP's pair of collectives), and the
// router's logits, computed on the slice (its weight's gradient partial),
// are gathered with replicated_grad: every member routes the whole
// sequence alike, so the logits' gradient is the same on every member and
// each keeps its slice (dist.shard_sequence) instead of summing t copies.
// (The second model, whose sums must stay on the buffer, is an error here:
// sequence-parallel-errors.mlir.)
// RUN: not triax-opt %s -split-input-file --dist-tensor-parallel="tp=2 sequence-parallel" --triax-autodiff 2>&1 | FileCheck %s --check-prefix=SP

triax.model @m config = #triax.train_config<micro_batch = 2, seq = 4> {
  triax.param @emb : tensor<16x8xf32> init <normal, std = 0.02> decay
  triax.param @router : tensor<8x4xf32> init <normal, std = 0.02> decay
  triax.param @w1 : tensor<4x8x12xf32> init <normal, std = 0.02> decay
  triax.param @w2 : tensor<4x12x8xf32> init <normal, std = 0.02> decay
  func.func @forward(%tokens: tensor<2x4xi32>, %targets: tensor<2x4xi32>) -> tensor<f32> {
    %emb = triax.get_param @emb : tensor<16x8xf32>
    %x = triax.embedding %tokens, %emb : (tensor<2x4xi32>, tensor<16x8xf32>) -> tensor<2x4x8xf32>
    %wr = triax.get_param @router : tensor<8x4xf32>
    %l = triax.linear %x, %wr : (tensor<2x4x8xf32>, tensor<8x4xf32>) -> tensor<2x4x4xf32>
    %g, %e, %s, %a, %aux = triax.moe_route %l {top_k = 2, capacity = 2, aux_coeff = 0.01, renormalize} : (tensor<2x4x4xf32>) -> (tensor<2x4x2xf32>, tensor<2x4x2xi32>, tensor<2x4x2xi32>, tensor<2x8xi32>, tensor<f32>)
    %buf = triax.moe_dispatch %x, %s, %a : (tensor<2x4x8xf32>, tensor<2x4x2xi32>, tensor<2x8xi32>) -> tensor<4x4x8xf32>
    %w1 = triax.get_param @w1 : tensor<4x8x12xf32>
    %h = triax.expert_linear %buf, %w1 : (tensor<4x4x8xf32>, tensor<4x8x12xf32>) -> tensor<4x4x12xf32>
    %act = triax.gelu %h : tensor<4x4x12xf32>
    %w2 = triax.get_param @w2 : tensor<4x12x8xf32>
    %o = triax.expert_linear %act, %w2 : (tensor<4x4x12xf32>, tensor<4x12x8xf32>) -> tensor<4x4x8xf32>
    %y = triax.moe_combine %o, %s, %a gates %g : (tensor<4x4x8xf32>, tensor<2x4x2xi32>, tensor<2x8xi32>, tensor<2x4x2xf32>) -> tensor<2x4x8xf32>
    %r = triax.add %x, %y : tensor<2x4x8xf32>
    %logits = triax.linear %r, %emb {transpose_weight} : (tensor<2x4x8xf32>, tensor<16x8xf32>) -> tensor<2x4x16xf32>
    %ce = triax.cross_entropy %logits, %targets : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> tensor<f32>
    %loss = triax.add %ce, %aux : tensor<f32>
    return %loss : tensor<f32>
  }
}

// CHECK-LABEL: triax.model @m
// CHECK: %[[X:.*]] = dist.all_reduce sum %{{.*}} over @mesh ["tp"] : tensor<2x4x8xf32>
// CHECK-NEXT: %[[WR:.*]] = triax.get_param @router : tensor<8x4xf32>
// CHECK-NEXT: %[[L:.*]] = triax.linear %[[X]], %[[WR]]
// CHECK-NEXT: %[[G:.*]], %{{.*}}, %[[S:.*]], %[[A:.*]], %{{.*}} = triax.moe_route %[[L]]
// CHECK-NEXT: %[[XC:.*]] = dist.copy_to_group %[[X]] over @mesh ["tp"] : tensor<2x4x8xf32>
// CHECK-NEXT: %[[BUF:.*]] = triax.moe_dispatch %[[XC]], %[[S]], %[[A]] : {{.*}} -> tensor<4x4x8xf32>
// CHECK-NEXT: %[[W1:.*]] = triax.get_param @w1 : tensor<4x8x6xf32>
// CHECK-NEXT: %[[H:.*]] = triax.expert_linear %[[BUF]], %[[W1]] : (tensor<4x4x8xf32>, tensor<4x8x6xf32>) -> tensor<4x4x6xf32>
// CHECK-NEXT: %[[ACT:.*]] = triax.gelu %[[H]] : tensor<4x4x6xf32>
// CHECK-NEXT: %[[W2:.*]] = triax.get_param @w2 : tensor<4x6x8xf32>
// CHECK-NEXT: %[[O:.*]] = triax.expert_linear %[[ACT]], %[[W2]] : (tensor<4x4x6xf32>, tensor<4x6x8xf32>) -> tensor<4x4x8xf32>
// CHECK-NEXT: %[[GC:.*]] = dist.copy_to_group %[[G]] over @mesh ["tp"] : tensor<2x4x2xf32>
// CHECK-NEXT: %[[Y:.*]] = triax.moe_combine %[[O]], %[[S]], %[[A]] gates %[[GC]]
// CHECK-NEXT: %[[SUM:.*]] = dist.all_reduce sum %[[Y]] over @mesh ["tp"] : tensor<2x4x8xf32>
// CHECK-NEXT: triax.add %[[X]], %[[SUM]]

// GRAD-LABEL: triax.model @m
// GRAD: func.func @forward_backward
// GRAD: %[[X:.*]] = dist.all_reduce sum %{{.*}} over @mesh ["tp"] : tensor<2x4x8xf32>
// GRAD: %[[L:.*]] = triax.linear %[[X]], %[[WR:.*]] : (tensor<2x4x8xf32>, tensor<8x4xf32>)
// GRAD: %{{.*}}, %[[E:.*]], %[[S:.*]], %[[A:.*]], %{{.*}} = triax.moe_route %[[L]]
// GRAD: %[[O:.*]] = triax.expert_linear %{{.*}}, %{{.*}} : (tensor<4x4x6xf32>, tensor<4x6x8xf32>) -> tensor<4x4x8xf32>
// GRAD: triax.cross_entropy_grad
// GRAD: %[[DY:.*]] = dist.all_reduce sum %{{.*}} over @mesh ["tp"] : tensor<2x4x8xf32>
// GRAD: %[[DGP:.*]] = triax.moe_gates_grad %[[DY]], %[[O]], %[[S]]
// GRAD-NEXT: %[[DG:.*]] = dist.all_reduce sum %[[DGP]] over @mesh ["tp"] : tensor<2x4x2xf32>
// GRAD: %[[DXP:.*]] = triax.moe_combine %{{.*}}, %[[S]], %[[A]] : (tensor<4x4x8xf32>, {{.*}}) -> tensor<2x4x8xf32>
// GRAD-NEXT: %[[DX:.*]] = dist.all_reduce sum %[[DXP]] over @mesh ["tp"] : tensor<2x4x8xf32>
// GRAD: %[[DL:.*]] = triax.moe_route_grad %[[L]], %[[E]], %[[DG]]
// GRAD-NEXT: %[[DXR:.*]] = triax.linear %[[DL]], %[[WR]] {transpose_weight}
// GRAD-NOT: dist.all_reduce
// GRAD: triax.add %{{.*}}, %[[DXR]]

// SP-LABEL: triax.model @m
// SP: triax.param @router : tensor<8x4xf32> {{.*}}dist.partial_grad
// SP: func.func @forward_backward
// SP: %[[X:.*]] = dist.reduce_scatter sum %{{.*}} over @mesh ["tp"] dim 1 : tensor<2x4x8xf32> -> tensor<2x2x8xf32>
// SP-NEXT: %[[WR:.*]] = triax.get_param @router
// SP-NEXT: %[[L:.*]] = triax.linear %[[X]], %[[WR]] : (tensor<2x2x8xf32>, tensor<8x4xf32>) -> tensor<2x2x4xf32>
// SP-NEXT: %[[LG:.*]] = dist.all_gather %[[L]] over @mesh ["tp"] dim 1 replicated_grad : tensor<2x2x4xf32> -> tensor<2x4x4xf32>
// SP-NEXT: %[[G:.*]], %[[E:.*]], %[[S:.*]], %[[A:.*]], %{{.*}} = triax.moe_route %[[LG]]
// SP-NEXT: %[[XG:.*]] = dist.all_gather %[[X]] over @mesh ["tp"] dim 1 : tensor<2x2x8xf32> -> tensor<2x4x8xf32>
// SP-NEXT: triax.moe_dispatch %[[XG]], %[[S]], %[[A]]
// SP: %[[Y:.*]] = triax.moe_combine %{{.*}}, %[[S]], %[[A]] gates %{{.*}} :
// SP-NEXT: %[[YS:.*]] = dist.reduce_scatter sum %[[Y]] over @mesh ["tp"] dim 1 : tensor<2x4x8xf32> -> tensor<2x2x8xf32>
// SP-NEXT: triax.add %[[X]], %[[YS]] : tensor<2x2x8xf32>
// SP: triax.moe_gates_grad
// SP-NEXT: dist.all_reduce sum %{{.*}} over @mesh ["tp"] : tensor<2x4x2xf32>
// SP: %[[DXP:.*]] = triax.moe_combine %{{.*}}, %[[S]], %[[A]] : (tensor<4x4x8xf32>, {{.*}}) -> tensor<2x4x8xf32>
// SP-NEXT: dist.reduce_scatter sum %[[DXP]] over @mesh ["tp"] dim 1 : tensor<2x4x8xf32> -> tensor<2x2x8xf32>
// SP: %[[DL:.*]] = triax.moe_route_grad %[[LG]], %[[E]]
// SP-NEXT: %[[DLS:.*]] = dist.shard_sequence %[[DL]] over @mesh ["tp"] dim 1 contiguous : tensor<2x4x4xf32> -> tensor<2x2x4xf32>
// SP-NEXT: triax.linear %[[DLS]], %[[WR]] {transpose_weight} : (tensor<2x2x4xf32>, tensor<8x4xf32>) -> tensor<2x2x8xf32>
// SP-NEXT: %[[DW:.*]] = triax.linear_weight_grad %[[X]], %[[DLS]]
// SP-NEXT: %[[DWS:.*]] = dist.all_reduce sum %[[DW]] over @mesh ["tp"] : tensor<8x4xf32>
// SP-NEXT: triax.accumulate_grad @router, %[[DWS]]

// -----

// Anything else between the experts' products and the combine: the sums
// stay on the buffer, copy_to_group on the dispatched rows and all_reduce
// after the row products.
triax.model @scaled config = #triax.train_config<micro_batch = 2, seq = 4> {
  triax.param @emb : tensor<16x8xf32> init <normal, std = 0.02> decay
  triax.param @router : tensor<8x4xf32> init <normal, std = 0.02> decay
  triax.param @w1 : tensor<4x8x12xf32> init <normal, std = 0.02> decay
  triax.param @w2 : tensor<4x12x8xf32> init <normal, std = 0.02> decay
  func.func @forward(%tokens: tensor<2x4xi32>, %targets: tensor<2x4xi32>) -> tensor<f32> {
    %emb = triax.get_param @emb : tensor<16x8xf32>
    %x = triax.embedding %tokens, %emb : (tensor<2x4xi32>, tensor<16x8xf32>) -> tensor<2x4x8xf32>
    %wr = triax.get_param @router : tensor<8x4xf32>
    %l = triax.linear %x, %wr : (tensor<2x4x8xf32>, tensor<8x4xf32>) -> tensor<2x4x4xf32>
    %g, %e, %s, %a, %aux = triax.moe_route %l {top_k = 2, capacity = 2, aux_coeff = 0.01, renormalize} : (tensor<2x4x4xf32>) -> (tensor<2x4x2xf32>, tensor<2x4x2xi32>, tensor<2x4x2xi32>, tensor<2x8xi32>, tensor<f32>)
    %buf = triax.moe_dispatch %x, %s, %a : (tensor<2x4x8xf32>, tensor<2x4x2xi32>, tensor<2x8xi32>) -> tensor<4x4x8xf32>
    %w1 = triax.get_param @w1 : tensor<4x8x12xf32>
    %h = triax.expert_linear %buf, %w1 : (tensor<4x4x8xf32>, tensor<4x8x12xf32>) -> tensor<4x4x12xf32>
    %act = triax.gelu %h : tensor<4x4x12xf32>
    %w2 = triax.get_param @w2 : tensor<4x12x8xf32>
    %o = triax.expert_linear %act, %w2 : (tensor<4x4x12xf32>, tensor<4x12x8xf32>) -> tensor<4x4x8xf32>
    %o2 = triax.mul %o, %o : tensor<4x4x8xf32>
    %y = triax.moe_combine %o2, %s, %a gates %g : (tensor<4x4x8xf32>, tensor<2x4x2xi32>, tensor<2x8xi32>, tensor<2x4x2xf32>) -> tensor<2x4x8xf32>
    %r = triax.add %x, %y : tensor<2x4x8xf32>
    %logits = triax.linear %r, %emb {transpose_weight} : (tensor<2x4x8xf32>, tensor<16x8xf32>) -> tensor<2x4x16xf32>
    %ce = triax.cross_entropy %logits, %targets : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> tensor<f32>
    %loss = triax.add %ce, %aux : tensor<f32>
    return %loss : tensor<f32>
  }
}

// CHECK-LABEL: triax.model @scaled
// CHECK: %[[BUF:.*]] = triax.moe_dispatch %{{.*}} -> tensor<4x4x8xf32>
// CHECK-NEXT: %[[W1:.*]] = triax.get_param @w1
// CHECK-NEXT: %[[BC:.*]] = dist.copy_to_group %[[BUF]] over @mesh ["tp"] : tensor<4x4x8xf32>
// CHECK-NEXT: triax.expert_linear %[[BC]], %[[W1]]
// CHECK: %[[O:.*]] = triax.expert_linear
// CHECK-NEXT: %[[OS:.*]] = dist.all_reduce sum %[[O]] over @mesh ["tp"] : tensor<4x4x8xf32>
// CHECK-NEXT: %[[O2:.*]] = triax.mul %[[OS]], %[[OS]]
// CHECK-NEXT: triax.moe_combine %[[O2]], %{{.*}} gates %{{.*}} :
// CHECK-NOT: dist.all_reduce
// CHECK: triax.add

// SP: error: 'triax.expert_linear' op dist-tensor-parallel: sequence-parallel sums the experts' partial products after their triax.moe_combine
