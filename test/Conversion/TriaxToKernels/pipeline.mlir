// convert-triax-to-kernels on dist-pipeline's output (tiny, pp=2, GPipe over
// 2 micro-batches): @pipeline_step becomes the training step's entry, the
// stage functions private functions on buffers; @forward is not exported
// (a rank holds only its stage's parameters).
// RUN: triax-model tiny --batch 16 --micro-batch 8 | triax-opt --triax-autodiff --dist-pipeline="pp=2 microbatches=2 schedule=gpipe" --convert-triax-to-kernels | FileCheck %s

// CHECK-NOT: func.func @triax_forward(
// The loss goes to the caller's device scalar (the third argument).
// CHECK-LABEL: func.func @triax_forward_backward(%arg0: memref<16x64xi32>, %arg1: memref<16x64xi32>, %arg2: memref<f32>) attributes
// The stage is the rank's position on the pp axis (mask 1: axis 0).
// CHECK: %[[POS:.*]] = call @trx_group_position(%{{.*}}) : (i64) -> i64
// CHECK: %[[STAGE:.*]] = arith.index_cast %[[POS]] : i64 to index
// Each case leaves its loss in a one-element buffer (the switch has no
// result).
// CHECK: %[[LOSS:.*]] = memref.alloc() : memref<1xf32>
// CHECK: scf.index_switch %[[STAGE]]{{ *$}}
// CHECK: case 0 {
// Micro-batch 0's tokens are copied out of the stacked batch.
// CHECK: %[[TOK:.*]] = memref.alloc() : memref<8x64xi32>
// CHECK: scf.parallel
// CHECK: memref.load %arg0
// The stage function call, bracketed for --trace (forward, micro-batch 0).
// CHECK: func.call @trx_trace_begin(%[[C0:.*]], %[[C0B:.*]], %[[NOCHUNK:.*]]) : (i64, i64, i64) -> ()
// CHECK: %[[F0:.*]]:16 = func.call @stage0_forward(%[[TOK]]) : (memref<8x64xi32>) -> (memref<8x64x64xf32>,
// CHECK-NEXT: func.call @trx_trace_end() : () -> ()
// The activation goes to stage 1 with tag 0, and its buffer (the caller's)
// is freed after the send.
// CHECK: %[[FLAT:.*]] = memref.collapse_shape %[[F0]]#0
// CHECK: %[[DYN:.*]] = memref.cast %[[FLAT]] : memref<32768xf32> to memref<?xf32>
// CHECK: %[[PEER:.*]] = arith.constant 1 : i64
// CHECK: %[[TAG:.*]] = arith.constant 0 : i64
// CHECK: func.call @trx_send_f32(%[[DYN]], %[[PEER]], %[[TAG]], %{{.*}}) : (memref<?xf32>, i64, i64, i64) -> ()
// CHECK-NEXT: memref.dealloc %[[F0]]#0 : memref<8x64x64xf32>
// The gradient of micro-batch 0 comes back into a new buffer (tag 1).
// CHECK: %[[G:.*]] = memref.alloc() : memref<8x64x64xf32>
// CHECK: func.call @trx_recv_f32(
// CHECK: func.call @stage0_backward(
// CHECK: case 1 {
// CHECK: func.call @trx_recv_f32(
// CHECK: %[[F1:.*]]:20 = func.call @stage1_forward(
// CHECK: func.call @stage1_backward(
// CHECK: func.call @trx_send_f32(
// The last stage's loss, the mean over the micro-batches in order, by a
// nest of one iteration (device code: no host read).
// CHECK: %[[L0:.*]] = memref.expand_shape %[[F1]]#0 [] output_shape [1]
// CHECK: %[[L1:.*]] = memref.expand_shape %{{.*}}#0 [] output_shape [1]
// CHECK: scf.parallel (%[[I:.*]]) = (%{{.*}}) to (%c1{{.*}})
// CHECK: %[[A:.*]] = memref.load %[[L0]][%[[I]]]
// CHECK: %[[B:.*]] = memref.load %[[L1]][%[[I]]]
// CHECK: %[[SUM:.*]] = arith.addf %[[A]], %[[B]] : f32
// CHECK: %[[MEAN:.*]] = arith.mulf %[[SUM]], %{{.*}} : f32
// CHECK: memref.store %[[MEAN]], %[[LOSS]][%[[I]]]
// The other stages' loss is 0.
// CHECK: default {
// CHECK: scf.parallel
// CHECK: memref.store %{{.*}}, %{{.*}}[%{{.*}}] : memref<1xf32>
// Then loss_acc[0] += loss, on the device.
// CHECK: %[[ACC:.*]] = memref.expand_shape %arg2 [] output_shape [1]
// CHECK: scf.parallel (%[[J:.*]]) = (%{{.*}}) to (%c1{{.*}})
// CHECK: %[[NEW:.*]] = arith.addf
// CHECK: memref.store %[[NEW]], %[[ACC]][%[[J]]]
// CHECK: return{{$}}

// The per-stage optimizer step exchanges the tied wte gradient (tag 4).
// CHECK-LABEL: func.func @triax_optimizer_step(
// CHECK: scf.index_switch
// CHECK: case 0 {
// CHECK: func.call @trx_send_f32(
// CHECK: func.call @trx_recv_f32(
// CHECK: case 1 {
// CHECK: func.call @trx_recv_f32(
// CHECK: func.call @trx_send_f32(

// A stage function returns buffers its caller owns.
// CHECK-LABEL: func.func private @stage0_forward(%arg0: memref<8x64xi32>) -> (memref<8x64x64xf32>,
// CHECK-LABEL: func.func private @stage1_backward(
// CHECK: return %{{.*}} : memref<8x64x64xf32>
