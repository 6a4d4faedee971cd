// Every verifier branch of the triax ops (TriaxOps.cpp), plus a few of the
// constraints ODS generates. Each message names the actual and the expected
// value. The attributes' errors are in invalid-config.mlir.
// RUN: triax-opt %s -split-input-file -verify-diagnostics

//===----------------------------------------------------------------------===//
// triax.model
//===----------------------------------------------------------------------===//

// expected-error @+1 {{'triax.model' op expects a 'func.func @forward' computing the loss}}
triax.model @m config = #triax.train_config<micro_batch = 2, seq = 4> {
  triax.param @w : tensor<4xf32> init <zeros>
}

// -----

// A symbol named @forward that is not a function does not count.
// expected-error @+1 {{'triax.model' op expects a 'func.func @forward' computing the loss}}
triax.model @m config = #triax.train_config<micro_batch = 2, seq = 4> {
  triax.param @forward : tensor<4xf32> init <zeros>
}

// -----

// expected-error @+1 {{'triax.model' op expects @forward to take (tokens, targets) and return the loss, got '(tensor<2x4xi32>) -> tensor<f32>'}}
triax.model @m config = #triax.train_config<micro_batch = 2, seq = 4> {
  func.func @forward(%t: tensor<2x4xi32>) -> tensor<f32> {
    %z = arith.constant dense<0.0> : tensor<f32>
    return %z : tensor<f32>
  }
}

// -----

// expected-error @+1 {{'triax.model' op expects @forward to take (tokens, targets) and return the loss, got '(tensor<2x4xi32>, tensor<2x4xi32>) -> (tensor<f32>, tensor<f32>)'}}
triax.model @m config = #triax.train_config<micro_batch = 2, seq = 4> {
  func.func @forward(%t: tensor<2x4xi32>, %y: tensor<2x4xi32>) -> (tensor<f32>, tensor<f32>) {
    %z = arith.constant dense<0.0> : tensor<f32>
    return %z, %z : tensor<f32>, tensor<f32>
  }
}

// -----

// expected-error @+1 {{'triax.model' op expects @forward's tokens to be a tensor of i32 or i64, got 'tensor<2x4xf32>'}}
triax.model @m config = #triax.train_config<micro_batch = 2, seq = 4> {
  func.func @forward(%t: tensor<2x4xf32>, %y: tensor<2x4xi32>) -> tensor<f32> {
    %z = arith.constant dense<0.0> : tensor<f32>
    return %z : tensor<f32>
  }
}

// -----

// Signed and narrow integers are not token ids.
// expected-error @+1 {{'triax.model' op expects @forward's targets to be a tensor of i32 or i64, got 'tensor<2x4xsi32>'}}
triax.model @m config = #triax.train_config<micro_batch = 2, seq = 4> {
  func.func @forward(%t: tensor<2x4xi32>, %y: tensor<2x4xsi32>) -> tensor<f32> {
    %z = arith.constant dense<0.0> : tensor<f32>
    return %z : tensor<f32>
  }
}

// -----

// expected-error @+1 {{'triax.model' op expects @forward's tokens to be a tensor of i32 or i64, got 'tensor<2x4xi16>'}}
triax.model @m config = #triax.train_config<micro_batch = 2, seq = 4> {
  func.func @forward(%t: tensor<2x4xi16>, %y: tensor<2x4xi32>) -> tensor<f32> {
    %z = arith.constant dense<0.0> : tensor<f32>
    return %z : tensor<f32>
  }
}

// -----

// expected-error @+1 {{'triax.model' op expects @forward's tokens to be a tensor of i32 or i64, got 'i32'}}
triax.model @m config = #triax.train_config<micro_batch = 2, seq = 4> {
  func.func @forward(%t: i32, %y: tensor<2x4xi32>) -> tensor<f32> {
    %z = arith.constant dense<0.0> : tensor<f32>
    return %z : tensor<f32>
  }
}

// -----

// expected-error @+1 {{'triax.model' op @forward's tokens have shape [4, 2], expected [micro_batch, seq] = [2, 4]}}
triax.model @m config = #triax.train_config<micro_batch = 2, seq = 4> {
  func.func @forward(%t: tensor<4x2xi32>, %y: tensor<2x4xi32>) -> tensor<f32> {
    %z = arith.constant dense<0.0> : tensor<f32>
    return %z : tensor<f32>
  }
}

// -----

// global_batch does not enter the shape: one call is one micro-batch.
// expected-error @+1 {{'triax.model' op @forward's targets have shape [8, 4], expected [micro_batch, seq] = [2, 4]}}
triax.model @m config = #triax.train_config<global_batch = 8, micro_batch = 2, seq = 4> {
  func.func @forward(%t: tensor<2x4xi64>, %y: tensor<8x4xi64>) -> tensor<f32> {
    %z = arith.constant dense<0.0> : tensor<f32>
    return %z : tensor<f32>
  }
}

// -----

// expected-error @+1 {{'triax.model' op @forward's tokens have shape [?, 4], expected [micro_batch, seq] = [2, 4]}}
triax.model @m config = #triax.train_config<micro_batch = 2, seq = 4> {
  func.func @forward(%t: tensor<?x4xi32>, %y: tensor<2x4xi32>) -> tensor<f32> {
    %z = arith.constant dense<0.0> : tensor<f32>
    return %z : tensor<f32>
  }
}

// -----

// expected-error @+1 {{'triax.model' op @forward's tokens have shape [8], expected [micro_batch, seq] = [2, 4]}}
triax.model @m config = #triax.train_config<micro_batch = 2, seq = 4> {
  func.func @forward(%t: tensor<8xi32>, %y: tensor<2x4xi32>) -> tensor<f32> {
    %z = arith.constant dense<0.0> : tensor<f32>
    return %z : tensor<f32>
  }
}

// -----

// expected-error @+1 {{'triax.model' op expects @forward to return the loss as tensor<f32>, got 'tensor<bf16>'}}
triax.model @m config = #triax.train_config<micro_batch = 2, seq = 4> {
  func.func @forward(%t: tensor<2x4xi32>, %y: tensor<2x4xi32>) -> tensor<bf16> {
    %z = arith.constant dense<0.0> : tensor<bf16>
    return %z : tensor<bf16>
  }
}

// -----

// expected-error @+1 {{'triax.model' op expects @forward to return the loss as tensor<f32>, got 'tensor<1xf32>'}}
triax.model @m config = #triax.train_config<micro_batch = 2, seq = 4> {
  func.func @forward(%t: tensor<2x4xi32>, %y: tensor<2x4xi32>) -> tensor<1xf32> {
    %z = arith.constant dense<0.0> : tensor<1xf32>
    return %z : tensor<1xf32>
  }
}

// -----

// expected-error @+1 {{'triax.model' op expects @forward to return the loss as tensor<f32>, got 'f32'}}
triax.model @m config = #triax.train_config<micro_batch = 2, seq = 4> {
  func.func @forward(%t: tensor<2x4xi32>, %y: tensor<2x4xi32>) -> f32 {
    %z = arith.constant 0.0 : f32
    return %z : f32
  }
}

