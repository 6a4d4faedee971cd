// RUN: triax-opt %s --triax-autodiff -split-input-file -verify-diagnostics | FileCheck %s

// A tied embedding: the table's gradient is the sum of the lookup's and the
// head's. The forward block exports the activations its backward block
// reads; parameter reads are re-done inside the backward block.

// CHECK-LABEL: triax.model @tied
triax.model @tied config = #triax.train_config<micro_batch = 2, seq = 4, grad_clip = 1.0, weight_decay = 0.1> {
  triax.param @wte : tensor<16x8xf32> init <normal, std = 0.02> decay
  triax.param @g : tensor<8xf32> init <ones>
  triax.param @b : tensor<8xf32> init <zeros>
  // @forward is kept as it is.
  // CHECK: func.func @forward(
  // CHECK-NOT: triax.block "blk.grad"
  // CHECK: return
  func.func @forward(%tokens: tensor<2x4xi32>, %targets: tensor<2x4xi32>) -> tensor<f32> {
    %wte = triax.get_param @wte : tensor<16x8xf32>
    %x = triax.embedding %tokens, %wte : (tensor<2x4xi32>, tensor<16x8xf32>) -> tensor<2x4x8xf32>
    %y = triax.block "blk" (%x) : (tensor<2x4x8xf32>) -> tensor<2x4x8xf32> {
    ^bb0(%in: tensor<2x4x8xf32>):
      %g = triax.get_param @g : tensor<8xf32>
      %b = triax.get_param @b : tensor<8xf32>
      %n = triax.layer_norm %in, %g, %b : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
      %a = triax.gelu %n : tensor<2x4x8xf32>
      %r = triax.add %in, %a : tensor<2x4x8xf32>
      triax.yield %r : tensor<2x4x8xf32>
    }
    %logits = triax.linear %y, %wte {transpose_weight} : (tensor<2x4x8xf32>, tensor<16x8xf32>) -> tensor<2x4x16xf32>
    %loss = triax.cross_entropy %logits, %targets : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}
