// Gradient buffers and the optimizer: accumulate_grad adds into the
// runtime's gradient buffer (state kind 3), get_grad reads it, global_norm
// sums squares in f64 in a fixed order, adamw is one fused loop updating the
// parameter (kind 0) and both moments (kinds 1, 2) in place. The step's
// scalars stay in device memory: the loss is added to the caller's
// loss_acc, the norm written to its grad_norm, and the clipping scale is
// computed by a nest of one iteration and read by the update's loop.
// RUN: triax-opt %s --triax-autodiff --convert-triax-to-kernels | FileCheck %s
// scalars-before-nests (the CPU): the update's loop gets the clipping scale
// as a value read in front of it, so no load in the loop may alias its
// stores (LLVM vectorizes it).
// RUN: triax-opt %s --triax-autodiff --convert-triax-to-kernels=scalars-before-nests=true | FileCheck %s --check-prefix=HOST

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
// CHECK-SAME: memref<1x2xi32>, %{{.*}}: memref<1x2xi32>, %[[ACC:.*]]: memref<f32>) attributes
// CHECK-NEXT: %[[F:.*]] = call @trx_first_micro_batch() : () -> i64
// The embedding gradient: zero-filled, then rows added token by token.
// CHECK: scf.parallel (%[[H:.*]]) =
// CHECK:   scf.for %[[T:.*]] =
// CHECK:     arith.index_cast
// CHECK:     arith.addf
// CHECK: %[[KIND:.*]] = arith.constant 3 : i32
// CHECK: call @trx_state_2d(%[[KIND]], %{{.*}})
// CHECK: scf.parallel
// CHECK:   arith.addf
// loss_acc[0] += loss, on the device; the step's first call (the
// runtime's trx_first_micro_batch, asked once at the start) writes it.
// CHECK: %[[FIRST:.*]] = arith.cmpi ne, %[[F]], %{{.*}} : i64
// CHECK: %[[ACC1:.*]] = memref.expand_shape %[[ACC]] [] output_shape [1]
// CHECK: scf.parallel (%[[I:.*]]) = (%{{.*}}) to (%c1{{.*}})
// CHECK:   %[[LOSS:.*]] = memref.load %{{.*}}[%[[I]]] : memref<1xf32>
// CHECK:   %[[OLD:.*]] = memref.load %[[ACC1]][%[[I]]] : memref<1xf32>
// CHECK:   %[[BASE:.*]] = arith.select %[[FIRST]], %{{.*}}, %[[OLD]] : f32
// CHECK:   %[[NEW:.*]] = arith.addf %[[BASE]], %[[LOSS]] : f32
// CHECK:   memref.store %[[NEW]], %[[ACC1]][%[[I]]] : memref<1xf32>
// CHECK: return{{$}}

// CHECK-LABEL: func.func @triax_optimizer_step(
// CHECK-SAME: %[[LR:.*]]: f32, %[[STEP:.*]]: i64, %[[SCALE:.*]]: f32, %[[NORM:.*]]: memref<f32>) attributes
// CHECK: %[[GKIND:.*]] = arith.constant 3 : i32
// CHECK: call @trx_state_2d(%[[GKIND]]
// The squares' partial sums (one row), written through a view of the
// gradient's rows whose offset is a value (so that same-shaped gradients
// share one kernel), then their sum (a nest of one row).
// CHECK: %[[PARTIALS:.*]] = memref.alloc() : memref<1xf64>
// CHECK: %[[MINE:.*]] = memref.subview %[[PARTIALS]][%{{.*}}] [1] [1] : memref<1xf64> to memref<1xf64, strided<[1], offset: ?>>
// CHECK: scf.parallel
// CHECK:   scf.for {{.*}} iter_args(%{{.*}} = %{{.*}}) -> (f64)
// CHECK:     arith.extf
// CHECK:   memref.store %{{.*}}, %[[MINE]]
// CHECK: %[[RAW:.*]] = memref.alloc() : memref<f32>
// CHECK: scf.parallel
// CHECK:   scf.for {{.*}} iter_args(%{{.*}} = %{{.*}}) -> (f64)
// CHECK:     memref.load %[[PARTIALS]]
// CHECK:   math.sqrt %{{.*}} : f64
// The scaled norm to grad_norm[0] and the clipping scale, on the device.
// CHECK: %[[NORM1:.*]] = memref.expand_shape %[[NORM]] [] output_shape [1]
// CHECK: %[[CLIP:.*]] = memref.alloc() : memref<1xf32>
// CHECK: scf.parallel (%[[I:.*]]) = (%{{.*}}) to (%c1{{.*}})
// CHECK:   %[[N:.*]] = arith.mulf %{{.*}}, %[[SCALE]] : f32
// CHECK:   memref.store %[[N]], %[[NORM1]][%[[I]]] : memref<1xf32>
// CHECK:   arith.cmpf ogt, %[[N]]
// CHECK:   %[[S:.*]] = arith.mulf %[[SCALE]], %{{.*}} : f32
// CHECK:   %[[FINITE:.*]] = arith.cmpf olt, %[[N]], %{{.*}} : f32
// CHECK:   %[[GUARDED:.*]] = arith.select %[[FINITE]], %[[S]], %{{.*}} : f32
// CHECK:   memref.store %[[GUARDED]], %[[CLIP]][%[[I]]] : memref<1xf32>
// Bias corrections 1 - beta^step, once per update, on the host.
// CHECK: %[[STEPF:.*]] = arith.sitofp %[[STEP]] : i64 to f32
// CHECK: math.powf %{{.*}}, %[[STEPF]]
// CHECK: math.powf %{{.*}}, %[[STEPF]]
// The update reads the clipping scale in its loop; a scale that is not
// finite (|s| < inf fails: the gradients were not) stores the old
// parameter and moments back.
// CHECK: scf.parallel
// CHECK:   %[[S2:.*]] = memref.load %[[CLIP]][%{{.*}}] : memref<1xf32>
// CHECK:   %[[ABS:.*]] = math.absf %[[S2]] : f32
// CHECK:   %[[OK:.*]] = arith.cmpf olt, %[[ABS]], %{{.*}} : f32
// CHECK:   arith.mulf %{{.*}}, %[[S2]] : f32
// CHECK:   %[[M0:.*]] = memref.load %[[M:.*]][%{{.*}}] : memref<8xf32
// CHECK:   %[[V0:.*]] = memref.load %[[V:.*]][%{{.*}}] : memref<8xf32
// CHECK:   %[[P0:.*]] = memref.load %[[P:.*]][%{{.*}}] : memref<8xf32
// CHECK:   math.sqrt
// CHECK:   %[[P1:.*]] = arith.select %[[OK]], %{{.*}}, %[[P0]] : f32
// CHECK:   memref.store %[[P1]], %[[P]]
// CHECK:   %[[M1:.*]] = arith.select %[[OK]], %{{.*}}, %[[M0]] : f32
// CHECK:   memref.store %[[M1]], %[[M]]
// CHECK:   %[[V1:.*]] = arith.select %[[OK]], %{{.*}}, %[[V0]] : f32
// CHECK:   memref.store %[[V1]], %[[V]]
// CHECK: return{{$}}
// HOST: math.powf
// HOST: %[[S2:.*]] = memref.load %{{.*}}[%c0{{.*}}] : memref<1xf32>
// HOST-NOT: scf.parallel
// HOST: scf.parallel
// HOST-NOT: memref<1xf32>
// HOST:   arith.mulf %{{.*}}, %[[S2]] : f32
// HOST:   math.sqrt
// HOST: return{{$}}
