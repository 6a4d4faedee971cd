// attention=batched-gemm: attention and attention_grad per batch index (a
// sequential loop), strided-batched GEMMs through the runtime over 3-D views [heads, S, d] of the
// [B*S, features] rows (matrix m = the [S, d] block of head m), around a causal
// softmax that is ONE parallel loop over the heads*S rows of a [heads, S, S]
// scratch. With grouped-query attention, one batched GEMM per position g in
// the group: query heads g, g + group, ... (head stride group*d) with all kv
// heads (head stride d); dK and dV are written by g = 0 (beta 0) and summed
// in order by g = 1, ... (beta 1).
// RUN: triax-opt %s --convert-triax-to-kernels=attention=batched-gemm | FileCheck %s --implicit-check-not=triax.

// B = 2, S = 3, 4 query heads of d = 2 sharing 2 kv heads (query head j reads
// kv head j / 2), scale = 1/sqrt(2).
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

// CHECK-LABEL: func.func @triax_forward(
// CHECK: %[[Q:.*]] = memref.alloc() : memref<2x3x8xf32>
// CHECK: %[[KV:.*]] = memref.alloc() : memref<2x3x4xf32>
// CHECK: call @trx_sgemm(

// attention, grouped-query (group 2).
// CHECK: %[[OUT:.*]] = memref.alloc() : memref<2x3x8xf32>
// CHECK: %[[QR:.*]] = memref.collapse_shape %[[Q]] {{\[}}[0, 1], [2]] : memref<2x3x8xf32> into memref<6x8xf32>
// CHECK: %[[KR:.*]] = memref.collapse_shape %[[KV]] {{\[}}[0, 1], [2]] : memref<2x3x4xf32> into memref<6x4xf32>
// CHECK: %[[VR:.*]] = memref.collapse_shape %[[KV]] {{\[}}[0, 1], [2]] : memref<2x3x4xf32> into memref<6x4xf32>
// CHECK: %[[OR:.*]] = memref.collapse_shape %[[OUT]] {{\[}}[0, 1], [2]] : memref<2x3x8xf32> into memref<6x8xf32>
// CHECK: %[[P:.*]] = memref.alloc() : memref<4x3x3xf32>
// CHECK-NOT: scf.parallel
// CHECK: scf.for %[[B:.*]] = %{{.*}} to %c2
// scores of g = 0: query heads 0, 2 of batch b (offset b*24, head stride 4),
// kv heads 0, 1 (offset b*12, head stride 2), P heads 0, 2.
// CHECK: %[[QOFF:.*]] = arith.muli %[[B]], %c24
// CHECK: %[[Q0:.*]] = memref.reinterpret_cast %[[QR]] to offset: [%[[QOFF]]], sizes: [2, 3, 2], strides: [4, 8, 1] : memref<6x8xf32> to memref<2x3x2xf32, strided<[4, 8, 1], offset: ?>>
// CHECK: %[[KOFF:.*]] = arith.muli %[[B]], %c12
// CHECK: %[[K0:.*]] = memref.reinterpret_cast %[[KR]] to offset: [%[[KOFF]]], sizes: [2, 3, 2], strides: [2, 4, 1] : memref<6x4xf32> to memref<2x3x2xf32, strided<[2, 4, 1], offset: ?>>
// CHECK: %[[P0:.*]] = memref.reinterpret_cast %[[P]] to offset: [%c0{{.*}}], sizes: [2, 3, 3], strides: [18, 3, 1] : memref<4x3x3xf32> to memref<2x3x3xf32, strided<[18, 3, 1], offset: ?>>
// CHECK: %[[A:.*]] = memref.cast %[[Q0]]
// CHECK-NEXT: %[[BB:.*]] = memref.cast %[[K0]]
// CHECK-NEXT: %[[CC:.*]] = memref.cast %[[P0]]
// CHECK-NEXT: %[[TA:.*]] = arith.constant 0 : i32
// CHECK-NEXT: %[[TB:.*]] = arith.constant 1 : i32
// CHECK-NEXT: %[[AL:.*]] = arith.constant 0.707106769 : f32
// CHECK-NEXT: %[[BE:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT: func.call @trx_sgemm_batched(%[[A]], %[[BB]], %[[CC]], %[[TA]], %[[TB]], %[[AL]], %[[BE]]) : (memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, i32, i32, f32, f32) -> ()
// g = 1: query heads 1, 3 (offset b*24 + 2), the same kv heads, P heads 1, 3.
// CHECK: %[[QB1:.*]] = arith.muli %[[B]], %c24
// CHECK: %[[QOFF1:.*]] = arith.addi %[[QB1]], %c2
// CHECK: %[[Q1:.*]] = memref.reinterpret_cast %[[QR]] to offset: [%[[QOFF1]]], sizes: [2, 3, 2], strides: [4, 8, 1]
// CHECK: %[[K1:.*]] = memref.reinterpret_cast %[[KR]] to offset: [%{{.*}}], sizes: [2, 3, 2], strides: [2, 4, 1]
// CHECK: %[[P1:.*]] = memref.reinterpret_cast %[[P]] to offset: [%c9{{.*}}], sizes: [2, 3, 3], strides: [18, 3, 1]
// CHECK: %[[A:.*]] = memref.cast %[[Q1]]
// CHECK-NEXT: %[[BB:.*]] = memref.cast %[[K1]]
// CHECK-NEXT: %[[CC:.*]] = memref.cast %[[P1]]
// CHECK: func.call @trx_sgemm_batched(%[[A]], %[[BB]], %[[CC]],
// The causal softmax: one parallel loop over the 4*3 rows of P, row r is
// row i = r mod 3 of head h = r / 3, softmax over columns [0, i], zero past i.
// CHECK: scf.parallel (%[[R:.*]]) = (%{{.*}}) to (%c12{{.*}}) step
// CHECK: %[[H:.*]] = arith.divui %[[R]], %[[S:.*]] : index
// CHECK: %[[I:.*]] = arith.remui %[[R]], %[[S]] : index
// CHECK: %[[END:.*]] = arith.addi %[[I]], %{{.*}} : index
// CHECK: %[[FIRST:.*]] = memref.load %[[P]][%[[H]], %[[I]], %{{.*}}]
// CHECK: %[[MAX:.*]] = scf.for %[[T:.*]] = %{{.*}} to %[[END]] step %{{.*}} iter_args(%[[M:.*]] = %[[FIRST]]) -> (f32)
// CHECK: arith.maximumf %[[M]]
// CHECK: %[[SUM:.*]] = scf.for %[[T:.*]] = %{{.*}} to %[[END]] step %{{.*}} iter_args(%{{.*}}) -> (f32)
// CHECK: %[[SHIFT:.*]] = arith.subf %{{.*}}, %[[MAX]] : f32
// CHECK: %[[E:.*]] = math.exp %[[SHIFT]]
// CHECK: memref.store %[[E]], %[[P]][%[[H]], %[[I]], %[[T]]]
// CHECK: scf.for %[[T:.*]] = %{{.*}} to %[[END]]
// CHECK: arith.divf %{{.*}}, %[[SUM]]
// CHECK: scf.for %[[T:.*]] = %[[END]] to %c3
// CHECK: memref.store %{{.*}}, %[[P]][%[[H]], %[[I]], %[[T]]]
// CHECK: scf.reduce
// CHECK-NEXT: }
// out = P v: g = 0 then g = 1, into the query heads of g.
// CHECK: %[[P0:.*]] = memref.reinterpret_cast %[[P]] to offset: [%c0{{.*}}], sizes: [2, 3, 3], strides: [18, 3, 1]
// CHECK: %[[V0:.*]] = memref.reinterpret_cast %[[VR]] to offset: [%{{.*}}], sizes: [2, 3, 2], strides: [2, 4, 1]
// CHECK: %[[O0:.*]] = memref.reinterpret_cast %[[OR]] to offset: [%{{.*}}], sizes: [2, 3, 2], strides: [4, 8, 1]
// CHECK: %[[A:.*]] = memref.cast %[[P0]]
// CHECK-NEXT: %[[BB:.*]] = memref.cast %[[V0]]
// CHECK-NEXT: %[[CC:.*]] = memref.cast %[[O0]]
// CHECK-NEXT: %[[TA:.*]] = arith.constant 0 : i32
// CHECK-NEXT: %[[TB:.*]] = arith.constant 0 : i32
// CHECK-NEXT: %[[AL:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-NEXT: %[[BE:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT: func.call @trx_sgemm_batched(%[[A]], %[[BB]], %[[CC]], %[[TA]], %[[TB]], %[[AL]], %[[BE]])
// CHECK: %[[P1:.*]] = memref.reinterpret_cast %[[P]] to offset: [%c9{{.*}}]
// CHECK: %[[OB1:.*]] = arith.muli %{{.*}}, %c24
// CHECK: %[[OOFF1:.*]] = arith.addi %[[OB1]], %c2
// CHECK: %[[O1:.*]] = memref.reinterpret_cast %[[OR]] to offset: [%[[OOFF1]]], sizes: [2, 3, 2], strides: [4, 8, 1]
// CHECK: func.call @trx_sgemm_batched(
// CHECK-NEXT: }
// CHECK-NEXT: memref.dealloc %[[P]]

