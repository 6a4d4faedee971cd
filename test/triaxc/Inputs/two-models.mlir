triax.model @a config = #triax.train_config<micro_batch = 1, seq = 2> {
  func.func @forward(%t: tensor<1x2xi32>, %y: tensor<1x2xi32>) -> tensor<f32> {
    %z = arith.constant dense<0.0> : tensor<f32>
    return %z : tensor<f32> } }
triax.model @b config = #triax.train_config<micro_batch = 1, seq = 2> {
  func.func @forward(%t: tensor<1x2xi32>, %y: tensor<1x2xi32>) -> tensor<f32> {
    %z = arith.constant dense<0.0> : tensor<f32>
    return %z : tensor<f32> } }
