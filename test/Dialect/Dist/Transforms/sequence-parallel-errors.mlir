// dist-tensor-parallel{sequence-parallel=true} refuses what it cannot
// split along the sequence, at the op, and leaves the model as it was.
// RUN: triax-opt %s -split-input-file --dist-tensor-parallel="tp=2 sequence-parallel=true" -verify-diagnostics -o /dev/null

// A sequence that tp does not divide.
triax.model @m config = #triax.train_config<micro_batch = 1, seq = 3> {
  triax.param @emb : tensor<4x2xf32> init <normal, std = 0.02>
  func.func @forward(%tokens: tensor<1x3xi32>, %targets: tensor<1x3xi32>) -> tensor<f32> {
    %emb = triax.get_param @emb : tensor<4x2xf32>
    // expected-error @+1 {{'triax.embedding' op dist-tensor-parallel: sequence-parallel splits the sequence (dimension 1, size 3) over tp=2, which does not divide it}}
    %x = triax.embedding %tokens, %emb : (tensor<1x3xi32>, tensor<4x2xf32>) -> tensor<1x3x2xf32>
    %logits = triax.linear %x, %emb {transpose_weight} : (tensor<1x3x2xf32>, tensor<4x2xf32>) -> tensor<1x3x4xf32>
    %loss = triax.cross_entropy %logits, %targets : (tensor<1x3x4xf32>, tensor<1x3xi32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// An op on the split activations whose rule along the sequence is not
// local (ShardingRuleOpInterface): attention outside any column/row pair
// needs the whole sequence of its keys and values.
triax.model @m config = #triax.train_config<micro_batch = 1, seq = 2> {
  triax.param @emb : tensor<4x2xf32> init <normal, std = 0.02>
  func.func @forward(%tokens: tensor<1x2xi32>, %targets: tensor<1x2xi32>) -> tensor<f32> {
    %emb = triax.get_param @emb : tensor<4x2xf32>
    %x = triax.embedding %tokens, %emb : (tensor<1x2xi32>, tensor<4x2xf32>) -> tensor<1x2x2xf32>
    // expected-error @+1 {{'triax.attention' op dist-tensor-parallel: sequence-parallel splits operand #2 along the sequence, but this op cannot run on a slice of the sequence}}
    %y = triax.attention %x, %x, %x heads = 1 : (tensor<1x2x2xf32>, tensor<1x2x2xf32>, tensor<1x2x2xf32>) -> tensor<1x2x2xf32>
    %logits = triax.linear %y, %emb {transpose_weight} : (tensor<1x2x2xf32>, tensor<4x2xf32>) -> tensor<1x2x4xf32>
    %loss = triax.cross_entropy %logits, %targets : (tensor<1x2x4xf32>, tensor<1x2xi32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// An elementwise op mixing the rank's tokens with a whole sequence.
triax.model @m config = #triax.train_config<micro_batch = 1, seq = 2> {
  triax.param @emb : tensor<4x2xf32> init <normal, std = 0.02>
  func.func @forward(%tokens: tensor<1x2xi32>, %targets: tensor<1x2xi32>) -> tensor<f32> {
    %emb = triax.get_param @emb : tensor<4x2xf32>
    %x = triax.embedding %tokens, %emb : (tensor<1x2xi32>, tensor<4x2xf32>) -> tensor<1x2x2xf32>
    %c = arith.constant dense<1.0> : tensor<1x2x2xf32>
    // expected-error @+1 {{'triax.add' op dist-tensor-parallel: sequence-parallel: this op mixes the rank's slice of the sequence with a whole-sequence operand 'tensor<1x2x2xf32>'}}
    %y = triax.add %x, %c : tensor<1x2x2xf32>
    %logits = triax.linear %y, %emb {transpose_weight} : (tensor<1x2x2xf32>, tensor<4x2xf32>) -> tensor<1x2x4xf32>
    %loss = triax.cross_entropy %logits, %targets : (tensor<1x2x4xf32>, tensor<1x2xi32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// An op with no rule along the sequence is refused with the reason.
triax.model @m config = #triax.train_config<micro_batch = 1, seq = 2> {
  triax.param @emb : tensor<4x2xf32> init <normal, std = 0.02>
  func.func @forward(%tokens: tensor<1x2xi32>, %targets: tensor<1x2xi32>) -> tensor<f32> {
    %emb = triax.get_param @emb : tensor<4x2xf32>
    %x = triax.embedding %tokens, %emb : (tensor<1x2xi32>, tensor<4x2xf32>) -> tensor<1x2x2xf32>
    // expected-error @+1 {{'triax.bias_grad' op dist-tensor-parallel: sequence-parallel splits operand #0 along the sequence, but this op cannot run on a slice of the sequence: this op has no rule for running on a slice of the sequence (ShardingRuleOpInterface)}}
    %b = triax.bias_grad %x : tensor<1x2x2xf32> -> tensor<2xf32>
    %logits = triax.linear %x, %emb {transpose_weight} : (tensor<1x2x2xf32>, tensor<4x2xf32>) -> tensor<1x2x4xf32>
    %loss = triax.cross_entropy %logits, %targets : (tensor<1x2x4xf32>, tensor<1x2xi32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// A MoE layer's experts whose output something other than the combine
// reads: sequence parallelism sums the experts on the tokens' side (after
// the combine) or not at all.
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
    // expected-error @+1 {{'triax.expert_linear' op dist-tensor-parallel: sequence-parallel sums the experts' partial products after their triax.moe_combine, but something else reads them (or their buffer is not a triax.moe_dispatch's)}}
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
