// triax-parallelize with pp: dist-mesh, dist-tensor-parallel,
// triax-autodiff, dist-pipeline, then dist-data-parallel (after the flush,
// in each stage's optimizer step) or dist-zero{stage=1}.
// tiny with a batch of 32 in micro-batches of 8: 2 micro-batches per dp rank.
// RUN: triax-model tiny --batch 32 --micro-batch 8 > %t.mlir
// RUN: triax-opt %t.mlir --pass-pipeline='builtin.module(triax-parallelize{mesh=dp=2,pp=2,tp=2 schedule=gpipe stage-layers=1,1})' | FileCheck %s
// RUN: triax-opt %t.mlir --pass-pipeline='builtin.module(triax-parallelize{mesh=dp=2,pp=2 zero=1 microbatches=2})' | FileCheck %s --check-prefix=ZERO1

// CHECK: dist.mesh @mesh <["dp"=2, "pp"=2, "tp"=2]>
// CHECK: triax.param @wte.weight : tensor<256x64xf32> {{.*}}dist.stage = 0 : i64, dist.tied_stages = array<i64: 0, 1>
// CHECK: triax.param @h.0.mlp.c_fc.weight : tensor<64x256xf32> {{.*}}dist.sharding = #dist.sharding<@mesh, [{}, {"tp"}]>, dist.stage = 0 : i64
// CHECK: triax.param @h.1.mlp.c_fc.weight : tensor<64x256xf32> {{.*}}dist.stage = 1 : i64
// The tensor-parallel forward, then no gradient bucket in @forward_backward:
// CHECK-LABEL: func.func @forward_backward
// CHECK: dist.copy_to_group
// CHECK-NOT: dist.all_reduce_grads
// CHECK-LABEL: func.func @optimizer_step
// CHECK: %[[S:.*]] = dist.axis_index @mesh ["pp"] : index
// CHECK: scf.index_switch %[[S]] -> f32
// CHECK: case 0 {
// CHECK-NEXT: dist.all_reduce_grads avg [@wte.weight, @wpe.weight, {{.*}}, @h.0.mlp.c_proj.bias] over @mesh ["dp"]
// CHECK-NEXT: %[[W:.*]] = triax.get_grad @wte.weight : tensor<128x64xf32>
// 2 micro-batches: schedule tags 0..3, the exchange's 4.
// CHECK-NEXT: dist.send %[[W]] over @mesh ["pp"] to 1 tag 4 : tensor<128x64xf32>
// CHECK: triax.global_norm {{.*}} partial over @mesh ["pp", "tp"] replicas [2,
// CHECK: case 1 {
// CHECK-NEXT: dist.all_reduce_grads avg [@wte.weight, @h.1.ln_1.weight, {{.*}}, @ln_f.bias] over @mesh ["dp"]
// CHECK-NEXT: %[[W1:.*]] = triax.get_grad @wte.weight : tensor<128x64xf32>
// CHECK-NEXT: dist.recv over @mesh ["pp"] from 0 tag 4 : tensor<128x64xf32>
// CHECK-LABEL: func.func @stage0_forward(%arg0: tensor<8x64xi32>)
// CHECK-LABEL: func.func @pipeline_step(%arg0: tensor<16x64xi32>, %arg1: tensor<16x64xi32>) -> f32

// ZERO1: dist.mesh @mesh <["dp"=2, "pp"=2]>
// ZERO1: triax.param @wte.weight {{.*}}dist.stage = 0 : i64, dist.tied_stages = array<i64: 0, 1>, dist.zero = #dist.zero<@mesh, ["dp"], stage = 1>
// ZERO1-LABEL: func.func @optimizer_step
// ZERO1: case 0 {
// ZERO1: %[[SUM:.*]] = triax.add
// ZERO1: dist.reduce_scatter_bucket avg %[[SUM]], {{.*}} over @mesh ["dp"] : tensor<256x64xf32>, {{.*}} -> tensor<8192xf32>,
// ZERO1: triax.global_norm {{.*}} partial over @mesh ["pp", "dp"] replicas [2,
// ZERO1: dist.all_gather_params [@wte.weight, {{.*}}] over @mesh ["dp"]
// ZERO1-LABEL: func.func @pipeline_step(%arg0: tensor<16x64xi32>, %arg1: tensor<16x64xi32>) -> f32

