// Every verifier branch of the backward and optimizer ops (the ops
// triax-autodiff builds), each message naming the actual and expected value.
// RUN: triax-opt %s -split-input-file -verify-diagnostics

//===----------------------------------------------------------------------===//
// triax.linear_weight_grad
//===----------------------------------------------------------------------===//

func.func @f(%x: tensor<2x4x8xf32>, %dy: tensor<2x5x12xf32>) {
  // expected-error @+1 {{'triax.linear_weight_grad' op input 'tensor<2x4x8xf32>' and result gradient 'tensor<2x5x12xf32>' must agree on every dimension but the last}}
  %dw = triax.linear_weight_grad %x, %dy : (tensor<2x4x8xf32>, tensor<2x5x12xf32>) -> tensor<8x12xf32>
  return
}

// -----

func.func @f(%x: tensor<2x4x8xf32>, %dy: tensor<8x12xf32>) {
  // expected-error @+1 {{'triax.linear_weight_grad' op input 'tensor<2x4x8xf32>' and result gradient 'tensor<8x12xf32>' must agree on every dimension but the last}}
  %dw = triax.linear_weight_grad %x, %dy : (tensor<2x4x8xf32>, tensor<8x12xf32>) -> tensor<8x12xf32>
  return
}

// -----

func.func @f(%x: tensor<f32>, %dy: tensor<f32>) {
  // expected-error @+1 {{'triax.linear_weight_grad' op input 'tensor<f32>' and result gradient 'tensor<f32>' must agree on every dimension but the last}}
  %dw = triax.linear_weight_grad %x, %dy : (tensor<f32>, tensor<f32>) -> tensor<1x1xf32>
  return
}

// -----

func.func @f(%x: tensor<2x4x8xf32>, %dy: tensor<2x4x12xf32>) {
  // expected-error @+1 {{'triax.linear_weight_grad' op result shape [12, 8] does not match the expected shape [8, 12]}}
  %dw = triax.linear_weight_grad %x, %dy : (tensor<2x4x8xf32>, tensor<2x4x12xf32>) -> tensor<12x8xf32>
  return
}

// -----

// With transpose_weight the gradient has the weight's [out, in] layout.
func.func @f(%x: tensor<2x4x8xf32>, %dy: tensor<2x4x12xf32>) {
  // expected-error @+1 {{'triax.linear_weight_grad' op result shape [8, 12] does not match the expected shape [12, 8]}}
  %dw = triax.linear_weight_grad %x, %dy {transpose_weight} : (tensor<2x4x8xf32>, tensor<2x4x12xf32>) -> tensor<8x12xf32>
  return
}

//===----------------------------------------------------------------------===//
// triax.bias_grad
//===----------------------------------------------------------------------===//

// -----

func.func @f(%dy: tensor<f32>) {
  // expected-error @+1 {{'triax.bias_grad' op result gradient must have rank >= 1, got 'tensor<f32>'}}
  %db = triax.bias_grad %dy : tensor<f32> -> tensor<1xf32>
  return
}

// -----

func.func @f(%dy: tensor<2x4x12xf32>) {
  // expected-error @+1 {{'triax.bias_grad' op result shape [4, 12] does not match the expected shape [12]}}
  %db = triax.bias_grad %dy : tensor<2x4x12xf32> -> tensor<4x12xf32>
  return
}

//===----------------------------------------------------------------------===//
// triax.embedding_grad
//===----------------------------------------------------------------------===//

// -----

func.func @f(%t: tensor<2x4xi32>, %dy: tensor<2x4x8xf32>) {
  // expected-error @+1 {{'triax.embedding_grad' op table gradient must be [vocab, hidden], got 'tensor<16x8x1xf32>'}}
  %dt = triax.embedding_grad %t, %dy : (tensor<2x4xi32>, tensor<2x4x8xf32>) -> tensor<16x8x1xf32>
  return
}

// -----

func.func @f(%t: tensor<2x4xi32>, %dy: tensor<2x4x12xf32>) {
  // expected-error @+1 {{'triax.embedding_grad' op result gradient shape [2, 4, 12] does not match the expected [2, 4, 8]}}
  %dt = triax.embedding_grad %t, %dy : (tensor<2x4xi32>, tensor<2x4x12xf32>) -> tensor<16x8xf32>
  return
}

// -----

