//===- CostOpInterface.h - What an op costs ---------------------*- C++ -*-===//

#ifndef TRIAX_DIALECT_TRIAX_INTERFACES_COSTOPINTERFACE_H
#define TRIAX_DIALECT_TRIAX_INTERFACES_COSTOPINTERFACE_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/OpDefinition.h"
#include "llvm/ADT/SmallVector.h"

namespace mlir::triax {

/// A collective or message an op runs over its group (the mesh axes of its
/// `axes` attribute), as CostOpInterface::getCollectives states it for the
/// cost model's traffic ([C1]/[C2], docs/cost-model.md).
struct Collective {
  enum class Kind { AllReduce, AllGather, ReduceScatter, AllToAll, Send, Recv };
  Kind kind;
  /// The buffer the byte formula takes: an all_reduce's whole buffer, the
  /// block an all_gather's member contributes, the block a
  /// reduce_scatter's member keeps, an all_to_all's whole input, a
  /// message: `elements` of `elemBytes`
  /// bytes ...
  int64_t elements = 0;
  int64_t elemBytes = 4;
  /// ... or, when not empty, these parameters' buffers on this rank (their
  /// local elements, summed), each cut to its ZeRO chunk of the group when
  /// `zeroChunk`.
  llvm::SmallVector<SymbolRefAttr> params;
  bool zeroChunk = false;
  /// Runs once per optimizer step (at the accumulation boundary), not once
  /// per execution of the op.
  bool oncePerStep = false;

  /// On a value of `type` (a shaped type; 0 elements when not static).
  static Collective on(Kind kind, Type type);
};

/// What an op says of the model's shape (CostOpInterface::describeModel),
/// which the planner reads from @forward before any parallelization
/// (lib/CostModel/ModelShape.cpp): each field left at its default says
/// nothing.
struct ModelFacts {
  /// A transformer layer (one pipeline unit) named `layerName`, of width
  /// `hidden`.
  bool layer = false;
  llvm::StringRef layerName;
  int64_t hidden = 0;
  /// Attention heads (query and key/value).
  int64_t heads = 0, kvHeads = 0;
  /// An embedding table, and the vocabulary it makes (0 for positions).
  Value table;
  int64_t vocab = 0;
  /// A linear's weight, the weight's dimension along the outputs (a
  /// column split cuts that one), and the output width (the widest
  /// column-split linear of a layer is the MLP's ffn).
  Value weight;
  int64_t weightOutputDim = 1;
  int64_t width = 0;
  /// Sequence parallelism: the positions of a tp member's slice of the
  /// sequence.
  bool sequenceParallel = false;
  /// A normalization: the f32 statistics it keeps per row for its
  /// gradient once differentiated (LayerNorm 2: mean and rstd; RMSNorm 1),
  /// and its scale, which its input's gradient reads (as a linear's reads
  /// its weight; biases and embedding tables no gradient reads).
  int64_t normStats = 0;
  Value scale;
};

/// Where the kernel lowering puts an op's result
/// (CostOpInterface::getResultStorage), as the activation peak's liveness
/// ([A9], docs/cost-model.md) counts it.
struct ResultStorage {
  enum class Kind {
    /// A buffer of its own, freed after its last use.
    Buffer,
    /// No buffer: a view of the runtime's state (a parameter, a gradient),
    /// or a value the lowering adds into a gradient buffer where it is made.
    None,
    /// Operand `operand`'s buffer, written over (that buffer then lives as
    /// long as this result).
    Operand,
  };
  Kind kind = Kind::Buffer;
  unsigned operand = 0;

  static ResultStorage none() { return {Kind::None, 0}; }
  static ResultStorage over(unsigned operand) {
    return {Kind::Operand, operand};
  }
};

/// An op's result storage, a buffer of its own for an op without
/// CostOpInterface.
ResultStorage getResultStorage(Operation *op, unsigned index);

} // namespace mlir::triax

#include "triax/Dialect/Triax/Interfaces/CostOpInterface.h.inc"

#endif // TRIAX_DIALECT_TRIAX_INTERFACES_COSTOPINTERFACE_H
