// A true bf16 model (triax-model --dtype bf16) communicates in bf16, 2 bytes
// an element, as Megatron-LM does: every dist collective and point-to-point
// op on bf16 tensors becomes the runtime's bf16 entry (trx_all_reduce_bf16,
// trx_reduce_scatter_bf16, trx_all_gather_bf16, trx_all_to_all_bf16,
// trx_send_bf16, trx_recv_bf16: memref<?xbf16> buffers), the f32 ones stay
// on the f32 entries (the cross-entropy's f32 statistics, the gradient
// norm). Copies around a collective (a value reduced out of place, the
// group-major packing of sequence parallelism) move the bf16 elements as
// they are, without widening them to f32 and rounding them back.
// (The masks: tp, pp and ep are bit 0 of their one-axis meshes.)
// RUN: triax-model tiny --layers 1 --dtype bf16 | triax-opt --dist-tensor-parallel=tp=2 --triax-autodiff --convert-triax-to-kernels | FileCheck %s --check-prefix=TP
// RUN: triax-model tiny --layers 1 --dtype bf16 | triax-opt --pass-pipeline='builtin.module(triax-parallelize{mesh=tp=2 sequence-parallel=true},convert-triax-to-kernels)' | FileCheck %s --check-prefix=SP
// A pipeline needs a block per stage: tiny's 2 blocks, 2 micro-batches (1F1B).
// RUN: triax-model tiny --batch 16 --micro-batch 8 --dtype bf16 | triax-opt --triax-autodiff --dist-pipeline="pp=2 microbatches=2" --convert-triax-to-kernels | FileCheck %s --check-prefix=PP
// RUN: triax-model tiny-moe --layers 1 --dtype bf16 | triax-opt --pass-pipeline='builtin.module(triax-parallelize{mesh=ep=2},convert-triax-to-kernels)' | FileCheck %s --check-prefix=EP
// Other element types are refused, naming the op.
// Context parallelism's ring (cp=2): the bf16 key and value blocks are
// passed on as they are (trx_shift_start_bf16, slots 0 and 1: one shift
// of each in the forward, one in the backward, which reads the forward's
// log-sum-exp), the dK/dV accumulators in f32 (slots 2 and 3).
// RUN: triax-model tiny --layers 1 --dtype bf16 | triax-opt --pass-pipeline='builtin.module(triax-parallelize{mesh=cp=2},convert-triax-to-kernels)' | FileCheck %s --check-prefix=CP
// RUN: triax-opt %s -split-input-file --convert-triax-to-kernels --verify-diagnostics

// Tensor parallelism: the vocabulary-parallel embedding's rows (the other
// member's rows are zeros) are copied element for element and summed over
// tp in bf16; so are the row-split linears' partial products (trx_gemm_bf16
// rounds each member's partial sum to bf16, the ring rounds their sum).
// TP: func.func private @trx_all_reduce_bf16(memref<?xbf16>, i32, i64) attributes {llvm.emit_c_interface}
// TP-LABEL: func.func @triax_forward_backward(
// TP: %[[E:.*]] = memref.load %{{.*}} : memref<32768xbf16>
// TP-NEXT: memref.store %[[E]], %{{.*}} : memref<32768xbf16>
// TP: %[[EMB:.*]] = memref.cast %{{.*}} : memref<32768xbf16> to memref<?xbf16>
// TP: call @trx_all_reduce_bf16(%[[EMB]], %c0_i32{{.*}}, %c1_i64{{.*}}) : (memref<?xbf16>, i32, i64) -> ()
// TP: call @trx_gemm_bf16(
// TP: call @trx_all_reduce_bf16({{.*}}) : (memref<?xbf16>, i32, i64) -> ()
// TP: call @trx_gemm_bf16(
// TP: call @trx_all_reduce_bf16({{.*}}) : (memref<?xbf16>, i32, i64) -> ()
// The vocabulary-parallel cross-entropy's statistics are f32: max (2), sum.
// TP: call @trx_all_reduce_f32(%{{.*}}, %c2_i32{{.*}}, %c1_i64{{.*}}) : (memref<?xf32>, i32, i64) -> ()
// TP: call @trx_all_reduce_f32(%{{.*}}, %c0_i32{{.*}}, %c1_i64{{.*}}) : (memref<?xf32>, i32, i64) -> ()
// The backward's all_reduces (the column-split linears' input gradients)
// are bf16 again.
// TP: call @trx_all_reduce_bf16({{.*}}) : (memref<?xbf16>, i32, i64) -> ()
// TP-LABEL: func.func @triax_optimizer_step(
// TP-NOT: call @trx_all_reduce_bf16
// TP: return

