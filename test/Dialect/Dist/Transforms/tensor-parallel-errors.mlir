// dist-tensor-parallel refuses what it cannot split, with the op, the
// quantity and both numbers, and leaves the model as it was.
// RUN: triax-opt %s -split-input-file --dist-tensor-parallel=tp=2 -verify-diagnostics -o /dev/null

// Attention heads that tp does not divide (the hidden size 6 does).
triax.model @m config = #triax.train_config<micro_batch = 1, seq = 2> {
  triax.param @wq : tensor<6x6xf32> init <normal, std = 0.02>
  triax.param @wo : tensor<6x6xf32> init <normal, std = 0.02>
  triax.param @emb : tensor<4x6xf32> init <normal, std = 0.02>
  func.func @forward(%tokens: tensor<1x2xi32>, %targets: tensor<1x2xi32>) -> tensor<f32> {
    %emb = triax.get_param @emb : tensor<4x6xf32>
    %x = triax.embedding %tokens, %emb : (tensor<1x2xi32>, tensor<4x6xf32>) -> tensor<1x2x6xf32>
    %wq = triax.get_param @wq : tensor<6x6xf32>
    %q = triax.linear %x, %wq : (tensor<1x2x6xf32>, tensor<6x6xf32>) -> tensor<1x2x6xf32>
    // expected-error @+1 {{'triax.attention' op dist-tensor-parallel: heads 3 is not divisible by tp=2}}
    %a = triax.attention %q, %q, %q heads = 3 : (tensor<1x2x6xf32>, tensor<1x2x6xf32>, tensor<1x2x6xf32>) -> tensor<1x2x6xf32>
    %wo = triax.get_param @wo : tensor<6x6xf32>
    %o = triax.linear %a, %wo : (tensor<1x2x6xf32>, tensor<6x6xf32>) -> tensor<1x2x6xf32>
    %logits = triax.linear %o, %emb {transpose_weight} : (tensor<1x2x6xf32>, tensor<4x6xf32>) -> tensor<1x2x4xf32>
    %loss = triax.cross_entropy %logits, %targets : (tensor<1x2x4xf32>, tensor<1x2xi32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// Key/value heads that tp does not divide (grouped-query attention).
triax.model @m config = #triax.train_config<micro_batch = 1, seq = 2> {
  triax.param @wq : tensor<8x8xf32> init <normal, std = 0.02>
  triax.param @wk : tensor<8x2xf32> init <normal, std = 0.02>
  triax.param @wo : tensor<8x8xf32> init <normal, std = 0.02>
  triax.param @emb : tensor<4x8xf32> init <normal, std = 0.02>
  func.func @forward(%tokens: tensor<1x2xi32>, %targets: tensor<1x2xi32>) -> tensor<f32> {
    %emb = triax.get_param @emb : tensor<4x8xf32>
    %x = triax.embedding %tokens, %emb : (tensor<1x2xi32>, tensor<4x8xf32>) -> tensor<1x2x8xf32>
    %wq = triax.get_param @wq : tensor<8x8xf32>
    %q = triax.linear %x, %wq : (tensor<1x2x8xf32>, tensor<8x8xf32>) -> tensor<1x2x8xf32>
    %wk = triax.get_param @wk : tensor<8x2xf32>
    %k = triax.linear %x, %wk : (tensor<1x2x8xf32>, tensor<8x2xf32>) -> tensor<1x2x2xf32>
    // expected-error @+1 {{'triax.attention' op dist-tensor-parallel: kv_heads 1 is not divisible by tp=2}}
    %a = triax.attention %q, %k, %k heads = 4 kv_heads = 1 : (tensor<1x2x8xf32>, tensor<1x2x2xf32>, tensor<1x2x2xf32>) -> tensor<1x2x8xf32>
    %wo = triax.get_param @wo : tensor<8x8xf32>
    %o = triax.linear %a, %wo : (tensor<1x2x8xf32>, tensor<8x8xf32>) -> tensor<1x2x8xf32>
    %logits = triax.linear %o, %emb {transpose_weight} : (tensor<1x2x8xf32>, tensor<4x8xf32>) -> tensor<1x2x4xf32>
    %loss = triax.cross_entropy %logits, %targets : (tensor<1x2x4xf32>, tensor<1x2xi32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// A hidden size (the output of the query projection) that tp does not divide.
triax.model @m config = #triax.train_config<micro_batch = 1, seq = 2> {
  triax.param @wq : tensor<4x3xf32> init <normal, std = 0.02>
  triax.param @wo : tensor<3x4xf32> init <normal, std = 0.02>
  triax.param @emb : tensor<4x4xf32> init <normal, std = 0.02>
  func.func @forward(%tokens: tensor<1x2xi32>, %targets: tensor<1x2xi32>) -> tensor<f32> {
    %emb = triax.get_param @emb : tensor<4x4xf32>
    %x = triax.embedding %tokens, %emb : (tensor<1x2xi32>, tensor<4x4xf32>) -> tensor<1x2x4xf32>
    %wq = triax.get_param @wq : tensor<4x3xf32>
    // expected-error @+1 {{'triax.linear' op dist-tensor-parallel: the hidden size 3 (the output size of a column-split linear) is not divisible by tp=2}}
    %q = triax.linear %x, %wq : (tensor<1x2x4xf32>, tensor<4x3xf32>) -> tensor<1x2x3xf32>
    %a = triax.attention %q, %q, %q heads = 3 : (tensor<1x2x3xf32>, tensor<1x2x3xf32>, tensor<1x2x3xf32>) -> tensor<1x2x3xf32>
    %wo = triax.get_param @wo : tensor<3x4xf32>
    %o = triax.linear %a, %wo : (tensor<1x2x3xf32>, tensor<3x4xf32>) -> tensor<1x2x4xf32>
    %logits = triax.linear %o, %emb {transpose_weight} : (tensor<1x2x4xf32>, tensor<4x4xf32>) -> tensor<1x2x4xf32>
    %loss = triax.cross_entropy %logits, %targets : (tensor<1x2x4xf32>, tensor<1x2xi32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// An MLP whose ffn size tp does not divide.
triax.model @m config = #triax.train_config<micro_batch = 1, seq = 2> {
  triax.param @w1 : tensor<4x5xf32> init <normal, std = 0.02>
  triax.param @w2 : tensor<5x4xf32> init <normal, std = 0.02>
  triax.param @emb : tensor<4x4xf32> init <normal, std = 0.02>
  func.func @forward(%tokens: tensor<1x2xi32>, %targets: tensor<1x2xi32>) -> tensor<f32> {
    %emb = triax.get_param @emb : tensor<4x4xf32>
    %x = triax.embedding %tokens, %emb : (tensor<1x2xi32>, tensor<4x4xf32>) -> tensor<1x2x4xf32>
    %w1 = triax.get_param @w1 : tensor<4x5xf32>
    // expected-error @+1 {{'triax.linear' op dist-tensor-parallel: the ffn size 5 (the output size of a column-split linear) is not divisible by tp=2}}
    %h = triax.linear %x, %w1 : (tensor<1x2x4xf32>, tensor<4x5xf32>) -> tensor<1x2x5xf32>
    %g = triax.gelu %h : tensor<1x2x5xf32>
    %w2 = triax.get_param @w2 : tensor<5x4xf32>
    %y = triax.linear %g, %w2 : (tensor<1x2x5xf32>, tensor<5x4xf32>) -> tensor<1x2x4xf32>
    %logits = triax.linear %y, %emb {transpose_weight} : (tensor<1x2x4xf32>, tensor<4x4xf32>) -> tensor<1x2x4xf32>
    %loss = triax.cross_entropy %logits, %targets : (tensor<1x2x4xf32>, tensor<1x2xi32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// A vocabulary that tp does not divide (the head's logits).
triax.model @m config = #triax.train_config<micro_batch = 1, seq = 2> {
  triax.param @emb : tensor<5x4xf32> init <normal, std = 0.02>
  func.func @forward(%tokens: tensor<1x2xi32>, %targets: tensor<1x2xi32>) -> tensor<f32> {
    %emb = triax.get_param @emb : tensor<5x4xf32>
    %x = triax.embedding %tokens, %emb : (tensor<1x2xi32>, tensor<5x4xf32>) -> tensor<1x2x4xf32>
    // expected-error @+1 {{'triax.linear' op dist-tensor-parallel: the vocab size 5 is not divisible by tp=2}}
    %logits = triax.linear %x, %emb {transpose_weight} : (tensor<1x2x4xf32>, tensor<5x4xf32>) -> tensor<1x2x5xf32>
    %loss = triax.cross_entropy %logits, %targets : (tensor<1x2x5xf32>, tensor<1x2xi32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// A vocabulary that tp does not divide (an untied token embedding).
triax.model @m config = #triax.train_config<micro_batch = 1, seq = 2> {
  triax.param @emb : tensor<5x4xf32> init <normal, std = 0.02>
  triax.param @head : tensor<4x6xf32> init <normal, std = 0.02>
  func.func @forward(%tokens: tensor<1x2xi32>, %targets: tensor<1x2xi32>) -> tensor<f32> {
    %emb = triax.get_param @emb : tensor<5x4xf32>
    // expected-error @+1 {{'triax.embedding' op dist-tensor-parallel: the vocab size 5 is not divisible by tp=2}}
    %x = triax.embedding %tokens, %emb : (tensor<1x2xi32>, tensor<5x4xf32>) -> tensor<1x2x4xf32>
    %head = triax.get_param @head : tensor<4x6xf32>
    %logits = triax.linear %x, %head : (tensor<1x2x4xf32>, tensor<4x6xf32>) -> tensor<1x2x6xf32>
    %loss = triax.cross_entropy %logits, %targets : (tensor<1x2x6xf32>, tensor<1x2xi32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// A mesh that has no "tp" axis.
// expected-error @+1 {{dist-tensor-parallel: mesh @cluster has no axis "tp"}}
dist.mesh @cluster <["dp"=2]>
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

// -----

// A mesh whose tp axis disagrees with the pass option.
// expected-error @+1 {{dist-tensor-parallel: mesh @cluster has tp=4 but the pass was asked for tp=2}}
dist.mesh @cluster <["dp"=2, "tp"=4]>
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

// -----

// After triax-autodiff: the backward collectives would be missing.
// expected-error @+1 {{dist-tensor-parallel: model @m already has @forward_backward; run dist-tensor-parallel before triax-autodiff}}
triax.model @m config = #triax.train_config<micro_batch = 1, seq = 2> {
  triax.param @emb : tensor<4x2xf32> init <normal, std = 0.02>
  func.func @forward(%tokens: tensor<1x2xi32>, %targets: tensor<1x2xi32>) -> tensor<f32> {
    %emb = triax.get_param @emb : tensor<4x2xf32>
    %x = triax.embedding %tokens, %emb : (tensor<1x2xi32>, tensor<4x2xf32>) -> tensor<1x2x2xf32>
    %logits = triax.linear %x, %emb {transpose_weight} : (tensor<1x2x2xf32>, tensor<4x2xf32>) -> tensor<1x2x4xf32>
    %loss = triax.cross_entropy %logits, %targets : (tensor<1x2x4xf32>, tensor<1x2xi32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
  func.func @forward_backward(%tokens: tensor<1x2xi32>, %targets: tensor<1x2xi32>) -> tensor<f32> {
    %zero = arith.constant dense<0.0> : tensor<f32>
    return %zero : tensor<f32>
  }
}

// -----

// A split parameter that something the pass does not split also reads.
triax.model @m config = #triax.train_config<micro_batch = 1, seq = 2> {
  triax.param @w1 : tensor<4x4xf32> init <normal, std = 0.02>
  triax.param @w2 : tensor<4x4xf32> init <normal, std = 0.02>
  triax.param @emb : tensor<4x4xf32> init <normal, std = 0.02>
  func.func @forward(%tokens: tensor<1x2xi32>, %targets: tensor<1x2xi32>) -> tensor<f32> {
    %emb = triax.get_param @emb : tensor<4x4xf32>
    %x = triax.embedding %tokens, %emb : (tensor<1x2xi32>, tensor<4x4xf32>) -> tensor<1x2x4xf32>
    %w1 = triax.get_param @w1 : tensor<4x4xf32>
    %h = triax.linear %x, %w1 : (tensor<1x2x4xf32>, tensor<4x4xf32>) -> tensor<1x2x4xf32>
    %g = triax.gelu %h : tensor<1x2x4xf32>
    %w2 = triax.get_param @w2 : tensor<4x4xf32>
    %y = triax.linear %g, %w2 : (tensor<1x2x4xf32>, tensor<4x4xf32>) -> tensor<1x2x4xf32>
    // expected-error @+1 {{'triax.linear' op dist-tensor-parallel: reads parameter @w1, which tensor parallelism splits, but is not split itself}}
    %z = triax.linear %y, %w1 : (tensor<1x2x4xf32>, tensor<4x4xf32>) -> tensor<1x2x4xf32>
    %logits = triax.linear %z, %emb {transpose_weight} : (tensor<1x2x4xf32>, tensor<4x4xf32>) -> tensor<1x2x4xf32>
    %loss = triax.cross_entropy %logits, %targets : (tensor<1x2x4xf32>, tensor<1x2xi32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// An expert MLP whose width tp does not divide: each expert's MLP is a
// column/row pair like a dense one.
triax.model @m config = #triax.train_config<micro_batch = 2, seq = 4> {
  triax.param @emb : tensor<16x8xf32> init <normal, std = 0.02>
  triax.param @router : tensor<8x4xf32> init <normal, std = 0.02>
  triax.param @w1 : tensor<4x8x5xf32> init <normal, std = 0.02>
  triax.param @w2 : tensor<4x5x8xf32> init <normal, std = 0.02>
  func.func @forward(%tokens: tensor<2x4xi32>, %targets: tensor<2x4xi32>) -> tensor<f32> {
    %emb = triax.get_param @emb : tensor<16x8xf32>
    %x = triax.embedding %tokens, %emb : (tensor<2x4xi32>, tensor<16x8xf32>) -> tensor<2x4x8xf32>
    %wr = triax.get_param @router : tensor<8x4xf32>
    %l = triax.linear %x, %wr : (tensor<2x4x8xf32>, tensor<8x4xf32>) -> tensor<2x4x4xf32>
    %g, %e, %s, %a, %aux = triax.moe_route %l {top_k = 2, capacity = 2, aux_coeff = 0.01, renormalize} : (tensor<2x4x4xf32>) -> (tensor<2x4x2xf32>, tensor<2x4x2xi32>, tensor<2x4x2xi32>, tensor<2x8xi32>, tensor<f32>)
    %buf = triax.moe_dispatch %x, %s, %a : (tensor<2x4x8xf32>, tensor<2x4x2xi32>, tensor<2x8xi32>) -> tensor<4x4x8xf32>
    %w1 = triax.get_param @w1 : tensor<4x8x5xf32>
    // expected-error @+1 {{'triax.expert_linear' op dist-tensor-parallel: the ffn size 5 (the output size of a column-split linear) is not divisible by tp=2}}
    %h = triax.expert_linear %buf, %w1 : (tensor<4x4x8xf32>, tensor<4x8x5xf32>) -> tensor<4x4x5xf32>
    %act = triax.gelu %h : tensor<4x4x5xf32>
    %w2 = triax.get_param @w2 : tensor<4x5x8xf32>
    %o = triax.expert_linear %act, %w2 : (tensor<4x4x5xf32>, tensor<4x5x8xf32>) -> tensor<4x4x8xf32>
    %y = triax.moe_combine %o, %s, %a gates %g : (tensor<4x4x8xf32>, tensor<2x4x2xi32>, tensor<2x8xi32>, tensor<2x4x2xf32>) -> tensor<2x4x8xf32>
    %logits = triax.linear %y, %emb {transpose_weight} : (tensor<2x4x8xf32>, tensor<16x8xf32>) -> tensor<2x4x16xf32>
    %ce = triax.cross_entropy %logits, %targets : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> tensor<f32>
    %loss = triax.add %ce, %aux : tensor<f32>
    return %loss : tensor<f32>
  }
}
