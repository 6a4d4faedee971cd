// dist-data-parallel under pipeline parallelism reduces in the per-stage
// @optimizer_step that dist-pipeline builds; a @pipeline_step without it is
// an error.
// RUN: triax-opt %s --dist-data-parallel=dp=2 -verify-diagnostics -o /dev/null

// expected-error @+1 {{dist-data-parallel: model @m has @pipeline_step but no per-stage @optimizer_step (a switch on dist.axis_index); run dist-pipeline first}}
triax.model @m config = #triax.train_config<micro_batch = 2, seq = 4> {
  triax.param @w : tensor<8xf32> init <ones>
  func.func @forward(%tokens: tensor<2x4xi32>, %targets: tensor<2x4xi32>) -> tensor<f32> {
    %c = arith.constant dense<0.0> : tensor<f32>
    return %c : tensor<f32>
  }
  func.func @forward_backward(%tokens: tensor<2x4xi32>, %targets: tensor<2x4xi32>) -> tensor<f32> {
    %c = arith.constant dense<0.0> : tensor<f32>
    return %c : tensor<f32>
  }
  func.func @pipeline_step(%tokens: tensor<2x4xi32>, %targets: tensor<2x4xi32>) -> f32 {
    %c = arith.constant 0.0 : f32
    return %c : f32
  }
  func.func @optimizer_step(%lr: f32, %step: i64, %scale: f32) -> f32 {
    %g = triax.get_grad @w : tensor<8xf32>
    %n = triax.global_norm %g : tensor<8xf32> -> tensor<f32>
    %e = tensor.extract %n[] : tensor<f32>
    return %e : f32
  }
}
