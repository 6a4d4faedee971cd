// What triax-pad-vocab refuses, each at the op in the way: logits that are
// not a linear (the LM head), logits read by more than the loss, a head
// whose weight is not a parameter read, a padded parameter read by another
// op, a model after triax-autodiff, and a loss already vocab-parallel.
// RUN: triax-opt %s -split-input-file --triax-pad-vocab=multiple=8 -verify-diagnostics -o /dev/null
// RUN: triax-model tiny | not triax-opt --triax-pad-vocab=multiple=0 -o /dev/null 2>&1 | FileCheck %s --check-prefix=ZERO
// ZERO: error: triax-pad-vocab: multiple must be >= 1, got 0

triax.model @not_linear config = #triax.train_config<micro_batch = 1, seq = 2> {
  triax.param @emb : tensor<5x2xf32> init <normal, std = 0.02> decay
  func.func @forward(%tokens: tensor<1x2xi32>, %targets: tensor<1x2xi32>) -> tensor<f32> {
    %emb = triax.get_param @emb : tensor<5x2xf32>
    %x = triax.embedding %tokens, %emb : (tensor<1x2xi32>, tensor<5x2xf32>) -> tensor<1x2x2xf32>
    %logits = triax.linear %x, %emb {transpose_weight} : (tensor<1x2x2xf32>, tensor<5x2xf32>) -> tensor<1x2x5xf32>
    %g = triax.gelu %logits : tensor<1x2x5xf32>
    // expected-error @+1 {{'triax.cross_entropy' op triax-pad-vocab: the logits are not computed by a triax.linear (the LM head), so the vocabulary cannot be padded}}
    %loss = triax.cross_entropy %g, %targets : (tensor<1x2x5xf32>, tensor<1x2xi32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

triax.model @two_uses config = #triax.train_config<micro_batch = 1, seq = 2> {
  triax.param @emb : tensor<5x2xf32> init <normal, std = 0.02> decay
  func.func @forward(%tokens: tensor<1x2xi32>, %targets: tensor<1x2xi32>) -> tensor<f32> {
    %emb = triax.get_param @emb : tensor<5x2xf32>
    %x = triax.embedding %tokens, %emb : (tensor<1x2xi32>, tensor<5x2xf32>) -> tensor<1x2x2xf32>
    // expected-error @+1 {{'triax.linear' op triax-pad-vocab: the LM head's logits are read by more than the loss, which would see the padding}}
    %logits = triax.linear %x, %emb {transpose_weight} : (tensor<1x2x2xf32>, tensor<5x2xf32>) -> tensor<1x2x5xf32>
    %loss = triax.cross_entropy %logits, %targets : (tensor<1x2x5xf32>, tensor<1x2xi32>) -> tensor<f32>
    %again = triax.cross_entropy %logits, %targets : (tensor<1x2x5xf32>, tensor<1x2xi32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

triax.model @weight_not_param config = #triax.train_config<micro_batch = 1, seq = 2> {
  triax.param @emb : tensor<5x2xf32> init <normal, std = 0.02> decay
  func.func @forward(%tokens: tensor<1x2xi32>, %targets: tensor<1x2xi32>) -> tensor<f32> {
    %emb = triax.get_param @emb : tensor<5x2xf32>
    %x = triax.embedding %tokens, %emb : (tensor<1x2xi32>, tensor<5x2xf32>) -> tensor<1x2x2xf32>
    %w = triax.gelu %emb : tensor<5x2xf32>
    // expected-error @+1 {{'triax.linear' op triax-pad-vocab: the LM head's weight is not a parameter read (triax.get_param), so it cannot be padded}}
    %logits = triax.linear %x, %w {transpose_weight} : (tensor<1x2x2xf32>, tensor<5x2xf32>) -> tensor<1x2x5xf32>
    %loss = triax.cross_entropy %logits, %targets : (tensor<1x2x5xf32>, tensor<1x2xi32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

triax.model @other_reader config = #triax.train_config<micro_batch = 1, seq = 2> {
  triax.param @emb : tensor<5x2xf32> init <normal, std = 0.02> decay
  func.func @forward(%tokens: tensor<1x2xi32>, %targets: tensor<1x2xi32>) -> tensor<f32> {
    %emb = triax.get_param @emb : tensor<5x2xf32>
    %x = triax.embedding %tokens, %emb : (tensor<1x2xi32>, tensor<5x2xf32>) -> tensor<1x2x2xf32>
    // expected-error @+1 {{'triax.gelu' op triax-pad-vocab: reads parameter @emb, whose vocabulary dimension is padded; only the LM head and embedding lookups may read it}}
    %g = triax.gelu %emb : tensor<5x2xf32>
    %logits = triax.linear %x, %emb {transpose_weight} : (tensor<1x2x2xf32>, tensor<5x2xf32>) -> tensor<1x2x5xf32>
    %loss = triax.cross_entropy %logits, %targets : (tensor<1x2x5xf32>, tensor<1x2xi32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// expected-error @+1 {{'triax.model' op triax-pad-vocab: runs before triax-autodiff (the model has @forward_backward)}}
triax.model @after_autodiff config = #triax.train_config<micro_batch = 1, seq = 2> {
  triax.param @emb : tensor<5x2xf32> init <normal, std = 0.02> decay
  func.func @forward(%tokens: tensor<1x2xi32>, %targets: tensor<1x2xi32>) -> tensor<f32> {
    %emb = triax.get_param @emb : tensor<5x2xf32>
    %x = triax.embedding %tokens, %emb : (tensor<1x2xi32>, tensor<5x2xf32>) -> tensor<1x2x2xf32>
    %logits = triax.linear %x, %emb {transpose_weight} : (tensor<1x2x2xf32>, tensor<5x2xf32>) -> tensor<1x2x5xf32>
    %loss = triax.cross_entropy %logits, %targets : (tensor<1x2x5xf32>, tensor<1x2xi32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
  func.func @forward_backward(%tokens: tensor<1x2xi32>, %targets: tensor<1x2xi32>) -> tensor<f32> {
    %emb = triax.get_param @emb : tensor<5x2xf32>
    %x = triax.embedding %tokens, %emb : (tensor<1x2xi32>, tensor<5x2xf32>) -> tensor<1x2x2xf32>
    %logits = triax.linear %x, %emb {transpose_weight} : (tensor<1x2x2xf32>, tensor<5x2xf32>) -> tensor<1x2x5xf32>
    %loss = triax.cross_entropy %logits, %targets : (tensor<1x2x5xf32>, tensor<1x2xi32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

dist.mesh @mesh <["tp"=2]>
triax.model @vocab_parallel config = #triax.train_config<micro_batch = 1, seq = 2> {
  triax.param @emb : tensor<5x2xf32> init <normal, std = 0.02> decay
  func.func @forward(%tokens: tensor<1x2xi32>, %targets: tensor<1x2xi32>) -> tensor<f32> {
    %emb = triax.get_param @emb : tensor<5x2xf32>
    %x = triax.embedding %tokens, %emb : (tensor<1x2xi32>, tensor<5x2xf32>) -> tensor<1x2x2xf32>
    %logits = triax.linear %x, %emb {transpose_weight} : (tensor<1x2x2xf32>, tensor<5x2xf32>) -> tensor<1x2x5xf32>
    // expected-error @+1 {{'triax.cross_entropy' op triax-pad-vocab: runs before tensor parallelism (the loss is vocab-parallel)}}
    %loss = triax.cross_entropy %logits, %targets vocab_parallel over @mesh ["tp"] : (tensor<1x2x5xf32>, tensor<1x2xi32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}
