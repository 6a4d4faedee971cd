// attention=flash-mma: FlashAttention-2 on tensor cores (AttentionMMA.cpp),
// for bf16 operands whose head dimension and sequence are multiples of 16;
// other shapes and f32 get the batched GEMMs (attention=batched-gemm). Numerics: the warp simulator
// of test/cuda/flash-mma-sim.test. No CUDA needed.
// RUN: triax-opt %s --convert-triax-to-kernels=attention=flash-mma > %t
// RUN: FileCheck %s --implicit-check-not=triax. < %t
// The MMAs per kernel (d = 16: one feature block, two 8-wide tiles):
// forward 2 for S = Q K^T and 2 for O += P V per key tile; backward
// kernel 1 the forward's 4, then 2 each for S, dP and dQ; kernel 2 per
// query head of the group (2): 2 each for S^T, dP^T, dK and dV.
// RUN: sed -n '/func.func @fwd(/,/^  }$/p' %t | grep -c nvvm.mma.sync | FileCheck %s --check-prefix=FWD-MMA
// FWD-MMA: {{^}}4{{$}}
// RUN: sed -n '/func.func @bwd(/,/^  }$/p' %t | grep -c nvvm.mma.sync | FileCheck %s --check-prefix=BWD-MMA
// BWD-MMA: {{^}}26{{$}}
// The B fragments come from the tiles a warp staged in shared memory, one
// ldmatrix.x4 per 16 x 16 block (d = 16: one feature block, one pair of
// 8-wide tiles): forward 1 for K^T and 1 for V per key tile; backward
// kernel 1 the forward's 2, then K^T, V^T and K; kernel 2 per query head
// of the group (2): Q^T, dO^T, Q and dO. A tile is 16 rows of 16-byte
// pieces, one per lane for d = 16: the forward stages 2 tiles per step
// (2 vector loads), the backward 2 + 2 in kernel 1 and 2 per query head
// in kernel 2; each staging is fenced by two bar.warp.sync.
// RUN: sed -n '/func.func @fwd(/,/^  }$/p' %t | grep -c nvvm.ldmatrix | FileCheck %s --check-prefix=FWD-LDM
// FWD-LDM: {{^}}2{{$}}
// RUN: sed -n '/func.func @bwd(/,/^  }$/p' %t | grep -c nvvm.ldmatrix | FileCheck %s --check-prefix=BWD-LDM
// BWD-LDM: {{^}}13{{$}}
// RUN: sed -n '/func.func @bwd(/,/^  }$/p' %t | grep -c 'vector.load' | FileCheck %s --check-prefix=BWD-LD
// BWD-LD: {{^}}8{{$}}
// RUN: sed -n '/func.func @bwd(/,/^  }$/p' %t | grep -c 'nvvm.bar.warp.sync' | FileCheck %s --check-prefix=BWD-SYNC
// BWD-SYNC: {{^}}8{{$}}
// With the forward's log-sum-exp saved (what triax-autodiff builds),
// kernel 1 reads L and O instead of running the forward's loop: 4 MMAs,
// 2 ldmatrix, 2 tile loads and 2 warp barriers fewer; the forward that
// returns it does the same MMAs as without.
// RUN: sed -n '/func.func @fwd_lse(/,/^  }$/p' %t | grep -c nvvm.mma.sync | FileCheck %s --check-prefix=FWD-MMA
// RUN: sed -n '/func.func @bwd_saved(/,/^  }$/p' %t | grep -c nvvm.mma.sync | FileCheck %s --check-prefix=SAVED-MMA
// SAVED-MMA: {{^}}22{{$}}
// RUN: sed -n '/func.func @bwd_saved(/,/^  }$/p' %t | grep -c nvvm.ldmatrix | FileCheck %s --check-prefix=SAVED-LDM
// SAVED-LDM: {{^}}11{{$}}
// RUN: sed -n '/func.func @bwd_saved(/,/^  }$/p' %t | grep -c 'vector.load' | FileCheck %s --check-prefix=SAVED-LD
// SAVED-LD: {{^}}6{{$}}
// RUN: sed -n '/func.func @bwd_saved(/,/^  }$/p' %t | grep -c 'nvvm.bar.warp.sync' | FileCheck %s --check-prefix=SAVED-SYNC
// SAVED-SYNC: {{^}}6{{$}}
// Outlined, the kernels' shared memory is 16-byte aligned
// (triax-merge-gpu-modules), as the vector stores and ldmatrix rows need.
// RUN: triax-opt %s --pass-pipeline='builtin.module(convert-triax-to-kernels{attention=flash-mma}, gpu-kernel-outlining, triax-merge-gpu-modules)' \
// RUN:   | FileCheck %s --check-prefix=ALIGN
// ALIGN: gpu.func @fwd_kernel({{.*}}) workgroup(%{{.*}} : memref<4x2x16x24xbf16, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}) kernel
// ALIGN: gpu.func @bwd_kernel({{.*}}) workgroup(%{{.*}} : memref<4x2x16x24xbf16, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}) kernel
// ALIGN: gpu.func @bwd_kernel_0({{.*}}) workgroup(%{{.*}} : memref<4x2x16x24xbf16, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}) kernel

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

