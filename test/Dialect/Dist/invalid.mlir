// Every error branch of the dist dialect: dist.mesh, the #dist.sharding
// attribute and its check against a tensor (on a triax.param, on an op result,
// on a function argument and through dist.sharding_constraint), the
// discardable-attribute hooks, and the collectives.
// RUN: triax-opt %s -split-input-file -verify-diagnostics

//===----------------------------------------------------------------------===//
// dist.mesh
//===----------------------------------------------------------------------===//

// expected-error @+1 {{'dist.mesh' op mesh needs at least one axis}}
dist.mesh @m <[]>

// -----

// expected-error @+1 {{'dist.mesh' op has 1 axis names but 2 sizes}}
"dist.mesh"() <{sym_name = "m", axis_names = ["dp"], axis_sizes = array<i64: 2, 4>}> : () -> ()

// -----

// expected-error @+1 {{'dist.mesh' op axis names must be non-empty}}
dist.mesh @m <["dp"=2, ""=2]>

// -----

// expected-error @+1 {{'dist.mesh' op axis "dp" appears more than once}}
dist.mesh @m <["dp"=2, "tp"=2, "dp"=4]>

// -----

// expected-error @+1 {{'dist.mesh' op axis "tp" has size 0; expected a size >= 1}}
dist.mesh @m <["dp"=2, "tp"=0]>

// -----

// expected-error @+1 {{'dist.mesh' op axis "dp" has size -2; expected a size >= 1}}
dist.mesh @m <["dp"=-2]>

// -----

// expected-error @+1 {{expected '='}}
dist.mesh @m <["dp", "tp"=2]>

// -----

// expected-error @+1 {{expected string}}
dist.mesh @m <[dp=2]>

// -----

// ODS: axis names are strings.
// expected-error @+1 {{'dist.mesh' op attribute 'axis_names' failed to satisfy constraint: string array attribute}}
"dist.mesh"() <{sym_name = "m", axis_names = [1], axis_sizes = array<i64: 2>}> : () -> ()

// -----

// Two meshes cannot share a name.
// expected-note @+1 {{see existing symbol definition here}}
dist.mesh @m <["dp"=2]>
// expected-error @+1 {{redefinition of symbol named 'm'}}
dist.mesh @m <["tp"=2]>

//===----------------------------------------------------------------------===//
// #dist.sharding
//===----------------------------------------------------------------------===//

// -----

