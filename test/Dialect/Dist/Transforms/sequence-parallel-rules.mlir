// Sequence parallelism keeps on the slice of the sequence every op whose
// rule along the sequence is local (ShardingRuleOpInterface), not a fixed
// list: a linear outside any column/row pair is per token, so it runs on
// the rank's tokens and its replicated weight's gradient is partial over
// tp (summed by triax-autodiff).
// RUN: triax-opt %s --dist-tensor-parallel="tp=2 sequence-parallel=true" | FileCheck %s
// RUN: triax-opt %s --dist-tensor-parallel="tp=2 sequence-parallel=true" --triax-autodiff | FileCheck %s --check-prefix=AD

// CHECK: triax.param @emb : tensor<4x2xf32> {{.*}}{dist.sharding = #dist.sharding<@mesh, [{"tp"}, {}]>}
// CHECK: triax.param @w : tensor<2x2xf32> {{.*}}{dist.partial_grad = #dist.partial_grad<@mesh, ["tp"]>}
// CHECK-LABEL: func.func @forward
// CHECK: %[[X:.*]] = dist.reduce_scatter sum %{{.*}} over @mesh ["tp"] dim 1 : tensor<1x2x2xf32> -> tensor<1x1x2xf32>
// CHECK: %[[Y:.*]] = triax.linear %[[X]], %{{.*}} : (tensor<1x1x2xf32>, tensor<2x2xf32>) -> tensor<1x1x2xf32>
// CHECK: %[[G:.*]] = dist.all_gather %[[Y]] over @mesh ["tp"] dim 1 : tensor<1x1x2xf32> -> tensor<1x2x2xf32>
// CHECK: triax.linear %[[G]], %{{.*}} {transpose_weight} : (tensor<1x2x2xf32>, tensor<2x2xf32>) -> tensor<1x2x2xf32>

// The gradient of @w is summed over tp before it is accumulated.
// AD-LABEL: func.func @forward_backward
// AD: %[[DW:.*]] = triax.linear_weight_grad %{{.*}}, %{{.*}} : (tensor<1x1x2xf32>, tensor<1x1x2xf32>) -> tensor<2x2xf32>
// AD: %[[SUM:.*]] = dist.all_reduce sum %[[DW]] over @mesh ["tp"] : tensor<2x2xf32>
// AD: triax.accumulate_grad @w, %[[SUM]]
triax.model @m config = #triax.train_config<micro_batch = 1, seq = 2> {
  triax.param @emb : tensor<4x2xf32> init <normal, std = 0.02>
  triax.param @w : tensor<2x2xf32> init <normal, std = 0.02>
  func.func @forward(%tokens: tensor<1x2xi32>, %targets: tensor<1x2xi32>) -> tensor<f32> {
    %emb = triax.get_param @emb : tensor<4x2xf32>
    %x = triax.embedding %tokens, %emb : (tensor<1x2xi32>, tensor<4x2xf32>) -> tensor<1x2x2xf32>
    %w = triax.get_param @w : tensor<2x2xf32>
    %y = triax.linear %x, %w : (tensor<1x2x2xf32>, tensor<2x2xf32>) -> tensor<1x2x2xf32>
    %logits = triax.linear %y, %emb {transpose_weight} : (tensor<1x2x2xf32>, tensor<4x2xf32>) -> tensor<1x2x4xf32>
    %loss = triax.cross_entropy %logits, %targets : (tensor<1x2x4xf32>, tensor<1x2xi32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}
