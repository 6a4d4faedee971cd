// Found by triax-fuzz: a flat all_gather over 2^63 - 1 ranks. The verifier's
// ZeRO chunk, trx_zero_chunk's (numel + group - 1) / group, overflowed int64
// (UBSan: signed integer overflow). trx_zero_chunk now rounds up as
// numel / group + (numel % group != 0), which cannot overflow: the chunk of
// 15 elements over 2^63 - 1 ranks is 1, and the verifier checks the shapes
// as for any group.
// RUN: not triax-opt %s 2>&1 | FileCheck %s
// CHECK: [[@LINE+5]]:8: error: 'dist.all_gather_flat' op chunk 'tensor<5xf32>' must have ceil(15 / 9223372036854775807) = 1 elements
// CHECK-NOT: {{Stack dump|PLEASE submit|runtime error}}

dist.mesh @mesh <["dp"=9223372036854775807]>
func.func @gather(%c: tensor<5xf32>) -> tensor<5x3xf32> {
  %w = dist.all_gather_flat %c over @mesh ["dp"] : tensor<5xf32> -> tensor<5x3xf32>
  return %w : tensor<5x3xf32>
}
