// Kernels on bf16 tensors compute in f32: a bf16 element is extended when
// loaded (arith.extf) and an f32 value rounded when stored into a bf16
// buffer (arith.truncf, to nearest even); scratch statistics and the loss
// stay f32. triax.convert is just a loop of that load and store.
// RUN: triax-opt %s --triax-fuse-elementwise --convert-triax-to-kernels | FileCheck %s

triax.model @m config = #triax.train_config<micro_batch = 2, seq = 4, compute = bf16> {
  triax.param @emb : tensor<16x16xf32> init <normal, std = 0.02> decay
  triax.param @ln.weight : tensor<16xf32> init <ones>
  triax.param @ln.bias : tensor<16xf32> init <zeros>
  func.func @forward(%tokens: tensor<2x4xi32>, %targets: tensor<2x4xi32>) -> tensor<f32> {
    %emb = triax.get_param @emb : tensor<16x16xf32>
    %e = triax.convert %emb : tensor<16x16xf32> to tensor<16x16xbf16>
    %x = triax.embedding %tokens, %e : (tensor<2x4xi32>, tensor<16x16xbf16>) -> tensor<2x4x16xbf16>
    %w = triax.get_param @ln.weight : tensor<16xf32>
    %wb = triax.convert %w : tensor<16xf32> to tensor<16xbf16>
    %b = triax.get_param @ln.bias : tensor<16xf32>
    %bb = triax.convert %b : tensor<16xf32> to tensor<16xbf16>
    %h = triax.layer_norm %x, %wb, %bb : (tensor<2x4x16xbf16>, tensor<16xbf16>, tensor<16xbf16>) -> tensor<2x4x16xbf16>
    %g = triax.gelu %h : tensor<2x4x16xbf16>
    %s = triax.add %g, %x : tensor<2x4x16xbf16>
    %loss = triax.cross_entropy %s, %targets : (tensor<2x4x16xbf16>, tensor<2x4xi32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// CHECK-LABEL: func.func @triax_forward
// The parameter is read from the runtime's f32 state and rounded into a
// bf16 buffer.
// CHECK: %[[EMB16:.*]] = memref.alloc() : memref<16x16xbf16>
// CHECK: scf.parallel
// CHECK:   %[[P:.*]] = memref.load %{{.*}} : memref<256xf32>
// CHECK:   %[[PT:.*]] = arith.truncf %[[P]] : f32 to bf16
// CHECK:   memref.store %[[PT]], %{{.*}} : memref<256xbf16>
// The lookup moves bf16 elements through f32.
// CHECK: memref.alloc() : memref<2x4x16xbf16>
// CHECK: scf.parallel
// CHECK:   %[[T:.*]] = memref.load %{{.*}} : memref<16x16xbf16>
// CHECK:   %[[TE:.*]] = arith.extf %[[T]] : bf16 to f32
// CHECK:   %[[TT:.*]] = arith.truncf %[[TE]] : f32 to bf16
// CHECK:   memref.store %[[TT]], %{{.*}} : memref<8x16xbf16>
// layer_norm: the row statistics are f32 loop-carried values.
// CHECK: memref.alloc() : memref<2x4x16xbf16>
// CHECK: scf.parallel
// CHECK:   scf.for {{.*}} iter_args(%{{.*}} = %{{.*}}) -> (f32)
// CHECK:     %[[XL:.*]] = memref.load %{{.*}} : memref<8x16xbf16>
// CHECK:     arith.extf %[[XL]] : bf16 to f32
// CHECK:     arith.addf %{{.*}} : f32
// CHECK:   scf.for
// CHECK:     arith.truncf %{{.*}} : f32 to bf16
// CHECK:     memref.store %{{.*}} : memref<8x16xbf16>
// gelu + add, fused: f32 scalars in the region, one rounding per store.
// CHECK: memref.alloc() : memref<2x4x16xbf16>
// CHECK: scf.parallel
// CHECK:   arith.extf %{{.*}} : bf16 to f32
// CHECK:   arith.extf %{{.*}} : bf16 to f32
// CHECK:   math.tanh %{{.*}} : f32
// CHECK:   %[[R:.*]] = arith.truncf %{{.*}} : f32 to bf16
// CHECK-NEXT: memref.store %[[R]], %{{.*}} : memref<128xbf16>
// cross_entropy over bf16 logits: f32 per-row losses, f32 result.
// CHECK: memref.alloc() : memref<8xf32>
// CHECK: arith.extf %{{.*}} : bf16 to f32
// CHECK: memref.alloc() : memref<f32>
// CHECK: return %{{.*}} : f32
