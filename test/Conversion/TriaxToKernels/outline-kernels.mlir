// Each top-level loop nest of an entry function moves into a private
// kernel function; constants are re-created inside, buffers and scalars
// are passed, loops with results return them.
// RUN: triax-opt %s --triax-autodiff --convert-triax-to-kernels --triax-outline-kernels | FileCheck %s

triax.model @m config = #triax.train_config<micro_batch = 1, seq = 2, grad_clip = 1.0> {
  triax.param @emb : tensor<4x2xf32> init <normal, std = 0.02> decay
  func.func @forward(%tokens: tensor<1x2xi32>, %targets: tensor<1x2xi32>) -> tensor<f32> {
    %emb = triax.get_param @emb : tensor<4x2xf32>
    %x = triax.embedding %tokens, %emb : (tensor<1x2xi32>, tensor<4x2xf32>) -> tensor<1x2x2xf32>
    %logits = triax.linear %x, %emb {transpose_weight} : (tensor<1x2x2xf32>, tensor<4x2xf32>) -> tensor<1x2x4xf32>
    %loss = triax.cross_entropy %logits, %targets : (tensor<1x2x4xf32>, tensor<1x2xi32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// CHECK-LABEL: func.func @triax_forward(
// CHECK-NOT: scf.parallel
// CHECK: call @triax_forward_kernel0(%{{.*}}, %{{.*}}, %{{.*}}) : (memref<2xi32>, memref<4x2xf32>, memref<2x2xf32>) -> ()
// CHECK: call @trx_sgemm
// CHECK: return
// CHECK-LABEL: func.func private @triax_forward_kernel0(
// CHECK-SAME: %[[IDS:.*]]: memref<2xi32>, %[[TABLE:.*]]: memref<4x2xf32>, %[[OUT:.*]]: memref<2x2xf32>)
// CHECK: arith.constant 0 : index
// CHECK: scf.parallel
// CHECK: memref.load %[[IDS]]
// CHECK: return

// The global norm: a row-wise nest of f64 square sums into a buffer (one
// kernel, no result), then the sequential f64 sum of the rows, which
// returns its result.
// CHECK-LABEL: func.func @triax_optimizer_step(
// CHECK: %[[ROWS:.*]] = memref.alloc() : memref<1xf64>
// CHECK: call @triax_optimizer_step_kernel0(%{{.*}}, %[[ROWS]]) : (memref<8xf32>, memref<1xf64>) -> ()
// CHECK: %[[NORM:.*]] = call @triax_optimizer_step_kernel1(%[[ROWS]]) : (memref<1xf64>) -> f64
// CHECK: math.sqrt %[[NORM]] : f64
// CHECK-LABEL: func.func private @triax_optimizer_step_kernel0(
// CHECK-SAME: memref<8xf32>, %{{.*}}: memref<1xf64>)
// CHECK: scf.parallel
// CHECK: scf.for {{.*}} -> (f64)
// CHECK-LABEL: func.func private @triax_optimizer_step_kernel1(
// CHECK-SAME: memref<1xf64>) -> f64
// CHECK: %[[R:.*]] = scf.for {{.*}} -> (f64)
// CHECK: return %[[R]] : f64