dist.mesh @cluster <["dp"=2, "tp"=2]>
// expected-error @+1 {{axis "dp" is used more than once in one sharding}}
func.func @f(%x: tensor<4x4xf32> {dist.sharding = #dist.sharding<@cluster, [{"dp"}, {"dp"}]>}) {
  return
}

// -----

dist.mesh @cluster <["dp"=2, "tp"=2]>
// expected-error @+1 {{axis "tp" is used more than once in one sharding}}
func.func @f(%x: tensor<4x4xf32> {dist.sharding = #dist.sharding<@cluster, [{"tp", "dp", "tp"}, {}]>}) {
  return
}

// -----

dist.mesh @cluster <["dp"=2, "tp"=2]>
// expected-error @+1 {{dimension 1 has an axis that is not a non-empty string}}
func.func @f(%x: tensor<4x4xf32> {dist.sharding = #dist.sharding<@cluster, [{"dp"}, {""}]>}) {
  return
}

// -----

// Axes are quoted strings.
dist.mesh @cluster <["dp"=2, "tp"=2]>
// expected-error @+1 {{expected string}}
func.func @f(%x: tensor<4x4xf32> {dist.sharding = #dist.sharding<@cluster, [{dp}, {}]>}) {
  return
}

// -----

// The mesh is a flat symbol reference.
dist.mesh @cluster <["dp"=2, "tp"=2]>
// expected-error @+1 {{invalid kind of attribute specified}}
func.func @f(%x: tensor<4x4xf32> {dist.sharding = #dist.sharding<"cluster", [{"dp"}, {}]>}) {
  return
}

// -----

// One brace-delimited list per dimension.
dist.mesh @cluster <["dp"=2, "tp"=2]>
// expected-error @+1 {{expected '{'}}
func.func @f(%x: tensor<4x4xf32> {dist.sharding = #dist.sharding<@cluster, ["dp", {}]>}) {
  return
}

//===----------------------------------------------------------------------===//
// dist.sharding on a triax.param (its `type` attribute is the sharded tensor)
//===----------------------------------------------------------------------===//

// -----

dist.mesh @cluster <["dp"=2, "tp"=2]>
triax.model @m config = #triax.train_config<micro_batch = 2, seq = 4> {
  // expected-error @+1 {{'triax.param' op sharding has 1 dimensions but the tensor 'tensor<16x8xf32>' has rank 2}}
  triax.param @wte : tensor<16x8xf32> init <zeros> {dist.sharding = #dist.sharding<@cluster, [{"tp"}]>}
}

// -----

dist.mesh @cluster <["dp"=2, "tp"=2]>
triax.model @m config = #triax.train_config<micro_batch = 2, seq = 4> {
  // expected-error @+1 {{'triax.param' op unknown axis "pp" in mesh @cluster}}
  triax.param @wte : tensor<16x8xf32> init <zeros> {dist.sharding = #dist.sharding<@cluster, [{"pp"}, {}]>}
}

// -----

dist.mesh @cluster <["dp"=2, "tp"=3]>
triax.model @m config = #triax.train_config<micro_batch = 2, seq = 4> {
  // expected-error @+1 {{'triax.param' op dimension 1 of size 8 is not divisible by 3, the number of shards over its axes}}
  triax.param @wte : tensor<16x8xf32> init <zeros> {dist.sharding = #dist.sharding<@cluster, [{}, {"tp"}]>}
}

// -----

// Several axes on one dimension multiply.
dist.mesh @cluster <["dp"=2, "tp"=4]>
triax.model @m config = #triax.train_config<micro_batch = 2, seq = 4> {
  // expected-error @+1 {{'triax.param' op dimension 0 of size 4 is not divisible by 8, the number of shards over its axes}}
  triax.param @b : tensor<4xf32> init <zeros> {dist.sharding = #dist.sharding<@cluster, [{"dp", "tp"}]>}
}

// -----

triax.model @m config = #triax.train_config<micro_batch = 2, seq = 4> {
  // expected-error @+1 {{'triax.param' op sharding refers to unknown mesh @cluster}}
  triax.param @wte : tensor<16x8xf32> init <zeros> {dist.sharding = #dist.sharding<@cluster, [{"tp"}, {}]>}
}

// -----

// A symbol that is not a mesh is not a mesh.
triax.model @m config = #triax.train_config<micro_batch = 2, seq = 4> {
  triax.param @cluster : tensor<16xf32> init <zeros>
  // expected-error @+1 {{'triax.param' op sharding refers to unknown mesh @cluster}}
  triax.param @wte : tensor<16x8xf32> init <zeros> {dist.sharding = #dist.sharding<@cluster, [{"tp"}, {}]>}
}

//===----------------------------------------------------------------------===//
// dist.sharding on an op result
//===----------------------------------------------------------------------===//

// -----

dist.mesh @cluster <["dp"=2, "tp"=2]>
func.func @f(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'triax.gelu' op sharding has 3 dimensions but the tensor 'tensor<4x8xf32>' has rank 2}}
  %y = triax.gelu %x {dist.sharding = #dist.sharding<@cluster, [{"dp"}, {}, {"tp"}]>} : tensor<4x8xf32>
  return
}

// -----

dist.mesh @cluster <["dp"=2, "tp"=2]>
func.func @f(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'triax.gelu' op unknown axis "sp" in mesh @cluster}}
  %y = triax.gelu %x {dist.sharding = #dist.sharding<@cluster, [{"dp"}, {"sp"}]>} : tensor<4x8xf32>
  return
}

// -----

dist.mesh @cluster <["dp"=4, "tp"=2]>
func.func @f(%x: tensor<6x8xf32>) {
  // expected-error @+1 {{'triax.gelu' op dimension 0 of size 6 is not divisible by 4, the number of shards over its axes}}
  %y = triax.gelu %x {dist.sharding = #dist.sharding<@cluster, [{"dp"}, {"tp"}]>} : tensor<6x8xf32>
  return
}

// -----

func.func @f(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'triax.gelu' op sharding refers to unknown mesh @nowhere}}
  %y = triax.gelu %x {dist.sharding = #dist.sharding<@nowhere, [{"dp"}, {}]>} : tensor<4x8xf32>
  return
}

// -----

dist.mesh @cluster <["dp"=2]>
func.func @f() {
  // expected-error @+1 {{'arith.constant' op 'dist.sharding' needs a ranked tensor to shard, got 'f32'}}
  %c = arith.constant {dist.sharding = #dist.sharding<@cluster, [{"dp"}]>} 1.0 : f32
  return
}

// -----

dist.mesh @cluster <["dp"=2]>
func.func @f(%x: tensor<*xf32>) {
  // expected-error @+1 {{'tensor.cast' op 'dist.sharding' needs a ranked tensor to shard, got 'tensor<*xf32>'}}
  %c = tensor.cast %x {dist.sharding = #dist.sharding<@cluster, [{"dp"}]>} : tensor<*xf32> to tensor<*xf32>
  return
}

//===----------------------------------------------------------------------===//
// dist.sharding on a function argument
//===----------------------------------------------------------------------===//

// -----

dist.mesh @cluster <["dp"=2, "tp"=2]>
// expected-error @+1 {{'func.func' op argument #1: sharding has 1 dimensions but the tensor 'tensor<4x8xf32>' has rank 2}}
func.func @f(%a: tensor<4xf32>, %x: tensor<4x8xf32> {dist.sharding = #dist.sharding<@cluster, [{"dp"}]>}) {
  return
}

// -----

dist.mesh @cluster <["dp"=2, "tp"=2]>
// expected-error @+1 {{'func.func' op argument #0: unknown axis "pp" in mesh @cluster}}
func.func @f(%x: tensor<4x8xf32> {dist.sharding = #dist.sharding<@cluster, [{"pp"}, {}]>}) {
  return
}

// -----

dist.mesh @cluster <["dp"=2, "tp"=16]>
// expected-error @+1 {{'func.func' op argument #0: dimension 1 of size 8 is not divisible by 16, the number of shards over its axes}}
func.func @f(%x: tensor<4x8xf32> {dist.sharding = #dist.sharding<@cluster, [{"dp"}, {"tp"}]>}) {
  return
}

// -----

// expected-error @+1 {{'func.func' op argument #0: sharding refers to unknown mesh @cluster}}
func.func @f(%x: tensor<4x8xf32> {dist.sharding = #dist.sharding<@cluster, [{"dp"}, {}]>}) {
  return
}

// -----

dist.mesh @cluster <["dp"=2]>
// expected-error @+1 {{'func.func' op argument #0: 'dist.sharding' needs a ranked tensor to shard, got 'f32'}}
func.func @f(%x: f32 {dist.sharding = #dist.sharding<@cluster, [{"dp"}]>}) {
  return
}

// -----

// The mesh of a model argument is found from inside the model too.
dist.mesh @cluster <["dp"=2, "tp"=2]>
triax.model @m config = #triax.train_config<micro_batch = 3, seq = 4> {
  // expected-error @+1 {{'func.func' op argument #0: dimension 0 of size 3 is not divisible by 2, the number of shards over its axes}}
  func.func @forward(%t: tensor<3x4xi32> {dist.sharding = #dist.sharding<@cluster, [{"dp"}, {}]>}, %y: tensor<3x4xi32>) -> tensor<f32> {
    %z = arith.constant dense<0.0> : tensor<f32>
    return %z : tensor<f32>
  }
}

//===----------------------------------------------------------------------===//
// dist.sharding_constraint
//===----------------------------------------------------------------------===//

// -----

dist.mesh @cluster <["dp"=2, "tp"=2]>
func.func @f(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'dist.sharding_constraint' op sharding has 3 dimensions but the tensor 'tensor<4x8xf32>' has rank 2}}
  %y = dist.sharding_constraint %x <@cluster, [{"dp"}, {}, {}]> : tensor<4x8xf32>
  return
}

// -----

dist.mesh @cluster <["dp"=2, "tp"=2]>
func.func @f(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'dist.sharding_constraint' op unknown axis "TP" in mesh @cluster}}
  %y = dist.sharding_constraint %x <@cluster, [{"dp"}, {"TP"}]> : tensor<4x8xf32>
  return
}

// -----

dist.mesh @cluster <["dp"=8]>
func.func @f(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'dist.sharding_constraint' op dimension 0 of size 4 is not divisible by 8, the number of shards over its axes}}
  %y = dist.sharding_constraint %x <@cluster, [{"dp"}, {}]> : tensor<4x8xf32>
  return
}

// -----

func.func @f(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'dist.sharding_constraint' op refers to unknown mesh @cluster}}
  %y = dist.sharding_constraint %x <@cluster, [{"dp"}, {}]> : tensor<4x8xf32>
  return
}

// -----

dist.mesh @cluster <["dp"=2]>
func.func @f(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{axis "dp" is used more than once in one sharding}}
  %y = dist.sharding_constraint %x <@cluster, [{"dp"}, {"dp"}]> : tensor<4x8xf32>
  return
}

// -----

// ODS: the constraint does not change the type.
dist.mesh @cluster <["dp"=2]>
func.func @f(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'dist.sharding_constraint' op requires the same type for all operands and results}}
  %y = "dist.sharding_constraint"(%x) <{sharding = #dist.sharding<@cluster, [{"dp"}, {}]>}> : (tensor<4x8xf32>) -> tensor<4x8xbf16>
  return
}

//===----------------------------------------------------------------------===//
// Discardable dist.* attributes
//===----------------------------------------------------------------------===//

// -----

// The name is printed as a string attribute today ('"dist.shard"'); the
// pattern accepts it with or without the inner quotes.
func.func @f(%x: tensor<4xf32>) {
  // expected-error @+1 {{unknown dist attribute 'dist.shard'; expected 'dist.sharding', 'dist.zero', 'dist.partial_grad', 'dist.grad_scale', 'dist.stage', 'dist.tied_stages' or 'dist.chunk'}}
  %y = triax.gelu %x {dist.shard = 1 : i64} : tensor<4xf32>
  return
}

// -----

// expected-error-re @+1 {{unknown dist argument attribute '{{"?}}dist.shard{{"?}}'}}
func.func @f(%x: tensor<4xf32> {dist.shard = 1 : i64}) {
  return
}

// -----

func.func @f(%x: tensor<4xf32>) {
  // expected-error @+1 {{'triax.gelu' op 'dist.sharding' must be a #dist.sharding attribute, got "dp"}}
  %y = triax.gelu %x {dist.sharding = "dp"} : tensor<4xf32>
  return
}

// -----

// expected-error @+1 {{'func.func' op argument #0: 'dist.sharding' must be a #dist.sharding attribute, got ["dp"]}}
func.func @f(%x: tensor<4xf32> {dist.sharding = ["dp"]}) {
  return
}

// -----

// dist.partial_grad (sequence parallelism): on a parameter, naming a mesh
// that has its axes.
func.func @f(%x: tensor<4xf32>) {
  // expected-error @+1 {{'triax.gelu' op 'dist.partial_grad' belongs on a parameter (an op with a tensor 'type')}}
  %y = triax.gelu %x {dist.partial_grad = #dist.partial_grad<@cluster, ["tp"]>} : tensor<4xf32>
  return
}

// -----

dist.mesh @cluster <["dp"=2]>
triax.model @m config = #triax.train_config<micro_batch = 1, seq = 2> {
  // expected-error @+1 {{'triax.param' op partial gradient: mesh @cluster has no axis "tp"}}
  triax.param @ln : tensor<8xf32> init <ones> {dist.partial_grad = #dist.partial_grad<@cluster, ["tp"]>}
}

// -----

triax.model @m config = #triax.train_config<micro_batch = 1, seq = 2> {
  // expected-error @+1 {{'triax.param' op partial gradient refers to unknown mesh @nowhere}}
  triax.param @ln : tensor<8xf32> init <ones> {dist.partial_grad = #dist.partial_grad<@nowhere, ["tp"]>}
}

// -----

triax.model @m config = #triax.train_config<micro_batch = 1, seq = 2> {
  // expected-error @+1 {{a partial gradient needs at least one mesh axis}}
  triax.param @ln : tensor<8xf32> init <ones> {dist.partial_grad = #dist.partial_grad<@cluster, []>}
}

//===----------------------------------------------------------------------===//
// Collectives: the group
//===----------------------------------------------------------------------===//

// -----

func.func @f(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'dist.all_reduce' op refers to unknown mesh @cluster}}
  %y = dist.all_reduce sum %x over @cluster ["dp"] : tensor<4x8xf32>
  return
}

