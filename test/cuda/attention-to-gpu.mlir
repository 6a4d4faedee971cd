// The attention kernels on the GPU (triax-map-loops-to-gpu{rows=block}): the
// fused causal softmax and its backward are each one parallel loop over the
// heads*S rows of the [heads, S, S] scores, a row kernel, so each becomes ONE
// launch of one block per (head, row), its row reductions finished by
// gpu.all_reduce (warp shuffles); the batched GEMMs between them stay runtime
// calls in the host loop over the batch index.
// RUN: triax-opt %s --pass-pipeline='builtin.module(convert-triax-to-kernels{attention=batched-gemm}, func.func(triax-map-loops-to-gpu{rows=block}))' \
// RUN:   | FileCheck %s
// With rows=thread the same loops are one thread per (head, row) instead.
// RUN: triax-opt %s --pass-pipeline='builtin.module(convert-triax-to-kernels{attention=batched-gemm}, func.func(triax-map-loops-to-gpu{rows=thread}))' \
// RUN:   | FileCheck %s --check-prefix=THREAD

// B = 2, S = 3, 4 query heads of d = 2 sharing 2 kv heads: 12 rows of P.
triax.model @attn config = #triax.train_config<micro_batch = 2, seq = 3, global_batch = 2> {
  triax.param @wte : tensor<16x8xf32> init <normal, std = 0.02>
  triax.param @wkv : tensor<8x4xf32> init <normal, std = 0.02>
  func.func @forward(%tokens: tensor<2x3xi32>, %targets: tensor<2x3xi32>) -> tensor<f32> {
    %wte = triax.get_param @wte : tensor<16x8xf32>
    %wkv = triax.get_param @wkv : tensor<8x4xf32>
    %q = triax.embedding %tokens, %wte : (tensor<2x3xi32>, tensor<16x8xf32>) -> tensor<2x3x8xf32>
    %kv = triax.linear %q, %wkv : (tensor<2x3x8xf32>, tensor<8x4xf32>) -> tensor<2x3x4xf32>
    %a = triax.attention %q, %kv, %kv heads = 4 kv_heads = 2 : (tensor<2x3x8xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x8xf32>
    %dq, %dk, %dv = triax.attention_grad %q, %kv, %kv, %a heads = 4 kv_heads = 2 : (tensor<2x3x8xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x8xf32>) -> (tensor<2x3x8xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>)
    %m = triax.attention %dq, %dq, %dq heads = 4 : (tensor<2x3x8xf32>, tensor<2x3x8xf32>, tensor<2x3x8xf32>) -> tensor<2x3x8xf32>
    %logits = triax.linear %m, %wte {transpose_weight} : (tensor<2x3x8xf32>, tensor<16x8xf32>) -> tensor<2x3x16xf32>
    %loss = triax.cross_entropy %logits, %targets : (tensor<2x3x16xf32>, tensor<2x3xi32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// attention (grouped-query): per batch index, the two score GEMMs (g = 0, 1),
// the softmax as 12 blocks, the two P v GEMMs.
// CHECK-LABEL: func.func @triax_forward(
// CHECK: %[[P:.*]] = memref.alloc() : memref<4x3x3xf32>
// CHECK: scf.for
// CHECK-COUNT-2: func.call @trx_sgemm_batched(
// CHECK-NOT: func.call
// CHECK: gpu.launch blocks(%[[BX:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %c12{{.*}}, %{{.*}} = %c1{{.*}}, %{{.*}} = %c1{{.*}}) threads(%[[TX:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %c256{{.*}},
// CHECK: %[[H:.*]] = arith.divui %[[BX]], %{{.*}} : index
// CHECK: %[[I:.*]] = arith.remui %[[BX]], %{{.*}} : index
// the row max: each thread from its own column, then across the block
// CHECK: %[[PART:.*]] = scf.for %{{.*}} = %{{.*}} to %{{.*}} step %c256{{.*}} iter_args(%{{.*}} = %{{.*}}) -> (f32) {
// CHECK: memref.load %[[P]][%[[H]], %[[I]], %{{.*}}]
// CHECK: %[[ALL:.*]] = gpu.all_reduce maximumf %[[PART]] uniform {
// CHECK: arith.maximumf %{{.*}}, %[[ALL]] : f32
// the sum of the exponentials, stored in place
// CHECK: scf.for %{{.*}} = %[[TX]] to %{{.*}} step %c256{{.*}} iter_args
// CHECK: math.exp
// CHECK: memref.store %{{.*}}, %[[P]][%[[H]], %[[I]], %{{.*}}]
// CHECK: gpu.all_reduce add
// the division and the masked columns, each followed by a barrier
// CHECK: arith.divf
// CHECK: gpu.barrier
// CHECK: memref.store %{{.*}}, %[[P]][%[[H]], %[[I]], %{{.*}}]
// CHECK: gpu.barrier
// CHECK: gpu.terminator
// CHECK-COUNT-2: func.call @trx_sgemm_batched(
// CHECK-NOT: gpu.launch
// CHECK: memref.dealloc %[[P]]

// attention_grad: P recomputed (2 GEMMs, the softmax launch), dP and dV
// (2 GEMMs per g), the dS kernel as 12 blocks, dQ and dK (2 GEMMs per g).
// CHECK: %[[P:.*]] = memref.alloc() : memref<4x3x3xf32>
// CHECK: %[[DS:.*]] = memref.alloc() : memref<4x3x3xf32>
// CHECK: scf.for
// CHECK-COUNT-2: func.call @trx_sgemm_batched(
// CHECK: gpu.launch blocks(%{{.*}}) in (%{{.*}} = %c12{{.*}}, %{{.*}} = %c1{{.*}}, %{{.*}} = %c1{{.*}}) threads
// CHECK: gpu.all_reduce maximumf
// CHECK: gpu.all_reduce add
// CHECK: gpu.terminator
// CHECK-COUNT-4: func.call @trx_sgemm_batched(
// CHECK-NOT: func.call
// CHECK: gpu.launch blocks(%[[BX:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %c12{{.*}}, %{{.*}} = %c1{{.*}}, %{{.*}} = %c1{{.*}}) threads
// CHECK: %[[H:.*]] = arith.divui %[[BX]]
// CHECK: %[[I:.*]] = arith.remui %[[BX]]
// rowsum(dP * P) across the block, then dS = P * (dP - rowsum) in place
// CHECK: %[[PART:.*]] = scf.for {{.*}} -> (f32) {
// CHECK: memref.load %[[DS]][%[[H]], %[[I]], %{{.*}}]
// CHECK: memref.load %[[P]][%[[H]], %[[I]], %{{.*}}]
// CHECK: %[[DOT:.*]] = gpu.all_reduce add %[[PART]] uniform {
// CHECK: %[[ROWSUM:.*]] = arith.addf %{{.*}}, %[[DOT]] : f32
// CHECK: arith.subf %{{.*}}, %[[ROWSUM]] : f32
// CHECK: memref.store %{{.*}}, %[[DS]][%[[H]], %[[I]], %{{.*}}]
// CHECK: gpu.barrier
// CHECK: gpu.barrier
// CHECK: gpu.terminator
// CHECK-COUNT-4: func.call @trx_sgemm_batched(
// CHECK-NOT: gpu.launch
// CHECK: memref.dealloc %[[DS]]
// CHECK: memref.dealloc %[[P]]

// Multi-head attention: the same launch over the 12 rows, one GEMM each side.
// CHECK: memref.alloc() : memref<4x3x3xf32>
// CHECK: scf.for
// CHECK-NEXT: arith.constant
// CHECK: func.call @trx_sgemm_batched(
// CHECK-NOT: func.call
// CHECK: gpu.launch blocks(%{{.*}}) in (%{{.*}} = %c12{{.*}}, %{{.*}} = %c1{{.*}}, %{{.*}} = %c1{{.*}}) threads
// CHECK: gpu.terminator
// CHECK-NEXT: }
// CHECK-NEXT: arith.constant
// CHECK: func.call @trx_sgemm_batched(
// CHECK-NEXT: }

// THREAD-LABEL: func.func @triax_forward(
// THREAD: memref.alloc() : memref<4x3x3xf32>
// THREAD: scf.for
// THREAD-COUNT-2: func.call @trx_sgemm_batched(
// THREAD: gpu.launch blocks(%[[BX:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %c1{{.*}}, %{{.*}} = %c1{{.*}}, %{{.*}} = %c1{{.*}}) threads(%[[TX:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %c256{{.*}},
// THREAD: %[[ROW:.*]] = arith.addi %{{.*}}, %[[TX]] : index
// THREAD: arith.cmpi ult, %[[ROW]], %c12{{.*}} : index
// THREAD: arith.divui %[[ROW]]
// THREAD: arith.remui %[[ROW]]
// THREAD-NOT: gpu.all_reduce
// THREAD: gpu.terminator
