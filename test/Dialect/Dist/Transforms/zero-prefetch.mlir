// dist-zero stage 3 on a two-block GPT over dp=2: each block's 16
// parameter gathers are one dist.all_gather_bucket (the default bucket-mb
// of 25 MiB holds a block of this model); with prefetch (the default), the
// gathers of each block after the first of a sequence are issued right
// before the previous block and passed to their block as inputs; without
// it, every block gathers its own parameters inside; with bucket-mb=0 each
// parameter is gathered alone.
// RUN: triax-model tiny --layers 2 | triax-opt --triax-autodiff --dist-zero="stage=3 dp=2" | FileCheck %s
// RUN: triax-model tiny --layers 2 | triax-opt --triax-autodiff --dist-zero="stage=3 dp=2 prefetch=false" | FileCheck %s --check-prefix=OFF
// RUN: triax-model tiny --layers 2 | triax-opt --triax-autodiff --dist-zero="stage=3 dp=2 bucket-mb=0" | FileCheck %s --check-prefix=ONE

// CHECK-LABEL: func.func @forward_backward(
// The parameters read outside the blocks are gathered one by one where
// they are read.
// CHECK: triax.get_param @wte.weight : tensor<8192xf32>
// CHECK-NEXT: dist.all_gather_flat %{{.*}} over @mesh ["dp"] : tensor<8192xf32> -> tensor<256x64xf32>
// The first block's bucket stays inside it; h.1's bucket of 16 comes
// before h.0, which is then followed by h.1 taking its results as inputs.
// CHECK: %[[C:.*]] = triax.get_param @h.1.ln_1.weight : tensor<32xf32>
// CHECK: triax.get_param @h.1.mlp.c_proj.bias : tensor<32xf32>
// CHECK-NEXT: %[[G:.*]]:16 = dist.all_gather_bucket %[[C]], {{.*}} over @mesh ["dp"] : tensor<32xf32>, {{.*}} -> tensor<64xf32>, {{.*}}, tensor<64xf32>
// CHECK-NEXT: %[[H0:.*]]:15 = triax.block "h.0"(%{{.*}}) :
// CHECK: triax.get_param @h.0.ln_1.weight : tensor<32xf32>
// CHECK: dist.all_gather_bucket
// The blocks run in the order h.0, h.1, h.1.grad, h.0.grad (one sequence
// in @forward_backward): h.1.grad's bucket (the 8 weights its backward
// reads) is issued before h.1, and h.0.grad's before h.1.grad; no block
// but the first gathers inside.
// CHECK: %[[G1G:.*]]:8 = dist.all_gather_bucket {{.*}} -> tensor<256x64xf32>, tensor<64x256xf32>, tensor<64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64xf32>
// CHECK-NEXT: %[[H1:.*]]:15 = triax.block "h.1"(%[[H0]]#0, %[[G]]#0, %[[G]]#1, {{.*}}, %[[G]]#15) :
// CHECK-NEXT: ^bb0(%{{.*}}: tensor<8x64x64xf32>, %[[ARG:[a-z0-9]+]]: tensor<64xf32>,
// CHECK-NOT: triax.get_param
// CHECK: triax.layer_norm %{{.*}}, %[[ARG]],
// CHECK: triax.yield
// ln_f's two parameters, read outside the blocks:
// CHECK: dist.all_gather_flat {{.*}} -> tensor<64xf32>
// CHECK: dist.all_gather_flat {{.*}} -> tensor<64xf32>
// CHECK: dist.all_gather_bucket {{.*}} -> tensor<256x64xf32>,
// CHECK-NEXT: triax.block "h.1.grad"({{.*}}, %[[G1G]]#0, %[[G1G]]#1,
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
// OFF: triax.get_param @h.1.mlp.c_proj.bias : tensor<32xf32>
// OFF-NEXT: dist.all_gather_bucket {{.*}} -> tensor<64xf32>, {{.*}}, tensor<64xf32>
// OFF-NEXT: triax.layer_norm

// ONE-LABEL: func.func @forward_backward(
// ONE-NOT: dist.all_gather_bucket
// ONE: %[[C:.*]] = triax.get_param @h.1.ln_1.weight : tensor<32xf32>
// ONE-NEXT: %[[G:.*]] = dist.all_gather_flat %[[C]] over @mesh ["dp"] : tensor<32xf32> -> tensor<64xf32>
// ONE: triax.get_param @h.1.mlp.c_proj.bias : tensor<32xf32>
// ONE-NEXT: %[[LAST:.*]] = dist.all_gather_flat %{{.*}} over @mesh ["dp"] : tensor<32xf32> -> tensor<64xf32>
// ONE-NEXT: %[[H0:.*]]:15 = triax.block "h.0"(%{{.*}}) :
// ONE: %[[H1:.*]]:15 = triax.block "h.1"(%[[H0]]#0, %[[G]], {{.*}}, %[[LAST]]) :
// ONE-NOT: dist.all_gather_bucket
