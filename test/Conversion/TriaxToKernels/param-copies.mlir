// The bf16 copies of the parameters (triax.convert of triax.get_param,
// which triax-mixed-precision puts in every block that reads a weight: the
// forward block and the backward block of each layer) are made once per
// function, at its start, in order of first use; every later conversion of
// the same parameter reads that copy. With fuse-optimizer (the CUDA
// pipeline) the copies are one parallel loop over their concatenated
// elements (one launch), cut by kernel-param-bytes (80 bytes per copy).
// RUN: triax-opt %s --convert-triax-to-kernels | FileCheck %s
// RUN: triax-opt %s --convert-triax-to-kernels=fuse-optimizer | FileCheck %s --check-prefix=FUSED
// RUN: triax-opt %s --convert-triax-to-kernels='fuse-optimizer kernel-param-bytes=100' | FileCheck %s --check-prefix=CUT

triax.model @m config = #triax.train_config<micro_batch = 2, seq = 4, compute = bf16> {
  triax.param @emb : tensor<16x16xf32> init <normal, std = 0.02> decay
  triax.param @w : tensor<16x16xf32> init <normal, std = 0.02> decay
  triax.param @b : tensor<16xf32> init <zeros>
  func.func @forward(%tokens: tensor<2x4xi32>, %targets: tensor<2x4xi32>) -> tensor<f32> {
    %emb = triax.get_param @emb : tensor<16x16xf32>
    %e = triax.convert %emb : tensor<16x16xf32> to tensor<16x16xbf16>
    %x = triax.embedding %tokens, %e : (tensor<2x4xi32>, tensor<16x16xbf16>) -> tensor<2x4x16xbf16>
    %y = triax.block "h.0"(%x) : (tensor<2x4x16xbf16>) -> tensor<2x4x16xbf16> {
    ^bb0(%in: tensor<2x4x16xbf16>):
      %w = triax.get_param @w : tensor<16x16xf32>
      %wb = triax.convert %w : tensor<16x16xf32> to tensor<16x16xbf16>
      %b = triax.get_param @b : tensor<16xf32>
      %bb = triax.convert %b : tensor<16xf32> to tensor<16xbf16>
      %h = triax.linear %in, %wb, %bb : (tensor<2x4x16xbf16>, tensor<16x16xbf16>, tensor<16xbf16>) -> tensor<2x4x16xbf16>
      triax.yield %h : tensor<2x4x16xbf16>
    }
    %z = triax.block "h.1"(%y) : (tensor<2x4x16xbf16>) -> tensor<2x4x16xbf16> {
    ^bb0(%in: tensor<2x4x16xbf16>):
      %w = triax.get_param @w : tensor<16x16xf32>
      %wb = triax.convert %w : tensor<16x16xf32> to tensor<16x16xbf16>
      %b = triax.get_param @b : tensor<16xf32>
      %bb = triax.convert %b : tensor<16xf32> to tensor<16xbf16>
      %h = triax.linear %in, %wb, %bb : (tensor<2x4x16xbf16>, tensor<16x16xbf16>, tensor<16xbf16>) -> tensor<2x4x16xbf16>
      triax.yield %h : tensor<2x4x16xbf16>
    }
    %loss = triax.cross_entropy %z, %targets : (tensor<2x4x16xbf16>, tensor<2x4xi32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// Three copies (emb and w: 256 elements, b: 16), each one loop, before
// the embedding; both blocks' GEMMs read the same copies.
// CHECK-LABEL: func.func @triax_forward(
// CHECK: memref.alloc() : memref<16x16xbf16>
// CHECK: scf.parallel (%{{.*}}) = (%{{.*}}) to (%c256)
// CHECK: arith.truncf
// CHECK: memref.alloc() : memref<16x16xbf16>
// CHECK: scf.parallel (%{{.*}}) = (%{{.*}}) to (%c256
// CHECK: memref.alloc() : memref<16xbf16>
// CHECK: scf.parallel (%{{.*}}) = (%{{.*}}) to (%c16
// CHECK: arith.truncf
// CHECK: call @trx_gemm_bf16_bias(
// CHECK-NOT: memref.alloc() : memref<16x16xbf16>
// CHECK: call @trx_gemm_bf16_bias(
// CHECK: return

// One loop over 528 elements: emb's 256, w's 256, b's 16 (a tree of
// e < offset tests).
// FUSED-LABEL: func.func @triax_forward(
// FUSED: memref.alloc() : memref<16x16xbf16>
// FUSED: memref.alloc() : memref<16x16xbf16>
// FUSED: memref.alloc() : memref<16xbf16>
// FUSED: scf.parallel (%[[E:.*]]) = (%{{.*}}) to (%c528)
// FUSED: arith.cmpi ult, %[[E]], %c256
// FUSED: scf.if
// FUSED: arith.truncf
// FUSED: } else {
// FUSED: arith.subi %[[E]], %c256
// FUSED-NOT: scf.parallel (%{{.*}}) = (%{{.*}}) to (%c256
// FUSED: call @trx_gemm_bf16_bias(
// FUSED: call @trx_gemm_bf16_bias(
// FUSED: return

// 100 bytes of kernel parameters hold one copy (80 bytes): three loops.
// CUT-LABEL: func.func @triax_forward(
// CUT: scf.parallel (%{{.*}}) = (%{{.*}}) to (%c256)
// CUT: scf.parallel (%{{.*}}) = (%{{.*}}) to (%c256
// CUT: scf.parallel (%{{.*}}) = (%{{.*}}) to (%c16
// CUT: call @trx_gemm_bf16_bias(
