// dist-expert-parallel on the forward model: the experts' stacked weights
// split along dimension 0 over ep (4 experts, 2 per member), the
// dispatched buffer [E, B*C, H] = [4, 4, 8] sent to the experts' members
// ([2, 8, 8]: every member's rows of this member's experts) and the
// experts' output back in the dispatch's layout; the elementwise op between
// the experts' products takes the sharded rows; the weights' gradients are
// marked for 1/ep. After triax-autodiff the backward has the inverse
// exchanges and the scaled weight gradients; dist-data-parallel then
// averages the router and the embedding over dp and ep and the experts over
// dp only.
// RUN: triax-opt %s --dist-expert-parallel=ep=2 | FileCheck %s
// RUN: triax-opt %s --dist-mesh="axes=dp=2,ep=2" --dist-expert-parallel --triax-autodiff --dist-data-parallel | FileCheck %s --check-prefix=GRAD
// With ZeRO instead, each state is sharded over the data axes its parameter
// is replicated on: the experts' over dp, the others' over dp and ep; the
// norm sums the chunks over ep and dp, each once (no replicas). A bucket
// holds one group: the experts' collectives apart from the others'.
// RUN: triax-opt %s --dist-mesh="axes=dp=2,ep=2" --dist-expert-parallel --triax-autodiff --dist-zero=stage=1 | FileCheck %s --check-prefix=ZERO
// Tensor parallelism inside the experts (dist-tensor-parallel first, as
// triax-parallelize runs them): each expert's MLP is a column/row pair, w1
// split along its outputs and w2 along its inputs over tp, and the tp
// collectives on the tokens' side: the dispatch reads the tokens and the
// combine the gates through copy_to_group, the combine's partial sum is
// summed over tp; dist-expert-parallel then splits dimension 0 of the same
// weights over ep, the rows between the all_to_alls free of tp collectives
// (tensor-parallel-moe.mlir has the rule and its backward).
// RUN: triax-opt %s --dist-mesh="axes=ep=2,tp=2" --dist-tensor-parallel --dist-expert-parallel | FileCheck %s --check-prefix=TP
// With sequence parallelism the tokens' side is the slice of the sequence:
// the dispatch gathers it, the combine's sum is reduce-scattered, and the
// router's logits, computed on the slice, are gathered (replicated_grad:
// every member routes the whole sequence alike); the rows between the
// all_to_alls stay free of tp collectives.
// RUN: triax-opt %s --dist-mesh="axes=ep=2,tp=2" --dist-tensor-parallel=sequence-parallel --dist-expert-parallel | FileCheck %s --check-prefix=SP

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
    %logits = triax.linear %y, %emb {transpose_weight} : (tensor<2x4x8xf32>, tensor<16x8xf32>) -> tensor<2x4x16xf32>
    %ce = triax.cross_entropy %logits, %targets : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> tensor<f32>
    %loss = triax.add %ce, %aux : tensor<f32>
    return %loss : tensor<f32>
  }
}
// CHECK: dist.mesh @mesh <["ep"=2]>
// CHECK: triax.param @router : tensor<8x4xf32> init <normal, std = 0.02> decay{{$}}
// CHECK: triax.param @w1 : tensor<4x8x12xf32> {{.*}} {dist.grad_scale = 5.000000e-01 : f64, dist.sharding = #dist.sharding<@mesh, [{"ep"}, {}, {}]>}
// CHECK: triax.param @w2 : tensor<4x12x8xf32> {{.*}} {dist.grad_scale = 5.000000e-01 : f64, dist.sharding = #dist.sharding<@mesh, [{"ep"}, {}, {}]>}
// CHECK: %[[BUF:.*]] = triax.moe_dispatch {{.*}} -> tensor<4x4x8xf32>
// CHECK-NEXT: %[[MINE:.*]] = dist.all_to_all %[[BUF]] over @mesh ["ep"] split 0 concat 1 : tensor<4x4x8xf32> -> tensor<2x8x8xf32>
// CHECK-NEXT: %[[W1:.*]] = triax.get_param @w1 : tensor<2x8x12xf32>
// CHECK-NEXT: %[[H:.*]] = triax.expert_linear %[[MINE]], %[[W1]] : (tensor<2x8x8xf32>, tensor<2x8x12xf32>) -> tensor<2x8x12xf32>
// CHECK-NEXT: %[[ACT:.*]] = triax.gelu %[[H]] : tensor<2x8x12xf32>
// CHECK-NEXT: %[[W2:.*]] = triax.get_param @w2 : tensor<2x12x8xf32>
// CHECK-NEXT: %[[O:.*]] = triax.expert_linear %[[ACT]], %[[W2]] : (tensor<2x8x12xf32>, tensor<2x12x8xf32>) -> tensor<2x8x8xf32>
// CHECK-NEXT: %[[BACK:.*]] = dist.all_to_all %[[O]] over @mesh ["ep"] split 1 concat 0 : tensor<2x8x8xf32> -> tensor<4x4x8xf32>
// CHECK-NEXT: triax.moe_combine %[[BACK]], {{.*}} gates