// -----

dist.mesh @cluster <["dp"=2, "tp"=2]>
func.func @f(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'dist.all_reduce' op refers to unknown mesh @f}}
  %y = dist.all_reduce sum %x over @f ["dp"] : tensor<4x8xf32>
  return
}

// -----

dist.mesh @cluster <["dp"=2, "tp"=2]>
func.func @f(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'dist.all_reduce' op needs at least one mesh axis}}
  %y = dist.all_reduce avg %x over @cluster [] : tensor<4x8xf32>
  return
}

// -----

dist.mesh @cluster <["dp"=2, "tp"=2]>
func.func @f(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'dist.all_reduce' op unknown axis "pp" in mesh @cluster}}
  %y = dist.all_reduce max %x over @cluster ["dp", "pp"] : tensor<4x8xf32>
  return
}

// -----

dist.mesh @cluster <["dp"=2, "tp"=2]>
func.func @f(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'dist.all_reduce' op axis "dp" is listed twice}}
  %y = dist.all_reduce min %x over @cluster ["dp", "tp", "dp"] : tensor<4x8xf32>
  return
}

// -----

dist.mesh @cluster <["dp"=2, "tp"=2]>
func.func @f(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'dist.all_gather' op needs at least one mesh axis}}
  %y = dist.all_gather %x over @cluster [] dim 0 : tensor<4x8xf32> -> tensor<4x8xf32>
  return
}

