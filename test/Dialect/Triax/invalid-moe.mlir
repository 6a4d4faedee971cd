// Every verifier branch of the mixture-of-experts ops (TriaxOps.cpp,
// "Mixture of experts"): each message names the actual and the expected
// shape or value.
// RUN: triax-opt %s -split-input-file -verify-diagnostics

func.func @route_rank(%l: tensor<16x4xf32>) {
  // expected-error @+1 {{'triax.moe_route' op the router logits must be a static [B, S, E] tensor, got 'tensor<16x4xf32>'}}
  %g, %e, %s, %a, %aux = triax.moe_route %l {top_k = 2, capacity = 8, aux_coeff = 0.01} : (tensor<16x4xf32>) -> (tensor<2x8x2xf32>, tensor<2x8x2xi32>, tensor<2x8x2xi32>, tensor<2x32xi32>, tensor<f32>)
  return
}

// -----

func.func @route_top_k(%l: tensor<2x8x4xf32>) {
  // expected-error @+1 {{'triax.moe_route' op top_k must be between 1 and the 4 experts, got 5}}
  %g, %e, %s, %a, %aux = triax.moe_route %l {top_k = 5, capacity = 8, aux_coeff = 0.01} : (tensor<2x8x4xf32>) -> (tensor<2x8x5xf32>, tensor<2x8x5xi32>, tensor<2x8x5xi32>, tensor<2x32xi32>, tensor<f32>)
  return
}

// -----

func.func @route_capacity(%l: tensor<2x8x4xf32>) {
  // expected-error @+1 {{'triax.moe_route' op capacity must be between 1 and the sequence length 8 (which drops nothing), got 9}}
  %g, %e, %s, %a, %aux = triax.moe_route %l {top_k = 2, capacity = 9, aux_coeff = 0.01} : (tensor<2x8x4xf32>) -> (tensor<2x8x2xf32>, tensor<2x8x2xi32>, tensor<2x8x2xi32>, tensor<2x36xi32>, tensor<f32>)
  return
}

// -----

func.func @route_coeff(%l: tensor<2x8x4xf32>) {
  // expected-error @+1 {{'triax.moe_route' op aux_coeff must be a finite number >= 0, got -1.0}}
  %g, %e, %s, %a, %aux = triax.moe_route %l {top_k = 2, capacity = 8, aux_coeff = -1.0} : (tensor<2x8x4xf32>) -> (tensor<2x8x2xf32>, tensor<2x8x2xi32>, tensor<2x8x2xi32>, tensor<2x32xi32>, tensor<f32>)
  return
}

// -----

func.func @route_gates_type(%l: tensor<2x8x4xf32>) {
  // expected-error @+1 {{'triax.moe_route' op gates must have the logits' element type 'f32'}}
  %g, %e, %s, %a, %aux = triax.moe_route %l {top_k = 2, capacity = 8, aux_coeff = 0.01} : (tensor<2x8x4xf32>) -> (tensor<2x8x2xbf16>, tensor<2x8x2xi32>, tensor<2x8x2xi32>, tensor<2x32xi32>, tensor<f32>)
  return
}

// -----

func.func @route_slots_shape(%l: tensor<2x8x4xf32>) {
  // expected-error @+1 {{'triax.moe_route' op slots has shape [2, 8, 1], expected [B, S, k] = [2, 8, 2]}}
  %g, %e, %s, %a, %aux = triax.moe_route %l {top_k = 2, capacity = 8, aux_coeff = 0.01} : (tensor<2x8x4xf32>) -> (tensor<2x8x2xf32>, tensor<2x8x2xi32>, tensor<2x8x1xi32>, tensor<2x32xi32>, tensor<f32>)
  return
}

// -----

func.func @route_assign_shape(%l: tensor<2x8x4xf32>) {
  // expected-error @+1 {{'triax.moe_route' op assign has shape [2, 16], expected [B, E*C] = [2, 32]}}
  %g, %e, %s, %a, %aux = triax.moe_route %l {top_k = 2, capacity = 8, aux_coeff = 0.01} : (tensor<2x8x4xf32>) -> (tensor<2x8x2xf32>, tensor<2x8x2xi32>, tensor<2x8x2xi32>, tensor<2x16xi32>, tensor<f32>)
  return
}

// -----

