// Every verifier branch of triax.fused_elementwise (TriaxFusedOps.cpp) and
// of its terminator. Each message names the actual and the expected value.
// RUN: triax-opt %s -split-input-file -verify-diagnostics

func.func @no_results(%a: tensor<4xf32>) {
  // expected-error @+1 {{'triax.fused_elementwise' op must have at least one result}}
  triax.fused_elementwise(%a) : (tensor<4xf32>) -> () {
  ^bb0(%x: f32):
    triax.fused_yield
  }
  return
}

// -----

func.func @input_shape(%a: tensor<4xf32>, %b: tensor<2x2xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'triax.fused_elementwise' op input #1 has type 'tensor<2x2xf32>' but every input and result must have the shape of result #0 ('tensor<4xf32>')}}
  %r = triax.fused_elementwise(%a, %b) : (tensor<4xf32>, tensor<2x2xf32>) -> tensor<4xf32> {
  ^bb0(%x: f32, %y: f32):
    %s = arith.addf %x, %y : f32
    triax.fused_yield %s : f32
  }
  return %r : tensor<4xf32>
}

// -----

func.func @result_shape(%a: tensor<4xf32>) -> (tensor<4xf32>, tensor<8xf32>) {
  // expected-error @+1 {{'triax.fused_elementwise' op result #1 has type 'tensor<8xf32>' but every input and result must have the shape of result #0 ('tensor<4xf32>')}}
  %r:2 = triax.fused_elementwise(%a) : (tensor<4xf32>) -> (tensor<4xf32>, tensor<8xf32>) {
  ^bb0(%x: f32):
    triax.fused_yield %x, %x : f32, f32
  }
  return %r#0, %r#1 : tensor<4xf32>, tensor<8xf32>
}

// -----

func.func @arg_count(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'triax.fused_elementwise' op region has 1 arguments but there are 2 inputs}}
  %r = triax.fused_elementwise(%a, %b) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%x: f32):
    triax.fused_yield %x : f32
  }
  return %r : tensor<4xf32>
}

// -----

func.func @arg_type(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'triax.fused_elementwise' op region argument #0 has type 'tensor<4xf32>' but must be the compute type of input #0 ('f32')}}
  %r = triax.fused_elementwise(%a) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%x: tensor<4xf32>):
    %one = arith.constant 1.0 : f32
    triax.fused_yield %one : f32
  }
  return %r : tensor<4xf32>
}

// -----

func.func @yield_count(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'triax.fused_elementwise' op yields 2 values but there are 1 results}}
  %r = triax.fused_elementwise(%a) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%x: f32):
    triax.fused_yield %x, %x : f32, f32
  }
  return %r : tensor<4xf32>
}

// -----

// A bf16 result is computed in f32 and rounded when stored: the region
// yields f32 for it, not bf16.
func.func @yield_type(%a: tensor<4xf32>) -> tensor<4xbf16> {
  // expected-error @+1 {{'triax.fused_elementwise' op yielded value #0 has type 'bf16' but must be the compute type of result #0 ('f32')}}
  %r = triax.fused_elementwise(%a) : (tensor<4xf32>) -> tensor<4xbf16> {
  ^bb0(%x: f32):
    %t = arith.truncf %x : f32 to bf16
    triax.fused_yield %t : bf16
  }
  return %r : tensor<4xbf16>
}

// -----

func.func @arg_compute_type(%a: tensor<4xbf16>) -> tensor<4xf32> {
  // expected-error @+1 {{'triax.fused_elementwise' op region argument #0 has type 'bf16' but must be the compute type of input #0 ('f32')}}
  %r = triax.fused_elementwise(%a) : (tensor<4xbf16>) -> tensor<4xf32> {
  ^bb0(%x: bf16):
    %e = arith.extf %x : bf16 to f32
    triax.fused_yield %e : f32
  }
  return %r : tensor<4xf32>
}

// -----

func.func @terminator(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'triax.fused_elementwise' op region must end in triax.fused_yield}}
  %r = triax.fused_elementwise(%a) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%x: f32):
    llvm.unreachable
  }
  return %r : tensor<4xf32>
}

// -----

func.func @memory_effect(%a: tensor<4xf32>) -> tensor<4xf32> {
  %r = triax.fused_elementwise(%a) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%x: f32):
    // expected-error @+1 {{'memref.alloca' op cannot be in a triax.fused_elementwise body: its ops must be scalar computations without regions or memory effects}}
    %m = memref.alloca() : memref<4xf32>
    triax.fused_yield %x : f32
  }
  return %r : tensor<4xf32>
}

// -----

func.func @tensor_in_body(%a: tensor<4xf32>) -> tensor<4xf32> {
  %r = triax.fused_elementwise(%a) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%x: f32):
    // expected-error @+1 {{'arith.constant' op cannot be in a triax.fused_elementwise body: 'tensor<4xf32>' is not a scalar}}
    %t = arith.constant dense<1.0> : tensor<4xf32>
    triax.fused_yield %x : f32
  }
  return %r : tensor<4xf32>
}

// -----

func.func @yield_parent(%a: f32) {
  // expected-error @+1 {{'triax.fused_yield' op expects parent op 'triax.fused_elementwise'}}
  triax.fused_yield %a : f32
}
