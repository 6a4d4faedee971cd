// The embedding backward, dtable[ids[t], h] += dy[t, h] (EmbeddingKernels.cpp).
// Default (the CPU): parallel over the 4 features, the 6 tokens in order in
// each iteration. embedding-grad-threads=16 (the GPU's option, here small):
// ceil(16 / 4) = 4 slices of ceil(8 / 4) = 2 vocabulary rows. First the
// tokens are bucketed: parallel over (slice, chunk) pairs (one chunk of
// the 6 tokens here), each lists, in order, the chunk's tokens whose row r
// satisfies (r - 2 s) <u 2, at positions (p - 6 q) <u 6 of its own part of
// the list, and counts them. Then parallel over (slice, feature), each
// iteration adds its slice's listed tokens, chunk by chunk, in order: the
// same sums in the same order, over T / slices tokens instead of T. The
// loop over a chunk's list has data bounds: it carries the report's
// expected trip count (6 tokens / 4 slices, at least 1).
// embedding-grad-threads=1000: at most one slice per row (8 slices of 1).
// RUN: triax-opt %s --convert-triax-to-kernels | FileCheck %s
// RUN: triax-opt %s --convert-triax-to-kernels=embedding-grad-threads=16 | FileCheck %s --check-prefix=SLICES
// RUN: triax-opt %s --convert-triax-to-kernels=embedding-grad-threads=1000 | FileCheck %s --check-prefix=ROWS
// RUN: triax-opt %s --convert-triax-to-kernels=embedding-grad-threads=16 | FileCheck %s --check-prefix=VOCAB
// A negative count is refused (it was taken as 0).
// RUN: not triax-opt %s --convert-triax-to-kernels=embedding-grad-threads=-3 2>&1 | FileCheck %s --check-prefix=NEG
// NEG: error: convert-triax-to-kernels: embedding-grad-threads=-3 is not a count (expected N >= 1 iterations, or 0: one per feature)

// CHECK-LABEL: func.func @grad(
// CHECK:         scf.parallel (%[[H:.*]]) = (%c0{{.*}}) to (%c4{{.*}}) step
// CHECK:           scf.for %[[T:.*]] = %c0{{.*}} to %c6{{.*}} step
// CHECK-NOT:         scf.if
// CHECK:             memref.store %{{.*}}, %{{.*}}[%{{.*}}, %[[H]]] : memref<8x4xf32>

// SLICES-LABEL: func.func @grad(
// SLICES:         %[[LISTS:.*]] = memref.alloc() : memref<24xi32>
// SLICES:         %[[COUNTS:.*]] = memref.alloc() : memref<4xi32>
// SLICES:         scf.parallel (%[[Q:.*]]) = (%c0{{.*}}) to (%c4{{.*}}) step
// SLICES:           %[[BASE:.*]] = arith.muli %[[Q]], %c6{{.*}} : index
// SLICES:           %[[END:.*]] = scf.for %[[T:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[AT:.*]] = %[[BASE]]) -> (index) {
// SLICES:             %[[MINE:.*]] = arith.cmpi ult, %{{.*}}, %c2{{.*}} : index
// SLICES:             %[[OFF:.*]] = arith.subi %[[AT]], %[[BASE]] : index
// SLICES:             %[[FITS:.*]] = arith.cmpi ult, %[[OFF]], %c6{{.*}} : index
// SLICES:             %[[BOTH:.*]] = arith.andi %[[MINE]], %[[FITS]] : i1
// SLICES:             scf.if %[[BOTH]] {
// SLICES:               memref.store %{{.*}}, %[[LISTS]][%[[AT]]] : memref<24xi32>
// SLICES:           %[[N:.*]] = arith.subi %[[END]], %[[BASE]] : index
// SLICES:           memref.store %{{.*}}, %[[COUNTS]][%[[Q]]] : memref<4xi32>
// SLICES:         scf.parallel (%[[S:.*]], %[[H:.*]]) = (%c0{{.*}}, %c0{{.*}}) to (%c4{{.*}}, %c4{{.*}}) step
// SLICES:           %[[FIRST:.*]] = arith.muli %[[S]], %c2{{.*}} : index
// SLICES:           scf.for %[[C:.*]] = %c0{{.*}} to %c1{{.*}} step
// SLICES:             %[[COUNT:.*]] = memref.load %[[COUNTS]][%{{.*}}] : memref<4xi32>
// SLICES:             %[[UB:.*]] = arith.index_cast %[[COUNT]] : i32 to index
// SLICES:             scf.for %[[J:.*]] = %c0{{.*}} to %[[UB]] step
// SLICES:               %[[LISTED:.*]] = memref.load %[[LISTS]][%{{.*}}] : memref<24xi32>
// SLICES:               %[[T2:.*]] = arith.index_cast %[[LISTED]] : i32 to index
// SLICES:               %[[ROW:.*]] = arith.index_cast %{{.*}} : i32 to index
// SLICES:               %[[REL:.*]] = arith.subi %[[ROW]], %[[FIRST]] : index
// SLICES:               %[[IN:.*]] = arith.cmpi ult, %[[REL]], %c2{{.*}} : index
// SLICES:               scf.if %[[IN]] {
// SLICES:                 memref.load %{{.*}}[%[[T2]], %[[H]]] : memref<6x4xf32>
// SLICES:                 memref.store %{{.*}}, %{{.*}}[%[[ROW]], %[[H]]] : memref<8x4xf32>
// SLICES:             } {triax_expected_trips = 1 : i64}

// ROWS-LABEL: func.func @grad(
// ROWS:         scf.parallel (%{{.*}}, %{{.*}}) = (%c0{{.*}}, %c0{{.*}}) to (%c8{{.*}}, %c4{{.*}}) step
// ROWS:             arith.cmpi ult, %{{.*}}, %c1{{.*}} : index

// A vocab-parallel table (this rank's 8 rows of 16): the slice test and
// the "this rank's row" test are one condition.
// VOCAB-LABEL: func.func @grad_vocab_parallel(
// VOCAB:         scf.parallel (%{{.*}}, %{{.*}}) = (%c0{{.*}}, %c0{{.*}}) to (%c4{{.*}}, %c4{{.*}}) step
// VOCAB:             %[[INSIDE:.*]] = arith.cmpi ult, %{{.*}}, %c8{{.*}} : index
// VOCAB:             %[[MINE:.*]] = arith.cmpi ult, %{{.*}}, %c2{{.*}} : index
// VOCAB:             %[[BOTH:.*]] = arith.andi %[[MINE]], %[[INSIDE]] : i1
// VOCAB:             scf.if %[[BOTH]] {

dist.mesh @mesh <["dp"=2, "tp"=2]>
func.func @grad(%ids: tensor<2x3xi32>, %dy: tensor<2x3x4xf32>) -> tensor<8x4xf32> {
  %g = triax.embedding_grad %ids, %dy : (tensor<2x3xi32>, tensor<2x3x4xf32>) -> tensor<8x4xf32>
  return %g : tensor<8x4xf32>
}
func.func @grad_vocab_parallel(%ids: tensor<2x3xi32>, %dy: tensor<2x3x4xf32>) -> tensor<8x4xf32> {
  %g = triax.embedding_grad %ids, %dy vocab_parallel over @mesh ["tp"] : (tensor<2x3xi32>, tensor<2x3x4xf32>) -> tensor<8x4xf32>
  return %g : tensor<8x4xf32>
}
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
