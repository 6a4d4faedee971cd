// A true bf16 model (triax-model --dtype bf16; the ZeRO paper's mixed-
// precision Adam, 2 + 2 + 12 bytes per parameter): the parameter (state
// kind 0) and gradient (kind 3) buffers are read through the runtime's bf16
// views; AdamW widens the bf16 gradient, updates the f32 master copy (kind
// 4) and the f32 moments (kinds 1, 2), and stores the master's rounding
// (arith.truncf, to nearest even) into the bf16 parameter. Under ZeRO the
// same update runs on this rank's chunks, and the collectives move bf16.
// RUN: triax-model tiny --layers 1 --dtype bf16 | triax-opt --triax-autodiff --convert-triax-to-kernels | FileCheck %s
// RUN: triax-model tiny --layers 1 --dtype bf16 | triax-opt --triax-autodiff --dist-zero="stage=1 dp=2 bucket-mb=0" --convert-triax-to-kernels | FileCheck %s --check-prefix=Z1
// RUN: triax-model tiny --layers 1 --dtype bf16 | triax-opt --triax-autodiff --dist-zero="stage=2 dp=2 bucket-mb=0" --convert-triax-to-kernels | FileCheck %s --check-prefix=Z2
// RUN: triax-model tiny --layers 1 --dtype bf16 | triax-opt --triax-autodiff --dist-zero="stage=3 dp=2 bucket-mb=0" --convert-triax-to-kernels | FileCheck %s --check-prefix=Z3
// RUN: triax-model tiny --layers 1 --dtype bf16 | triax-opt --triax-autodiff --dist-data-parallel="dp=2" --convert-triax-to-kernels | FileCheck %s --check-prefix=DP
// accumulate-in-gemm (both pipelines set it): the embedding's gradient is
// summed over the tokens in an f32 table and rounded once as it is added
// to the bf16 gradient buffer (token by token in bf16, a frequent token's
// row would lose the terms below half an ulp of its running sum).
// RUN: triax-model tiny --layers 1 --dtype bf16 | triax-opt --triax-autodiff --convert-triax-to-kernels="accumulate-in-gemm=true" | FileCheck %s --check-prefix=ACC
// The model descriptor marks every parameter bf16 (the runtime allocates
// its buffers by it).
// RUN: triax-model tiny --layers 1 --dtype bf16 -o %t.mlir
// RUN: triaxc %t.mlir --emit=descriptor | FileCheck %s --check-prefix=DESC
// RUN: triax-model tiny --layers 1 -o %t32.mlir
// RUN: triaxc %t32.mlir --emit=descriptor | FileCheck %s --check-prefix=DESC32

// CHECK: func.func private @trx_state_bf16_1d(i32, i64) -> memref<?xbf16>
// CHECK: func.func private @trx_state_bf16_2d(i32, i64) -> memref<?x?xbf16>
// The forward reads wte through the bf16 view of kind 0.
// CHECK-LABEL: func.func @triax_forward_backward(
// CHECK: call @trx_state_bf16_2d(%c0_i32{{.*}}, %c0_i64{{.*}}) : (i32, i64) -> memref<?x?xbf16>
// CHECK-LABEL: func.func @triax_optimizer_step(
// The global norm reads the bf16 gradient buffers (kind 3).
// CHECK: call @trx_state_bf16_2d(%c3_i32{{.*}}, %c0_i64{{.*}})
// wte's update: the bf16 parameter, the f32 master copy, the f32 moments.
// CHECK: %[[P:.*]] = call @trx_state_bf16_2d(%c0_i32{{.*}}, %c0_i64{{.*}}) : (i32, i64) -> memref<?x?xbf16>
// CHECK: %[[PC:.*]] = memref.cast %[[P]] : memref<?x?xbf16> to memref<256x64xbf16>
// CHECK: %[[PF:.*]] = memref.collapse_shape %[[PC]] {{.*}} into memref<16384xbf16>
// CHECK: %[[W:.*]] = call @trx_state_2d(%c4_i32{{.*}}, %c0_i64{{.*}}) : (i32, i64) -> memref<?x?xf32>
// CHECK: %[[WC:.*]] = memref.cast %[[W]]
// CHECK: %[[WF:.*]] = memref.collapse_shape %[[WC]] {{.*}} into memref<16384xf32>
// CHECK: call @trx_state_2d(%c1_i32{{.*}}, %c0_i64{{.*}})
// CHECK: call @trx_state_2d(%c2_i32{{.*}}, %c0_i64{{.*}})
// CHECK: scf.parallel
// CHECK:   %[[G16:.*]] = memref.load %{{.*}} : memref<16384xbf16>
// CHECK:   arith.extf %[[G16]] : bf16 to f32
// CHECK:   %[[OLD:.*]] = memref.load %[[WF]][%{{.*}}] : memref<16384xf32>
// CHECK:   %[[NEW:.*]] = arith.select %{{.*}}, %{{.*}}, %[[OLD]] : f32
// CHECK:   memref.store %[[NEW]], %[[WF]][%{{.*}}] : memref<16384xf32>
// CHECK:   %[[R:.*]] = arith.truncf %[[NEW]] : f32 to bf16
// CHECK:   memref.store %[[R]], %[[PF]][%{{.*}}] : memref<16384xbf16>

