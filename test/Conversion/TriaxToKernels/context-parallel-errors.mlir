// Context-parallel attention's lowering refuses, at the op, what it does
// not lower: the batched-GEMM kernels (they take no positions), and keys
// that are not the group's sequence.
// RUN: triax-opt %s -split-input-file --convert-triax-to-kernels="attention=batched-gemm" --verify-diagnostics

dist.mesh @mesh <["cp"=2]>
triax.model @m config = #triax.train_config<micro_batch = 1, seq = 2> {
  triax.param @emb : tensor<4x2xf32> init <normal, std = 0.02> decay
  func.func @forward(%tokens: tensor<1x2xi32>, %targets: tensor<1x2xi32>) -> tensor<f32> {
    %emb = triax.get_param @emb : tensor<4x2xf32>
    %x = triax.embedding %tokens, %emb : (tensor<1x2xi32>, tensor<4x2xf32>) -> tensor<1x2x2xf32>
    %logits = triax.linear %x, %emb {transpose_weight} : (tensor<1x2x2xf32>, tensor<4x2xf32>) -> tensor<1x2x4xf32>
    %loss = triax.cross_entropy %logits, %targets : (tensor<1x2x4xf32>, tensor<1x2xi32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}
func.func @attention(%q: tensor<2x4x8xf32>, %kv: tensor<2x8x8xf32>) -> tensor<2x4x8xf32> {
  // expected-error @+2 {{'triax.attention' op context-parallel attention needs the flash kernels (attention=flash), not batched-gemm}}
  // expected-error @+1 {{failed to legalize operation 'triax.attention'}}
  %a = triax.attention %q, %kv, %kv heads = 2 context_parallel over @mesh ["cp"] : (tensor<2x4x8xf32>, tensor<2x8x8xf32>, tensor<2x8x8xf32>) -> tensor<2x4x8xf32>
  return %a : tensor<2x4x8xf32>
}

// -----

dist.mesh @mesh <["cp"=4]>
triax.model @m config = #triax.train_config<micro_batch = 1, seq = 2> {
  triax.param @emb : tensor<4x2xf32> init <normal, std = 0.02> decay
  func.func @forward(%tokens: tensor<1x2xi32>, %targets: tensor<1x2xi32>) -> tensor<f32> {
    %emb = triax.get_param @emb : tensor<4x2xf32>
    %x = triax.embedding %tokens, %emb : (tensor<1x2xi32>, tensor<4x2xf32>) -> tensor<1x2x2xf32>
    %logits = triax.linear %x, %emb {transpose_weight} : (tensor<1x2x2xf32>, tensor<4x2xf32>) -> tensor<1x2x4xf32>
    %loss = triax.cross_entropy %logits, %targets : (tensor<1x2x4xf32>, tensor<1x2xi32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}
func.func @attention_grad(%q: tensor<2x4x8xf32>, %kv: tensor<2x8x8xf32>) -> tensor<2x4x8xf32> {
  // expected-error @+2 {{'triax.attention_grad' op context_parallel over a group of 4 needs 4 x 4 keys, got 8}}
  // expected-error @+1 {{failed to legalize operation 'triax.attention_grad'}}
  %dq, %dk, %dv = triax.attention_grad %q, %kv, %kv, %q heads = 2 context_parallel over @mesh ["cp"] : (tensor<2x4x8xf32>, tensor<2x8x8xf32>, tensor<2x8x8xf32>, tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<2x8x8xf32>, tensor<2x8x8xf32>)
  return %dq : tensor<2x4x8xf32>
}
