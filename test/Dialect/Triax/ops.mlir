// Round trip of every triax op and attribute: parse, print, parse again,
// and the same through the generic form.
// RUN: triax-opt %s | triax-opt | FileCheck %s
// RUN: triax-opt %s --mlir-print-op-generic | triax-opt | FileCheck %s

// CHECK-LABEL: triax.model @ops
// CHECK-SAME: config = #triax.train_config<optimizer = adamw, lr = 0.001, beta1 = 0.9, beta2 = 0.99, eps = 1.0e-06, weight_decay = 0.0, grad_clip = 0.0, global_batch = 8, micro_batch = 2, seq = 4, compute = bf16, master = f32>
triax.model @ops config = #triax.train_config<optimizer = adamw, lr = 1.0e-3, beta1 = 0.9, beta2 = 0.99, eps = 1.0e-6, weight_decay = 0, grad_clip = 0.0, global_batch = 8, micro_batch = 2, seq = 4, compute = bf16, master = f32> {
  // CHECK: triax.param @emb : tensor<16x8xf32> init <normal, std = 0.02> decay
  triax.param @emb : tensor<16x8xf32> init <normal, std = 0.02> decay
  // CHECK: triax.param @w : tensor<8x12xf32> init <normal, std = 1.0>{{$}}
  triax.param @w : tensor<8x12xf32> init <normal, std = 1.0>
  // CHECK: triax.param @b : tensor<12xf32> init <zeros>
  triax.param @b : tensor<12xf32> init <zeros>
  // CHECK: triax.param @g : tensor<8xf32> init <ones>
  triax.param @g : tensor<8xf32> init <ones>
  // CHECK: triax.param @wq : tensor<8x8xbf16> init <normal, std = 0.02> decay
  triax.param @wq : tensor<8x8xbf16> init <normal, std = 0.02> decay
  // CHECK: triax.param @wkv : tensor<8x4xbf16> init <normal, std = 0.02> decay
  triax.param @wkv : tensor<8x4xbf16> init <normal, std = 0.02> decay

  // CHECK-LABEL: func.func @forward
  func.func @forward(%tokens: tensor<2x4xi32>, %targets: tensor<2x4xi32>) -> tensor<f32> {
    // CHECK: %[[EMB:.*]] = triax.get_param @emb : tensor<16x8xf32>
    %emb = triax.get_param @emb : tensor<16x8xf32>
    // CHECK: %[[POS:.*]] = triax.position_ids : tensor<2x4xi32>
    %pos = triax.position_ids : tensor<2x4xi32>
    // CHECK: triax.embedding %{{.*}}, %[[EMB]] : (tensor<2x4xi32>, tensor<16x8xf32>) -> tensor<2x4x8xf32>
    %x = triax.embedding %tokens, %emb : (tensor<2x4xi32>, tensor<16x8xf32>) -> tensor<2x4x8xf32>
    %p = triax.embedding %pos, %emb : (tensor<2x4xi32>, tensor<16x8xf32>) -> tensor<2x4x8xf32>
    // CHECK: triax.add %{{.*}}, %{{.*}} : tensor<2x4x8xf32>
    %x1 = triax.add %x, %p : tensor<2x4x8xf32>
    // CHECK: %[[BLK:.*]] = triax.block "h.0"(%{{.*}}) : (tensor<2x4x8xf32>) -> tensor<2x4x8xf32> {
    // CHECK-NEXT: ^bb0(%[[IN:.*]]: tensor<2x4x8xf32>):
    %y = triax.block "h.0" (%x1) : (tensor<2x4x8xf32>) -> tensor<2x4x8xf32> {
    ^bb0(%in: tensor<2x4x8xf32>):
      %g = triax.get_param @g : tensor<8xf32>
      // CHECK: triax.layer_norm %[[IN]], %{{.*}}, %{{.*}} : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
      %n = triax.layer_norm %in, %g, %g : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
      // CHECK: triax.layer_norm {{.*}} {eps = 9.9999999999999995E-7 : f64}
      %n2 = triax.layer_norm %n, %g, %g {eps = 1.0e-6 : f64} : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
      // CHECK: triax.rms_norm %{{.*}}, %{{.*}} : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
      %r = triax.rms_norm %n2, %g : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
      %w = triax.get_param @w : tensor<8x12xf32>
      %b = triax.get_param @b : tensor<12xf32>
      // CHECK: triax.linear %{{.*}}, %{{.*}}, %{{.*}} : (tensor<2x4x8xf32>, tensor<8x12xf32>, tensor<12xf32>) -> tensor<2x4x12xf32>
      %l = triax.linear %r, %w, %b : (tensor<2x4x8xf32>, tensor<8x12xf32>, tensor<12xf32>) -> tensor<2x4x12xf32>
      // CHECK: triax.linear %{{.*}}, %{{.*}} : (tensor<2x4x8xf32>, tensor<8x12xf32>) -> tensor<2x4x12xf32>
      %l2 = triax.linear %r, %w : (tensor<2x4x8xf32>, tensor<8x12xf32>) -> tensor<2x4x12xf32>
      // CHECK: triax.gelu %{{.*}} : tensor<2x4x12xf32>
      %ge = triax.gelu %l : tensor<2x4x12xf32>
      // CHECK: triax.silu %{{.*}} : tensor<2x4x12xf32>
      %si = triax.silu %l2 : tensor<2x4x12xf32>
      // CHECK: triax.mul %{{.*}}, %{{.*}} : tensor<2x4x12xf32>
      %m = triax.mul %ge, %si : tensor<2x4x12xf32>
      // CHECK: triax.linear %{{.*}}, %{{.*}} {transpose_weight} : (tensor<2x4x12xf32>, tensor<8x12xf32>) -> tensor<2x4x8xf32>
      %back = triax.linear %m, %w {transpose_weight} : (tensor<2x4x12xf32>, tensor<8x12xf32>) -> tensor<2x4x8xf32>
      // CHECK: %[[POS:.*]] = triax.position_ids : tensor<2x4xi32>
      %rpos = triax.position_ids : tensor<2x4xi32>
      // CHECK: triax.rope %{{.*}}, %[[POS]] heads = 2 {theta = 5.000000e+05 : f64} : (tensor<2x4x8xf32>, tensor<2x4xi32>) -> tensor<2x4x8xf32>
      %qr = triax.rope %back, %rpos heads = 2 {theta = 500000.0 : f64} : (tensor<2x4x8xf32>, tensor<2x4xi32>) -> tensor<2x4x8xf32>
      // CHECK: triax.rope %{{.*}}, %[[POS]] heads = 2 {inverse} : (tensor<2x4x8xf32>, tensor<2x4xi32>) -> tensor<2x4x8xf32>
      %qi = triax.rope %qr, %rpos heads = 2 {inverse} : (tensor<2x4x8xf32>, tensor<2x4xi32>) -> tensor<2x4x8xf32>
      // CHECK: triax.attention %{{.*}}, %{{.*}}, %{{.*}} heads = 2 : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
      %a = triax.attention %qi, %back, %back heads = 2 : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
      // CHECK: triax.yield %{{.*}} : tensor<2x4x8xf32>
      triax.yield %a : tensor<2x4x8xf32>
    }
    // CHECK: triax.linear %[[BLK]], %[[EMB]] {transpose_weight}
    %logits = triax.linear %y, %emb {transpose_weight} : (tensor<2x4x8xf32>, tensor<16x8xf32>) -> tensor<2x4x16xf32>
    // CHECK: triax.cross_entropy %{{.*}}, %{{.*}} : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> tensor<f32>
    %loss = triax.cross_entropy %logits, %targets : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> tensor<f32>
    return %loss : tensor<f32>
  }

  // Grouped-query attention in bf16: 4 query heads share 2 key/value heads.
  // CHECK-LABEL: func.func @gqa
  func.func @gqa(%h: tensor<2x4x8xbf16>) -> tensor<2x4x8xbf16> {
    %wq = triax.get_param @wq : tensor<8x8xbf16>
    %wkv = triax.get_param @wkv : tensor<8x4xbf16>
    %q = triax.linear %h, %wq : (tensor<2x4x8xbf16>, tensor<8x8xbf16>) -> tensor<2x4x8xbf16>
    %kv = triax.linear %h, %wkv : (tensor<2x4x8xbf16>, tensor<8x4xbf16>) -> tensor<2x4x4xbf16>
    // CHECK: triax.attention %{{.*}}, %{{.*}}, %{{.*}} heads = 4 kv_heads = 2 : (tensor<2x4x8xbf16>, tensor<2x4x4xbf16>, tensor<2x4x4xbf16>) -> tensor<2x4x8xbf16>
    %a = triax.attention %q, %kv, %kv heads = 4 kv_heads = 2 : (tensor<2x4x8xbf16>, tensor<2x4x4xbf16>, tensor<2x4x4xbf16>) -> tensor<2x4x8xbf16>
    return %a : tensor<2x4x8xbf16>
  }

  // The norms' rows' statistics (f32 with bf16 inputs, the input's shape
  // without its last dimension) and the gradients that read them.
  // CHECK-LABEL: func.func @norm_stats
  func.func @norm_stats(%x: tensor<2x4x8xbf16>, %w: tensor<8xbf16>, %dy: tensor<2x4x8xbf16>) -> (tensor<2x4x8xbf16>, tensor<2x4x8xbf16>) {
    // CHECK: %{{.*}}, %[[S:.*]]:2 = triax.layer_norm %{{.*}}, %{{.*}}, %{{.*}} : (tensor<2x4x8xbf16>, tensor<8xbf16>, tensor<8xbf16>) -> (tensor<2x4x8xbf16>, tensor<2x4xf32>, tensor<2x4xf32>)
    %y, %mean, %rstd = triax.layer_norm %x, %w, %w : (tensor<2x4x8xbf16>, tensor<8xbf16>, tensor<8xbf16>) -> (tensor<2x4x8xbf16>, tensor<2x4xf32>, tensor<2x4xf32>)
    // CHECK: triax.layer_norm_grad %{{.*}}, %{{.*}}, %{{.*}} saved(%[[S]]#0, %[[S]]#1) : (tensor<2x4x8xbf16>, tensor<8xbf16>, tensor<2x4x8xbf16>, tensor<2x4xf32>, tensor<2x4xf32>) -> (tensor<2x4x8xbf16>, tensor<8xbf16>, tensor<8xbf16>)
    %dx, %dw, %db = triax.layer_norm_grad %x, %w, %dy saved(%mean, %rstd) : (tensor<2x4x8xbf16>, tensor<8xbf16>, tensor<2x4x8xbf16>, tensor<2x4xf32>, tensor<2x4xf32>) -> (tensor<2x4x8xbf16>, tensor<8xbf16>, tensor<8xbf16>)
    // CHECK: %{{.*}}, %[[R:.*]] = triax.rms_norm %{{.*}}, %{{.*}} : (tensor<2x4x8xbf16>, tensor<8xbf16>) -> (tensor<2x4x8xbf16>, tensor<2x4xf32>)
    %r, %rs = triax.rms_norm %x, %w : (tensor<2x4x8xbf16>, tensor<8xbf16>) -> (tensor<2x4x8xbf16>, tensor<2x4xf32>)
    // CHECK: triax.rms_norm_grad %{{.*}}, %{{.*}}, %{{.*}} saved(%[[R]]) : (tensor<2x4x8xbf16>, tensor<8xbf16>, tensor<2x4x8xbf16>, tensor<2x4xf32>) -> (tensor<2x4x8xbf16>, tensor<8xbf16>)
    %dr, %drw = triax.rms_norm_grad %x, %w, %dy saved(%rs) : (tensor<2x4x8xbf16>, tensor<8xbf16>, tensor<2x4x8xbf16>, tensor<2x4xf32>) -> (tensor<2x4x8xbf16>, tensor<8xbf16>)
    return %dx, %dr : tensor<2x4x8xbf16>, tensor<2x4x8xbf16>
  }

  // The rows' log-sum-exp as a second result (f32 with bf16 operands,
  // [batch, heads, seq]) and the gradient that reads it with the output.
  // CHECK-LABEL: func.func @saved_lse
  func.func @saved_lse(%q: tensor<2x4x8xbf16>, %kv: tensor<2x4x4xbf16>, %dy: tensor<2x4x8xbf16>) -> tensor<2x4x8xbf16> {
    // CHECK: %[[A:.*]], %[[L:.*]] = triax.attention %{{.*}}, %{{.*}}, %{{.*}} heads = 4 kv_heads = 2 : (tensor<2x4x8xbf16>, tensor<2x4x4xbf16>, tensor<2x4x4xbf16>) -> (tensor<2x4x8xbf16>, tensor<2x4x4xf32>)
    %a, %lse = triax.attention %q, %kv, %kv heads = 4 kv_heads = 2 : (tensor<2x4x8xbf16>, tensor<2x4x4xbf16>, tensor<2x4x4xbf16>) -> (tensor<2x4x8xbf16>, tensor<2x4x4xf32>)
    // CHECK: triax.attention_grad %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} saved(%[[A]], %[[L]]) heads = 4 kv_heads = 2 : (tensor<2x4x8xbf16>, tensor<2x4x4xbf16>, tensor<2x4x4xbf16>, tensor<2x4x8xbf16>, tensor<2x4x8xbf16>, tensor<2x4x4xf32>) -> (tensor<2x4x8xbf16>, tensor<2x4x4xbf16>, tensor<2x4x4xbf16>)
    %dq, %dk, %dv = triax.attention_grad %q, %kv, %kv, %dy saved(%a, %lse) heads = 4 kv_heads = 2 : (tensor<2x4x8xbf16>, tensor<2x4x4xbf16>, tensor<2x4x4xbf16>, tensor<2x4x8xbf16>, tensor<2x4x8xbf16>, tensor<2x4x4xf32>) -> (tensor<2x4x8xbf16>, tensor<2x4x4xbf16>, tensor<2x4x4xbf16>)
    return %dq : tensor<2x4x8xbf16>
  }

  // A block with several inputs and results, and one with none.
  // CHECK-LABEL: func.func @blocks
  func.func @blocks(%a: tensor<2xf32>, %b: tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>) {
    // CHECK: triax.block "pair"(%{{.*}}, %{{.*}}) : (tensor<2xf32>, tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>)
    %r:2 = triax.block "pair" (%a, %b) : (tensor<2xf32>, tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>) {
    ^bb0(%x: tensor<2xf32>, %y: tensor<2xf32>):
      triax.yield %y, %x : tensor<2xf32>, tensor<2xf32>
    }
    // CHECK: triax.block "empty"() : () -> ()
    // CHECK-NEXT: triax.yield{{$}}
    triax.block "empty" () : () -> () {
      triax.yield
    }
    return %r#0, %r#1 : tensor<2xf32>, tensor<2xf32>
  }
}

// The defaults of #triax.train_config, printed in full.
// CHECK-LABEL: triax.model @defaults
// CHECK-SAME: #triax.train_config<optimizer = adamw, lr = 0.0006, beta1 = 0.9, beta2 = 0.95, eps = 1.0e-08, weight_decay = 0.1, grad_clip = 1.0, global_batch = 1, micro_batch = 1, seq = 1024, compute = f32, master = f32>
triax.model @defaults config = #triax.train_config<> {
  func.func @forward(%t: tensor<1x1024xi64>, %y: tensor<1x1024xi64>) -> tensor<f32> {
    %z = arith.constant dense<0.0> : tensor<f32>
    return %z : tensor<f32>
  }
}