// Sequence parallelism: the embedding's sum is reduce-scattered along the
// sequence (packed into group-major order, bf16 elements moved as they
// are) and the norms' inputs are all-gathered, in bf16.
// SP: func.func private @trx_reduce_scatter_bf16(memref<?xbf16>, memref<?xbf16>, i32, i64) attributes {llvm.emit_c_interface}
// SP: func.func private @trx_all_gather_bf16(memref<?xbf16>, memref<?xbf16>, i64) attributes {llvm.emit_c_interface}
// SP-LABEL: func.func @triax_forward_backward(
// SP: %[[PACKED:.*]] = memref.alloc() : memref<32768xbf16>
// SP: scf.parallel
// SP-NOT: arith.extf
// SP: %[[X:.*]] = memref.load %{{.*}} : memref<32768xbf16>
// SP-NEXT: memref.store %[[X]], %[[PACKED]][%{{.*}}] : memref<32768xbf16>
// SP: %[[OUT:.*]] = memref.alloc() : memref<8x32x64xbf16>
// SP: %[[IN:.*]] = memref.cast %[[PACKED]] : memref<32768xbf16> to memref<?xbf16>
// SP: call @trx_reduce_scatter_bf16(%[[IN]], %{{.*}}, %c0_i32{{.*}}, %c1_i64{{.*}}) : (memref<?xbf16>, memref<?xbf16>, i32, i64) -> ()
// SP: %[[G:.*]] = memref.alloc() : memref<32768xbf16>
// SP: %[[GV:.*]] = memref.cast %[[G]] : memref<32768xbf16> to memref<?xbf16>
// SP: call @trx_all_gather_bf16(%{{.*}}, %[[GV]], %c1_i64{{.*}}) : (memref<?xbf16>, memref<?xbf16>, i64) -> ()
// The replicated norms' gradients are summed over tp in bf16.
// SP: call @trx_all_reduce_bf16({{.*}}) : (memref<?xbf16>, i32, i64) -> ()
// SP-LABEL: func.func @triax_optimizer_step(

// Pipeline parallelism: the activations go to stage 1 and their gradients
// come back in bf16 (tags 0..3), and the stages exchange their parts of
// the tied wte gradient (the bf16 gradient buffer, kind 3) before the
// optimizer step (tag 4).
// PP: func.func private @trx_send_bf16(memref<?xbf16>, i64, i64, i64) attributes {llvm.emit_c_interface}
// PP: func.func private @trx_recv_bf16(memref<?xbf16>, i64, i64, i64) attributes {llvm.emit_c_interface}
// PP-LABEL: func.func @triax_forward_backward(
// PP: case 0 {
// PP: %[[F0:.*]]:16 = func.call @stage0_forward(%{{.*}}) : (memref<8x64xi32>) -> (memref<8x64x64xbf16>,
// (The norms' rows' mean and rstd and attention's rows' log-sum-exp stay
// f32 in a bf16 model.)
// PP-SAME: memref<8x64xf32>, memref<8x64xf32>,
// PP-SAME: memref<8x4x64xf32>
// PP: %[[A:.*]] = memref.collapse_shape %[[F0]]#0 {{.*}} : memref<8x64x64xbf16> into memref<32768xbf16>
// PP: %[[AV:.*]] = memref.cast %[[A]] : memref<32768xbf16> to memref<?xbf16>
// PP: func.call @trx_send_bf16(%[[AV]], %c1_i64{{.*}}, %c0_i64{{.*}}, %c1_i64{{.*}}) : (memref<?xbf16>, i64, i64, i64) -> ()
// PP: %[[GRAD:.*]] = memref.alloc() : memref<8x64x64xbf16>
// PP: func.call @trx_recv_bf16(%{{.*}}, %c1_i64{{.*}}, %c1_i64{{.*}}, %c1_i64{{.*}}) : (memref<?xbf16>, i64, i64, i64) -> ()
// PP: case 1 {
// PP: func.call @trx_recv_bf16(%{{.*}}, %c0_i64{{.*}}, %c0_i64{{.*}}, %c1_i64{{.*}}) : (memref<?xbf16>, i64, i64, i64) -> ()
// PP: func.call @trx_send_bf16(%{{.*}}, %c0_i64{{.*}}, %c1_i64{{.*}}, %c1_i64{{.*}}) : (memref<?xbf16>, i64, i64, i64) -> ()
// PP-LABEL: func.func @triax_optimizer_step(
// PP: case 0 {
// PP: %[[WG:.*]] = func.call @trx_state_bf16_2d(%c3_i32, %c0_i64) : (i32, i64) -> memref<?x?xbf16>
// PP: func.call @trx_send_bf16(%{{.*}}, %c1_i64{{.*}}, %c4_i64, %c1_i64{{.*}}) : (memref<?xbf16>, i64, i64, i64) -> ()
// PP: memref.alloc() : memref<256x64xbf16>
// PP: func.call @trx_recv_bf16(%{{.*}}, %c1_i64{{.*}}, %c4_i64{{.*}}, %c1_i64{{.*}}) : (memref<?xbf16>, i64, i64, i64) -> ()

