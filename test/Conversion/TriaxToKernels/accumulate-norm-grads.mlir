// convert-triax-to-kernels{accumulate-in-gemm}, column sums by columns or
// chunks (the CUDA pipeline): a norm's parameter gradients that only their
// accumulate_grads read are added into their gradient buffers by the
// column sums (g + sum, the single f32 addition the accumulation kernel
// made): no buffer of their own, no accumulation kernel. A LayerNorm's
// weight and bias gradients are summed by one nest, so both or neither.
// By rows (the CPU) they keep their buffers.
// RUN: triax-opt %s -split-input-file --convert-triax-to-kernels="column-sums=columns accumulate-in-gemm" | FileCheck %s
// RUN: triax-opt %s -split-input-file --convert-triax-to-kernels="column-sums=chunks accumulate-in-gemm" | FileCheck %s --check-prefix=CHUNKS
// RUN: triax-opt %s -split-input-file --convert-triax-to-kernels="column-sums=rows accumulate-in-gemm" | FileCheck %s --check-prefix=ROWS

// CHECK-LABEL: func.func @triax_forward_backward(
// The gradient buffers (state kind 3) of g (parameter 0) and b (1); dx
// gets a buffer, the parameter gradients none.
// CHECK-NOT:     memref.alloc() {{.*}}: memref<8xf32>
// CHECK:         %[[SG:[0-9]+]] = call @trx_state_1d(%c3_i32{{.*}}, %c0_i64{{.*}})
// CHECK-NEXT:    %[[GG:[a-z0-9_]+]] = memref.cast %[[SG]]
// CHECK:         %[[SB:[0-9]+]] = call @trx_state_1d(%c3_i32{{.*}}, %c1_i64{{.*}})
// CHECK-NEXT:    %[[GB:[a-z0-9_]+]] = memref.cast %[[SB]]
// CHECK-NOT:     memref.alloc() {{.*}}: memref<8xf32>
// CHECK:         scf.parallel (%[[N:.*]]) = ({{.*}}) to (%c8{{.*}}) step
// CHECK:           %[[S:.*]]:2 = scf.for {{.*}} -> (f32, f32) {
// CHECK:           %[[OLDW:.*]] = memref.load %[[GG]][%[[N]]] : memref<8xf32>
// CHECK-NEXT:      %[[NEWW:.*]] = arith.addf %[[OLDW]], %[[S]]#0 : f32
// CHECK-NEXT:      memref.store %[[NEWW]], %[[GG]][%[[N]]] : memref<8xf32>
// CHECK-NEXT:      %[[OLDB:.*]] = memref.load %[[GB]][%[[N]]] : memref<8xf32>
// CHECK-NEXT:      %[[NEWB:.*]] = arith.addf %[[OLDB]], %[[S]]#1 : f32
// CHECK-NEXT:      memref.store %[[NEWB]], %[[GB]][%[[N]]] : memref<8xf32>
// RMSNorm's weight gradient (r, parameter 2) the same way; no accumulation
// kernel anywhere.
// CHECK-NOT:     memref.alloc() {{.*}}: memref<8xf32>
// CHECK:         %[[SR:[0-9]+]] = call @trx_state_1d(%c3_i32{{.*}}, %c2_i64{{.*}})
// CHECK-NEXT:    %[[GR:[a-z0-9_]+]] = memref.cast %[[SR]]
// CHECK-NOT:     memref.alloc() {{.*}}: memref<8xf32>
// CHECK:         scf.parallel (%[[M:.*]]) = ({{.*}}) to (%c8{{.*}}) step
// CHECK:           %[[T:.*]] = scf.for {{.*}} -> (f32) {
// CHECK:           %[[OLDR:.*]] = memref.load %[[GR]][%[[M]]] : memref<8xf32>
// CHECK-NEXT:      %[[NEWR:.*]] = arith.addf %[[OLDR]], %[[T]] : f32
// CHECK-NEXT:      memref.store %[[NEWR]], %[[GR]][%[[M]]] : memref<8xf32>
// CHECK-NOT:     memref<8xf32>
// CHECK:         return

