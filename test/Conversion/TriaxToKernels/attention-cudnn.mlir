// attention=cudnn: a call of the runtime's fused attention (cuDNN on
// CUDA, runtime/lib/cuda/attention.cpp) for bf16 operands, and behind it,
// in an scf.if on its answer being non-zero (the library declined at run
// time: no cuDNN, TRX_CUDNN=0, a shape it refuses), the flash-mma
// kernels of attention-flash-mma.mlir. Ops the library cannot take get
// flash-mma's lowering alone. No CUDA needed.
// RUN: triax-opt %s --convert-triax-to-kernels=attention=cudnn > %t
// RUN: FileCheck %s --implicit-check-not=triax. < %t
// Behind each call the same kernels as attention=flash-mma: 4 MMAs forward,
// 22 in the backward from the saved L and O.
// RUN: sed -n '/func.func @fwd(/,/^  }$/p' %t | grep -c nvvm.mma.sync | FileCheck %s --check-prefix=FWD-MMA
// FWD-MMA: {{^}}4{{$}}
// RUN: sed -n '/func.func @bwd_saved(/,/^  }$/p' %t | grep -c nvvm.mma.sync | FileCheck %s --check-prefix=SAVED-MMA
// SAVED-MMA: {{^}}22{{$}}
// The CUDA pipeline accepts it where flash-mma's kernels can run (sm_80 on).
// RUN: not triax-opt %s --pass-pipeline='builtin.module(triax-lower-cuda{chip=sm_75 attention=cudnn})' 2>&1 | FileCheck %s --check-prefix=SM75
// SM75: attention 'cudnn' needs sm_80 or newer (bf16 mma.sync); sm_75 can use flash
// RUN: not triax-opt %s --convert-triax-to-kernels=attention=cudnn-v8 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: unknown attention 'cudnn-v8'; expected flash, flash-mma, batched-gemm or cudnn

// The declarations, from runtime/include/triax_entries.def: bf16 rows of
// any row stride, the f32 log-sum-exp flat, then batch, heads, kv heads and
// the scale; the answer an i32.
// CHECK-DAG: func.func private @trx_fused_attention(memref<?x?xbf16, strided<[?, ?], offset: ?>>, memref<?x?xbf16, strided<[?, ?], offset: ?>>, memref<?x?xbf16, strided<[?, ?], offset: ?>>, memref<?x?xbf16, strided<[?, ?], offset: ?>>, memref<?xf32>, i64, i64, i64, f32) -> i32 attributes {llvm.emit_c_interface}
// CHECK-DAG: func.func private @trx_fused_attention_grad(memref<?x?xbf16, strided<[?, ?], offset: ?>>, memref<?x?xbf16, strided<[?, ?], offset: ?>>, memref<?x?xbf16, strided<[?, ?], offset: ?>>, memref<?x?xbf16, strided<[?, ?], offset: ?>>, memref<?x?xbf16, strided<[?, ?], offset: ?>>, memref<?xf32>, memref<?x?xbf16, strided<[?, ?], offset: ?>>, memref<?x?xbf16, strided<[?, ?], offset: ?>>, memref<?x?xbf16, strided<[?, ?], offset: ?>>, i64, i64, i64, f32) -> i32 attributes {llvm.emit_c_interface}

// B = 2, S = 32, 4 query heads of d = 16 sharing 2 kv heads.
triax.model @m config = #triax.train_config<micro_batch = 2, seq = 32, global_batch = 2> {
  triax.param @w : tensor<4x2xf32> init <normal, std = 0.02>
  func.func @forward(%tokens: tensor<2x32xi32>, %targets: tensor<2x32xi32>) -> tensor<f32> {
    %w = triax.get_param @w : tensor<4x2xf32>
    %x = triax.embedding %tokens, %w : (tensor<2x32xi32>, tensor<4x2xf32>) -> tensor<2x32x2xf32>
    %l = triax.cross_entropy %x, %targets : (tensor<2x32x2xf32>, tensor<2x32xi32>) -> tensor<f32>
    return %l : tensor<f32>
  }
}

