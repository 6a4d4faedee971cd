// What triax-recompute refuses: a model before triax-autodiff, a backward
// block whose forward block is not before it in the same function (after
// dist-pipeline), a second run, a pipelined model and a forward value it
// cannot redo.
// RUN: triax-opt %s -split-input-file --triax-recompute -verify-diagnostics -o /dev/null

// expected-error @+1 {{'triax.model' op has no @forward_backward; triax-recompute runs after triax-autodiff}}
triax.model @before_autodiff config = #triax.train_config<micro_batch = 1, seq = 2> {
  triax.param @emb : tensor<4x2xf32> init <normal, std = 0.02> decay
  func.func @forward(%tokens: tensor<1x2xi32>, %targets: tensor<1x2xi32>) -> tensor<f32> {
    %emb = triax.get_param @emb : tensor<4x2xf32>
    %x = triax.embedding %tokens, %emb : (tensor<1x2xi32>, tensor<4x2xf32>) -> tensor<1x2x2xf32>
    %logits = triax.linear %x, %emb {transpose_weight} : (tensor<1x2x2xf32>, tensor<4x2xf32>) -> tensor<1x2x4xf32>
    %loss = triax.cross_entropy %logits, %targets : (tensor<1x2x4xf32>, tensor<1x2xi32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

triax.model @no_forward_block config = #triax.train_config<micro_batch = 1, seq = 2> {
  triax.param @emb : tensor<4x2xf32> init <normal, std = 0.02> decay
  func.func @forward(%tokens: tensor<1x2xi32>, %targets: tensor<1x2xi32>) -> tensor<f32> {
    %emb = triax.get_param @emb : tensor<4x2xf32>
    %x = triax.embedding %tokens, %emb : (tensor<1x2xi32>, tensor<4x2xf32>) -> tensor<1x2x2xf32>
    %logits = triax.linear %x, %emb {transpose_weight} : (tensor<1x2x2xf32>, tensor<4x2xf32>) -> tensor<1x2x4xf32>
    %loss = triax.cross_entropy %logits, %targets : (tensor<1x2x4xf32>, tensor<1x2xi32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
  func.func @forward_backward(%tokens: tensor<1x2xi32>, %targets: tensor<1x2xi32>) -> tensor<f32> {
    %emb = triax.get_param @emb : tensor<4x2xf32>
    %x = triax.embedding %tokens, %emb : (tensor<1x2xi32>, tensor<4x2xf32>) -> tensor<1x2x2xf32>
    // expected-error @+1 {{'triax.block' op has no forward block "h.0" before it in the same function; triax-recompute runs right after triax-autodiff, before dist-pipeline}}
    %d = triax.block "h.0.grad"(%x) : (tensor<1x2x2xf32>) -> tensor<1x2x2xf32> {
    ^bb0(%in: tensor<1x2x2xf32>):
      triax.yield %in : tensor<1x2x2xf32>
    }
    %logits = triax.linear %d, %emb {transpose_weight} : (tensor<1x2x2xf32>, tensor<4x2xf32>) -> tensor<1x2x4xf32>
    %loss = triax.cross_entropy %logits, %targets : (tensor<1x2x4xf32>, tensor<1x2xi32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

triax.model @twice config = #triax.train_config<micro_batch = 1, seq = 2> {
  triax.param @emb : tensor<4x2xf32> init <normal, std = 0.02> decay
  func.func @forward(%tokens: tensor<1x2xi32>, %targets: tensor<1x2xi32>) -> tensor<f32> {
    %emb = triax.get_param @emb : tensor<4x2xf32>
    %x = triax.embedding %tokens, %emb : (tensor<1x2xi32>, tensor<4x2xf32>) -> tensor<1x2x2xf32>
    %logits = triax.linear %x, %emb {transpose_weight} : (tensor<1x2x2xf32>, tensor<4x2xf32>) -> tensor<1x2x4xf32>
    %loss = triax.cross_entropy %logits, %targets : (tensor<1x2x4xf32>, tensor<1x2xi32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
  func.func @forward_backward(%tokens: tensor<1x2xi32>, %targets: tensor<1x2xi32>) -> tensor<f32> {
    %emb = triax.get_param @emb : tensor<4x2xf32>
    %x = triax.embedding %tokens, %emb : (tensor<1x2xi32>, tensor<4x2xf32>) -> tensor<1x2x2xf32>
    %y = triax.block "h.0"(%x) : (tensor<1x2x2xf32>) -> tensor<1x2x2xf32> {
    ^bb0(%in: tensor<1x2x2xf32>):
      %g = triax.gelu %in : tensor<1x2x2xf32>
      triax.yield %g : tensor<1x2x2xf32>
    }
    // expected-error @+1 {{'triax.block' op already recomputes (triax.recompute = "full"); triax-recompute runs once}}
    %d = triax.block "h.0.grad"(%y, %x) {triax.recompute = "full"} : (tensor<1x2x2xf32>, tensor<1x2x2xf32>) -> tensor<1x2x2xf32> {
    ^bb0(%dy: tensor<1x2x2xf32>, %in: tensor<1x2x2xf32>):
      %dx = triax.gelu_grad %in, %dy : tensor<1x2x2xf32>
      triax.yield %dx : tensor<1x2x2xf32>
    }
    %logits = triax.linear %d, %emb {transpose_weight} : (tensor<1x2x2xf32>, tensor<4x2xf32>) -> tensor<1x2x4xf32>
    %loss = triax.cross_entropy %logits, %targets : (tensor<1x2x4xf32>, tensor<1x2xi32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// expected-error @+1 {{'triax.model' op is already cut into pipeline stages (@pipeline_step); triax-recompute runs before dist-pipeline}}
triax.model @pipelined config = #triax.train_config<micro_batch = 1, seq = 2> {
  triax.param @emb : tensor<4x2xf32> init <normal, std = 0.02> decay
  func.func @forward(%tokens: tensor<1x2xi32>, %targets: tensor<1x2xi32>) -> tensor<f32> {
    %emb = triax.get_param @emb : tensor<4x2xf32>
    %x = triax.embedding %tokens, %emb : (tensor<1x2xi32>, tensor<4x2xf32>) -> tensor<1x2x2xf32>
    %logits = triax.linear %x, %emb {transpose_weight} : (tensor<1x2x2xf32>, tensor<4x2xf32>) -> tensor<1x2x4xf32>
    %loss = triax.cross_entropy %logits, %targets : (tensor<1x2x4xf32>, tensor<1x2xi32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
  func.func @forward_backward(%tokens: tensor<1x2xi32>, %targets: tensor<1x2xi32>) -> tensor<f32> {
    %zero = arith.constant dense<0.0> : tensor<f32>
    return %zero : tensor<f32>
  }
  func.func @pipeline_step() {
    return
  }
}

// -----

triax.model @side_effect config = #triax.train_config<micro_batch = 1, seq = 2> {
  triax.param @emb : tensor<4x2xf32> init <normal, std = 0.02> decay
  func.func @forward(%tokens: tensor<1x2xi32>, %targets: tensor<1x2xi32>) -> tensor<f32> {
    %emb = triax.get_param @emb : tensor<4x2xf32>
    %x = triax.embedding %tokens, %emb : (tensor<1x2xi32>, tensor<4x2xf32>) -> tensor<1x2x2xf32>
    %logits = triax.linear %x, %emb {transpose_weight} : (tensor<1x2x2xf32>, tensor<4x2xf32>) -> tensor<1x2x4xf32>
    %loss = triax.cross_entropy %logits, %targets : (tensor<1x2x4xf32>, tensor<1x2xi32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
  func.func @forward_backward(%tokens: tensor<1x2xi32>, %targets: tensor<1x2xi32>) -> tensor<f32> {
    %emb = triax.get_param @emb : tensor<4x2xf32>
    %x = triax.embedding %tokens, %emb : (tensor<1x2xi32>, tensor<4x2xf32>) -> tensor<1x2x2xf32>
    %y:2 = triax.block "h.0"(%x) : (tensor<1x2x2xf32>) -> (tensor<1x2x2xf32>, tensor<4x2xf32>) {
    ^bb0(%in: tensor<1x2x2xf32>):
      // A read of a gradient buffer depends on when it happens.
      // expected-error @+1 {{'triax.get_grad' op cannot be recomputed in the backward block: it has side effects or regions}}
      %g = triax.get_grad @emb : tensor<4x2xf32>
      triax.yield %in, %g : tensor<1x2x2xf32>, tensor<4x2xf32>
    }
    // expected-note @+1 {{backward block recomputing it}}
    %d = triax.block "h.0.grad"(%y#0, %y#1) : (tensor<1x2x2xf32>, tensor<4x2xf32>) -> tensor<1x2x2xf32> {
    ^bb0(%dy: tensor<1x2x2xf32>, %g: tensor<4x2xf32>):
      %l = triax.linear %dy, %g {transpose_weight} : (tensor<1x2x2xf32>, tensor<4x2xf32>) -> tensor<1x2x4xf32>
      triax.yield %dy : tensor<1x2x2xf32>
    }
    %logits = triax.linear %d, %emb {transpose_weight} : (tensor<1x2x2xf32>, tensor<4x2xf32>) -> tensor<1x2x4xf32>
    %loss = triax.cross_entropy %logits, %targets : (tensor<1x2x4xf32>, tensor<1x2xi32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}
