// convert-triax-to-kernels{gelu-epilogue} (the default): the MLP's GELU is
// the epilogue of the biased c_fc GEMM before it, and its gradient the
// epilogue of the GEMM that produces its upstream gradient (dy W_proj^T).
// RUN: triax-model tiny --layers 1 | triax-opt --triax-autodiff --triax-fuse-elementwise --convert-triax-to-kernels | FileCheck %s
// RUN: triax-model tiny --layers 1 | triax-opt --triax-autodiff --triax-mixed-precision=compute=bf16 --triax-fuse-elementwise --convert-triax-to-kernels | FileCheck %s --check-prefix=BF16
// RUN: triax-model tiny --layers 1 | triax-opt --triax-autodiff --triax-fuse-elementwise --convert-triax-to-kernels=gelu-epilogue=false | FileCheck %s --check-prefix=OFF
// RUN: triax-model tiny --layers 1 | triax-opt --triax-autodiff --triax-recompute=mode=full --triax-fuse-elementwise --convert-triax-to-kernels | FileCheck %s --check-prefix=FULL

// Forward: one GEMM writes the pre-activation (aux, 512x256, kept for the
// backward) and gelu of it (C); no GELU loop (math.tanh) is left.
// CHECK-LABEL: func.func @triax_forward_backward(
// CHECK: %[[H:.*]] = memref.alloc() : memref<8x64x256xf32>
// CHECK-NEXT: %[[G:.*]] = memref.alloc() : memref<8x64x256xf32>
// CHECK-NEXT: %[[HR:.*]] = memref.collapse_shape %[[H]] {{\[}}[0, 1], [2]] : memref<8x64x256xf32> into memref<512x256xf32>
// CHECK-NEXT: %[[GR:.*]] = memref.collapse_shape %[[G]] {{\[}}[0, 1], [2]]
// CHECK: %[[C:.*]] = memref.cast %[[GR]]
// CHECK: %[[BIAS:.*]] = memref.cast %{{.*}} : memref<256xf32> to memref<?xf32>
// CHECK: %[[AUX:.*]] = memref.cast %[[HR]]
// CHECK: call @trx_sgemm_bias_gelu(%{{.*}}, %{{.*}}, %[[C]], %[[BIAS]], %[[AUX]], %c0_i32{{.*}}, %c0_i32{{.*}}, %cst{{.*}})
// CHECK-NOT: memref.dealloc %[[H]]
// CHECK-NOT: math.tanh
// Backward: the GEMM dy W_proj^T (transB) multiplies by gelu'(h) in its
// epilogue, h being the saved pre-activation; then h is freed.
// CHECK: %[[HR2:.*]] = memref.collapse_shape %[[H]] {{\[}}[0, 1], [2]]
// CHECK: %[[AUX2:.*]] = memref.cast %[[HR2]]
// CHECK-NEXT: %c0_i32{{.*}} = arith.constant 0 : i32
// CHECK-NEXT: %c1_i32{{.*}} = arith.constant 1 : i32
// CHECK: call @trx_sgemm_dgelu(%{{.*}}, %{{.*}}, %{{.*}}, %[[AUX2]], %c0_i32{{.*}}, %c1_i32{{.*}}, %cst{{.*}})
// CHECK-NEXT: memref.dealloc %[[H]]
// CHECK-NOT: math.tanh
// CHECK: return

// bf16 compute: the bf16 entries (fp32 accumulation), same shapes.
// BF16-LABEL: func.func @triax_forward_backward(
// BF16: call @trx_gemm_bf16_bias_gelu({{.*}}) : (memref<?x?xbf16, {{.*}}>, memref<?x?xbf16, {{.*}}>, memref<?x?xbf16, {{.*}}>, memref<?xbf16>, memref<?x?xbf16, {{.*}}>, i32, i32, f32) -> ()
// BF16: call @trx_gemm_bf16_dgelu({{.*}}) : (memref<?x?xbf16, {{.*}}>, memref<?x?xbf16, {{.*}}>, memref<?x?xbf16, {{.*}}>, memref<?x?xbf16, {{.*}}>, i32, i32, f32) -> ()

// Off: the bias GEMM, then GELU (and later its gradient) as loops.
// OFF-LABEL: func.func @triax_forward_backward(
// OFF-NOT: call @trx_sgemm_bias_gelu
// OFF: call @trx_sgemm_bias(
// OFF: math.tanh
// OFF-NOT: call @trx_sgemm_dgelu
// OFF: math.tanh
// OFF: return

// Full recomputation: the backward block recomputes the pre-activation
// after the GEMM of the upstream gradient, so that GEMM cannot read it:
// the forward and the recomputed forward use the GELU epilogue, the
// gradient stays a loop.
// FULL-LABEL: func.func @triax_forward_backward(
// FULL: call @trx_sgemm_bias_gelu(
// FULL: call @trx_sgemm_bias_gelu(
// FULL-NOT: call @trx_sgemm_dgelu
// FULL: return
