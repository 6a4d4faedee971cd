// Norms with their rows' statistics kept for the gradient (what
// triax-autodiff makes of a differentiated layer_norm / rms_norm): the
// forward writes each row's mean and rstd (rstd for rms_norm) into its
// `stats` results, and the gradient with `saved(...)` reads them instead of
// computing them again from the input (no sqrt in the gradients' nests).
// Training with them is bit-identical to recomputing them (the same f32
// operations): docs/performance.md.
// RUN: triax-opt %s --convert-triax-to-kernels | FileCheck %s --implicit-check-not=triax.
triax.model @norms config = #triax.train_config<micro_batch = 2, seq = 3, global_batch = 2> {
  triax.param @wte : tensor<16x8xf32> init <normal, std = 0.02>
  triax.param @g : tensor<8xf32> init <ones>
  triax.param @b : tensor<8xf32> init <zeros>
  func.func @forward(%tokens: tensor<2x3xi32>, %targets: tensor<2x3xi32>) -> tensor<f32> {
    %wte = triax.get_param @wte : tensor<16x8xf32>
    %g = triax.get_param @g : tensor<8xf32>
    %b = triax.get_param @b : tensor<8xf32>
    %x = triax.embedding %tokens, %wte : (tensor<2x3xi32>, tensor<16x8xf32>) -> tensor<2x3x8xf32>
    %y, %mean, %rstd = triax.layer_norm %x, %g, %b : (tensor<2x3x8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x3x8xf32>, tensor<2x3xf32>, tensor<2x3xf32>)
    %dx, %dw, %db = triax.layer_norm_grad %x, %g, %y saved(%mean, %rstd) : (tensor<2x3x8xf32>, tensor<8xf32>, tensor<2x3x8xf32>, tensor<2x3xf32>, tensor<2x3xf32>) -> (tensor<2x3x8xf32>, tensor<8xf32>, tensor<8xf32>)
    %r, %rs = triax.rms_norm %dx, %dw : (tensor<2x3x8xf32>, tensor<8xf32>) -> (tensor<2x3x8xf32>, tensor<2x3xf32>)
    %dr, %drw = triax.rms_norm_grad %dx, %dw, %r saved(%rs) : (tensor<2x3x8xf32>, tensor<8xf32>, tensor<2x3x8xf32>, tensor<2x3xf32>) -> (tensor<2x3x8xf32>, tensor<8xf32>)
    %logits = triax.linear %dr, %wte {transpose_weight} : (tensor<2x3x8xf32>, tensor<16x8xf32>) -> tensor<2x3x16xf32>
    %loss = triax.cross_entropy %logits, %targets : (tensor<2x3x16xf32>, tensor<2x3xi32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// CHECK-LABEL: func.func @triax_forward(
// layer_norm: the mean and rstd [2, 3] f32, stored flat by each row.
// CHECK: %[[MEAN:.*]] = memref.alloc() : memref<2x3xf32>
// CHECK: %[[MEANR:.*]] = memref.collapse_shape %[[MEAN]] {{\[\[}}0, 1]] : memref<2x3xf32> into memref<6xf32>
// CHECK: %[[RSTD:.*]] = memref.alloc() : memref<2x3xf32>
// CHECK: %[[RSTDR:.*]] = memref.collapse_shape %[[RSTD]] {{\[\[}}0, 1]] : memref<2x3xf32> into memref<6xf32>
// CHECK: scf.parallel (%[[R:.*]]) =
// CHECK: math.sqrt
// CHECK: memref.store %{{.*}}, %[[MEANR]][%[[R]]] : memref<6xf32>
// CHECK: memref.store %{{.*}}, %[[RSTDR]][%[[R]]] : memref<6xf32>
// layer_norm_grad: reads them, row by row and in the column sums.
// CHECK: %[[SMEAN:.*]] = memref.collapse_shape %[[MEAN]]
// CHECK: %[[SRSTD:.*]] = memref.collapse_shape %[[RSTD]]
// CHECK-NOT: math.sqrt
// CHECK: scf.parallel (%[[GR:.*]]) =
// CHECK-NEXT: memref.load %[[SMEAN]][%[[GR]]] : memref<6xf32>
// CHECK-NEXT: memref.load %[[SRSTD]][%[[GR]]] : memref<6xf32>
// CHECK-NOT: math.sqrt
// CHECK: memref.load %[[SMEAN]]
// CHECK: memref.load %[[SRSTD]]
// rms_norm: rstd only; its gradient reads it.
// CHECK: %[[RMS:.*]] = memref.alloc() : memref<2x3xf32>
// CHECK: %[[RMSR:.*]] = memref.collapse_shape %[[RMS]]
// CHECK: math.sqrt
// CHECK: memref.store %{{.*}}, %[[RMSR]][%{{.*}}] : memref<6xf32>
// CHECK: %[[SRMS:.*]] = memref.collapse_shape %[[RMS]]
// CHECK-NOT: math.sqrt
// CHECK: memref.load %[[SRMS]]
// CHECK-NOT: math.sqrt
// CHECK: return