// CHECK-LABEL: func.func @forward_backward(
// CHECK-SAME: %[[TOK:.*]]: tensor<2x4xi32>, %[[TGT:.*]]: tensor<2x4xi32>) -> tensor<f32>
// CHECK: %[[WTE:.*]] = triax.get_param @wte
// CHECK: %[[X:.*]] = triax.embedding %[[TOK]], %[[WTE]]
// The forward block now also yields the activations the backward reads,
// the layer norm's rows' mean and rstd among them (its residuals: the
// differentiated norm returns them).
// CHECK: %[[Y:.*]]:4 = triax.block "blk"(%[[X]]) : (tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4xf32>, tensor<2x4xf32>)
// CHECK: %[[N:[a-z0-9_]+]], %[[ST:[a-z0-9_]+]]:2 = triax.layer_norm {{.*}} -> (tensor<2x4x8xf32>, tensor<2x4xf32>, tensor<2x4xf32>)
// CHECK: %[[A:.*]] = triax.gelu %[[N]]
// CHECK: %[[R:.*]] = triax.add
// CHECK: triax.yield %[[R]], %[[N]], %[[ST]]#0, %[[ST]]#1 :
// CHECK: %[[LOGITS:.*]] = triax.linear %[[Y]]#0, %[[WTE]] {transpose_weight}
// CHECK: %[[LOSS:.*]] = triax.cross_entropy %[[LOGITS]], %[[TGT]]
// CHECK: %[[ONE:.*]] = arith.constant dense<1.000000e+00> : tensor<f32>
// CHECK: %[[DLOGITS:.*]] = triax.cross_entropy_grad %[[LOGITS]], %[[TGT]], %[[ONE]]
// The head read wte as [out, in]; its input gradient reads it as [in, out].
// CHECK: %[[DY:.*]] = triax.linear %[[DLOGITS]], %[[WTE]] : (tensor<2x4x16xf32>, tensor<16x8xf32>) -> tensor<2x4x8xf32>
// CHECK: %[[DWHEAD:.*]] = triax.linear_weight_grad %[[Y]]#0, %[[DLOGITS]] {transpose_weight} : (tensor<2x4x8xf32>, tensor<2x4x16xf32>) -> tensor<16x8xf32>
// The block input is passed in from outside; the bias is not re-read (its
// gradient does not need it).
// CHECK: %[[BWD:.*]]:3 = triax.block "blk.grad"(%[[DY]], %[[Y]]#1, %[[X]], %[[Y]]#2, %[[Y]]#3) : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4xf32>, tensor<2x4xf32>) -> (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>)
// CHECK-NEXT: ^bb0(%[[D:.*]]: tensor<2x4x8xf32>, %[[SAVEDN:.*]]: tensor<2x4x8xf32>, %[[IN:.*]]: tensor<2x4x8xf32>, %[[MEAN:.*]]: tensor<2x4xf32>, %[[RSTD:.*]]: tensor<2x4xf32>):
// CHECK-NEXT: triax.get_param @g
// CHECK: %[[DA:.*]] = triax.gelu_grad %[[SAVEDN]], %[[D]]
// CHECK: %[[DX:.*]], %[[DG:.*]], %[[DB:.*]] = triax.layer_norm_grad %[[IN]], %{{.*}}, %[[DA]] saved(%[[MEAN]], %[[RSTD]])
// The residual: the block input's gradient is the sum of both paths.
// CHECK: %[[DIN:.*]] = triax.add %[[D]], %[[DX]]
// CHECK: triax.yield %[[DIN]], %[[DB]], %[[DG]] :
// Each gradient goes into its buffer right after the op that makes it (the
// parameters' order among one op's), not at the end of the backward.
// CHECK-NEXT: }
// CHECK-NEXT: triax.accumulate_grad @g, %[[BWD]]#2 : tensor<8xf32>
// CHECK-NEXT: triax.accumulate_grad @b, %[[BWD]]#1 : tensor<8xf32>
// CHECK-NEXT: %[[DWEMB:.*]] = triax.embedding_grad %[[TOK]], %[[BWD]]#0
// CHECK-NEXT: %[[DWTE:.*]] = triax.add %[[DWHEAD]], %[[DWEMB]] : tensor<16x8xf32>
// CHECK-NEXT: triax.accumulate_grad @wte, %[[DWTE]] : tensor<16x8xf32>
// CHECK-NEXT: return %[[LOSS]] : tensor<f32>

// CHECK-LABEL: func.func @optimizer_step(
// CHECK-SAME: %[[LR:.*]]: f32, %[[STEP:.*]]: i64, %[[SCALE:.*]]: f32) -> f32
// CHECK: %[[G0:.*]] = triax.get_grad @wte : tensor<16x8xf32>
// CHECK: %[[G1:.*]] = triax.get_grad @g : tensor<8xf32>
// CHECK: %[[G2:.*]] = triax.get_grad @b : tensor<8xf32>
// CHECK: %[[RAW:.*]] = triax.global_norm %[[G0]], %[[G1]], %[[G2]] : tensor<16x8xf32>, tensor<8xf32>, tensor<8xf32> -> tensor<f32>
// CHECK: %[[R:.*]] = tensor.extract %[[RAW]][] : tensor<f32>
// CHECK: %[[NORM:.*]] = arith.mulf %[[R]], %[[SCALE]] : f32
// Clipping: factor = norm > 1.0 ? 1.0 / (norm + 1e-6) : 1.
// CHECK: %[[CLIP:.*]] = arith.constant 1.000000e+00 : f32
// CHECK: %[[CMP:.*]] = arith.cmpf ogt, %[[NORM]], %[[CLIP]]
// CHECK: %[[FACTOR:.*]] = arith.select %[[CMP]]
// CHECK: %[[S:.*]] = arith.mulf %[[SCALE]], %[[FACTOR]]
// Gradients that are not finite update nothing: the scale is NaN unless
// the norm is below +inf (triax.adamw leaves the state as it was).
// CHECK: %[[INF:.*]] = arith.constant 0x7F800000 : f32
// CHECK: %[[FINITE:.*]] = arith.cmpf olt, %[[NORM]], %[[INF]] : f32
// CHECK: %[[NAN:.*]] = arith.constant 0x7FC00000 : f32
// CHECK: %[[GUARDED:.*]] = arith.select %[[FINITE]], %[[S]], %[[NAN]] : f32
// Weight decay only where the param says `decay`.
// CHECK: triax.adamw @wte, %[[G0]], lr %[[LR]], step %[[STEP]], scale %[[GUARDED]] {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, eps = 1.000000e-08 : f64, weight_decay = 1.000000e-01 : f64} : tensor<16x8xf32>
// CHECK: triax.adamw @g, %[[G1]], {{.*}} weight_decay = 0.000000e+00 : f64} : tensor<8xf32>
// CHECK: triax.adamw @b, %[[G2]], {{.*}} weight_decay = 0.000000e+00 : f64} : tensor<8xf32>
// CHECK: return %[[NORM]] : f32

