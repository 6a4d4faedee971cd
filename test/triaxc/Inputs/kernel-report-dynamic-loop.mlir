// A differentiated model whose training step loops a number of times read
// from the tokens: the kernel report cannot count it.
triax.model @dynamic config = #triax.train_config<micro_batch = 1, seq = 2> {
  func.func @forward(%t: tensor<1x2xi32>, %y: tensor<1x2xi32>) -> tensor<f32> {
    %z = arith.constant dense<0.0> : tensor<f32>
    return %z : tensor<f32>
  }
  func.func @forward_backward(%t: tensor<1x2xi32>, %y: tensor<1x2xi32>) -> f32 {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %first = tensor.extract %t[%c0, %c0] : tensor<1x2xi32>
    %n = arith.index_cast %first : i32 to index
    %zero = arith.constant 0.0 : f32
    %one = arith.constant 1.0 : f32
    %sum = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %zero) -> f32 {
      %next = arith.addf %acc, %one : f32
      scf.yield %next : f32
    }
    return %sum : f32
  }
  func.func @optimizer_step(%lr: f32, %step: i64, %scale: f32) -> f32 {
    return %lr : f32
  }
}
