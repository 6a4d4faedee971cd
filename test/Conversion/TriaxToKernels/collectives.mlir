// dist.all_reduce becomes the runtime's in-place all_reduce on a flat f32
// buffer: (memref<?xf32>, i32 reduction, i64 axis mask), bit i of the mask
// = axis i of the mesh in its written order. A value is copied first (the
// result is a new buffer). dist-data-parallel's gradient bucket becomes one
// call that reduces the listed parameters' gradient buffers in place. The
// mesh goes with the model.
// RUN: triax-opt %s --triax-autodiff --dist-data-parallel --convert-triax-to-kernels | FileCheck %s

// CHECK-NOT: dist.
// CHECK: func.func private @trx_all_reduce_f32(memref<?xf32>, i32, i64) attributes {llvm.emit_c_interface}
dist.mesh @cluster <["pp"=1, "dp"=2]>
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

// Any other value: a copy, then the reduction (sum = 0) over both axes
// (mask 3).
// CHECK-LABEL: func.func @reduce(
// CHECK-SAME: %[[X:.*]]: memref<4xf32>) -> memref<4xf32>
// CHECK: %[[COPY:.*]] = memref.alloc() : memref<4xf32>
// CHECK: scf.parallel
// CHECK: memref.load %[[X]]
// CHECK: memref.store %{{.*}}, %[[COPY]]
// CHECK: %[[C:.*]] = memref.cast %[[COPY]] : memref<4xf32> to memref<?xf32>
// CHECK: call @trx_all_reduce_f32(%[[C]], %c0_i32, %c3_i64) : (memref<?xf32>, i32, i64) -> ()
// CHECK: return %[[COPY]] : memref<4xf32>
// The bucket's parameter indices are a constant table in host memory (the
// runtime reads them on the host): nothing stored, nothing freed.
// CHECK: memref.global "private" constant @[[TABLE:triax_forward_backward_table]] : memref<1xi64> = dense<0>
// CHECK-LABEL: func.func @triax_forward_backward(
// (The constants print as %c<value>_<type>: avg = 1, dp = bit 1 = 2.)
// CHECK: %[[IDX:.*]] = memref.get_global @[[TABLE]] : memref<1xi64>
// CHECK-NOT: memref.store %{{.*}}, %[[IDX]]
// CHECK: %[[V:.*]] = memref.cast %[[IDX]] : memref<1xi64> to memref<?xi64>
// CHECK: call @trx_all_reduce_grads(%[[V]], %{{.*}}, %c2_i64) : (memref<?xi64>, i32, i64) -> ()
// CHECK-NOT: memref.dealloc %[[IDX]]
// CHECK-LABEL: func.func @triax_optimizer_step(
// CHECK-NOT: call @trx_all_reduce
// CHECK: return

func.func @reduce(%x: tensor<4xf32>) -> tensor<4xf32> {
  %r = dist.all_reduce sum %x over @cluster ["pp", "dp"] : tensor<4xf32>
  return %r : tensor<4xf32>
}