// -----

dist.mesh @cluster <["dp"=2, "tp"=2]>
func.func @f(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'dist.reduce_scatter' op unknown axis "sp" in mesh @cluster}}
  %y = dist.reduce_scatter sum %x over @cluster ["sp"] dim 0 : tensor<4x8xf32> -> tensor<2x8xf32>
  return
}

// -----

dist.mesh @cluster <["dp"=2, "tp"=2]>
func.func @f(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'dist.broadcast' op axis "tp" is listed twice}}
  %y = dist.broadcast %x over @cluster ["tp", "tp"] root 0 : tensor<4x8xf32>
  return
}

// -----

func.func @f(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'dist.send' op refers to unknown mesh @cluster}}
  dist.send %x over @cluster ["pp"] to 1 : tensor<4x8xf32>
  return
}

// -----

dist.mesh @cluster <["dp"=2, "pp"=2]>
func.func @f() {
  // expected-error @+1 {{'dist.recv' op unknown axis "tp" in mesh @cluster}}
  %x = dist.recv over @cluster ["tp"] from 0 : tensor<4x8xf32>
  return
}

// -----

// ODS: the reduction is one of sum, avg, max, min.
dist.mesh @cluster <["dp"=2]>
func.func @f(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{custom op 'dist.all_reduce' expected string or keyword containing one of the following enum values for attribute 'reduction' [sum, avg, max, min]}}
  %y = dist.all_reduce prod %x over @cluster ["dp"] : tensor<4x8xf32>
  return
}

