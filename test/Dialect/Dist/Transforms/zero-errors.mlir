// RUN: triax-opt %s --dist-zero=stage=1 -split-input-file -verify-diagnostics
// RUN: not triax-opt %s --dist-zero="stage=4 dp=2" -split-input-file 2>&1 | FileCheck %s --check-prefix=STAGE
// STAGE: error: dist-zero: stage 4 does not exist (expected 1, 2 or 3)

// Before autodiff there is no optimizer step to shard.
// expected-error @+1 {{dist-zero: model @m has no @optimizer_step; run triax-autodiff first}}
triax.model @m config = #triax.train_config<optimizer = adamw, lr = 0.001, beta1 = 0.9, beta2 = 0.95, eps = 1.0e-08, weight_decay = 0.0, grad_clip = 1.0, global_batch = 2, micro_batch = 2, seq = 4, compute = f32, master = f32> {
  triax.param @w : tensor<16x8xf32> init <zeros>
  func.func @forward(%tokens: tensor<2x4xi32>, %targets: tensor<2x4xi32>) -> tensor<f32> {
    %w = triax.get_param @w : tensor<16x8xf32>
    %x = triax.embedding %tokens, %w : (tensor<2x4xi32>, tensor<16x8xf32>) -> tensor<2x4x8xf32>
    %logits = triax.linear %x, %w {transpose_weight} : (tensor<2x4x8xf32>, tensor<16x8xf32>) -> tensor<2x4x16xf32>
    %loss = triax.cross_entropy %logits, %targets : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// ZeRO shards over dp: a dp axis of size 1 has nothing to shard over.
// expected-error @+1 {{dist-zero: ZeRO shards the training state over the "dp" axis, which has size 1; it needs data parallelism (dp >= 2) or context parallelism (cp >= 2)}}
dist.mesh @mesh <["dp"=1, "tp"=2]>
triax.model @m config = #triax.train_config<optimizer = adamw, lr = 0.001, beta1 = 0.9, beta2 = 0.95, eps = 1.0e-08, weight_decay = 0.0, grad_clip = 1.0, global_batch = 2, micro_batch = 2, seq = 4, compute = f32, master = f32> {
  triax.param @w : tensor<16x8xf32> init <zeros>
  func.func @forward(%tokens: tensor<2x4xi32>, %targets: tensor<2x4xi32>) -> tensor<f32> {
    %w = triax.get_param @w : tensor<16x8xf32>
    %x = triax.embedding %tokens, %w : (tensor<2x4xi32>, tensor<16x8xf32>) -> tensor<2x4x8xf32>
    %logits = triax.linear %x, %w {transpose_weight} : (tensor<2x4x8xf32>, tensor<16x8xf32>) -> tensor<2x4x16xf32>
    %loss = triax.cross_entropy %logits, %targets : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
  func.func @forward_backward(%tokens: tensor<2x4xi32>, %targets: tensor<2x4xi32>) -> tensor<f32> {
    %l = call @forward(%tokens, %targets) : (tensor<2x4xi32>, tensor<2x4xi32>) -> tensor<f32>
    return %l : tensor<f32>
  }
  func.func @optimizer_step(%lr: f32, %step: i64, %s: f32) -> f32 {
    %g = triax.get_grad @w : tensor<16x8xf32>
    triax.adamw @w, %g, lr %lr, step %step, scale %s {beta1 = 0.9, beta2 = 0.95, eps = 1.0e-8, weight_decay = 0.0} : tensor<16x8xf32>
    return %s : f32
  }
}

// -----

// Without dp, ZeRO shards over cp only where context parallelism's
// gradient sums fold in: here the parameter is not partial over cp (no
// dist-context-parallel ran), so there is nothing to shard over.
// expected-error @+1 {{dist-zero: ZeRO shards the training state over the "dp" axis, which has size 1, and model @m's gradient sums over "cp" do not fold in (every parameter partial over it, each accumulation fed by its sum); it needs data parallelism (dp >= 2) or context parallelism (cp >= 2)}}
dist.mesh @mesh <["cp"=2]>
triax.model @m config = #triax.train_config<optimizer = adamw, lr = 0.001, beta1 = 0.9, beta2 = 0.95, eps = 1.0e-08, weight_decay = 0.0, grad_clip = 1.0, global_batch = 2, micro_batch = 2, seq = 4, compute = f32, master = f32> {
  triax.param @w : tensor<16x8xf32> init <zeros>
  func.func @forward(%tokens: tensor<2x4xi32>, %targets: tensor<2x4xi32>) -> tensor<f32> {
    %w = triax.get_param @w : tensor<16x8xf32>
    %x = triax.embedding %tokens, %w : (tensor<2x4xi32>, tensor<16x8xf32>) -> tensor<2x4x8xf32>
    %logits = triax.linear %x, %w {transpose_weight} : (tensor<2x4x8xf32>, tensor<16x8xf32>) -> tensor<2x4x16xf32>
    %loss = triax.cross_entropy %logits, %targets : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
  func.func @forward_backward(%tokens: tensor<2x4xi32>, %targets: tensor<2x4xi32>) -> tensor<f32> {
    %l = call @forward(%tokens, %targets) : (tensor<2x4xi32>, tensor<2x4xi32>) -> tensor<f32>
    return %l : tensor<f32>
  }
  func.func @optimizer_step(%lr: f32, %step: i64, %s: f32) -> f32 {
    %g = triax.get_grad @w : tensor<16x8xf32>
    triax.adamw @w, %g, lr %lr, step %step, scale %s {beta1 = 0.9, beta2 = 0.95, eps = 1.0e-8, weight_decay = 0.0} : tensor<16x8xf32>
    return %s : f32
  }
}

// -----

dist.mesh @mesh <["dp"=2]>
triax.model @m config = #triax.train_config<optimizer = adamw, lr = 0.001, beta1 = 0.9, beta2 = 0.95, eps = 1.0e-08, weight_decay = 0.0, grad_clip = 1.0, global_batch = 2, micro_batch = 2, seq = 4, compute = f32, master = f32> {
  triax.param @w : tensor<16x8xf32> init <zeros>
  func.func @forward(%tokens: tensor<2x4xi32>, %targets: tensor<2x4xi32>) -> tensor<f32> {
    %w = triax.get_param @w : tensor<16x8xf32>
    %x = triax.embedding %tokens, %w : (tensor<2x4xi32>, tensor<16x8xf32>) -> tensor<2x4x8xf32>
    %logits = triax.linear %x, %w {transpose_weight} : (tensor<2x4x8xf32>, tensor<16x8xf32>) -> tensor<2x4x16xf32>
    %loss = triax.cross_entropy %logits, %targets : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
  func.func @forward_backward(%tokens: tensor<2x4xi32>, %targets: tensor<2x4xi32>) -> tensor<f32> {
    %l = call @forward(%tokens, %targets) : (tensor<2x4xi32>, tensor<2x4xi32>) -> tensor<f32>
    return %l : tensor<f32>
  }
  func.func @optimizer_step(%lr: f32, %step: i64, %s: f32) -> f32 {
    %g = triax.get_grad @w : tensor<16x8xf32>
    // expected-error @+1 {{dist-zero: the gradients are already all-reduced (dist-data-parallel ran); ZeRO reduces them itself: run dist-zero instead of dist-data-parallel}}
    %a = dist.all_reduce avg %g over @mesh ["dp"] : tensor<16x8xf32>
    triax.adamw @w, %a, lr %lr, step %step, scale %s {beta1 = 0.9, beta2 = 0.95, eps = 1.0e-8, weight_decay = 0.0} : tensor<16x8xf32>
    return %s : f32
  }
}

// -----

dist.mesh @mesh <["dp"=2]>
triax.model @m config = #triax.train_config<optimizer = adamw, lr = 0.001, beta1 = 0.9, beta2 = 0.95, eps = 1.0e-08, weight_decay = 0.0, grad_clip = 1.0, global_batch = 2, micro_batch = 2, seq = 4, compute = f32, master = f32> {
  // expected-error @+1 {{dist-zero: parameter @w is already sharded by ZeRO}}
  triax.param @w : tensor<16x8xf32> init <zeros> {dist.zero = #dist.zero<@mesh, ["dp"], stage = 1>}
  func.func @forward(%tokens: tensor<2x4xi32>, %targets: tensor<2x4xi32>) -> tensor<f32> {
    %w = triax.get_param @w : tensor<16x8xf32>
    %x = triax.embedding %tokens, %w : (tensor<2x4xi32>, tensor<16x8xf32>) -> tensor<2x4x8xf32>
    %logits = triax.linear %x, %w {transpose_weight} : (tensor<2x4x8xf32>, tensor<16x8xf32>) -> tensor<2x4x16xf32>
    %loss = triax.cross_entropy %logits, %targets : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
  func.func @forward_backward(%tokens: tensor<2x4xi32>, %targets: tensor<2x4xi32>) -> tensor<f32> {
    %l = call @forward(%tokens, %targets) : (tensor<2x4xi32>, tensor<2x4xi32>) -> tensor<f32>
    return %l : tensor<f32>
  }
  func.func @optimizer_step(%lr: f32, %step: i64, %s: f32) -> f32 {
    %g = triax.get_grad @w : tensor<8xf32>
    triax.adamw @w, %g, lr %lr, step %step, scale %s {beta1 = 0.9, beta2 = 0.95, eps = 1.0e-8, weight_decay = 0.0} : tensor<8xf32>
    return %s : f32
  }
}

// -----

// dist-data-parallel's gradient buckets in the training step.
dist.mesh @mesh <["dp"=2]>
triax.model @m config = #triax.train_config<optimizer = adamw, lr = 0.001, beta1 = 0.9, beta2 = 0.95, eps = 1.0e-08, weight_decay = 0.0, grad_clip = 1.0, global_batch = 2, micro_batch = 2, seq = 4, compute = f32, master = f32> {
  triax.param @w : tensor<16x8xf32> init <zeros>
  func.func @forward(%tokens: tensor<2x4xi32>, %targets: tensor<2x4xi32>) -> tensor<f32> {
    %w = triax.get_param @w : tensor<16x8xf32>
    %x = triax.embedding %tokens, %w : (tensor<2x4xi32>, tensor<16x8xf32>) -> tensor<2x4x8xf32>
    %logits = triax.linear %x, %w {transpose_weight} : (tensor<2x4x8xf32>, tensor<16x8xf32>) -> tensor<2x4x16xf32>
    %loss = triax.cross_entropy %logits, %targets : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
  func.func @forward_backward(%tokens: tensor<2x4xi32>, %targets: tensor<2x4xi32>) -> tensor<f32> {
    %l = call @forward(%tokens, %targets) : (tensor<2x4xi32>, tensor<2x4xi32>) -> tensor<f32>
    // expected-error @+1 {{dist-zero: the gradients are already all-reduced (dist-data-parallel ran); ZeRO reduces them itself: run dist-zero instead of dist-data-parallel}}
    dist.all_reduce_grads avg [@w] over @mesh ["dp"]
    return %l : tensor<f32>
  }
  func.func @optimizer_step(%lr: f32, %step: i64, %s: f32) -> f32 {
    %g = triax.get_grad @w : tensor<16x8xf32>
    triax.adamw @w, %g, lr %lr, step %step, scale %s {beta1 = 0.9, beta2 = 0.95, eps = 1.0e-8, weight_decay = 0.0} : tensor<16x8xf32>
    return %s : f32
  }
}
