// ZeRO's buckets lowered (dist-zero{bucket-mb}): tiny on dp=2 at 0.02 MiB,
// whose second bucket is wpe (64x64), ln_1's weight and bias (64 each) and
// q.weight (64x64): chunks of 2048, 32, 32 and 2048 elements, a member's
// part 4160, the message 2 x 4160.
// RUN: triax-model tiny --layers 1 | triax-opt --triax-autodiff --dist-zero="stage=1 dp=2 bucket-mb=0.02" --convert-triax-to-kernels | FileCheck %s --check-prefix=Z1
// RUN: triax-model tiny --layers 1 | triax-opt --triax-autodiff --dist-zero="stage=2 dp=2 bucket-mb=0.02" --convert-triax-to-kernels | FileCheck %s --check-prefix=Z2
// RUN: triax-model tiny --layers 1 | triax-opt --triax-autodiff --dist-zero="stage=3 dp=2 prefetch=false bucket-mb=0.02" --convert-triax-to-kernels | FileCheck %s --check-prefix=Z3
// RUN: triax-model tiny --layers 1 | triax-opt --triax-autodiff --dist-zero="stage=3 dp=2 prefetch=false bucket-mb=0.02" --convert-triax-to-kernels="fuse-bucket-copies=true kernel-param-bytes=160" | FileCheck %s --check-prefix=FUSED

// Stage 1, the reduce-scatter: one nest per gradient over (member, element
// of its chunk) writes its elements of the packed [2, 4160] once (member
// i's row: chunk i of every gradient, zero past a gradient's end; wpe's at
// column 0, ln_1's weight at 2048); one reduce-scatter of the 8320
// elements; this member's 4160 copied out into the four chunks, one loop
// each.
// Z1-LABEL: func.func @triax_optimizer_step(
// Z1: %[[PACK:.*]] = memref.alloc() : memref<2x4160xf32>
// Z1: scf.parallel (%[[M:.*]], %[[T:.*]]) = ({{.*}}) to (%c2{{.*}}, %c2048{{.*}})
// Z1: arith.muli %[[M]], %c2048
// Z1: arith.cmpi ule
// Z1: %[[COL:.*]] = arith.addi %[[T]], %c0
// Z1: arith.select
// Z1: memref.store %{{.*}}, %[[PACK]][%[[M]], %[[COL]]] : memref<2x4160xf32>
// Z1: scf.parallel (%[[M2:.*]], %[[T2:.*]]) = ({{.*}}) to (%c2{{.*}}, %c32{{.*}})
// Z1: %[[COL2:.*]] = arith.addi %[[T2]], %c2048
// Z1: memref.store %{{.*}}, %[[PACK]][%[[M2]], %[[COL2]]] : memref<2x4160xf32>
// Z1: %[[PART:.*]] = memref.alloc() : memref<4160xf32>
// Z1: %[[FLAT:.*]] = memref.collapse_shape %[[PACK]] {{\[\[}}0, 1]] : memref<2x4160xf32> into memref<8320xf32>
// Z1: %[[IN:.*]] = memref.cast %[[FLAT]] : memref<8320xf32> to memref<?xf32>
// Z1: %[[OUT:.*]] = memref.cast %[[PART]] : memref<4160xf32> to memref<?xf32>
// Z1: call @trx_reduce_scatter_f32(%[[IN]], %[[OUT]], %c1_i32{{.*}}, %c1_i64{{.*}})
// Z1: memref.alloc() : memref<2048xf32>
// Z1-NEXT: memref.alloc() : memref<32xf32>
// Z1-NEXT: memref.alloc() : memref<32xf32>
// Z1-NEXT: memref.alloc() : memref<2048xf32>
// Z1: scf.parallel (%{{.*}}) = ({{.*}}) to (%c2048{{.*}})
// Z1: memref.load %[[PART]]

// Stage 1, the gathers: a one-parameter bucket (wte's 65,536 bytes fill
// one) is the runtime's in-place gather; the four of the next bucket pack
// this member's chunks (the runtime's chunk views) into 4160 elements, one
// all-gather into 8320, and each parameter's elements are copied out of
// the members' parts into its buffer (one loop per parameter, each over
// its elements: wpe's 4096 at member e / 2048's part, offset e mod 2048).
// Z1: call @trx_zero_all_gather_param(%c0_i64{{.*}}, %c1_i64{{.*}})
// Z1: %[[WPE:.*]] = call @trx_state_chunk(%c0_i32{{.*}}, %c1_i64{{.*}}) : (i32, i64) -> memref<?xf32>
// Z1: call @trx_state_2d(%c0_i32{{.*}}, %c1_i64{{.*}}) : (i32, i64) -> memref<?x?xf32>
// Z1: call @trx_state_chunk(%c0_i32{{.*}}, %c4_i64{{.*}}) : (i32, i64) -> memref<?xf32>
// Z1: %[[SEND:.*]] = memref.alloc() : memref<4160xf32>
// Z1: scf.parallel (%{{.*}}) = ({{.*}}) to (%c2048
// Z1: memref.store %{{.*}}, %[[SEND]]
// Z1: %[[RECV:.*]] = memref.alloc() : memref<8320xf32>
// Z1: %[[S:.*]] = memref.cast %[[SEND]] : memref<4160xf32> to memref<?xf32>
// Z1: %[[R:.*]] = memref.cast %[[RECV]] : memref<8320xf32> to memref<?xf32>
// Z1: call @trx_all_gather_f32(%[[S]], %[[R]], %c1_i64{{.*}})
// Z1: scf.parallel (%[[E:.*]]) = ({{.*}}) to (%c4096
// Z1: arith.divui %[[E]], %c2048
// Z1: arith.remui %[[E]], %c2048
// Z1: memref.load %[[RECV]]

