// tiny --layers 1 --seq 8 --batch 4 --hidden 32 --heads 2 --vocab 64 with
// the MLP cut to one linear (h.0.mlp.c_proj, 32 x 32): no column/row pair,
// so tensor parallelism leaves it replicated (plan-split-rule.test).
module {
  triax.model @tiny config = #triax.train_config<optimizer = adamw, lr = 0.002, beta1 = 0.9, beta2 = 0.95, eps = 1.0e-08, weight_decay = 0.1, grad_clip = 1.0, global_batch = 4, micro_batch = 4, seq = 8, compute = f32, master = f32> {
    triax.param @wte.weight : tensor<64x32xf32> init <normal, std = 0.02> decay
    triax.param @wpe.weight : tensor<8x32xf32> init <normal, std = 0.01> decay
    triax.param @h.0.ln_1.weight : tensor<32xf32> init <ones>
    triax.param @h.0.ln_1.bias : tensor<32xf32> init <zeros>
    triax.param @h.0.attn.q.weight : tensor<32x32xf32> init <normal, std = 0.02> decay {triax.checkpoint_name = "h.0.attn.c_attn.weight"}
    triax.param @h.0.attn.q.bias : tensor<32xf32> init <zeros> {triax.checkpoint_name = "h.0.attn.c_attn.bias"}
    triax.param @h.0.attn.k.weight : tensor<32x32xf32> init <normal, std = 0.02> decay {triax.checkpoint_name = "h.0.attn.c_attn.weight"}
    triax.param @h.0.attn.k.bias : tensor<32xf32> init <zeros> {triax.checkpoint_name = "h.0.attn.c_attn.bias"}
    triax.param @h.0.attn.v.weight : tensor<32x32xf32> init <normal, std = 0.02> decay {triax.checkpoint_name = "h.0.attn.c_attn.weight"}
    triax.param @h.0.attn.v.bias : tensor<32xf32> init <zeros> {triax.checkpoint_name = "h.0.attn.c_attn.bias"}
    triax.param @h.0.attn.c_proj.weight : tensor<32x32xf32> init <normal, std = 0.014142135623730949> decay
    triax.param @h.0.attn.c_proj.bias : tensor<32xf32> init <zeros>
    triax.param @h.0.ln_2.weight : tensor<32xf32> init <ones>
    triax.param @h.0.ln_2.bias : tensor<32xf32> init <zeros>
    triax.param @h.0.mlp.c_proj.weight : tensor<32x32xf32> init <normal, std = 0.014142135623730949> decay
    triax.param @h.0.mlp.c_proj.bias : tensor<32xf32> init <zeros>
    triax.param @ln_f.weight : tensor<32xf32> init <ones>
    triax.param @ln_f.bias : tensor<32xf32> init <zeros>
    func.func @forward(%arg0: tensor<4x8xi32>, %arg1: tensor<4x8xi32>) -> tensor<f32> {
      %0 = triax.get_param @wte.weight : tensor<64x32xf32>
      %1 = triax.embedding %arg0, %0 : (tensor<4x8xi32>, tensor<64x32xf32>) -> tensor<4x8x32xf32>
      %2 = triax.get_param @wpe.weight : tensor<8x32xf32>
      %3 = triax.position_ids : tensor<4x8xi32>
      %4 = triax.embedding %3, %2 : (tensor<4x8xi32>, tensor<8x32xf32>) -> tensor<4x8x32xf32>
      %5 = triax.add %1, %4 : tensor<4x8x32xf32>
      %6 = triax.block "h.0"(%5) : (tensor<4x8x32xf32>) -> tensor<4x8x32xf32> {
      ^bb0(%arg2: tensor<4x8x32xf32>):
        %12 = triax.get_param @h.0.ln_1.weight : tensor<32xf32>
        %13 = triax.get_param @h.0.ln_1.bias : tensor<32xf32>
        %14 = triax.layer_norm %arg2, %12, %13 : (tensor<4x8x32xf32>, tensor<32xf32>, tensor<32xf32>) -> tensor<4x8x32xf32>
        %15 = triax.get_param @h.0.attn.q.weight : tensor<32x32xf32>
        %16 = triax.get_param @h.0.attn.q.bias : tensor<32xf32>
        %17 = triax.linear %14, %15, %16 : (tensor<4x8x32xf32>, tensor<32x32xf32>, tensor<32xf32>) -> tensor<4x8x32xf32>
        %18 = triax.get_param @h.0.attn.k.weight : tensor<32x32xf32>
        %19 = triax.get_param @h.0.attn.k.bias : tensor<32xf32>
        %20 = triax.linear %14, %18, %19 : (tensor<4x8x32xf32>, tensor<32x32xf32>, tensor<32xf32>) -> tensor<4x8x32xf32>
        %21 = triax.get_param @h.0.attn.v.weight : tensor<32x32xf32>
        %22 = triax.get_param @h.0.attn.v.bias : tensor<32xf32>
        %23 = triax.linear %14, %21, %22 : (tensor<4x8x32xf32>, tensor<32x32xf32>, tensor<32xf32>) -> tensor<4x8x32xf32>
        %24 = triax.attention %17, %20, %23 heads = 2 : (tensor<4x8x32xf32>, tensor<4x8x32xf32>, tensor<4x8x32xf32>) -> tensor<4x8x32xf32>
        %25 = triax.get_param @h.0.attn.c_proj.weight : tensor<32x32xf32>
        %26 = triax.get_param @h.0.attn.c_proj.bias : tensor<32xf32>
        %27 = triax.linear %24, %25, %26 : (tensor<4x8x32xf32>, tensor<32x32xf32>, tensor<32xf32>) -> tensor<4x8x32xf32>
        %28 = triax.add %arg2, %27 : tensor<4x8x32xf32>
        %29 = triax.get_param @h.0.ln_2.weight : tensor<32xf32>
        %30 = triax.get_param @h.0.ln_2.bias : tensor<32xf32>
        %31 = triax.layer_norm %28, %29, %30 : (tensor<4x8x32xf32>, tensor<32xf32>, tensor<32xf32>) -> tensor<4x8x32xf32>
        %36 = triax.get_param @h.0.mlp.c_proj.weight : tensor<32x32xf32>
        %37 = triax.get_param @h.0.mlp.c_proj.bias : tensor<32xf32>
        %38 = triax.linear %31, %36, %37 : (tensor<4x8x32xf32>, tensor<32x32xf32>, tensor<32xf32>) -> tensor<4x8x32xf32>
        %39 = triax.add %28, %38 : tensor<4x8x32xf32>
        triax.yield %39 : tensor<4x8x32xf32>
      }
      %7 = triax.get_param @ln_f.weight : tensor<32xf32>
      %8 = triax.get_param @ln_f.bias : tensor<32xf32>
      %9 = triax.layer_norm %6, %7, %8 : (tensor<4x8x32xf32>, tensor<32xf32>, tensor<32xf32>) -> tensor<4x8x32xf32>
      %10 = triax.linear %9, %0 {transpose_weight} : (tensor<4x8x32xf32>, tensor<64x32xf32>) -> tensor<4x8x64xf32>
      %11 = triax.cross_entropy %10, %arg1 : (tensor<4x8x64xf32>, tensor<4x8xi32>) -> tensor<f32>
      return %11 : tensor<f32>
    }
  }
}