func.func @dispatch_rows(%x: tensor<2x8x16xf32>, %s: tensor<2x8x2xi32>, %a: tensor<2x30xi32>) {
  // expected-error @+1 {{'triax.moe_dispatch' op assign has 30 rows per sequence, not a multiple of the 4 experts}}
  %b = triax.moe_dispatch %x, %s, %a : (tensor<2x8x16xf32>, tensor<2x8x2xi32>, tensor<2x30xi32>) -> tensor<4x16x16xf32>
  return
}

// -----

func.func @dispatch_buffer(%x: tensor<2x8x16xf32>, %s: tensor<2x8x2xi32>, %a: tensor<2x32xi32>) {
  // expected-error @+1 {{'triax.moe_dispatch' op the expert buffer has shape [4, 8, 16], expected [E, B*C, H] = [4, 16, 16]}}
  %b = triax.moe_dispatch %x, %s, %a : (tensor<2x8x16xf32>, tensor<2x8x2xi32>, tensor<2x32xi32>) -> tensor<4x8x16xf32>
  return
}

// -----

func.func @dispatch_slots(%x: tensor<2x8x16xf32>, %s: tensor<2x4x2xi32>, %a: tensor<2x32xi32>) {
  // expected-error @+1 {{'triax.moe_dispatch' op slots has shape [2, 4, 2], expected [B, S, k] = [2, 8, 2]}}
  %b = triax.moe_dispatch %x, %s, %a : (tensor<2x8x16xf32>, tensor<2x4x2xi32>, tensor<2x32xi32>) -> tensor<4x16x16xf32>
  return
}

// -----

func.func @dispatch_rank(%x: tensor<16x16xf32>, %s: tensor<2x8x2xi32>, %a: tensor<2x32xi32>) {
  // expected-error @+1 {{'triax.moe_dispatch' op the tokens must be a static [B, S, H] tensor, got 'tensor<16x16xf32>'}}
  %b = triax.moe_dispatch %x, %s, %a : (tensor<16x16xf32>, tensor<2x8x2xi32>, tensor<2x32xi32>) -> tensor<4x16x16xf32>
  return
}

// -----

func.func @combine_gates(%b: tensor<4x16x16xf32>, %s: tensor<2x8x2xi32>, %a: tensor<2x32xi32>, %g: tensor<2x8x1xf32>) {
  // expected-error @+1 {{'triax.moe_combine' op gates has shape [2, 8, 1], expected [B, S, k] = [2, 8, 2]}}
  %y = triax.moe_combine %b, %s, %a gates %g : (tensor<4x16x16xf32>, tensor<2x8x2xi32>, tensor<2x32xi32>, tensor<2x8x1xf32>) -> tensor<2x8x16xf32>
  return
}

// -----

func.func @expert_result_type(%x: tensor<4x10x16xf32>, %w: tensor<4x16x32xf32>) {
  // expected-error @+1 {{'triax.expert_linear' op result element type 'bf16' must be the input's or f32}}
  %y = triax.expert_linear %x, %w : (tensor<4x10x16xf32>, tensor<4x16x32xf32>) -> tensor<4x10x32xbf16>
  return
}

// -----

func.func @expert_types(%x: tensor<4x10x16xbf16>, %w: tensor<4x16x32xf32>) {
  // expected-error @+1 {{'triax.expert_linear' op mixes element types 'bf16' and 'f32'; expected one float type}}
  %y = triax.expert_linear %x, %w : (tensor<4x10x16xbf16>, tensor<4x16x32xf32>) -> tensor<4x10x32xf32>
  return
}

// -----

func.func @expert_count(%x: tensor<4x10x16xf32>, %w: tensor<2x16x32xf32>) {
  // expected-error @+1 {{'triax.expert_linear' op the weight holds 2 experts but the input 4}}
  %y = triax.expert_linear %x, %w : (tensor<4x10x16xf32>, tensor<2x16x32xf32>) -> tensor<4x10x32xf32>
  return
}

// -----

func.func @expert_in(%x: tensor<4x10x16xf32>, %w: tensor<4x32x16xf32>) {
  // expected-error @+1 {{'triax.expert_linear' op the weight's input dimension 32 does not match the input's last dimension 16}}
  %y = triax.expert_linear %x, %w : (tensor<4x10x16xf32>, tensor<4x32x16xf32>) -> tensor<4x10x16xf32>
  return
}

// -----

func.func @expert_result(%x: tensor<4x10x16xf32>, %w: tensor<4x16x32xf32>) {
  // expected-error @+1 {{'triax.expert_linear' op result shape [4, 10, 16] does not match the expected shape [4, 10, 32]}}
  %y = triax.expert_linear %x, %w : (tensor<4x10x16xf32>, tensor<4x16x32xf32>) -> tensor<4x10x16xf32>
  return
}

