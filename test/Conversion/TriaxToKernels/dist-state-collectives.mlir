// The lowering of ZeRO's and data parallelism's collectives to the runtime
// (RuntimeABI.h): flat-chunk reduce_scatter / all_gather on contiguous
// buffers, AdamW on this rank's chunks (trx_state_chunk), the in-place
// parameter gather, and the gradient buckets. Axis mask 1 = the mesh's
// first axis ("dp").
// RUN: triax-model tiny --layers 1 | triax-opt --triax-autodiff --dist-zero="stage=1 dp=2 bucket-mb=0" --convert-triax-to-kernels | FileCheck %s --check-prefix=Z1
// RUN: triax-model tiny --layers 1 | triax-opt --triax-autodiff --dist-zero="stage=2 dp=2 bucket-mb=0" --convert-triax-to-kernels | FileCheck %s --check-prefix=Z2
// RUN: triax-model tiny --layers 1 | triax-opt --triax-autodiff --dist-zero="stage=3 dp=2 bucket-mb=0" --convert-triax-to-kernels | FileCheck %s --check-prefix=Z3
// RUN: triax-model tiny --layers 1 | triax-opt --triax-autodiff --dist-data-parallel="dp=2" --convert-triax-to-kernels | FileCheck %s --check-prefix=DP

// Stage 1, the step: wte's 256x64 gradient buffer (state 3) reduce-scattered
// into a fresh 8192-element chunk; AdamW reads the parameter (0) and
// moment (1, 2) chunks; then the parameter is gathered in place.
// Z1-LABEL: func.func @triax_optimizer_step(
// Z1: %[[G:.*]] = call @trx_state_2d(%c3_i32{{.*}}, %c0_i64{{.*}})
// Z1: %[[C:.*]] = memref.alloc() : memref<8192xf32>
// Z1: %[[IN:.*]] = memref.cast %{{.*}} : memref<16384xf32> to memref<?xf32>
// Z1: %[[OUT:.*]] = memref.cast %[[C]] : memref<8192xf32> to memref<?xf32>
// Z1: call @trx_reduce_scatter_f32(%[[IN]], %[[OUT]], %c1_i32{{.*}}, %c1_i64{{.*}})
// Z1: call @trx_state_chunk(%c0_i32{{.*}}, %c0_i64{{.*}}) : (i32, i64) -> memref<?xf32>
// Z1: call @trx_state_chunk(%c1_i32{{.*}}, %c0_i64{{.*}}) : (i32, i64) -> memref<?xf32>
// Z1: call @trx_state_chunk(%c2_i32{{.*}}, %c0_i64{{.*}}) : (i32, i64) -> memref<?xf32>
// Z1: call @trx_zero_all_gather_param(%c0_i64{{.*}}, %c1_i64{{.*}}) : (i64, i64) -> ()

// Stage 2, backward: each gradient's reduce-scatter and the accumulation of
// its chunk into the (chunk-sized) gradient buffer form one gradient region
// (trx_comm_grads_begin/end: on CUDA with NCCL they run on the
// communication stream while backward goes on); the chunk is allocated
// before it, the gradient and the chunk are freed inside it (the
// allocator hands them out again only behind the region's work).
// Z2-LABEL: func.func @triax_forward_backward(
// Z2: %[[CH:.*]] = memref.alloc() : memref<32xf32>
// Z2-NEXT: call @trx_comm_grads_begin() : () -> ()
// Z2-NEXT: %[[IN:.*]] = memref.cast %[[G:.*]] : memref<64xf32> to memref<?xf32>
// Z2-NEXT: %[[OUT:.*]] = memref.cast %[[CH]] : memref<32xf32> to memref<?xf32>
// Z2: call @trx_reduce_scatter_f32(%[[IN]], %[[OUT]], %c1_i32{{.*}}, %c1_i64{{.*}})
// Z2-NEXT: memref.dealloc %[[G]] : memref<64xf32>
// Z2: %[[ST:.*]] = call @trx_state_1d(%c3_i32{{.*}}, %c18_i64{{.*}})
// Z2: scf.parallel
// Z2: memref.load %[[CH]]
// Z2: arith.addf
// Z2: memref.dealloc %[[CH]] : memref<32xf32>
// Z2-NEXT: call @trx_comm_grads_end() : () -> ()
// Every gradient gets one (20 parameters, one accumulation each).
// RUN: triax-model tiny --layers 1 | triax-opt --triax-autodiff --dist-zero="stage=2 dp=2 bucket-mb=0" --convert-triax-to-kernels | grep -c 'call @trx_comm_grads_begin' | FileCheck %s --check-prefix=REGIONS
// REGIONS: {{^}}20{{$}}
// Stage 1 reduces in the optimizer step, outside any region.
// RUN: triax-model tiny --layers 1 | triax-opt --triax-autodiff --dist-zero="stage=1 dp=2 bucket-mb=0" --convert-triax-to-kernels | not grep 'call @trx_comm_grads'

// Stage 3: wte is read as its 8192-element chunk (a 1-D state view) and
// gathered into a 256x64 buffer before the embedding.
// Z3-LABEL: func.func @triax_forward(
// Z3: %[[W:.*]] = call @trx_state_1d(%c0_i32{{.*}}, %c0_i64{{.*}}) : (i32, i64) -> memref<?xf32>
// Z3: %[[WC:.*]] = memref.cast %[[W]] : memref<?xf32> to memref<8192xf32>
// Z3: %[[WHOLE:.*]] = memref.alloc() : memref<256x64xf32>
// Z3: call @trx_all_gather_f32({{.*}}, {{.*}}, %c1_i64{{.*}}) : (memref<?xf32>, memref<?xf32>, i64) -> ()
// The gathered c_fc weight (64x256) lives from its gather to its GEMM (with
// the GELU epilogue) and is freed right after.
// Z3: %[[FC:.*]] = memref.alloc() : memref<64x256xf32>
// Z3: call @trx_all_gather_f32
// Z3: %[[FCV:.*]] = memref.cast %[[FC]] : memref<64x256xf32> to memref<?x?xf32, strided<[?, ?], offset: ?>>
// Z3: call @trx_sgemm_bias_gelu({{.*}}, %[[FCV]],
// Z3: memref.dealloc %[[FC]] : memref<64x256xf32>

// Data parallelism: one bucket (the default 25 MiB holds them all) of the
// 20 parameters' indices, in the order their gradients are produced,
// reduced by avg (1) over dp in the training step, none in the optimizer
// step.
// The indices are a constant table (host memory the runtime reads).
// DP: memref.global "private" constant @[[TABLE:triax_forward_backward_table]] : memref<20xi64> = dense<[
// DP-LABEL: func.func @triax_forward_backward(
// DP: %[[IDX:.*]] = memref.get_global @[[TABLE]] : memref<20xi64>
// DP: %[[V:.*]] = memref.cast %[[IDX]] : memref<20xi64> to memref<?xi64>
// DP: call @trx_all_reduce_grads(%[[V]], %c1_i32{{.*}}, %c1_i64{{.*}}) : (memref<?xi64>, i32, i64) -> ()
// DP-LABEL: func.func @triax_optimizer_step(
// DP-NOT: call @trx_all_reduce
// DP: return