//===----------------------------------------------------------------------===//
// dist.all_gather, dist.reduce_scatter: the resized dimension
//===----------------------------------------------------------------------===//

// -----

dist.mesh @cluster <["dp"=2, "tp"=2]>
func.func @f(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'dist.all_gather' op dim 2 is out of range for 'tensor<4x8xf32>'}}
  %y = dist.all_gather %x over @cluster ["dp"] dim 2 : tensor<4x8xf32> -> tensor<4x8xf32>
  return
}

// -----

dist.mesh @cluster <["dp"=2, "tp"=2]>
func.func @f(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'dist.all_gather' op dim -1 is out of range for 'tensor<4x8xf32>'}}
  %y = dist.all_gather %x over @cluster ["dp"] dim -1 : tensor<4x8xf32> -> tensor<4x16xf32>
  return
}

// -----

dist.mesh @cluster <["dp"=2, "tp"=2]>
func.func @f(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'dist.all_gather' op result 'tensor<8x8x1xf32>' must have the input's rank and element type ('tensor<4x8xf32>')}}
  %y = dist.all_gather %x over @cluster ["dp"] dim 0 : tensor<4x8xf32> -> tensor<8x8x1xf32>
  return
}

// -----

dist.mesh @cluster <["dp"=2, "tp"=2]>
func.func @f(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'dist.all_gather' op result 'tensor<8x8xbf16>' must have the input's rank and element type ('tensor<4x8xf32>')}}
  %y = dist.all_gather %x over @cluster ["dp"] dim 0 : tensor<4x8xf32> -> tensor<8x8xbf16>
  return
}