// -----

// No clipping when grad_clip = 0; SwiGLU, RMSNorm and attention VJPs.
// CHECK-LABEL: triax.model @llama
triax.model @llama config = #triax.train_config<micro_batch = 1, seq = 4, grad_clip = 0.0> {
  triax.param @emb : tensor<16x8xf32> init <normal, std = 0.02> decay
  triax.param @g : tensor<8xf32> init <ones>
  triax.param @wq : tensor<8x8xf32> init <normal, std = 0.02> decay
  triax.param @wkv : tensor<8x4xf32> init <normal, std = 0.02> decay
  triax.param @head : tensor<8x16xf32> init <normal, std = 0.02> decay
  func.func @forward(%tokens: tensor<1x4xi32>, %targets: tensor<1x4xi32>) -> tensor<f32> {
    %emb = triax.get_param @emb : tensor<16x8xf32>
    %x = triax.embedding %tokens, %emb : (tensor<1x4xi32>, tensor<16x8xf32>) -> tensor<1x4x8xf32>
    %g = triax.get_param @g : tensor<8xf32>
    %n = triax.rms_norm %x, %g : (tensor<1x4x8xf32>, tensor<8xf32>) -> tensor<1x4x8xf32>
    %wq = triax.get_param @wq : tensor<8x8xf32>
    %wkv = triax.get_param @wkv : tensor<8x4xf32>
    %q = triax.linear %n, %wq : (tensor<1x4x8xf32>, tensor<8x8xf32>) -> tensor<1x4x8xf32>
    %kv = triax.linear %n, %wkv : (tensor<1x4x8xf32>, tensor<8x4xf32>) -> tensor<1x4x4xf32>
    %a = triax.attention %q, %kv, %kv heads = 4 kv_heads = 2 : (tensor<1x4x8xf32>, tensor<1x4x4xf32>, tensor<1x4x4xf32>) -> tensor<1x4x8xf32>
    %s = triax.silu %a : tensor<1x4x8xf32>
    %m = triax.mul %s, %q : tensor<1x4x8xf32>
    %head = triax.get_param @head : tensor<8x16xf32>
    %logits = triax.linear %m, %head : (tensor<1x4x8xf32>, tensor<8x16xf32>) -> tensor<1x4x16xf32>
    %loss = triax.cross_entropy %logits, %targets : (tensor<1x4x16xf32>, tensor<1x4xi32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}
// CHECK-LABEL: func.func @forward_backward
// The differentiated attention also returns its rows' log-sum-exp
// ([batch, heads, seq] f32); its gradient reads that and the output.
// CHECK: %[[A:[a-z0-9_]+]], %[[LSE:[a-z0-9_]+]] = triax.attention %{{.*}} heads = 4 kv_heads = 2 : (tensor<1x4x8xf32>, tensor<1x4x4xf32>, tensor<1x4x4xf32>) -> (tensor<1x4x8xf32>, tensor<1x4x4xf32>)
// CHECK: %[[DM:.*]] = triax.linear %{{.*}}, %{{.*}} {transpose_weight} : (tensor<1x4x16xf32>, tensor<8x16xf32>) -> tensor<1x4x8xf32>
// d(s * q): ds = dm * q, dq = dm * s.
// CHECK: %[[DS:.*]] = triax.mul %[[DM]], %[[Q:.*]] : tensor<1x4x8xf32>
// CHECK: %[[DQ1:.*]] = triax.mul %[[DM]], %{{.*}} : tensor<1x4x8xf32>
// CHECK: %[[DA:.*]] = triax.silu_grad %{{.*}}, %[[DS]]
// CHECK: %{{.*}}, %[[DK:.*]], %[[DV:.*]] = triax.attention_grad %{{.*}}, %{{.*}}, %{{.*}}, %[[DA]] saved(%[[A]], %[[LSE]]) heads = 4 kv_heads = 2
// Key and value are the same value: their gradients add up.
// CHECK: triax.add %[[DK]], %[[DV]] : tensor<1x4x4xf32>
// CHECK: triax.rms_norm_grad %{{.*}}, %{{.*}}, %{{.*}} saved(%{{.*}}) : (tensor<1x4x8xf32>, tensor<8xf32>, tensor<1x4x8xf32>, tensor<1x4xf32>)
// Without clipping the scale is the caller's, guarded the same way.
// CHECK-LABEL: func.func @optimizer_step
// CHECK-SAME: %{{.*}}: f32, %{{.*}}: i64, %[[SCALE:.*]]: f32) -> f32
// CHECK-NOT: arith.cmpf ogt
// CHECK: %[[FINITE:.*]] = arith.cmpf olt
// CHECK-NOT: arith.cmpf ogt
// CHECK: %[[GUARDED:.*]] = arith.select %[[FINITE]], %[[SCALE]], %{{.*}} : f32
// CHECK: triax.adamw @emb, %{{.*}}, lr %{{.*}}, step %{{.*}}, scale %[[GUARDED]] {{.*}}weight_decay = 1.000000e-01 : f64}

// -----

// An op on the path to the loss without a vector-Jacobian product.
triax.model @nondiff config = #triax.train_config<micro_batch = 1, seq = 2> {
  triax.param @emb : tensor<4x2xf32> init <normal, std = 0.02> decay
  func.func @forward(%tokens: tensor<1x2xi32>, %targets: tensor<1x2xi32>) -> tensor<f32> {
    %emb = triax.get_param @emb : tensor<4x2xf32>
    %x = triax.embedding %tokens, %emb : (tensor<1x2xi32>, tensor<4x2xf32>) -> tensor<1x2x2xf32>
    // expected-error @+1 {{'arith.addf' op lies on the path to the loss but cannot be differentiated (it does not implement DifferentiableOpInterface)}}
    %y = arith.addf %x, %x : tensor<1x2x2xf32>
    %logits = triax.linear %y, %emb {transpose_weight} : (tensor<1x2x2xf32>, tensor<4x2xf32>) -> tensor<1x2x4xf32>
    %loss = triax.cross_entropy %logits, %targets : (tensor<1x2x4xf32>, tensor<1x2xi32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// A parameter that does not reach the loss is reported and not updated.
// CHECK-LABEL: triax.model @unused
triax.model @unused config = #triax.train_config<micro_batch = 1, seq = 2> {
  triax.param @emb : tensor<4x2xf32> init <normal, std = 0.02> decay
  // expected-warning @+1 {{parameter does not reach the loss; it is not updated}}
  triax.param @spare : tensor<2xf32> init <zeros>
  func.func @forward(%tokens: tensor<1x2xi32>, %targets: tensor<1x2xi32>) -> tensor<f32> {
    %emb = triax.get_param @emb : tensor<4x2xf32>
    %x = triax.embedding %tokens, %emb : (tensor<1x2xi32>, tensor<4x2xf32>) -> tensor<1x2x2xf32>
    %logits = triax.linear %x, %emb {transpose_weight} : (tensor<1x2x2xf32>, tensor<4x2xf32>) -> tensor<1x2x4xf32>
    %loss = triax.cross_entropy %logits, %targets : (tensor<1x2x4xf32>, tensor<1x2xi32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}
// CHECK-LABEL: func.func @optimizer_step
// CHECK-NOT: @spare
// CHECK: return
