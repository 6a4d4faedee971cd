// convert-triax-to-kernels{fuse-optimizer}: the optimizer step's 20 AdamW
// updates of a one-layer tiny (70592 elements) are one parallel loop over
// their concatenated elements, each element dispatched to its parameter by
// a tree of `e < offset` tests; the bias corrections (the same betas and
// step) are computed once, not per parameter.
// RUN: triax-model tiny --layers 1 | triax-opt --triax-autodiff --convert-triax-to-kernels=fuse-optimizer | FileCheck %s
// The global norm's partial sums: one row-wise nest over the 29 rows of all
// gradients (4096 elements per row, a shorter gradient's row masked past
// its end), each row's gradient picked by selects on the row index, so the
// nest is still one row loop per iteration (one GPU block per row).
// CHECK-LABEL: func.func @triax_optimizer_step(
// CHECK: scf.parallel (%[[R:.*]]) = (%{{.*}}) to (%c29)
// CHECK: memref.cast %{{.*}} : memref<{{[0-9]+}}xf32> to memref<?xf32>
// CHECK: %[[AT:.*]] = arith.cmpi uge, %[[R]], %{{.*}} : index
// CHECK-NEXT: arith.select %[[AT]], %{{.*}}, %{{.*}} : memref<?xf32>
// CHECK: scf.for %{{.*}} = %{{.*}} to %c4096_{{[0-9]+}} {{.*}} iter_args
// CHECK: memref.store %{{.*}} : memref<29xf64>
// CHECK: math.powf
// CHECK: math.powf
// CHECK-NOT: math.powf
// CHECK: %[[N:.*]] = arith.constant 70592 : index
// CHECK: scf.parallel (%[[E:.*]]) = (%{{.*}}) to (%[[N]])
// CHECK: arith.cmpi ult, %[[E]], %{{.*}} : index
// CHECK-NEXT: scf.if
// CHECK-NOT: scf.parallel
// CHECK: return

// Parallel loops in the optimizer step: the global norm's partial sums
// over all 20 gradients' rows (one nest with the option, one per gradient
// without), one for the sum of their rows, the scaled norm and clipping
// scale's (one iteration) and the updates: one fused; without the option,
// one per parameter. kernel-param-bytes caps a launch's kernel parameters:
// 400 bytes hold two updates (48 shared + 2 x 160), so 10 loops, and the
// rows of 8 gradients (40 bytes each and the partial sums' 40), so 3; 100
// bytes, not even one: one update each and one gradient's rows each; 0 is
// no limit (the CPU pipeline's).
// RUN: triax-model tiny --layers 1 | triax-opt --triax-autodiff --convert-triax-to-kernels=fuse-optimizer | sed -n '/func.func @triax_optimizer_step(/,/^  }/p' | grep -c scf.parallel | FileCheck %s --check-prefix=ONE
// ONE: {{^}}4{{$}}
// RUN: triax-model tiny --layers 1 | triax-opt --triax-autodiff --convert-triax-to-kernels | sed -n '/func.func @triax_optimizer_step(/,/^  }/p' | grep -c scf.parallel | FileCheck %s --check-prefix=EACH
// EACH: {{^}}42{{$}}
// RUN: triax-model tiny --layers 1 | triax-opt --triax-autodiff --convert-triax-to-kernels='fuse-optimizer kernel-param-bytes=400' | sed -n '/func.func @triax_optimizer_step(/,/^  }/p' | grep -c scf.parallel | FileCheck %s --check-prefix=TEN
// TEN: {{^}}15{{$}}
// RUN: triax-model tiny --layers 1 | triax-opt --triax-autodiff --convert-triax-to-kernels='fuse-optimizer kernel-param-bytes=100' | sed -n '/func.func @triax_optimizer_step(/,/^  }/p' | grep -c scf.parallel | FileCheck %s --check-prefix=EACH
// RUN: triax-model tiny --layers 1 | triax-opt --triax-autodiff --convert-triax-to-kernels='fuse-optimizer kernel-param-bytes=0' | sed -n '/func.func @triax_optimizer_step(/,/^  }/p' | grep -c scf.parallel | FileCheck %s --check-prefix=ONE

// Under ZeRO-1 the updates (of this rank's chunks: 35296 elements over
// dp=2) stay consecutive, so they are one loop too, and the parameter
// gathers follow it.
// RUN: triax-model tiny --layers 1 | triax-opt --triax-autodiff --dist-zero='stage=1 dp=2 bucket-mb=0' --convert-triax-to-kernels=fuse-optimizer | FileCheck %s --check-prefix=ZERO
// ZERO-LABEL: func.func @triax_optimizer_step(
// ZERO: scf.parallel (%{{.*}}) = (%{{.*}}) to (%c35296)
// ZERO-NOT: scf.parallel
// ZERO: call @trx_zero_all_gather_param(%c0_i64
// ZERO-NOT: scf.parallel
// ZERO: call @trx_zero_all_gather_param(%c19_i64
// ZERO-NOT: scf.parallel
// ZERO: return