// -----

// The model body is one block (ODS).
// expected-error @+1 {{'triax.model' op expects region #0 to have 0 or 1 blocks}}
"triax.model"() <{sym_name = "m", config = #triax.train_config<micro_batch = 2, seq = 4>}> ({
^bb0:
  "triax.param"() <{sym_name = "w", type = tensor<4xf32>, init = #triax.init<zeros>}> : () -> ()
^bb1:
  "triax.param"() <{sym_name = "v", type = tensor<4xf32>, init = #triax.init<zeros>}> : () -> ()
}) : () -> ()

// -----

// Two symbols of one model cannot share a name.
triax.model @m config = #triax.train_config<micro_batch = 2, seq = 4> {
  // expected-note @+1 {{see existing symbol definition here}}
  triax.param @w : tensor<4xf32> init <zeros>
  // expected-error @+1 {{redefinition of symbol named 'w'}}
  triax.param @w : tensor<8xf32> init <zeros>
}

//===----------------------------------------------------------------------===//
// triax.param
//===----------------------------------------------------------------------===//

// -----

triax.model @m config = #triax.train_config<micro_batch = 2, seq = 4> {
  // expected-error @+1 {{'triax.param' op parameter must have a static shape, got 'tensor<?x8xf32>'}}
  triax.param @w : tensor<?x8xf32> init <zeros>
}

// -----

triax.model @m config = #triax.train_config<micro_batch = 2, seq = 4> {
  // expected-error @+1 {{'triax.param' op parameter must have rank >= 1, got 'tensor<f32>'}}
  triax.param @w : tensor<f32> init <ones>
}

// -----

// ODS: parameters are f32 or bf16 ranked tensors.
triax.model @m config = #triax.train_config<micro_batch = 2, seq = 4> {
  // expected-error @+1 {{'triax.param' op attribute 'type' failed to satisfy constraint: type attribute of ranked tensor of 32-bit float or bfloat16 type values}}
  triax.param @w : tensor<4x4xi32> init <zeros>
}

// -----

triax.model @m config = #triax.train_config<micro_batch = 2, seq = 4> {
  // expected-error @+1 {{'triax.param' op attribute 'type' failed to satisfy constraint: type attribute of ranked tensor of 32-bit float or bfloat16 type values}}
  triax.param @w : tensor<*xf32> init <zeros>
}

// -----

// ODS: a parameter lives in a model.
// expected-error @+1 {{'triax.param' op expects parent op 'triax.model'}}
triax.param @w : tensor<4xf32> init <zeros>

// -----

func.func @f() {
  // expected-error @+1 {{'triax.param' op expects parent op 'triax.model'}}
  triax.param @w : tensor<4xf32> init <zeros>
  return
}

//===----------------------------------------------------------------------===//
// triax.get_param
//===----------------------------------------------------------------------===//

// -----

triax.model @m config = #triax.train_config<micro_batch = 2, seq = 4> {
  triax.param @w : tensor<4xf32> init <zeros>
  func.func @f() {
    // expected-error @+1 {{'triax.get_param' op 'missing' does not name a triax.param of the enclosing model}}
    %w = triax.get_param @missing : tensor<4xf32>
    return
  }
}

// -----

// A symbol that is not a parameter.
triax.model @m config = #triax.train_config<micro_batch = 2, seq = 4> {
  func.func @f() {
    // expected-error @+1 {{'triax.get_param' op 'f' does not name a triax.param of the enclosing model}}
    %w = triax.get_param @f : tensor<4xf32>
    return
  }
}

// -----

// Outside of any model there are no parameters.
func.func @f() {
  // expected-error @+1 {{'triax.get_param' op 'w' does not name a triax.param of the enclosing model}}
  %w = triax.get_param @w : tensor<4xf32>
  return
}

// -----

// A parameter of another model is not visible.
triax.model @a config = #triax.train_config<micro_batch = 2, seq = 4> {
  triax.param @wte : tensor<16x8xf32> init <normal, std = 0.02>
  func.func @forward(%t: tensor<2x4xi32>, %y: tensor<2x4xi32>) -> tensor<f32> {
    %z = arith.constant dense<0.0> : tensor<f32>
    return %z : tensor<f32>
  }
}
triax.model @b config = #triax.train_config<micro_batch = 2, seq = 4> {
  func.func @forward(%t: tensor<2x4xi32>, %y: tensor<2x4xi32>) -> tensor<f32> {
    // expected-error @+1 {{'triax.get_param' op 'wte' does not name a triax.param of the enclosing model}}
    %w = triax.get_param @wte : tensor<16x8xf32>
    %z = arith.constant dense<0.0> : tensor<f32>
    return %z : tensor<f32>
  }
}

// -----

triax.model @m config = #triax.train_config<micro_batch = 2, seq = 4> {
  triax.param @w : tensor<4x8xf32> init <zeros>
  func.func @f() {
    // expected-error @+1 {{'triax.get_param' op result type 'tensor<8x4xf32>' does not match parameter @w of type 'tensor<4x8xf32>'; expected them equal}}
    %w = triax.get_param @w : tensor<8x4xf32>
    return
  }
}

// -----

triax.model @m config = #triax.train_config<micro_batch = 2, seq = 4> {
  triax.param @w : tensor<4x8xbf16> init <zeros>
  func.func @f() {
    // expected-error @+1 {{'triax.get_param' op result type 'tensor<4x8xf32>' does not match parameter @w of type 'tensor<4x8xbf16>'; expected them equal}}
    %w = triax.get_param @w : tensor<4x8xf32>
    return
  }
}

// -----

// Inside a block (isolated from above) the model's parameters stay visible,
// and are checked the same way.
triax.model @m config = #triax.train_config<micro_batch = 2, seq = 4> {
  triax.param @w : tensor<8xf32> init <ones>
  func.func @f(%x: tensor<2x4x8xf32>) {
    %y = triax.block "h.0" (%x) : (tensor<2x4x8xf32>) -> tensor<2x4x8xf32> {
    ^bb0(%in: tensor<2x4x8xf32>):
      // expected-error @+1 {{'triax.get_param' op result type 'tensor<4xf32>' does not match parameter @w of type 'tensor<8xf32>'; expected them equal}}
      %w = triax.get_param @w : tensor<4xf32>
      triax.yield %in : tensor<2x4x8xf32>
    }
    return
  }
}

//===----------------------------------------------------------------------===//
// triax.block, triax.yield
//===----------------------------------------------------------------------===//

// -----

func.func @f(%x: tensor<2x4x8xf32>) {
  // expected-error @+1 {{'triax.block' op region arguments ('tensor<2x4x4xf32>') must match the inputs ('tensor<2x4x8xf32>')}}
  %y = triax.block "h.0" (%x) : (tensor<2x4x8xf32>) -> tensor<2x4x4xf32> {
  ^bb0(%in: tensor<2x4x4xf32>):
    triax.yield %in : tensor<2x4x4xf32>
  }
  return
}

