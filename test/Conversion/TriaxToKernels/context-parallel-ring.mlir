// Ring attention (`context_parallel over @mesh ["cp"] ring`) on a group of
// 3: the forward computes its queries against its own key/value block
// while the runtime moves that block on (trx_shift_start_f32, slots 0 and
// 1, before the step's kernel; trx_shift_wait after it), then against the
// two blocks that arrive, the second into a second buffer (the own block
// is never written); then out = acc / l. The backward goes around twice:
// once for the rows' softmax statistics, once for the gradients, where the
// dK/dV accumulators (slots 2 and 3) follow the blocks, one shift per
// step, n = 3 in all, so that they end at their owner.
// RUN: triax-opt %s --convert-triax-to-kernels --canonicalize --cse | FileCheck %s

dist.mesh @mesh <["dp"=2, "cp"=3]>
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

// CHECK-LABEL: func.func @fwd(
// CHECK-SAME: %[[Q:.*]]: memref<1x4x4xf32>, %[[K:.*]]: memref<1x4x4xf32>, %[[V:.*]]: memref<1x4x4xf32>)
// The group of the cp axis: bit 1 of the mask.
// CHECK: call @trx_group_position(%[[MASK:.*]]) : (i64) -> i64
// CHECK: %[[KA:.*]] = memref.alloc() : memref<1x4x4xf32>
// CHECK: %[[KB:.*]] = memref.alloc() : memref<1x4x4xf32>
// CHECK: %[[VA:.*]] = memref.alloc() : memref<1x4x4xf32>
// CHECK: %[[VB:.*]] = memref.alloc() : memref<1x4x4xf32>
// CHECK: call @trx_shift_start_f32(%{{.*}}, %{{.*}}, %[[MASK]], %[[S0:.*]]) :
// CHECK: call @trx_shift_start_f32(%{{.*}}, %{{.*}}, %[[MASK]], %[[S1:.*]]) :
// CHECK: scf.parallel
// CHECK: call @trx_shift_wait(%[[S0]])
// CHECK-NEXT: call @trx_shift_wait(%[[S1]])
// CHECK: call @trx_shift_start_f32(%{{.*}}, %{{.*}}, %[[MASK]], %[[S0]]) :
// CHECK: call @trx_shift_start_f32(%{{.*}}, %{{.*}}, %[[MASK]], %[[S1]]) :
// CHECK: scf.parallel
// CHECK: call @trx_shift_wait(%[[S0]])
// CHECK-NEXT: call @trx_shift_wait(%[[S1]])
// The third block: no shift after it.
// CHECK: scf.parallel
// CHECK-NOT: call @trx_shift
// CHECK: scf.parallel
// CHECK-NOT: call @trx_shift
// CHECK: return
func.func @fwd(%q: tensor<1x4x4xf32>, %k: tensor<1x4x4xf32>, %v: tensor<1x4x4xf32>) -> tensor<1x4x4xf32> {
  %a = triax.attention %q, %k, %v heads = 2 context_parallel over @mesh ["cp"] ring : (tensor<1x4x4xf32>, tensor<1x4x4xf32>, tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  return %a : tensor<1x4x4xf32>
}

// CHECK-LABEL: func.func @bwd(
// The first trip: two shifts of the blocks, three blocks' kernels.
// CHECK-COUNT-2: call @trx_shift_start_f32(%{{.*}}, %{{.*}}, %{{.*}}, %[[S0]])
// The second: the dK/dV accumulators, zero at first, [B, kv heads, S, d].
// CHECK: %[[DK0:.*]] = memref.alloc() : memref<1x2x4x2xf32>
// CHECK: %[[DV0:.*]] = memref.alloc() : memref<1x2x4x2xf32>
// CHECK: %[[DK1:.*]] = memref.alloc() : memref<1x2x4x2xf32>
// CHECK: %[[DV1:.*]] = memref.alloc() : memref<1x2x4x2xf32>
// Step 0: blocks on, dQ, dK/dV of the own block, the accumulators on.
// CHECK: call @trx_shift_start_f32(%{{.*}}, %{{.*}}, %{{.*}}, %[[S0]])
// CHECK: call @trx_shift_start_f32(%{{.*}}, %{{.*}}, %{{.*}}, %[[S1]])
// CHECK: scf.parallel
// CHECK-NOT: call @trx_shift_wait
// CHECK: scf.parallel
// CHECK: call @trx_shift_start_f32(%{{.*}}, %{{.*}}, %{{.*}}, %[[S2:.*]]) :
// CHECK: call @trx_shift_start_f32(%{{.*}}, %{{.*}}, %{{.*}}, %[[S3:.*]]) :
// CHECK: call @trx_shift_wait(%[[S0]])
// CHECK: call @trx_shift_wait(%[[S1]])
// Step 1: dQ first, then the arrived accumulators are waited for.
// CHECK: call @trx_shift_start_f32(%{{.*}}, %{{.*}}, %{{.*}}, %[[S0]])
// CHECK: call @trx_shift_start_f32(%{{.*}}, %{{.*}}, %{{.*}}, %[[S1]])
// CHECK: scf.parallel
// CHECK: call @trx_shift_wait(%[[S2]])
// CHECK-NEXT: call @trx_shift_wait(%[[S3]])
// CHECK: scf.parallel
// CHECK: call @trx_shift_start_f32(%{{.*}}, %{{.*}}, %{{.*}}, %[[S2]])
// CHECK: call @trx_shift_start_f32(%{{.*}}, %{{.*}}, %{{.*}}, %[[S3]])
// CHECK: call @trx_shift_wait(%[[S0]])
// CHECK: call @trx_shift_wait(%[[S1]])
// Step 2, the last block: no block shift, the accumulators' third.
// CHECK: scf.parallel
// CHECK: call @trx_shift_wait(%[[S2]])
// CHECK-NEXT: call @trx_shift_wait(%[[S3]])
// CHECK: scf.parallel
// CHECK: call @trx_shift_start_f32(%{{.*}}, %{{.*}}, %{{.*}}, %[[S2]])
// CHECK: call @trx_shift_start_f32(%{{.*}}, %{{.*}}, %{{.*}}, %[[S3]])
// CHECK: call @trx_shift_wait(%[[S2]])
// CHECK-NEXT: call @trx_shift_wait(%[[S3]])
// After 3 shifts the own accumulators are in the second pair: dK = scale
// dK1, dV = dV1.
// CHECK: scf.parallel
// CHECK: scf.parallel
// CHECK: memref.load %[[DK1]]
// CHECK: memref.load %[[DV1]]
// CHECK: return
func.func @bwd(%q: tensor<1x4x4xf32>, %k: tensor<1x4x4xf32>, %v: tensor<1x4x4xf32>, %g: tensor<1x4x4xf32>) -> (tensor<1x4x4xf32>, tensor<1x4x4xf32>, tensor<1x4x4xf32>) {
  %dq, %dk, %dv = triax.attention_grad %q, %k, %v, %g heads = 2 context_parallel over @mesh ["cp"] ring : (tensor<1x4x4xf32>, tensor<1x4x4xf32>, tensor<1x4x4xf32>, tensor<1x4x4xf32>) -> (tensor<1x4x4xf32>, tensor<1x4x4xf32>, tensor<1x4x4xf32>)
  return %dq, %dk, %dv : tensor<1x4x4xf32>, tensor<1x4x4xf32>, tensor<1x4x4xf32>
}
