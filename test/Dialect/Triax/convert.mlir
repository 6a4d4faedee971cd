// triax.convert: printing, and its folds (same type; an exact round trip
// through a wider type), which a narrowing round trip does not get.
// RUN: triax-opt %s --canonicalize | FileCheck %s

// CHECK-LABEL: func.func @folds
// CHECK-SAME: (%[[A:.*]]: tensor<4xbf16>, %[[B:.*]]: tensor<4xf32>)
func.func @folds(%a: tensor<4xbf16>, %b: tensor<4xf32>) -> (tensor<4xbf16>, tensor<4xbf16>, tensor<4xf32>) {
  %same = triax.convert %a : tensor<4xbf16> to tensor<4xbf16>
  %up = triax.convert %a : tensor<4xbf16> to tensor<4xf32>
  %back = triax.convert %up : tensor<4xf32> to tensor<4xbf16>
  // f32 -> bf16 -> f32 rounds: it stays.
  // CHECK: %[[D:.*]] = triax.convert %[[B]] : tensor<4xf32> to tensor<4xbf16>
  // CHECK: %[[U:.*]] = triax.convert %[[D]] : tensor<4xbf16> to tensor<4xf32>
  %down = triax.convert %b : tensor<4xf32> to tensor<4xbf16>
  %round = triax.convert %down : tensor<4xbf16> to tensor<4xf32>
  // CHECK: return %[[A]], %[[A]], %[[U]]
  return %same, %back, %round : tensor<4xbf16>, tensor<4xbf16>, tensor<4xf32>
}
