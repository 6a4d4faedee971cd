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

/// Whether a result of `op` may be written over `operand`'s buffer: a
/// buffer of the kernels' own (isKernelBuffer) made in `op`'s block that
/// nothing reads after `op`: every other reader is in the block before it,
/// and none is a dist op (a collective or a send may still be reading it).
/// The kernels that write over an operand read each of its elements before
/// they store the result's there. The rule of
/// convert-triax-to-kernels{elementwise-in-place} (overwritableOperand) and
/// {loss-grad-in-place} (the loss gradient over its logits), and of their
/// ops' result storage ([A9]).
bool mayWriteOver(Operation *op, Value operand);

/// The operand of the elementwise op `op` (triax.add, mul, an activation
/// gradient, a triax.fused_elementwise) that its result of type `type` may
/// be written over (convert-triax-to-kernels{elementwise-in-place}, both
/// pipelines), skipping the operands in `taken` (another result's): the
/// first operand of that type that mayWriteOver allows. The kernel loads
/// every operand's element before it stores the result's, at the same
/// index, so it reads nothing it has overwritten.
std::optional<unsigned> overwritableOperand(Operation *op, Type type,
                                            ArrayRef<unsigned> taken = {});

/// Whether `value` is a buffer the kernels allocate and free: a result of a
/// triax op (through the triax.blocks it leaves) that has a buffer of its
/// own or one it wrote over (CostOpInterface::getResultStorage), not a
/// block argument (a function's, or a block's, which is its caller's
/// value), a parameter or gradient view, a parameter's converted copy (one
/// per function, which every block that converts the parameter reads:
/// hoistParamCopies), or a dist op's result.
bool isKernelBuffer(Value value);

/// Whether an f32 or bf16 gradient's only reader is a triax.accumulate_grad,
/// through the yields of the triax.blocks it leaves (the lowering inlines
/// them) or a sum accumulated term by term (isAccumulatedTermByTerm):
/// accumulate-in-gemm then computes it into the gradient buffer (a weight
/// gradient's GEMM with beta = 1, an embedding gradient's scatter).
bool isOnlyAccumulated(Value gradient);

} // namespace mlir::triax

#endif // TRIAX_DIALECT_TRIAX_IR_GRADACCUMULATION_H
