// convert-triax-to-kernels{key-blocks} (with vector-dots; the CPU pipeline
// sets both): the flash kernels' loops over keys (over queries, in the
// dK/dV kernel) take 8 at a time (AttentionBlocks.cpp). A block's 8 scores
// are one vector: 8 rows' fused dot products with the row held in
// registers, summed by three levels of shuffles; the lanes past the causal
// limit (or the sequence) are -inf by a vector select; one scalar exp (the
// rescale) and one vector exp (the 8 probabilities) per block; the row's
// accumulators are vector<8xf32> values the loop carries. Without
// vector-dots, or for a head dimension that is not a multiple of 8, the
// per-key kernels stay. Correctness against numpy:
// attention-reference.test (the CPU pipeline's kernels).
// RUN: triax-opt %s --convert-triax-to-kernels="vector-dots=true key-blocks=true" --canonicalize | FileCheck %s
// RUN: triax-opt %s --convert-triax-to-kernels="key-blocks=true" | FileCheck %s --check-prefix=NODOTS
// RUN: triaxc %s --emit=mlir-after=convert-triax-to-kernels 2>&1 | FileCheck %s --check-prefix=PIPELINE

triax.model @m config = #triax.train_config<micro_batch = 2, seq = 4, global_batch = 2> {
  triax.param @w : tensor<4x16xf32> init <normal, std = 0.02>
  func.func @forward(%tokens: tensor<2x4xi32>, %targets: tensor<2x4xi32>) -> tensor<f32> {
    %w = triax.get_param @w : tensor<4x16xf32>
    %x = triax.embedding %tokens, %w : (tensor<2x4xi32>, tensor<4x16xf32>) -> tensor<2x4x16xf32>
    %o = triax.attention %x, %x, %x heads = 1 kv_heads = 1 : (tensor<2x4x16xf32>, tensor<2x4x16xf32>, tensor<2x4x16xf32>) -> tensor<2x4x16xf32>
    %l = triax.cross_entropy %o, %targets : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> tensor<f32>
    return %l : tensor<f32>
  }
}

