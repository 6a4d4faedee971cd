// An unknown mode is refused; mode=none leaves the training step as it is.
// RUN: triax-opt %s --triax-recompute=mode=sometimes -verify-diagnostics -o /dev/null
// RUN: triax-opt %s --triax-autodiff | FileCheck %s --check-prefix=NONE
// RUN: triax-opt %s --triax-autodiff --triax-recompute=mode=none | FileCheck %s --check-prefix=NONE

// expected-error @+1 {{triax-recompute: unknown mode 'sometimes'; expected none, selective or full}}
module {
  triax.model @m config = #triax.train_config<micro_batch = 1, seq = 2> {
    triax.param @emb : tensor<4x2xf32> init <normal, std = 0.02> decay
    func.func @forward(%tokens: tensor<1x2xi32>, %targets: tensor<1x2xi32>) -> tensor<f32> {
      %emb = triax.get_param @emb : tensor<4x2xf32>
      %x = triax.embedding %tokens, %emb : (tensor<1x2xi32>, tensor<4x2xf32>) -> tensor<1x2x2xf32>
      %y = triax.block "h.0"(%x) : (tensor<1x2x2xf32>) -> tensor<1x2x2xf32> {
      ^bb0(%in: tensor<1x2x2xf32>):
        %g = triax.gelu %in : tensor<1x2x2xf32>
        %h = triax.gelu %g : tensor<1x2x2xf32>
        triax.yield %h : tensor<1x2x2xf32>
      }
      %logits = triax.linear %y, %emb {transpose_weight} : (tensor<1x2x2xf32>, tensor<4x2xf32>) -> tensor<1x2x4xf32>
      %loss = triax.cross_entropy %logits, %targets : (tensor<1x2x4xf32>, tensor<1x2xi32>) -> tensor<f32>
      return %loss : tensor<f32>
    }
  }
}

// NONE-LABEL: func.func @forward_backward(
// NONE: %[[Y:.*]]:2 = triax.block "h.0"
// NONE: %[[G:.*]] = triax.gelu
// NONE: triax.yield %{{.*}}, %[[G]]
// NONE: triax.block "h.0.grad"(%{{.*}}, %[[Y]]#1, %{{.*}})
// NONE-NOT: triax.recompute