// What the model decides is checked by the passes, what the options alone
// decide by triax-parallelize first.
// RUN: not triax-opt %t.mlir --pass-pipeline='builtin.module(triax-parallelize{mesh=pp=3})' 2>&1 | FileCheck %s --check-prefix=BLOCKS
// BLOCKS: error: dist-pipeline: pp=3 stages but model @tiny has 2 blocks; every stage needs at least one
// RUN: not triax-opt %t.mlir --pass-pipeline='builtin.module(triax-parallelize{mesh=dp=4,pp=2})' 2>&1 | FileCheck %s --check-prefix=FEW
// FEW: error: dist-pipeline: 1f1b needs microbatches >= pp, got microbatches=1 and pp=2 (use more micro-batches or gpipe)
// RUN: not triax-opt %t.mlir --pass-pipeline='builtin.module(triax-parallelize{mesh=pp=2 microbatches=2})' 2>&1 | FileCheck %s --check-prefix=MISMATCH
// MISMATCH: error: dist-pipeline: microbatches=2 but model @tiny accumulates global_batch / (micro_batch x dp) = 32 / (8 x 1) = 4 micro-batches per step; set the batch with triax-model --batch 16 --micro-batch 8 (or leave microbatches unset)
// RUN: not triax-opt %t.mlir --pass-pipeline='builtin.module(triax-parallelize{mesh=dp=3,pp=2})' 2>&1 | FileCheck %s --check-prefix=DIVIDE
// DIVIDE: error: dist-pipeline: model @tiny's global batch 32 is not a multiple of micro_batch x dp = 8 x 3; choose the batch with triax-model --batch B --micro-batch b (B a multiple of b x dp)
// RUN: not triax-opt %t.mlir --pass-pipeline='builtin.module(triax-parallelize{mesh=dp=2,pp=2 zero=3})' 2>&1 | FileCheck %s --check-prefix=ZERO3
// ZERO3: triax-parallelize: ZeRO-3 with pipeline parallelism (pp=2) is not supported (DeepSpeed refuses it too); use zero=1
// RUN: not triax-opt %t.mlir --pass-pipeline='builtin.module(triax-parallelize{mesh=pp=2 schedule=zb})' 2>&1 | FileCheck %s --check-prefix=SCHED
// SCHED: triax-parallelize: unknown schedule 'zb'; expected gpipe, 1f1b, interleaved or zb-h1
// RUN: not triax-opt %t.mlir --pass-pipeline='builtin.module(triax-parallelize{mesh=dp=2 microbatches=2})' 2>&1 | FileCheck %s --check-prefix=NOPP
// NOPP: triax-parallelize: microbatches, schedule, virtual-stages and stage-layers apply to pipeline parallelism (pp >= 2; the mesh has none)
// RUN: not triax-opt %t.mlir --pass-pipeline='builtin.module(triax-parallelize{mesh=dp=2 schedule=gpipe})' 2>&1 | FileCheck %s --check-prefix=NOPP
// RUN: not triax-opt %t.mlir --pass-pipeline='builtin.module(triax-parallelize{mesh=pp=2 microbatches=-1})' 2>&1 | FileCheck %s --check-prefix=NEG
// NEG: triax-parallelize: microbatches=-1 is not a count (expected >= 1, or 0: the model's)
// RUN: not triax-opt %t.mlir --pass-pipeline='builtin.module(triax-parallelize{mesh=pp=2,tp=2 schedule=zb-h1 carry-gathered=true})' 2>&1 | FileCheck %s --check-prefix=CARRY
// RUN: not triax-opt %t.mlir --pass-pipeline='builtin.module(triax-parallelize{mesh=pp=2,tp=2 sequence-parallel=true carry-gathered=true})' 2>&1 | FileCheck %s --check-prefix=CARRY
// CARRY: triax-parallelize: carry-gathered applies to the zb-h1 schedule with sequence parallelism (its W pass's all_gathers)