// d = 16: rows of two vectors. The query row is loaded once, in front of
// the loop over blocks ((i + 8) / 8 of them), which carries the running
// max, the sum and the two accumulator vectors.
// CHECK-LABEL: func.func @fwd16
// CHECK:         scf.parallel
// CHECK:           %[[Q0:.*]] = vector.load %{{.*}} : memref<8x16xf32>, vector<8xf32>
// CHECK:           %[[Q1:.*]] = vector.load %{{.*}} : memref<8x16xf32>, vector<8xf32>
// CHECK:           %[[BLOCKS:.*]] = arith.divui
// CHECK:           %[[ROW:.*]]:4 = scf.for %{{.*}} = %{{.*}} to %[[BLOCKS]] step %{{.*}} iter_args(%[[M:.*]] = %{{.*}}, %[[L:.*]] = %{{.*}}, %[[A0:.*]] = %[[ZERO:.*]], %[[A1:.*]] = %[[ZERO]]) -> (f32, f32, vector<8xf32>, vector<8xf32>)
// The 8 positions: inside the causal limit or not, clamped to S - 1 = 3.
// CHECK-COUNT-8:     arith.minui %{{.*}}, %c3 : index
// Each key row's dot product: a multiply, then fused multiply-adds.
// CHECK:             %[[K0:.*]] = vector.load %{{.*}} : memref<8x16xf32>, vector<8xf32>
// CHECK:             %[[K1:.*]] = vector.load %{{.*}} : memref<8x16xf32>, vector<8xf32>
// CHECK:             %[[P0:.*]] = arith.mulf %[[Q0]], %[[K0]] : vector<8xf32>
// CHECK:             vector.fma %[[Q1]], %[[K1]], %[[P0]] : vector<8xf32>
// The 8 sums at once: 4 + 2 + 1 adds of shuffled pairs.
// CHECK-COUNT-4:     vector.shuffle %{{.*}}, %{{.*}} [0, 1, 2, 3, 8, 9, 10, 11]
// CHECK-COUNT-2:     vector.shuffle %{{.*}}, %{{.*}} [0, 1, 4, 5, 8, 9, 12, 13]
// CHECK:             vector.shuffle %{{.*}}, %{{.*}} [0, 2, 4, 6, 8, 10, 12, 14]
// CHECK:             %[[DOTS:.*]] = arith.addf %{{.*}}, %{{.*}} : vector<8xf32>
// CHECK:             %[[INSIDE:.*]] = vector.from_elements {{.*}} : vector<8xi1>
// CHECK:             %[[SCALED:.*]] = arith.mulf %[[DOTS]], %{{.*}} : vector<8xf32>
// CHECK:             %[[S:.*]] = arith.select %[[INSIDE]], %[[SCALED]], %{{.*}} : vector<8xi1>, vector<8xf32>
// CHECK:             %[[NEXT:.*]] = arith.maximumf %[[M]], %{{.*}} : f32
// CHECK:             %[[ALPHA:.*]] = math.exp %{{.*}} : f32
// CHECK:             %[[NB:.*]] = vector.broadcast %[[NEXT]] : f32 to vector<8xf32>
// CHECK:             %[[SHIFTED:.*]] = arith.subf %[[S]], %[[NB]] : vector<8xf32>
// CHECK:             %[[P:.*]] = math.exp %[[SHIFTED]] : vector<8xf32>
// CHECK:             arith.mulf %[[L]], %[[ALPHA]] : f32
// CHECK:             %[[AB:.*]] = vector.broadcast %[[ALPHA]] : f32 to vector<8xf32>
// CHECK:             arith.mulf %[[A0]], %[[AB]] : vector<8xf32>
// CHECK:             %[[P0LANE:.*]] = vector.extract %[[P]][0] : f32 from vector<8xf32>
// CHECK:             %[[PB:.*]] = vector.broadcast %[[P0LANE]] : f32 to vector<8xf32>
// CHECK:             vector.fma %[[PB]], %{{.*}}, %{{.*}} : vector<8xf32>
// CHECK:             scf.yield %[[NEXT]], %{{.*}}, %{{.*}}, %{{.*}} : f32, f32, vector<8xf32>, vector<8xf32>
// The output row a / l, stored once: its 16 elements as one vector, then
// a loop over the features (one store, indexed as GPU threads need).
// CHECK:           %[[LB:.*]] = vector.broadcast %[[ROW]]#1 : f32 to vector<8xf32>
// CHECK:           %[[O0:.*]] = arith.divf %[[ROW]]#2, %[[LB]] : vector<8xf32>
// CHECK:           %[[OUT:.*]] = vector.from_elements {{.*}} : vector<16xf32>
// CHECK:           scf.for %[[C:.*]] = %c0 to %c16 step %c1 {
// CHECK:             %[[X:.*]] = vector.extract %[[OUT]][%[[C]]] : f32 from vector<16xf32>
// CHECK:             memref.store %[[X]], %{{.*}}[%{{.*}}, %{{.*}}] : memref<8x16xf32>
// NODOTS-LABEL: func.func @fwd16
// NODOTS-NOT:     vector.
// NODOTS:         return
func.func @fwd16(%q: tensor<2x4x16xf32>) -> tensor<2x4x16xf32> {
  %o = triax.attention %q, %q, %q heads = 1 kv_heads = 1 : (tensor<2x4x16xf32>, tensor<2x4x16xf32>, tensor<2x4x16xf32>) -> tensor<2x4x16xf32>
  return %o : tensor<2x4x16xf32>
}

