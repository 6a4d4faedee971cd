// attention and attention_grad: per (batch, head), in a sequential loop, GEMMs
// through the runtime on strided [S, d] blocks of the [B*S, features] views,
// around a causal softmax parallel over the S rows of an [S, S] scratch.
// RUN: triax-opt %s --convert-triax-to-kernels | FileCheck %s --implicit-check-not=triax.

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
// CHECK: call @trx_sgemm

// attention, grouped-query.
// CHECK: %[[OUT:.*]] = memref.alloc() : memref<2x3x8xf32>
// CHECK: %[[QR:.*]] = memref.collapse_shape %[[Q]] {{\[}}[0, 1], [2]] : memref<2x3x8xf32> into memref<6x8xf32>
// CHECK: %[[KR:.*]] = memref.collapse_shape %[[KV]] {{\[}}[0, 1], [2]] : memref<2x3x4xf32> into memref<6x4xf32>
// CHECK: %[[VR:.*]] = memref.collapse_shape %[[KV]] {{\[}}[0, 1], [2]] : memref<2x3x4xf32> into memref<6x4xf32>
// CHECK: %[[OR:.*]] = memref.collapse_shape %[[OUT]] {{\[}}[0, 1], [2]] : memref<2x3x8xf32> into memref<6x8xf32>
// CHECK: %[[P:.*]] = memref.alloc() : memref<3x3xf32>
// CHECK-NOT: scf.parallel
// CHECK: scf.for %[[B:.*]] = %{{.*}} to %c2
// CHECK-NOT: scf.parallel
// CHECK: scf.for %[[J:.*]] = %{{.*}} to %c4
// CHECK: %[[KVJ:.*]] = arith.divui %[[J]], %c2
// CHECK: %[[R0:.*]] = arith.muli %[[B]], %c3
// CHECK: %[[C0:.*]] = arith.muli %[[J]], %c2
// CHECK: %[[QB:.*]] = memref.subview %[[QR]][%[[R0]], %[[C0]]] [3, 2] [1, 1] : memref<6x8xf32> to memref<3x2xf32, strided<[8, 1], offset: ?>>
// CHECK: %[[R1:.*]] = arith.muli %[[B]], %c3
// CHECK: %[[C1:.*]] = arith.muli %[[KVJ]], %c2
// CHECK: %[[KB:.*]] = memref.subview %[[KR]][%[[R1]], %[[C1]]] [3, 2] [1, 1] : memref<6x4xf32> to memref<3x2xf32, strided<[4, 1], offset: ?>>
// CHECK: %[[C2:.*]] = arith.muli %[[KVJ]], %c2
// CHECK: %[[VB:.*]] = memref.subview %[[VR]][%{{.*}}, %[[C2]]] [3, 2] [1, 1]
// CHECK: %[[C3:.*]] = arith.muli %[[J]], %c2
// CHECK: %[[OB:.*]] = memref.subview %[[OR]][%{{.*}}, %[[C3]]] [3, 2] [1, 1]
// scores = scale * q k^T
// CHECK: %[[A:.*]] = memref.cast %[[QB]]
// CHECK-NEXT: %[[BB:.*]] = memref.cast %[[KB]]
// CHECK-NEXT: %[[CC:.*]] = memref.cast %[[P]]
// CHECK-NEXT: %[[TA:.*]] = arith.constant 0 : i32
// CHECK-NEXT: %[[TB:.*]] = arith.constant 1 : i32
// CHECK-NEXT: %[[AL:.*]] = arith.constant 0.707106769 : f32
// CHECK-NEXT: %[[BE:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT: func.call @trx_sgemm(%[[A]], %[[BB]], %[[CC]], %[[TA]], %[[TB]], %[[AL]], %[[BE]])
// causal softmax of row i over columns [0, i], zero past i
// CHECK: scf.parallel (%[[I:.*]]) = (%{{.*}}) to (%c3{{.*}}) step
// CHECK: %[[END:.*]] = arith.addi %[[I]], %{{.*}} : index
// CHECK: %[[FIRST:.*]] = memref.load %[[P]][%[[I]], %{{.*}}]
// CHECK: %[[MAX:.*]] = scf.for %[[T:.*]] = %{{.*}} to %[[END]] step %{{.*}} iter_args(%[[M:.*]] = %[[FIRST]]) -> (f32)
// CHECK: arith.maximumf %[[M]]
// CHECK: %[[SUM:.*]] = scf.for %[[T:.*]] = %{{.*}} to %[[END]] step %{{.*}} iter_args(%{{.*}}) -> (f32)
// CHECK: %[[SHIFT:.*]] = arith.subf %{{.*}}, %[[MAX]] : f32
// CHECK: %[[E:.*]] = math.exp %[[SHIFT]]
// CHECK: memref.store %[[E]], %[[P]][%[[I]], %[[T]]]
// CHECK: scf.for %[[T:.*]] = %{{.*}} to %[[END]]
// CHECK: arith.divf %{{.*}}, %[[SUM]]
// CHECK: scf.for %[[T:.*]] = %[[END]] to %c3
// CHECK: memref.store %{{.*}}, %[[P]][%[[I]], %[[T]]]
// CHECK: scf.reduce
// out = P v
// CHECK: %[[A:.*]] = memref.cast %[[P]]
// CHECK-NEXT: %[[BB:.*]] = memref.cast %[[VB]]
// CHECK-NEXT: %[[CC:.*]] = memref.cast %[[OB]]
// CHECK-NEXT: %[[TA:.*]] = arith.constant 0 : i32
// CHECK-NEXT: %[[TB:.*]] = arith.constant 0 : i32
// CHECK-NEXT: %[[AL:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-NEXT: %[[BE:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT: func.call @trx_sgemm(%[[A]], %[[BB]], %[[CC]], %[[TA]], %[[TB]], %[[AL]], %[[BE]])

