// dist-data-parallel needs the training step triax-autodiff builds.
// RUN: triax-opt %s --dist-data-parallel=dp=2 -verify-diagnostics -o /dev/null

// A model without a training step: the pass runs after triax-autodiff.
// expected-error @+1 {{dist-data-parallel: model @m has no @forward_backward; run triax-autodiff first}}
triax.model @m config = #triax.train_config<micro_batch = 1, seq = 2> {
  triax.param @emb : tensor<4x2xf32> init <normal, std = 0.02>
  func.func @forward(%tokens: tensor<1x2xi32>, %targets: tensor<1x2xi32>) -> tensor<f32> {
    %emb = triax.get_param @emb : tensor<4x2xf32>
    %x = triax.embedding %tokens, %emb : (tensor<1x2xi32>, tensor<4x2xf32>) -> tensor<1x2x2xf32>
    %logits = triax.linear %x, %emb {transpose_weight} : (tensor<1x2x2xf32>, tensor<4x2xf32>) -> tensor<1x2x4xf32>
    %loss = triax.cross_entropy %logits, %targets : (tensor<1x2x4xf32>, tensor<1x2xi32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}

