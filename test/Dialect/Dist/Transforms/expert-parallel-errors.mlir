// dist-expert-parallel refuses what it cannot split, with the op and the
// reason, and changes nothing.
// RUN: triax-opt %s -split-input-file --dist-expert-parallel=ep=2 -verify-diagnostics -o /dev/null

// Experts that ep does not divide.
triax.model @m config = #triax.train_config<micro_batch = 1, seq = 4> {
  triax.param @w : tensor<3x8x8xf32> init <normal, std = 0.02>
  func.func @forward(%tokens: tensor<1x4xi32>, %targets: tensor<1x4xi32>) -> tensor<f32> {
    %l = arith.constant dense<0.0> : tensor<1x4x3xf32>
    %x = arith.constant dense<1.0> : tensor<1x4x8xf32>
    %g, %e, %s, %a, %aux = triax.moe_route %l {top_k = 1, capacity = 4, aux_coeff = 0.0} : (tensor<1x4x3xf32>) -> (tensor<1x4x1xf32>, tensor<1x4x1xi32>, tensor<1x4x1xi32>, tensor<1x12xi32>, tensor<f32>)
    // expected-error @+1 {{'triax.moe_dispatch' op dist-expert-parallel: 3 experts cannot be split over ep=2 members evenly}}
    %buf = triax.moe_dispatch %x, %s, %a : (tensor<1x4x8xf32>, tensor<1x4x1xi32>, tensor<1x12xi32>) -> tensor<3x4x8xf32>
    %w = triax.get_param @w : tensor<3x8x8xf32>
    %o = triax.expert_linear %buf, %w : (tensor<3x4x8xf32>, tensor<3x8x8xf32>) -> tensor<3x4x8xf32>
    %y = triax.moe_combine %o, %s, %a gates %g : (tensor<3x4x8xf32>, tensor<1x4x1xi32>, tensor<1x12xi32>, tensor<1x4x1xf32>) -> tensor<1x4x8xf32>
    return %aux : tensor<f32>
  }
}

// -----

// An op that mixes the experts' rows (a sum over them) between the
// dispatch and the combine.
triax.model @m config = #triax.train_config<micro_batch = 1, seq = 4> {
  func.func @forward(%tokens: tensor<1x4xi32>, %targets: tensor<1x4xi32>) -> tensor<f32> {
    %l = arith.constant dense<0.0> : tensor<1x4x2xf32>
    %x = arith.constant dense<1.0> : tensor<1x4x8xf32>
    %c = arith.constant dense<1.0> : tensor<2x4x8xf32>
    %g, %e, %s, %a, %aux = triax.moe_route %l {top_k = 1, capacity = 4, aux_coeff = 0.0} : (tensor<1x4x2xf32>) -> (tensor<1x4x1xf32>, tensor<1x4x1xi32>, tensor<1x4x1xi32>, tensor<1x8xi32>, tensor<f32>)
    %buf = triax.moe_dispatch %x, %s, %a : (tensor<1x4x8xf32>, tensor<1x4x1xi32>, tensor<1x8xi32>) -> tensor<2x4x8xf32>
    // expected-error @+1 {{'triax.add' op dist-expert-parallel: between a triax.moe_dispatch and its triax.moe_combine only per-expert ops (triax.expert_linear, elementwise ops of the experts' rows) can run on a shard of the experts}}
    %o = triax.add %buf, %c : tensor<2x4x8xf32>
    %y = triax.moe_combine %o, %s, %a gates %g : (tensor<2x4x8xf32>, tensor<1x4x1xi32>, tensor<1x8xi32>, tensor<1x4x1xf32>) -> tensor<1x4x8xf32>
    return %aux : tensor<f32>
  }
}

// -----

// The experts' weight is not a parameter (it cannot be split).
triax.model @m config = #triax.train_config<micro_batch = 1, seq = 4> {
  func.func @forward(%tokens: tensor<1x4xi32>, %targets: tensor<1x4xi32>) -> tensor<f32> {
    %l = arith.constant dense<0.0> : tensor<1x4x2xf32>
    %x = arith.constant dense<1.0> : tensor<1x4x8xf32>
    %w = arith.constant dense<1.0> : tensor<2x8x8xf32>
    %g, %e, %s, %a, %aux = triax.moe_route %l {top_k = 1, capacity = 4, aux_coeff = 0.0} : (tensor<1x4x2xf32>) -> (tensor<1x4x1xf32>, tensor<1x4x1xi32>, tensor<1x4x1xi32>, tensor<1x8xi32>, tensor<f32>)
    %buf = triax.moe_dispatch %x, %s, %a : (tensor<1x4x8xf32>, tensor<1x4x1xi32>, tensor<1x8xi32>) -> tensor<2x4x8xf32>
    // expected-error @+1 {{'triax.expert_linear' op dist-expert-parallel: the experts' weight must be a parameter read only here (it is split over the experts)}}
    %o = triax.expert_linear %buf, %w : (tensor<2x4x8xf32>, tensor<2x8x8xf32>) -> tensor<2x4x8xf32>
    %y = triax.moe_combine %o, %s, %a gates %g : (tensor<2x4x8xf32>, tensor<1x4x1xi32>, tensor<1x8xi32>, tensor<1x4x1xf32>) -> tensor<1x4x8xf32>
    return %aux : tensor<f32>
  }
}