// -----

func.func @f(%x: tensor<2x4x8xf32>) {
  // expected-error @+1 {{'triax.block' op region arguments () must match the inputs ('tensor<2x4x8xf32>')}}
  triax.block "h.0" (%x) : (tensor<2x4x8xf32>) -> () {
    triax.yield
  }
  return
}

// -----

func.func @f(%x: tensor<2x4x8xf32>) {
  // expected-error @+1 {{'triax.block' op yields ('tensor<2x4x8xf32>') but the results are ('tensor<2x4x8xbf16>')}}
  %y = triax.block "h.0" (%x) : (tensor<2x4x8xf32>) -> tensor<2x4x8xbf16> {
  ^bb0(%in: tensor<2x4x8xf32>):
    triax.yield %in : tensor<2x4x8xf32>
  }
  return
}

// -----

func.func @f(%x: tensor<2x4x8xf32>) {
  // expected-error @+1 {{'triax.block' op yields ('tensor<2x4x8xf32>', 'tensor<2x4x8xf32>') but the results are ('tensor<2x4x8xf32>')}}
  %y = triax.block "h.0" (%x) : (tensor<2x4x8xf32>) -> tensor<2x4x8xf32> {
  ^bb0(%in: tensor<2x4x8xf32>):
    triax.yield %in, %in : tensor<2x4x8xf32>, tensor<2x4x8xf32>
  }
  return
}

// -----

// A block is isolated from above: it cannot use the values around it.
func.func @f(%x: tensor<2x4x8xf32>) {
  // expected-note @+1 {{required by region isolation constraints}}
  %y = triax.block "h.0" () : () -> tensor<2x4x8xf32> {
    // expected-error @+1 {{'triax.yield' op using value defined outside the region}}
    triax.yield %x : tensor<2x4x8xf32>
  }
  return
}

// -----

// ODS: the body ends with a terminator.
func.func @f(%x: tensor<2x4x8xf32>) {
  %y = triax.block "h.0" (%x) : (tensor<2x4x8xf32>) -> tensor<2x4x8xf32> {
  ^bb0(%in: tensor<2x4x8xf32>):
    // expected-error @+1 {{block with no terminator}}
    %g = triax.gelu %in : tensor<2x4x8xf32>
  }
  return
}

// -----

// ODS: the body is exactly one block.
func.func @f() {
  // expected-error @+1 {{'triax.block' op region #0 ('body') failed to verify constraint: region with 1 blocks}}
  triax.block "h.0" () : () -> () {
  }
  return
}

// -----

func.func @f(%x: tensor<4xf32>) {
  // expected-error @+1 {{'triax.block' op region #0 ('body') failed to verify constraint: region with 1 blocks}}
  %y = triax.block "h.0" (%x) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    triax.yield %a : tensor<4xf32>
  ^bb1:
    triax.yield %a : tensor<4xf32>
  }
  return
}

// -----

func.func @f() {
  // expected-error @+1 {{empty block: expect at least a terminator}}
  triax.block "h.0" () : () -> () {
  ^bb0:
  }
  return
}

// -----

// ODS: a yield only ends a block.
// expected-error @+1 {{'triax.yield' op expects parent op 'triax.block'}}
triax.yield

// -----

func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'triax.yield' op expects parent op 'triax.block'}}
  triax.yield %x : tensor<4xf32>
}

//===----------------------------------------------------------------------===//
// triax.position_ids
//===----------------------------------------------------------------------===//

// -----

func.func @f() {
  // expected-error @+1 {{'triax.position_ids' op result must be [batch, seq], got 'tensor<8xi32>'}}
  %p = triax.position_ids : tensor<8xi32>
  return
}

// -----

func.func @f() {
  // expected-error @+1 {{'triax.position_ids' op result must be [batch, seq], got 'tensor<2x4x1xi64>'}}
  %p = triax.position_ids : tensor<2x4x1xi64>
  return
}

// -----

// Sequence-parallel position ids name the mesh and its axes together.
func.func @f() {
  // expected-error @+1 {{'triax.position_ids' op sequence_parallel needs both the mesh and its axes}}
  %p = "triax.position_ids"() {mesh = @mesh} : () -> tensor<2x4xi32>
  return
}

// -----

// ODS: positions are i32 or i64.
func.func @f() {
  // expected-error @+1 {{'triax.position_ids' op result #0 must be ranked tensor of 32-bit signless integer or 64-bit signless integer values, but got 'tensor<2x4xf32>'}}
  %p = triax.position_ids : tensor<2x4xf32>
  return
}

//===----------------------------------------------------------------------===//
// triax.embedding
//===----------------------------------------------------------------------===//

// -----

func.func @f(%t: tensor<2x4xi32>, %w: tensor<16xf32>) {
  // expected-error @+1 {{'triax.embedding' op table must be [vocab, hidden], got 'tensor<16xf32>'}}
  %x = triax.embedding %t, %w : (tensor<2x4xi32>, tensor<16xf32>) -> tensor<2x4x16xf32>
  return
}

// -----

func.func @f(%t: tensor<2x4xi32>, %w: tensor<16x8xf32>) {
  // expected-error @+1 {{'triax.embedding' op result element type 'bf16' does not match the table's 'f32'}}
  %x = triax.embedding %t, %w : (tensor<2x4xi32>, tensor<16x8xf32>) -> tensor<2x4x8xbf16>
  return
}

// -----

func.func @f(%t: tensor<2x4xi32>, %w: tensor<16x8xf32>) {
  // expected-error @+1 {{'triax.embedding' op result shape [2, 4, 16] does not match the expected shape [2, 4, 8]}}
  %x = triax.embedding %t, %w : (tensor<2x4xi32>, tensor<16x8xf32>) -> tensor<2x4x16xf32>
  return
}

// -----

func.func @f(%t: tensor<2x4xi32>, %w: tensor<16x8xf32>) {
  // expected-error @+1 {{'triax.embedding' op result shape [2, 8] does not match the expected shape [2, 4, 8]}}
  %x = triax.embedding %t, %w : (tensor<2x4xi32>, tensor<16x8xf32>) -> tensor<2x8xf32>
  return
}

// -----

// ODS: indices are integers.
func.func @f(%t: tensor<2x4xf32>, %w: tensor<16x8xf32>) {
  // expected-error @+1 {{'triax.embedding' op operand #0 must be ranked tensor of 32-bit signless integer or 64-bit signless integer values, but got 'tensor<2x4xf32>'}}
  %x = triax.embedding %t, %w : (tensor<2x4xf32>, tensor<16x8xf32>) -> tensor<2x4x8xf32>
  return
}

//===----------------------------------------------------------------------===//
// triax.linear
//===----------------------------------------------------------------------===//

// -----

func.func @f(%x: tensor<f32>, %w: tensor<8x12xf32>) {
  // expected-error @+1 {{'triax.linear' op input must have rank >= 1, got 'tensor<f32>'}}
  %y = triax.linear %x, %w : (tensor<f32>, tensor<8x12xf32>) -> tensor<12xf32>
  return
}