// Stage 2: the backward's first bucket (4256 elements a member; its
// buffers allocated before) in one gradient region: the packing, the reduce-scatter and the loops adding
// each chunk of this member's part into its (chunk-sized) gradient buffer.
// Z2-LABEL: func.func @triax_forward_backward(
// Z2: %[[PACK:.*]] = memref.alloc() : memref<2x4256xf32>
// Z2-NEXT: %[[PART:.*]] = memref.alloc() : memref<4256xf32>
// Z2-NEXT: call @trx_comm_grads_begin() : () -> ()
// Z2: call @trx_reduce_scatter_f32
// Z2: call @trx_state_1d(%c3_i32
// Z2: scf.parallel
// Z2: memref.load %[[PART]]
// Z2: arith.addf
// Z2: call @trx_comm_grads_end() : () -> ()

// Stage 3, a block's first bucket of gathers: ln_1's weight and bias, q's
// weight and bias and k's weight, chunks of 32, 32, 2048, 32 and 2048
// elements (part 4192). The five whole results are allocated first; this
// member's chunks (the parameter state's views) are copied into the part,
// one loop each at offsets 0, 32, 64, 2112 and 2144; one all-gather of the
// part into the 2 x 4192 message; and element e of a result is read from
// member e / k_j's part at the result's offset plus e mod k_j.
// Z3-LABEL: func.func @triax_forward_backward(
// Z3: %[[LNW:.*]] = memref.alloc() : memref<64xf32>
// Z3: %[[PART:.*]] = memref.alloc() : memref<4192xf32>
// Z3: scf.parallel (%[[T:.*]]) = ({{.*}}) to (%c32{{.*}})
// Z3: %[[E:.*]] = arith.addi %[[T]], %c0
// Z3: memref.store %{{.*}}, %[[PART]][%[[E]]] : memref<4192xf32>
// Z3: scf.parallel
// Z3: arith.addi %{{.*}}, %c32
// Z3: scf.parallel
// Z3: arith.addi %{{.*}}, %c64
// Z3: scf.parallel
// Z3: arith.addi %{{.*}}, %c2112
// Z3: scf.parallel
// Z3: arith.addi %{{.*}}, %c2144
// Z3: %[[PARTS:.*]] = memref.alloc() : memref<8384xf32>
// Z3: %[[IN:.*]] = memref.cast %[[PART]] : memref<4192xf32> to memref<?xf32>
// Z3: %[[OUT:.*]] = memref.cast %[[PARTS]] : memref<8384xf32> to memref<?xf32>
// Z3: call @trx_all_gather_f32(%[[IN]], %[[OUT]], %c1_i64{{.*}})
// Z3: scf.parallel (%[[U:.*]]) = ({{.*}}) to (%c64{{.*}})
// Z3: %[[MEMBER:.*]] = arith.divui %[[U]], %c32
// Z3: %[[OFF:.*]] = arith.remui %[[U]], %c32
// Z3: %[[AT:.*]] = arith.addi %c0{{.*}}, %[[OFF]]
// Z3: %[[ROW:.*]] = arith.muli %[[MEMBER]], %c4192
// Z3: %[[SRC:.*]] = arith.addi %[[ROW]], %[[AT]]
// Z3: %[[V:.*]] = memref.load %[[PARTS]][%[[SRC]]] : memref<8384xf32>
// Z3: memref.store %[[V]], %[[LNW]][%[[U]]] : memref<64xf32>

// fuse-bucket-copies (the CUDA pipeline's; triaxc --fuse-optimizer on the
// CPU): the same copies as one parallel loop over the concatenated
// elements per launch, each element dispatched to its tensor by a tree of
// compares. At kernel-param-bytes=160 a launch passes 4 buffers: the part
// and 3 tensors' chunks, so the 5 chunks of the first bucket are packed by
// 2 loops (32 + 32 + 2048 elements, then 32 + 2048 at offset 2112), and
// the 5 results unpacked by 2 (64 + 64 + 4096, then 64 + 4096).
// FUSED-LABEL: func.func @triax_forward_backward(
// FUSED: %[[PART:.*]] = memref.alloc() : memref<4192xf32>
// FUSED-NEXT: %{{.*}} = arith.constant 0 : index
// FUSED-NEXT: %{{.*}} = arith.constant 2112 : index
// FUSED: scf.parallel (%[[E:.*]]) =
// FUSED: arith.cmpi ult, %[[E]], %c32
// FUSED: memref.store %{{.*}}, %[[PART]][%[[E]]] : memref<4192xf32>
// FUSED: scf.parallel (%[[E2:.*]]) = ({{.*}}) to (%c2080)
// FUSED: %[[AT:.*]] = arith.addi %[[E2]], %c2112
// FUSED: memref.store %{{.*}}, %[[PART]][%[[AT]]] : memref<4192xf32>
// FUSED: call @trx_all_gather_f32
// FUSED: scf.parallel (%{{.*}}) = ({{.*}}) to (%c4224)
// FUSED: arith.divui
// FUSED: scf.parallel (%{{.*}}) = ({{.*}}) to (%c4160)
// The next bucket (k's bias, v's weight and bias, c_proj's weight) packed
// by 2 loops too.
// FUSED: trx_sgemm_bias
// FUSED: scf.parallel (%{{.*}}) = ({{.*}}) to (%c2112
// FUSED-NEXT: arith.constant 32 : index
// FUSED: scf.parallel (%{{.*}}) = ({{.*}}) to (%c2048)
// FUSED-NOT: scf.parallel
// FUSED: call @trx_all_gather_f32