// GRAD: dist.mesh @mesh <["dp"=2, "ep"=2]>
// GRAD-LABEL: func.func @forward_backward
// The backward: the all_to_alls' VJPs (split and concat swapped).
// GRAD: dist.all_to_all %{{.*}} over @mesh ["ep"] split 0 concat 1 : tensor<4x4x8xf32> -> tensor<2x8x8xf32>
// GRAD: dist.all_to_all %{{.*}} over @mesh ["ep"] split 1 concat 0 : tensor<2x8x8xf32> -> tensor<4x4x8xf32>
// The experts' weight gradients times 1/ep right where they are made,
// averaged over dp alone (one bucket); the others over dp and ep.
// GRAD: %[[DW2:.*]] = triax.expert_linear_weight_grad {{.*}} {scale = 5.000000e-01 : f64} : {{.*}} -> tensor<2x12x8xf32>
// GRAD-NEXT: triax.accumulate_grad @w2, %[[DW2]]
// GRAD: triax.accumulate_grad @w1
// GRAD-NEXT: dist.all_reduce_grads avg [@w2, @w1] over @mesh ["dp"]
// GRAD: triax.accumulate_grad @router
// GRAD: triax.accumulate_grad @emb
// GRAD-NEXT: dist.all_reduce_grads avg [@router, @emb] over @mesh ["dp", "ep"]

// ZERO: triax.param @emb : {{.*}} {dist.zero = #dist.zero<@mesh, ["dp", "ep"], stage = 1>}
// ZERO: triax.param @router : {{.*}} {dist.zero = #dist.zero<@mesh, ["dp", "ep"], stage = 1>}
// ZERO: triax.param @w1 : {{.*}} dist.zero = #dist.zero<@mesh, ["dp"], stage = 1>}
// ZERO: triax.param @w2 : {{.*}} dist.zero = #dist.zero<@mesh, ["dp"], stage = 1>}
// ZERO-LABEL: func.func @optimizer_step
// ZERO: %[[ER:.*]]:2 = dist.reduce_scatter_bucket avg %{{.*}}, %{{.*}} over @mesh ["dp", "ep"] : tensor<16x8xf32>, tensor<8x4xf32> -> tensor<32xf32>, tensor<8xf32>
// ZERO: %[[W:.*]]:2 = dist.reduce_scatter_bucket avg %{{.*}}, %{{.*}} over @mesh ["dp"] : tensor<2x8x12xf32>, tensor<2x12x8xf32> -> tensor<96xf32>, tensor<96xf32>
// ZERO: triax.global_norm %[[ER]]#0, %[[ER]]#1, %[[W]]#0, %[[W]]#1 partial over @mesh ["ep", "dp"] :
// ZERO: dist.all_gather_params [@emb, @router] over @mesh ["dp", "ep"]
// ZERO-NEXT: dist.all_gather_params [@w1, @w2] over @mesh ["dp"]