// -----

func.func @f(%x: tensor<2x4x8xf32>, %w: tensor<8xf32>) {
  // expected-error @+1 {{'triax.linear' op weight must have rank 2, got 'tensor<8xf32>'}}
  %y = triax.linear %x, %w : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  return
}

// -----

func.func @f(%x: tensor<2x4x8xf32>, %w: tensor<2x8x12xf32>) {
  // expected-error @+1 {{'triax.linear' op weight must have rank 2, got 'tensor<2x8x12xf32>'}}
  %y = triax.linear %x, %w : (tensor<2x4x8xf32>, tensor<2x8x12xf32>) -> tensor<2x4x12xf32>
  return
}

// -----

func.func @f(%x: tensor<2x4x8xf32>, %w: tensor<12x8xf32>) {
  // expected-error @+1 {{'triax.linear' op input has 8 features but the weight [12, 8] expects 12 (weight is [in, out])}}
  %y = triax.linear %x, %w : (tensor<2x4x8xf32>, tensor<12x8xf32>) -> tensor<2x4x8xf32>
  return
}

// -----

func.func @f(%x: tensor<2x4x8xf32>, %w: tensor<8x12xf32>) {
  // expected-error @+1 {{'triax.linear' op input has 8 features but the weight [8, 12] expects 12 (weight is [out, in])}}
  %y = triax.linear %x, %w {transpose_weight} : (tensor<2x4x8xf32>, tensor<8x12xf32>) -> tensor<2x4x8xf32>
  return
}

// -----

func.func @f(%x: tensor<2x4x8xf32>, %w: tensor<8x12xf32>, %b: tensor<8xf32>) {
  // expected-error @+1 {{'triax.linear' op bias shape [8] does not match [12]}}
  %y = triax.linear %x, %w, %b : (tensor<2x4x8xf32>, tensor<8x12xf32>, tensor<8xf32>) -> tensor<2x4x12xf32>
  return
}

// -----

func.func @f(%x: tensor<2x4x8xf32>, %w: tensor<8x12xf32>, %b: tensor<1x12xf32>) {
  // expected-error @+1 {{'triax.linear' op bias shape [1, 12] does not match [12]}}
  %y = triax.linear %x, %w, %b : (tensor<2x4x8xf32>, tensor<8x12xf32>, tensor<1x12xf32>) -> tensor<2x4x12xf32>
  return
}

// -----

func.func @f(%x: tensor<2x4x8xf32>, %w: tensor<12x8xf32>, %b: tensor<8xf32>) {
  // expected-error @+1 {{'triax.linear' op bias shape [8] does not match [12]}}
  %y = triax.linear %x, %w, %b {transpose_weight} : (tensor<2x4x8xf32>, tensor<12x8xf32>, tensor<8xf32>) -> tensor<2x4x12xf32>
  return
}

// -----

func.func @f(%x: tensor<2x4x8xf32>, %w: tensor<8x12xbf16>) {
  // expected-error @+1 {{'triax.linear' op mixes element types 'f32' and 'bf16'; expected one float type}}
  %y = triax.linear %x, %w : (tensor<2x4x8xf32>, tensor<8x12xbf16>) -> tensor<2x4x12xf32>
  return
}

// -----

func.func @f(%x: tensor<2x4x8xbf16>, %w: tensor<8x12xbf16>, %b: tensor<12xf32>) {
  // expected-error @+1 {{'triax.linear' op mixes element types 'bf16' and 'f32'; expected one float type}}
  %y = triax.linear %x, %w, %b : (tensor<2x4x8xbf16>, tensor<8x12xbf16>, tensor<12xf32>) -> tensor<2x4x12xbf16>
  return
}

// -----

// The result's element type is checked too: the operands' or f32 (bf16
// operands may give an f32 result, f32 operands no bf16 one).
func.func @f(%x: tensor<2x4x8xf32>, %w: tensor<8x12xf32>) {
  // expected-error @+1 {{'triax.linear' op result element type 'bf16' must be the input's 'f32' or f32}}
  %y = triax.linear %x, %w : (tensor<2x4x8xf32>, tensor<8x12xf32>) -> tensor<2x4x12xbf16>
  return
}

// -----

func.func @f(%x: tensor<2x4x8xf32>, %w: tensor<8x12xf32>) {
  // expected-error @+1 {{'triax.linear' op result shape [2, 4, 8] does not match the expected shape [2, 4, 12]}}
  %y = triax.linear %x, %w : (tensor<2x4x8xf32>, tensor<8x12xf32>) -> tensor<2x4x8xf32>
  return
}

// -----

func.func @f(%x: tensor<2x4x8xf32>, %w: tensor<16x8xf32>) {
  // expected-error @+1 {{'triax.linear' op result shape [2, 4, 8] does not match the expected shape [2, 4, 16]}}
  %y = triax.linear %x, %w {transpose_weight} : (tensor<2x4x8xf32>, tensor<16x8xf32>) -> tensor<2x4x8xf32>
  return
}

// -----

func.func @f(%x: tensor<2x4x8xf32>, %w: tensor<8x12xf32>) {
  // expected-error @+1 {{'triax.linear' op result shape [8, 12] does not match the expected shape [2, 4, 12]}}
  %y = triax.linear %x, %w : (tensor<2x4x8xf32>, tensor<8x12xf32>) -> tensor<8x12xf32>
  return
}

// -----

// ODS: f16 is not a compute type.
func.func @f(%x: tensor<2x4x8xf16>, %w: tensor<8x12xf16>) {
  // expected-error @+1 {{'triax.linear' op operand #0 must be ranked tensor of 32-bit float or bfloat16 type values, but got 'tensor<2x4x8xf16>'}}
  %y = triax.linear %x, %w : (tensor<2x4x8xf16>, tensor<8x12xf16>) -> tensor<2x4x12xf16>
  return
}

//===----------------------------------------------------------------------===//
// triax.layer_norm, triax.rms_norm
//===----------------------------------------------------------------------===//

// -----

func.func @f(%x: tensor<f32>, %w: tensor<8xf32>) {
  // expected-error @+1 {{'triax.layer_norm' op input must have rank >= 1, got 'tensor<f32>'}}
  %y = triax.layer_norm %x, %w, %w : (tensor<f32>, tensor<8xf32>, tensor<8xf32>) -> tensor<f32>
  return
}

// -----

func.func @f(%x: tensor<2x4x8xf32>, %w: tensor<4xf32>, %b: tensor<8xf32>) {
  // expected-error @+1 {{'triax.layer_norm' op weight and bias must be [8], got [4]}}
  %y = triax.layer_norm %x, %w, %b : (tensor<2x4x8xf32>, tensor<4xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  return
}

// -----

func.func @f(%x: tensor<2x4x8xf32>, %w: tensor<8xf32>, %b: tensor<4x8xf32>) {
  // expected-error @+1 {{'triax.layer_norm' op weight and bias must be [8], got [4, 8]}}
  %y = triax.layer_norm %x, %w, %b : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<4x8xf32>) -> tensor<2x4x8xf32>
  return
}

