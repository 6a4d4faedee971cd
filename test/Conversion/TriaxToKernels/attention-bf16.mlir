// attention and attention_grad on bf16 operands: the scores are an f32
// [heads, S, S] scratch (q k^T through the bf16 x bf16 -> f32 batched GEMM),
// the softmax and its backward run in f32 and also write a bf16 copy of P / dS
// for the GEMMs that take them as operands (bf16 x bf16 -> bf16, or -> f32 for
// an f32 result). An f32 result gradient is rounded to bf16 first (the GEMMs
// have no f32 x bf16 form). Numerics: attention-reference.test.
// RUN: triax-opt %s --convert-triax-to-kernels=attention=batched-gemm | FileCheck %s

triax.model @m config = #triax.train_config<micro_batch = 1, seq = 2, global_batch = 1> {
  triax.param @w : tensor<4x2xf32> init <normal, std = 0.02>
  func.func @forward(%tokens: tensor<1x2xi32>, %targets: tensor<1x2xi32>) -> tensor<f32> {
    %w = triax.get_param @w : tensor<4x2xf32>
    %x = triax.embedding %tokens, %w : (tensor<1x2xi32>, tensor<4x2xf32>) -> tensor<1x2x2xf32>
    %l = triax.cross_entropy %x, %targets : (tensor<1x2x2xf32>, tensor<1x2xi32>) -> tensor<f32>
    return %l : tensor<f32>
  }
}
func.func @fwd(%q: tensor<2x3x8xbf16>, %k: tensor<2x3x4xbf16>, %v: tensor<2x3x4xbf16>) -> tensor<2x3x8xbf16> {
  %o = triax.attention %q, %k, %v heads = 4 kv_heads = 2 : (tensor<2x3x8xbf16>, tensor<2x3x4xbf16>, tensor<2x3x4xbf16>) -> tensor<2x3x8xbf16>
  return %o : tensor<2x3x8xbf16>
}
func.func @bwd(%q: tensor<2x3x8xbf16>, %k: tensor<2x3x8xbf16>, %v: tensor<2x3x8xbf16>, %do: tensor<2x3x8xf32>) -> (tensor<2x3x8xf32>, tensor<2x3x8xbf16>, tensor<2x3x8xbf16>) {
  %dq, %dk, %dv = triax.attention_grad %q, %k, %v, %do heads = 4 : (tensor<2x3x8xbf16>, tensor<2x3x8xbf16>, tensor<2x3x8xbf16>, tensor<2x3x8xf32>) -> (tensor<2x3x8xf32>, tensor<2x3x8xbf16>, tensor<2x3x8xbf16>)
  return %dq, %dk, %dv : tensor<2x3x8xf32>, tensor<2x3x8xbf16>, tensor<2x3x8xbf16>
}

// CHECK-LABEL: func.func @fwd(
// CHECK: %[[P:.*]] = memref.alloc() : memref<4x3x3xf32>
// CHECK-NEXT: %[[PB:.*]] = memref.alloc() : memref<4x3x3xbf16>
// CHECK: scf.for
// CHECK: memref.reinterpret_cast %[[P]] to offset: [%{{.*}}], sizes: [2, 3, 3], strides: [18, 3, 1] : memref<4x3x3xf32>
// CHECK: func.call @trx_gemm_bf16_f32_batched({{.*}}) : (memref<?x?x?xbf16, strided<[?, ?, ?], offset: ?>>, memref<?x?x?xbf16, strided<[?, ?, ?], offset: ?>>, memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, i32, i32, f32, f32) -> ()
// CHECK: func.call @trx_gemm_bf16_f32_batched(
// softmax over the f32 scores; the probabilities rounded into the bf16 copy
// CHECK: scf.parallel
// CHECK: memref.load %[[P]]
// CHECK: arith.maximumf
// CHECK: math.exp
// CHECK: memref.store %{{.*}}, %[[P]]
// CHECK: %[[PROB:.*]] = arith.divf
// CHECK-NEXT: %[[PROBB:.*]] = arith.truncf %[[PROB]] : f32 to bf16
// CHECK-NEXT: memref.store %[[PROBB]], %[[PB]]
// CHECK: arith.truncf %{{.*}} : f32 to bf16
// CHECK-NEXT: memref.store %{{.*}}, %[[PB]]
// out = P v in bf16 (fp32 accumulation in the runtime)
// CHECK: memref.reinterpret_cast %[[PB]] to offset: [%{{.*}}], sizes: [2, 3, 3], strides: [18, 3, 1] : memref<4x3x3xbf16>
// CHECK: func.call @trx_gemm_bf16_batched({{.*}}) : (memref<?x?x?xbf16, strided<[?, ?, ?], offset: ?>>, memref<?x?x?xbf16, strided<[?, ?, ?], offset: ?>>, memref<?x?x?xbf16, strided<[?, ?, ?], offset: ?>>, i32, i32, f32, f32) -> ()
// CHECK: func.call @trx_gemm_bf16_batched(
// CHECK: memref.dealloc %[[PB]]
// CHECK-NEXT: memref.dealloc %[[P]]

