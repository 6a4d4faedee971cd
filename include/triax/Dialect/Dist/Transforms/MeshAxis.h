//===- MeshAxis.h - The mesh axis a dist pass works on ----------*- C++ -*-===//

#ifndef TRIAX_DIALECT_DIST_TRANSFORMS_MESHAXIS_H
#define TRIAX_DIALECT_DIST_TRANSFORMS_MESHAXIS_H

#include "triax/Dialect/Dist/IR/Dist.h"
#include "triax/Dialect/Triax/IR/Triax.h"

#include "mlir/IR/BuiltinOps.h"

namespace mlir::dist {

/// The module's mesh with axis `axis`, for pass `pass` (the prefix of its
/// errors). An existing mesh is used as it is: it must have the axis, and
/// `size`, when > 0, must equal the axis's size. Without a mesh, one
/// `dist.mesh @mesh <[axis=size]>` is created (size must be > 0). Emits an
/// error and returns null otherwise (also for several meshes).
MeshOp getOrCreateMeshAxis(ModuleOp module, StringRef pass, StringRef axis,
                           int64_t size);

/// The mesh the data-parallel passes work on: as getOrCreateMeshAxis for
/// `dpAxis`, except that one mesh without `dpAxis` but with the expert or
/// the context axis is taken as it is (every member of ep trains on its
/// own sequences; cp's gradient sums fold into the data-parallel
/// reduction).
MeshOp getDataMesh(ModuleOp module, StringRef pass, StringRef dpAxis,
                   int64_t size);

/// The models of `module`, for a pass `pass` that rewrites their forward
/// model before triax-autodiff; an error on the first model that already
/// has a training step (and failure).
FailureOr<SmallVector<triax::ModelOp>> forwardModels(ModuleOp module,
                                                     StringRef pass);

/// The axes of `mesh` the batch is split over, of `names` (the data axis
/// and expert parallelism's: its ranks train on their own sequences), in
/// the order given.
SmallVector<StringRef> dataAxes(MeshOp mesh, ArrayRef<StringRef> names);

/// The data axes (`dataAxes`) a parameter's gradient is averaged over, and
/// its training state sharded over by ZeRO: those it is not split over by
/// `dist.sharding` (an expert split over ep: dp only).
ArrayAttr replicatedDataAxes(triax::ParamOp param,
                             ArrayRef<StringRef> dataAxes);

/// Context parallelism's sums folded into the data-parallel reduction, as
/// Megatron reduces over dp x cp once per step (dist-data-parallel's
/// buckets, dist-zero's reduce-scatters). dist-context-parallel makes every
/// parameter's gradient partial over the cp axis (its member's tokens'
/// share of the group's mean loss) and triax-autodiff sums it over cp right
/// before it is accumulated: per micro-batch, out of place. When every
/// parameter of `model` is partial over `cpAxis` and each of its
/// accumulations adds such a sum, the sums lose cp (and go where no axis is
/// left), the buffers accumulate the partial gradients, and the caller
/// reduces them over its data axes and cp at the accumulation boundary,
/// averaging. That average is the data-parallel one divided by cp:
/// @optimizer_step's grad scale is multiplied by cp here (one scalar; the
/// norm and the clipping read the scale too). Returns whether it folded; a
/// model of another shape keeps autodiff's sums, which are right as they
/// are.
bool foldContextSums(triax::ModelOp model, MeshOp mesh, StringRef cpAxis);

/// The micro-batches one data-parallel rank accumulates per optimizer step,
/// global_batch / (micro_batch x dp); an error on `model`, prefixed by
/// `pass`, when the global batch is not a multiple of micro_batch x dp.
FailureOr<int64_t> accumulationSteps(triax::ModelOp model, int64_t dp,
                                     StringRef pass);

} // namespace mlir::dist

#endif // TRIAX_DIALECT_DIST_TRANSFORMS_MESHAXIS_H
