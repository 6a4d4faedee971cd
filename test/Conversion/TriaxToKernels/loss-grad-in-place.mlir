// convert-triax-to-kernels{loss-grad-in-place} (the CPU pipeline sets it):
// the cross-entropy's gradient overwrites its logits' buffer when the
// kernels allocated that buffer and every other reader of the logits comes
// before the gradient in its block, none of them a dist op: the rule of
// elementwise-in-place (mayWriteOver), marked before the blocks are
// inlined as the cost model's [A9] sees them. Each iteration reads an element and
// then writes it (after the row's statistics), so the arithmetic is that
// of a separate buffer, bit for bit (e2e: the losses of tiny and gpt2 do
// not move). Otherwise, and without the option, a new buffer.
// RUN: triax-opt %s --split-input-file --convert-triax-to-kernels=loss-grad-in-place --cse | FileCheck %s
// RUN: triax-opt %s --split-input-file --convert-triax-to-kernels | FileCheck %s --check-prefix=OFF

// The loss, then its gradient: the GEMM's logits buffer is the gradient's.
// CHECK-LABEL: func.func @grad_after_loss(
// CHECK:         %[[LOGITS:.*]] = memref.alloc() : memref<2x3x16xf32>
// CHECK:         %[[ROWS:.*]] = memref.collapse_shape %[[LOGITS]] {{\[}}[0, 1], [2]] : memref<2x3x16xf32> into memref<6x16xf32>
// CHECK:         call @trx_sgemm
// No second buffer up to the gradient's store into the logits' rows (the
// only store into them: the GEMM writes them through the call).
// CHECK-NOT:     memref.alloc() : memref<2x3x16xf32>
// CHECK:         memref.store %{{.*}}, %[[ROWS]][%{{.*}}, %{{.*}}] : memref<6x16xf32>
// CHECK-NOT:     memref.alloc() : memref<2x3x16xf32>
// CHECK:         return %{{.*}}, %[[LOGITS]]
// OFF-LABEL:   func.func @grad_after_loss(
// OFF:           memref.alloc() : memref<2x3x16xf32>
// OFF:           memref.alloc() : memref<2x3x16xf32>
triax.model @m config = #triax.train_config<micro_batch = 2, seq = 3, global_batch = 2> {
  triax.param @w : tensor<16x8xf32> init <normal, std = 0.02>
  func.func @forward(%tokens: tensor<2x3xi32>, %targets: tensor<2x3xi32>) -> tensor<f32> {
    %w = triax.get_param @w : tensor<16x8xf32>
    %x = triax.embedding %tokens, %w : (tensor<2x3xi32>, tensor<16x8xf32>) -> tensor<2x3x8xf32>
    %logits = triax.linear %x, %w {transpose_weight} : (tensor<2x3x8xf32>, tensor<16x8xf32>) -> tensor<2x3x16xf32>
    %loss = triax.cross_entropy %logits, %targets : (tensor<2x3x16xf32>, tensor<2x3xi32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}
func.func @grad_after_loss(%x: tensor<2x3x8xf32>, %w: tensor<8x16xf32>, %t: tensor<2x3xi32>, %d: tensor<f32>) -> (tensor<f32>, tensor<2x3x16xf32>) {
  %logits = triax.linear %x, %w : (tensor<2x3x8xf32>, tensor<8x16xf32>) -> tensor<2x3x16xf32>
  %loss = triax.cross_entropy %logits, %t : (tensor<2x3x16xf32>, tensor<2x3xi32>) -> tensor<f32>
  %g = triax.cross_entropy_grad %logits, %t, %d : (tensor<2x3x16xf32>, tensor<2x3xi32>, tensor<f32>) -> tensor<2x3x16xf32>
  return %loss, %g : tensor<f32>, tensor<2x3x16xf32>
}

// -----

// The logits are read after the gradient: a new buffer.
// CHECK-LABEL: func.func @read_after_grad(
// CHECK:         memref.alloc() : memref<2x3x16xf32>
// CHECK:         call @trx_sgemm
// CHECK:         memref.alloc() : memref<2x3x16xf32>
triax.model @m config = #triax.train_config<micro_batch = 2, seq = 3, global_batch = 2> {
  triax.param @w : tensor<16x8xf32> init <normal, std = 0.02>
  func.func @forward(%tokens: tensor<2x3xi32>, %targets: tensor<2x3xi32>) -> tensor<f32> {
    %w = triax.get_param @w : tensor<16x8xf32>
    %x = triax.embedding %tokens, %w : (tensor<2x3xi32>, tensor<16x8xf32>) -> tensor<2x3x8xf32>
    %logits = triax.linear %x, %w {transpose_weight} : (tensor<2x3x8xf32>, tensor<16x8xf32>) -> tensor<2x3x16xf32>
    %loss = triax.cross_entropy %logits, %targets : (tensor<2x3x16xf32>, tensor<2x3xi32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}
func.func @read_after_grad(%x: tensor<2x3x8xf32>, %w: tensor<8x16xf32>, %t: tensor<2x3xi32>, %d: tensor<f32>) -> (tensor<f32>, tensor<2x3x16xf32>) {
  %logits = triax.linear %x, %w : (tensor<2x3x8xf32>, tensor<8x16xf32>) -> tensor<2x3x16xf32>
  %g = triax.cross_entropy_grad %logits, %t, %d : (tensor<2x3x16xf32>, tensor<2x3xi32>, tensor<f32>) -> tensor<2x3x16xf32>
  %loss = triax.cross_entropy %logits, %t : (tensor<2x3x16xf32>, tensor<2x3xi32>) -> tensor<f32>
  return %loss, %g : tensor<f32>, tensor<2x3x16xf32>
}

// -----

// The logits are the caller's (a function argument): a new buffer.
// CHECK-LABEL: func.func @caller_logits(
// CHECK-SAME:    %[[L:[a-z0-9]+]]: memref<2x3x16xf32>
// CHECK:         %[[G:.*]] = memref.alloc() : memref<2x3x16xf32>
// CHECK:         return %[[G]]
triax.model @m config = #triax.train_config<micro_batch = 2, seq = 3, global_batch = 2> {
  triax.param @w : tensor<16x8xf32> init <normal, std = 0.02>
  func.func @forward(%tokens: tensor<2x3xi32>, %targets: tensor<2x3xi32>) -> tensor<f32> {
    %w = triax.get_param @w : tensor<16x8xf32>
    %x = triax.embedding %tokens, %w : (tensor<2x3xi32>, tensor<16x8xf32>) -> tensor<2x3x8xf32>
    %logits = triax.linear %x, %w {transpose_weight} : (tensor<2x3x8xf32>, tensor<16x8xf32>) -> tensor<2x3x16xf32>
    %loss = triax.cross_entropy %logits, %targets : (tensor<2x3x16xf32>, tensor<2x3xi32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}
func.func @caller_logits(%logits: tensor<2x3x16xf32>, %t: tensor<2x3xi32>, %d: tensor<f32>) -> tensor<2x3x16xf32> {
  %g = triax.cross_entropy_grad %logits, %t, %d : (tensor<2x3x16xf32>, tensor<2x3xi32>, tensor<f32>) -> tensor<2x3x16xf32>
  return %g : tensor<2x3x16xf32>
}

// -----

// The logits are returned too (a reader after the gradient): a new buffer.
// CHECK-LABEL: func.func @returned_logits(
// CHECK:         memref.alloc() : memref<2x3x16xf32>
// CHECK:         call @trx_sgemm
// CHECK:         memref.alloc() : memref<2x3x16xf32>
triax.model @m config = #triax.train_config<micro_batch = 2, seq = 3, global_batch = 2> {
  triax.param @w : tensor<16x8xf32> init <normal, std = 0.02>
  func.func @forward(%tokens: tensor<2x3xi32>, %targets: tensor<2x3xi32>) -> tensor<f32> {
    %w = triax.get_param @w : tensor<16x8xf32>
    %x = triax.embedding %tokens, %w : (tensor<2x3xi32>, tensor<16x8xf32>) -> tensor<2x3x8xf32>
    %logits = triax.linear %x, %w {transpose_weight} : (tensor<2x3x8xf32>, tensor<16x8xf32>) -> tensor<2x3x16xf32>
    %loss = triax.cross_entropy %logits, %targets : (tensor<2x3x16xf32>, tensor<2x3xi32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}
func.func @returned_logits(%x: tensor<2x3x8xf32>, %w: tensor<8x16xf32>, %t: tensor<2x3xi32>, %d: tensor<f32>) -> (tensor<2x3x16xf32>, tensor<2x3x16xf32>) {
  %logits = triax.linear %x, %w : (tensor<2x3x8xf32>, tensor<8x16xf32>) -> tensor<2x3x16xf32>
  %g = triax.cross_entropy_grad %logits, %t, %d : (tensor<2x3x16xf32>, tensor<2x3xi32>, tensor<f32>) -> tensor<2x3x16xf32>
  return %logits, %g : tensor<2x3x16xf32>, tensor<2x3x16xf32>
}

// -----

// A collective reads the logits before the gradient (it may still be
// reading them, on another stream): a new buffer.
// CHECK-LABEL: func.func @collective_reader(
// CHECK:         memref.alloc() : memref<2x3x16xf32>
// CHECK:         call @trx_sgemm
// CHECK:         call @trx_all_reduce_f32
// CHECK:         memref.alloc() : memref<2x3x16xf32>
dist.mesh @cluster <["dp"=2]>
triax.model @m config = #triax.train_config<micro_batch = 2, seq = 3, global_batch = 2> {
  triax.param @w : tensor<16x8xf32> init <normal, std = 0.02>
  func.func @forward(%tokens: tensor<2x3xi32>, %targets: tensor<2x3xi32>) -> tensor<f32> {
    %w = triax.get_param @w : tensor<16x8xf32>
    %x = triax.embedding %tokens, %w : (tensor<2x3xi32>, tensor<16x8xf32>) -> tensor<2x3x8xf32>
    %logits = triax.linear %x, %w {transpose_weight} : (tensor<2x3x8xf32>, tensor<16x8xf32>) -> tensor<2x3x16xf32>
    %loss = triax.cross_entropy %logits, %targets : (tensor<2x3x16xf32>, tensor<2x3xi32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}
func.func @collective_reader(%x: tensor<2x3x8xf32>, %w: tensor<8x16xf32>, %t: tensor<2x3xi32>, %d: tensor<f32>) -> (tensor<2x3x16xf32>, tensor<2x3x16xf32>) {
  %logits = triax.linear %x, %w : (tensor<2x3x8xf32>, tensor<8x16xf32>) -> tensor<2x3x16xf32>
  %r = dist.all_reduce sum %logits over @cluster ["dp"] : tensor<2x3x16xf32>
  %g = triax.cross_entropy_grad %logits, %t, %d : (tensor<2x3x16xf32>, tensor<2x3xi32>, tensor<f32>) -> tensor<2x3x16xf32>
  return %r, %g : tensor<2x3x16xf32>, tensor<2x3x16xf32>
}

// -----

// The logits are a block's argument, its caller's value, which the cost
// model sees through the block: not written over, though inlined they are
// the GEMM's output, which nothing reads after the gradient.
// CHECK-LABEL: func.func @triax_forward_backward(
// CHECK:         memref.alloc() : memref<2x3x16xf32>
// CHECK:         call @trx_sgemm
// CHECK:         memref.alloc() : memref<2x3x16xf32>
// OFF-LABEL:   func.func @triax_forward_backward(
// OFF:           memref.alloc() : memref<2x3x16xf32>
// OFF:           memref.alloc() : memref<2x3x16xf32>
triax.model @m config = #triax.train_config<micro_batch = 2, seq = 3, global_batch = 2> {
  triax.param @w : tensor<16x8xf32> init <normal, std = 0.02>
  func.func @forward(%tokens: tensor<2x3xi32>, %targets: tensor<2x3xi32>) -> tensor<f32> {
    %w = triax.get_param @w : tensor<16x8xf32>
    %x = triax.embedding %tokens, %w : (tensor<2x3xi32>, tensor<16x8xf32>) -> tensor<2x3x8xf32>
    %logits = triax.linear %x, %w {transpose_weight} : (tensor<2x3x8xf32>, tensor<16x8xf32>) -> tensor<2x3x16xf32>
    %loss = triax.cross_entropy %logits, %targets : (tensor<2x3x16xf32>, tensor<2x3xi32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
  func.func @forward_backward(%tokens: tensor<2x3xi32>, %targets: tensor<2x3xi32>) -> tensor<f32> {
    %w = triax.get_param @w : tensor<16x8xf32>
    %x = triax.embedding %tokens, %w : (tensor<2x3xi32>, tensor<16x8xf32>) -> tensor<2x3x8xf32>
    %logits = triax.linear %x, %w {transpose_weight} : (tensor<2x3x8xf32>, tensor<16x8xf32>) -> tensor<2x3x16xf32>
    %loss = triax.cross_entropy %logits, %targets : (tensor<2x3x16xf32>, tensor<2x3xi32>) -> tensor<f32>
    %d = arith.constant dense<1.0> : tensor<f32>
    %g = triax.block "head"(%logits, %targets, %d) : (tensor<2x3x16xf32>, tensor<2x3xi32>, tensor<f32>) -> tensor<2x3x16xf32> {
    ^bb0(%l: tensor<2x3x16xf32>, %tt: tensor<2x3xi32>, %dd: tensor<f32>):
      %gl = triax.cross_entropy_grad %l, %tt, %dd : (tensor<2x3x16xf32>, tensor<2x3xi32>, tensor<f32>) -> tensor<2x3x16xf32>
      triax.yield %gl : tensor<2x3x16xf32>
    }
    %dw = triax.linear_weight_grad %x, %g {transpose_weight} : (tensor<2x3x8xf32>, tensor<2x3x16xf32>) -> tensor<16x8xf32>
    triax.accumulate_grad @w, %dw : tensor<16x8xf32>
    return %loss : tensor<f32>
  }
}
