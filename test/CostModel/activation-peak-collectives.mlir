// [A9] by hand with collectives whose dimension is not the outermost: the
// kernel conversion packs or unpacks their buffer through a group-major
// copy of the whole tensor (CollectiveKernels.cpp), which lives while the
// op runs (CostOpInterface::getScratchBytes of dist.all_gather,
// dist.reduce_scatter and dist.all_to_all).
// RUN: triax-report %s | FileCheck %s
//
//   op                                  allocates  scratch  live at the op
//   %x = embedding (2 x 4 x 4 f32)      128                 128
//   %a = all_to_all %x split 2 concat 1 128        128+128  256 + 256 = 512
//   %g = all_gather %a dim 2 (2x8x4)    256        256      384 + 256 = 640
//   %r = reduce_scatter %g dim 1        128        256      384 + 256 = 640
//   %l = linear %r (2 x 4 x 8 f32)      256                 384
//   %loss = cross_entropy %l            4                   260
// peak 640 at the all_gather and the reduce_scatter (384 without their
// copies: %a is still alive at the gather, %g at the reduce-scatter).
// CHECK: activation peak of one micro-batch from the IR's liveness: 640  [A9]

dist.mesh @mesh <["tp"=2]>
triax.model @m config = #triax.train_config<micro_batch = 2, seq = 4> {
  triax.param @emb : tensor<8x4xf32> init <normal, std = 0.02> decay
  func.func @forward(%tokens: tensor<2x4xi32>, %targets: tensor<2x4xi32>) -> tensor<f32> {
    %emb = triax.get_param @emb : tensor<8x4xf32>
    %x = triax.embedding %tokens, %emb : (tensor<2x4xi32>, tensor<8x4xf32>) -> tensor<2x4x4xf32>
    %a = dist.all_to_all %x over @mesh ["tp"] split 2 concat 1 : tensor<2x4x4xf32> -> tensor<2x8x2xf32>
    %g = dist.all_gather %a over @mesh ["tp"] dim 2 : tensor<2x8x2xf32> -> tensor<2x8x4xf32>
    %r = dist.reduce_scatter sum %g over @mesh ["tp"] dim 1 : tensor<2x8x4xf32> -> tensor<2x4x4xf32>
    %l = triax.linear %r, %emb {transpose_weight} : (tensor<2x4x4xf32>, tensor<8x4xf32>) -> tensor<2x4x8xf32>
    %loss = triax.cross_entropy %l, %targets : (tensor<2x4x8xf32>, tensor<2x4xi32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
  func.func @forward_backward(%tokens: tensor<2x4xi32>, %targets: tensor<2x4xi32>) -> tensor<f32> {
    %emb = triax.get_param @emb : tensor<8x4xf32>
    %x = triax.embedding %tokens, %emb : (tensor<2x4xi32>, tensor<8x4xf32>) -> tensor<2x4x4xf32>
    %a = dist.all_to_all %x over @mesh ["tp"] split 2 concat 1 : tensor<2x4x4xf32> -> tensor<2x8x2xf32>
    %g = dist.all_gather %a over @mesh ["tp"] dim 2 : tensor<2x8x2xf32> -> tensor<2x8x4xf32>
    %r = dist.reduce_scatter sum %g over @mesh ["tp"] dim 1 : tensor<2x8x4xf32> -> tensor<2x4x4xf32>
    %l = triax.linear %r, %emb {transpose_weight} : (tensor<2x4x4xf32>, tensor<8x4xf32>) -> tensor<2x4x8xf32>
    %loss = triax.cross_entropy %l, %targets : (tensor<2x4x8xf32>, tensor<2x4xi32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}
