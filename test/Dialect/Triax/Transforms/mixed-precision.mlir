// triax-mixed-precision: activations become bf16 (also through the
// collectives that pass them on), the master state (params, gradient
// buffers, optimizer) stays f32, and converts sit where they meet. Weight
// gradients (read only by accumulate_grad) are written in f32 by their
// producers.
// RUN: triax-opt %s -split-input-file --triax-mixed-precision | FileCheck %s
// RUN: triax-opt %s -split-input-file --triax-mixed-precision=compute=f32 | FileCheck %s --check-prefix=F32

// CHECK-LABEL: triax.model @tied
// CHECK-SAME: compute = bf16, master = f32
// The parameters stay f32.
// CHECK: triax.param @emb : tensor<16x8xf32>
// F32-LABEL: triax.model @tied
// F32-SAME: compute = f32
// F32-NOT: bf16
triax.model @tied config = #triax.train_config<micro_batch = 2, seq = 4> {
  triax.param @emb : tensor<16x8xf32> init <normal, std = 0.02> decay
  triax.param @ln.weight : tensor<8xf32> init <ones>
  triax.param @ln.bias : tensor<8xf32> init <zeros>
  func.func @forward(%tokens: tensor<2x4xi32>, %targets: tensor<2x4xi32>) -> tensor<f32> {
    %emb = triax.get_param @emb : tensor<16x8xf32>
    %x = triax.embedding %tokens, %emb : (tensor<2x4xi32>, tensor<16x8xf32>) -> tensor<2x4x8xf32>
    %logits = triax.linear %x, %emb {transpose_weight} : (tensor<2x4x8xf32>, tensor<16x8xf32>) -> tensor<2x4x16xf32>
    %loss = triax.cross_entropy %logits, %targets : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
  // CHECK-LABEL: func.func @forward_backward
  // The entry signature is the runtime's: tokens in, the f32 loss out.
  // CHECK-SAME: (%{{.*}}: tensor<2x4xi32>, %{{.*}}: tensor<2x4xi32>) -> tensor<f32>
  // One conversion of the parameter read, shared by both layer ops.
  // CHECK: %[[EMB:.*]] = triax.get_param @emb : tensor<16x8xf32>
  // CHECK-NEXT: %[[EMB16:.*]] = triax.convert %[[EMB]] : tensor<16x8xf32> to tensor<16x8xbf16>
  // CHECK: %[[X:.*]] = triax.embedding %{{.*}}, %[[EMB16]] : (tensor<2x4xi32>, tensor<16x8xbf16>) -> tensor<2x4x8xbf16>
  // CHECK: %[[W:.*]] = triax.get_param @ln.weight : tensor<8xf32>
  // CHECK-NEXT: %[[W16:.*]] = triax.convert %[[W]] : tensor<8xf32> to tensor<8xbf16>
  // CHECK: %[[B:.*]] = triax.get_param @ln.bias : tensor<8xf32>
  // CHECK-NEXT: %[[B16:.*]] = triax.convert %[[B]] : tensor<8xf32> to tensor<8xbf16>
  // CHECK: %[[H:.*]] = triax.layer_norm %[[X]], %[[W16]], %[[B16]] : (tensor<2x4x8xbf16>, tensor<8xbf16>, tensor<8xbf16>) -> tensor<2x4x8xbf16>
  // CHECK: %[[LOGITS:.*]] = triax.linear %[[H]], %[[EMB16]] {transpose_weight} : (tensor<2x4x8xbf16>, tensor<16x8xbf16>) -> tensor<2x4x16xbf16>
  // The loss and its gradient seed are f32 scalars.
  // CHECK: triax.cross_entropy %[[LOGITS]], %{{.*}} : (tensor<2x4x16xbf16>, tensor<2x4xi32>) -> tensor<f32>
  // CHECK: %[[DLOGITS:.*]] = triax.cross_entropy_grad %[[LOGITS]], %{{.*}}, %{{.*}} : (tensor<2x4x16xbf16>, tensor<2x4xi32>, tensor<f32>) -> tensor<2x4x16xbf16>
  // CHECK: %[[DH:.*]] = triax.linear %[[DLOGITS]], %[[EMB16]] : (tensor<2x4x16xbf16>, tensor<16x8xbf16>) -> tensor<2x4x8xbf16>
  // Weight gradients: bf16 operands, f32 results; their sum is f32 too.
  // CHECK: %[[DW1:.*]] = triax.linear_weight_grad %[[H]], %[[DLOGITS]] {transpose_weight} : (tensor<2x4x8xbf16>, tensor<2x4x16xbf16>) -> tensor<16x8xf32>
  // CHECK: triax.layer_norm_grad %[[X]], %[[W16]], %[[DH]] : (tensor<2x4x8xbf16>, tensor<8xbf16>, tensor<2x4x8xbf16>) -> (tensor<2x4x8xbf16>, tensor<8xf32>, tensor<8xf32>)
  // CHECK: triax.accumulate_grad @ln.weight, %{{.*}} : tensor<8xf32>
  // CHECK: %[[DW2:.*]] = triax.embedding_grad %{{.*}}, %{{.*}} : (tensor<2x4xi32>, tensor<2x4x8xbf16>) -> tensor<16x8xf32>
  // CHECK: %[[DW:.*]] = triax.add %[[DW1]], %[[DW2]] : tensor<16x8xf32>
  // CHECK: triax.accumulate_grad @emb, %[[DW]] : tensor<16x8xf32>
  // CHECK-NOT: triax.convert
  // CHECK: return %{{.*}} : tensor<f32>
  func.func @forward_backward(%tokens: tensor<2x4xi32>, %targets: tensor<2x4xi32>) -> tensor<f32> {
    %emb = triax.get_param @emb : tensor<16x8xf32>
    %x = triax.embedding %tokens, %emb : (tensor<2x4xi32>, tensor<16x8xf32>) -> tensor<2x4x8xf32>
    %w = triax.get_param @ln.weight : tensor<8xf32>
    %b = triax.get_param @ln.bias : tensor<8xf32>
    %h = triax.layer_norm %x, %w, %b : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
    %logits = triax.linear %h, %emb {transpose_weight} : (tensor<2x4x8xf32>, tensor<16x8xf32>) -> tensor<2x4x16xf32>
    %loss = triax.cross_entropy %logits, %targets : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> tensor<f32>
    %one = arith.constant dense<1.0> : tensor<f32>
    %dlogits = triax.cross_entropy_grad %logits, %targets, %one : (tensor<2x4x16xf32>, tensor<2x4xi32>, tensor<f32>) -> tensor<2x4x16xf32>
    %dh = triax.linear %dlogits, %emb : (tensor<2x4x16xf32>, tensor<16x8xf32>) -> tensor<2x4x8xf32>
    %dw1 = triax.linear_weight_grad %h, %dlogits {transpose_weight} : (tensor<2x4x8xf32>, tensor<2x4x16xf32>) -> tensor<16x8xf32>
    %dx, %dlw, %dlb = triax.layer_norm_grad %x, %w, %dh : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>)
    triax.accumulate_grad @ln.weight, %dlw : tensor<8xf32>
    triax.accumulate_grad @ln.bias, %dlb : tensor<8xf32>
    %dw2 = triax.embedding_grad %tokens, %dx : (tensor<2x4xi32>, tensor<2x4x8xf32>) -> tensor<16x8xf32>
    %dw = triax.add %dw1, %dw2 : tensor<16x8xf32>
    triax.accumulate_grad @emb, %dw : tensor<16x8xf32>
    return %loss : tensor<f32>
  }
  // The optimizer step is all master state: nothing changes.
  // CHECK-LABEL: func.func @optimizer_step
  // CHECK-NOT: bf16
  // CHECK: triax.get_grad @emb : tensor<16x8xf32>
  // CHECK: triax.global_norm %{{.*}} : tensor<16x8xf32> -> tensor<f32>
  // CHECK: triax.adamw @emb, %{{.*}} : tensor<16x8xf32>
  // CHECK-NOT: bf16
  // CHECK: return
  func.func @optimizer_step(%lr: f32, %step: i64, %scale: f32) -> f32 {
    %g = triax.get_grad @emb : tensor<16x8xf32>
    %n = triax.global_norm %g : tensor<16x8xf32> -> tensor<f32>
    %nf = tensor.extract %n[] : tensor<f32>
    triax.adamw @emb, %g, lr %lr, step %step, scale %scale {beta1 = 0.9 : f64, beta2 = 0.95 : f64, eps = 1.0e-8 : f64, weight_decay = 0.1 : f64} : tensor<16x8xf32>
    return %nf : f32
  }
}

