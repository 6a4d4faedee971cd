// cross_entropy and cross_entropy_grad: one scf.parallel over the rows of
// [rows, V], the row's max and sum of exp(x - max) (f64) in one pass (the
// online softmax: one exp per logit, of min(m, x) - max(m, x); the sum
// rescaled by it when the max grows, else added to); the loss is the
// mean of the per-row losses, summed in f64 in row order by a nest of one
// row (a device kernel: the loss stays in device memory). The upstream
// gradient is read inside the gradient's nest.
// RUN: triax-opt %s --convert-triax-to-kernels | FileCheck %s --implicit-check-not=triax.

// i64 token ids; 6 rows of 16 logits; dloss = 2.
triax.model @loss config = #triax.train_config<micro_batch = 2, seq = 3, global_batch = 2> {
  triax.param @wte : tensor<16x8xf32> init <normal, std = 0.02>
  func.func @forward(%tokens: tensor<2x3xi64>, %targets: tensor<2x3xi64>) -> tensor<f32> {
    %wte = triax.get_param @wte : tensor<16x8xf32>
    %x = triax.embedding %tokens, %wte : (tensor<2x3xi64>, tensor<16x8xf32>) -> tensor<2x3x8xf32>
    %logits = triax.linear %x, %wte {transpose_weight} : (tensor<2x3x8xf32>, tensor<16x8xf32>) -> tensor<2x3x16xf32>
    %dloss = arith.constant dense<2.0> : tensor<f32>
    %dlogits = triax.cross_entropy_grad %logits, %targets, %dloss : (tensor<2x3x16xf32>, tensor<2x3xi64>, tensor<f32>) -> tensor<2x3x16xf32>
    %loss = triax.cross_entropy %dlogits, %targets : (tensor<2x3x16xf32>, tensor<2x3xi64>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// CHECK-LABEL: func.func @triax_forward(
// CHECK-SAME: %[[TOK:.*]]: memref<2x3xi64>, %[[TGT:.*]]: memref<2x3xi64>) -> f32
// CHECK: %[[LOGITS:.*]] = memref.alloc() : memref<2x3x16xf32>
// CHECK: call @trx_sgemm

// cross_entropy_grad: dlogits = (softmax - onehot(target)) * dloss / rows.
// CHECK: %[[DL:.*]] = memref.alloc() : memref<f32>
// CHECK: %[[GRAD:.*]] = memref.alloc() : memref<2x3x16xf32>
// CHECK: %[[X:.*]] = memref.collapse_shape %[[LOGITS]] {{\[}}[0, 1], [2]] : memref<2x3x16xf32> into memref<6x16xf32>
// CHECK: %[[G:.*]] = memref.collapse_shape %[[GRAD]] {{\[}}[0, 1], [2]] : memref<2x3x16xf32> into memref<6x16xf32>
// CHECK: %[[T:.*]] = memref.collapse_shape %[[TGT]] {{\[}}[0, 1]] : memref<2x3xi64> into memref<6xi64>
// CHECK: %[[DL1:.*]] = memref.expand_shape %[[DL]] [] output_shape [1] : memref<f32> into memref<1xf32>
// CHECK: scf.parallel (%[[R:.*]]) = (%{{.*}}) to (%c6{{.*}}) step
// CHECK-NOT: scf.parallel
// CHECK: %[[DLV:.*]] = memref.load %[[DL1]][%{{.*}}] : memref<1xf32>
// CHECK: %[[SCALE:.*]] = arith.divf %[[DLV]], %{{.*}} : f32
// CHECK: %[[STATS:.*]]:2 = scf.for %{{.*}} = %c1{{.*}} to %c16{{.*}} iter_args(%[[M:.*]] = %{{.*}}, %[[S:.*]] = %{{.*}}) -> (f32, f64) {
// CHECK: %[[XV:.*]] = memref.load %[[X]]
// CHECK: %[[GROWS:.*]] = arith.cmpf olt, %[[M]], %[[XV]] : f32
// CHECK: %[[LOW:.*]] = arith.select %[[GROWS]], %[[M]], %[[XV]] : f32
// CHECK: %[[HIGH:.*]] = arith.select %[[GROWS]], %[[XV]], %[[M]] : f32
// CHECK: %[[DIFF:.*]] = arith.subf %[[LOW]], %[[HIGH]] : f32
// CHECK: %[[E:.*]] = math.exp %[[DIFF]] : f32
// CHECK: %[[E64:.*]] = arith.extf %[[E]] : f32 to f64
// CHECK: %[[SE:.*]] = arith.mulf %[[S]], %[[E64]] : f64
// CHECK: %[[RESCALED:.*]] = arith.addf %[[SE]], %{{.*}} : f64
// CHECK: %[[ADDED:.*]] = arith.addf %[[S]], %[[E64]] : f64
// CHECK: %[[NEXT:.*]] = arith.select %[[GROWS]], %[[RESCALED]], %[[ADDED]] : f64
// CHECK: scf.yield %[[HIGH]], %[[NEXT]] : f32, f64
// CHECK-NOT: scf.for %{{.*}} -> (f64)
// CHECK: %[[SUM:.*]] = arith.truncf %[[STATS]]#1 : f64 to f32
// CHECK: %[[TV:.*]] = memref.load %[[T]][%[[R]]] : memref<6xi64>
// CHECK: %[[TI:.*]] = arith.index_cast %[[TV]] : i64 to index
// CHECK: scf.for %[[V:.*]] = %{{.*}} to %c16
// CHECK: %[[P:.*]] = arith.divf %{{.*}}, %[[SUM]] : f32
// CHECK: %[[IS:.*]] = arith.cmpi eq, %[[V]], %[[TI]] : index
// CHECK: %[[PM1:.*]] = arith.subf %[[P]], %{{.*}} : f32
// CHECK: %[[D:.*]] = arith.select %[[IS]], %[[PM1]], %[[P]] : f32
// CHECK: %[[OUT:.*]] = arith.mulf %[[D]], %[[SCALE]] : f32
// CHECK: memref.store %[[OUT]], %[[G]][%[[R]], %[[V]]] : memref<6x16xf32>
// CHECK: scf.reduce

// cross_entropy: per-row losses into a scratch buffer in parallel...
// CHECK: %[[X:.*]] = memref.collapse_shape %[[GRAD]] {{\[}}[0, 1], [2]] : memref<2x3x16xf32> into memref<6x16xf32>
// CHECK: %[[T:.*]] = memref.collapse_shape %[[TGT]] {{\[}}[0, 1]] : memref<2x3xi64> into memref<6xi64>
// CHECK: %[[ROWS:.*]] = memref.alloc() : memref<6xf32>
// CHECK: scf.parallel (%[[R:.*]]) = (%{{.*}}) to (%c6{{.*}}) step
// CHECK-NOT: scf.parallel
// CHECK: %[[STATS:.*]]:2 = scf.for %{{.*}} iter_args(%{{.*}}, %{{.*}}) -> (f32, f64) {
// CHECK: %[[TV:.*]] = memref.load %[[T]][%[[R]]] : memref<6xi64>
// CHECK: %[[TI:.*]] = arith.index_cast %[[TV]] : i64 to index
// CHECK: %[[PICK:.*]] = memref.load %[[X]][%[[R]], %[[TI]]] : memref<6x16xf32>
// CHECK: %[[MARGIN:.*]] = arith.subf %[[STATS]]#0, %[[PICK]] : f32
// CHECK: %[[M64:.*]] = arith.extf %[[MARGIN]] : f32 to f64
// CHECK: %[[LOG:.*]] = math.log %[[STATS]]#1 : f64
// CHECK: %[[L:.*]] = arith.addf %[[M64]], %[[LOG]] : f64
// CHECK: %[[L32:.*]] = arith.truncf %[[L]] : f64 to f32
// CHECK: memref.store %[[L32]], %[[ROWS]][%[[R]]] : memref<6xf32>
// CHECK: scf.reduce
// ...then their mean: a nest of one row, summed in order in f64, stored
// through the result's one-element view at the nest's variable.
// CHECK: %[[LOSS:.*]] = memref.alloc() : memref<f32>
// CHECK: %[[LOSS1:.*]] = memref.expand_shape %[[LOSS]] [] output_shape [1] : memref<f32> into memref<1xf32>
// CHECK: scf.parallel (%[[ONE:.*]]) = (%{{.*}}) to (%c1{{.*}}) step
// CHECK-NOT: scf.parallel
// CHECK: %[[TOTAL:.*]] = scf.for %[[I:.*]] = %{{.*}} to %c6{{.*}} iter_args(%[[ACC:.*]] = %{{.*}}) -> (f64) {
// CHECK: %[[LI:.*]] = memref.load %[[ROWS]][%[[I]]] : memref<6xf32>
// CHECK: %[[LI64:.*]] = arith.extf %[[LI]] : f32 to f64
// CHECK: arith.addf %[[ACC]], %[[LI64]] : f64
// CHECK: %[[MEAN:.*]] = arith.divf %[[TOTAL]], %{{.*}} : f64
// CHECK: %[[MEAN32:.*]] = arith.truncf %[[MEAN]] : f64 to f32
// CHECK: memref.store %[[MEAN32]], %[[LOSS1]][%[[ONE]]] : memref<1xf32>
// CHECK: scf.reduce
// The evaluation entry returns the loss to the host.
// CHECK: %[[RET:.*]] = memref.load %[[LOSS]][] : memref<f32>
// CHECK: return %[[RET]] : f32
