// convert-triax-to-kernels{loss-grad-in-place} (the CPU pipeline sets it):
// the cross-entropy's gradient overwrites its logits' buffer when the
// kernels allocated that buffer and every other reader of the logits comes
// before the gradient in its block. Each iteration reads an element and
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