// attention_grad: P and dS scratch [4, 3, 3]; per batch index: P recomputed,
// then per g: dP = dO v^T, dV (+)= P^T dO; the dS kernel; per g: dQ = scale
// dS k, dK (+)= scale dS^T q.
// CHECK: %[[DQ:.*]] = memref.alloc() : memref<2x3x8xf32>
// CHECK-NEXT: %[[DK:.*]] = memref.alloc() : memref<2x3x4xf32>
// CHECK-NEXT: %[[DV:.*]] = memref.alloc() : memref<2x3x4xf32>
// CHECK: %[[QR:.*]] = memref.collapse_shape %[[Q]]
// CHECK: %[[KR:.*]] = memref.collapse_shape %[[KV]]
// CHECK: %[[VR:.*]] = memref.collapse_shape %[[KV]]
// CHECK: %[[DOR:.*]] = memref.collapse_shape %[[OUT]]
// CHECK: %[[DQR:.*]] = memref.collapse_shape %[[DQ]]
// CHECK: %[[DKR:.*]] = memref.collapse_shape %[[DK]]
// CHECK: %[[DVR:.*]] = memref.collapse_shape %[[DV]]
// CHECK: %[[P:.*]] = memref.alloc() : memref<4x3x3xf32>
// CHECK: %[[DS:.*]] = memref.alloc() : memref<4x3x3xf32>
// CHECK-NOT: scf.parallel
// CHECK: scf.for %{{.*}} = %{{.*}} to %c2
// P recomputed: scale q k^T per g, then the same softmax.
// CHECK: func.call @trx_sgemm_batched
// CHECK: func.call @trx_sgemm_batched
// CHECK: scf.parallel (%{{.*}}) = (%{{.*}}) to (%c12{{.*}})
// CHECK: math.exp
// CHECK: scf.reduce
// g = 0: dP = dO v^T into dS's heads 0, 2; dV = P^T dO (beta 0).
// CHECK: %[[DO0:.*]] = memref.reinterpret_cast %[[DOR]] to offset: [%{{.*}}], sizes: [2, 3, 2], strides: [4, 8, 1]
// CHECK: %[[V0:.*]] = memref.reinterpret_cast %[[VR]] to offset: [%{{.*}}], sizes: [2, 3, 2], strides: [2, 4, 1]
// CHECK: %[[DS0:.*]] = memref.reinterpret_cast %[[DS]] to offset: [%c0{{.*}}], sizes: [2, 3, 3], strides: [18, 3, 1]
// CHECK: %[[P0:.*]] = memref.reinterpret_cast %[[P]] to offset: [%c0{{.*}}], sizes: [2, 3, 3], strides: [18, 3, 1]
// CHECK: %[[DV0:.*]] = memref.reinterpret_cast %[[DVR]] to offset: [%{{.*}}], sizes: [2, 3, 2], strides: [2, 4, 1]
// CHECK: %[[A:.*]] = memref.cast %[[DO0]]
// CHECK-NEXT: %[[BB:.*]] = memref.cast %[[V0]]
// CHECK-NEXT: %[[CC:.*]] = memref.cast %[[DS0]]
// CHECK-NEXT: %[[TA:.*]] = arith.constant 0 : i32
// CHECK-NEXT: %[[TB:.*]] = arith.constant 1 : i32
// CHECK-NEXT: %[[AL:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-NEXT: %[[BE:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT: func.call @trx_sgemm_batched(%[[A]], %[[BB]], %[[CC]], %[[TA]], %[[TB]], %[[AL]], %[[BE]])
// CHECK-NEXT: %[[A:.*]] = memref.cast %[[P0]]
// CHECK-NEXT: %[[BB:.*]] = memref.cast %[[DO0]]
// CHECK-NEXT: %[[CC:.*]] = memref.cast %[[DV0]]
// CHECK-NEXT: %[[TA:.*]] = arith.constant 1 : i32
// CHECK-NEXT: %[[TB:.*]] = arith.constant 0 : i32
// CHECK-NEXT: %[[AL:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-NEXT: %[[BE:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT: func.call @trx_sgemm_batched(%[[A]], %[[BB]], %[[CC]], %[[TA]], %[[TB]], %[[AL]], %[[BE]])
// g = 1: heads 1, 3; dV += P^T dO (beta 1) into the same kv heads.
// CHECK: %[[DS1:.*]] = memref.reinterpret_cast %[[DS]] to offset: [%c9{{.*}}]
// CHECK: %[[P1:.*]] = memref.reinterpret_cast %[[P]] to offset: [%c9{{.*}}]
// CHECK: %[[DV1:.*]] = memref.reinterpret_cast %[[DVR]] to offset: [%{{.*}}], sizes: [2, 3, 2], strides: [2, 4, 1]
// CHECK: func.call @trx_sgemm_batched(
// CHECK-NEXT: %[[A:.*]] = memref.cast %[[P1]]
// CHECK-NEXT: %{{.*}} = memref.cast
// CHECK-NEXT: %[[CC:.*]] = memref.cast %[[DV1]]
// CHECK-NEXT: %[[TA:.*]] = arith.constant 1 : i32
// CHECK-NEXT: %[[TB:.*]] = arith.constant 0 : i32
// CHECK-NEXT: %[[AL:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-NEXT: %[[BE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-NEXT: func.call @trx_sgemm_batched(%[[A]], %{{.*}}, %[[CC]], %[[TA]], %[[TB]], %[[AL]], %[[BE]])
// dS = P * (dP - rowsum(dP * P)) in place, one loop over the 12 rows.
// CHECK: scf.parallel (%[[R:.*]]) = (%{{.*}}) to (%c12{{.*}}) step
// CHECK: %[[H:.*]] = arith.divui %[[R]]
// CHECK: %[[I:.*]] = arith.remui %[[R]]
// CHECK: %[[END:.*]] = arith.addi %[[I]]
// CHECK: %[[DOT:.*]] = scf.for %{{.*}} = %{{.*}} to %[[END]] step %{{.*}} iter_args(%{{.*}}) -> (f32)
// CHECK: scf.for %[[T:.*]] = %{{.*}} to %[[END]]
// CHECK: %[[PT:.*]] = memref.load %[[P]][%[[H]], %[[I]], %[[T]]]
// CHECK: %[[DPT:.*]] = memref.load %[[DS]][%[[H]], %[[I]], %[[T]]]
// CHECK: %[[DIFF:.*]] = arith.subf %[[DPT]], %[[DOT]]
// CHECK: %[[G:.*]] = arith.mulf %[[PT]], %[[DIFF]]
// CHECK: memref.store %[[G]], %[[DS]][%[[H]], %[[I]], %[[T]]]
// CHECK: scf.for %[[T:.*]] = %[[END]] to %c3
// CHECK: memref.store %{{.*}}, %[[DS]][%[[H]], %[[I]], %[[T]]]
// CHECK: scf.reduce
// g = 0: dQ = scale dS k, dK = scale dS^T q (beta 0).
// CHECK: %[[DS0:.*]] = memref.reinterpret_cast %[[DS]] to offset: [%c0{{.*}}]
// CHECK: %[[K0:.*]] = memref.reinterpret_cast %[[KR]]
// CHECK: %[[DQ0:.*]] = memref.reinterpret_cast %[[DQR]] to offset: [%{{.*}}], sizes: [2, 3, 2], strides: [4, 8, 1]
// CHECK: %[[Q0:.*]] = memref.reinterpret_cast %[[QR]] to offset: [%{{.*}}], sizes: [2, 3, 2], strides: [4, 8, 1]
// CHECK: %[[DK0:.*]] = memref.reinterpret_cast %[[DKR]] to offset: [%{{.*}}], sizes: [2, 3, 2], strides: [2, 4, 1]
// CHECK: %[[A:.*]] = memref.cast %[[DS0]]
// CHECK-NEXT: %[[BB:.*]] = memref.cast %[[K0]]
// CHECK-NEXT: %[[CC:.*]] = memref.cast %[[DQ0]]
// CHECK-NEXT: %[[TA:.*]] = arith.constant 0 : i32
// CHECK-NEXT: %[[TB:.*]] = arith.constant 0 : i32
// CHECK-NEXT: %[[AL:.*]] = arith.constant 0.707106769 : f32
// CHECK-NEXT: %[[BE:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT: func.call @trx_sgemm_batched(%[[A]], %[[BB]], %[[CC]], %[[TA]], %[[TB]], %[[AL]], %[[BE]])
// CHECK-NEXT: %[[A:.*]] = memref.cast %[[DS0]]
// CHECK-NEXT: %[[BB:.*]] = memref.cast %[[Q0]]
// CHECK-NEXT: %[[CC:.*]] = memref.cast %[[DK0]]
// CHECK-NEXT: %[[TA:.*]] = arith.constant 1 : i32
// CHECK-NEXT: %[[TB:.*]] = arith.constant 0 : i32
// CHECK-NEXT: %[[AL:.*]] = arith.constant 0.707106769 : f32
// CHECK-NEXT: %[[BE:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT: func.call @trx_sgemm_batched(%[[A]], %[[BB]], %[[CC]], %[[TA]], %[[TB]], %[[AL]], %[[BE]])
// g = 1: dK += scale dS^T q (beta 1), after g = 0.
// CHECK: %[[DS1:.*]] = memref.reinterpret_cast %[[DS]] to offset: [%c9{{.*}}]
// CHECK: func.call @trx_sgemm_batched(
// CHECK-NEXT: %[[A:.*]] = memref.cast %[[DS1]]
// CHECK-NEXT: %{{.*}} = memref.cast
// CHECK-NEXT: %{{.*}} = memref.cast
// CHECK-NEXT: %[[TA:.*]] = arith.constant 1 : i32
// CHECK-NEXT: %[[TB:.*]] = arith.constant 0 : i32
// CHECK-NEXT: %[[AL:.*]] = arith.constant 0.707106769 : f32
// CHECK-NEXT: %[[BE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-NEXT: func.call @trx_sgemm_batched(%[[A]], %{{.*}}, %{{.*}}, %[[TA]], %[[TB]], %[[AL]], %[[BE]])
// CHECK-NEXT: }
// CHECK-NEXT: memref.dealloc %[[DS]]
// CHECK-NEXT: memref.dealloc %[[P]]

