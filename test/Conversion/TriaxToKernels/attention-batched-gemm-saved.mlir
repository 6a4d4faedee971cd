// attention=batched-gemm, the backward from the forward's saved output and
// log-sum-exp (`saved`, what triax-autodiff builds): P is recomputed by its
// GEMM, then exp(s - L) in one pass over each row (no max, no sum, no
// division: the forward's softmax did them), 0 past the diagonal. Without
// `saved` the softmax runs as in the forward (attention.mlir). Numerics:
// attention-reference.test --saved.
// RUN: triax-opt %s --convert-triax-to-kernels=attention=batched-gemm > %t
// RUN: FileCheck %s --implicit-check-not=triax. < %t
// The P kernel of the saved backward has one exp and no division; the
// plain backward's softmax has its sum's division.
// RUN: sed -n '/func.func @bwd_saved(/,/^  }$/p' %t | FileCheck %s --check-prefix=SAVED-DIV --implicit-check-not=arith.divf
// SAVED-DIV: math.exp
// RUN: sed -n '/func.func @bwd(/,/^  }$/p' %t | grep -c 'arith.divf' | FileCheck %s --check-prefix=PLAIN-DIV
// PLAIN-DIV: {{^}}1{{$}}

// B = 2, S = 4, 2 heads of d = 3.
triax.model @m config = #triax.train_config<micro_batch = 2, seq = 4, global_batch = 2> {
  triax.param @w : tensor<4x2xf32> init <normal, std = 0.02>
  func.func @forward(%tokens: tensor<2x4xi32>, %targets: tensor<2x4xi32>) -> tensor<f32> {
    %w = triax.get_param @w : tensor<4x2xf32>
    %x = triax.embedding %tokens, %w : (tensor<2x4xi32>, tensor<4x2xf32>) -> tensor<2x4x2xf32>
    %l = triax.cross_entropy %x, %targets : (tensor<2x4x2xf32>, tensor<2x4xi32>) -> tensor<f32>
    return %l : tensor<f32>
  }
}

// CHECK-LABEL: func.func @bwd_saved(
// CHECK-SAME:    %{{.*}}: memref<2x4x6xf32>, %[[L:.*]]: memref<2x2x4xf32>)
// CHECK:         %[[P:.*]] = memref.alloc() : memref<2x4x4xf32>
// CHECK:         scf.for %[[B:.*]] = %{{.*}} to %c2
// CHECK:           func.call @trx_sgemm_batched
// CHECK:           scf.parallel (%[[R:.*]]) = (%{{.*}}) to (%c8{{.*}})
// CHECK:             %[[ROWL:.*]] = memref.load %[[L]][%[[B]], %{{.*}}, %{{.*}}] : memref<2x2x4xf32>
// CHECK:             scf.for %[[T:.*]] =
// CHECK-NEXT:          %[[S:.*]] = memref.load %[[P]][%{{.*}}, %{{.*}}, %[[T]]]
// CHECK-NEXT:          %[[SHIFT:.*]] = arith.subf %[[S]], %[[ROWL]] : f32
// CHECK-NEXT:          %[[E:.*]] = math.exp %[[SHIFT]] : f32
// CHECK-NEXT:          memref.store %[[E]], %[[P]][%{{.*}}, %{{.*}}, %[[T]]]
// CHECK:             scf.for
// CHECK:               memref.store %{{.*}}, %[[P]]
// CHECK:           func.call @trx_sgemm_batched
func.func @bwd_saved(%q: tensor<2x4x6xf32>, %k: tensor<2x4x6xf32>, %v: tensor<2x4x6xf32>, %do: tensor<2x4x6xf32>, %o: tensor<2x4x6xf32>, %lse: tensor<2x2x4xf32>) -> (tensor<2x4x6xf32>, tensor<2x4x6xf32>, tensor<2x4x6xf32>) {
  %dq, %dk, %dv = triax.attention_grad %q, %k, %v, %do saved(%o, %lse) heads = 2 : (tensor<2x4x6xf32>, tensor<2x4x6xf32>, tensor<2x4x6xf32>, tensor<2x4x6xf32>, tensor<2x4x6xf32>, tensor<2x2x4xf32>) -> (tensor<2x4x6xf32>, tensor<2x4x6xf32>, tensor<2x4x6xf32>)
  return %dq, %dk, %dv : tensor<2x4x6xf32>, tensor<2x4x6xf32>, tensor<2x4x6xf32>
}

// CHECK-LABEL: func.func @bwd(
// CHECK:         scf.parallel
// CHECK:           scf.reduce
func.func @bwd(%q: tensor<2x4x6xf32>, %k: tensor<2x4x6xf32>, %v: tensor<2x4x6xf32>, %do: tensor<2x4x6xf32>) -> (tensor<2x4x6xf32>, tensor<2x4x6xf32>, tensor<2x4x6xf32>) {
  %dq, %dk, %dv = triax.attention_grad %q, %k, %v, %do heads = 2 : (tensor<2x4x6xf32>, tensor<2x4x6xf32>, tensor<2x4x6xf32>, tensor<2x4x6xf32>) -> (tensor<2x4x6xf32>, tensor<2x4x6xf32>, tensor<2x4x6xf32>)
  return %dq, %dk, %dv : tensor<2x4x6xf32>, tensor<2x4x6xf32>, tensor<2x4x6xf32>
}
