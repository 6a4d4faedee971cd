//===- WriteDisjointness.h - Proving that GPU threads write apart -*- C++
//-*-===//
//
// The GPU mapping runs the iterations of a loop nest's parallel dimensions
// in different threads at the same time. That is right only when no two of
// those iterations write the same element, and no iteration reads an
// element another one writes. This analysis proves it from the indices of
// every store and load (index arithmetic over the mapped induction
// variables), or names the store it cannot prove, so that
// triax-map-loops-to-gpu keeps that dimension sequential inside a thread or
// refuses the kernel. It never assumes a race away.
//
// What it assumes of the kernel IR (convert-triax-to-kernels' contract):
//  - distinct root buffers do not overlap: a buffer is a memref.alloc, a
//    runtime view of one state tensor, or a function argument, and a view
//    op (subview, reshape, reinterpret_cast) maps distinct indices of the
//    view to distinct elements of its source. Outlined kernel functions
//    receive the buffers (and their views) the layer op's lowering made, one
//    argument per buffer;
//  - values defined outside the nest are the same in every thread.
//
//===----------------------------------------------------------------------===//

#ifndef TRIAX_LIB_CONVERSION_KERNELSTOGPU_WRITEDISJOINTNESS_H
#define TRIAX_LIB_CONVERSION_KERNELSTOGPU_WRITEDISJOINTNESS_H

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "llvm/ADT/SmallBitVector.h"

#include <optional>
#include <string>

namespace mlir::triax::gpu_mapping {

/// A write the analysis could not prove disjoint between two threads.
struct UnprovedWrite {
  /// The memref.store (or the load that reads another thread's element).
  Operation *op = nullptr;
  /// The parallel dimension (of the scf.parallel) whose iterations may
  /// collide; -1 for the row loop of a row kernel.
  int dim = -1;
  /// True when two iterations that differ only in `dim` certainly touch the
  /// same element (no index depends on it), false when they may.
  bool certain = false;
  /// Why, in words: "its index [...] is not a one-to-one function of ...".
  std::string why;
};

/// Thread-per-iteration mapping of `loop` (every dimension in `mapped` runs
/// in its own thread; the others run sequentially inside each thread, in
/// order). Returns the largest set of dimensions the mapping may run in
/// parallel: starting from all, a dimension is dropped while some store is
/// not proved disjoint over it. `unproved` receives, for each dropped
/// dimension, the write that dropped it.
llvm::SmallBitVector
provablyParallelDims(scf::ParallelOp loop,
                     SmallVectorImpl<UnprovedWrite> &unproved);

/// One block per row, each row loop (a top-level scf.for of the body) split
/// over the block's threads, and the scalar code between them run by every
/// thread: returns the first write or read that would race, or none.
std::optional<UnprovedWrite> rowKernelRace(scf::ParallelOp loop);

} // namespace mlir::triax::gpu_mapping

#endif // TRIAX_LIB_CONVERSION_KERNELSTOGPU_WRITEDISJOINTNESS_H