// In chunks: the second nest adds the chunks' sums into the buffers.
// CHUNKS-LABEL: func.func @triax_forward_backward(
// CHUNKS:         scf.parallel (%{{.*}}, %{{.*}}) = ({{.*}}) to (%c4{{.*}}, %c8{{.*}}) step
// CHUNKS:         scf.parallel (%[[N:.*]]) = ({{.*}}) to (%c8{{.*}}) step
// CHUNKS:           %[[S:.*]]:2 = scf.for {{.*}} to %c4{{.*}} {{.*}} -> (f32, f32) {
// CHUNKS:           arith.addf %{{.*}}, %[[S]]#0 : f32
// CHUNKS:           arith.addf %{{.*}}, %[[S]]#1 : f32

// ROWS-LABEL: func.func @triax_forward_backward(
// ROWS-COUNT-3:   memref.alloc() {{.*}}: memref<8xf32>
triax.model @m config = #triax.train_config<micro_batch = 4, seq = 16> {
  triax.param @g : tensor<8xf32> init <ones>
  triax.param @b : tensor<8xf32> init <zeros>
  triax.param @r : tensor<8xf32> init <ones>
  func.func @forward(%tokens: tensor<4x16xi32>, %targets: tensor<4x16xi32>) -> tensor<f32> {
    %loss = arith.constant dense<0.0> : tensor<f32>
    return %loss : tensor<f32>
  }
  func.func @forward_backward(%x: tensor<4x16x8xf32>, %dy: tensor<4x16x8xf32>) -> tensor<f32> {
    %g = triax.get_param @g : tensor<8xf32>
    %r = triax.get_param @r : tensor<8xf32>
    %dx, %dw, %db = triax.layer_norm_grad %x, %g, %dy : (tensor<4x16x8xf32>, tensor<8xf32>, tensor<4x16x8xf32>) -> (tensor<4x16x8xf32>, tensor<8xf32>, tensor<8xf32>)
    triax.accumulate_grad @g, %dw : tensor<8xf32>
    triax.accumulate_grad @b, %db : tensor<8xf32>
    %dx2, %drw = triax.rms_norm_grad %dx, %r, %dy : (tensor<4x16x8xf32>, tensor<8xf32>, tensor<4x16x8xf32>) -> (tensor<4x16x8xf32>, tensor<8xf32>)
    triax.accumulate_grad @r, %drw : tensor<8xf32>
    %loss = arith.constant dense<0.0> : tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// The bias gradient has another reader (the sum is accumulated term by
// term): both keep their buffers, the column sums store into them, and
// the weight's is then added into its gradient buffer by its own kernel.
// CHECK-LABEL: func.func @triax_forward_backward(
// CHECK:         %[[DW:.*]] = memref.alloc() {{.*}}: memref<8xf32>
// CHECK-NEXT:    %[[DB:.*]] = memref.alloc() {{.*}}: memref<8xf32>
// CHECK:         scf.parallel (%[[N:.*]]) = ({{.*}}) to (%c8{{.*}}) step
// CHECK:           %[[S:.*]]:2 = scf.for {{.*}} -> (f32, f32) {
// CHECK:           memref.store %[[S]]#0, %[[DW]][%[[N]]] : memref<8xf32>
// CHECK-NEXT:      memref.store %[[S]]#1, %[[DB]][%[[N]]] : memref<8xf32>
// CHECK:         call @trx_state_1d(%c3_i32{{.*}}, %c0_i64{{.*}})
// CHECK:         scf.parallel
// CHECK:           memref.load %[[DW]]
triax.model @m config = #triax.train_config<micro_batch = 4, seq = 16> {
  triax.param @g : tensor<8xf32> init <ones>
  triax.param @b : tensor<8xf32> init <zeros>
  func.func @forward(%tokens: tensor<4x16xi32>, %targets: tensor<4x16xi32>) -> tensor<f32> {
    %loss = arith.constant dense<0.0> : tensor<f32>
    return %loss : tensor<f32>
  }
  func.func @forward_backward(%x: tensor<4x16x8xf32>, %dy: tensor<4x16x8xf32>) -> tensor<f32> {
    %g = triax.get_param @g : tensor<8xf32>
    %dx, %dw, %db = triax.layer_norm_grad %x, %g, %dy : (tensor<4x16x8xf32>, tensor<8xf32>, tensor<4x16x8xf32>) -> (tensor<4x16x8xf32>, tensor<8xf32>, tensor<8xf32>)
    triax.accumulate_grad @g, %dw : tensor<8xf32>
    %twice = triax.add %db, %db : tensor<8xf32>
    triax.accumulate_grad @b, %twice : tensor<8xf32>
    %loss = arith.constant dense<0.0> : tensor<f32>
    return %loss : tensor<f32>
  }
}