// -----

// Tensor parallelism: the collectives of activations move bf16, as
// Megatron-LM moves them and as the cost model counts them ([C5]): a
// collective's result is in its operand's class. The copy_to_group takes
// and gives the block's bf16 input; the row-split linear writes its
// partial sum in bf16, which the all_reduce sums and the layer ops after
// it read, with no convert in between.
// CHECK-LABEL: triax.model @tp
// CHECK-LABEL: func.func @forward_backward
// CHECK: %[[Y:.*]] = triax.block "h.0"(%{{.*}}) : (tensor<2x4x8xbf16>) -> tensor<2x4x8xbf16> {
// CHECK-NEXT: ^bb0(%[[IN:.*]]: tensor<2x4x8xbf16>):
// CHECK-NEXT: %[[C:.*]] = dist.copy_to_group %[[IN]] over @mesh ["tp"] : tensor<2x4x8xbf16>
// CHECK: %[[A:.*]] = triax.linear %[[C]], %{{.*}} : (tensor<2x4x8xbf16>, tensor<8x4xbf16>) -> tensor<2x4x4xbf16>
// CHECK: %[[P:.*]] = triax.linear %[[A]], %{{.*}} : (tensor<2x4x4xbf16>, tensor<4x8xbf16>) -> tensor<2x4x8xbf16>
// CHECK-NEXT: %[[S:.*]] = dist.all_reduce sum %[[P]] over @mesh ["tp"] : tensor<2x4x8xbf16>
// CHECK-NOT: triax.convert %[[S]]
// CHECK: %[[R:.*]] = triax.bias_add %[[S]], %{{.*}} : tensor<2x4x8xbf16>, tensor<8xbf16>
// CHECK: triax.yield %{{.*}} : tensor<2x4x8xbf16>
dist.mesh @mesh <["tp"=2]>
triax.model @tp config = #triax.train_config<micro_batch = 2, seq = 4> {
  triax.param @emb : tensor<16x8xf32> init <normal, std = 0.02> decay
  triax.param @w1 : tensor<8x8xf32> init <normal, std = 0.02> decay {dist.sharding = #dist.sharding<@mesh, [{}, {"tp"}]>}
  triax.param @w2 : tensor<8x8xf32> init <normal, std = 0.02> decay {dist.sharding = #dist.sharding<@mesh, [{"tp"}, {}]>}
  triax.param @b2 : tensor<8xf32> init <zeros>
  func.func @forward(%tokens: tensor<2x4xi32>, %targets: tensor<2x4xi32>) -> tensor<f32> {
    %emb = triax.get_param @emb : tensor<16x8xf32>
    %x = triax.embedding %tokens, %emb : (tensor<2x4xi32>, tensor<16x8xf32>) -> tensor<2x4x8xf32>
    %logits = triax.linear %x, %emb {transpose_weight} : (tensor<2x4x8xf32>, tensor<16x8xf32>) -> tensor<2x4x16xf32>
    %loss = triax.cross_entropy %logits, %targets : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
  func.func @forward_backward(%tokens: tensor<2x4xi32>, %targets: tensor<2x4xi32>) -> tensor<f32> {
    %emb = triax.get_param @emb : tensor<16x8xf32>
    %x = triax.embedding %tokens, %emb : (tensor<2x4xi32>, tensor<16x8xf32>) -> tensor<2x4x8xf32>
    %y = triax.block "h.0"(%x) : (tensor<2x4x8xf32>) -> tensor<2x4x8xf32> {
    ^bb0(%in: tensor<2x4x8xf32>):
      %c = dist.copy_to_group %in over @mesh ["tp"] : tensor<2x4x8xf32>
      %w1 = triax.get_param @w1 : tensor<8x4xf32>
      %a = triax.linear %c, %w1 : (tensor<2x4x8xf32>, tensor<8x4xf32>) -> tensor<2x4x4xf32>
      %w2 = triax.get_param @w2 : tensor<4x8xf32>
      %p = triax.linear %a, %w2 : (tensor<2x4x4xf32>, tensor<4x8xf32>) -> tensor<2x4x8xf32>
      %s = dist.all_reduce sum %p over @mesh ["tp"] : tensor<2x4x8xf32>
      %b2 = triax.get_param @b2 : tensor<8xf32>
      %r = triax.bias_add %s, %b2 : tensor<2x4x8xf32>, tensor<8xf32>
      %o = triax.add %r, %in : tensor<2x4x8xf32>
      triax.yield %o : tensor<2x4x8xf32>
    }
    %logits = triax.linear %y, %emb {transpose_weight} : (tensor<2x4x8xf32>, tensor<16x8xf32>) -> tensor<2x4x16xf32>
    %loss = triax.cross_entropy %logits, %targets : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// A pipeline stage function: its signature follows the values that cross
// it. Its argument is read by a layer op (bf16: what comes from dist.recv is
// converted before the call); its result is read only by dist.send (f32:
// the linear writes it in f32, no conversion at all). A message whose
// other side is not in the module (tags 0 and 1 here) stays f32.
// CHECK-LABEL: triax.model @stages
// CHECK-LABEL: func.func private @stage1
// CHECK-SAME: (%[[X:.*]]: tensor<2x4x8xbf16>) -> tensor<2x4x8xf32>
// CHECK: %[[G:.*]] = triax.gelu %[[X]] : tensor<2x4x8xbf16>
// CHECK: triax.linear %[[G]], %{{.*}} : (tensor<2x4x8xbf16>, tensor<8x8xbf16>) -> tensor<2x4x8xf32>
// CHECK-LABEL: func.func @pipeline_step
// CHECK: %[[R:.*]] = dist.recv over @mesh ["pp"] from 0 tag 0 : tensor<2x4x8xf32>
// CHECK-NEXT: %[[R16:.*]] = triax.convert %[[R]] : tensor<2x4x8xf32> to tensor<2x4x8xbf16>
// CHECK-NEXT: %[[O:.*]] = call @stage1(%[[R16]]) : (tensor<2x4x8xbf16>) -> tensor<2x4x8xf32>
// CHECK-NEXT: dist.send %[[O]] over @mesh ["pp"] to 0 tag 1 : tensor<2x4x8xf32>
dist.mesh @mesh <["pp"=2]>
triax.model @stages config = #triax.train_config<micro_batch = 2, seq = 4> {
  triax.param @emb : tensor<16x8xf32> init <normal, std = 0.02> decay
  triax.param @w : tensor<8x8xf32> init <normal, std = 0.02> decay
  func.func @forward(%tokens: tensor<2x4xi32>, %targets: tensor<2x4xi32>) -> tensor<f32> {
    %emb = triax.get_param @emb : tensor<16x8xf32>
    %x = triax.embedding %tokens, %emb : (tensor<2x4xi32>, tensor<16x8xf32>) -> tensor<2x4x8xf32>
    %logits = triax.linear %x, %emb {transpose_weight} : (tensor<2x4x8xf32>, tensor<16x8xf32>) -> tensor<2x4x16xf32>
    %loss = triax.cross_entropy %logits, %targets : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
  func.func private @stage1(%x: tensor<2x4x8xf32>) -> tensor<2x4x8xf32> {
    %g = triax.gelu %x : tensor<2x4x8xf32>
    %w = triax.get_param @w : tensor<8x8xf32>
    %y = triax.linear %g, %w : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
    return %y : tensor<2x4x8xf32>
  }
  func.func @pipeline_step(%tokens: tensor<2x4xi32>, %targets: tensor<2x4xi32>) -> f32 {
    %r = dist.recv over @mesh ["pp"] from 0 tag 0 : tensor<2x4x8xf32>
    %o = func.call @stage1(%r) : (tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
    dist.send %o over @mesh ["pp"] to 0 tag 1 : tensor<2x4x8xf32>
    %z = arith.constant 0.0 : f32
    return %z : f32
  }
}

// -----

// A pipeline's messages: the values sent and received with one tag are one
// class. Stage 0's output goes to stage 1 (tag 0), whose layer ops read it:
// bf16 on both sides of the wire, sent as the linear writes it and
// received as the gelu reads it, no conversion. The gradient coming back
// (tag 1) is read only by the master state on the other side (its
// accumulate_grad): f32 on both sides.
// CHECK-LABEL: triax.model @messages
// CHECK-LABEL: func.func @pipeline_step
// CHECK: %[[Y:.*]] = triax.linear %{{.*}}, %{{.*}} : (tensor<2x4x8xbf16>, tensor<8x8xbf16>) -> tensor<2x4x8xbf16>
// CHECK-NEXT: dist.send %[[Y]] over @mesh ["pp"] to 1 tag 0 : tensor<2x4x8xbf16>
// CHECK: %[[R:.*]] = dist.recv over @mesh ["pp"] from 0 tag 0 : tensor<2x4x8xbf16>
// CHECK-NEXT: triax.gelu %[[R]] : tensor<2x4x8xbf16>
// CHECK: dist.send %{{.*}} over @mesh ["pp"] to 0 tag 1 : tensor<8x8xf32>
// CHECK: %[[G:.*]] = dist.recv over @mesh ["pp"] from 1 tag 1 : tensor<8x8xf32>
// CHECK-NEXT: triax.accumulate_grad @w, %[[G]] : tensor<8x8xf32>
dist.mesh @mesh <["pp"=2]>
triax.model @messages config = #triax.train_config<micro_batch = 2, seq = 4> {
  triax.param @emb : tensor<16x8xf32> init <normal, std = 0.02> decay
  triax.param @w : tensor<8x8xf32> init <normal, std = 0.02> decay
  func.func @forward(%tokens: tensor<2x4xi32>, %targets: tensor<2x4xi32>) -> tensor<f32> {
    %emb = triax.get_param @emb : tensor<16x8xf32>
    %x = triax.embedding %tokens, %emb : (tensor<2x4xi32>, tensor<16x8xf32>) -> tensor<2x4x8xf32>
    %logits = triax.linear %x, %emb {transpose_weight} : (tensor<2x4x8xf32>, tensor<16x8xf32>) -> tensor<2x4x16xf32>
    %loss = triax.cross_entropy %logits, %targets : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
  func.func @pipeline_step(%tokens: tensor<2x4xi32>, %targets: tensor<2x4xi32>) -> f32 {
    %emb = triax.get_param @emb : tensor<16x8xf32>
    %x = triax.embedding %tokens, %emb : (tensor<2x4xi32>, tensor<16x8xf32>) -> tensor<2x4x8xf32>
    %w = triax.get_param @w : tensor<8x8xf32>
    %y = triax.linear %x, %w : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
    dist.send %y over @mesh ["pp"] to 1 tag 0 : tensor<2x4x8xf32>
    %r = dist.recv over @mesh ["pp"] from 0 tag 0 : tensor<2x4x8xf32>
    %g = triax.gelu %r : tensor<2x4x8xf32>
    %dw = triax.linear_weight_grad %g, %g : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<8x8xf32>
    dist.send %dw over @mesh ["pp"] to 0 tag 1 : tensor<8x8xf32>
    %d = dist.recv over @mesh ["pp"] from 1 tag 1 : tensor<8x8xf32>
    triax.accumulate_grad @w, %d : tensor<8x8xf32>
    %z = arith.constant 0.0 : f32
    return %z : f32
  }
}
