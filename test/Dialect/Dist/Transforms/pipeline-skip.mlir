// A value used two stages later (a skip connection from block a to block c)
// cannot be cut on pp=3: only neighbouring stages exchange values. On pp=2
// the same model pipelines (a and b on stage 0, or b and c on stage 1).
// (3 micro-batches of 2 per step: the training config's.)
// RUN: triax-opt %s --triax-autodiff --dist-pipeline="pp=3" -verify-diagnostics -o /dev/null
// RUN: triax-opt %s --triax-autodiff --dist-pipeline="pp=2 stage-layers=1,2" | FileCheck %s

// CHECK: triax.param @ga {{.*}} {dist.stage = 0 : i64}
// CHECK: triax.param @gb {{.*}} {dist.stage = 1 : i64}
// CHECK: triax.param @gc {{.*}} {dist.stage = 1 : i64}
// Stage 1 receives a's output once and uses it in b and in c.
// CHECK-LABEL: func.func @stage1_forward(%arg0: tensor<2x4xi32>, %arg1: tensor<2x4x8xf32>)
// CHECK: triax.block "b"(%arg1)
// CHECK: triax.block "c"(%{{.*}}, %arg1)
// CHECK-LABEL: func.func @pipeline_step(%arg0: tensor<6x4xi32>, %arg1: tensor<6x4xi32>) -> f32
triax.model @skip config = #triax.train_config<global_batch = 6, micro_batch = 2, seq = 4> {
  triax.param @wte : tensor<16x8xf32> init <normal, std = 0.02>
  triax.param @ga : tensor<8xf32> init <ones>
  triax.param @gb : tensor<8xf32> init <ones>
  triax.param @gc : tensor<8xf32> init <ones>
  func.func @forward(%tokens: tensor<2x4xi32>, %targets: tensor<2x4xi32>) -> tensor<f32> {
    %wte = triax.get_param @wte : tensor<16x8xf32>
    %x = triax.embedding %tokens, %wte : (tensor<2x4xi32>, tensor<16x8xf32>) -> tensor<2x4x8xf32>
    %ya = triax.block "a" (%x) : (tensor<2x4x8xf32>) -> tensor<2x4x8xf32> {
    ^bb0(%in: tensor<2x4x8xf32>):
      %g = triax.get_param @ga : tensor<8xf32>
      %n = triax.rms_norm %in, %g : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
      triax.yield %n : tensor<2x4x8xf32>
    }
    %yb = triax.block "b" (%ya) : (tensor<2x4x8xf32>) -> tensor<2x4x8xf32> {
    ^bb0(%in: tensor<2x4x8xf32>):
      %g = triax.get_param @gb : tensor<8xf32>
      %n = triax.rms_norm %in, %g : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
      triax.yield %n : tensor<2x4x8xf32>
    }
    // expected-error @+1 {{dist-pipeline: this op runs in the forward of stage 2 but reads a value of the forward of stage 0; only neighbouring stages exchange values}}
    %yc = triax.block "c" (%yb, %ya) : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32> {
    ^bb0(%in: tensor<2x4x8xf32>, %skip: tensor<2x4x8xf32>):
      %g = triax.get_param @gc : tensor<8xf32>
      %n = triax.rms_norm %in, %g : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
      %r = triax.add %n, %skip : tensor<2x4x8xf32>
      triax.yield %r : tensor<2x4x8xf32>
    }
    %logits = triax.linear %yc, %wte {transpose_weight} : (tensor<2x4x8xf32>, tensor<16x8xf32>) -> tensor<2x4x16xf32>
    %loss = triax.cross_entropy %logits, %targets : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}
