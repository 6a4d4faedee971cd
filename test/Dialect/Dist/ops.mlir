// Round trip of every dist op and attribute.
// RUN: triax-opt %s | triax-opt | FileCheck %s
// RUN: triax-opt %s --mlir-print-op-generic | triax-opt | FileCheck %s

// CHECK: dist.mesh @cluster <["dp"=2, "pp"=2, "tp"=2]>
dist.mesh @cluster <["dp"=2, "pp"=2, "tp"=2]>
// CHECK: dist.mesh @single <["x"=1]>
dist.mesh @single <["x"=1]>

// CHECK-LABEL: func.func @collectives
// CHECK-SAME: %{{.*}}: tensor<8x16xf32> {dist.sharding = #dist.sharding<@cluster, [{"dp"}, {"tp"}]>}
func.func @collectives(%x: tensor<8x16xf32> {dist.sharding = #dist.sharding<@cluster, [{"dp"}, {"tp"}]>}) -> tensor<8x16xf32> {
  // CHECK: dist.all_reduce sum %{{.*}} over @cluster ["dp"] : tensor<8x16xf32>
  %s = dist.all_reduce sum %x over @cluster ["dp"] : tensor<8x16xf32>
  // CHECK: dist.all_reduce avg %{{.*}} over @cluster ["dp", "pp"] : tensor<8x16xf32>
  %a = dist.all_reduce avg %s over @cluster ["dp", "pp"] : tensor<8x16xf32>
  // CHECK: dist.all_reduce max {{.*}} over @cluster ["tp"]
  %mx = dist.all_reduce max %a over @cluster ["tp"] : tensor<8x16xf32>
  // CHECK: dist.all_reduce min {{.*}} over @cluster ["tp"]
  %mn = dist.all_reduce min %mx over @cluster ["tp"] : tensor<8x16xf32>
  // all_gather multiplies the gathered dim by the group size (2 * 2 = 4).
  // CHECK: dist.all_gather %{{.*}} over @cluster ["dp", "tp"] dim 1 : tensor<8x16xf32> -> tensor<8x64xf32>
  %g = dist.all_gather %mn over @cluster ["dp", "tp"] dim 1 : tensor<8x16xf32> -> tensor<8x64xf32>
  // CHECK: dist.all_gather %{{.*}} over @cluster ["tp"] dim 1 replicated_grad : tensor<8x16xf32> -> tensor<8x32xf32>
  %gr = dist.all_gather %mn over @cluster ["tp"] dim 1 replicated_grad : tensor<8x16xf32> -> tensor<8x32xf32>
  // reduce_scatter divides it.
  // CHECK: dist.reduce_scatter sum %{{.*}} over @cluster ["dp", "tp"] dim 1 : tensor<8x64xf32> -> tensor<8x16xf32>
  %rs = dist.reduce_scatter sum %g over @cluster ["dp", "tp"] dim 1 : tensor<8x64xf32> -> tensor<8x16xf32>
  // CHECK: dist.reduce_scatter avg %{{.*}} over @cluster ["dp"] dim 0 : tensor<8x16xf32> -> tensor<4x16xf32>
  %rs2 = dist.reduce_scatter avg %rs over @cluster ["dp"] dim 0 : tensor<8x16xf32> -> tensor<4x16xf32>
  // all_to_all divides the split dim and multiplies the concat dim by the
  // group size; the same dim keeps its size.
  // CHECK: dist.all_to_all %{{.*}} over @cluster ["dp", "tp"] split 1 concat 0 : tensor<8x16xf32> -> tensor<32x4xf32>
  %a2a = dist.all_to_all %rs over @cluster ["dp", "tp"] split 1 concat 0 : tensor<8x16xf32> -> tensor<32x4xf32>
  // CHECK: dist.all_to_all %{{.*}} over @cluster ["dp"] split 0 concat 0 : tensor<8x16xf32> -> tensor<8x16xf32>
  %a2a2 = dist.all_to_all %rs over @cluster ["dp"] split 0 concat 0 : tensor<8x16xf32> -> tensor<8x16xf32>
  // CHECK: dist.broadcast %{{.*}} over @cluster ["dp"] root 1 : tensor<8x16xf32>
  %b = dist.broadcast %rs over @cluster ["dp"] root 1 : tensor<8x16xf32>
  // CHECK: dist.send %{{.*}} over @cluster ["pp"] to 1 : tensor<8x16xf32>
  dist.send %b over @cluster ["pp"] to 1 : tensor<8x16xf32>
  // CHECK: dist.recv over @cluster ["pp"] from 0 : tensor<8x16xf32>
  %r = dist.recv over @cluster ["pp"] from 0 : tensor<8x16xf32>
  // CHECK: dist.sharding_constraint %{{.*}} <@cluster, [{"dp"}, {}]> : tensor<8x16xf32>
  %c = dist.sharding_constraint %r <@cluster, [{"dp"}, {}]> : tensor<8x16xf32>
  // A dimension split over two axes, major to minor.
  // CHECK: dist.sharding_constraint %{{.*}} <@cluster, [{"dp", "tp"}, {}]> : tensor<8x16xf32>
  %c2 = dist.sharding_constraint %c <@cluster, [{"dp", "tp"}, {}]> : tensor<8x16xf32>
  // The sharding as a discardable attribute on an op result.
  // CHECK: arith.addf {{.*}} {dist.sharding = #dist.sharding<@cluster, [{}, {"tp"}]>} : tensor<8x16xf32>
  %sum = arith.addf %c2, %c2 {dist.sharding = #dist.sharding<@cluster, [{}, {"tp"}]>} : tensor<8x16xf32>
  return %sum : tensor<8x16xf32>
}

// Shardings on parameters, with the mesh declared above the model.
// CHECK-LABEL: triax.model @sharded
triax.model @sharded config = #triax.train_config<micro_batch = 2, seq = 4> {
  // CHECK: triax.param @w : tensor<8x16xf32> init <zeros> {dist.sharding = #dist.sharding<@cluster, [{}, {"tp"}]>}
  triax.param @w : tensor<8x16xf32> init <zeros> {dist.sharding = #dist.sharding<@cluster, [{}, {"tp"}]>}
  func.func @forward(%t: tensor<2x4xi32>, %y: tensor<2x4xi32>) -> tensor<f32> {
    // A split parameter reads as this rank's piece (dimension 1 over tp=2).
    // CHECK: triax.get_param @w : tensor<8x8xf32>
    %w = triax.get_param @w : tensor<8x8xf32>
    // Collectives inside a model find the module-level mesh.
    // CHECK: dist.all_gather %{{.*}} over @cluster ["tp"] dim 1 : tensor<8x8xf32> -> tensor<8x16xf32>
    %g = dist.all_gather %w over @cluster ["tp"] dim 1 : tensor<8x8xf32> -> tensor<8x16xf32>
    %z = arith.constant dense<0.0> : tensor<f32>
    return %z : tensor<f32>
  }
}

// Sequence parallelism: a replicated parameter with a partial gradient,
// and this rank's slice of the position ids.
// CHECK: triax.param @ln.weight : tensor<64xf32> init <ones> {dist.partial_grad = #dist.partial_grad<@cluster, ["tp"]>}
triax.model @sp config = #triax.train_config<micro_batch = 8, seq = 64> {
  triax.param @ln.weight : tensor<64xf32> init <ones> {dist.partial_grad = #dist.partial_grad<@cluster, ["tp"]>}
  func.func @forward(%tokens: tensor<8x64xi32>, %targets: tensor<8x64xi32>) -> tensor<f32> {
    %zero = arith.constant dense<0.0> : tensor<f32>
    return %zero : tensor<f32>
  }
}
// CHECK-LABEL: func.func @positions
// CHECK: triax.position_ids sequence_parallel over @cluster ["tp"] : tensor<8x32xi32>
func.func @positions() -> tensor<8x32xi32> {
  %p = triax.position_ids sequence_parallel over @cluster ["tp"] : tensor<8x32xi32>
  return %p : tensor<8x32xi32>
}

// Context parallelism: this member's load-balanced chunks of the sequence,
// and attention over the group's gathered keys and values.
// CHECK-LABEL: func.func @context_parallel
// CHECK: dist.shard_sequence %{{.*}} over @cluster ["dp"] dim 1 : tensor<2x8xi32> -> tensor<2x4xi32>
// CHECK: dist.shard_sequence %{{.*}} over @cluster ["dp"] dim 1 contiguous : tensor<2x4xi32> -> tensor<2x2xi32>
// CHECK: triax.attention %{{.*}}, %{{.*}}, %{{.*}} heads = 2 context_parallel over @cluster ["dp"] : (tensor<2x4x8xf32>, tensor<2x8x8xf32>, tensor<2x8x8xf32>) -> tensor<2x4x8xf32>
// CHECK: triax.attention_grad %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} heads = 2 context_parallel over @cluster ["dp"] : (tensor<2x4x8xf32>, tensor<2x8x8xf32>, tensor<2x8x8xf32>, tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<2x8x8xf32>, tensor<2x8x8xf32>)
func.func @context_parallel(%tokens: tensor<2x8xi32>, %q: tensor<2x4x8xf32>, %kv: tensor<2x8x8xf32>) -> tensor<2x4xi32> {
  %t = dist.shard_sequence %tokens over @cluster ["dp"] dim 1 : tensor<2x8xi32> -> tensor<2x4xi32>
  %u = dist.shard_sequence %t over @cluster ["dp"] dim 1 contiguous : tensor<2x4xi32> -> tensor<2x2xi32>
  %a = triax.attention %q, %kv, %kv heads = 2 context_parallel over @cluster ["dp"] : (tensor<2x4x8xf32>, tensor<2x8x8xf32>, tensor<2x8x8xf32>) -> tensor<2x4x8xf32>
  %dq, %dk, %dv = triax.attention_grad %q, %kv, %kv, %a heads = 2 context_parallel over @cluster ["dp"] : (tensor<2x4x8xf32>, tensor<2x8x8xf32>, tensor<2x8x8xf32>, tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<2x8x8xf32>, tensor<2x8x8xf32>)
  return %t : tensor<2x4xi32>
}

// ZeRO's buckets: several tensors' chunks in one collective each way.
// CHECK-LABEL: func.func @zero_buckets
// CHECK: %{{.*}}:2 = dist.reduce_scatter_bucket avg %{{.*}}, %{{.*}} over @cluster ["dp"] : tensor<5x3xf32>, tensor<3xf32> -> tensor<8xf32>, tensor<2xf32>
// CHECK: %{{.*}}:2 = dist.all_gather_bucket %{{.*}}, %{{.*}} over @cluster ["dp"] : tensor<8xf32>, tensor<2xf32> -> tensor<5x3xf32>, tensor<3xf32>
func.func @zero_buckets(%w: tensor<5x3xf32>, %b: tensor<3xf32>) -> (tensor<5x3xf32>, tensor<3xf32>) {
  %cw, %cb = dist.reduce_scatter_bucket avg %w, %b over @cluster ["dp"] : tensor<5x3xf32>, tensor<3xf32> -> tensor<8xf32>, tensor<2xf32>
  %w2, %b2 = dist.all_gather_bucket %cw, %cb over @cluster ["dp"] : tensor<8xf32>, tensor<2xf32> -> tensor<5x3xf32>, tensor<3xf32>
  return %w2, %b2 : tensor<5x3xf32>, tensor<3xf32>
}