// Without an lse result the call writes one into a scratch buffer, freed
// after it (the fallback kernels do not need it).
// CHECK-LABEL: func.func @fwd(
// CHECK-SAME:    %[[Q:.*]]: memref<2x32x64xbf16>, %[[K:.*]]: memref<2x32x32xbf16>, %[[V:.*]]: memref<2x32x32xbf16>)
// CHECK:         %[[OUT:.*]] = memref.alloc() : memref<2x32x64xbf16>
// CHECK:         %[[QR:.*]] = memref.collapse_shape %[[Q]] {{\[\[}}0, 1], [2]] : memref<2x32x64xbf16> into memref<64x64xbf16>
// CHECK:         %[[OR:.*]] = memref.collapse_shape %[[OUT]]
// CHECK:         %[[LSE:.*]] = memref.alloc() : memref<2x4x32xf32>
// CHECK:         %[[QC:.*]] = memref.cast %[[QR]] : memref<64x64xbf16> to memref<?x?xbf16, strided<[?, ?], offset: ?>>
// CHECK:         %[[OC:.*]] = memref.cast %[[OR]]
// CHECK:         %[[LF:.*]] = memref.collapse_shape %[[LSE]] {{\[\[}}0, 1, 2]] : memref<2x4x32xf32> into memref<256xf32>
// CHECK:         %[[LC:.*]] = memref.cast %[[LF]] : memref<256xf32> to memref<?xf32>
// CHECK-DAG:     %[[B:.*]] = arith.constant 2 : i64
// CHECK-DAG:     %[[H:.*]] = arith.constant 4 : i64
// CHECK-DAG:     %[[SCALE:.*]] = arith.constant 2.500000e-01 : f32
// CHECK:         %[[ANS:.*]] = call @trx_fused_attention(%[[QC]], %{{.*}}, %{{.*}}, %[[OC]], %[[LC]], %[[B]], %[[H]], %{{.*}}, %[[SCALE]])
// CHECK-NEXT:    memref.dealloc %[[LSE]]
// CHECK:         %[[DECLINED:.*]] = arith.cmpi ne, %[[ANS]], %{{.*}} : i32
// CHECK-NEXT:    scf.if %[[DECLINED]] {
// CHECK:           gpu.launch
// CHECK:         return %[[OUT]]
func.func @fwd(%q: tensor<2x32x64xbf16>, %k: tensor<2x32x32xbf16>, %v: tensor<2x32x32xbf16>) -> tensor<2x32x64xbf16> {
  %o = triax.attention %q, %k, %v heads = 4 kv_heads = 2 : (tensor<2x32x64xbf16>, tensor<2x32x32xbf16>, tensor<2x32x32xbf16>) -> tensor<2x32x64xbf16>
  return %o : tensor<2x32x64xbf16>
}

// With the lse result the call writes it, and so do the kernels behind.
// CHECK-LABEL: func.func @fwd_lse(
// CHECK:         %[[L:.*]] = memref.alloc() : memref<2x4x32xf32>
// CHECK:         %[[LF:.*]] = memref.collapse_shape %[[L]]
// CHECK:         %[[LC:.*]] = memref.cast %[[LF]] : memref<256xf32> to memref<?xf32>
// CHECK:         call @trx_fused_attention(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[LC]],
// CHECK-NOT:     memref.dealloc %[[L]]
// CHECK:         scf.if
// CHECK:         return %{{.*}}, %[[L]]
func.func @fwd_lse(%q: tensor<2x32x64xbf16>, %k: tensor<2x32x32xbf16>, %v: tensor<2x32x32xbf16>) -> (tensor<2x32x64xbf16>, tensor<2x4x32xf32>) {
  %o, %lse = triax.attention %q, %k, %v heads = 4 kv_heads = 2 : (tensor<2x32x64xbf16>, tensor<2x32x32xbf16>, tensor<2x32x32xbf16>) -> (tensor<2x32x64xbf16>, tensor<2x4x32xf32>)
  return %o, %lse : tensor<2x32x64xbf16>, tensor<2x4x32xf32>
}

