// dist-zero on a one-block GPT over dp=3: every size that does not divide by
// 3 is padded (64 elements -> chunks of 22, 64x64 -> 1366), never left
// replicated.
// RUN: triax-model tiny --layers 1 | triax-opt --triax-autodiff --dist-zero="stage=1 dp=3" | FileCheck %s --check-prefix=S1
// RUN: triax-model tiny --layers 1 | triax-opt --triax-autodiff --dist-zero="stage=2 dp=3" | FileCheck %s --check-prefix=S2
// RUN: triax-model tiny --layers 1 | triax-opt --triax-autodiff --dist-zero="stage=3 dp=3 prefetch=false" | FileCheck %s --check-prefix=S3

// Stage 1: the mesh is created, every parameter is marked; the forward and
// backward are untouched; the optimizer step reduce-scatters each gradient
// to this rank's chunk, takes a partial norm, updates the chunks, and
// then gathers the parameters in the same order (the updates stay
// consecutive: one fused launch on the GPU).
// S1: dist.mesh @mesh <["dp"=3]>
// S1: triax.param @wpe.weight : tensor<64x64xf32> {{.*}}{dist.zero = #dist.zero<@mesh, ["dp"], stage = 1>}
// S1-LABEL: func.func @forward_backward
// S1-NOT: dist.
// S1: triax.accumulate_grad @wpe.weight, %{{.*}} : tensor<64x64xf32>
// S1-LABEL: func.func @optimizer_step
// S1: %[[G:.*]] = triax.get_grad @wpe.weight : tensor<64x64xf32>
// S1-NEXT: %[[C:.*]] = dist.reduce_scatter_flat avg %[[G]] over @mesh ["dp"] : tensor<64x64xf32> -> tensor<1366xf32>
// S1: triax.get_grad @ln_f.bias : tensor<64xf32>
// S1-NEXT: dist.reduce_scatter_flat avg %{{.*}} over @mesh ["dp"] : tensor<64xf32> -> tensor<22xf32>
// S1: triax.global_norm {{.*}} partial over @mesh ["dp"] : tensor<5462xf32>, tensor<1366xf32>, tensor<22xf32>,
// S1: triax.adamw @wte.weight,
// S1-NEXT: triax.adamw @wpe.weight, %[[C]], {{.*}} : tensor<1366xf32>
// S1-NOT: dist.all_gather_param
// S1: triax.adamw @ln_f.bias,
// S1-NEXT: dist.all_gather_param @wte.weight over @mesh ["dp"]
// S1-NEXT: dist.all_gather_param @wpe.weight over @mesh ["dp"]
// S1: dist.all_gather_param @ln_f.bias over @mesh ["dp"]
// S1-NEXT: return

// Stage 2: the reduce-scatter moves into the backward pass, right after
// the block that produces the gradient; the buffers hold chunks.
// S2-LABEL: func.func @forward_backward
// S2: %[[B:.*]]:17 = triax.block "h.0.grad"
// S2: triax.yield
// S2-NEXT: }
// S2-NEXT: %[[RS:.*]] = dist.reduce_scatter_flat avg %[[B]]#1 over @mesh ["dp"] : tensor<64xf32> -> tensor<22xf32>
// S2-NEXT: dist.reduce_scatter_flat avg %[[B]]#2 over @mesh ["dp"] : tensor<256x64xf32> -> tensor<5462xf32>
// S2: triax.accumulate_grad @{{.*}}, %[[RS]] : tensor<22xf32>
// S2-LABEL: func.func @optimizer_step
// S2-NOT: reduce_scatter
// S2: %[[G:.*]] = triax.get_grad @wpe.weight : tensor<1366xf32>
// S2: triax.global_norm {{.*}} partial over @mesh ["dp"]
// S2: triax.adamw @wpe.weight, %[[G]], {{.*}} : tensor<1366xf32>
// S2-NEXT: triax.adamw @h.0.ln_1.weight,
// S2: triax.adamw @ln_f.bias,
// S2-NEXT: dist.all_gather_param @wte.weight over @mesh ["dp"]
// S2-NEXT: dist.all_gather_param @wpe.weight over @mesh ["dp"]

// Stage 3: every read of a parameter, in the forward, in each backward
// block and in @forward, reads the chunk and gathers the whole; the
// update needs no gather.
// S3-LABEL: func.func @forward(
// S3: %[[W:.*]] = triax.get_param @wpe.weight : tensor<1366xf32>
// S3-NEXT: dist.all_gather_flat %[[W]] over @mesh ["dp"] : tensor<1366xf32> -> tensor<64x64xf32>
// S3-LABEL: func.func @forward_backward
// S3: triax.block "h.0.grad"
// S3: %[[P:.*]] = triax.get_param @h.0.mlp.c_proj.weight : tensor<5462xf32>
// S3-NEXT: dist.all_gather_flat %[[P]] over @mesh ["dp"] : tensor<5462xf32> -> tensor<256x64xf32>
// S3: dist.reduce_scatter_flat avg
// S3-LABEL: func.func @optimizer_step
// S3: triax.adamw @wpe.weight, %{{.*}} : tensor<1366xf32>
// S3-NOT: all_gather
// S3: return