// The backward, grouped-query (2 query heads on 1 kv head): per query row
// the forward's loop again, then a loop carrying dQ; per key row one loop
// per query head of its group, the second starting from the first's dK
// and dV.
// CHECK-LABEL: func.func @bwd_gqa
// CHECK:         scf.parallel
// CHECK:           scf.for {{.*}} -> (f32, f32, vector<8xf32>, vector<8xf32>)
// CHECK:           memref.store %{{.*}} : memref<2x2x4xf32>
// CHECK:           memref.store %{{.*}} : memref<2x2x4xf32>
// CHECK:           scf.for {{.*}} -> (vector<8xf32>, vector<8xf32>)
// CHECK:             math.exp %{{.*}} : vector<8xf32>
// CHECK:           memref.store {{.*}} : memref<8x32xf32>
// CHECK:         scf.parallel
// CHECK:           %[[H0:.*]]:4 = scf.for {{.*}} -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>)
// The query rows' log-sum-exp and dO . O, 8 lanes read one by one.
// CHECK-COUNT-16:    memref.load %{{.*}} : memref<2x2x4xf32>
// CHECK:             math.exp %{{.*}} : vector<8xf32>
// CHECK:           scf.for {{.*}} iter_args(%{{.*}} = %[[H0]]#0, %{{.*}} = %[[H0]]#1, %{{.*}} = %[[H0]]#2, %{{.*}} = %[[H0]]#3)
// CHECK:           scf.for
// CHECK:             memref.store {{.*}} : memref<8x16xf32>
// CHECK:           scf.for
// CHECK:             memref.store {{.*}} : memref<8x16xf32>
// NODOTS-LABEL: func.func @bwd_gqa
// NODOTS-NOT:     vector.
// NODOTS:         return
func.func @bwd_gqa(%q: tensor<2x4x32xf32>, %kv: tensor<2x4x16xf32>, %do: tensor<2x4x32xf32>) -> (tensor<2x4x32xf32>, tensor<2x4x16xf32>, tensor<2x4x16xf32>) {
  %dq, %dk, %dv = triax.attention_grad %q, %kv, %kv, %do heads = 2 kv_heads = 1 : (tensor<2x4x32xf32>, tensor<2x4x16xf32>, tensor<2x4x16xf32>, tensor<2x4x32xf32>) -> (tensor<2x4x32xf32>, tensor<2x4x16xf32>, tensor<2x4x16xf32>)
  return %dq, %dk, %dv : tensor<2x4x32xf32>, tensor<2x4x16xf32>, tensor<2x4x16xf32>
}

// bf16 results: rounded element by element in the store loop.
// CHECK-LABEL: func.func @fwd16_bf16
// CHECK:         scf.for {{.*}} -> (f32, f32, vector<8xf32>, vector<8xf32>)
// CHECK:         scf.for
// CHECK:           %[[X:.*]] = vector.extract
// CHECK:           %[[B:.*]] = arith.truncf %[[X]] : f32 to bf16
// CHECK:           memref.store %[[B]], %{{.*}} : memref<8x16xbf16>
func.func @fwd16_bf16(%q: tensor<2x4x16xbf16>) -> tensor<2x4x16xbf16> {
  %o = triax.attention %q, %q, %q heads = 1 kv_heads = 1 : (tensor<2x4x16xbf16>, tensor<2x4x16xbf16>, tensor<2x4x16xbf16>) -> tensor<2x4x16xbf16>
  return %o : tensor<2x4x16xbf16>
}

// d = 4: the per-key kernels, no vector.
// CHECK-LABEL: func.func @fwd4
// CHECK-NOT:     vector.
// CHECK:         return
func.func @fwd4(%q: tensor<2x4x16xf32>) -> tensor<2x4x16xf32> {
  %o = triax.attention %q, %q, %q heads = 4 kv_heads = 4 : (tensor<2x4x16xf32>, tensor<2x4x16xf32>, tensor<2x4x16xf32>) -> tensor<2x4x16xf32>
  return %o : tensor<2x4x16xf32>
}

// The CPU pipeline's kernels have it.
// PIPELINE: vector.fma
// PIPELINE: math.exp %{{.*}} : vector<8xf32>
