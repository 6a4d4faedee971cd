// The pipeline ops' lowering refuses what it does not lower, with the op's
// location: point-to-point messages of other than f32 and bf16 tensors,
// and slices that are not static, unit-stride and rank-preserving.
// RUN: triax-opt %s -split-input-file --convert-triax-to-kernels --verify-diagnostics

dist.mesh @mesh <["pp"=2]>
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
func.func @send_tokens(%t: tensor<1x2xi32>) {
  // expected-error @+2 {{'dist.send' op only f32 and bf16 tensors are communicated between ranks, got 'i32'}}
  // expected-error @+1 {{failed to legalize operation 'dist.send'}}
  dist.send %t over @mesh ["pp"] to 1 tag 3 : tensor<1x2xi32>
  return
}

// -----

dist.mesh @mesh <["pp"=2]>
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
func.func @strided(%t: tensor<4x2xi32>) -> tensor<2x2xi32> {
  // expected-error @+2 {{'tensor.extract_slice' op only static, unit-stride, rank-preserving slices are lowered}}
  // expected-error @+1 {{failed to legalize operation 'tensor.extract_slice'}}
  %s = tensor.extract_slice %t[0, 0] [2, 2] [2, 1] : tensor<4x2xi32> to tensor<2x2xi32>
  return %s : tensor<2x2xi32>
}
