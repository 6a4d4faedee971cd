//===- DifferentiableOpInterface.td - How an op differentiates -*- tablegen -*-===//

#ifndef TRIAX_DIALECT_TRIAX_INTERFACES_DIFFERENTIABLEOPINTERFACE_TD
#define TRIAX_DIALECT_TRIAX_INTERFACES_DIFFERENTIABLEOPINTERFACE_TD

include "mlir/IR/OpBase.td"

def DifferentiableOpInterface : OpInterface<"DifferentiableOpInterface"> {
  let description = [{
    An op that can state its vector-Jacobian product: given the gradients of
    the loss with respect to its results, it builds the ops that compute the
    gradients with respect to its operands. `triax-autodiff` walks the
    forward graph backwards and asks each op through this interface; it
    never switches on the op's kind.

    The builder's insertion point is where the backward ops go; the VJP may
    use the op's operands and results (they become the activations the
    backward pass keeps).
  }];
  let cppNamespace = "::mlir::triax";
  let methods = [
    InterfaceMethod<[{
        Builds the gradients of the operands. `resultGrads` has one entry per
        result (null where the result does not reach the loss, never all
        null). Sets `operandGrads` to one entry per operand, null where the
        operand has no gradient (integer ids, for instance).
      }],
      "::mlir::LogicalResult", "buildVJP",
      (ins "::mlir::OpBuilder &":$builder,
           "::mlir::ValueRange":$resultGrads,
           "::llvm::SmallVectorImpl<::mlir::Value> &":$operandGrads)>,
    InterfaceMethod<[{
        Whether selective activation recomputation (`triax-recompute
        {mode=selective}`) recomputes this op in the backward block from
        its operands instead of keeping its results alive from the forward
        block: true for the attention core, whose results cost memory out
        of proportion to the FLOPs of redoing them (Korthikanti et al.
        2022, section 4.2). Its operands must be kept (or recomputed) for
        its own vector-Jacobian product anyway.
      }],
      "bool", "isRecomputedSelectively", (ins), "",
      [{ return false; }]>,
    InterfaceMethod<[{
        Whether `triax-recompute` redoes this op in the backward block from
        its operands in every mode, `none` included, instead of keeping its
        results alive from the forward block: true for a collective whose
        result is its group's times its operand (`dist.all_gather`: under
        sequence parallelism each norm's output gathered for the column
        linears, whose weight gradients read it again; Megatron-LM keeps
        the shard and gathers again in the backward too). Its operands are
        kept (or recomputed) instead.
      }],
      "bool", "isRecomputedAlways", (ins), "",
      [{ return false; }]>,
    InterfaceMethod<[{
        Builds, at the builder's insertion point, a copy of this op that
        also returns its residuals: values its forward computes anyway and
        its vector-Jacobian product would otherwise compute again (a flash
        attention's rows' log-sum-exp). Returns null when the op keeps none.
        `triax-autodiff` calls it on each op it differentiates, replaces the
        op by the copy (the first results stand for the op's) and then asks
        the copy for its VJP, which reads the residuals.
      }],
      "::mlir::Operation *", "buildWithResiduals",
      (ins "::mlir::OpBuilder &":$builder), "",
      [{ return nullptr; }]>,
    InterfaceMethod<[{
        How many of the op's last results are residuals (see
        buildWithResiduals). They are statistics kept in f32:
        `triax-mixed-precision` leaves them, and every value they are
        passed on as, f32.
      }],
      "unsigned", "getNumResiduals", (ins), "",
      [{ return 0; }]>,
  ];
}

#endif // TRIAX_DIALECT_TRIAX_INTERFACES_DIFFERENTIABLEOPINTERFACE_TD