// TP: dist.mesh @mesh <["ep"=2, "tp"=2]>
// TP: triax.param @w1 : tensor<4x8x12xf32> {{.*}} dist.sharding = #dist.sharding<@mesh, [{"ep"}, {}, {"tp"}]>}
// TP: triax.param @w2 : tensor<4x12x8xf32> {{.*}} dist.sharding = #dist.sharding<@mesh, [{"ep"}, {"tp"}, {}]>}
// TP: %[[X:.*]] = dist.all_reduce sum %{{.*}} over @mesh ["tp"] : tensor<2x4x8xf32>
// TP: triax.linear %[[X]], %{{.*}} : (tensor<2x4x8xf32>, tensor<8x4xf32>) -> tensor<2x4x4xf32>
// TP-NEXT: %[[G:.*]], %{{.*}}, %[[S:.*]], %[[A:.*]], %{{.*}} = triax.moe_route
// TP-NEXT: %[[XC:.*]] = dist.copy_to_group %[[X]] over @mesh ["tp"] : tensor<2x4x8xf32>
// TP-NEXT: %[[BUF:.*]] = triax.moe_dispatch %[[XC]], %[[S]], %[[A]]
// TP-NEXT: %[[MINE:.*]] = dist.all_to_all %[[BUF]] over @mesh ["ep"] split 0 concat 1 : tensor<4x4x8xf32> -> tensor<2x8x8xf32>
// TP-NEXT: %[[W1:.*]] = triax.get_param @w1 : tensor<2x8x6xf32>
// TP-NEXT: %[[H:.*]] = triax.expert_linear %[[MINE]], %[[W1]] : (tensor<2x8x8xf32>, tensor<2x8x6xf32>) -> tensor<2x8x6xf32>
// TP-NEXT: %[[ACT:.*]] = triax.gelu %[[H]] : tensor<2x8x6xf32>
// TP-NEXT: %[[W2:.*]] = triax.get_param @w2 : tensor<2x6x8xf32>
// TP-NEXT: %[[O:.*]] = triax.expert_linear %[[ACT]], %[[W2]] : (tensor<2x8x6xf32>, tensor<2x6x8xf32>) -> tensor<2x8x8xf32>
// TP-NEXT: %[[GC:.*]] = dist.copy_to_group %[[G]] over @mesh ["tp"] : tensor<2x4x2xf32>
// TP-NEXT: %[[BACK:.*]] = dist.all_to_all %[[O]] over @mesh ["ep"] split 1 concat 0 : tensor<2x8x8xf32> -> tensor<4x4x8xf32>
// TP-NEXT: %[[Y:.*]] = triax.moe_combine %[[BACK]], %[[S]], %[[A]] gates %[[GC]]
// TP-NEXT: dist.all_reduce sum %[[Y]] over @mesh ["tp"] : tensor<2x4x8xf32>

// SP: %[[X:.*]] = dist.reduce_scatter sum %{{.*}} over @mesh ["tp"] dim 1 : tensor<2x4x8xf32> -> tensor<2x2x8xf32>
// SP: %[[L:.*]] = triax.linear %[[X]], %{{.*}} : (tensor<2x2x8xf32>, tensor<8x4xf32>) -> tensor<2x2x4xf32>
// SP-NEXT: %[[LG:.*]] = dist.all_gather %[[L]] over @mesh ["tp"] dim 1 replicated_grad : tensor<2x2x4xf32> -> tensor<2x4x4xf32>
// SP-NEXT: %[[G:.*]], %{{.*}}, %[[S:.*]], %[[A:.*]], %{{.*}} = triax.moe_route %[[LG]]
// SP-NEXT: %[[XG:.*]] = dist.all_gather %[[X]] over @mesh ["tp"] dim 1 : tensor<2x2x8xf32> -> tensor<2x4x8xf32>
// SP-NEXT: %[[BUF:.*]] = triax.moe_dispatch %[[XG]], %[[S]], %[[A]]
// SP-NEXT: dist.all_to_all %[[BUF]] over @mesh ["ep"] split 0 concat 1
// SP-NOT: over @mesh ["tp"]
// SP: %[[GC:.*]] = dist.copy_to_group %[[G]] over @mesh ["tp"] : tensor<2x4x2xf32>
// SP-NEXT: %[[BACK:.*]] = dist.all_to_all %{{.*}} over @mesh ["ep"] split 1 concat 0
// SP-NEXT: %[[Y:.*]] = triax.moe_combine %[[BACK]], %[[S]], %[[A]] gates %[[GC]]
// SP-NEXT: %[[YS:.*]] = dist.reduce_scatter sum %[[Y]] over @mesh ["tp"] dim 1 : tensor<2x4x8xf32> -> tensor<2x2x8xf32>
// SP-NEXT: dist.all_gather %[[YS]] over @mesh ["tp"] dim 1 : tensor<2x2x8xf32> -> tensor<2x4x8xf32>
