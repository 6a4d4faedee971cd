// Gradient buffers and the optimizer: accumulate_grad adds into the
// runtime's gradient buffer (state kind 3), get_grad reads it, global_norm
// sums squares in f64 in a fixed order, adamw is one fused loop updating the
// parameter (kind 0) and both moments (kinds 1, 2) in place.
// RUN: triax-opt %s --triax-autodiff --convert-triax-to-kernels | FileCheck %s

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

// CHECK-LABEL: func.func @triax_forward_backward(
// CHECK-SAME: memref<1x2xi32>, %{{.*}}: memref<1x2xi32>) -> f32
// The embedding gradient: zero-filled, then rows added token by token.
// CHECK: scf.parallel (%[[H:.*]]) =
// CHECK:   scf.for %[[T:.*]] =
// CHECK:     arith.index_cast
// CHECK:     arith.addf
// CHECK: %[[KIND:.*]] = arith.constant 3 : i32
// CHECK: call @trx_state_2d(%[[KIND]], %{{.*}})
// CHECK: scf.parallel
// CHECK:   arith.addf
// CHECK: return %{{.*}} : f32

// CHECK-LABEL: func.func @triax_optimizer_step(
// CHECK-SAME: %[[LR:.*]]: f32, %[[STEP:.*]]: i64, %[[SCALE:.*]]: f32) -> f32
// CHECK: %[[GKIND:.*]] = arith.constant 3 : i32
// CHECK: call @trx_state_2d(%[[GKIND]]
// CHECK: scf.for {{.*}} iter_args(%{{.*}} = %{{.*}}) -> (f64)
// CHECK:   arith.extf
// CHECK: math.sqrt %{{.*}} : f64
// Bias corrections 1 - beta^step, once per update.
// CHECK: %[[STEPF:.*]] = arith.sitofp %[[STEP]] : i64 to f32
// CHECK: math.powf %{{.*}}, %[[STEPF]]
// CHECK: math.powf %{{.*}}, %[[STEPF]]
// CHECK: scf.parallel
// CHECK:   math.sqrt
// CHECK:   memref.store
// CHECK:   memref.store
// CHECK:   memref.store
// CHECK: return %{{.*}} : f32
