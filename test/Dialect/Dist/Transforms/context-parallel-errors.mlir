// dist-context-parallel refuses what it cannot split along the sequence,
// at the op (or argument) that stops it.
// RUN: triax-opt %s -split-input-file --dist-context-parallel=cp=2 -verify-diagnostics -o /dev/null

// A sequence of 6 tokens is not 4 equal chunks (2 per member).
triax.model @m config = #triax.train_config<micro_batch = 1, seq = 6> {
  triax.param @emb : tensor<4x2xf32> init <normal, std = 0.02>
  // expected-error @+1 {{dist-context-parallel: cp=2 splits each sequence into 4 equal chunks (chunk c and its mirror 2cp-1-c per member), but the sequence has 6 tokens}}
  func.func @forward(%tokens: tensor<1x6xi32>, %targets: tensor<1x6xi32>) -> tensor<f32> {
    %emb = triax.get_param @emb : tensor<4x2xf32>
    %x = triax.embedding %tokens, %emb : (tensor<1x6xi32>, tensor<4x2xf32>) -> tensor<1x6x2xf32>
    %logits = triax.linear %x, %emb {transpose_weight} : (tensor<1x6x2xf32>, tensor<4x2xf32>) -> tensor<1x6x4xf32>
    %loss = triax.cross_entropy %logits, %targets : (tensor<1x6x4xf32>, tensor<1x6xi32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// A sequence-parallel slice that does not split into the members' tokens:
// 4 tokens over tp=4 leave one per tp member, which cp=2 cannot halve.
dist.mesh @mesh <["cp"=2, "tp"=4]>
triax.model @m config = #triax.train_config<micro_batch = 1, seq = 4> {
  triax.param @emb : tensor<4x2xf32> init <normal, std = 0.02>
  func.func @forward(%tokens: tensor<1x4xi32>, %targets: tensor<1x4xi32>) -> tensor<f32> {
    %emb = triax.get_param @emb : tensor<4x2xf32>
    %x = triax.embedding %tokens, %emb : (tensor<1x4xi32>, tensor<4x2xf32>) -> tensor<1x4x2xf32>
    // expected-error @+1 {{'dist.reduce_scatter' op dist-context-parallel: result 'tensor<1x1x2xf32>' does not split into the 2 members' tokens along dimension 1 (a sequence of 4, or a sequence-parallel slice of it)}}
    %s = dist.reduce_scatter sum %x over @mesh ["tp"] dim 1 : tensor<1x4x2xf32> -> tensor<1x1x2xf32>
    %g = dist.all_gather %s over @mesh ["tp"] dim 1 : tensor<1x1x2xf32> -> tensor<1x4x2xf32>
    %logits = triax.linear %g, %emb {transpose_weight} : (tensor<1x4x2xf32>, tensor<4x2xf32>) -> tensor<1x4x4xf32>
    %loss = triax.cross_entropy %logits, %targets : (tensor<1x4x4xf32>, tensor<1x4xi32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// An op computed from the split tokens whose result does not keep them
// (a sum over the tokens, as triax.bias_grad computes).
triax.model @m config = #triax.train_config<micro_batch = 1, seq = 4> {
  triax.param @emb : tensor<4x4xf32> init <normal, std = 0.02>
  func.func @forward(%tokens: tensor<1x4xi32>, %targets: tensor<1x4xi32>) -> tensor<f32> {
    %emb = triax.get_param @emb : tensor<4x4xf32>
    %x = triax.embedding %tokens, %emb : (tensor<1x4xi32>, tensor<4x4xf32>) -> tensor<1x4x4xf32>
    // expected-error @+1 {{'triax.bias_grad' op dist-context-parallel: this op has no rule for running on a slice of the sequence (ShardingRuleOpInterface)}}
    %b = triax.bias_grad %x : tensor<1x4x4xf32> -> tensor<4xf32>
    %zero = arith.constant dense<0.0> : tensor<f32>
    return %zero : tensor<f32>
  }
}

// -----

// Run before triax-autodiff.
// expected-error @+1 {{dist-context-parallel: model @m already has @forward_backward; run dist-context-parallel before triax-autodiff}}
triax.model @m config = #triax.train_config<micro_batch = 1, seq = 4> {
  triax.param @emb : tensor<4x2xf32> init <normal, std = 0.02>
  func.func @forward(%tokens: tensor<1x4xi32>, %targets: tensor<1x4xi32>) -> tensor<f32> {
    %zero = arith.constant dense<0.0> : tensor<f32>
    return %zero : tensor<f32>
  }
  func.func @forward_backward(%tokens: tensor<1x4xi32>, %targets: tensor<1x4xi32>) -> tensor<f32> {
    %zero = arith.constant dense<0.0> : tensor<f32>
    return %zero : tensor<f32>
  }
}

// -----

// Attention whose key is not computed from the split tokens (its rule
// gathers the keys and values of every member's tokens).
triax.model @m config = #triax.train_config<micro_batch = 1, seq = 4> {
  triax.param @emb : tensor<4x2xf32> init <normal, std = 0.02>
  func.func @forward(%tokens: tensor<1x4xi32>, %targets: tensor<1x4xi32>) -> tensor<f32> {
    %emb = triax.get_param @emb : tensor<4x2xf32>
    %x = triax.embedding %tokens, %emb : (tensor<1x4xi32>, tensor<4x2xf32>) -> tensor<1x4x2xf32>
    %k = arith.constant dense<1.0> : tensor<1x4x2xf32>
    // expected-error @+1 {{'triax.attention' op dist-context-parallel: every operand must be computed from the split tokens}}
    %a = triax.attention %x, %k, %x heads = 1 : (tensor<1x4x2xf32>, tensor<1x4x2xf32>, tensor<1x4x2xf32>) -> tensor<1x4x2xf32>
    %logits = triax.linear %a, %emb {transpose_weight} : (tensor<1x4x2xf32>, tensor<4x2xf32>) -> tensor<1x4x4xf32>
    %loss = triax.cross_entropy %logits, %targets : (tensor<1x4x4xf32>, tensor<1x4xi32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}
