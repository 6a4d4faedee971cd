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

// -----

// A parameter split by dist.sharding is read with this rank's piece of it:
// the global [8, 4] split along dimension 1 over tp=2 is [8, 2].
dist.mesh @mesh <["tp"=2]>
triax.model @m config = #triax.train_config<micro_batch = 1, seq = 2> {
  // expected-note @+1 {{parameter declared here}}
  triax.param @w : tensor<8x4xf32> init <zeros> {dist.sharding = #dist.sharding<@mesh, [{}, {"tp"}]>}
  func.func @f() -> tensor<8x4xf32> {
    // expected-error @+1 {{'triax.get_param' op uses parameter @w as 'tensor<8x4xf32>', but this rank holds 'tensor<8x2xf32>' of its 'tensor<8x4xf32>' (split by #dist.sharding<@mesh, [{}, {"tp"}]>)}}
    %w = triax.get_param @w : tensor<8x4xf32>
    return %w : tensor<8x4xf32>
  }
}

// -----

// The same for the gradient buffer.
dist.mesh @mesh <["dp"=2, "tp"=2]>
triax.model @m config = #triax.train_config<micro_batch = 1, seq = 2> {
  // expected-note @+1 {{parameter declared here}}
  triax.param @w : tensor<8x4xf32> init <zeros> {dist.sharding = #dist.sharding<@mesh, [{"dp", "tp"}, {}]>}
  func.func @f(%g: tensor<4x4xf32>) {
    %w = triax.get_param @w : tensor<2x4xf32>
    // expected-error @+1 {{'triax.accumulate_grad' op uses parameter @w as 'tensor<4x4xf32>', but this rank holds 'tensor<2x4xf32>'}}
    triax.accumulate_grad @w, %g : tensor<4x4xf32>
    return
  }
}

// -----

// Two split parameters: one walk checks the uses of both (run when the
// first is verified), so the second one's wrong read is found too.
dist.mesh @mesh <["tp"=2]>
triax.model @m config = #triax.train_config<micro_batch = 1, seq = 2> {
  triax.param @a : tensor<8x4xf32> init <zeros> {dist.sharding = #dist.sharding<@mesh, [{}, {"tp"}]>}
  // expected-note @+1 {{parameter declared here}}
  triax.param @b : tensor<6x4xf32> init <zeros> {dist.sharding = #dist.sharding<@mesh, [{"tp"}, {}]>}
  func.func @f() -> tensor<8x2xf32> {
    %a = triax.get_param @a : tensor<8x2xf32>
    // expected-error @+1 {{'triax.get_param' op uses parameter @b as 'tensor<6x4xf32>', but this rank holds 'tensor<3x4xf32>' of its 'tensor<6x4xf32>'}}
    %b = triax.get_param @b : tensor<6x4xf32>
    return %a : tensor<8x2xf32>
  }
}
