// attention=flash (the default): attention as one fused loop nest forward
// and two backward, with an online softmax over the keys; no [heads, S, S]
// buffer and no GEMM call. Numerics against numpy: attention-reference.test.
// RUN: triax-opt %s --convert-triax-to-kernels | FileCheck %s --implicit-check-not=triax.
// RUN: triax-opt %s --convert-triax-to-kernels=attention=flash | FileCheck %s --implicit-check-not=triax.
// An unknown implementation is an error.
// RUN: not triax-opt %s --convert-triax-to-kernels=attention=tiled 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: error: convert-triax-to-kernels: unknown attention 'tiled'; expected flash, flash-mma, batched-gemm or cudnn

// B = 2, S = 3, 4 query heads of d = 2 sharing 2 kv heads (groups of 2).
triax.model @m config = #triax.train_config<micro_batch = 2, seq = 3, global_batch = 2> {
  triax.param @w : tensor<4x2xf32> init <normal, std = 0.02>
  func.func @forward(%tokens: tensor<2x3xi32>, %targets: tensor<2x3xi32>) -> tensor<f32> {
    %w = triax.get_param @w : tensor<4x2xf32>
    %x = triax.embedding %tokens, %w : (tensor<2x3xi32>, tensor<4x2xf32>) -> tensor<2x3x2xf32>
    %l = triax.cross_entropy %x, %targets : (tensor<2x3x2xf32>, tensor<2x3xi32>) -> tensor<f32>
    return %l : tensor<f32>
  }
}
func.func @fwd(%q: tensor<2x3x8xf32>, %k: tensor<2x3x4xf32>, %v: tensor<2x3x4xf32>) -> tensor<2x3x8xf32> {
  %o = triax.attention %q, %k, %v heads = 4 kv_heads = 2 : (tensor<2x3x8xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x8xf32>
  return %o : tensor<2x3x8xf32>
}
func.func @bwd(%q: tensor<2x3x8xf32>, %k: tensor<2x3x4xf32>, %v: tensor<2x3x4xf32>, %do: tensor<2x3x8xf32>) -> (tensor<2x3x8xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>) {
  %dq, %dk, %dv = triax.attention_grad %q, %k, %v, %do heads = 4 kv_heads = 2 : (tensor<2x3x8xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x8xf32>) -> (tensor<2x3x8xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>)
  return %dq, %dk, %dv : tensor<2x3x8xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>
}
func.func @fwd_lse(%q: tensor<2x3x8xf32>, %k: tensor<2x3x4xf32>, %v: tensor<2x3x4xf32>) -> (tensor<2x3x8xf32>, tensor<2x4x3xf32>) {
  %o, %lse = triax.attention %q, %k, %v heads = 4 kv_heads = 2 : (tensor<2x3x8xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> (tensor<2x3x8xf32>, tensor<2x4x3xf32>)
  return %o, %lse : tensor<2x3x8xf32>, tensor<2x4x3xf32>
}
func.func @bwd_saved(%q: tensor<2x3x8xf32>, %k: tensor<2x3x4xf32>, %v: tensor<2x3x4xf32>, %do: tensor<2x3x8xf32>, %o: tensor<2x3x8xf32>, %lse: tensor<2x4x3xf32>) -> (tensor<2x3x8xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>) {
  %dq, %dk, %dv = triax.attention_grad %q, %k, %v, %do saved(%o, %lse) heads = 4 kv_heads = 2 : (tensor<2x3x8xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x8xf32>, tensor<2x3x8xf32>, tensor<2x4x3xf32>) -> (tensor<2x3x8xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>)
  return %dq, %dk, %dv : tensor<2x3x8xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>
}

// Forward: an f32 accumulator row per (b, head, query) and one nest over
// them. Key 0 starts it (a = v_0, m = s_0, l = 1); keys 1..i update it with
// one exp each (exp(min - max): alpha or p, the other exactly 1), the
// accumulator rescaled only when the max grows; then out = a / l. Query
// head h reads kv head h / 2.
// CHECK-LABEL: func.func @fwd(
// CHECK: %[[ACC:.*]] = memref.alloc() : memref<2x4x3x2xf32>
// CHECK-NOT: memref.alloc
// CHECK: scf.parallel (%[[B:.*]], %[[H:.*]], %[[I:.*]]) = (%{{.*}}, %{{.*}}, %{{.*}}) to (%c2{{.*}}, %c4{{.*}}, %c3{{.*}})
// CHECK: %[[G:.*]] = arith.divui %[[H]], %c2
// CHECK: scf.for {{.*}} iter_args
// CHECK: arith.mulf %{{.*}}, %{{.*}} : f32
// CHECK: arith.addf %{{.*}}, %{{.*}} : f32
// CHECK: memref.store %{{.*}}, %[[ACC]][%[[B]], %[[H]], %[[I]], %{{.*}}]
// CHECK: %[[END:.*]] = arith.addi %[[I]], %c1
// CHECK: %[[ML:.*]]:2 = scf.for %{{.*}} = %c1{{.*}} to %[[END]] {{.*}} iter_args
// CHECK: arith.cmpf olt
// CHECK: math.exp
// CHECK-NOT: math.exp
// CHECK: scf.if
// CHECK: arith.mulf
// CHECK: memref.store %{{.*}}, %[[ACC]]
// CHECK: scf.yield
// CHECK: arith.divf %{{.*}}, %[[ML]]#1
// CHECK: memref.store
// CHECK: scf.reduce
// CHECK-NOT: scf.parallel
// CHECK-NOT: call @trx_
// CHECK: return

// Backward: accumulators for dQ [B, heads, S, d], the log-sum-exp and D
// [B, heads, S]; a nest over query rows (L, D, dQ), then accumulators for
// dK and dV [B, kv heads, S, d] and a nest over key rows, where kv head g
// sums over its query heads 2g, 2g + 1 in order, the queries i >= t.
// CHECK-LABEL: func.func @bwd(
// CHECK: %[[AQ:.*]] = memref.alloc() : memref<2x4x3x2xf32>
// CHECK: %[[LSE:.*]] = memref.alloc() : memref<2x4x3xf32>
// CHECK: %[[D:.*]] = memref.alloc() : memref<2x4x3xf32>
// CHECK: scf.parallel (%{{.*}}, %{{.*}}, %{{.*}}) = {{.*}} to (%c2{{.*}}, %c4{{.*}}, %c3{{.*}})
// CHECK: math.log
// CHECK: memref.store %{{.*}}, %[[LSE]]
// CHECK: memref.store %{{.*}}, %[[D]]
// CHECK: scf.reduce
// CHECK: %[[AK:.*]] = memref.alloc() : memref<2x2x3x2xf32>
// CHECK: %[[AV:.*]] = memref.alloc() : memref<2x2x3x2xf32>
// CHECK: scf.parallel (%{{.*}}, %[[KV:.*]], %[[T:.*]]) = {{.*}} to (%c2{{.*}}, %c2{{.*}}, %c3{{.*}})
// CHECK: scf.for %{{.*}} = %[[T]] to %c3
// CHECK: memref.load %[[LSE]]
// CHECK: scf.for %{{.*}} = %[[T]] to %c3
// CHECK: memref.load %[[LSE]]
// CHECK: scf.reduce
// CHECK-NOT: scf.parallel
// CHECK-NOT: memref.alloc() : memref<{{.*}}3x3xf32>
// CHECK-NOT: call @trx_
// CHECK: return

// With the rows' log-sum-exp as a result (what triax-autodiff makes of a
// differentiated attention): the same nest, and after each row's loop
// L = m + log l stored at (b, head, query).
// CHECK-LABEL: func.func @fwd_lse(
// CHECK: %[[OUT:.*]] = memref.alloc() : memref<2x3x8xf32>
// CHECK: %[[L:.*]] = memref.alloc() : memref<2x4x3xf32>
// CHECK: scf.parallel (%[[B:.*]], %[[H:.*]], %[[I:.*]]) = {{.*}} to (%c2{{.*}}, %c4{{.*}}, %c3{{.*}})
// CHECK: %[[ML:.*]]:2 = scf.for
// CHECK: memref.store %{{.*}}, %[[OUT]]
// CHECK: %[[LOG:.*]] = math.log %[[ML]]#1 : f32
// CHECK: %[[LSE:.*]] = arith.addf %[[ML]]#0, %[[LOG]] : f32
// CHECK: memref.store %[[LSE]], %[[L]][%[[B]], %[[H]], %[[I]]]
// CHECK: return %[[OUT]], %[[L]] :

// With saved(out, lse): the query-row nest reads L and the output row
// instead of running the forward's online softmax again (no rescaling, no
// log, one exp per key: P); the key-row nest reads the same L.
// CHECK-LABEL: func.func @bwd_saved(
// CHECK-SAME: %[[SOUT:[a-z0-9]+]]: memref<2x3x8xf32>, %[[SL:[a-z0-9]+]]: memref<2x4x3xf32>)
// CHECK: %[[SROWS:.*]] = memref.collapse_shape %[[SOUT]]
// CHECK-NOT: memref.alloc() : memref<2x4x3xf32>
// CHECK: %[[D:.*]] = memref.alloc() : memref<2x4x3xf32>
// CHECK: scf.parallel (%[[B:.*]], %[[H:.*]], %[[I:.*]]) = {{.*}} to (%c2{{.*}}, %c4{{.*}}, %c3{{.*}})
// CHECK: memref.load %[[SL]][%[[B]], %[[H]], %[[I]]]
// CHECK-NOT: scf.if
// CHECK-NOT: math.log
// CHECK: memref.load %[[SROWS]]
// CHECK: memref.store %{{.*}}, %[[D]][%[[B]], %[[H]], %[[I]]]
// CHECK: math.exp
// CHECK-NOT: math.exp
// CHECK: scf.reduce
// CHECK: scf.parallel
// CHECK: memref.load %[[SL]]
// CHECK-NOT: math.log
// CHECK: return
