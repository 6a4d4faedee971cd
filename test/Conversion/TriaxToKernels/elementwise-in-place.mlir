// convert-triax-to-kernels{elementwise-in-place} (the CPU and CUDA
// pipelines set it): an elementwise op's result (triax.add, mul, silu_grad, gelu_grad,
// each result of a triax.fused_elementwise) is written over an operand of
// its type that nothing reads afterwards and that is a buffer of the
// kernels' own (GradAccumulation.h's overwritableOperand, the rule the
// cost model's [A9] follows too). Each iteration loads every operand's
// element, then stores the result's at the same index: the arithmetic of a
// separate buffer, bit for bit. Otherwise, and without the option, a new
// buffer.
// RUN: triax-opt %s --split-input-file --convert-triax-to-kernels=elementwise-in-place --cse | FileCheck %s
// RUN: triax-opt %s --split-input-file --convert-triax-to-kernels --cse | FileCheck %s --check-prefix=OFF

// A residual sum: the caller's value (an argument) is not written over; the
// GEMM's output, which nothing reads after the sum, is.
// CHECK-LABEL: func.func @residual(
// CHECK-SAME:    %[[X:[a-z0-9]+]]: memref<2x3x8xf32>
// CHECK:         %[[Y:.*]] = memref.alloc() : memref<2x3x8xf32>
// CHECK:         call @trx_sgemm
// CHECK-NOT:     memref.alloc() : memref<2x3x8xf32>
// CHECK:         %[[YF:.*]] = memref.collapse_shape %[[Y]]
// CHECK:         scf.parallel
// CHECK:           memref.load %[[YF]]
// CHECK:           memref.store %{{.*}}, %[[YF]]
// CHECK-NOT:     memref.alloc() : memref<2x3x8xf32>
// CHECK:         return %[[Y]]
// OFF-LABEL:   func.func @residual(
// OFF:           memref.alloc() : memref<2x3x8xf32>
// OFF:           memref.alloc() : memref<2x3x8xf32>
triax.model @m config = #triax.train_config<micro_batch = 2, seq = 3, global_batch = 2> {
  triax.param @w : tensor<8x8xf32> init <normal, std = 0.02>
  func.func @forward(%tokens: tensor<2x3xi32>, %targets: tensor<2x3xi32>) -> tensor<f32> {
    %loss = arith.constant dense<0.0> : tensor<f32>
    return %loss : tensor<f32>
  }
}
func.func @residual(%x: tensor<2x3x8xf32>, %w: tensor<8x8xf32>) -> tensor<2x3x8xf32> {
  %y = triax.linear %x, %w : (tensor<2x3x8xf32>, tensor<8x8xf32>) -> tensor<2x3x8xf32>
  %s = triax.add %x, %y : tensor<2x3x8xf32>
  return %s : tensor<2x3x8xf32>
}

// -----

// The GEMM's output is read after the sum: a new buffer.
// CHECK-LABEL: func.func @read_after(
// CHECK:         memref.alloc() : memref<2x3x8xf32>
// CHECK:         call @trx_sgemm
// CHECK:         memref.alloc() : memref<2x3x8xf32>
// CHECK:         call @trx_sgemm
triax.model @m config = #triax.train_config<micro_batch = 2, seq = 3, global_batch = 2> {
  triax.param @w : tensor<8x8xf32> init <normal, std = 0.02>
  func.func @forward(%tokens: tensor<2x3xi32>, %targets: tensor<2x3xi32>) -> tensor<f32> {
    %loss = arith.constant dense<0.0> : tensor<f32>
    return %loss : tensor<f32>
  }
}
func.func @read_after(%x: tensor<2x3x8xf32>, %w: tensor<8x8xf32>) -> (tensor<2x3x8xf32>, tensor<2x3x8xf32>) {
  %y = triax.linear %x, %w : (tensor<2x3x8xf32>, tensor<8x8xf32>) -> tensor<2x3x8xf32>
  %s = triax.add %x, %y : tensor<2x3x8xf32>
  %z = triax.linear %y, %w : (tensor<2x3x8xf32>, tensor<8x8xf32>) -> tensor<2x3x8xf32>
  return %s, %z : tensor<2x3x8xf32>, tensor<2x3x8xf32>
}

// -----

// A collective reads the GEMM's output before the sum (it may still be
// reading it, on another stream): a new buffer.
// CHECK-LABEL: func.func @collective_reader(
// CHECK:         memref.alloc() : memref<4xf32>
// CHECK:         call @trx_all_reduce_f32
// CHECK:         memref.alloc() : memref<4xf32>
// CHECK:         scf.parallel
dist.mesh @cluster <["dp"=2]>
triax.model @m config = #triax.train_config<micro_batch = 2, seq = 3, global_batch = 2> {
  triax.param @w : tensor<8x8xf32> init <normal, std = 0.02>
  func.func @forward(%tokens: tensor<2x3xi32>, %targets: tensor<2x3xi32>) -> tensor<f32> {
    %loss = arith.constant dense<0.0> : tensor<f32>
    return %loss : tensor<f32>
  }
}
func.func @collective_reader(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %y = triax.mul %x, %x : tensor<4xf32>
  %r = dist.all_reduce sum %y over @cluster ["dp"] : tensor<4xf32>
  %s = triax.add %y, %x : tensor<4xf32>
  return %r, %s : tensor<4xf32>, tensor<4xf32>
}

// -----

