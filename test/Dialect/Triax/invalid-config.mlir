// Every error of the #triax.init and #triax.train_config attributes: their
// custom parsers (unknown keyword, unknown or repeated key) and every branch
// of their verifiers, each message naming the bad value.
// RUN: triax-opt %s -split-input-file -verify-diagnostics

//===----------------------------------------------------------------------===//
// #triax.init
//===----------------------------------------------------------------------===//

triax.model @m config = #triax.train_config<micro_batch = 2, seq = 4> {
  // expected-error @+1 {{unknown initializer 'uniform'; expected normal, zeros or ones}}
  triax.param @w : tensor<4xf32> init <uniform>
}

// -----

triax.model @m config = #triax.train_config<micro_batch = 2, seq = 4> {
  // expected-error @+1 {{normal initializer needs std > 0, got 0.000000e+00}}
  triax.param @w : tensor<4xf32> init <normal, std = 0.0>
}

// -----

// An integer literal is read as its value.
triax.model @m config = #triax.train_config<micro_batch = 2, seq = 4> {
  // expected-error @+1 {{normal initializer needs std > 0, got -1.000000e+00}}
  triax.param @w : tensor<4xf32> init <normal, std = -1>
}

// -----

// `normal` needs its std.
triax.model @m config = #triax.train_config<micro_batch = 2, seq = 4> {
  // expected-error @+1 {{expected ','}}
  triax.param @w : tensor<4xf32> init <normal>
}

// -----

// `zeros` and `ones` take no std; the parser stops at the comma.
triax.model @m config = #triax.train_config<micro_batch = 2, seq = 4> {
  // expected-error @+1 {{expected '>'}}
  triax.param @w : tensor<4xf32> init <zeros, std = 0.5>
}

// -----

// The standalone attribute form goes through the same parser and verifier.
triax.model @m config = #triax.train_config<micro_batch = 2, seq = 4> {
  // expected-error @+1 {{normal initializer needs std > 0, got 0.000000e+00}}
  "triax.param"() <{sym_name = "w", type = tensor<4xf32>, init = #triax.init<normal, std = 0>}> : () -> ()
}

//===----------------------------------------------------------------------===//
// #triax.train_config: parser
//===----------------------------------------------------------------------===//

// -----

// expected-error @+1 {{unknown train_config key 'learning_rate'; expected one of optimizer, lr, beta1, beta2, eps, weight_decay, grad_clip, global_batch, micro_batch, seq, compute, master}}
triax.model @m config = #triax.train_config<learning_rate = 1.0e-3> {
}

// -----

// expected-error @+1 {{train_config key 'lr' is given twice}}
triax.model @m config = #triax.train_config<lr = 1.0e-3, seq = 4, lr = 2.0e-3> {
}

// -----

// Integer keys take integers.
// expected-error @+1 {{expected integer value}}
triax.model @m config = #triax.train_config<seq = 1.5> {
}

// -----

// The optimizer is a bare keyword.
// expected-error @+1 {{expected valid keyword}}
triax.model @m config = #triax.train_config<optimizer = "adamw"> {
}

//===----------------------------------------------------------------------===//
// #triax.train_config: verifier
//===----------------------------------------------------------------------===//

// -----

// expected-error @+1 {{unsupported optimizer 'sgd'; expected adamw}}
triax.model @m config = #triax.train_config<optimizer = sgd> {
}

// -----

// expected-error @+1 {{lr must be > 0, got 0.000000e+00}}
triax.model @m config = #triax.train_config<lr = 0.0> {
}

// -----

// expected-error @+1 {{lr must be > 0, got -1.000000e+00}}
triax.model @m config = #triax.train_config<lr = -1> {
}

// -----

// expected-error @+1 {{beta1 must be in [0, 1), got 1.000000e+00}}
triax.model @m config = #triax.train_config<beta1 = 1.0> {
}

// -----

// expected-error @+1 {{beta2 must be in [0, 1), got -1.000000e+00}}
triax.model @m config = #triax.train_config<beta2 = -1> {
}

// -----

// expected-error @+1 {{beta2 must be in [0, 1), got 1.500000e+00}}
triax.model @m config = #triax.train_config<beta1 = 0.5, beta2 = 1.5> {
}

// -----

// expected-error @+1 {{eps must be > 0, got 0.000000e+00}}
triax.model @m config = #triax.train_config<eps = 0.0> {
}

// -----

// expected-error @+1 {{weight_decay must be >= 0, got -1.000000e+00}}
triax.model @m config = #triax.train_config<weight_decay = -1> {
}

// -----

// expected-error @+1 {{grad_clip must be >= 0 (0 turns clipping off), got -2.000000e+00}}
triax.model @m config = #triax.train_config<grad_clip = -2> {
}

// -----

// expected-error @+1 {{micro_batch must be >= 1, got 0}}
triax.model @m config = #triax.train_config<micro_batch = 0> {
}

// -----

// expected-error @+1 {{micro_batch must be >= 1, got -4}}
triax.model @m config = #triax.train_config<micro_batch = -4, global_batch = 8> {
}

// -----

// expected-error @+1 {{seq must be >= 1, got 0}}
triax.model @m config = #triax.train_config<seq = 0> {
}

// -----

// expected-error @+1 {{global_batch 6 must be a positive multiple of micro_batch 4}}
triax.model @m config = #triax.train_config<micro_batch = 4, global_batch = 6> {
}

// -----

// expected-error @+1 {{global_batch 0 must be a positive multiple of micro_batch 2}}
triax.model @m config = #triax.train_config<micro_batch = 2, global_batch = 0> {
}

// -----

// expected-error @+1 {{compute dtype must be f32 or bf16, got 'f16'}}
triax.model @m config = #triax.train_config<compute = f16> {
}

// -----

// expected-error @+1 {{compute dtype must be f32 or bf16, got 'i32'}}
triax.model @m config = #triax.train_config<compute = i32> {
}

// -----

// expected-error @+1 {{master dtype must be f32, got 'bf16'}}
triax.model @m config = #triax.train_config<compute = bf16, master = bf16> {
}

// -----

// The model's config must be a #triax.train_config (generic form).
// expected-error @+1 {{invalid properties {config = 1 : i64, sym_name = "m"} for op triax.model: Invalid attribute `config` in property conversion: 1 : i64}}
"triax.model"() <{sym_name = "m", config = 1 : i64}> ({
}) : () -> ()

// -----

// Negative numbers reach the verifier (floats and integers alike).
// expected-error @+1 {{normal initializer needs std > 0, got -2.000000e-02}}
triax.model @m config = #triax.train_config<> { triax.param @p : tensor<2xf32> init <normal, std = -0.02> }

// -----

// expected-error @+1 {{beta2 must be in [0, 1), got -5.000000e-01}}
triax.model @m config = #triax.train_config<beta2 = -0.5> {}

// -----

// expected-error @+1 {{weight_decay must be >= 0, got -1.000000e-01}}
triax.model @m config = #triax.train_config<weight_decay = -0.1> {}

// -----

// expected-error @+1 {{grad_clip must be >= 0 (0 turns clipping off), got -1}}
triax.model @m config = #triax.train_config<grad_clip = -1.0> {}

// -----

// A negative global batch is an error, not "use the default".
// expected-error @+1 {{global_batch -8 must be a positive multiple of micro_batch 2}}
triax.model @m config = #triax.train_config<micro_batch = 2, global_batch = -8> {}

// -----

// expected-error @+1 {{expected a number, got "x"}}
triax.model @m config = #triax.train_config<lr = "x"> {}