func.func @f(%t: tensor<2x4xi32>, %dy: tensor<8x8xf32>) {
  // expected-error @+1 {{'triax.embedding_grad' op result gradient shape [8, 8] does not match the expected [2, 4, 8]}}
  %dt = triax.embedding_grad %t, %dy : (tensor<2x4xi32>, tensor<8x8xf32>) -> tensor<16x8xf32>
  return
}

//===----------------------------------------------------------------------===//
// triax.layer_norm_grad, triax.rms_norm_grad
//===----------------------------------------------------------------------===//

// -----

func.func @f(%x: tensor<2x4x8xf32>, %w: tensor<4xf32>, %dy: tensor<2x4x8xf32>) {
  // expected-error @+1 {{'triax.layer_norm_grad' op weight must be [8], got [4]}}
  %dx, %dw, %db = triax.layer_norm_grad %x, %w, %dy : (tensor<2x4x8xf32>, tensor<4xf32>, tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

// The input gradient has the input's type.
func.func @f(%x: tensor<2x4x8xf32>, %w: tensor<8xf32>, %dy: tensor<2x4x8xf32>) {
  // expected-error @+1 {{'triax.layer_norm_grad' op result type 'tensor<2x4x8xbf16>' must equal the input type 'tensor<2x4x8xf32>'}}
  %dx, %dw, %db = triax.layer_norm_grad %x, %w, %dy : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<2x4x8xf32>) -> (tensor<2x4x8xbf16>, tensor<8xf32>, tensor<8xf32>)
  return
}

// -----

func.func @f(%x: tensor<2x4x8xf32>, %w: tensor<8xf32>, %dy: tensor<2x4x8xf32>) {
  // expected-error @+1 {{'triax.layer_norm_grad' op eps must be > 0, got 0.000000e+00}}
  %dx, %dw, %db = triax.layer_norm_grad %x, %w, %dy {eps = 0.0 : f64} : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>)
  return
}

// -----

func.func @f(%x: tensor<2x4x8xf32>, %w: tensor<8xbf16>, %dy: tensor<2x4x8xf32>) {
  // expected-error @+1 {{'triax.layer_norm_grad' op mixes element types 'f32' and 'bf16'; expected one float type}}
  %dx, %dw, %db = triax.layer_norm_grad %x, %w, %dy : (tensor<2x4x8xf32>, tensor<8xbf16>, tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<8xbf16>, tensor<8xbf16>)
  return
}

// -----

func.func @f(%x: tensor<2x4x8xf32>, %w: tensor<8xf32>, %dy: tensor<2x8x8xf32>) {
  // expected-error @+1 {{'triax.layer_norm_grad' op result gradient type 'tensor<2x8x8xf32>' must equal 'tensor<2x4x8xf32>'}}
  %dx, %dw, %db = triax.layer_norm_grad %x, %w, %dy : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<2x8x8xf32>) -> (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>)
  return
}

// -----

func.func @f(%x: tensor<2x4x8xf32>, %w: tensor<8xf32>, %dy: tensor<2x4x8xf32>) {
  // expected-error @+1 {{'triax.layer_norm_grad' op weight gradient type 'tensor<4xf32>' must equal 'tensor<8xf32>'}}
  %dx, %dw, %db = triax.layer_norm_grad %x, %w, %dy : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<4xf32>, tensor<8xf32>)
  return
}

// -----

func.func @f(%x: tensor<2x4x8xf32>, %w: tensor<8xf32>, %dy: tensor<2x4x8xf32>) {
  // expected-error @+1 {{'triax.layer_norm_grad' op bias gradient type 'tensor<8xbf16>' must equal 'tensor<8xf32>'}}
  %dx, %dw, %db = triax.layer_norm_grad %x, %w, %dy : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xbf16>)
  return
}

// -----

func.func @f(%x: tensor<f32>, %w: tensor<8xf32>, %dy: tensor<f32>) {
  // expected-error @+1 {{'triax.rms_norm_grad' op input must have rank >= 1, got 'tensor<f32>'}}
  %dx, %dw = triax.rms_norm_grad %x, %w, %dy : (tensor<f32>, tensor<8xf32>, tensor<f32>) -> (tensor<f32>, tensor<8xf32>)
  return
}

// -----

func.func @f(%x: tensor<2x4x8xf32>, %w: tensor<16xf32>, %dy: tensor<2x4x8xf32>) {
  // expected-error @+1 {{'triax.rms_norm_grad' op weight must be [8], got [16]}}
  %dx, %dw = triax.rms_norm_grad %x, %w, %dy : (tensor<2x4x8xf32>, tensor<16xf32>, tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<16xf32>)
  return
}

