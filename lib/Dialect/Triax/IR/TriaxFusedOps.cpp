//===- TriaxFusedOps.cpp - Fused elementwise groups -----------------------===//

#include "triax/Dialect/Triax/IR/Triax.h"

#include "mlir/Interfaces/SideEffectInterfaces.h"

using namespace mlir;
using namespace mlir::triax;

FusedYieldOp FusedElementwiseOp::getYield() {
  return cast<FusedYieldOp>(getBodyBlock().getTerminator());
}

LogicalResult FusedElementwiseOp::verifyRegions() {
  if (getNumResults() == 0)
    return emitOpError("must have at least one result");
  ArrayRef<int64_t> shape = getShape();
  auto checkShape = [&](Value v, StringRef what, unsigned i) -> LogicalResult {
    auto type = cast<RankedTensorType>(v.getType());
    if (type.getShape() != shape)
      return emitOpError() << what << " #" << i << " has type " << type
                           << " but every input and result must have the "
                              "shape of result #0 ("
                           << getResult(0).getType() << ")";
    return success();
  };
  for (auto [i, input] : llvm::enumerate(getInputs()))
    if (failed(checkShape(input, "input", i)))
      return failure();
  for (auto [i, result] : llvm::enumerate(getResults()))
    if (failed(checkShape(result, "result", i)))
      return failure();

  Block &body = getBodyBlock();
  if (body.getNumArguments() != getInputs().size())
    return emitOpError("region has ")
           << body.getNumArguments() << " arguments but there are "
           << getInputs().size() << " inputs";
  for (auto [i, arg, input] :
       llvm::enumerate(body.getArguments(), getInputs())) {
    Type elt = getComputeElementType(
        cast<RankedTensorType>(input.getType()).getElementType());
    if (arg.getType() != elt)
      return emitOpError("region argument #")
             << i << " has type " << arg.getType()
             << " but must be the compute type of input #" << i << " (" << elt
             << ")";
  }

  auto yield = dyn_cast<FusedYieldOp>(body.getTerminator());
  if (!yield)
    return emitOpError("region must end in triax.fused_yield");
  if (yield.getValues().size() != getNumResults())
    return emitOpError("yields ")
           << yield.getValues().size() << " values but there are "
           << getNumResults() << " results";
  for (auto [i, value, result] :
       llvm::enumerate(yield.getValues(), getResults())) {
    Type elt = getComputeElementType(
        cast<RankedTensorType>(result.getType()).getElementType());
    if (value.getType() != elt)
      return emitOpError("yielded value #")
             << i << " has type " << value.getType()
             << " but must be the compute type of result #" << i << " (" << elt
             << ")";
  }

  // The body is the computation of one element: scalars only, nothing that
  // reads or writes memory, so that it can become a loop body as it is.
  for (Operation &op : body.without_terminator()) {
    if (op.getNumRegions() != 0 || !isMemoryEffectFree(&op))
      return op.emitOpError("cannot be in a triax.fused_elementwise body: "
                            "its ops must be scalar computations without "
                            "regions or memory effects");
    for (Type type :
         llvm::concat<const Type>(op.getOperandTypes(), op.getResultTypes()))
      if (isa<ShapedType>(type))
        return op.emitOpError("cannot be in a triax.fused_elementwise body: ")
               << type << " is not a scalar";
  }
  return success();
}