// Data parallelism: the gradient buckets are reduced by the runtime, which
// reads each buffer's dtype from the descriptor.
// DP: call @trx_all_reduce_grads(

// ZeRO-1: at the optimizer step the bf16 gradients are reduce-scattered in
// bf16; AdamW updates this rank's chunks of the bf16 parameter (its padded
// replicated buffer), of the master copy and of the moments; the bf16
// chunks are gathered.
// Z1-LABEL: func.func @triax_optimizer_step(
// Z1: call @trx_reduce_scatter_bf16({{.*}}) : (memref<?xbf16>, memref<?xbf16>, i32, i64) -> ()
// Z1: call @trx_state_chunk_bf16(%c0_i32{{.*}}, %c0_i64{{.*}}) : (i32, i64) -> memref<?xbf16>
// Z1: call @trx_state_chunk(%c4_i32{{.*}}, %c0_i64{{.*}}) : (i32, i64) -> memref<?xf32>
// Z1: call @trx_state_chunk(%c1_i32{{.*}}, %c0_i64{{.*}}) : (i32, i64) -> memref<?xf32>
// Z1: call @trx_state_chunk(%c2_i32{{.*}}, %c0_i64{{.*}}) : (i32, i64) -> memref<?xf32>
// Z1: arith.truncf %{{.*}} : f32 to bf16
// Z1: call @trx_zero_all_gather_param(%c0_i64{{.*}}, %c1_i64{{.*}}) : (i64, i64) -> ()

// ZeRO-2: each gradient's bf16 reduce-scatter in a gradient region,
// accumulated into its bf16 gradient buffer (the chunk: a 1-D view).
// Z2-LABEL: func.func @triax_forward_backward(
// Z2: call @trx_comm_grads_begin()
// Z2: call @trx_reduce_scatter_bf16({{.*}}) : (memref<?xbf16>, memref<?xbf16>, i32, i64) -> ()
// Z2: call @trx_state_bf16_1d(%c3_i32{{.*}}

// ZeRO-3: the bf16 parameter chunk (a 1-D view) is gathered in bf16.
// Z3-LABEL: func.func @triax_forward_backward(
// Z3: %[[C:.*]] = call @trx_state_bf16_1d(%c0_i32, %c0_i64) : (i32, i64) -> memref<?xbf16>
// Z3: memref.cast %[[C]] : memref<?xbf16> to memref<8192xbf16>
// Z3: call @trx_all_gather_bf16({{.*}}) : (memref<?xbf16>, memref<?xbf16>, i64) -> ()
// Z3-LABEL: func.func @triax_optimizer_step(
// Z3: call @trx_state_chunk_bf16(%c0_i32{{.*}}, %c0_i64{{.*}})
// Z3: call @trx_state_chunk(%c4_i32{{.*}}, %c0_i64{{.*}})

// DESC: {.name = "wte.weight", {{.*}}, .dtype = TRX_BF16},
// DESC: {.name = "ln_f.bias", {{.*}}, .dtype = TRX_BF16},
// DESC32: {.name = "wte.weight", {{.*}}, .stage_axes = 0u},
// DESC32-NOT: TRX_BF16

// ACC-LABEL: func.func @triax_forward_backward(
// ACC: %[[TABLE:.*]] = memref.alloc() : memref<256x64xf32>
// ACC: scf.parallel
// ACC:   scf.for
// ACC:     %[[DY:.*]] = memref.load %{{.*}} : memref<512x64xbf16>
// ACC:     %[[DYF:.*]] = arith.extf %[[DY]] : bf16 to f32
// ACC:     %[[OLD:.*]] = memref.load %[[TABLE]][{{.*}}] : memref<256x64xf32>
// ACC:     %[[SUM:.*]] = arith.addf %[[OLD]], %[[DYF]] : f32
// ACC:     memref.store %[[SUM]], %[[TABLE]][{{.*}}] : memref<256x64xf32>
// ACC: call @trx_state_bf16_2d(%c3_i32{{.*}}, %c0_i64{{.*}})
// ACC: scf.parallel
// ACC:   %[[T:.*]] = memref.load %{{.*}} : memref<16384xf32>
// ACC:   %[[G:.*]] = memref.load %[[GRAD:.*]][%{{.*}}] : memref<16384xbf16>
// ACC:   %[[GF:.*]] = arith.extf %[[G]] : bf16 to f32
// ACC:   %[[NEW:.*]] = arith.addf %[[GF]], %[[T]] : f32
// ACC:   %[[R:.*]] = arith.truncf %[[NEW]] : f32 to bf16
// ACC:   memref.store %[[R]], %[[GRAD]][%{{.*}}] : memref<16384xbf16>
