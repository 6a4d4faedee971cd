// dist-data-parallel's buckets under expert parallelism (tiny-moe on
// dp=2 x ep=2): the experts' gradients are averaged over dp, the others'
// over dp x ep, and one bucket of each group stays open whatever the other
// adds: the whole model is 2 collectives (a bucket closed at each change of
// group, as until 2026-12-08, made 5: ln_f to h.1's router, h.1's experts,
// h.0's layer, h.0's experts, the embeddings). Each is reduced right after
// the last of its gradients is accumulated.
// RUN: triax-model tiny-moe | triax-opt --dist-mesh="axes=dp=2,ep=2" --dist-expert-parallel --triax-autodiff --dist-data-parallel | FileCheck %s

// CHECK-LABEL: func.func @forward_backward
// CHECK-NOT: dist.all_reduce_grads
// CHECK: triax.accumulate_grad @h.1.moe.experts.c_fc.weight
// CHECK-NOT: dist.all_reduce_grads
// CHECK: triax.accumulate_grad @h.0.moe.experts.c_proj.weight
// CHECK-NEXT: dist.all_reduce_grads avg [@h.1.moe.experts.c_fc.weight, @h.1.moe.experts.c_proj.weight, @h.0.moe.experts.c_fc.weight, @h.0.moe.experts.c_proj.weight] over @mesh ["dp"]
// CHECK-NOT: dist.all_reduce_grads
// CHECK: triax.accumulate_grad @wte.weight
// CHECK-NEXT: dist.all_reduce_grads avg [@ln_f.weight, @ln_f.bias, @h.1.ln_1.weight, {{.*}}, @h.1.moe.router.weight, @h.0.ln_1.weight, {{.*}}, @h.0.moe.router.weight, @wpe.weight, @wte.weight] over @mesh ["dp", "ep"]
// CHECK-NOT: dist.all_reduce_grads
// CHECK: return
