// triax-parallelize: the mesh, tensor parallelism before autodiff, ZeRO or
// data parallelism after it, from one set of options (what triaxc --mesh
// --zero runs).
// RUN: triax-model tiny --layers 1 | triax-opt --pass-pipeline='builtin.module(triax-parallelize{mesh=dp=2,tp=2 zero=1})' | FileCheck %s
// RUN: triax-model tiny --layers 1 | triax-opt --pass-pipeline='builtin.module(triax-parallelize{mesh=dp=2})' | FileCheck %s --check-prefix=DP
// Pipeline parallelism: parallelize-pipeline.mlir.
// RUN: not triax-opt %s --pass-pipeline='builtin.module(triax-parallelize{mesh=dp=2,pp=2 zero=2})' 2>&1 | FileCheck %s --check-prefix=PP
// RUN: not triax-opt %s --pass-pipeline='builtin.module(triax-parallelize{zero=2})' 2>&1 | FileCheck %s --check-prefix=ZERO
// RUN: not triax-opt %s --pass-pipeline='builtin.module(triax-parallelize{mesh=tp=0})' 2>&1 | FileCheck %s --check-prefix=SIZE
// RUN: not triax-opt %s --pass-pipeline='builtin.module(triax-parallelize{mesh=dp=2 sequence-parallel=true})' 2>&1 | FileCheck %s --check-prefix=SP

// CHECK: dist.mesh @mesh <["dp"=2, "tp"=2]>
// CHECK: triax.param @h.0.mlp.c_fc.weight : tensor<64x256xf32> {{.*}}dist.sharding = #dist.sharding<@mesh, [{}, {"tp"}]>, dist.zero = #dist.zero<@mesh, ["dp"], stage = 1>
// CHECK-LABEL: func.func @forward_backward
// CHECK: dist.copy_to_group
// CHECK-LABEL: func.func @optimizer_step
// CHECK: %[[G:.*]] = triax.get_grad @h.0.mlp.c_fc.weight : tensor<64x128xf32>
// ZeRO's collectives in buckets of 25 MiB (this model's are one):
// CHECK: dist.reduce_scatter_bucket avg {{.*}}, %[[G]], {{.*}} over @mesh ["dp"] : {{.*}}, tensor<64x128xf32>, {{.*}} -> {{.*}}, tensor<4096xf32>,
// CHECK: triax.global_norm {{.*}} partial over @mesh ["tp", "dp"] replicas [
// CHECK: dist.all_gather_params [{{.*}}, @h.0.mlp.c_fc.weight, {{.*}}] over @mesh ["dp"]

// DP: dist.mesh @mesh <["dp"=2]>
// DP-LABEL: func.func @forward_backward
// DP: dist.all_reduce_grads avg

// PP: triax-parallelize: ZeRO-2 with pipeline parallelism (pp=2) is not supported (DeepSpeed refuses it too); use zero=1
// ZERO: triax-parallelize: ZeRO shards the training state over data-parallel ranks (dp x cp): zero=2 needs dp >= 2 or cp >= 2 (dp=1, cp=1)
// SIZE: triax-parallelize: mesh=tp=0: expected axis=size items such as dp=2,pp=2,tp=2 (sizes >= 1), got 'tp=0'
// SP: triax-parallelize: sequence parallelism splits the sequence over tensor-parallel ranks: sequence-parallel needs tp >= 2 (tp=1)
module {
}