// -----

func.func @f(%x: tensor<2x4x8xf32>, %w: tensor<8xf32>, %dy: tensor<2x4x8xf32>) {
  // expected-error @+1 {{'triax.rms_norm_grad' op result type 'tensor<2x4x4xf32>' must equal the input type 'tensor<2x4x8xf32>'}}
  %dx, %dw = triax.rms_norm_grad %x, %w, %dy : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<2x4x8xf32>) -> (tensor<2x4x4xf32>, tensor<8xf32>)
  return
}

// -----

func.func @f(%x: tensor<2x4x8xf32>, %w: tensor<8xf32>, %dy: tensor<2x4x8xf32>) {
  // expected-error @+1 {{'triax.rms_norm_grad' op eps must be > 0, got -1.000000e+00}}
  %dx, %dw = triax.rms_norm_grad %x, %w, %dy {eps = -1.0 : f64} : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<8xf32>)
  return
}

// -----

func.func @f(%x: tensor<2x4x8xf32>, %w: tensor<8xf32>, %dy: tensor<2x4x8xbf16>) {
  // expected-error @+1 {{'triax.rms_norm_grad' op mixes element types 'f32' and 'bf16'; expected one float type}}
  %dx, %dw = triax.rms_norm_grad %x, %w, %dy : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<2x4x8xbf16>) -> (tensor<2x4x8xf32>, tensor<8xf32>)
  return
}

// -----

func.func @f(%x: tensor<2x4x8xf32>, %w: tensor<8xf32>, %dy: tensor<2x4x4xf32>) {
  // expected-error @+1 {{'triax.rms_norm_grad' op result gradient type 'tensor<2x4x4xf32>' must equal 'tensor<2x4x8xf32>'}}
  %dx, %dw = triax.rms_norm_grad %x, %w, %dy : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<2x4x4xf32>) -> (tensor<2x4x8xf32>, tensor<8xf32>)
  return
}

// -----

func.func @f(%x: tensor<2x4x8xf32>, %w: tensor<8xf32>, %dy: tensor<2x4x8xf32>) {
  // expected-error @+1 {{'triax.rms_norm_grad' op weight gradient type 'tensor<1x8xf32>' must equal 'tensor<8xf32>'}}
  %dx, %dw = triax.rms_norm_grad %x, %w, %dy : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<1x8xf32>)
  return
}

//===----------------------------------------------------------------------===//
// triax.attention_grad: the shapes of triax.attention, then one gradient
// per input
//===----------------------------------------------------------------------===//

// -----

func.func @f(%q: tensor<4x8xf32>, %dy: tensor<4x8xf32>) {
  // expected-error @+1 {{'triax.attention_grad' op query, key and value must be [batch, seq, features], got 'tensor<4x8xf32>'}}
  %dq, %dk, %dv = triax.attention_grad %q, %q, %q, %dy heads = 2 : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>)
  return
}

// -----

func.func @f(%q: tensor<2x4x8xf32>, %v: tensor<2x4x4xf32>) {
  // expected-error @+1 {{'triax.attention_grad' op key 'tensor<2x4x8xf32>' and value 'tensor<2x4x4xf32>' must have the same shape}}
  %dq, %dk, %dv = triax.attention_grad %q, %q, %v, %q heads = 2 : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x4xf32>, tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x4xf32>)
  return
}

// -----

func.func @f(%q: tensor<2x4x8xf32>, %k: tensor<2x2x8xf32>) {
  // expected-error @+1 {{'triax.attention_grad' op query 'tensor<2x4x8xf32>' and key 'tensor<2x2x8xf32>' must agree on [batch, seq]}}
  %dq, %dk, %dv = triax.attention_grad %q, %k, %k, %q heads = 2 : (tensor<2x4x8xf32>, tensor<2x2x8xf32>, tensor<2x2x8xf32>, tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<2x2x8xf32>, tensor<2x2x8xf32>)
  return
}

// -----

func.func @f(%q: tensor<2x4x8xf32>) {
  // expected-error @+1 {{'triax.attention_grad' op heads and kv_heads must be >= 1, got 2 and -1}}
  %dq, %dk, %dv = triax.attention_grad %q, %q, %q, %q heads = 2 kv_heads = -1 : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>)
  return
}

// -----

func.func @f(%q: tensor<2x4x8xf32>) {
  // expected-error @+1 {{'triax.attention_grad' op hidden size 8 is not divisible by heads 5}}
  %dq, %dk, %dv = triax.attention_grad %q, %q, %q, %q heads = 5 : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>)
  return
}