// -----

dist.mesh @cluster <["dp"=2, "tp"=2]>
func.func @f(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'dist.all_gather' op result dimension 1 is 16, expected 32 (input times the group size 4)}}
  %y = dist.all_gather %x over @cluster ["dp", "tp"] dim 1 : tensor<4x8xf32> -> tensor<4x16xf32>
  return
}

// -----

dist.mesh @cluster <["dp"=2, "tp"=2]>
func.func @f(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'dist.all_gather' op result dimension 0 is 8, expected 4 (unchanged)}}
  %y = dist.all_gather %x over @cluster ["tp"] dim 1 : tensor<4x8xf32> -> tensor<8x16xf32>
  return
}

// -----

dist.mesh @cluster <["dp"=2, "tp"=2]>
func.func @f(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'dist.reduce_scatter' op dim 5 is out of range for 'tensor<4x8xf32>'}}
  %y = dist.reduce_scatter sum %x over @cluster ["dp"] dim 5 : tensor<4x8xf32> -> tensor<4x8xf32>
  return
}

// -----

dist.mesh @cluster <["dp"=2, "tp"=2]>
func.func @f(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'dist.reduce_scatter' op result 'tensor<4xf32>' must have the input's rank and element type ('tensor<4x8xf32>')}}
  %y = dist.reduce_scatter sum %x over @cluster ["dp"] dim 0 : tensor<4x8xf32> -> tensor<4xf32>
  return
}

// -----

dist.mesh @cluster <["dp"=3, "tp"=2]>
func.func @f(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'dist.reduce_scatter' op dimension 0 of size 4 is not divisible by the group size 3}}
  %y = dist.reduce_scatter avg %x over @cluster ["dp"] dim 0 : tensor<4x8xf32> -> tensor<1x8xf32>
  return
}

// -----

dist.mesh @cluster <["dp"=2, "tp"=2]>
func.func @f(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'dist.reduce_scatter' op result dimension 1 is 8, expected 2 (input divided by the group size 4)}}
  %y = dist.reduce_scatter sum %x over @cluster ["dp", "tp"] dim 1 : tensor<4x8xf32> -> tensor<4x8xf32>
  return
}

