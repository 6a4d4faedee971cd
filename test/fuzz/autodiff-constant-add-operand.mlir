// Found by triax-fuzz: triax-autodiff on a forward that adds a constant
// ended the process (SIGSEGV in every build). triax.add's VJP hands the
// incoming gradient to both operands; for the constant, autodiff erased the
// op that computed it as dead, though it was also the other operand's
// gradient, and the embedding's VJP then used the erased op.
// RUN: triax-opt --triax-autodiff %s | FileCheck %s
// CHECK-LABEL: func.func @forward_backward
// CHECK: %[[DX:.*]] = triax.linear %{{.*}}, %{{.*}} : (tensor<1x2x4xf32>, tensor<4x2xf32>) -> tensor<1x2x2xf32>
// CHECK: triax.embedding_grad %{{.*}}, %[[DX]] :

triax.model @m config = #triax.train_config<micro_batch = 1, seq = 2> {
  triax.param @emb : tensor<4x2xf32> init <normal, std = 0.02>
  func.func @forward(%tokens: tensor<1x2xi32>, %targets: tensor<1x2xi32>) -> tensor<f32> {
    %emb = triax.get_param @emb : tensor<4x2xf32>
    %x = triax.embedding %tokens, %emb : (tensor<1x2xi32>, tensor<4x2xf32>) -> tensor<1x2x2xf32>
    %c = arith.constant dense<1.0> : tensor<1x2x2xf32>
    %y = triax.add %x, %c : tensor<1x2x2xf32>
    %logits = triax.linear %y, %emb {transpose_weight} : (tensor<1x2x2xf32>, tensor<4x2xf32>) -> tensor<1x2x4xf32>
    %loss = triax.cross_entropy %logits, %targets : (tensor<1x2x4xf32>, tensor<1x2xi32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}
