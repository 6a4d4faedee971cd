// dist.all_to_all becomes the runtime's flat all_to_all (trx_all_to_all_f32:
// the send buffer's g equal chunks go to members 0..g-1, the received ones
// arrive in member order). The input is copied into group-major order
// (chunk j = slice j of the split dimension) unless that dimension is the
// outermost non-unit one, and the received chunks are unpacked into the
// concat dimension unless it is. The group is bit 1 of the mask (ep).
// RUN: triax-opt %s --convert-triax-to-kernels --canonicalize --cse | FileCheck %s
// The VJP (triax-autodiff) is the inverse exchange: split and concat
// swapped, in reverse order.
// RUN: triax-opt %s --triax-autodiff | FileCheck %s --check-prefix=VJP

dist.mesh @mesh <["dp"=2, "ep"=2]>
triax.model @m config = #triax.train_config<micro_batch = 1, seq = 2> {
  triax.param @emb : tensor<4x2xf32> init <normal, std = 0.02> decay
  func.func @forward(%tokens: tensor<1x2xi32>, %targets: tensor<1x2xi32>) -> tensor<f32> {
    %emb = triax.get_param @emb : tensor<4x2xf32>
    %x = triax.embedding %tokens, %emb : (tensor<1x2xi32>, tensor<4x2xf32>) -> tensor<1x2x2xf32>
    %d = dist.all_to_all %x over @mesh ["ep"] split 1 concat 0 : tensor<1x2x2xf32> -> tensor<2x1x2xf32>
    %c = dist.all_to_all %d over @mesh ["ep"] split 0 concat 1 : tensor<2x1x2xf32> -> tensor<1x2x2xf32>
    %logits = triax.linear %c, %emb {transpose_weight} : (tensor<1x2x2xf32>, tensor<4x2xf32>) -> tensor<1x2x4xf32>
    %loss = triax.cross_entropy %logits, %targets : (tensor<1x2x4xf32>, tensor<1x2xi32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}
// VJP-LABEL: func.func @forward_backward
// VJP: %[[X:.*]] = triax.embedding
// VJP: %[[D:.*]] = dist.all_to_all %[[X]] over @mesh ["ep"] split 1 concat 0 : tensor<1x2x2xf32> -> tensor<2x1x2xf32>
// VJP: %[[C:.*]] = dist.all_to_all %[[D]] over @mesh ["ep"] split 0 concat 1 : tensor<2x1x2xf32> -> tensor<1x2x2xf32>
// VJP: %[[G:.*]] = triax.linear %{{.*}}, %{{.*}} : (tensor<1x2x4xf32>, tensor<4x2xf32>) -> tensor<1x2x2xf32>
// VJP: %[[GD:.*]] = dist.all_to_all %[[G]] over @mesh ["ep"] split 1 concat 0 : tensor<1x2x2xf32> -> tensor<2x1x2xf32>
// VJP: %[[GX:.*]] = dist.all_to_all %[[GD]] over @mesh ["ep"] split 0 concat 1 : tensor<2x1x2xf32> -> tensor<1x2x2xf32>
// VJP: triax.embedding_grad %{{.*}}, %[[GX]]

// Split along dimension 1 of [2, 4, 3]: chunk j = x[:, 2j:2j+2, :], packed
// as [2 members][2, 2, 3]; concat along dimension 2: member i's chunk
// lands at result[:, :, 3i:3i+3].
// CHECK-LABEL: func.func @packed(
// CHECK-SAME: %[[IN:.*]]: memref<2x4x3xf32>) -> memref<2x2x6xf32>
// CHECK: %[[PACKED:.*]] = memref.alloc() : memref<24xf32>
// CHECK: scf.parallel
// CHECK: memref.load %{{.*}}
// CHECK: memref.store %{{.*}}, %{{.*}}
// CHECK: %[[OUT:.*]] = memref.alloc() : memref<2x2x6xf32>
// CHECK: %[[RECV:.*]] = memref.alloc() : memref<24xf32>
// CHECK: call @trx_all_to_all_f32(%{{.*}}, %{{.*}}, %c2_i64)
// CHECK: scf.parallel
// CHECK: return %[[OUT]]
func.func @packed(%x: tensor<2x4x3xf32>) -> tensor<2x2x6xf32> {
  %y = dist.all_to_all %x over @mesh ["ep"] split 1 concat 2 : tensor<2x4x3xf32> -> tensor<2x2x6xf32>
  return %y : tensor<2x2x6xf32>
}

// The outermost dimension both ways: the buffers as they are.
// CHECK-LABEL: func.func @direct(
// CHECK-SAME: %[[IN:.*]]: memref<4x3xf32>) -> memref<4x3xf32>
// CHECK: %[[OUT:.*]] = memref.alloc() : memref<4x3xf32>
// CHECK-NOT: scf.parallel
// CHECK: call @trx_all_to_all_f32(%{{.*}}, %{{.*}}, %c3_i64)
// CHECK-NOT: scf.parallel
// CHECK: return %[[OUT]]
func.func @direct(%x: tensor<4x3xf32>) -> tensor<4x3xf32> {
  %y = dist.all_to_all %x over @mesh ["dp", "ep"] split 0 concat 0 : tensor<4x3xf32> -> tensor<4x3xf32>
  return %y : tensor<4x3xf32>
}