// -----

dist.mesh @cluster <["dp"=2, "tp"=2]>
func.func @f(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'dist.reduce_scatter' op result dimension 1 is 4, expected 8 (unchanged)}}
  %y = dist.reduce_scatter sum %x over @cluster ["dp"] dim 0 : tensor<4x8xf32> -> tensor<2x4xf32>
  return
}

//===----------------------------------------------------------------------===//
// dist.broadcast, dist.send, dist.recv: the member index
//===----------------------------------------------------------------------===//

// -----

dist.mesh @cluster <["dp"=2, "tp"=2]>
func.func @f(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'dist.broadcast' op root 2 is out of range for a group of 2}}
  %y = dist.broadcast %x over @cluster ["dp"] root 2 : tensor<4x8xf32>
  return
}

// -----

dist.mesh @cluster <["dp"=2, "tp"=2]>
func.func @f(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'dist.broadcast' op root -1 is out of range for a group of 4}}
  %y = dist.broadcast %x over @cluster ["dp", "tp"] root -1 : tensor<4x8xf32>
  return
}

// -----

dist.mesh @cluster <["dp"=2, "pp"=4]>
func.func @f(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'dist.send' op destination 4 is out of range for a group of 4}}
  dist.send %x over @cluster ["pp"] to 4 : tensor<4x8xf32>
  return
}

// -----

dist.mesh @cluster <["dp"=2, "pp"=4]>
func.func @f(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'dist.send' op destination -1 is out of range for a group of 4}}
  dist.send %x over @cluster ["pp"] to -1 : tensor<4x8xf32>
  return
}

// -----

dist.mesh @cluster <["dp"=2, "pp"=4]>
func.func @f() {
  // expected-error @+1 {{'dist.recv' op source 8 is out of range for a group of 8}}
  %x = dist.recv over @cluster ["dp", "pp"] from 8 : tensor<4x8xf32>
  return
}

// -----

dist.mesh @cluster <["dp"=2, "pp"=4]>
func.func @f() {
  // expected-error @+1 {{'dist.recv' op source -3 is out of range for a group of 2}}
  %x = dist.recv over @cluster ["dp"] from -3 : tensor<4x8xf32>
  return
}

// -----

// ODS: broadcast does not change the type.
dist.mesh @cluster <["dp"=2]>
func.func @f(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'dist.broadcast' op requires the same type for all operands and results}}
  %y = "dist.broadcast"(%x) <{mesh = @cluster, axes = ["dp"], root = 0 : i64}> : (tensor<4x8xf32>) -> tensor<8x8xf32>
  return
}

// -----

