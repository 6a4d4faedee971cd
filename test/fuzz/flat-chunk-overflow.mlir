// Found by triax-fuzz: a flat all_gather over 2^63 - 1 ranks. The verifier's
// ZeRO chunk, trx_zero_chunk's (numel + group - 1) / group, overflowed int64
// (UBSan: signed integer overflow); the verifier says so instead.
// RUN: not triax-opt %s 2>&1 | FileCheck %s
// CHECK: [[@LINE+5]]:8: error: 'dist.all_gather_flat' op cannot chunk 15 elements over 9223372036854775807 ranks: rounding up overflows int64
// CHECK-NOT: {{Stack dump|PLEASE submit|runtime error}}

dist.mesh @mesh <["dp"=9223372036854775807]>
func.func @gather(%c: tensor<5xf32>) -> tensor<5x3xf32> {
  %w = dist.all_gather_flat %c over @mesh ["dp"] : tensor<5xf32> -> tensor<5x3xf32>
  return %w : tensor<5x3xf32>
}