// The backward reads the saved output and log-sum-exp; the f32 upstream
// gradient is rounded into a bf16 copy for the call (the kernels behind it
// read the f32 one, as flash-mma does).
// CHECK-LABEL: func.func @bwd_saved(
// CHECK-SAME:    %{{.*}}: memref<2x32x64xf32>, %[[O:.*]]: memref<2x32x64xbf16>, %[[SL:.*]]: memref<2x4x32xf32>)
// CHECK:         %[[DOR:.*]] = memref.collapse_shape %{{.*}} : memref<2x32x64xf32> into memref<64x64xf32>
// CHECK:         %[[OR:.*]] = memref.collapse_shape %[[O]]
// CHECK:         %[[DO16:.*]] = memref.alloc() : memref<64x64xbf16>
// CHECK:         scf.parallel
// CHECK:           memref.load %[[DOR]]
// CHECK:           arith.truncf
// CHECK:           memref.store %{{.*}}, %[[DO16]]
// CHECK:         %[[OC:.*]] = memref.cast %[[OR]]
// CHECK:         %[[DOC:.*]] = memref.cast %[[DO16]]
// CHECK:         %[[SLF:.*]] = memref.collapse_shape %[[SL]]
// CHECK:         %[[SLC:.*]] = memref.cast %[[SLF]]
// CHECK:         %[[ANS:.*]] = call @trx_fused_attention_grad(%{{.*}}, %{{.*}}, %{{.*}}, %[[OC]], %[[DOC]], %[[SLC]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}})
// CHECK-NEXT:    memref.dealloc %[[DO16]]
// CHECK:         %[[DECLINED:.*]] = arith.cmpi ne, %[[ANS]]
// CHECK-NEXT:    scf.if %[[DECLINED]] {
// CHECK:           gpu.launch
// CHECK:           gpu.launch
func.func @bwd_saved(%q: tensor<2x32x64xbf16>, %k: tensor<2x32x32xbf16>, %v: tensor<2x32x32xbf16>, %do: tensor<2x32x64xf32>, %o: tensor<2x32x64xbf16>, %lse: tensor<2x4x32xf32>) -> (tensor<2x32x64xbf16>, tensor<2x32x32xbf16>, tensor<2x32x32xbf16>) {
  %dq, %dk, %dv = triax.attention_grad %q, %k, %v, %do saved(%o, %lse) heads = 4 kv_heads = 2 : (tensor<2x32x64xbf16>, tensor<2x32x32xbf16>, tensor<2x32x32xbf16>, tensor<2x32x64xf32>, tensor<2x32x64xbf16>, tensor<2x4x32xf32>) -> (tensor<2x32x64xbf16>, tensor<2x32x32xbf16>, tensor<2x32x32xbf16>)
  return %dq, %dk, %dv : tensor<2x32x64xbf16>, tensor<2x32x32xbf16>, tensor<2x32x32xbf16>
}

// Without the saved output and log-sum-exp (hand-written IR) the library's
// backward has nothing to read: flash-mma's kernels alone.
// CHECK-LABEL: func.func @bwd(
// CHECK-NOT:     call @trx_fused_attention
// CHECK:         gpu.launch
// CHECK-NOT:     call @trx_fused_attention
// CHECK:         return
func.func @bwd(%q: tensor<2x32x64xbf16>, %k: tensor<2x32x32xbf16>, %v: tensor<2x32x32xbf16>, %do: tensor<2x32x64xbf16>) -> (tensor<2x32x64xbf16>, tensor<2x32x32xbf16>, tensor<2x32x32xbf16>) {
  %dq, %dk, %dv = triax.attention_grad %q, %k, %v, %do heads = 4 kv_heads = 2 : (tensor<2x32x64xbf16>, tensor<2x32x32xbf16>, tensor<2x32x32xbf16>, tensor<2x32x64xbf16>) -> (tensor<2x32x64xbf16>, tensor<2x32x32xbf16>, tensor<2x32x32xbf16>)
  return %dq, %dk, %dv : tensor<2x32x64xbf16>, tensor<2x32x32xbf16>, tensor<2x32x32xbf16>
}

// f32 operands: not the library's; flash-mma's choice for them, the
// batched GEMMs around the causal softmax.
// CHECK-LABEL: func.func @fwd_f32(
// CHECK-NOT:     call @trx_fused_attention
// CHECK:         call @trx_sgemm_batched
// CHECK-NOT:     call @trx_fused_attention
// CHECK:         return
func.func @fwd_f32(%q: tensor<2x32x64xf32>, %k: tensor<2x32x32xf32>, %v: tensor<2x32x32xf32>) -> tensor<2x32x64xf32> {
  %o = triax.attention %q, %k, %v heads = 4 kv_heads = 2 : (tensor<2x32x64xf32>, tensor<2x32x32xf32>, tensor<2x32x32xf32>) -> tensor<2x32x64xf32>
  return %o : tensor<2x32x64xf32>
}

// bf16 operands with an f32 result: the entries take bf16 rows only, so
// flash-mma's kernels alone (their f32 output).
// CHECK-LABEL: func.func @fwd_f32_result(
// CHECK-NOT:     call @trx_fused_attention
// CHECK:         gpu.launch
// CHECK-NOT:     call @trx_fused_attention
// CHECK:         return
func.func @fwd_f32_result(%q: tensor<2x32x64xbf16>, %k: tensor<2x32x32xbf16>, %v: tensor<2x32x32xbf16>) -> tensor<2x32x64xf32> {
  %o = triax.attention %q, %k, %v heads = 4 kv_heads = 2 : (tensor<2x32x64xbf16>, tensor<2x32x32xbf16>, tensor<2x32x32xbf16>) -> tensor<2x32x64xf32>
  return %o : tensor<2x32x64xf32>
}
