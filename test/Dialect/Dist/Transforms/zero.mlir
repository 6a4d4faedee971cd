// dist-zero on a one-block GPT over dp=3: every size that does not divide by
// 3 is padded (64 elements -> chunks of 22, 64x64 -> 1366), never left
// replicated. First one collective per tensor (bucket-mb=0), then in
// buckets (bucket-mb, below).
// RUN: triax-model tiny --layers 1 | triax-opt --triax-autodiff --dist-zero="stage=1 dp=3 bucket-mb=0" | FileCheck %s --check-prefix=S1
// RUN: triax-model tiny --layers 1 | triax-opt --triax-autodiff --dist-zero="stage=2 dp=3 bucket-mb=0" | FileCheck %s --check-prefix=S2
// RUN: triax-model tiny --layers 1 | triax-opt --triax-autodiff --dist-zero="stage=3 dp=3 prefetch=false bucket-mb=0" | FileCheck %s --check-prefix=S3

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
// S1-NOT: dist.all_gather_params
// S1: triax.adamw @ln_f.bias,
// S1-NEXT: dist.all_gather_params [@wte.weight] over @mesh ["dp"]
// S1-NEXT: dist.all_gather_params [@wpe.weight] over @mesh ["dp"]
// S1: dist.all_gather_params [@ln_f.bias] over @mesh ["dp"]
// S1-NEXT: return

// Stage 2: the reduce-scatter moves into the backward pass, right after
// the block that produces the gradient; the buffers hold chunks.
// S2-LABEL: func.func @forward_backward
// S2: %[[B:.*]]:17 = triax.block "h.0.grad"
// S2: triax.yield
// S2-NEXT: }
// S2-NEXT: %[[RS:.*]] = dist.reduce_scatter_flat avg %[[B]]#16 over @mesh ["dp"] : tensor<64xf32> -> tensor<22xf32>
// S2-NEXT: triax.accumulate_grad @h.0.ln_1.weight, %[[RS]] : tensor<22xf32>
// S2-NEXT: %[[RS2:.*]] = dist.reduce_scatter_flat avg %[[B]]#15 over @mesh ["dp"] : tensor<64xf32> -> tensor<22xf32>
// S2-NEXT: triax.accumulate_grad @h.0.ln_1.bias, %[[RS2]] : tensor<22xf32>
// S2-LABEL: func.func @optimizer_step
// S2-NOT: reduce_scatter
// S2: %[[G:.*]] = triax.get_grad @wpe.weight : tensor<1366xf32>
// S2: triax.global_norm {{.*}} partial over @mesh ["dp"]
// S2: triax.adamw @wpe.weight, %[[G]], {{.*}} : tensor<1366xf32>
// S2-NEXT: triax.adamw @h.0.ln_1.weight,
// S2: triax.adamw @ln_f.bias,
// S2-NEXT: dist.all_gather_params [@wte.weight] over @mesh ["dp"]
// S2-NEXT: dist.all_gather_params [@wpe.weight] over @mesh ["dp"]

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

// Stage 3's gathers at 0.02 MiB (20,971 bytes of whole tensors): a
// block's gathers in buckets closed at the tensor that fills one, each
// bucket where its first gather was (the block's parameters are read in
// its order, so a later bucket follows the first uses); a bucket of one is
// a plain all_gather_flat; the parameters outside the blocks are gathered
// one by one (test/Dialect/Dist/Transforms/zero-prefetch.mlir has the
// default, a whole block in one bucket, issued a block early).
// RUN: triax-model tiny --layers 1 | triax-opt --triax-autodiff --dist-zero="stage=3 dp=3 prefetch=false bucket-mb=0.02" | FileCheck %s --check-prefix=B3
// B3-LABEL: func.func @forward_backward
// B3: triax.get_param @wte.weight : tensor<5462xf32>
// B3-NEXT: dist.all_gather_flat
// B3: triax.block "h.0"
// B3: %[[L1W:.*]] = triax.get_param @h.0.ln_1.weight : tensor<22xf32>
// B3: %[[KW:.*]] = triax.get_param @h.0.attn.k.weight : tensor<1366xf32>
// B3-NEXT: %[[G1:.*]]:5 = dist.all_gather_bucket %[[L1W]], %{{.*}}, %{{.*}}, %{{.*}}, %[[KW]] over @mesh ["dp"] : tensor<22xf32>, tensor<22xf32>, tensor<1366xf32>, tensor<22xf32>, tensor<1366xf32> -> tensor<64xf32>, tensor<64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<64x64xf32>
// B3-NEXT: triax.layer_norm %{{.*}}, %[[G1]]#0, %[[G1]]#1
// B3: dist.all_gather_bucket {{.*}} : tensor<22xf32>, tensor<1366xf32>, tensor<22xf32>, tensor<1366xf32> -> tensor<64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<64x64xf32>
// B3: dist.all_gather_bucket {{.*}} -> tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64x256xf32>
// B3: dist.all_gather_bucket {{.*}} -> tensor<256xf32>, tensor<256x64xf32>
// B3: triax.get_param @h.0.mlp.c_proj.bias : tensor<22xf32>
// B3-NEXT: dist.all_gather_flat
// B3: triax.yield

