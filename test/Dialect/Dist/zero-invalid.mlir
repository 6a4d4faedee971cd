// RUN: triax-opt %s -split-input-file -verify-diagnostics

dist.mesh @mesh <["dp"=2]>
// expected-error @+1 {{ZeRO stage 4 does not exist (expected 1, 2 or 3)}}
func.func private @f() attributes {x = #dist.zero<@mesh, ["dp"], stage = 4>}

// -----

dist.mesh @mesh <["dp"=2]>
// expected-error @+1 {{ZeRO axis "dp" is listed twice}}
func.func private @f() attributes {x = #dist.zero<@mesh, ["dp", "dp"], stage = 1>}

// -----

dist.mesh @mesh <["dp"=2]>
// expected-error @+1 {{'dist.zero' belongs on a parameter (an op with a tensor 'type')}}
func.func private @f() attributes {dist.zero = #dist.zero<@mesh, ["dp"], stage = 1>}

// -----

dist.mesh @mesh <["dp"=2]>
triax.model @m config = #triax.train_config<micro_batch = 1, seq = 2> {
  // expected-error @+1 {{ZeRO sharding: mesh @mesh has no axis "tp"}}
  triax.param @w : tensor<5xf32> init <zeros> {dist.zero = #dist.zero<@mesh, ["tp"], stage = 1>}
}

// -----

dist.mesh @mesh <["dp"=2]>
func.func @f(%g: tensor<5x3xf32>) -> tensor<7xf32> {
  // expected-error @+1 {{chunk 'tensor<7xf32>' must have ceil(15 / 2) = 8 elements}}
  %c = dist.reduce_scatter_flat avg %g over @mesh ["dp"] : tensor<5x3xf32> -> tensor<7xf32>
  return %c : tensor<7xf32>
}

// -----

dist.mesh @mesh <["dp"=3]>
func.func @f(%c: tensor<5xf32>) -> tensor<5x3xf32> {
  // The 15 elements split into chunks of 5 over 3: valid.
  %w = dist.all_gather_flat %c over @mesh ["dp"] : tensor<5xf32> -> tensor<5x3xf32>
  return %w : tensor<5x3xf32>
}

// -----

dist.mesh @mesh <["dp"=2]>
triax.model @m config = #triax.train_config<micro_batch = 1, seq = 2> {
  triax.param @w : tensor<5xf32> init <zeros>
  func.func @s() {
    // expected-error @+1 {{parameter @w must carry dist.zero with stage 1 or 2 (its whole copy is gathered in place)}}
    dist.all_gather_params [@w] over @mesh ["dp"]
    return
  }
}

// -----

dist.mesh @mesh <["dp"=2, "tp"=2]>
triax.model @m config = #triax.train_config<micro_batch = 1, seq = 2> {
  triax.param @w : tensor<5xf32> init <zeros> {dist.zero = #dist.zero<@mesh, ["dp"], stage = 1>}
  func.func @s() {
    // expected-error @+1 {{gathers over @mesh ["tp"] but parameter @w is sharded over @mesh ["dp"]}}
    dist.all_gather_params [@w] over @mesh ["tp"]
    return
  }
}

// -----

dist.mesh @mesh <["dp"=2]>
triax.model @m config = #triax.train_config<micro_batch = 1, seq = 2> {
  triax.param @w : tensor<5xf32> init <zeros>
  func.func @s() {
    // expected-error @+1 {{unknown parameter @v}}
    dist.all_reduce_grads avg [@w, @v] over @mesh ["dp"]
    return
  }
}

// -----

dist.mesh @mesh <["dp"=2]>
func.func @f(%g: tensor<4xf32>, %h: tensor<4xf32>) -> tensor<f32> {
  // expected-error @+1 {{has 1 replica counts for 2 gradients}}
  %n = triax.global_norm %g, %h partial over @mesh ["dp"] replicas [1] : tensor<4xf32>, tensor<4xf32> -> tensor<f32>
  return %n : tensor<f32>
}

// -----

func.func @f(%g: tensor<4xf32>) -> tensor<f32> {
  // expected-error @+1 {{replica count 0 must be >= 1}}
  %n = triax.global_norm %g replicas [0] : tensor<4xf32> -> tensor<f32>
  return %n : tensor<f32>
}

// -----

// A bucket of gathers: one element type (one message).
dist.mesh @mesh <["dp"=2]>
triax.model @m config = #triax.train_config<micro_batch = 1, seq = 2> {
  triax.param @w : tensor<5xf32> init <zeros> {dist.zero = #dist.zero<@mesh, ["dp"], stage = 1>}
  triax.param @v : tensor<5xbf16> init <zeros> {dist.zero = #dist.zero<@mesh, ["dp"], stage = 1>}
  func.func @s() {
    // expected-error @+1 {{parameters of element types 'f32' and 'bf16' in one bucket (one message has one element type)}}
    dist.all_gather_params [@w, @v] over @mesh ["dp"]
    return
  }
}

// -----

dist.mesh @mesh <["dp"=2]>
triax.model @m config = #triax.train_config<micro_batch = 1, seq = 2> {
  func.func @s() {
    // expected-error @+1 {{needs at least one parameter}}
    dist.all_gather_params [] over @mesh ["dp"]
    return
  }
}

// -----

// Every member of a gathered bucket is checked.
dist.mesh @mesh <["dp"=2]>
triax.model @m config = #triax.train_config<micro_batch = 1, seq = 2> {
  triax.param @w : tensor<5xf32> init <zeros> {dist.zero = #dist.zero<@mesh, ["dp"], stage = 1>}
  triax.param @v : tensor<5xf32> init <zeros> {dist.zero = #dist.zero<@mesh, ["dp"], stage = 3>}
  func.func @s() {
    // expected-error @+1 {{parameter @v must carry dist.zero with stage 1 or 2}}
    dist.all_gather_params [@w, @v] over @mesh ["dp"]
    return
  }
}

// -----

dist.mesh @mesh <["dp"=2]>
func.func @f(%a: tensor<5xf32>, %b: tensor<4x2xf32>) -> (tensor<3xf32>, tensor<3xf32>) {
  // expected-error @+1 {{chunk 'tensor<3xf32>' must have ceil(8 / 2) = 4 elements}}
  %ca, %cb = dist.reduce_scatter_bucket avg %a, %b over @mesh ["dp"] : tensor<5xf32>, tensor<4x2xf32> -> tensor<3xf32>, tensor<3xf32>
  return %ca, %cb : tensor<3xf32>, tensor<3xf32>
}

// -----

dist.mesh @mesh <["dp"=2]>
func.func @f(%a: tensor<5xf32>, %b: tensor<4xbf16>) -> (tensor<3xf32>, tensor<2xbf16>) {
  // expected-error @+1 {{inputs of element types 'f32' and 'bf16' in one bucket (one message has one element type)}}
  %ca, %cb = dist.reduce_scatter_bucket avg %a, %b over @mesh ["dp"] : tensor<5xf32>, tensor<4xbf16> -> tensor<3xf32>, tensor<2xbf16>
  return %ca, %cb : tensor<3xf32>, tensor<2xbf16>
}

// -----

dist.mesh @mesh <["dp"=2]>
func.func @f(%a: tensor<5xf32>, %b: tensor<4xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{has 2 inputs but 1 results (one chunk per input)}}
  %ca = dist.reduce_scatter_bucket avg %a, %b over @mesh ["dp"] : tensor<5xf32>, tensor<4xf32> -> tensor<3xf32>
  return %ca : tensor<3xf32>
}

// -----

dist.mesh @mesh <["dp"=2]>
func.func @f() {
  // expected-error @+1 {{needs at least one input}}
  "dist.reduce_scatter_bucket"() <{axes = ["dp"], mesh = @mesh, reduction = 1 : i32}> : () -> ()
  return
}

// -----

dist.mesh @mesh <["dp"=2]>
func.func @f(%a: tensor<3xf32>, %b: tensor<3xf32>) -> (tensor<5xf32>, tensor<4x2xf32>) {
  // expected-error @+1 {{chunk 'tensor<3xf32>' must have ceil(8 / 2) = 4 elements}}
  %a2, %b2 = dist.all_gather_bucket %a, %b over @mesh ["dp"] : tensor<3xf32>, tensor<3xf32> -> tensor<5xf32>, tensor<4x2xf32>
  return %a2, %b2 : tensor<5xf32>, tensor<4x2xf32>
}

// -----

dist.mesh @mesh <["dp"=2]>
func.func @f(%a: tensor<3xf32>, %b: tensor<2xbf16>) -> (tensor<5xf32>, tensor<4xbf16>) {
  // expected-error @+1 {{inputs of element types 'f32' and 'bf16' in one bucket (one message has one element type)}}
  %a2, %b2 = dist.all_gather_bucket %a, %b over @mesh ["dp"] : tensor<3xf32>, tensor<2xbf16> -> tensor<5xf32>, tensor<4xbf16>
  return %a2, %b2 : tensor<5xf32>, tensor<4xbf16>
}

// -----

dist.mesh @mesh <["dp"=2]>
func.func @f(%a: tensor<3xf32>, %b: tensor<2xf32>) -> tensor<5xf32> {
  // expected-error @+1 {{has 2 inputs but 1 results (one whole tensor per chunk)}}
  %a2 = dist.all_gather_bucket %a, %b over @mesh ["dp"] : tensor<3xf32>, tensor<2xf32> -> tensor<5xf32>
  return %a2 : tensor<5xf32>
}

// -----

dist.mesh @mesh <["dp"=2]>
func.func @f() {
  // expected-error @+1 {{needs at least one input}}
  "dist.all_gather_bucket"() <{axes = ["dp"], mesh = @mesh}> : () -> ()
  return
}

// -----

dist.mesh @mesh <["dp"=2]>
func.func @f(%a: tensor<3xf32>, %b: tensor<2xf32>) -> (tensor<5xf32>, tensor<4xf32>) {
  // expected-error @+1 {{unknown axis "tp" in mesh @mesh}}
  %a2, %b2 = dist.all_gather_bucket %a, %b over @mesh ["tp"] : tensor<3xf32>, tensor<2xf32> -> tensor<5xf32>, tensor<4xf32>
  return %a2, %b2 : tensor<5xf32>, tensor<4xf32>
}