// CHECK-LABEL: func.func @bwd(
// CHECK: %[[DQ:.*]] = memref.alloc() : memref<2x3x8xf32>
// the f32 result gradient as bf16
// CHECK: %[[DOR:.*]] = memref.collapse_shape %arg3 {{\[}}[0, 1], [2]] : memref<2x3x8xf32> into memref<6x8xf32>
// CHECK: %[[DOB:.*]] = memref.alloc() : memref<6x8xbf16>
// CHECK: scf.parallel
// CHECK: memref.load %[[DOR]]
// CHECK: arith.truncf %{{.*}} : f32 to bf16
// CHECK: memref.store %{{.*}}, %[[DOB]]
// CHECK: %[[P:.*]] = memref.alloc() : memref<4x3x3xf32>
// CHECK-NEXT: %[[PB:.*]] = memref.alloc() : memref<4x3x3xbf16>
// CHECK-NEXT: %[[DS:.*]] = memref.alloc() : memref<4x3x3xf32>
// CHECK-NEXT: %[[DSB:.*]] = memref.alloc() : memref<4x3x3xbf16>
// CHECK: scf.for
// CHECK: func.call @trx_gemm_bf16_f32_batched(
// the softmax keeps P in f32 (for dS) and in bf16 (for P^T dO)
// CHECK: scf.parallel
// CHECK: %[[PROB:.*]] = arith.divf
// CHECK-NEXT: memref.store %[[PROB]], %[[P]]
// CHECK-NEXT: %[[PROBB:.*]] = arith.truncf %[[PROB]] : f32 to bf16
// CHECK-NEXT: memref.store %[[PROBB]], %[[PB]]
// dP = dO v^T in f32, dV = P^T dO in bf16
// CHECK: memref.reinterpret_cast %[[DOB]]
// CHECK: %[[A:.*]] = memref.cast %{{.*}} : memref<4x3x2xbf16
// CHECK: %[[C:.*]] = memref.cast %[[DS]] : memref<4x3x3xf32>
// CHECK: func.call @trx_gemm_bf16_f32_batched(%[[A]], %{{.*}}, %[[C]],
// CHECK: %[[A:.*]] = memref.cast %[[PB]] : memref<4x3x3xbf16>
// CHECK: func.call @trx_gemm_bf16_batched(%[[A]],
// dS from the f32 P and dP, into the bf16 copy
// CHECK: scf.parallel
// CHECK: memref.load %[[DS]]
// CHECK: memref.load %[[P]]
// CHECK: arith.subf
// CHECK-NEXT: %[[G:.*]] = arith.mulf
// CHECK-NEXT: %[[GB:.*]] = arith.truncf %[[G]] : f32 to bf16
// CHECK-NEXT: memref.store %[[GB]], %[[DSB]]
// dQ (f32 result: bf16 x bf16 -> f32), dK (bf16)
// CHECK: %[[A:.*]] = memref.cast %[[DSB]] : memref<4x3x3xbf16>
// CHECK: func.call @trx_gemm_bf16_f32_batched(%[[A]],
// CHECK: %[[A:.*]] = memref.cast %[[DSB]] : memref<4x3x3xbf16>
// CHECK: func.call @trx_gemm_bf16_batched(%[[A]],
// CHECK: memref.dealloc %[[DOB]]