// Buckets (bucket-mb): whole tensors' bytes, each bucket closed at the
// tensor that fills it. At 0.02 MiB (20,971 bytes): wte's 65,536 bytes
// alone (one tensor: a plain reduce_scatter_flat), then wpe (16,384), the
// two ln_1 vectors (256 each) and q.weight (16,384), ... Each bucket is
// reduced right after its last gradient is read, before the norm reads
// any; the gathers follow the last update, bucketed the same way.
// RUN: triax-model tiny --layers 1 | triax-opt --triax-autodiff --dist-zero="stage=1 dp=3 bucket-mb=0.02" | FileCheck %s --check-prefix=B1
// B1-LABEL: func.func @optimizer_step
// B1: %[[WTE:.*]] = triax.get_grad @wte.weight : tensor<256x64xf32>
// B1-NEXT: dist.reduce_scatter_flat avg %[[WTE]] over @mesh ["dp"] : tensor<256x64xf32> -> tensor<5462xf32>
// B1-NEXT: %[[WPE:.*]] = triax.get_grad @wpe.weight
// B1-NEXT: %[[L1W:.*]] = triax.get_grad @h.0.ln_1.weight
// B1-NEXT: %[[L1B:.*]] = triax.get_grad @h.0.ln_1.bias
// B1-NEXT: %[[QW:.*]] = triax.get_grad @h.0.attn.q.weight
// B1-NEXT: %[[C:.*]]:4 = dist.reduce_scatter_bucket avg %[[WPE]], %[[L1W]], %[[L1B]], %[[QW]] over @mesh ["dp"] : tensor<64x64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64x64xf32> -> tensor<1366xf32>, tensor<22xf32>, tensor<22xf32>, tensor<1366xf32>
// B1: dist.reduce_scatter_bucket avg {{.*}} -> tensor<22xf32>, tensor<22xf32>, tensor<22xf32>
// B1-NEXT: triax.global_norm {{.*}}, %[[C]]#0, %[[C]]#1, %[[C]]#2, %[[C]]#3, {{.*}} partial over @mesh ["dp"]
// B1: triax.adamw @wpe.weight, %[[C]]#0, {{.*}} : tensor<1366xf32>
// B1: triax.adamw @ln_f.bias,
// B1-NEXT: dist.all_gather_params [@wte.weight] over @mesh ["dp"]
// B1-NEXT: dist.all_gather_params [@wpe.weight, @h.0.ln_1.weight, @h.0.ln_1.bias, @h.0.attn.q.weight] over @mesh ["dp"]
// B1-NEXT: dist.all_gather_params [@h.0.attn.q.bias, @h.0.attn.k.weight, @h.0.attn.k.bias, @h.0.attn.v.weight] over @mesh ["dp"]
// B1-NEXT: dist.all_gather_params [@h.0.attn.v.bias, @h.0.attn.c_proj.weight, @h.0.attn.c_proj.bias, @h.0.ln_2.weight, @h.0.ln_2.bias, @h.0.mlp.c_fc.weight] over @mesh ["dp"]
// B1-NEXT: dist.all_gather_params [@h.0.mlp.c_fc.bias, @h.0.mlp.c_proj.weight] over @mesh ["dp"]
// B1-NEXT: dist.all_gather_params [@h.0.mlp.c_proj.bias, @ln_f.weight, @ln_f.bias] over @mesh ["dp"]
// B1-NEXT: return

// Stage 2 at the default 25 MiB: the whole model is one bucket. Its
// accumulations are in one block (the backward's top level), so it is
// reduced right after its last gradient (wte's, the embedding's) is
// produced (the tied head's and embedding's sum), and the accumulations
// follow in their order.
// RUN: triax-model tiny --layers 1 | triax-opt --triax-autodiff --dist-zero="stage=2 dp=3" | FileCheck %s --check-prefix=B2
// B2-LABEL: func.func @forward_backward
// B2-NOT: dist.reduce_scatter
// B2: triax.embedding_grad %arg0
// B2-NEXT: %[[WTE:.*]] = triax.add
// B2-NEXT: %[[C:.*]]:20 = dist.reduce_scatter_bucket avg %weight_grad, %bias_grad, {{.*}}, %[[WTE]] over @mesh ["dp"]
// B2-NEXT: triax.accumulate_grad @ln_f.weight, %[[C]]#0 : tensor<22xf32>
// B2-NEXT: triax.accumulate_grad @ln_f.bias, %[[C]]#1 : tensor<22xf32>
// B2-NEXT: triax.accumulate_grad @h.0.ln_1.weight, %[[C]]#2 : tensor<22xf32>
// B2: triax.accumulate_grad @wte.weight, %[[C]]#19 : tensor<5462xf32>
// B2-NEXT: return
// B2-LABEL: func.func @optimizer_step
// B2-NOT: reduce_scatter
// B2: dist.all_gather_params [@wte.weight, @wpe.weight, {{.*}}, @ln_f.bias] over @mesh ["dp"]
// B2-NEXT: return
