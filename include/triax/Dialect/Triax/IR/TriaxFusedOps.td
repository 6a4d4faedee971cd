//===- TriaxFusedOps.td - Fused elementwise groups ---------*- tablegen -*-===//
//
// Ops built by `triax-fuse-elementwise` (after autodiff, on the way to the
// kernels): a chain of elementwise ops as one op whose region is the scalar
// computation of one element, so that the CPU lowering emits one loop nest
// per group instead of one per op. Included at the end of TriaxOps.td.
//
//===----------------------------------------------------------------------===//

#ifndef TRIAX_DIALECT_TRIAX_IR_TRIAXFUSEDOPS_TD
#define TRIAX_DIALECT_TRIAX_IR_TRIAXFUSEDOPS_TD

include "triax/Dialect/Triax/IR/TriaxBase.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"
include "triax/Dialect/Triax/Interfaces/CostOpInterface.td"

def Triax_FusedElementwiseOp : Triax_Op<"fused_elementwise", [
    Pure, IsolatedFromAbove,
    DeclareOpInterfaceMethods<CostOpInterface, ["getResultStorage"]>]> {
  let summary = "Elementwise ops computed in one pass over the elements";
  let description = [{
    Applies its region to every element position: the region's arguments
    are the elements of the inputs at one position (scalars of the inputs'
    compute types: the element type, or f32 for bf16, which is extended when
    loaded), its ops compute the elements of the results at that position
    from them (`arith` and `math` ops on scalars, free of memory effects)
    and `triax.fused_yield` returns them (in the results' compute types: a
    bf16 result is rounded when stored). All inputs and results
    have one shape. The inputs are the group's values from outside it; the
    results are the values of the group that are used outside it (there may
    be several: activations the backward pass keeps, for instance).

    `triax-fuse-elementwise` builds it from chains of elementwise ops (it is
    not differentiable: it is built after `triax-autodiff`); the CPU lowering
    turns it into one parallel loop that loads each input once and stores
    each result.

    SwiGLU, `silu(a) * b`, keeping `silu(a)`:
    ```mlir
    %r:2 = triax.fused_elementwise(%a, %b) : (tensor<4x8x128xf32>, tensor<4x8x128xf32>) -> (tensor<4x8x128xf32>, tensor<4x8x128xf32>) {
    ^bb0(%x: f32, %y: f32):
      %one = arith.constant 1.000000e+00 : f32
      %nx = arith.negf %x : f32
      %e = math.exp %nx : f32
      %d = arith.addf %one, %e : f32
      %s = arith.divf %one, %d : f32
      %silu = arith.mulf %x, %s : f32
      %p = arith.mulf %silu, %y : f32
      triax.fused_yield %silu, %p : f32, f32
    }
    ```
  }];
  let arguments = (ins Variadic<Triax_FloatTensor>:$inputs);
  let results = (outs Variadic<Triax_FloatTensor>:$results);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    `(` $inputs `)` attr-dict `:` functional-type($inputs, results) $body
  }];
  let hasRegionVerifier = 1;
  let extraClassDeclaration = [{
    /// The element positions: the shape of every input and result.
    ::llvm::ArrayRef<int64_t> getShape() {
      return ::llvm::cast<::mlir::RankedTensorType>(getResult(0).getType())
          .getShape();
    }
    ::mlir::Block &getBodyBlock() { return getBody().front(); }
    FusedYieldOp getYield();
  }];
}

def Triax_FusedYieldOp : Triax_Op<"fused_yield", [
    Pure, Terminator, ReturnLike, HasParent<"FusedElementwiseOp">]> {
  let summary = "Returns the result elements of a triax.fused_elementwise";
  let arguments = (ins Variadic<AnyType>:$values);
  let assemblyFormat = "attr-dict ($values^ `:` type($values))?";
}

#endif // TRIAX_DIALECT_TRIAX_IR_TRIAXFUSEDOPS_TD
