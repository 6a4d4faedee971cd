//===- ScalarElementwiseOpInterface.td - Scalar formula ----*- tablegen -*-===//

#ifndef TRIAX_DIALECT_TRIAX_INTERFACES_SCALARELEMENTWISEOPINTERFACE_TD
#define TRIAX_DIALECT_TRIAX_INTERFACES_SCALARELEMENTWISEOPINTERFACE_TD

include "mlir/IR/OpBase.td"

def ScalarElementwiseOpInterface : OpInterface<"ScalarElementwiseOpInterface"> {
  let description = [{
    An elementwise op on tensors that can state its formula for one element:
    given one scalar per operand (the elements at the same position), it
    builds the scalar ops (`arith`, `math`) that compute the element of its
    single result. Each formula lives once, on its op: the CPU kernel of an
    unfused op, the body of a `triax.fused_elementwise` built by
    `triax-fuse-elementwise` and its kernel all come from it, and none of
    them switches on the op's kind.

    The op has one result and its operands have the result's shape. The
    caller loads the dialects the formulas use (`arith`, `math`).
  }];
  let cppNamespace = "::mlir::triax";
  let methods = [
    InterfaceMethod<[{
        Builds, at the builder's insertion point, the scalar computation of
        one element of the result from `scalarOperands` (one scalar per
        operand, of the operand's compute type: its element type, or f32
        for bf16, see getComputeElementType) and returns it (of the
        result's compute type; the kernel rounds it when it stores a bf16
        result).
      }],
      "::mlir::Value", "buildScalar",
      (ins "::mlir::OpBuilder &":$builder, "::mlir::Location":$loc,
           "::mlir::ValueRange":$scalarOperands)>,
  ];
}

#endif // TRIAX_DIALECT_TRIAX_INTERFACES_SCALARELEMENTWISEOPINTERFACE_TD
