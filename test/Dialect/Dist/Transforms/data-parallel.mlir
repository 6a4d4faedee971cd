// dist-data-parallel after triax-autodiff: a mesh with the dp axis and one
// dist.all_reduce avg per gradient where @optimizer_step reads it, so the
// global norm and AdamW see the averaged gradients.
// RUN: triax-opt %s --triax-autodiff --dist-data-parallel=dp=2 | FileCheck %s
// The same with a mesh already there (its dp axis is used, not the option).
// RUN: sed 's/^\/\/ MESH: //' %s | triax-opt --triax-autodiff --dist-data-parallel | FileCheck %s --check-prefix=EXISTING

// CHECK: dist.mesh @mesh <["dp"=2]>
// CHECK-LABEL: triax.model @m
// The forward and backward are untouched: no collective before the step.
// CHECK: func.func @forward_backward(
// CHECK-NOT: dist.
// CHECK: triax.accumulate_grad @emb
// CHECK-NOT: dist.
// CHECK: func.func @optimizer_step(
// CHECK: %[[G0:.*]] = triax.get_grad @emb : tensor<4x2xf32>
// CHECK-NEXT: %[[A0:.*]] = dist.all_reduce avg %[[G0]] over @mesh ["dp"] : tensor<4x2xf32>
// CHECK: %[[G1:.*]] = triax.get_grad @g : tensor<2xf32>
// CHECK-NEXT: %[[A1:.*]] = dist.all_reduce avg %[[G1]] over @mesh ["dp"] : tensor<2xf32>
// CHECK: %[[G2:.*]] = triax.get_grad @bias : tensor<2xf32>
// CHECK-NEXT: %[[A2:.*]] = dist.all_reduce avg %[[G2]] over @mesh ["dp"] : tensor<2xf32>
// CHECK-NOT: dist.all_reduce
// CHECK: triax.global_norm %[[A0]], %[[A1]], %[[A2]] :
// CHECK-NOT: dist.all_reduce
// CHECK: triax.adamw @emb, %[[A0]],
// CHECK: triax.adamw @g, %[[A1]],
// CHECK: triax.adamw @bias, %[[A2]],

// EXISTING: dist.mesh @cluster <["pp"=1, "dp"=4]>
// EXISTING-NOT: dist.mesh
// EXISTING: %[[G0:.*]] = triax.get_grad @emb
// EXISTING-NEXT: dist.all_reduce avg %[[G0]] over @cluster ["dp"]

// MESH: dist.mesh @cluster <["pp"=1, "dp"=4]>
triax.model @m config = #triax.train_config<micro_batch = 1, seq = 2, grad_clip = 1.0> {
  triax.param @emb : tensor<4x2xf32> init <normal, std = 0.02> decay
  triax.param @g : tensor<2xf32> init <ones>
  triax.param @bias : tensor<2xf32> init <zeros>
  func.func @forward(%tokens: tensor<1x2xi32>, %targets: tensor<1x2xi32>) -> tensor<f32> {
    %emb = triax.get_param @emb : tensor<4x2xf32>
    %g = triax.get_param @g : tensor<2xf32>
    %bias = triax.get_param @bias : tensor<2xf32>
    %x = triax.embedding %tokens, %emb : (tensor<1x2xi32>, tensor<4x2xf32>) -> tensor<1x2x2xf32>
    %xb = triax.layer_norm %x, %g, %bias : (tensor<1x2x2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x2xf32>
    %logits = triax.linear %xb, %emb {transpose_weight} : (tensor<1x2x2xf32>, tensor<4x2xf32>) -> tensor<1x2x4xf32>
    %loss = triax.cross_entropy %logits, %targets : (tensor<1x2x4xf32>, tensor<1x2xi32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}