// -----

func.func @f(%x: tensor<2x4x8xf32>, %w: tensor<8xf32>) {
  // expected-error @+1 {{'triax.layer_norm' op result type 'tensor<2x4x8xbf16>' must equal the input type 'tensor<2x4x8xf32>'}}
  %y = triax.layer_norm %x, %w, %w : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x4x8xbf16>
  return
}

// -----

func.func @f(%x: tensor<2x4x8xf32>, %w: tensor<8xf32>) {
  // expected-error @+1 {{'triax.layer_norm' op result type 'tensor<8x4x2xf32>' must equal the input type 'tensor<2x4x8xf32>'}}
  %y = triax.layer_norm %x, %w, %w : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<8x4x2xf32>
  return
}

// -----

func.func @f(%x: tensor<2x4x8xf32>, %w: tensor<8xf32>) {
  // expected-error @+1 {{'triax.layer_norm' op eps must be > 0, got 0.000000e+00}}
  %y = triax.layer_norm %x, %w, %w {eps = 0.0 : f64} : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  return
}

// -----

func.func @f(%x: tensor<2x4x8xf32>, %w: tensor<8xbf16>, %b: tensor<8xf32>) {
  // expected-error @+1 {{'triax.layer_norm' op mixes element types 'f32' and 'bf16'; expected one float type}}
  %y = triax.layer_norm %x, %w, %b : (tensor<2x4x8xf32>, tensor<8xbf16>, tensor<8xf32>) -> tensor<2x4x8xf32>
  return
}

// -----

// ODS: eps is an f64 attribute.
func.func @f(%x: tensor<2x4x8xf32>, %w: tensor<8xf32>) {
  // expected-error @+1 {{'triax.layer_norm' op attribute 'eps' failed to satisfy constraint: 64-bit float attribute}}
  %y = triax.layer_norm %x, %w, %w {eps = 1.0e-5 : f32} : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  return
}

// -----

func.func @f(%x: tensor<f32>, %w: tensor<8xf32>) {
  // expected-error @+1 {{'triax.rms_norm' op input must have rank >= 1, got 'tensor<f32>'}}
  %y = triax.rms_norm %x, %w : (tensor<f32>, tensor<8xf32>) -> tensor<f32>
  return
}

// -----

func.func @f(%x: tensor<2x4x8xf32>, %w: tensor<16xf32>) {
  // expected-error @+1 {{'triax.rms_norm' op weight must be [8], got [16]}}
  %y = triax.rms_norm %x, %w : (tensor<2x4x8xf32>, tensor<16xf32>) -> tensor<2x4x8xf32>
  return
}

// -----

func.func @f(%x: tensor<2x4x8xf32>, %w: tensor<8xf32>) {
  // expected-error @+1 {{'triax.rms_norm' op result type 'tensor<2x4xf32>' must equal the input type 'tensor<2x4x8xf32>'}}
  %y = triax.rms_norm %x, %w : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4xf32>
  return
}

// -----

func.func @f(%x: tensor<2x4x8xf32>, %w: tensor<8xf32>) {
  // expected-error @+1 {{'triax.rms_norm' op eps must be > 0, got -1.000000e-05}}
  %y = triax.rms_norm %x, %w {eps = -1.0e-5 : f64} : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  return
}

// -----

func.func @f(%x: tensor<2x4x8xbf16>, %w: tensor<8xf32>) {
  // expected-error @+1 {{'triax.rms_norm' op mixes element types 'bf16' and 'f32'; expected one float type}}
  %y = triax.rms_norm %x, %w : (tensor<2x4x8xbf16>, tensor<8xf32>) -> tensor<2x4x8xbf16>
  return
}

//===----------------------------------------------------------------------===//
// triax.attention
//===----------------------------------------------------------------------===//

// -----

func.func @f(%q: tensor<4x8xf32>, %k: tensor<2x4x8xf32>) {
  // expected-error @+1 {{'triax.attention' op query, key and value must be [batch, seq, features], got 'tensor<4x8xf32>'}}
  %a = triax.attention %q, %k, %k heads = 2 : (tensor<4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @f(%q: tensor<2x4x8xf32>, %v: tensor<2x4x2x4xf32>) {
  // expected-error @+1 {{'triax.attention' op query, key and value must be [batch, seq, features], got 'tensor<2x4x2x4xf32>'}}
  %a = triax.attention %q, %q, %v heads = 2 : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x2x4xf32>) -> tensor<2x4x8xf32>
  return
}

// -----

func.func @f(%q: tensor<2x4x8xf32>, %v: tensor<2x4x4xf32>) {
  // expected-error @+1 {{'triax.attention' op key 'tensor<2x4x8xf32>' and value 'tensor<2x4x4xf32>' must have the same shape}}
  %a = triax.attention %q, %q, %v heads = 2 : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x4xf32>) -> tensor<2x4x8xf32>
  return
}

// -----

func.func @f(%q: tensor<2x4x8xf32>, %k: tensor<3x4x8xf32>) {
  // expected-error @+1 {{'triax.attention' op query 'tensor<2x4x8xf32>' and key 'tensor<3x4x8xf32>' must agree on [batch, seq]}}
  %a = triax.attention %q, %k, %k heads = 2 : (tensor<2x4x8xf32>, tensor<3x4x8xf32>, tensor<3x4x8xf32>) -> tensor<2x4x8xf32>
  return
}

// -----

func.func @f(%q: tensor<2x4x8xf32>, %k: tensor<2x6x8xf32>) {
  // expected-error @+1 {{'triax.attention' op query 'tensor<2x4x8xf32>' and key 'tensor<2x6x8xf32>' must agree on [batch, seq]}}
  %a = triax.attention %q, %k, %k heads = 2 : (tensor<2x4x8xf32>, tensor<2x6x8xf32>, tensor<2x6x8xf32>) -> tensor<2x4x8xf32>
  return
}

// -----

func.func @f(%q: tensor<2x4x8xf32>) {
  // expected-error @+1 {{'triax.attention' op heads and kv_heads must be >= 1, got 0 and 0}}
  %a = triax.attention %q, %q, %q heads = 0 : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return
}

// -----

func.func @f(%q: tensor<2x4x8xf32>) {
  // expected-error @+1 {{'triax.attention' op heads and kv_heads must be >= 1, got -2 and -2}}
  %a = triax.attention %q, %q, %q heads = -2 : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return
}

// -----

func.func @f(%q: tensor<2x4x8xf32>) {
  // expected-error @+1 {{'triax.attention' op heads and kv_heads must be >= 1, got 2 and 0}}
  %a = triax.attention %q, %q, %q heads = 2 kv_heads = 0 : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return
}

// -----

func.func @f(%q: tensor<2x4x8xf32>) {
  // expected-error @+1 {{'triax.attention' op hidden size 8 is not divisible by heads 3}}
  %a = triax.attention %q, %q, %q heads = 3 : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return
}

// -----