// A sharding on the argument of a function declaration (no entry block) is
// checked against the signature.
dist.mesh @cluster <["dp"=2]>
// expected-error @+1 {{'func.func' op argument #0: dimension 0 of size 3 is not divisible by 2, the number of shards over its axes}}
func.func private @decl(tensor<3xf32> {dist.sharding = #dist.sharding<@cluster, [{"dp"}]>})

// -----

// Shardings on function results are verified like arguments.
dist.mesh @cluster <["dp"=2]>
// expected-error @+1 {{'func.func' op result #0: sharding has 2 dimensions but the tensor 'tensor<4xf32>' has rank 1}}
func.func private @res() -> (tensor<4xf32> {dist.sharding = #dist.sharding<@cluster, [{"dp"}, {}]>})

// -----

dist.mesh @cluster <["dp"=2]>
// expected-error @+1 {{unknown dist result attribute 'dist.foo'}}
func.func private @res() -> (tensor<4xf32> {dist.foo = 1})

// -----

// An op with no single tensor result and no 'type' attribute has nothing
// to shard.
dist.mesh @cluster <["dp"=2]>
func.func @two(%x: tensor<4xf32>) {
  // expected-error @+1 {{'dist.send' op 'dist.sharding' needs an op with one ranked tensor result or a tensor 'type' attribute}}
  dist.send %x over @cluster ["dp"] to 1 {dist.sharding = #dist.sharding<@cluster, [{"dp"}]>} : tensor<4xf32>
  return
}

//===----------------------------------------------------------------------===//
// dist.shard_sequence
//===----------------------------------------------------------------------===//

// -----

dist.mesh @cluster <["cp"=2]>
func.func @f(%x: tensor<2x8xi32>) {
  // expected-error @+1 {{'dist.shard_sequence' op result dimension 1 is 2, expected 4 (input divided by the group size 2)}}
  %y = dist.shard_sequence %x over @cluster ["cp"] dim 1 : tensor<2x8xi32> -> tensor<2x2xi32>
  return
}

// -----

dist.mesh @cluster <["cp"=2]>
func.func @f(%x: tensor<2x6xi32>) {
  // expected-error @+1 {{'dist.shard_sequence' op each member keeps two equal chunks, but its 3 elements along dim 1 are odd}}
  %y = dist.shard_sequence %x over @cluster ["cp"] dim 1 : tensor<2x6xi32> -> tensor<2x3xi32>
  return
}

//===----------------------------------------------------------------------===//
// dist.all_to_all: the split and concat dimensions
//===----------------------------------------------------------------------===//

// -----

dist.mesh @cluster <["dp"=2, "tp"=2]>
func.func @f(%x: tensor<3x8xf32>) {
  // expected-error @+1 {{'dist.all_to_all' op split dimension 0 of size 3 is not divisible by the group size 2}}
  %y = dist.all_to_all %x over @cluster ["dp"] split 0 concat 1 : tensor<3x8xf32> -> tensor<1x16xf32>
  return
}

// -----

dist.mesh @cluster <["dp"=2, "tp"=2]>
func.func @f(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'dist.all_to_all' op concat dimension 2 is out of range for 'tensor<4x8xf32>'}}
  %y = dist.all_to_all %x over @cluster ["dp"] split 0 concat 2 : tensor<4x8xf32> -> tensor<2x16xf32>
  return
}

// -----

dist.mesh @cluster <["dp"=2, "tp"=2]>
func.func @f(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'dist.all_to_all' op result dimension 1 is 8, expected 32 (input times the group size)}}
  %y = dist.all_to_all %x over @cluster ["dp", "tp"] split 0 concat 1 : tensor<4x8xf32> -> tensor<1x8xf32>
  return
}

// -----

dist.mesh @cluster <["dp"=2, "tp"=2]>
func.func @f(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'dist.all_to_all' op result dimension 0 is 2, expected 4 (unchanged: split and concat are the same dimension)}}
  %y = dist.all_to_all %x over @cluster ["dp"] split 0 concat 0 : tensor<4x8xf32> -> tensor<2x8xf32>
  return
}

// -----

dist.mesh @cluster <["dp"=2, "tp"=2]>
func.func @f(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'dist.all_to_all' op result 'tensor<2x16xbf16>' must have the input's rank and element type ('tensor<4x8xf32>')}}
  %y = dist.all_to_all %x over @cluster ["dp"] split 0 concat 1 : tensor<4x8xf32> -> tensor<2x16xbf16>
  return
}

// -----

// dist.grad_scale (dist-expert-parallel): a finite number > 0.
triax.model @m config = #triax.train_config<micro_batch = 1, seq = 2> {
  // expected-error @+1 {{'triax.param' op 'dist.grad_scale' must be a finite number > 0, got 0.000000e+00 : f64}}
  triax.param @w : tensor<2x4x4xf32> init <zeros> {dist.grad_scale = 0.0 : f64}
}

// -----

triax.model @m config = #triax.train_config<micro_batch = 1, seq = 2> {
  // expected-error @+1 {{'triax.param' op 'dist.grad_scale' must be a finite number > 0, got "half"}}
  triax.param @w : tensor<2x4x4xf32> init <zeros> {dist.grad_scale = "half"}
}
