// dist-data-parallel refuses a mesh it cannot use, with the reason.
// RUN: triax-opt %s -split-input-file --triax-autodiff --dist-data-parallel=dp=2 -verify-diagnostics -o /dev/null
// Without dp=N a module without a mesh is an error too:
// RUN: not triax-opt %s -split-input-file --triax-autodiff --dist-data-parallel 2>&1 | FileCheck %s --check-prefix=NOSIZE

// A mesh that has no "dp" axis.
// expected-error @+1 {{dist-data-parallel: mesh @cluster has no axis "dp"}}
dist.mesh @cluster <["tp"=2]>
triax.model @m config = #triax.train_config<micro_batch = 1, seq = 2> {
  triax.param @emb : tensor<4x2xf32> init <normal, std = 0.02>
  func.func @forward(%tokens: tensor<1x2xi32>, %targets: tensor<1x2xi32>) -> tensor<f32> {
    %emb = triax.get_param @emb : tensor<4x2xf32>
    %x = triax.embedding %tokens, %emb : (tensor<1x2xi32>, tensor<4x2xf32>) -> tensor<1x2x2xf32>
    %logits = triax.linear %x, %emb {transpose_weight} : (tensor<1x2x2xf32>, tensor<4x2xf32>) -> tensor<1x2x4xf32>
    %loss = triax.cross_entropy %logits, %targets : (tensor<1x2x4xf32>, tensor<1x2xi32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// A mesh whose dp axis disagrees with the requested size.
// expected-error @+1 {{dist-data-parallel: mesh @cluster has dp=4 but the pass was asked for dp=2}}
dist.mesh @cluster <["dp"=4]>
triax.model @m config = #triax.train_config<micro_batch = 1, seq = 2> {
  triax.param @emb : tensor<4x2xf32> init <normal, std = 0.02>
  func.func @forward(%tokens: tensor<1x2xi32>, %targets: tensor<1x2xi32>) -> tensor<f32> {
    %emb = triax.get_param @emb : tensor<4x2xf32>
    %x = triax.embedding %tokens, %emb : (tensor<1x2xi32>, tensor<4x2xf32>) -> tensor<1x2x2xf32>
    %logits = triax.linear %x, %emb {transpose_weight} : (tensor<1x2x2xf32>, tensor<4x2xf32>) -> tensor<1x2x4xf32>
    %loss = triax.cross_entropy %logits, %targets : (tensor<1x2x4xf32>, tensor<1x2xi32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// NOSIZE: error: dist-data-parallel: mesh @cluster has no axis "dp"
// NOSIZE-NOT: error:
// NOSIZE: error: dist-data-parallel: the module has no dist.mesh; give the size of the "dp" axis with the pass option dp=N

// -----

// No mesh at all: only an error without dp=N (the NOSIZE run); with dp=2
// the pass creates one.
triax.model @m config = #triax.train_config<micro_batch = 1, seq = 2> {
  triax.param @emb : tensor<4x2xf32> init <normal, std = 0.02>
  func.func @forward(%tokens: tensor<1x2xi32>, %targets: tensor<1x2xi32>) -> tensor<f32> {
    %emb = triax.get_param @emb : tensor<4x2xf32>
    %x = triax.embedding %tokens, %emb : (tensor<1x2xi32>, tensor<4x2xf32>) -> tensor<1x2x2xf32>
    %logits = triax.linear %x, %emb {transpose_weight} : (tensor<1x2x2xf32>, tensor<4x2xf32>) -> tensor<1x2x4xf32>
    %loss = triax.cross_entropy %logits, %targets : (tensor<1x2x4xf32>, tensor<1x2xi32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}