// -----

func.func @f(%q: tensor<2x4x8xf32>, %lse: tensor<2x2x4xf32>) {
  // expected-error @+1 {{'triax.attention_grad' op saved takes the forward's result and its log-sum-exp, got 1 values}}
  %dq, %dk, %dv = triax.attention_grad %q, %q, %q, %q saved(%q) heads = 2 : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>)
  return
}

// -----

func.func @f(%q: tensor<2x4x8xf32>, %o: tensor<2x4x8xbf16>, %lse: tensor<2x2x4xf32>) {
  // expected-error @+1 {{'triax.attention_grad' op saved result 'tensor<2x4x8xbf16>' must have the query's type 'tensor<2x4x8xf32>'}}
  %dq, %dk, %dv = triax.attention_grad %q, %q, %q, %q saved(%o, %lse) heads = 2 : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xbf16>, tensor<2x2x4xf32>) -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>)
  return
}

// -----

func.func @f(%q: tensor<2x4x8xf32>, %lse: tensor<2x4x2xf32>) {
  // expected-error @+1 {{'triax.attention_grad' op log-sum-exp must be [batch, heads, seq] = [2, 2, 4] f32, got 'tensor<2x4x2xf32>'}}
  %dq, %dk, %dv = triax.attention_grad %q, %q, %q, %q saved(%q, %lse) heads = 2 : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x2xf32>) -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>)
  return
}

// -----

func.func @f(%q: tensor<2x4x8xf32>) {
  // expected-error @+1 {{'triax.attention_grad' op heads 2 is not divisible by kv_heads 4}}
  %dq, %dk, %dv = triax.attention_grad %q, %q, %q, %q heads = 2 kv_heads = 4 : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>)
  return
}

// -----

func.func @f(%q: tensor<2x4x8xf32>) {
  // expected-error @+1 {{'triax.attention_grad' op key and value have 8 features, expected kv_heads * head_dim = 1 * 2 = 2}}
  %dq, %dk, %dv = triax.attention_grad %q, %q, %q, %q heads = 4 kv_heads = 1 : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>)
  return
}

// -----

func.func @f(%q: tensor<2x4x8xf32>, %dy: tensor<2x4x8xbf16>) {
  // expected-error @+1 {{'triax.attention_grad' op result gradient type 'tensor<2x4x8xbf16>' must equal 'tensor<2x4x8xf32>'}}
  %dq, %dk, %dv = triax.attention_grad %q, %q, %q, %dy heads = 2 : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xbf16>) -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>)
  return
}

// -----

func.func @f(%q: tensor<2x4x8xf32>, %kv: tensor<2x4x4xf32>) {
  // expected-error @+1 {{'triax.attention_grad' op query gradient type 'tensor<2x4x4xf32>' must equal 'tensor<2x4x8xf32>'}}
  %dq, %dk, %dv = triax.attention_grad %q, %kv, %kv, %q heads = 2 kv_heads = 1 : (tensor<2x4x8xf32>, tensor<2x4x4xf32>, tensor<2x4x4xf32>, tensor<2x4x8xf32>) -> (tensor<2x4x4xf32>, tensor<2x4x4xf32>, tensor<2x4x4xf32>)
  return
}

// -----

func.func @f(%q: tensor<2x4x8xf32>, %kv: tensor<2x4x4xf32>) {
  // expected-error @+1 {{'triax.attention_grad' op key gradient type 'tensor<2x4x8xf32>' must equal 'tensor<2x4x4xf32>'}}
  %dq, %dk, %dv = triax.attention_grad %q, %kv, %kv, %q heads = 2 kv_heads = 1 : (tensor<2x4x8xf32>, tensor<2x4x4xf32>, tensor<2x4x4xf32>, tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x4xf32>)
  return
}

// -----

func.func @f(%q: tensor<2x4x8xf32>, %kv: tensor<2x4x4xf32>) {
  // expected-error @+1 {{'triax.attention_grad' op value gradient type 'tensor<2x4x8xf32>' must equal 'tensor<2x4x4xf32>'}}
  %dq, %dk, %dv = triax.attention_grad %q, %kv, %kv, %q heads = 2 kv_heads = 1 : (tensor<2x4x8xf32>, tensor<2x4x4xf32>, tensor<2x4x4xf32>, tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<2x4x4xf32>, tensor<2x4x8xf32>)
  return
}

//===----------------------------------------------------------------------===//
// triax.cross_entropy_grad
//===----------------------------------------------------------------------===//