func.func @f(%q: tensor<2x4x8xf32>, %k: tensor<2x4x6xf32>) {
  // expected-error @+1 {{'triax.attention' op heads 4 is not divisible by kv_heads 3}}
  %a = triax.attention %q, %k, %k heads = 4 kv_heads = 3 : (tensor<2x4x8xf32>, tensor<2x4x6xf32>, tensor<2x4x6xf32>) -> tensor<2x4x8xf32>
  return
}

// -----

// Without kv_heads, keys and values have as many features as the queries.
func.func @f(%q: tensor<2x4x8xf32>, %k: tensor<2x4x4xf32>) {
  // expected-error @+1 {{'triax.attention' op key and value have 4 features, expected kv_heads * head_dim = 4 * 2 = 8}}
  %a = triax.attention %q, %k, %k heads = 4 : (tensor<2x4x8xf32>, tensor<2x4x4xf32>, tensor<2x4x4xf32>) -> tensor<2x4x8xf32>
  return
}

// -----

func.func @f(%q: tensor<2x4x8xf32>) {
  // expected-error @+1 {{'triax.attention' op key and value have 8 features, expected kv_heads * head_dim = 2 * 2 = 4}}
  %a = triax.attention %q, %q, %q heads = 4 kv_heads = 2 : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return
}

// -----

func.func @f(%q: tensor<2x4x8xf32>) {
  // expected-error @+1 {{'triax.attention' op result type 'tensor<2x4x4xf32>' must equal the query type 'tensor<2x4x8xf32>'}}
  %a = triax.attention %q, %q, %q heads = 2 : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x4xf32>
  return
}

// -----

func.func @f(%q: tensor<2x4x8xf32>) {
  // expected-error @+1 {{'triax.attention' op result type 'tensor<2x4x8xbf16>' must equal the query type 'tensor<2x4x8xf32>'}}
  %a = triax.attention %q, %q, %q heads = 2 : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xbf16>
  return
}

// -----

func.func @f(%q: tensor<2x4x8xf32>, %k: tensor<2x4x8xbf16>) {
  // expected-error @+1 {{'triax.attention' op mixes element types 'f32' and 'bf16'; expected one float type}}
  %a = triax.attention %q, %k, %k heads = 2 : (tensor<2x4x8xf32>, tensor<2x4x8xbf16>, tensor<2x4x8xbf16>) -> tensor<2x4x8xf32>
  return
}

//===----------------------------------------------------------------------===//
// Elementwise ops (ODS constraints)
//===----------------------------------------------------------------------===//

// -----

func.func @f(%x: tensor<2x4xf16>) {
  // expected-error @+1 {{'triax.gelu' op operand #0 must be ranked tensor of 32-bit float or bfloat16 type values, but got 'tensor<2x4xf16>'}}
  %y = triax.gelu %x : tensor<2x4xf16>
  return
}

// -----

func.func @f(%x: tensor<2x4xf32>, %y: tensor<2x8xf32>) {
  // expected-error @+1 {{'triax.add' op all non-scalar operands/results must have the same shape and base type}}
  %z = "triax.add"(%x, %y) : (tensor<2x4xf32>, tensor<2x8xf32>) -> tensor<2x4xf32>
  return
}

// -----

func.func @f(%x: tensor<2x4xf32>, %y: tensor<2x4xbf16>) {
  // expected-error @+1 {{'triax.add' op requires the same type for all operands and results}}
  %z = "triax.add"(%x, %y) : (tensor<2x4xf32>, tensor<2x4xbf16>) -> tensor<2x4xf32>
  return
}

// -----

func.func @f(%x: tensor<2x4xf32>) {
  // expected-error @+1 {{'triax.silu' op requires the same type for all operands and results}}
  %z = "triax.silu"(%x) : (tensor<2x4xf32>) -> tensor<2x4xbf16>
  return
}

// -----

func.func @f(%x: tensor<*xf32>) {
  // expected-error @+1 {{'triax.mul' op operand #0 must be ranked tensor of 32-bit float or bfloat16 type values, but got 'tensor<*xf32>'}}
  %z = "triax.mul"(%x, %x) : (tensor<*xf32>, tensor<*xf32>) -> tensor<*xf32>
  return
}

//===----------------------------------------------------------------------===//
// triax.cross_entropy
//===----------------------------------------------------------------------===//

// -----

func.func @f(%l: tensor<2x4x16xf32>, %t: tensor<2x8xi32>) {
  // expected-error @+1 {{'triax.cross_entropy' op logits [2, 4, 16] must be the targets' shape [2, 8] plus a vocabulary dimension}}
  %loss = triax.cross_entropy %l, %t : (tensor<2x4x16xf32>, tensor<2x8xi32>) -> tensor<f32>
  return
}

// -----

func.func @f(%l: tensor<2x4x16xf32>, %t: tensor<2x4x16xi32>) {
  // expected-error @+1 {{'triax.cross_entropy' op logits [2, 4, 16] must be the targets' shape [2, 4, 16] plus a vocabulary dimension}}
  %loss = triax.cross_entropy %l, %t : (tensor<2x4x16xf32>, tensor<2x4x16xi32>) -> tensor<f32>
  return
}

// -----

func.func @f(%l: tensor<8x16xf32>, %t: tensor<2x4xi32>) {
  // expected-error @+1 {{'triax.cross_entropy' op logits [8, 16] must be the targets' shape [2, 4] plus a vocabulary dimension}}
  %loss = triax.cross_entropy %l, %t : (tensor<8x16xf32>, tensor<2x4xi32>) -> tensor<f32>
  return
}

// -----

// A padded vocabulary's classes are at most the logits' columns.
func.func @f(%l: tensor<2x4x16xf32>, %t: tensor<2x4xi32>) {
  // expected-error @+1 {{'triax.cross_entropy' op classes 17 exceeds the logits' 16 columns}}
  %loss = triax.cross_entropy %l, %t {classes = 17 : i64} : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> tensor<f32>
  return
}

// -----

// ODS: classes is a positive count.
func.func @f(%l: tensor<2x4x16xf32>, %t: tensor<2x4xi32>) {
  // expected-error @+1 {{'triax.cross_entropy' op attribute 'classes' failed to satisfy constraint: 64-bit signless integer attribute whose value is positive}}
  %loss = triax.cross_entropy %l, %t {classes = 0 : i64} : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> tensor<f32>
  return
}

// -----

// ODS: the loss is an f32 scalar whatever the logits' dtype.
func.func @f(%l: tensor<2x4x16xbf16>, %t: tensor<2x4xi32>) {
  // expected-error @+1 {{'triax.cross_entropy' op result #0 must be 0D tensor of 32-bit float values, but got 'tensor<bf16>'}}
  %loss = triax.cross_entropy %l, %t : (tensor<2x4x16xbf16>, tensor<2x4xi32>) -> tensor<bf16>
  return
}

// -----