// Multi-head attention (kv_heads = heads): one batched GEMM over all 4 heads
// per product, head stride d = 2 everywhere, the whole scratch P.
// CHECK: %[[P:.*]] = memref.alloc() : memref<4x3x3xf32>
// CHECK-NEXT: %{{.*}} = arith.constant
// CHECK-NEXT: %{{.*}} = arith.constant
// CHECK-NEXT: %{{.*}} = arith.constant
// CHECK-NEXT: scf.for
// CHECK-NOT: arith.divui
// CHECK: %[[QM:.*]] = memref.reinterpret_cast %{{.*}} to offset: [%{{.*}}], sizes: [4, 3, 2], strides: [2, 8, 1] : memref<6x8xf32> to memref<4x3x2xf32, strided<[2, 8, 1], offset: ?>>
// CHECK: %[[KM:.*]] = memref.reinterpret_cast %{{.*}} to offset: [%{{.*}}], sizes: [4, 3, 2], strides: [2, 8, 1]
// CHECK-NEXT: %[[A:.*]] = memref.cast %[[QM]]
// CHECK-NEXT: %[[BB:.*]] = memref.cast %[[KM]]
// CHECK-NEXT: %[[CC:.*]] = memref.cast %[[P]] : memref<4x3x3xf32> to
// CHECK: func.call @trx_sgemm_batched(%[[A]], %[[BB]], %[[CC]],
// CHECK-NOT: func.call
// CHECK: scf.parallel (%{{.*}}) = (%{{.*}}) to (%c12{{.*}})
// CHECK: scf.reduce
// CHECK: memref.cast %[[P]] : memref<4x3x3xf32> to
// CHECK: func.call @trx_sgemm_batched(
// CHECK-NEXT: }
// CHECK: return
