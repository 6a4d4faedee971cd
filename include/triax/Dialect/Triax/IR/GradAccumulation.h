//===- GradAccumulation.h - How gradients reach their buffers ---*- C++ -*-===//
//
// Rules the kernel lowering applies to the gradients' buffers, shared with
// the cost model that predicts them (one rule, asked by both).
//
//===----------------------------------------------------------------------===//

#ifndef TRIAX_DIALECT_TRIAX_IR_GRADACCUMULATION_H
#define TRIAX_DIALECT_TRIAX_IR_GRADACCUMULATION_H

#include "triax/Dialect/Triax/IR/Triax.h"

namespace mlir::triax {

/// Whether `sum` is accumulated term by term (accumulate-in-gemm,
/// convert-triax-to-kernels): its only reader is a triax.accumulate_grad
/// in its block and both terms have its type, so the lowering accumulates
/// each term where it is made (a tied embedding's two gradients) and the
/// sum has no buffer.
bool isAccumulatedTermByTerm(AddOp sum);

/// The triax.gelu_grad that convert-triax-to-kernels{gelu-epilogue} (on
/// by default) computes in `linear`'s GEMM epilogue, dx = gelu'(h) * x W:
/// the linear (no bias; input, weight and result of one type, f32 or
/// bf16) is its upstream gradient and has no other use, the two in one
/// block with one type, and the GELU's input h is computed before the
/// linear (the GEMM reads it). The epilogue writes dx in the GEMM's
/// output: one buffer for both results.
GeluGradOp geluGradEpilogueOf(LinearOp linear);

/// Whether `grad` may be written over its logits
/// (convert-triax-to-kernels{loss-grad-in-place}, where the logits' buffer
/// is the kernels' own): the logits have the gradient's type and every
/// other reader of them comes before `grad` in its block, so none reads
/// them once overwritten.
bool mayOverwriteLogits(CrossEntropyGradOp grad);

/// Whether an f32 or bf16 gradient's only reader is a triax.accumulate_grad,
/// through the yields of the triax.blocks it leaves (the lowering inlines
/// them) or a sum accumulated term by term (isAccumulatedTermByTerm):
/// accumulate-in-gemm then computes it into the gradient buffer (a weight
/// gradient's GEMM with beta = 1, an embedding gradient's scatter).
bool isOnlyAccumulated(Value gradient);

} // namespace mlir::triax

#endif // TRIAX_DIALECT_TRIAX_IR_GRADACCUMULATION_H
