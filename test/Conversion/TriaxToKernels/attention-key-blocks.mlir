// convert-triax-to-kernels{key-blocks} (with vector-dots; the CPU pipeline
// sets both): the flash kernels' loops over keys (over queries, in the
// dK/dV kernel) take 8 at a time (AttentionBlocks.cpp). A row of d features
// is d/16 vector<16xf32> where d is a multiple of 16, else d/8
// vector<8xf32>. A block's 8 scores are one vector: 8 rows' fused dot
// products with the row held in registers (16 lanes folded to 8), summed
// by three levels of shuffles; the lanes outside the block (before its
// first position, past the causal limit) are -inf by a vector compare and
// a select; one scalar exp (the rescale) and one vector exp (the 8
// probabilities) per block; the row's accumulators are vectors the loop
// carries, stored with vector.store. Without vector-dots, or for a head
// dimension that is not a multiple of 8, the per-key kernels stay.
// Correctness against numpy: attention-reference.test (the CPU pipeline's
// kernels).
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

// d = 16, S = 12: rows of one vector<16xf32>. The query row is loaded once,
// in front of the loop over blocks ((i + 8) / 8 of them), which carries the
// running max, the sum and the accumulator.
// CHECK-LABEL: func.func @fwd16
// CHECK:         scf.parallel
// CHECK:           %[[Q:.*]] = vector.load %{{.*}} : memref<24x16xf32>, vector<16xf32>
// CHECK:           %[[BLOCKS:.*]] = arith.divui
// CHECK:           %[[ROW:.*]]:3 = scf.for %{{.*}} = %{{.*}} to %[[BLOCKS]] step %{{.*}} iter_args(%[[M:.*]] = %{{.*}}, %[[L:.*]] = %{{.*}}, %[[A:.*]] = %{{.*}}) -> (f32, f32, vector<16xf32>)
// Block j reads rows start..start + 7, start = min(8 j, S - 8 = 4); lane u
// is inside when 8 j <= start + u <= i.
// CHECK:             %[[FIRST:.*]] = arith.muli %{{.*}}, %c8 : index
// CHECK:             %[[START:.*]] = arith.minui %[[FIRST]], %c4 : index
// CHECK:             %[[SB:.*]] = vector.broadcast %[[START]] : index to vector<8xindex>
// CHECK:             %[[LANES:.*]] = arith.addi %[[SB]], %{{.*}} : vector<8xindex>
// CHECK:             %[[FB:.*]] = vector.broadcast %[[FIRST]] : index to vector<8xindex>
// CHECK:             %[[AFTER:.*]] = arith.cmpi uge, %[[LANES]], %[[FB]] : vector<8xindex>
// CHECK:             %[[LAST:.*]] = arith.cmpi ule, %[[LANES]], %{{.*}} : vector<8xindex>
// CHECK:             %[[INSIDE:.*]] = arith.andi %[[AFTER]], %[[LAST]] : vector<8xi1>
// Each key row's dot product: 16 products, folded to 8 lanes.
// CHECK:             %[[K0:.*]] = vector.load %{{.*}} : memref<24x16xf32>, vector<16xf32>
// CHECK:             %[[P0:.*]] = arith.mulf %[[Q]], %[[K0]] : vector<16xf32>
// CHECK-DAG:         %[[HI:.*]] = vector.shuffle %[[P0]], %[[P0]] [8, 9, 10, 11, 12, 13, 14, 15]
// CHECK-DAG:         %[[LO:.*]] = vector.shuffle %[[P0]], %[[P0]] [0, 1, 2, 3, 4, 5, 6, 7]
// CHECK:             arith.addf %[[LO]], %[[HI]] : vector<8xf32>
// The 8 sums at once: 4 + 2 + 1 adds of shuffled pairs.
// CHECK-COUNT-4:     vector.shuffle %{{.*}}, %{{.*}} [0, 1, 2, 3, 8, 9, 10, 11]
// CHECK-COUNT-2:     vector.shuffle %{{.*}}, %{{.*}} [0, 1, 4, 5, 8, 9, 12, 13]
// CHECK:             vector.shuffle %{{.*}}, %{{.*}} [0, 2, 4, 6, 8, 10, 12, 14]
// CHECK:             %[[DOTS:.*]] = arith.addf %{{.*}}, %{{.*}} : vector<8xf32>
// CHECK:             %[[SCALED:.*]] = arith.mulf %[[DOTS]], %{{.*}} : vector<8xf32>
// CHECK:             %[[S:.*]] = arith.select %[[INSIDE]], %[[SCALED]], %{{.*}} : vector<8xi1>, vector<8xf32>
// CHECK:             %[[NEXT:.*]] = arith.maximumf %[[M]], %{{.*}} : f32
// CHECK:             %[[ALPHA:.*]] = math.exp %{{.*}} : f32
// CHECK:             %[[NB:.*]] = vector.broadcast %[[NEXT]] : f32 to vector<8xf32>
// CHECK:             %[[SHIFTED:.*]] = arith.subf %[[S]], %[[NB]] : vector<8xf32>
// CHECK:             %[[P:.*]] = math.exp %[[SHIFTED]] : vector<8xf32>
// CHECK:             arith.mulf %[[L]], %[[ALPHA]] : f32
// CHECK:             %[[AB:.*]] = vector.broadcast %[[ALPHA]] : f32 to vector<16xf32>
// CHECK:             arith.mulf %[[A]], %[[AB]] : vector<16xf32>
// CHECK:             %[[P0LANE:.*]] = vector.extract %[[P]][0] : f32 from vector<8xf32>
// CHECK:             %[[PB:.*]] = vector.broadcast %[[P0LANE]] : f32 to vector<16xf32>
// CHECK:             vector.fma %[[PB]], %{{.*}}, %{{.*}} : vector<16xf32>
// CHECK:             scf.yield %[[NEXT]], %{{.*}}, %{{.*}} : f32, f32, vector<16xf32>
// The output row a / l, one vector.store.
// CHECK:           %[[LB:.*]] = vector.broadcast %[[ROW]]#1 : f32 to vector<16xf32>
// CHECK:           %[[O:.*]] = arith.divf %[[ROW]]#2, %[[LB]] : vector<16xf32>
// CHECK:           vector.store %[[O]], %{{.*}}[%{{.*}}, %c0] : memref<24x16xf32>, vector<16xf32>
// NODOTS-LABEL: func.func @fwd16
// NODOTS-NOT:     vector.
// NODOTS:         return
func.func @fwd16(%q: tensor<2x12x16xf32>) -> tensor<2x12x16xf32> {
  %o = triax.attention %q, %q, %q heads = 1 kv_heads = 1 : (tensor<2x12x16xf32>, tensor<2x12x16xf32>, tensor<2x12x16xf32>) -> tensor<2x12x16xf32>
  return %o : tensor<2x12x16xf32>
}