// Heads are cut along the feature dimension: it must be static.
func.func @dyn(%q: tensor<2x4x?xf32>, %k: tensor<2x4x8xf32>) -> tensor<2x4x?xf32> {
  // expected-error @+1 {{'triax.attention' op query, key and value need a static feature dimension (heads are cut along it), got 'tensor<2x4x?xf32>'}}
  %a = triax.attention %q, %k, %k heads = 2 : (tensor<2x4x?xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x?xf32>
  return %a : tensor<2x4x?xf32>
}

// -----

triax.model @m config = #triax.train_config<micro_batch = 1, seq = 2> {
  // expected-error @+1 {{unknown triax attribute 'triax.checkpoint'; expected 'triax.checkpoint_name', 'triax.checkpoint_transposed' or 'triax.valid_shape'}}
  triax.param @p : tensor<2xf32> init <zeros> {triax.checkpoint = "x"}
}

// -----

// triax.valid_shape: a leading block of the parameter's shape.
triax.model @m config = #triax.train_config<micro_batch = 1, seq = 2> {
  // expected-error @+1 {{'triax.param' op 'triax.valid_shape' must be a leading block of the parameter's shape 'tensor<8x4xf32>' (array<i64: ...>, one positive size per dimension, rank 1 or 2), got array<i64: 9, 4>}}
  triax.param @p : tensor<8x4xf32> init <zeros> {triax.valid_shape = array<i64: 9, 4>}
}

// -----

triax.model @m config = #triax.train_config<micro_batch = 1, seq = 2> {
  // expected-error @+1 {{'triax.param' op 'triax.valid_shape' must be a leading block of the parameter's shape 'tensor<8x4xf32>' (array<i64: ...>, one positive size per dimension, rank 1 or 2), got array<i64: 8>}}
  triax.param @p : tensor<8x4xf32> init <zeros> {triax.valid_shape = array<i64: 8>}
}

// -----

triax.model @m config = #triax.train_config<micro_batch = 1, seq = 2> {
  // expected-error @+1 {{'triax.param' op 'triax.valid_shape' and 'triax.checkpoint_name' together: a padded parameter is its own checkpoint tensor}}
  triax.param @p : tensor<8x4xf32> init <zeros> {triax.valid_shape = array<i64: 7, 4>, triax.checkpoint_name = "x"}
}

// -----

// expected-error @+1 {{'triax.model' op 'triax.valid_shape' applies to triax.param only}}
triax.model @m config = #triax.train_config<micro_batch = 1, seq = 2> attributes {triax.valid_shape = array<i64: 1>} {
}

// -----

// expected-error @+1 {{'triax.model' op 'triax.checkpoint_name' applies to triax.param only}}
triax.model @m config = #triax.train_config<micro_batch = 1, seq = 2> attributes {triax.checkpoint_name = "x"} {
}

// -----

triax.model @m config = #triax.train_config<micro_batch = 1, seq = 2> {
  // expected-error @+1 {{'triax.param' op 'triax.checkpoint_name' must be a non-empty string, got 3 : i64}}
  triax.param @p : tensor<2xf32> init <zeros> {triax.checkpoint_name = 3}
}

// -----

// triax.checkpoint_transposed: a unit attribute on a 2-D parameter that is
// its own checkpoint tensor.
triax.model @m config = #triax.train_config<micro_batch = 1, seq = 2> {
  // expected-error @+1 {{'triax.param' op 'triax.checkpoint_transposed' transposes a 2-D parameter (or each expert of a 3-D one), got 'tensor<2xf32>'}}
  triax.param @p : tensor<2xf32> init <zeros> {triax.checkpoint_transposed}
}

// -----

triax.model @m config = #triax.train_config<micro_batch = 1, seq = 2> {
  // expected-error @+1 {{'triax.param' op 'triax.checkpoint_transposed' is a unit attribute, got 1 : i64}}
  triax.param @p : tensor<2x3xf32> init <zeros> {triax.checkpoint_transposed = 1}
}

// -----

triax.model @m config = #triax.train_config<micro_batch = 1, seq = 2> {
  // expected-error @+1 {{'triax.param' op 'triax.checkpoint_transposed' and 'triax.checkpoint_name' together: a transposed parameter is its own tensor}}
  triax.param @p : tensor<2x3xf32> init <zeros> {triax.checkpoint_name = "q", triax.checkpoint_transposed}
}

// -----

// Stacked experts are transposed expert by expert, each its own tensor:
// the checkpoint name has one '*' for the expert's index.
triax.model @m config = #triax.train_config<micro_batch = 1, seq = 2> {
  // expected-error @+1 {{'triax.param' op 'triax.checkpoint_transposed' on stacked experts needs a 'triax.checkpoint_name' with one '*' (each expert's tensor)}}
  triax.param @w : tensor<4x2x3xf32> init <zeros> {triax.checkpoint_transposed}
}

// -----

triax.model @m config = #triax.train_config<micro_batch = 1, seq = 2> {
  // expected-error @+1 {{'triax.param' op 'triax.checkpoint_name' with a '*' names each expert of stacked experts (one '*', a 3-D parameter with 'triax.checkpoint_transposed'), got "experts.*.w1.weight"}}
  triax.param @w : tensor<4x2x3xf32> init <zeros> {triax.checkpoint_name = "experts.*.w1.weight"}
}

// -----

triax.model @m config = #triax.train_config<micro_batch = 1, seq = 2> {
  // expected-error @+1 {{'triax.param' op 'triax.checkpoint_name' with a '*' names each expert of stacked experts (one '*', a 3-D parameter with 'triax.checkpoint_transposed'), got "e.*.*"}}
  triax.param @w : tensor<4x2x3xf32> init <zeros> {triax.checkpoint_name = "e.*.*", triax.checkpoint_transposed}
}

// -----

// expected-error @+1 {{'triax.model' op 'triax.checkpoint_transposed' applies to triax.param only}}
triax.model @m config = #triax.train_config<micro_batch = 1, seq = 2> attributes {triax.checkpoint_transposed} {
}

// -----

// triax.rope: [batch, seq, heads*d] with even d, [batch, seq] positions.
func.func @rope_rank(%x: tensor<2x16xf32>, %p: tensor<2x4xi32>) -> tensor<2x16xf32> {
  // expected-error @+1 {{'triax.rope' op input must be [batch, seq, heads*d], got 'tensor<2x16xf32>'}}
  %r = triax.rope %x, %p heads = 2 : (tensor<2x16xf32>, tensor<2x4xi32>) -> tensor<2x16xf32>
  return %r : tensor<2x16xf32>
}

// -----

func.func @rope_positions(%x: tensor<2x4x16xf32>, %p: tensor<2x8xi32>) -> tensor<2x4x16xf32> {
  // expected-error @+1 {{'triax.rope' op positions must be [batch, seq] = [2, 4], got 'tensor<2x8xi32>'}}
  %r = triax.rope %x, %p heads = 2 : (tensor<2x4x16xf32>, tensor<2x8xi32>) -> tensor<2x4x16xf32>
  return %r : tensor<2x4x16xf32>
}

// -----