// A block's argument is its caller's value, which the cost model sees
// through the block: not written over, though inlined it is the product,
// which nothing reads after the sum. The sum after the block writes over
// the block's result (its body's sum).
// CHECK-LABEL: func.func @triax_forward(
// CHECK:         %[[X:.*]] = memref.alloc() : memref<2x3x8xf32>
// CHECK:         %[[P:.*]] = memref.alloc() : memref<2x3x8xf32>
// CHECK:         scf.parallel
// CHECK:         %[[S:.*]] = memref.alloc() : memref<2x3x8xf32>
// CHECK:         %[[SF:.*]] = memref.collapse_shape %[[S]]
// CHECK:         scf.parallel
// CHECK-NOT:     memref.alloc() : memref<2x3x8xf32>
// CHECK:         scf.parallel
// CHECK:           memref.load %[[SF]]
// CHECK:           memref.store %{{.*}}, %[[SF]]
triax.model @m config = #triax.train_config<micro_batch = 2, seq = 3, global_batch = 2> {
  triax.param @w : tensor<8x8xf32> init <normal, std = 0.02>
  func.func @forward(%tokens: tensor<2x3xi32>, %targets: tensor<2x3xi32>) -> tensor<f32> {
    %w = triax.get_param @w : tensor<8x8xf32>
    %x = triax.embedding %tokens, %w : (tensor<2x3xi32>, tensor<8x8xf32>) -> tensor<2x3x8xf32>
    %p = triax.mul %x, %x : tensor<2x3x8xf32>
    %b = triax.block "b"(%p) : (tensor<2x3x8xf32>) -> tensor<2x3x8xf32> {
    ^bb0(%a: tensor<2x3x8xf32>):
      %s = triax.add %a, %a : tensor<2x3x8xf32>
      triax.yield %s : tensor<2x3x8xf32>
    }
    %t = triax.add %b, %x : tensor<2x3x8xf32>
    %loss = triax.cross_entropy %t, %targets : (tensor<2x3x8xf32>, tensor<2x3xi32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// SwiGLU's backward: the product's gradient makes the up and SiLU
// gradients; the second product is written over it (its last reader), the
// SiLU gradient over the first product (operand 1, the upstream gradient).
// A fused group's result over the first input that dies there.
// CHECK-LABEL: func.func @swiglu_grad(
// CHECK:         %[[D:.*]] = memref.alloc() : memref<2x4xf32>
// CHECK:         %[[DS:.*]] = memref.alloc() : memref<2x4xf32>
// CHECK-NOT:     memref.alloc() : memref<2x4xf32>
// CHECK:         return %[[DS]], %[[D]]
// OFF-LABEL:   func.func @swiglu_grad(
// OFF-COUNT-4:   memref.alloc() : memref<2x4xf32>
// CHECK-LABEL: func.func @fused(
// CHECK-SAME:    %[[A:[a-z0-9]+]]: memref<2x4xf32>
// CHECK:         %[[B:.*]] = memref.alloc() : memref<2x4xf32>
// CHECK-NOT:     memref.alloc() : memref<2x4xf32>
// CHECK:         return %[[B]]
triax.model @m config = #triax.train_config<micro_batch = 2, seq = 3, global_batch = 2> {
  triax.param @w : tensor<8x8xf32> init <normal, std = 0.02>
  func.func @forward(%tokens: tensor<2x3xi32>, %targets: tensor<2x3xi32>) -> tensor<f32> {
    %loss = arith.constant dense<0.0> : tensor<f32>
    return %loss : tensor<f32>
  }
}
func.func @swiglu_grad(%gate: tensor<2x4xf32>, %up: tensor<2x4xf32>, %silu: tensor<2x4xf32>, %dy: tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>) {
  %d = triax.mul %dy, %dy : tensor<2x4xf32>
  %dsilu = triax.mul %d, %up : tensor<2x4xf32>
  %dup = triax.mul %d, %silu : tensor<2x4xf32>
  %dgate = triax.silu_grad %gate, %dsilu : tensor<2x4xf32>
  return %dgate, %dup : tensor<2x4xf32>, tensor<2x4xf32>
}
func.func @fused(%a: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %b = triax.mul %a, %a : tensor<2x4xf32>
  %r = triax.fused_elementwise(%a, %b) : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32> {
  ^bb0(%x: f32, %y: f32):
    %s = arith.addf %x, %y : f32
    triax.fused_yield %s : f32
  }
  return %r : tensor<2x4xf32>
}

// -----

// A parameter's converted copy is made once per function and read by every
// block that converts the parameter: never written over, though here the
// product is its only reader.
// CHECK-LABEL: func.func @triax_forward(
// CHECK:         %[[COPY:.*]] = memref.alloc() : memref<8x8xbf16>
// CHECK:         %[[P:.*]] = memref.alloc() : memref<8x8xbf16>
// CHECK-NOT:     memref.alloc() : memref<8x8xbf16>
// CHECK:         return
triax.model @m config = #triax.train_config<micro_batch = 2, seq = 3, global_batch = 2> {
  triax.param @w : tensor<8x8xf32> init <normal, std = 0.02>
  func.func @forward(%tokens: tensor<2x3xi32>, %targets: tensor<2x3xi32>) -> tensor<f32> {
    %w = triax.get_param @w : tensor<8x8xf32>
    %c = triax.convert %w : tensor<8x8xf32> to tensor<8x8xbf16>
    %p = triax.mul %c, %c : tensor<8x8xbf16>
    %x = triax.embedding %tokens, %p : (tensor<2x3xi32>, tensor<8x8xbf16>) -> tensor<2x3x8xbf16>
    %f = triax.convert %x : tensor<2x3x8xbf16> to tensor<2x3x8xf32>
    %loss = triax.cross_entropy %f, %targets : (tensor<2x3x8xf32>, tensor<2x3xi32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}