// attention_grad: dK and dV are zero-filled, then accumulated with beta = 1.
// CHECK: %[[DQ:.*]] = memref.alloc() : memref<2x3x8xf32>
// CHECK: %[[DK:.*]] = memref.alloc() : memref<2x3x4xf32>
// CHECK: %[[DKF:.*]] = memref.collapse_shape %[[DK]] {{\[}}[0, 1, 2]]
// CHECK: scf.parallel
// CHECK: memref.store %{{.*}}, %[[DKF]]
// CHECK: %[[DV:.*]] = memref.alloc() : memref<2x3x4xf32>
// CHECK: %[[DVF:.*]] = memref.collapse_shape %[[DV]] {{\[}}[0, 1, 2]]
// CHECK: scf.parallel
// CHECK: memref.store %{{.*}}, %[[DVF]]
// CHECK: %[[QR:.*]] = memref.collapse_shape %[[Q]]
// CHECK: %[[KR:.*]] = memref.collapse_shape %[[KV]]
// CHECK: %[[VR:.*]] = memref.collapse_shape %[[KV]]
// CHECK: %[[DOR:.*]] = memref.collapse_shape %[[OUT]]
// CHECK: %[[DQR:.*]] = memref.collapse_shape %[[DQ]]
// CHECK: %[[DKR:.*]] = memref.collapse_shape %[[DK]]
// CHECK: %[[DVR:.*]] = memref.collapse_shape %[[DV]]
// CHECK: %[[P:.*]] = memref.alloc() : memref<3x3xf32>
// CHECK: %[[DS:.*]] = memref.alloc() : memref<3x3xf32>
// CHECK-NOT: scf.parallel
// CHECK: scf.for %{{.*}} = %{{.*}} to %c2
// CHECK-NOT: scf.parallel
// CHECK: scf.for %[[J:.*]] = %{{.*}} to %c4
// CHECK: %[[KVJ:.*]] = arith.divui %[[J]], %c2
// CHECK: %[[QB:.*]] = memref.subview %[[QR]]
// CHECK: %[[KB:.*]] = memref.subview %[[KR]]
// CHECK: %[[VB:.*]] = memref.subview %[[VR]]
// CHECK: %[[DOB:.*]] = memref.subview %[[DOR]]
// CHECK: %[[C:.*]] = arith.muli %[[J]], %c2
// CHECK: %[[DQB:.*]] = memref.subview %[[DQR]][%{{.*}}, %[[C]]]
// CHECK: %[[C:.*]] = arith.muli %[[KVJ]], %c2
// CHECK: %[[DKB:.*]] = memref.subview %[[DKR]][%{{.*}}, %[[C]]]
// CHECK: %[[C:.*]] = arith.muli %[[KVJ]], %c2
// CHECK: %[[DVB:.*]] = memref.subview %[[DVR]][%{{.*}}, %[[C]]]
// P recomputed: scale * q k^T, then the same softmax.
// CHECK: %[[A:.*]] = memref.cast %[[QB]]
// CHECK-NEXT: %[[BB:.*]] = memref.cast %[[KB]]
// CHECK-NEXT: %[[CC:.*]] = memref.cast %[[P]]
// CHECK-NEXT: %[[TA:.*]] = arith.constant 0 : i32
// CHECK-NEXT: %[[TB:.*]] = arith.constant 1 : i32
// CHECK-NEXT: %[[AL:.*]] = arith.constant 0.707106769 : f32
// CHECK-NEXT: %[[BE:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT: func.call @trx_sgemm(%[[A]], %[[BB]], %[[CC]], %[[TA]], %[[TB]], %[[AL]], %[[BE]])
// CHECK: scf.parallel
// CHECK: math.exp
// CHECK: scf.reduce
// dP = dO v^T
// CHECK: %[[A:.*]] = memref.cast %[[DOB]]
// CHECK-NEXT: %[[BB:.*]] = memref.cast %[[VB]]
// CHECK-NEXT: %[[CC:.*]] = memref.cast %[[DS]]
// CHECK-NEXT: %[[TA:.*]] = arith.constant 0 : i32
// CHECK-NEXT: %[[TB:.*]] = arith.constant 1 : i32
// CHECK-NEXT: %[[AL:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-NEXT: %[[BE:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT: func.call @trx_sgemm(%[[A]], %[[BB]], %[[CC]], %[[TA]], %[[TB]], %[[AL]], %[[BE]])
// dV += P^T dO
// CHECK-NEXT: %[[A:.*]] = memref.cast %[[P]]
// CHECK-NEXT: %[[BB:.*]] = memref.cast %[[DOB]]
// CHECK-NEXT: %[[CC:.*]] = memref.cast %[[DVB]]
// CHECK-NEXT: %[[TA:.*]] = arith.constant 1 : i32
// CHECK-NEXT: %[[TB:.*]] = arith.constant 0 : i32
// CHECK-NEXT: %[[AL:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-NEXT: %[[BE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-NEXT: func.call @trx_sgemm(%[[A]], %[[BB]], %[[CC]], %[[TA]], %[[TB]], %[[AL]], %[[BE]])
// dS = P * (dP - rowsum(dP * P)), in place in the dP buffer, 0 past i
// CHECK: scf.parallel (%[[I:.*]]) = (%{{.*}}) to (%c3{{.*}}) step
// CHECK: %[[END:.*]] = arith.addi %[[I]]
// CHECK: %[[DOT:.*]] = scf.for %{{.*}} = %{{.*}} to %[[END]] step %{{.*}} iter_args(%{{.*}}) -> (f32)
// CHECK: scf.for %[[T:.*]] = %{{.*}} to %[[END]]
// CHECK: %[[PT:.*]] = memref.load %[[P]][%[[I]], %[[T]]]
// CHECK: %[[DPT:.*]] = memref.load %[[DS]][%[[I]], %[[T]]]
// CHECK: %[[DIFF:.*]] = arith.subf %[[DPT]], %[[DOT]]
// CHECK: %[[G:.*]] = arith.mulf %[[PT]], %[[DIFF]]
// CHECK: memref.store %[[G]], %[[DS]][%[[I]], %[[T]]]
// CHECK: scf.for %[[T:.*]] = %[[END]] to %c3
// CHECK: memref.store %{{.*}}, %[[DS]][%[[I]], %[[T]]]
// CHECK: scf.reduce
// dQ = scale dS k
// CHECK: %[[A:.*]] = memref.cast %[[DS]]
// CHECK-NEXT: %[[BB:.*]] = memref.cast %[[KB]]
// CHECK-NEXT: %[[CC:.*]] = memref.cast %[[DQB]]
// CHECK-NEXT: %[[TA:.*]] = arith.constant 0 : i32
// CHECK-NEXT: %[[TB:.*]] = arith.constant 0 : i32
// CHECK-NEXT: %[[AL:.*]] = arith.constant 0.707106769 : f32
// CHECK-NEXT: %[[BE:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT: func.call @trx_sgemm(%[[A]], %[[BB]], %[[CC]], %[[TA]], %[[TB]], %[[AL]], %[[BE]])
// dK += scale dS^T q
// CHECK-NEXT: %[[A:.*]] = memref.cast %[[DS]]
// CHECK-NEXT: %[[BB:.*]] = memref.cast %[[QB]]
// CHECK-NEXT: %[[CC:.*]] = memref.cast %[[DKB]]
// CHECK-NEXT: %[[TA:.*]] = arith.constant 1 : i32
// CHECK-NEXT: %[[TB:.*]] = arith.constant 0 : i32
// CHECK-NEXT: %[[AL:.*]] = arith.constant 0.707106769 : f32
// CHECK-NEXT: %[[BE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-NEXT: func.call @trx_sgemm(%[[A]], %[[BB]], %[[CC]], %[[TA]], %[[TB]], %[[AL]], %[[BE]])
// CHECK-NEXT: }
// CHECK-NEXT: }

// Multi-head attention (kv_heads = heads): head j reads kv head j.
// CHECK: scf.for %{{.*}} = %{{.*}} to %c2
// CHECK-NOT: arith.divui
// CHECK: scf.for %[[J:.*]] = %{{.*}} to %c4
// CHECK-NOT: arith.divui
// CHECK: %[[C:.*]] = arith.muli %[[J]], %c2
// CHECK: memref.subview %{{.*}}[%{{.*}}, %[[C]]] [3, 2] [1, 1] : memref<6x8xf32>
// CHECK-NOT: arith.divui
// CHECK: func.call @trx_sgemm
// CHECK: return