// One warp per (b, head, 16 queries): 2 x 4 x 2 = 16 warps, 4 blocks of
// 128 threads; warps past the end guarded on the linear id. Each block
// holds [4 warps, 2 slots, 16 rows, d + 8] bf16 of shared memory. Key
// tiles 0..qt (causal): K and V staged (16-byte loads, then bar.warp.sync,
// stores into the warp's slots, bar.warp.sync), K^T's fragments by
// ldmatrix, the scores masked to -inf past the diagonal, row max and row
// sum over the 4 lanes of a group by xor-shuffles 1 and 2, V's fragments
// by ldmatrix.trans.
// CHECK-LABEL: func.func @fwd(
// CHECK-NOT: scf.parallel
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %c4, {{.*}}) threads({{.*}}) in ({{.*}} = %c128, {{.*}}) workgroup(%[[SMEM:.*]] : memref<4x2x16x24xbf16, #gpu.address_space<workgroup>>)
// CHECK: %[[ID:.*]] = arith.addi %{{.*}}, %{{.*}} : index
// CHECK: memref.extract_aligned_pointer_as_index %[[SMEM]]
// CHECK: %[[IN:.*]] = arith.cmpi ult, %[[ID]], %c512
// CHECK: scf.if %[[IN]]
// CHECK: scf.for
// CHECK: %[[K:.*]] = vector.load %{{.*}} {alignment = 16 : i64} : memref<64x32xbf16>, vector<8xbf16>
// CHECK: %[[V:.*]] = vector.load %{{.*}} {alignment = 16 : i64} : memref<64x32xbf16>, vector<8xbf16>
// CHECK: nvvm.bar.warp.sync
// CHECK: vector.store %[[K]], %[[SMEM]][%{{.*}}, %c0{{[_0-9]*}}, %{{.*}}, %{{.*}}] {alignment = 16 : i64}
// CHECK: vector.store %[[V]], %[[SMEM]][%{{.*}}, %c1{{[_0-9]*}}, %{{.*}}, %{{.*}}] {alignment = 16 : i64}
// CHECK: nvvm.bar.warp.sync
// CHECK: llvm.inttoptr %{{.*}} : i64 to !llvm.ptr<3>
// CHECK: nvvm.ldmatrix %{{.*}} {eltType = #nvvm.ld_st_matrix_elt_type<b16>, layout = #nvvm.mma_layout<row>, num = 4 : i32, shape = #nvvm.ld_st_matrix_shape<m = 8, n = 8>}
// CHECK: nvvm.mma.sync {{.*}}multiplicandAPtxType = #nvvm.mma_type<bf16>, multiplicandBPtxType = #nvvm.mma_type<bf16>, shape = #nvvm.shape<m = 16, n = 8, k = 16>} : (i32, i32, f32) -> !llvm.struct<(f32, f32, f32, f32)>
// CHECK: arith.cmpi ule
// CHECK: arith.select {{.*}}, %cst
// CHECK: gpu.shuffle  xor %{{.*}}, %c1_i32{{[_0-9]*}}, %c32_i32{{[_0-9]*}} : f32
// CHECK: gpu.shuffle  xor %{{.*}}, %c2_i32{{[_0-9]*}}, %c32_i32{{[_0-9]*}} : f32
// CHECK: math.exp
// CHECK: arith.truncf %{{.*}} : f32 to bf16
// CHECK: nvvm.ldmatrix %{{.*}} {eltType = #nvvm.ld_st_matrix_elt_type<b16>, layout = #nvvm.mma_layout<col>, num = 4 : i32
// CHECK: nvvm.mma.sync
// CHECK: scf.yield
// The output row: l summed over the group, O / l rounded to bf16.
// CHECK: gpu.shuffle  xor
// CHECK: gpu.shuffle  xor
// CHECK: memref.store %{{.*}} : memref<64x64xbf16>
// CHECK: gpu.terminator
func.func @fwd(%q: tensor<2x32x64xbf16>, %k: tensor<2x32x32xbf16>, %v: tensor<2x32x32xbf16>) -> tensor<2x32x64xbf16> {
  %o = triax.attention %q, %k, %v heads = 4 kv_heads = 2 : (tensor<2x32x64xbf16>, tensor<2x32x32xbf16>, tensor<2x32x32xbf16>) -> tensor<2x32x64xbf16>
  return %o : tensor<2x32x64xbf16>
}

// Backward: the rows' log-sum-exp and dO . O ([B, heads, S] f32 each),
// written by the first lane of each group in kernel 1 (16 query warps) and
// read by kernel 2 (a warp per (b, kv head, 16 keys): 2 x 2 x 2 = 8 warps,
// 2 blocks), whose loop over query tiles starts at its own key tile.
// CHECK-LABEL: func.func @bwd(
// CHECK: %[[LSE:.*]] = memref.alloc() : memref<2x4x32xf32>
// CHECK: %[[DELTA:.*]] = memref.alloc() : memref<2x4x32xf32>
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %c4,
// CHECK: math.log
// CHECK: scf.if
// CHECK: memref.store %{{.*}}, %[[LSE]]
// CHECK: memref.store %{{.*}}, %[[DELTA]]
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %c2,
// The f32 dO is staged as bf16 (rounded as the MMA operand is).
// CHECK: vector.load %{{.*}} {alignment = 16 : i64} : memref<64x64xf32>, vector<8xf32>
// CHECK: arith.truncf %{{.*}} : vector<8xf32> to vector<8xbf16>
// CHECK: memref.load %[[LSE]]
// CHECK: memref.load %[[DELTA]]
// CHECK-NOT: scf.parallel
func.func @bwd(%q: tensor<2x32x64xbf16>, %k: tensor<2x32x32xbf16>, %v: tensor<2x32x32xbf16>, %do: tensor<2x32x64xf32>) -> (tensor<2x32x64xbf16>, tensor<2x32x32xbf16>, tensor<2x32x32xbf16>) {
  %dq, %dk, %dv = triax.attention_grad %q, %k, %v, %do heads = 4 kv_heads = 2 : (tensor<2x32x64xbf16>, tensor<2x32x32xbf16>, tensor<2x32x32xbf16>, tensor<2x32x64xf32>) -> (tensor<2x32x64xbf16>, tensor<2x32x32xbf16>, tensor<2x32x32xbf16>)
  return %dq, %dk, %dv : tensor<2x32x64xbf16>, tensor<2x32x32xbf16>, tensor<2x32x32xbf16>
}

// f32 operands (and, the same way, a sequence or head dimension that is
// not a multiple of 16): batched GEMMs around the causal softmax (the
// scalar flash nest, one GPU thread per query row, took 23.9 s a step for
// gpt2 fp32 on the H200; AttentionKernels.cpp).
// CHECK-LABEL: func.func @fwd_f32(
// CHECK-NOT: gpu.launch
// CHECK: func.call @trx_sgemm_batched(
// CHECK: scf.parallel
// CHECK: func.call @trx_sgemm_batched(
// CHECK-NOT: nvvm.mma.sync
func.func @fwd_f32(%q: tensor<2x32x64xf32>, %k: tensor<2x32x32xf32>, %v: tensor<2x32x32xf32>) -> tensor<2x32x64xf32> {
  %o = triax.attention %q, %k, %v heads = 4 kv_heads = 2 : (tensor<2x32x64xf32>, tensor<2x32x32xf32>, tensor<2x32x32xf32>) -> tensor<2x32x64xf32>
  return %o : tensor<2x32x64xf32>
}

// The forward with its rows' log-sum-exp: L = m + log l, stored by the
// first lane of each group (t = 0) for the group's two rows.
// CHECK-LABEL: func.func @fwd_lse(
// CHECK: %[[L:.*]] = memref.alloc() : memref<2x4x32xf32>
// CHECK: gpu.launch
// CHECK: math.log
// CHECK: scf.if
// CHECK: memref.store %{{.*}}, %[[L]]
// CHECK: memref.store %{{.*}}, %[[L]]
// CHECK: gpu.terminator
// CHECK: return %{{.*}}, %[[L]] :
func.func @fwd_lse(%q: tensor<2x32x64xbf16>, %k: tensor<2x32x32xbf16>, %v: tensor<2x32x32xbf16>) -> (tensor<2x32x64xbf16>, tensor<2x4x32xf32>) {
  %o, %lse = triax.attention %q, %k, %v heads = 4 kv_heads = 2 : (tensor<2x32x64xbf16>, tensor<2x32x32xbf16>, tensor<2x32x32xbf16>) -> (tensor<2x32x64xbf16>, tensor<2x4x32xf32>)
  return %o, %lse : tensor<2x32x64xbf16>, tensor<2x4x32xf32>
}

// The backward from the saved L and O: kernel 1 loads L and reads the
// saved output for D (no log), and only D is allocated and stored; kernel
// 2 reads the saved L.
// CHECK-LABEL: func.func @bwd_saved(
// CHECK-SAME: %[[SL:[a-z0-9]+]]: memref<2x4x32xf32>)
// CHECK-NOT: memref.alloc() : memref<2x4x32xf32>
// CHECK: %[[DELTA:.*]] = memref.alloc() : memref<2x4x32xf32>
// CHECK-NOT: memref.alloc() : memref<2x4x32xf32>
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %c4,
// CHECK-NOT: math.log
// CHECK: memref.load %[[SL]]
// CHECK-NOT: math.log
// CHECK: memref.store %{{.*}}, %[[DELTA]]
// CHECK-NOT: math.log
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %c2,
// CHECK: memref.load %[[SL]]
// CHECK: memref.load %[[DELTA]]
func.func @bwd_saved(%q: tensor<2x32x64xbf16>, %k: tensor<2x32x32xbf16>, %v: tensor<2x32x32xbf16>, %do: tensor<2x32x64xf32>, %o: tensor<2x32x64xbf16>, %lse: tensor<2x4x32xf32>) -> (tensor<2x32x64xbf16>, tensor<2x32x32xbf16>, tensor<2x32x32xbf16>) {
  %dq, %dk, %dv = triax.attention_grad %q, %k, %v, %do saved(%o, %lse) heads = 4 kv_heads = 2 : (tensor<2x32x64xbf16>, tensor<2x32x32xbf16>, tensor<2x32x32xbf16>, tensor<2x32x64xf32>, tensor<2x32x64xbf16>, tensor<2x4x32xf32>) -> (tensor<2x32x64xbf16>, tensor<2x32x32xbf16>, tensor<2x32x32xbf16>)
  return %dq, %dk, %dv : tensor<2x32x64xbf16>, tensor<2x32x32xbf16>, tensor<2x32x32xbf16>
}
