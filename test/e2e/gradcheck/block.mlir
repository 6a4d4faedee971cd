// Gradient check of position_ids with a learned position embedding, and a triax.block (backward block with its activations): the compiled backward against central finite
// differences of the compiled forward, every parameter, 3 directions each
// (f32; tolerance 1e-2 relative, see --gradcheck in runtime/README.md).
// RUN: triaxc %s -o %t && %t --gradcheck 3 | FileCheck %s
// CHECK: gradcheck: 0 of {{[0-9]+}} tensors over tolerance
triax.model @block config = #triax.train_config<micro_batch = 2, seq = 8, grad_clip = 0.0> {
  triax.param @wte : tensor<256x16xf32> init <normal, std = 0.5> decay
  triax.param @wpe : tensor<8x16xf32> init <normal, std = 0.5> decay
  triax.param @w : tensor<16x16xf32> init <normal, std = 0.5> decay
  func.func @forward(%tokens: tensor<2x8xi32>, %targets: tensor<2x8xi32>) -> tensor<f32> {
    %wte = triax.get_param @wte : tensor<256x16xf32>
    %x = triax.embedding %tokens, %wte : (tensor<2x8xi32>, tensor<256x16xf32>) -> tensor<2x8x16xf32>
    %wpe = triax.get_param @wpe : tensor<8x16xf32>
    %pos = triax.position_ids : tensor<2x8xi32>
    %pe = triax.embedding %pos, %wpe : (tensor<2x8xi32>, tensor<8x16xf32>) -> tensor<2x8x16xf32>
    %x1 = triax.add %x, %pe : tensor<2x8x16xf32>
    %y = triax.block "blk" (%x1) : (tensor<2x8x16xf32>) -> tensor<2x8x16xf32> {
    ^bb0(%in: tensor<2x8x16xf32>):
      %w = triax.get_param @w : tensor<16x16xf32>
      %h = triax.linear %in, %w : (tensor<2x8x16xf32>, tensor<16x16xf32>) -> tensor<2x8x16xf32>
      %g = triax.gelu %h : tensor<2x8x16xf32>
      %r = triax.add %in, %g : tensor<2x8x16xf32>
      triax.yield %r : tensor<2x8x16xf32>
    }
    %logits = triax.linear %y, %wte {transpose_weight} : (tensor<2x8x16xf32>, tensor<256x16xf32>) -> tensor<2x8x256xf32>
    %loss = triax.cross_entropy %logits, %targets : (tensor<2x8x256xf32>, tensor<2x8xi32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}