// -----

func.func @expert_rank(%x: tensor<10x16xf32>, %w: tensor<4x16x32xf32>) {
  // expected-error @+1 {{'triax.expert_linear' op the input must be a static [E, N, in] tensor, got 'tensor<10x16xf32>'}}
  %y = triax.expert_linear %x, %w : (tensor<10x16xf32>, tensor<4x16x32xf32>) -> tensor<4x10x32xf32>
  return
}

// -----

func.func @expert_weight_rank(%x: tensor<4x10x16xf32>, %w: tensor<16x32xf32>) {
  // expected-error @+1 {{'triax.expert_linear' op the weight must be a static [E, out, in] tensor, got 'tensor<16x32xf32>'}}
  %y = triax.expert_linear %x, %w {transpose_weight} : (tensor<4x10x16xf32>, tensor<16x32xf32>) -> tensor<4x10x32xf32>
  return
}

// -----

func.func @weight_grad_rows(%x: tensor<4x10x16xf32>, %dy: tensor<4x8x32xf32>) {
  // expected-error @+1 {{'triax.expert_linear_weight_grad' op the input [4, 10, 16] and the result gradient [4, 8, 32] must share [E, N]}}
  %dw = triax.expert_linear_weight_grad %x, %dy : (tensor<4x10x16xf32>, tensor<4x8x32xf32>) -> tensor<4x16x32xf32>
  return
}

// -----

func.func @weight_grad_scale(%x: tensor<4x10x16xf32>, %dy: tensor<4x10x32xf32>) {
  // expected-error @+1 {{'triax.expert_linear_weight_grad' op scale must be a finite number > 0, got 0}}
  %dw = triax.expert_linear_weight_grad %x, %dy {scale = 0.0 : f64} : (tensor<4x10x16xf32>, tensor<4x10x32xf32>) -> tensor<4x16x32xf32>
  return
}

// -----

func.func @weight_grad_shape(%x: tensor<4x10x16xf32>, %dy: tensor<4x10x32xf32>) {
  // expected-error @+1 {{'triax.expert_linear_weight_grad' op result shape [4, 16, 32] does not match the expected shape [4, 32, 16]}}
  %dw = triax.expert_linear_weight_grad %x, %dy {transpose_weight} : (tensor<4x10x16xf32>, tensor<4x10x32xf32>) -> tensor<4x16x32xf32>
  return
}

// -----

func.func @weight_grad_type(%x: tensor<4x10x16xf32>, %dy: tensor<4x10x32xf32>) {
  // expected-error @+1 {{'triax.expert_linear_weight_grad' op result element type 'bf16' must be the input's or f32}}
  %dw = triax.expert_linear_weight_grad %x, %dy : (tensor<4x10x16xf32>, tensor<4x10x32xf32>) -> tensor<4x16x32xbf16>
  return
}

// -----

func.func @weight_grad_rank(%x: tensor<10x16xf32>, %dy: tensor<4x10x32xf32>) {
  // expected-error @+1 {{'triax.expert_linear_weight_grad' op the input must be a static [E, N, in] tensor, got 'tensor<10x16xf32>'}}
  %dw = triax.expert_linear_weight_grad %x, %dy : (tensor<10x16xf32>, tensor<4x10x32xf32>) -> tensor<4x16x32xf32>
  return
}

// -----

func.func @route_grad_experts(%l: tensor<2x8x4xf32>, %e: tensor<2x4x2xi32>, %dg: tensor<2x8x2xf32>, %daux: tensor<f32>) {
  // expected-error @+1 {{'triax.moe_route_grad' op experts has shape [2, 4, 2], expected [B, S, k] = [2, 8, 2]}}
  %d = triax.moe_route_grad %l, %e, %dg, %daux {aux_coeff = 0.01} : (tensor<2x8x4xf32>, tensor<2x4x2xi32>, tensor<2x8x2xf32>, tensor<f32>) -> tensor<2x8x4xf32>
  return
}

// -----

func.func @route_grad_gates(%l: tensor<2x8x4xf32>, %e: tensor<2x8x2xi32>, %dg: tensor<2x8x1xf32>, %daux: tensor<f32>) {
  // expected-error @+1 {{'triax.moe_route_grad' op the gates' gradient has shape [2, 8, 1], expected [B, S, k] = [2, 8, 2]}}
  %d = triax.moe_route_grad %l, %e, %dg, %daux {aux_coeff = 0.01} : (tensor<2x8x4xf32>, tensor<2x8x2xi32>, tensor<2x8x1xf32>, tensor<f32>) -> tensor<2x8x4xf32>
  return
}

