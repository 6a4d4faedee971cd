// What triax-mixed-precision refuses: a model before triax-autodiff, a
// model that already computes in bf16 (a second run), bf16 parameters (no
// f32 master copy), and an unknown compute type.
// RUN: triax-opt %s -split-input-file --triax-mixed-precision -verify-diagnostics -o /dev/null
// RUN: not triax-opt %s -split-input-file --triax-mixed-precision=compute=f16 -o /dev/null 2>&1 | FileCheck %s --check-prefix=OPTION
// OPTION: triax-mixed-precision: unknown compute type 'f16'; expected f32 or bf16

// expected-error @+1 {{'triax.model' op has no training step (@forward_backward): triax-mixed-precision runs after triax-autodiff}}
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

// expected-error @+1 {{'triax.model' op already computes in 'bf16': triax-mixed-precision converts an f32 model once (a model built with triax-model --dtype bf16 trains in bf16 as it is: compile it without --precision bf16)}}
triax.model @twice config = #triax.train_config<micro_batch = 1, seq = 2, compute = bf16> {
  triax.param @emb : tensor<4x2xf32> init <normal, std = 0.02> decay
  func.func @forward(%tokens: tensor<1x2xi32>, %targets: tensor<1x2xi32>) -> tensor<f32> {
    %emb = triax.get_param @emb : tensor<4x2xf32>
    %e = triax.convert %emb : tensor<4x2xf32> to tensor<4x2xbf16>
    %x = triax.embedding %tokens, %e : (tensor<1x2xi32>, tensor<4x2xbf16>) -> tensor<1x2x2xbf16>
    %logits = triax.linear %x, %e {transpose_weight} : (tensor<1x2x2xbf16>, tensor<4x2xbf16>) -> tensor<1x2x4xbf16>
    %loss = triax.cross_entropy %logits, %targets : (tensor<1x2x4xbf16>, tensor<1x2xi32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
  func.func @forward_backward(%tokens: tensor<1x2xi32>, %targets: tensor<1x2xi32>) -> tensor<f32> {
    %cst = arith.constant dense<0.0> : tensor<f32>
    return %cst : tensor<f32>
  }
}

// -----

triax.model @bf16_params config = #triax.train_config<micro_batch = 1, seq = 2> {
  // expected-error @+1 {{'triax.param' op is 'tensor<4x2xbf16>': triax-mixed-precision converts a model of f32 parameters (a bf16 parameter has its f32 master copy in the runtime: compile a bf16 model without --precision bf16)}}
  triax.param @emb : tensor<4x2xbf16> init <normal, std = 0.02> decay
  func.func @forward(%tokens: tensor<1x2xi32>, %targets: tensor<1x2xi32>) -> tensor<f32> {
    %emb = triax.get_param @emb : tensor<4x2xbf16>
    %x = triax.embedding %tokens, %emb : (tensor<1x2xi32>, tensor<4x2xbf16>) -> tensor<1x2x2xbf16>
    %logits = triax.linear %x, %emb {transpose_weight} : (tensor<1x2x2xbf16>, tensor<4x2xbf16>) -> tensor<1x2x4xbf16>
    %loss = triax.cross_entropy %logits, %targets : (tensor<1x2x4xbf16>, tensor<1x2xi32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
  func.func @forward_backward(%tokens: tensor<1x2xi32>, %targets: tensor<1x2xi32>) -> tensor<f32> {
    %cst = arith.constant dense<0.0> : tensor<f32>
    return %cst : tensor<f32>
  }
}
