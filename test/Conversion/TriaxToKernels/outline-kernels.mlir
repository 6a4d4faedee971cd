// Each top-level loop nest of an entry function moves into a private
// kernel function; constants are re-created inside, buffers and scalars
// are passed, loops with results return them. A nest of one iteration gets
// its upper bound passed, as an i64 (canonicalize would otherwise inline
// its body on the host).
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
// kernel, no result), then the f64 sum of the rows (a nest of one row), the
// scaled norm and the clipping scale (a nest of one iteration), the update.
// CHECK-LABEL: func.func @triax_optimizer_step(
// CHECK-SAME: %{{[^:]*}}: i64, %[[SCALE:[^:]*]]: f32, %[[NORM:[^:]*]]: memref<f32>)
// CHECK: %[[ROWS:.*]] = memref.alloc() : memref<1xf64>
// CHECK: %[[MINE:.*]] = memref.subview %[[ROWS]]
// CHECK: %[[ONE:.*]] = arith.constant 1 : i64
// CHECK: call @triax_optimizer_step_kernel0(%{{.*}}, %[[MINE]], %[[ONE]]) : (memref<8xf32>, memref<1xf64, strided<[1], offset: ?>>, i64) -> ()
// CHECK: call @triax_optimizer_step_kernel1(%[[ROWS]], %{{.*}}, %{{.*}}) : (memref<1xf64>, memref<1xf32>, i64) -> ()
// CHECK: call @triax_optimizer_step_kernel2(%{{.*}}, %[[SCALE]], %{{.*}}, %{{.*}}, %{{.*}}) : (memref<1xf32>, f32, memref<1xf32>, memref<1xf32>, i64) -> ()
// CHECK: call @triax_optimizer_step_kernel3(
// CHECK: return{{$}}
// CHECK-LABEL: func.func private @triax_optimizer_step_kernel0(
// CHECK-SAME: memref<8xf32>, %{{.*}}: memref<1xf64, strided<[1], offset: ?>>, %[[N:.*]]: i64)
// CHECK: %[[UB:.*]] = arith.index_cast %[[N]] : i64 to index
// CHECK: scf.parallel (%{{.*}}) = (%{{.*}}) to (%[[UB]])
// CHECK: scf.for {{.*}} -> (f64)
// CHECK-LABEL: func.func private @triax_optimizer_step_kernel1(
// CHECK-SAME: memref<1xf64>, %{{.*}}: memref<1xf32>, %[[N:.*]]: i64)
// CHECK: %[[UB:.*]] = arith.index_cast %[[N]] : i64 to index
// CHECK: scf.parallel (%{{.*}}) = (%{{.*}}) to (%[[UB]])
// CHECK: scf.for {{.*}} -> (f64)
// CHECK: math.sqrt
// CHECK-LABEL: func.func private @triax_optimizer_step_kernel2(
// CHECK: scf.parallel
// CHECK-LABEL: func.func private @triax_optimizer_step_kernel3(
// CHECK: scf.parallel (%{{.*}}) = (%{{.*}}) to (%c8)
