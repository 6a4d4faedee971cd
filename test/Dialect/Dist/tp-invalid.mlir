// Verifier errors of the ops tensor parallelism uses.
// RUN: triax-opt %s -split-input-file -verify-diagnostics

dist.mesh @mesh <["tp"=2]>
func.func @f(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'dist.copy_to_group' op unknown axis "dp" in mesh @mesh}}
  %y = dist.copy_to_group %x over @mesh ["dp"] : tensor<4x8xf32>
  return
}

// -----

func.func @f(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'dist.copy_to_group' op refers to unknown mesh @mesh}}
  %y = dist.copy_to_group %x over @mesh ["tp"] : tensor<4x8xf32>
  return
}

// -----

dist.mesh @mesh <["tp"=2]>
func.func @f(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'dist.copy_to_group' op needs at least one mesh axis}}
  %y = dist.copy_to_group %x over @mesh [] : tensor<4x8xf32>
  return
}

// -----

func.func @f(%x: tensor<4x8xf32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{'triax.bias_add' op bias 'tensor<4xf32>' must be a vector of the input's last dimension 8}}
  %y = triax.bias_add %x, %b : tensor<4x8xf32>, tensor<4xf32>
  return
}

// -----

func.func @f(%x: tensor<4x8xf32>, %b: tensor<8xbf16>) {
  // expected-error @+1 {{'triax.bias_add' op mixes element types 'f32' and 'bf16'; expected one float type}}
  %y = triax.bias_add %x, %b : tensor<4x8xf32>, tensor<8xbf16>
  return
}

// -----

func.func @f(%t: tensor<2x4xi32>, %w: tensor<16x8xf32>) {
  // expected-error @+1 {{'triax.embedding' op vocab_parallel needs both the mesh and its axes}}
  %x = "triax.embedding"(%t, %w) <{mesh = @mesh}> : (tensor<2x4xi32>, tensor<16x8xf32>) -> tensor<2x4x8xf32>
  return
}

// -----

func.func @f(%l: tensor<2x4x8xf32>, %t: tensor<2x4xi32>) {
  // expected-error @+1 {{'triax.cross_entropy' op vocab_parallel needs at least one mesh axis}}
  %x = triax.cross_entropy %l, %t vocab_parallel over @mesh [] : (tensor<2x4x8xf32>, tensor<2x4xi32>) -> tensor<f32>
  return
}
