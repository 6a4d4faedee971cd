// triax-pad-vocab: the vocabulary rounded up to a multiple, the padding
// invisible. A tied head (the embedding table is the head's [V, d] weight),
// an untied head with a bias ([d, V] and [V], padded along V) whose token
// table is padded too, a vocabulary already a multiple (left alone), and
// multiple=1 (nothing).
// RUN: triax-opt %s --triax-pad-vocab=multiple=8 -split-input-file | FileCheck %s
// RUN: triax-opt %s --triax-pad-vocab=multiple=1 -split-input-file | FileCheck %s --check-prefix=ONE
// The padded models train: autodiff carries classes into the gradient.
// RUN: triax-opt %s --triax-pad-vocab=multiple=8 --triax-autodiff -split-input-file | FileCheck %s --check-prefix=GRAD

// CHECK-LABEL: triax.model @tied
// CHECK: triax.param @emb : tensor<8x2xf32> init <normal, std = 0.02> decay {triax.valid_shape = array<i64: 5, 2>}
// CHECK: %[[E:.*]] = triax.get_param @emb : tensor<8x2xf32>
// CHECK: triax.embedding %{{.*}}, %[[E]] : (tensor<1x2xi32>, tensor<8x2xf32>) -> tensor<1x2x2xf32>
// CHECK: %[[L:.*]] = triax.linear %{{.*}}, %[[E]] {transpose_weight} : (tensor<1x2x2xf32>, tensor<8x2xf32>) -> tensor<1x2x8xf32>
// CHECK: triax.cross_entropy %[[L]], %{{.*}} {classes = 5 : i64} : (tensor<1x2x8xf32>, tensor<1x2xi32>) -> tensor<f32>
// ONE-LABEL: triax.model @tied
// ONE: triax.param @emb : tensor<5x2xf32> init <normal, std = 0.02> decay{{$}}
// ONE: triax.cross_entropy %{{.*}}, %{{.*}} : (tensor<1x2x5xf32>, tensor<1x2xi32>) -> tensor<f32>
// GRAD-LABEL: triax.model @tied
// GRAD: triax.cross_entropy_grad %{{.*}}, %{{.*}}, %{{.*}} {classes = 5 : i64} : (tensor<1x2x8xf32>, tensor<1x2xi32>, tensor<f32>) -> tensor<1x2x8xf32>
// GRAD: triax.accumulate_grad @emb, %{{.*}} : tensor<8x2xf32>
triax.model @tied config = #triax.train_config<micro_batch = 1, seq = 2> {
  triax.param @emb : tensor<5x2xf32> init <normal, std = 0.02> decay
  func.func @forward(%tokens: tensor<1x2xi32>, %targets: tensor<1x2xi32>) -> tensor<f32> {
    %emb = triax.get_param @emb : tensor<5x2xf32>
    %x = triax.embedding %tokens, %emb : (tensor<1x2xi32>, tensor<5x2xf32>) -> tensor<1x2x2xf32>
    %logits = triax.linear %x, %emb {transpose_weight} : (tensor<1x2x2xf32>, tensor<5x2xf32>) -> tensor<1x2x5xf32>
    %loss = triax.cross_entropy %logits, %targets : (tensor<1x2x5xf32>, tensor<1x2xi32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// CHECK-LABEL: triax.model @untied
// CHECK: triax.param @wte : tensor<16x2xf32> init <normal, std = 0.02> {triax.valid_shape = array<i64: 11, 2>}
// CHECK: triax.param @wpe : tensor<2x2xf32> init <normal, std = 0.02>{{$}}
// CHECK: triax.param @head : tensor<2x16xf32> init <normal, std = 0.02> decay {triax.checkpoint_transposed, triax.valid_shape = array<i64: 2, 11>}
// CHECK: triax.param @head_bias : tensor<16xf32> init <zeros> {triax.valid_shape = array<i64: 11>}
// CHECK: triax.get_param @wte : tensor<16x2xf32>
// CHECK: triax.get_param @wpe : tensor<2x2xf32>
// CHECK: triax.linear %{{.*}}, %{{.*}}, %{{.*}} : (tensor<1x2x2xf32>, tensor<2x16xf32>, tensor<16xf32>) -> tensor<1x2x16xf32>
// CHECK: triax.cross_entropy %{{.*}}, %{{.*}} {classes = 11 : i64} : (tensor<1x2x16xf32>, tensor<1x2xi32>) -> tensor<f32>
triax.model @untied config = #triax.train_config<micro_batch = 1, seq = 2> {
  triax.param @wte : tensor<11x2xf32> init <normal, std = 0.02>
  triax.param @wpe : tensor<2x2xf32> init <normal, std = 0.02>
  triax.param @head : tensor<2x11xf32> init <normal, std = 0.02> decay {triax.checkpoint_transposed}
  triax.param @head_bias : tensor<11xf32> init <zeros>
  func.func @forward(%tokens: tensor<1x2xi32>, %targets: tensor<1x2xi32>) -> tensor<f32> {
    %wte = triax.get_param @wte : tensor<11x2xf32>
    %x = triax.embedding %tokens, %wte : (tensor<1x2xi32>, tensor<11x2xf32>) -> tensor<1x2x2xf32>
    %wpe = triax.get_param @wpe : tensor<2x2xf32>
    %pos = triax.position_ids : tensor<1x2xi32>
    %p = triax.embedding %pos, %wpe : (tensor<1x2xi32>, tensor<2x2xf32>) -> tensor<1x2x2xf32>
    %h = triax.add %x, %p : tensor<1x2x2xf32>
    %w = triax.get_param @head : tensor<2x11xf32>
    %b = triax.get_param @head_bias : tensor<11xf32>
    %logits = triax.linear %h, %w, %b : (tensor<1x2x2xf32>, tensor<2x11xf32>, tensor<11xf32>) -> tensor<1x2x11xf32>
    %loss = triax.cross_entropy %logits, %targets : (tensor<1x2x11xf32>, tensor<1x2xi32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// CHECK-LABEL: triax.model @multiple
// CHECK: triax.param @emb : tensor<16x2xf32> init <normal, std = 0.02> decay{{$}}
// CHECK: triax.cross_entropy %{{.*}}, %{{.*}} : (tensor<1x2x16xf32>, tensor<1x2xi32>) -> tensor<f32>
triax.model @multiple config = #triax.train_config<micro_batch = 1, seq = 2> {
  triax.param @emb : tensor<16x2xf32> init <normal, std = 0.02> decay
  func.func @forward(%tokens: tensor<1x2xi32>, %targets: tensor<1x2xi32>) -> tensor<f32> {
    %emb = triax.get_param @emb : tensor<16x2xf32>
    %x = triax.embedding %tokens, %emb : (tensor<1x2xi32>, tensor<16x2xf32>) -> tensor<1x2x2xf32>
    %logits = triax.linear %x, %emb {transpose_weight} : (tensor<1x2x2xf32>, tensor<16x2xf32>) -> tensor<1x2x16xf32>
    %loss = triax.cross_entropy %logits, %targets : (tensor<1x2x16xf32>, tensor<1x2xi32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}