// -----

func.func @f(%l: tensor<2x4x16xf32>, %t: tensor<4x2xi32>, %d: tensor<f32>) {
  // expected-error @+1 {{'triax.cross_entropy_grad' op logits [2, 4, 16] must be the targets' shape [4, 2] plus a vocabulary dimension}}
  %dl = triax.cross_entropy_grad %l, %t, %d : (tensor<2x4x16xf32>, tensor<4x2xi32>, tensor<f32>) -> tensor<2x4x16xf32>
  return
}

// -----

func.func @f(%l: tensor<2x4x16xf32>, %t: tensor<2x4xi32>, %d: tensor<f32>) {
  // expected-error @+1 {{'triax.cross_entropy_grad' op logits gradient type 'tensor<2x4x16xbf16>' must equal 'tensor<2x4x16xf32>'}}
  %dl = triax.cross_entropy_grad %l, %t, %d : (tensor<2x4x16xf32>, tensor<2x4xi32>, tensor<f32>) -> tensor<2x4x16xbf16>
  return
}

// -----

func.func @f(%l: tensor<2x4x16xf32>, %t: tensor<2x4xi32>, %d: tensor<f32>) {
  // expected-error @+1 {{'triax.cross_entropy_grad' op classes 20 exceeds the logits' 16 columns}}
  %dl = triax.cross_entropy_grad %l, %t, %d {classes = 20 : i64} : (tensor<2x4x16xf32>, tensor<2x4xi32>, tensor<f32>) -> tensor<2x4x16xf32>
  return
}

// -----

// ODS: the incoming loss gradient is an f32 scalar.
func.func @f(%l: tensor<2x4x16xf32>, %t: tensor<2x4xi32>, %d: tensor<1xf32>) {
  // expected-error @+1 {{'triax.cross_entropy_grad' op operand #2 must be 0D tensor of 32-bit float values, but got 'tensor<1xf32>'}}
  %dl = triax.cross_entropy_grad %l, %t, %d : (tensor<2x4x16xf32>, tensor<2x4xi32>, tensor<1xf32>) -> tensor<2x4x16xf32>
  return
}

//===----------------------------------------------------------------------===//
// Activation gradients, triax.global_norm (ODS constraints)
//===----------------------------------------------------------------------===//

// -----

func.func @f(%x: tensor<2x4xf32>, %dy: tensor<2x4xbf16>) {
  // expected-error @+1 {{'triax.gelu_grad' op requires the same type for all operands and results}}
  %dx = "triax.gelu_grad"(%x, %dy) : (tensor<2x4xf32>, tensor<2x4xbf16>) -> tensor<2x4xf32>
  return
}

// -----

func.func @f(%x: tensor<2x4xf16>) {
  // expected-error @+1 {{'triax.silu_grad' op operand #0 must be ranked tensor of 32-bit float or bfloat16 type values, but got 'tensor<2x4xf16>'}}
  %dx = triax.silu_grad %x, %x : tensor<2x4xf16>
  return
}

// -----

func.func @f(%g: tensor<4xf32>) {
  // expected-error @+1 {{'triax.global_norm' op result #0 must be 0D tensor of 32-bit float values, but got 'tensor<bf16>'}}
  %n = triax.global_norm %g : tensor<4xf32> -> tensor<bf16>
  return
}

//===----------------------------------------------------------------------===//
// triax.adamw
//===----------------------------------------------------------------------===//

// -----

triax.model @m config = #triax.train_config<micro_batch = 2, seq = 4> {
  triax.param @w : tensor<4x8xf32> init <zeros>
  func.func @step(%g: tensor<4x8xf32>, %lr: f32, %t: i64, %s: f32) {
    // expected-error @+1 {{'triax.adamw' op 'v' does not name a triax.param of the enclosing model}}
    triax.adamw @v, %g, lr %lr, step %t, scale %s {beta1 = 0.9, beta2 = 0.95, eps = 1.0e-8, weight_decay = 0.1} : tensor<4x8xf32>
    return
  }
}

// -----

triax.model @m config = #triax.train_config<micro_batch = 2, seq = 4> {
  triax.param @w : tensor<4x8xf32> init <zeros>
  func.func @step(%g: tensor<4x8xf32>, %lr: f32, %t: i64, %s: f32) {
    // expected-error @+1 {{'triax.adamw' op 'step' does not name a triax.param of the enclosing model}}
    triax.adamw @step, %g, lr %lr, step %t, scale %s {beta1 = 0.9, beta2 = 0.95, eps = 1.0e-8, weight_decay = 0.1} : tensor<4x8xf32>
    return
  }
}

