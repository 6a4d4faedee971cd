// dist-zero stage 3 on a two-block GPT over dp=2: with prefetch (the
// default), the gathers of each block after the first of a sequence are
// issued right before the previous block and passed to their block as
// inputs; without it, every block gathers its own parameters inside.
// RUN: triax-model tiny --layers 2 | triax-opt --triax-autodiff --dist-zero="stage=3 dp=2" | FileCheck %s
// RUN: triax-model tiny --layers 2 | triax-opt --triax-autodiff --dist-zero="stage=3 dp=2 prefetch=false" | FileCheck %s --check-prefix=OFF

// CHECK-LABEL: func.func @forward_backward(
// The first block's gathers stay inside it; h.1's 16 gathers come before
// h.0, which is then followed by h.1 taking them as its extra inputs.
// CHECK: %[[C:.*]] = triax.get_param @h.1.ln_1.weight : tensor<32xf32>
// CHECK-NEXT: %[[G:.*]] = dist.all_gather_flat %[[C]] over @mesh ["dp"] : tensor<32xf32> -> tensor<64xf32>
// CHECK: triax.get_param @h.1.mlp.c_proj.bias : tensor<32xf32>
// CHECK-NEXT: %[[LAST:.*]] = dist.all_gather_flat %{{.*}} over @mesh ["dp"] : tensor<32xf32> -> tensor<64xf32>
// CHECK-NEXT: %[[H0:.*]]:15 = triax.block "h.0"(%{{.*}}) :
// CHECK: triax.get_param @h.0.ln_1.weight : tensor<32xf32>
// CHECK-NEXT: dist.all_gather_flat
// CHECK: %[[H1:.*]]:15 = triax.block "h.1"(%[[H0]]#0, %[[G]], {{.*}}, %[[LAST]]) :
// CHECK-NEXT: ^bb0(%{{.*}}: tensor<8x64x64xf32>, %[[ARG:[a-z0-9]+]]: tensor<64xf32>,
// CHECK-NOT: triax.get_param
// CHECK: triax.layer_norm %{{.*}}, %[[ARG]],
// CHECK: triax.yield
// The blocks run in the order h.0, h.1, h.1.grad, h.0.grad (one sequence
// in @forward_backward): h.1.grad's gathers are issued before h.1, and
// h.0.grad's before h.1.grad; no block but the first gathers inside.
// CHECK: triax.get_param @h.0.ln_1.weight : tensor<32xf32>
// CHECK: triax.block "h.1.grad"
// CHECK-NOT: triax.get_param
// CHECK: triax.block "h.0.grad"
// CHECK-NOT: triax.get_param
// CHECK: triax.yield

// OFF-LABEL: func.func @forward_backward(
// OFF: triax.block "h.0"
// OFF-NEXT: ^bb0
// OFF-NEXT: triax.get_param @h.0.ln_1.weight : tensor<32xf32>
// OFF: triax.block "h.1"(%{{.*}}#0) :
// OFF-NEXT: ^bb0
// OFF-NEXT: triax.get_param @h.1.ln_1.weight : tensor<32xf32>