// -----

func.func @route_grad_result(%l: tensor<2x8x4xf32>, %e: tensor<2x8x2xi32>, %dg: tensor<2x8x2xf32>, %daux: tensor<f32>) {
  // expected-error @+1 {{'triax.moe_route_grad' op result type 'tensor<2x8x3xf32>' must equal the logits' 'tensor<2x8x4xf32>'}}
  %d = triax.moe_route_grad %l, %e, %dg, %daux {aux_coeff = 0.01} : (tensor<2x8x4xf32>, tensor<2x8x2xi32>, tensor<2x8x2xf32>, tensor<f32>) -> tensor<2x8x3xf32>
  return
}

// -----

func.func @route_grad_rank(%l: tensor<16x4xf32>, %e: tensor<2x8x2xi32>, %dg: tensor<2x8x2xf32>, %daux: tensor<f32>) {
  // expected-error @+1 {{'triax.moe_route_grad' op the router logits must be a static [B, S, E] tensor, got 'tensor<16x4xf32>'}}
  %d = triax.moe_route_grad %l, %e, %dg, %daux {aux_coeff = 0.01} : (tensor<16x4xf32>, tensor<2x8x2xi32>, tensor<2x8x2xf32>, tensor<f32>) -> tensor<16x4xf32>
  return
}

// -----

func.func @route_grad_experts_rank(%l: tensor<2x8x4xf32>, %e: tensor<16x2xi32>, %dg: tensor<2x8x2xf32>, %daux: tensor<f32>) {
  // expected-error @+1 {{'triax.moe_route_grad' op experts must be a static [B, S, k] tensor, got 'tensor<16x2xi32>'}}
  %d = triax.moe_route_grad %l, %e, %dg, %daux {aux_coeff = 0.01} : (tensor<2x8x4xf32>, tensor<16x2xi32>, tensor<2x8x2xf32>, tensor<f32>) -> tensor<2x8x4xf32>
  return
}

// -----

func.func @gates_grad_buffer(%t: tensor<2x8x16xf32>, %b: tensor<4x15x16xf32>, %s: tensor<2x8x2xi32>) {
  // expected-error @+1 {{'triax.moe_gates_grad' op the expert buffer [4, 15, 16] does not hold [E, B*C, H] rows for tokens [2, 8, 16]}}
  %d = triax.moe_gates_grad %t, %b, %s : (tensor<2x8x16xf32>, tensor<4x15x16xf32>, tensor<2x8x2xi32>) -> tensor<2x8x2xf32>
  return
}

// -----

func.func @gates_grad_result(%t: tensor<2x8x16xf32>, %b: tensor<4x16x16xf32>, %s: tensor<2x8x2xi32>) {
  // expected-error @+1 {{'triax.moe_gates_grad' op result shape [2, 8, 1] does not match the expected shape [2, 8, 2]}}
  %d = triax.moe_gates_grad %t, %b, %s : (tensor<2x8x16xf32>, tensor<4x16x16xf32>, tensor<2x8x2xi32>) -> tensor<2x8x1xf32>
  return
}

// -----

func.func @gates_grad_slots(%t: tensor<2x8x16xf32>, %b: tensor<4x16x16xf32>, %s: tensor<2x4x2xi32>) {
  // expected-error @+1 {{'triax.moe_gates_grad' op slots has shape [2, 4, 2], expected [B, S, k] = [2, 8, 2]}}
  %d = triax.moe_gates_grad %t, %b, %s : (tensor<2x8x16xf32>, tensor<4x16x16xf32>, tensor<2x4x2xi32>) -> tensor<2x8x2xf32>
  return
}

// -----

func.func @gates_grad_rank(%t: tensor<16x16xf32>, %b: tensor<4x16x16xf32>, %s: tensor<2x8x2xi32>) {
  // expected-error @+1 {{'triax.moe_gates_grad' op the tokens must be a static [B, S, H] tensor, got 'tensor<16x16xf32>'}}
  %d = triax.moe_gates_grad %t, %b, %s : (tensor<16x16xf32>, tensor<4x16x16xf32>, tensor<2x8x2xi32>) -> tensor<2x8x2xf32>
  return
}
