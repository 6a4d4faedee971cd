// convert-triax-to-kernels{row-lanes} (the CPU pipeline sets it): the
// cross-entropy's row statistics in 8 vector lanes (LossKernels.cpp,
// rowMaxSumExp). Each lane is an online softmax state (max, f64 sum) over
// every eighth logit of the first 8 floor(V / 8), one vector load and one
// vector exp per 8 logits; after the loop the lanes' max (a tree of
// maximumf) and the sum of s_u exp(m_u - max) (a tree of f64 adds); then
// the last V mod 8 logits one by one. A row of fewer than 16 logits stays
// scalar. Without the option: the scalar loop (loss.mlir).
// RUN: triax-opt %s --convert-triax-to-kernels=row-lanes --canonicalize | FileCheck %s --implicit-check-not=triax.
// RUN: triax-opt %s --convert-triax-to-kernels --canonicalize | FileCheck %s --check-prefix=SCALAR

// 6 rows of 28 logits: 3 vectors of 8, then 4 one by one.
triax.model @loss config = #triax.train_config<micro_batch = 2, seq = 3, global_batch = 2> {
  triax.param @w : tensor<28x8xf32> init <normal, std = 0.02>
  func.func @forward(%tokens: tensor<2x3xi64>, %targets: tensor<2x3xi64>) -> tensor<f32> {
    %w = triax.get_param @w : tensor<28x8xf32>
    %x = triax.embedding %tokens, %w : (tensor<2x3xi64>, tensor<28x8xf32>) -> tensor<2x3x8xf32>
    %logits = triax.linear %x, %w {transpose_weight} : (tensor<2x3x8xf32>, tensor<28x8xf32>) -> tensor<2x3x28xf32>
    %loss = triax.cross_entropy %logits, %targets : (tensor<2x3x28xf32>, tensor<2x3xi64>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// CHECK-LABEL: func.func @triax_forward(
// CHECK:         scf.parallel (%[[R:[a-z0-9]+]]) =
// CHECK:           %[[FIRST:.*]] = vector.load %[[L:.*]][%[[R]], %c0] : memref<6x28xf32>, vector<8xf32>
// CHECK:           %[[S:.*]]:2 = scf.for %[[J:.*]] = %c1 to %c3 step %c1 iter_args(%[[M:.*]] = %[[FIRST]], %[[SUM:.*]] = %{{.*}}) -> (vector<8xf32>, vector<8xf64>) {
// CHECK:             %[[COL:.*]] = arith.muli %[[J]], %c8 : index
// CHECK:             %[[X:.*]] = vector.load %[[L]][%[[R]], %[[COL]]] : memref<6x28xf32>, vector<8xf32>
// CHECK:             %[[GROWS:.*]] = arith.cmpf olt, %[[M]], %[[X]] : vector<8xf32>
// CHECK:             %[[E:.*]] = math.exp %{{.*}} : vector<8xf32>
// CHECK:             arith.extf %[[E]] : vector<8xf32> to vector<8xf64>
// CHECK:             arith.select %[[GROWS]], %{{.*}}, %{{.*}} : vector<8xi1>, vector<8xf64>
// CHECK:             scf.yield %{{.*}}, %{{.*}} : vector<8xf32>, vector<8xf64>
// The lanes' max: lanes l and l + 4, then l and l + 2, then 0 and 1.
// CHECK:           vector.shuffle %[[S]]#0, %[[S]]#0 [0, 1, 2, 3]
// CHECK:           vector.shuffle %[[S]]#0, %[[S]]#0 [4, 5, 6, 7]
// CHECK:           arith.maximumf %{{.*}}, %{{.*}} : vector<4xf32>
// CHECK:           %[[M2:.*]] = arith.maximumf %{{.*}}, %{{.*}} : vector<2xf32>
// CHECK:           %[[M0:.*]] = vector.extract %[[M2]][0] : f32 from vector<2xf32>
// CHECK:           %[[M1:.*]] = vector.extract %[[M2]][1] : f32 from vector<2xf32>
// CHECK:           %[[MAX:.*]] = arith.maximumf %[[M0]], %[[M1]] : f32
// Each lane's sum rescaled to it, then summed in the same tree (f64).
// CHECK:           %[[MB:.*]] = vector.broadcast %[[MAX]] : f32 to vector<8xf32>
// CHECK:           %[[SHIFT:.*]] = arith.subf %[[S]]#0, %[[MB]] : vector<8xf32>
// CHECK:           %[[SCALE:.*]] = math.exp %[[SHIFT]] : vector<8xf32>
// CHECK:           %[[SCALE64:.*]] = arith.extf %[[SCALE]] : vector<8xf32> to vector<8xf64>
// CHECK:           arith.mulf %[[S]]#1, %[[SCALE64]] : vector<8xf64>
// CHECK:           arith.addf %{{.*}}, %{{.*}} : vector<4xf64>
// CHECK:           %[[S2:.*]] = arith.addf %{{.*}}, %{{.*}} : vector<2xf64>
// CHECK:           %[[S0:.*]] = vector.extract %[[S2]][0] : f64 from vector<2xf64>
// CHECK:           %[[S1:.*]] = vector.extract %[[S2]][1] : f64 from vector<2xf64>
// CHECK:           %[[TOTAL:.*]] = arith.addf %[[S0]], %[[S1]] : f64
// The last 4 logits, one at a time, from the combined state.
// CHECK:           scf.for %{{.*}} = %c24 to %c28 step %c1 iter_args(%{{.*}} = %[[MAX]], %{{.*}} = %[[TOTAL]]) -> (f32, f64) {
// CHECK:             math.exp %{{.*}} : f32
// CHECK:           math.log

// SCALAR-LABEL: func.func @triax_forward(
// SCALAR-NOT:     vector.
// SCALAR:         scf.parallel (%{{[a-z0-9]+}}) =
// SCALAR:         scf.for %{{.*}} = %c1 to %c28 step %c1 iter_args(%{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}) -> (f32, f64) {
// SCALAR-NOT:     vector.
// SCALAR:         return