// d = 8, S = 4 < 8: rows of one vector<8xf32> (no fold); every block starts
// at 0, its rows clamped to S - 1 = 3 (the last four lanes read row 3, and
// are outside the block).
// CHECK-LABEL: func.func @fwd8
// CHECK:         %[[Q:.*]] = vector.load %{{.*}} : memref<8x16xf32>, vector<8xf32>
// CHECK:         scf.for {{.*}} -> (f32, f32, vector<8xf32>)
// CHECK:           %[[K0:.*]] = vector.load %{{.*}} : memref<8x16xf32>, vector<8xf32>
// CHECK-NEXT:      arith.mulf %[[Q]], %[[K0]] : vector<8xf32>
// CHECK-COUNT-5:   arith.addi %{{.*}}, %c3 : index
// CHECK:           arith.select {{.*}} : vector<8xi1>, vector<8xf32>
// CHECK:         vector.store %{{.*}} : memref<8x16xf32>, vector<8xf32>
func.func @fwd8(%q: tensor<2x4x16xf32>) -> tensor<2x4x16xf32> {
  %o = triax.attention %q, %q, %q heads = 2 kv_heads = 2 : (tensor<2x4x16xf32>, tensor<2x4x16xf32>, tensor<2x4x16xf32>) -> tensor<2x4x16xf32>
  return %o : tensor<2x4x16xf32>
}

// The backward, grouped-query (2 query heads on 1 kv head), S = 8: per
// query row the forward's loop again, then a loop carrying dQ; per key row
// one loop per query head of its group, the second starting from the
// first's dK and dV. The block's 8 log-sum-exps and D values are one
// vector load each.
// CHECK-LABEL: func.func @bwd_gqa
// CHECK:         scf.parallel
// CHECK:           scf.for {{.*}} -> (f32, f32, vector<16xf32>)
// CHECK:           memref.store %{{.*}} : memref<2x2x8xf32>
// CHECK:           memref.store %{{.*}} : memref<2x2x8xf32>
// CHECK:           scf.for {{.*}} -> (vector<16xf32>)
// CHECK:             math.exp %{{.*}} : vector<8xf32>
// CHECK:           vector.store {{.*}} : memref<16x32xf32>, vector<16xf32>
// CHECK:         scf.parallel
// CHECK:           %[[H0:.*]]:2 = scf.for {{.*}} -> (vector<16xf32>, vector<16xf32>)
// CHECK:             vector.load %{{.*}} : memref<2x2x8xf32>, vector<8xf32>
// CHECK:             vector.load %{{.*}} : memref<2x2x8xf32>, vector<8xf32>
// CHECK:             math.exp %{{.*}} : vector<8xf32>
// CHECK:           scf.for {{.*}} iter_args(%{{.*}} = %[[H0]]#0, %{{.*}} = %[[H0]]#1)
// CHECK:           vector.store {{.*}} : memref<16x16xf32>, vector<16xf32>
// CHECK:           vector.store {{.*}} : memref<16x16xf32>, vector<16xf32>
// NODOTS-LABEL: func.func @bwd_gqa
// NODOTS-NOT:     vector.
// NODOTS:         return
func.func @bwd_gqa(%q: tensor<2x8x32xf32>, %kv: tensor<2x8x16xf32>, %do: tensor<2x8x32xf32>) -> (tensor<2x8x32xf32>, tensor<2x8x16xf32>, tensor<2x8x16xf32>) {
  %dq, %dk, %dv = triax.attention_grad %q, %kv, %kv, %do heads = 2 kv_heads = 1 : (tensor<2x8x32xf32>, tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8x32xf32>) -> (tensor<2x8x32xf32>, tensor<2x8x16xf32>, tensor<2x8x16xf32>)
  return %dq, %dk, %dv : tensor<2x8x32xf32>, tensor<2x8x16xf32>, tensor<2x8x16xf32>
}

// bf16 results: the row rounded to nearest even as a vector, then stored.
// CHECK-LABEL: func.func @fwd16_bf16
// CHECK:         scf.for {{.*}} -> (f32, f32, vector<16xf32>)
// CHECK:         %[[B:.*]] = arith.truncf %{{.*}} : vector<16xf32> to vector<16xbf16>
// CHECK:         vector.store %[[B]], %{{.*}} : memref<8x16xbf16>, vector<16xbf16>
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