// Expert parallelism: the tokens go to their experts' members and come
// back in bf16.
// EP: func.func private @trx_all_to_all_bf16(memref<?xbf16>, memref<?xbf16>, i64) attributes {llvm.emit_c_interface}
// EP-LABEL: func.func @triax_forward_backward(
// EP: %[[R:.*]] = memref.alloc() : memref<131072xbf16>
// EP: %[[S:.*]] = memref.cast %{{.*}} : memref<131072xbf16> to memref<?xbf16>
// EP: %[[RV:.*]] = memref.cast %[[R]] : memref<131072xbf16> to memref<?xbf16>
// EP: call @trx_all_to_all_bf16(%[[S]], %[[RV]], %c1_i64{{.*}}) : (memref<?xbf16>, memref<?xbf16>, i64) -> ()
// EP: call @trx_all_to_all_bf16({{.*}}) : (memref<?xbf16>, memref<?xbf16>, i64) -> ()

dist.mesh @mesh <["pp"=2, "tp"=2]>
// The conversion needs a model; this one only comes along.
triax.model @m config = #triax.train_config<micro_batch = 1, seq = 2> {
  triax.param @emb : tensor<4x2xf32> init <normal, std = 0.02> decay
  func.func @forward(%tokens: tensor<1x2xi32>, %targets: tensor<1x2xi32>) -> tensor<f32> {
    %emb = triax.get_param @emb : tensor<4x2xf32>
    %x = triax.embedding %tokens, %emb : (tensor<1x2xi32>, tensor<4x2xf32>) -> tensor<1x2x2xf32>
    %logits = triax.linear %x, %emb {transpose_weight} : (tensor<1x2x2xf32>, tensor<4x2xf32>) -> tensor<1x2x4xf32>
    %loss = triax.cross_entropy %logits, %targets : (tensor<1x2x4xf32>, tensor<1x2xi32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}
func.func @reduce(%x: tensor<4xf16>) -> tensor<4xf16> {
  // expected-error @+2 {{'dist.all_reduce' op only f32 and bf16 tensors are communicated between ranks, got 'f16'}}
  // expected-error @+1 {{failed to legalize operation 'dist.all_reduce'}}
  %r = dist.all_reduce sum %x over @mesh ["tp"] : tensor<4xf16>
  return %r : tensor<4xf16>
}

// -----

dist.mesh @mesh <["pp"=2, "tp"=2]>
triax.model @m config = #triax.train_config<micro_batch = 1, seq = 2> {
  triax.param @emb : tensor<4x2xf32> init <normal, std = 0.02> decay
  func.func @forward(%tokens: tensor<1x2xi32>, %targets: tensor<1x2xi32>) -> tensor<f32> {
    %emb = triax.get_param @emb : tensor<4x2xf32>
    %x = triax.embedding %tokens, %emb : (tensor<1x2xi32>, tensor<4x2xf32>) -> tensor<1x2x2xf32>
    %logits = triax.linear %x, %emb {transpose_weight} : (tensor<1x2x2xf32>, tensor<4x2xf32>) -> tensor<1x2x4xf32>
    %loss = triax.cross_entropy %logits, %targets : (tensor<1x2x4xf32>, tensor<1x2xi32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}
func.func @scatter(%x: tensor<2x4x2xf16>) -> tensor<2x2x2xf16> {
  // expected-error @+2 {{'dist.reduce_scatter' op only f32 and bf16 tensors are communicated between ranks, got 'f16'}}
  // expected-error @+1 {{failed to legalize operation 'dist.reduce_scatter'}}
  %r = dist.reduce_scatter sum %x over @mesh ["tp"] dim 1 : tensor<2x4x2xf16> -> tensor<2x2x2xf16>
  return %r : tensor<2x2x2xf16>
}

// -----

dist.mesh @mesh <["pp"=2, "tp"=2]>
triax.model @m config = #triax.train_config<micro_batch = 1, seq = 2> {
  triax.param @emb : tensor<4x2xf32> init <normal, std = 0.02> decay
  func.func @forward(%tokens: tensor<1x2xi32>, %targets: tensor<1x2xi32>) -> tensor<f32> {
    %emb = triax.get_param @emb : tensor<4x2xf32>
    %x = triax.embedding %tokens, %emb : (tensor<1x2xi32>, tensor<4x2xf32>) -> tensor<1x2x2xf32>
    %logits = triax.linear %x, %emb {transpose_weight} : (tensor<1x2x2xf32>, tensor<4x2xf32>) -> tensor<1x2x4xf32>
    %loss = triax.cross_entropy %logits, %targets : (tensor<1x2x4xf32>, tensor<1x2xi32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}
func.func @gather(%x: tensor<2x2x2xf16>) -> tensor<2x4x2xf16> {
  // expected-error @+2 {{'dist.all_gather' op only f32 and bf16 tensors are communicated between ranks, got 'f16'}}
  // expected-error @+1 {{failed to legalize operation 'dist.all_gather'}}
  %r = dist.all_gather %x over @mesh ["tp"] dim 1 : tensor<2x2x2xf16> -> tensor<2x4x2xf16>
  return %r : tensor<2x4x2xf16>
}

// -----

dist.mesh @mesh <["pp"=2, "ep"=2]>
triax.model @m config = #triax.train_config<micro_batch = 1, seq = 2> {
  triax.param @emb : tensor<4x2xf32> init <normal, std = 0.02> decay
  func.func @forward(%tokens: tensor<1x2xi32>, %targets: tensor<1x2xi32>) -> tensor<f32> {
    %emb = triax.get_param @emb : tensor<4x2xf32>
    %x = triax.embedding %tokens, %emb : (tensor<1x2xi32>, tensor<4x2xf32>) -> tensor<1x2x2xf32>
    %logits = triax.linear %x, %emb {transpose_weight} : (tensor<1x2x2xf32>, tensor<4x2xf32>) -> tensor<1x2x4xf32>
    %loss = triax.cross_entropy %logits, %targets : (tensor<1x2x4xf32>, tensor<1x2xi32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}
func.func @exchange(%x: tensor<1x2x2xf16>) -> tensor<2x1x2xf16> {
  // expected-error @+2 {{'dist.all_to_all' op only f32 and bf16 tensors are communicated between ranks, got 'f16'}}
  // expected-error @+1 {{failed to legalize operation 'dist.all_to_all'}}
  %d = dist.all_to_all %x over @mesh ["ep"] split 1 concat 0 : tensor<1x2x2xf16> -> tensor<2x1x2xf16>
  return %d : tensor<2x1x2xf16>
}

// -----

dist.mesh @mesh <["pp"=2, "tp"=2]>
triax.model @m config = #triax.train_config<micro_batch = 1, seq = 2> {
  triax.param @emb : tensor<4x2xf32> init <normal, std = 0.02> decay
  func.func @forward(%tokens: tensor<1x2xi32>, %targets: tensor<1x2xi32>) -> tensor<f32> {
    %emb = triax.get_param @emb : tensor<4x2xf32>
    %x = triax.embedding %tokens, %emb : (tensor<1x2xi32>, tensor<4x2xf32>) -> tensor<1x2x2xf32>
    %logits = triax.linear %x, %emb {transpose_weight} : (tensor<1x2x2xf32>, tensor<4x2xf32>) -> tensor<1x2x4xf32>
    %loss = triax.cross_entropy %logits, %targets : (tensor<1x2x4xf32>, tensor<1x2xi32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}
func.func @recv() -> tensor<1x2xf16> {
  // expected-error @+2 {{'dist.recv' op only f32 and bf16 tensors are communicated between ranks, got 'f16'}}
  // expected-error @+1 {{failed to legalize operation 'dist.recv'}}
  %r = dist.recv over @mesh ["pp"] from 0 tag 3 : tensor<1x2xf16>
  return %r : tensor<1x2xf16>
}

// CP-LABEL: func.func @triax_forward_backward(
// CP-COUNT-4: call @trx_shift_start_bf16({{.*}}) : (memref<?xbf16>, memref<?xbf16>, i64, i64) -> ()
// CP-NOT: call @trx_shift_start_bf16
// CP-COUNT-4: call @trx_shift_start_f32({{.*}}) : (memref<?xf32>, memref<?xf32>, i64, i64) -> ()
