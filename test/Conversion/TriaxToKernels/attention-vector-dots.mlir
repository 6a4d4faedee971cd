// convert-triax-to-kernels{vector-dots} (the CPU pipeline sets it): the
// flash kernels' dot products over a head dimension that is a multiple of 8
// are vector<8xf32> loads of the two rows, a multiply for features 0..7,
// then a loop adding the products of each next 8 features (lane l holds
// features l, l + 8, ...), then the lanes halved in the scalar form's order
// ([0..3] + [4..7], then [0, 1] + [2, 3], then lane 0 + lane 1), so the
// bits are those of the scalar lanes. Without the option, and for a head
// dimension that is not a multiple of 8, no vector op appears.
// RUN: triax-opt %s --convert-triax-to-kernels=vector-dots=true | FileCheck %s
// RUN: triax-opt %s --convert-triax-to-kernels | FileCheck %s --check-prefix=SCALAR
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

// d = 16: two steps of 8 lanes.
// CHECK-LABEL: func.func @fwd16
// CHECK:         scf.parallel
// CHECK:         %[[Q0:.*]] = vector.load %{{.*}}[%{{.*}}, %{{.*}}] : memref<8x16xf32>, vector<8xf32>
// CHECK:         %[[K0:.*]] = vector.load %{{.*}}[%{{.*}}, %{{.*}}] : memref<8x16xf32>, vector<8xf32>
// CHECK:         %[[P0:.*]] = arith.mulf %[[Q0]], %[[K0]] : vector<8xf32>
// CHECK:         %[[SUM:.*]] = scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[ACC:.*]] = %[[P0]]) -> (vector<8xf32>)
// CHECK:           vector.load
// CHECK:           vector.load
// CHECK:           %[[P:.*]] = arith.mulf %{{.*}}, %{{.*}} : vector<8xf32>
// CHECK:           %[[NEXT:.*]] = arith.addf %[[ACC]], %[[P]] : vector<8xf32>
// CHECK:           scf.yield %[[NEXT]] : vector<8xf32>
// CHECK:         %[[LO4:.*]] = vector.shuffle %[[SUM]], %[[SUM]] [0, 1, 2, 3] : vector<8xf32>, vector<8xf32>
// CHECK:         %[[HI4:.*]] = vector.shuffle %[[SUM]], %[[SUM]] [4, 5, 6, 7] : vector<8xf32>, vector<8xf32>
// CHECK:         %[[W4:.*]] = arith.addf %[[LO4]], %[[HI4]] : vector<4xf32>
// CHECK:         %[[LO2:.*]] = vector.shuffle %[[W4]], %[[W4]] [0, 1] : vector<4xf32>, vector<4xf32>
// CHECK:         %[[HI2:.*]] = vector.shuffle %[[W4]], %[[W4]] [2, 3] : vector<4xf32>, vector<4xf32>
// CHECK:         %[[W2:.*]] = arith.addf %[[LO2]], %[[HI2]] : vector<2xf32>
// CHECK:         %[[L0:.*]] = vector.extract %[[W2]][0] : f32 from vector<2xf32>
// CHECK:         %[[L1:.*]] = vector.extract %[[W2]][1] : f32 from vector<2xf32>
// CHECK:         arith.addf %[[L0]], %[[L1]] : f32
// SCALAR-LABEL: func.func @fwd16
// SCALAR-NOT:     vector.
// SCALAR-LABEL: func.func @bwd16
// SCALAR-NOT:     vector.
// SCALAR-LABEL: func.func @fwd4
func.func @fwd16(%q: tensor<2x4x16xf32>) -> tensor<2x4x16xf32> {
  %o = triax.attention %q, %q, %q heads = 1 kv_heads = 1 : (tensor<2x4x16xf32>, tensor<2x4x16xf32>, tensor<2x4x16xf32>) -> tensor<2x4x16xf32>
  return %o : tensor<2x4x16xf32>
}

// The backward's dot products (scores and dO . v) take the same form.
// CHECK-LABEL: func.func @bwd16
// CHECK-COUNT-6: vector.shuffle %{{.*}} [0, 1, 2, 3]
// CHECK-NOT:     vector.shuffle %{{.*}} [0, 1, 2, 3]
// CHECK:         return
func.func @bwd16(%q: tensor<2x4x16xf32>, %do: tensor<2x4x16xf32>) -> (tensor<2x4x16xf32>, tensor<2x4x16xf32>, tensor<2x4x16xf32>) {
  %dq, %dk, %dv = triax.attention_grad %q, %q, %q, %do heads = 1 kv_heads = 1 : (tensor<2x4x16xf32>, tensor<2x4x16xf32>, tensor<2x4x16xf32>, tensor<2x4x16xf32>) -> (tensor<2x4x16xf32>, tensor<2x4x16xf32>, tensor<2x4x16xf32>)
  return %dq, %dk, %dv : tensor<2x4x16xf32>, tensor<2x4x16xf32>, tensor<2x4x16xf32>
}

// d = 4 (4 heads of 16 features would be d = 4): the scalar sum.
// CHECK-LABEL: func.func @fwd4
// CHECK-NOT:     vector.
// CHECK:         return
func.func @fwd4(%q: tensor<2x4x16xf32>) -> tensor<2x4x16xf32> {
  %o = triax.attention %q, %q, %q heads = 4 kv_heads = 4 : (tensor<2x4x16xf32>, tensor<2x4x16xf32>, tensor<2x4x16xf32>) -> tensor<2x4x16xf32>
  return %o : tensor<2x4x16xf32>
}

// bf16 operands: 8 bf16 elements loaded, extended exactly to f32.
// CHECK-LABEL: func.func @fwd16_bf16
// CHECK:         %[[QB:.*]] = vector.load %{{.*}} : memref<8x16xbf16>, vector<8xbf16>
// CHECK:         %[[QF:.*]] = arith.extf %[[QB]] : vector<8xbf16> to vector<8xf32>
// CHECK:         %[[KB:.*]] = vector.load %{{.*}} : memref<8x16xbf16>, vector<8xbf16>
// CHECK:         %[[KF:.*]] = arith.extf %[[KB]] : vector<8xbf16> to vector<8xf32>
// CHECK:         arith.mulf %[[QF]], %[[KF]] : vector<8xf32>
func.func @fwd16_bf16(%q: tensor<2x4x16xbf16>) -> tensor<2x4x16xbf16> {
  %o = triax.attention %q, %q, %q heads = 1 kv_heads = 1 : (tensor<2x4x16xbf16>, tensor<2x4x16xbf16>, tensor<2x4x16xbf16>) -> tensor<2x4x16xbf16>
  return %o : tensor<2x4x16xbf16>
}

// The CPU pipeline's kernels have it.
// PIPELINE: vector.shuffle