func.func @rope_heads(%x: tensor<2x4x12xf32>, %p: tensor<2x4xi32>) -> tensor<2x4x12xf32> {
  // expected-error @+1 {{'triax.rope' op heads 4 must divide the 12 features into heads of an even size}}
  %r = triax.rope %x, %p heads = 4 : (tensor<2x4x12xf32>, tensor<2x4xi32>) -> tensor<2x4x12xf32>
  return %r : tensor<2x4x12xf32>
}

// -----

func.func @rope_theta(%x: tensor<2x4x16xf32>, %p: tensor<2x4xi32>) -> tensor<2x4x16xf32> {
  // expected-error @+1 {{'triax.rope' op theta must be positive, got 0}}
  %r = triax.rope %x, %p heads = 2 {theta = 0.0 : f64} : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> tensor<2x4x16xf32>
  return %r : tensor<2x4x16xf32>
}

// -----

func.func @rope_result(%x: tensor<2x4x16xf32>, %p: tensor<2x4xi32>) -> tensor<2x4x16xbf16> {
  // expected-error @+1 {{'triax.rope' op result type 'tensor<2x4x16xbf16>' must be the input's 'tensor<2x4x16xf32>'}}
  %r = triax.rope %x, %p heads = 2 : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> tensor<2x4x16xbf16>
  return %r : tensor<2x4x16xbf16>
}

// -----

func.func @convert_shape(%x: tensor<2x4xf32>) {
  // expected-error @+1 {{'triax.convert' op all non-scalar operands/results must have the same shape and base type}}
  %y = triax.convert %x : tensor<2x4xf32> to tensor<4x2xbf16>
  return
}

// -----

// Layer ops (and their kernels) take f32 or bf16 tensors only.
func.func @convert_f16(%x: tensor<2x4xf32>) {
  // expected-error @+1 {{'triax.convert' op result #0 must be ranked tensor of 32-bit float or bfloat16 type values, but got 'tensor<2x4xf16>'}}
  %y = triax.convert %x : tensor<2x4xf32> to tensor<2x4xf16>
  return
}

//===----------------------------------------------------------------------===//
// triax.attention: context parallelism
//===----------------------------------------------------------------------===//

// -----

func.func @f(%q: tensor<2x4x8xf32>, %k: tensor<2x6x8xf32>) {
  // expected-error @+1 {{'triax.attention' op context_parallel: the key's 6 tokens are not a whole number of members' 4}}
  %a = triax.attention %q, %k, %k heads = 2 context_parallel over @mesh ["cp"] : (tensor<2x4x8xf32>, tensor<2x6x8xf32>, tensor<2x6x8xf32>) -> tensor<2x4x8xf32>
  return
}

// -----

func.func @f(%q: tensor<2x3x8xf32>, %k: tensor<2x6x8xf32>) {
  // expected-error @+1 {{'triax.attention' op context_parallel: the query's 3 tokens are not two equal chunks (chunk c and its mirror)}}
  %a = triax.attention %q, %k, %k heads = 2 context_parallel over @mesh ["cp"] : (tensor<2x3x8xf32>, tensor<2x6x8xf32>, tensor<2x6x8xf32>) -> tensor<2x3x8xf32>
  return
}

// -----

func.func @f(%q: tensor<2x4x8xf32>, %k: tensor<2x8x8xf32>) {
  // expected-error @+1 {{'triax.attention' op context_parallel ring: the key's 8 tokens must be this member's own, as the query's 4}}
  %a = triax.attention %q, %k, %k heads = 2 context_parallel over @mesh ["cp"] ring : (tensor<2x4x8xf32>, tensor<2x8x8xf32>, tensor<2x8x8xf32>) -> tensor<2x4x8xf32>
  return
}

// -----

func.func @f(%q: tensor<2x4x8xf32>) {
  // expected-error @+1 {{'triax.attention' op ring needs context_parallel over a mesh group}}
  %a = triax.attention %q, %q, %q heads = 2 ring : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return
}

// -----

func.func @f(%q: tensor<2x4x8xf32>, %k: tensor<2x8x8xf32>) {
  // expected-error @+1 {{'triax.attention_grad' op context_parallel ring: the key's 8 tokens must be this member's own, as the query's 4}}
  %a:3 = triax.attention_grad %q, %k, %k, %q heads = 2 context_parallel over @mesh ["cp"] ring : (tensor<2x4x8xf32>, tensor<2x8x8xf32>, tensor<2x8x8xf32>, tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<2x8x8xf32>, tensor<2x8x8xf32>)
  return
}

// -----

func.func @f(%q: tensor<2x4x8xf32>, %k: tensor<3x8x8xf32>) {
  // expected-error @+1 {{'triax.attention' op query 'tensor<2x4x8xf32>' and key 'tensor<3x8x8xf32>' must agree on [batch, seq]}}
  %a = triax.attention %q, %k, %k heads = 2 context_parallel over @mesh ["cp"] : (tensor<2x4x8xf32>, tensor<3x8x8xf32>, tensor<3x8x8xf32>) -> tensor<2x4x8xf32>
  return
}

// -----

// The rows' log-sum-exp is [batch, heads, seq] f32.
func.func @f(%q: tensor<2x4x8xbf16>) {
  // expected-error @+1 {{'triax.attention' op log-sum-exp must be [batch, heads, seq] = [2, 2, 4] f32, got 'tensor<2x4x2xf32>'}}
  %a, %l = triax.attention %q, %q, %q heads = 2 : (tensor<2x4x8xbf16>, tensor<2x4x8xbf16>, tensor<2x4x8xbf16>) -> (tensor<2x4x8xbf16>, tensor<2x4x2xf32>)
  return
}

// -----

func.func @f(%q: tensor<2x4x8xbf16>) {
  // expected-error @+1 {{'triax.attention' op result #1 must be ranked tensor of 32-bit float values, but got 'tensor<2x2x4xbf16>'}}
  %a, %l = triax.attention %q, %q, %q heads = 2 : (tensor<2x4x8xbf16>, tensor<2x4x8xbf16>, tensor<2x4x8xbf16>) -> (tensor<2x4x8xbf16>, tensor<2x2x4xbf16>)
  return
}

// -----

// A norm's row statistics: the mean and rstd, each the input's shape
// without its last dimension.
func.func @f(%x: tensor<2x4x8xf32>, %w: tensor<8xf32>) {
  // expected-error @+1 {{'triax.layer_norm' op the row statistics are the mean and rstd (2 values), got 1}}
  %y, %m = triax.layer_norm %x, %w, %w : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x4x8xf32>, tensor<2x4xf32>)
  return
}

// -----

func.func @f(%x: tensor<2x4x8xf32>, %w: tensor<8xf32>) {
  // expected-error @+1 {{'triax.rms_norm' op a row statistic must be the input's shape without its last dimension, [2, 4], got [2, 8]}}
  %y, %r = triax.rms_norm %x, %w : (tensor<2x4x8xf32>, tensor<8xf32>) -> (tensor<2x4x8xf32>, tensor<2x8xf32>)
  return
}