// -----

// The experts' rows read outside the combine.
triax.model @m config = #triax.train_config<micro_batch = 1, seq = 4> {
  triax.param @w : tensor<2x8x8xf32> init <normal, std = 0.02>
  func.func @forward(%tokens: tensor<1x4xi32>, %targets: tensor<1x4xi32>) -> tensor<f32> {
    %l = arith.constant dense<0.0> : tensor<1x4x2xf32>
    %x = arith.constant dense<1.0> : tensor<1x4x8xf32>
    %g, %e, %s, %a, %aux = triax.moe_route %l {top_k = 1, capacity = 4, aux_coeff = 0.0} : (tensor<1x4x2xf32>) -> (tensor<1x4x1xf32>, tensor<1x4x1xi32>, tensor<1x4x1xi32>, tensor<1x8xi32>, tensor<f32>)
    %buf = triax.moe_dispatch %x, %s, %a : (tensor<1x4x8xf32>, tensor<1x4x1xi32>, tensor<1x8xi32>) -> tensor<2x4x8xf32>
    %w = triax.get_param @w : tensor<2x8x8xf32>
    %o = triax.expert_linear %buf, %w : (tensor<2x4x8xf32>, tensor<2x8x8xf32>) -> tensor<2x4x8xf32>
    %y = triax.moe_combine %o, %s, %a gates %g : (tensor<2x4x8xf32>, tensor<1x4x1xi32>, tensor<1x8xi32>, tensor<1x4x1xf32>) -> tensor<1x4x8xf32>
    // expected-error @+1 {{'triax.moe_combine' op dist-expert-parallel: reads the experts' rows outside their triax.moe_combine}}
    %z = triax.moe_combine %o, %s, %a : (tensor<2x4x8xf32>, tensor<1x4x1xi32>, tensor<1x8xi32>) -> tensor<1x4x8xf32>
    return %aux : tensor<f32>
  }
}

// -----

// A combine of the dispatched buffer itself (no experts in between).
triax.model @m config = #triax.train_config<micro_batch = 1, seq = 4> {
  func.func @forward(%tokens: tensor<1x4xi32>, %targets: tensor<1x4xi32>) -> tensor<f32> {
    %l = arith.constant dense<0.0> : tensor<1x4x2xf32>
    %x = arith.constant dense<1.0> : tensor<1x4x8xf32>
    %g, %e, %s, %a, %aux = triax.moe_route %l {top_k = 1, capacity = 4, aux_coeff = 0.0} : (tensor<1x4x2xf32>) -> (tensor<1x4x1xf32>, tensor<1x4x1xi32>, tensor<1x4x1xi32>, tensor<1x8xi32>, tensor<f32>)
    %buf = triax.moe_dispatch %x, %s, %a : (tensor<1x4x8xf32>, tensor<1x4x1xi32>, tensor<1x8xi32>) -> tensor<2x4x8xf32>
    // expected-error @+1 {{'triax.moe_combine' op dist-expert-parallel: its buffer must be the experts' output}}
    %y = triax.moe_combine %buf, %s, %a gates %g : (tensor<2x4x8xf32>, tensor<1x4x1xi32>, tensor<1x8xi32>, tensor<1x4x1xf32>) -> tensor<1x4x8xf32>
    return %aux : tensor<f32>
  }
}

// -----

// A dispatch whose experts' output nothing combines.
triax.model @m config = #triax.train_config<micro_batch = 1, seq = 4> {
  func.func @forward(%tokens: tensor<1x4xi32>, %targets: tensor<1x4xi32>) -> tensor<f32> {
    %l = arith.constant dense<0.0> : tensor<1x4x2xf32>
    %x = arith.constant dense<1.0> : tensor<1x4x8xf32>
    %g, %e, %s, %a, %aux = triax.moe_route %l {top_k = 1, capacity = 4, aux_coeff = 0.0} : (tensor<1x4x2xf32>) -> (tensor<1x4x1xf32>, tensor<1x4x1xi32>, tensor<1x4x1xi32>, tensor<1x8xi32>, tensor<f32>)
    // expected-error @+1 {{'triax.moe_dispatch' op dist-expert-parallel: no triax.moe_combine reads this dispatch's experts}}
    %buf = triax.moe_dispatch %x, %s, %a : (tensor<1x4x8xf32>, tensor<1x4x1xi32>, tensor<1x8xi32>) -> tensor<2x4x8xf32>
    return %aux : tensor<f32>
  }
}

// -----

// expected-error @+1 {{dist-expert-parallel: no mixture-of-experts layer (triax.moe_dispatch) to split over ep; for data parallelism alone use dp}}
module {
  triax.model @m config = #triax.train_config<micro_batch = 1, seq = 4> {
    func.func @forward(%tokens: tensor<1x4xi32>, %targets: tensor<1x4xi32>) -> tensor<f32> {
      %l = arith.constant dense<0.0> : tensor<f32>
      return %l : tensor<f32>
    }
  }
}