// -----

triax.model @m config = #triax.train_config<micro_batch = 2, seq = 4> {
  triax.param @w : tensor<4x8xf32> init <zeros>
  func.func @step(%g: tensor<8x4xf32>, %lr: f32, %t: i64, %s: f32) {
    // expected-error @+1 {{'triax.adamw' op gradient 'tensor<8x4xf32>' does not match parameter @w of type 'tensor<4x8xf32>'}}
    triax.adamw @w, %g, lr %lr, step %t, scale %s {beta1 = 0.9, beta2 = 0.95, eps = 1.0e-8, weight_decay = 0.1} : tensor<8x4xf32>
    return
  }
}

// -----

// ODS: the hyper-parameters are required f64 attributes.
triax.model @m config = #triax.train_config<micro_batch = 2, seq = 4> {
  triax.param @w : tensor<4x8xf32> init <zeros>
  func.func @step(%g: tensor<4x8xf32>, %lr: f32, %t: i64, %s: f32) {
    // expected-error @+1 {{'triax.adamw' op requires attribute 'weight_decay'}}
    triax.adamw @w, %g, lr %lr, step %t, scale %s {beta1 = 0.9, beta2 = 0.95, eps = 1.0e-8} : tensor<4x8xf32>
    return
  }
}

// -----

func.func @mixed(%x: tensor<2x4x8xf32>, %dy: tensor<2x4x16xf32>) -> tensor<16xbf16> {
  // expected-error @+1 {{'triax.bias_grad' op bias gradient element type 'bf16' must be the result gradient's 'f32' or f32}}
  %db = triax.bias_grad %dy : tensor<2x4x16xf32> -> tensor<16xbf16>
  return %db : tensor<16xbf16>
}

// -----

func.func @mixed(%ids: tensor<2x4xi32>, %dy: tensor<2x4x8xf32>) -> tensor<16x8xbf16> {
  // expected-error @+1 {{'triax.embedding_grad' op table gradient element type 'bf16' must be the result gradient's 'f32' or f32}}
  %dt = triax.embedding_grad %ids, %dy : (tensor<2x4xi32>, tensor<2x4x8xf32>) -> tensor<16x8xbf16>
  return %dt : tensor<16x8xbf16>
}

// -----

func.func @mixed(%x: tensor<2x4x8xbf16>, %dy: tensor<2x4x16xf32>) -> tensor<8x16xf32> {
  // expected-error @+1 {{'triax.linear_weight_grad' op mixes element types 'bf16' and 'f32'; expected one float type}}
  %dw = triax.linear_weight_grad %x, %dy : (tensor<2x4x8xbf16>, tensor<2x4x16xf32>) -> tensor<8x16xf32>
  return %dw : tensor<8x16xf32>
}

// -----

// bf16 operands may give an f32 weight gradient (mixed precision), f32
// operands no bf16 one.
func.func @narrowed(%x: tensor<2x4x8xf32>, %dy: tensor<2x4x16xf32>) -> tensor<8x16xbf16> {
  // expected-error @+1 {{'triax.linear_weight_grad' op weight gradient element type 'bf16' must be the input's 'f32' or f32}}
  %dw = triax.linear_weight_grad %x, %dy : (tensor<2x4x8xf32>, tensor<2x4x16xf32>) -> tensor<8x16xbf16>
  return %dw : tensor<8x16xbf16>
}

// -----

func.func @f(%x: tensor<2x4x8xf32>, %w: tensor<8xf32>, %r: tensor<2x4xf32>) {
  // expected-error @+1 {{'triax.rms_norm_grad' op the row statistic is rstd (1 value), got 2}}
  %dx, %dw = triax.rms_norm_grad %x, %w, %x saved(%r, %r) : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<2x4x8xf32>, tensor<2x4xf32>, tensor<2x4xf32>) -> (tensor<2x4x8xf32>, tensor<8xf32>)
  return
}

// -----

func.func @f(%x: tensor<2x4x8xf32>, %w: tensor<8xf32>, %m: tensor<4xf32>) {
  // expected-error @+1 {{'triax.layer_norm_grad' op a row statistic must be the input's shape without its last dimension, [2, 4], got [4]}}
  %dx, %dw, %db = triax.layer_norm_grad %x, %w, %x saved(%m, %m) : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<2x4x8xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>)
  return
}
