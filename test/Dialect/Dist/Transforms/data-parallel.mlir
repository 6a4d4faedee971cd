// dist-data-parallel after triax-autodiff: a mesh with the dp axis; in
// @forward_backward each gradient is accumulated right after the op that
// produces it, and the buffers are averaged in buckets, each right after its
// last gradient; @optimizer_step reads the averaged buffers.
// RUN: triax-opt %s --triax-autodiff --dist-data-parallel=dp=2 | FileCheck %s
// Small buckets (bucket-mb = 1e-5 MiB, 10 bytes): @g (8 bytes) and @bias
// (8) fill one, @emb (32) another, issued before the embedding's backward.
// RUN: triax-opt %s --triax-autodiff --dist-data-parallel="dp=2 bucket-mb=0.00001" | FileCheck %s --check-prefix=SMALL
// The same with a mesh already there (its dp axis is used, not the option).
// RUN: sed 's/^\/\/ MESH: //' %s | triax-opt --triax-autodiff --dist-data-parallel | FileCheck %s --check-prefix=EXISTING
// RUN: not triax-opt %s --triax-autodiff --dist-data-parallel="dp=2 bucket-mb=0" 2>&1 | FileCheck %s --check-prefix=ZERO
// ZERO: error: dist-data-parallel: bucket-mb must be > 0, got 0

// CHECK: dist.mesh @mesh <["dp"=2]>
// CHECK-LABEL: triax.model @m
// CHECK: func.func @forward_backward(
// CHECK: %{{.*}}, %[[W:.*]], %[[B:.*]] = triax.layer_norm_grad
// CHECK-NEXT: triax.accumulate_grad @g, %[[W]] : tensor<2xf32>
// CHECK-NEXT: triax.accumulate_grad @bias, %[[B]] : tensor<2xf32>
// CHECK: triax.accumulate_grad @emb
// CHECK-NEXT: dist.all_reduce_grads avg [@g, @bias, @emb] over @mesh ["dp"]
// CHECK-NEXT: return
// CHECK: func.func @optimizer_step(
// CHECK-NOT: dist.
// CHECK: return

// SMALL: triax.accumulate_grad @bias
// SMALL-NEXT: dist.all_reduce_grads avg [@g, @bias] over @mesh ["dp"]
// SMALL-NEXT: triax.embedding_grad
// SMALL: triax.accumulate_grad @emb
// SMALL-NEXT: dist.all_reduce_grads avg [@emb] over @mesh ["dp"]

// EXISTING: dist.mesh @cluster <["pp"=1, "dp"=4]>
// EXISTING-NOT: dist.mesh
// EXISTING: dist.all_reduce_grads avg [@g, @bias, @emb] over @cluster ["dp"]

// A gradient partial over cp (dist.partial_grad) while the others are not:
// context parallelism's sums are folded into the buckets only when every
// gradient is partial over cp (dist-context-parallel's), so autodiff's sum
// stays and the buckets average over dp alone, with the grad scale as given.
// RUN: sed -e 's/^\/\/ CPMESH: //' -e 's/\(triax.param @g : tensor<2xf32> init <ones>\)/\1 {dist.partial_grad = #dist.partial_grad<@mesh, ["cp"]>}/' %s | triax-opt --triax-autodiff --dist-data-parallel | FileCheck %s --check-prefix=NOFOLD
// NOFOLD: %[[S:.*]] = dist.all_reduce sum %{{.*}} over @mesh ["cp"] : tensor<2xf32>
// NOFOLD-NEXT: triax.accumulate_grad @g, %[[S]] : tensor<2xf32>
// NOFOLD: dist.all_reduce_grads avg [@g, @bias, @emb] over @mesh ["dp"]
// NOFOLD-LABEL: func.func @optimizer_step
// NOFOLD-NOT: arith.constant 2.0
// NOFOLD: triax.get_grad

// MESH: dist.mesh @cluster <["pp"=1, "dp"=4]>
// CPMESH: dist.mesh @mesh <["dp"=2, "cp"=2]>
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
