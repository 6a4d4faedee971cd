// The flash attention nests on the GPU (triax-map-loops-to-gpu): each
// iteration writes only its own accumulator row and its own row of the
// result, which the mapping proves (WriteDisjointness.cpp), so each nest is
// one launch of one thread per (batch, head, query) or (batch, kv head,
// key), with no remark of a dimension kept sequential and no shared memory
// or atomics. No CUDA needed.
// RUN: triax-opt %s -verify-diagnostics --pass-pipeline='builtin.module(convert-triax-to-kernels, func.func(triax-map-loops-to-gpu{rows=block}))' \
// RUN:   | FileCheck %s

// B = 2, S = 3, 4 query heads of d = 2 sharing 2 kv heads.
triax.model @attn config = #triax.train_config<micro_batch = 2, seq = 3, global_batch = 2> {
  triax.param @w : tensor<4x2xf32> init <normal, std = 0.02>
  func.func @forward(%tokens: tensor<2x3xi32>, %targets: tensor<2x3xi32>) -> tensor<f32> {
    %w = triax.get_param @w : tensor<4x2xf32>
    %x = triax.embedding %tokens, %w : (tensor<2x3xi32>, tensor<4x2xf32>) -> tensor<2x3x2xf32>
    %l = triax.cross_entropy %x, %targets : (tensor<2x3x2xf32>, tensor<2x3xi32>) -> tensor<f32>
    return %l : tensor<f32>
  }
}
func.func @fwd(%q: tensor<2x3x8xbf16>, %k: tensor<2x3x4xbf16>, %v: tensor<2x3x4xbf16>) -> tensor<2x3x8xbf16> {
  %o = triax.attention %q, %k, %v heads = 4 kv_heads = 2 : (tensor<2x3x8xbf16>, tensor<2x3x4xbf16>, tensor<2x3x4xbf16>) -> tensor<2x3x8xbf16>
  return %o : tensor<2x3x8xbf16>
}
func.func @bwd(%q: tensor<2x3x8xbf16>, %k: tensor<2x3x4xbf16>, %v: tensor<2x3x4xbf16>, %do: tensor<2x3x8xf32>) -> (tensor<2x3x8xbf16>, tensor<2x3x4xbf16>, tensor<2x3x4xbf16>) {
  %dq, %dk, %dv = triax.attention_grad %q, %k, %v, %do heads = 4 kv_heads = 2 : (tensor<2x3x8xbf16>, tensor<2x3x4xbf16>, tensor<2x3x4xbf16>, tensor<2x3x8xf32>) -> (tensor<2x3x8xbf16>, tensor<2x3x4xbf16>, tensor<2x3x4xbf16>)
  return %dq, %dk, %dv : tensor<2x3x8xbf16>, tensor<2x3x4xbf16>, tensor<2x3x4xbf16>
}

// 2 x 4 x 3 = 24 query rows: one block of 256 threads, a guard for the 232
// idle ones; bf16 operands are loaded and extended to f32, the result
// rounded to bf16 once.
// CHECK-LABEL: func.func @fwd(
// CHECK: gpu.launch blocks(%{{.*}}, %{{.*}}, %{{.*}}) in (%{{.*}} = %c1{{.*}}, %{{.*}} = %c1{{.*}}, %{{.*}} = %c1{{.*}}) threads(%{{.*}}, %{{.*}}, %{{.*}}) in (%{{.*}} = %c256{{.*}}, %{{.*}} = %c1{{.*}}, %{{.*}} = %c1{{.*}})
// CHECK: arith.extf {{.*}} : bf16 to f32
// CHECK: arith.truncf {{.*}} : f32 to bf16
// CHECK-NOT: gpu.launch
// CHECK-NOT: gpu.barrier
// CHECK-NOT: memref.atomic_rmw
// CHECK: return

// Backward: the query-row nest and the key-row nest (2 x 2 x 3 = 12), one
// launch each.
// CHECK-LABEL: func.func @bwd(
// CHECK: gpu.launch
// CHECK: math.log
// CHECK: gpu.launch
// CHECK-NOT: gpu.launch
// CHECK-NOT: memref.atomic_rmw
// CHECK: return
