//===- CostOpInterface.td - What an op costs -----------------*- tablegen -*-===//

#ifndef TRIAX_DIALECT_TRIAX_INTERFACES_COSTOPINTERFACE_TD
#define TRIAX_DIALECT_TRIAX_INTERFACES_COSTOPINTERFACE_TD

include "mlir/IR/OpBase.td"

def CostOpInterface : OpInterface<"CostOpInterface"> {
  let description = [{
    An op that states its own cost, so that the passes and the cost model
    that weigh work ask the op instead of switching on its kind: the
    pipeline balancer (dist-pipeline's stage partition) sums the forward
    FLOPs of each block's ops. Ops without the interface count as free
    (elementwise ops, norms: memory-bound, small beside the GEMMs and the
    attention).
  }];
  let cppNamespace = "::mlir::triax";
  let methods = [
    InterfaceMethod<[{
        The floating-point operations of one forward evaluation of the op
        on its static shapes (a multiply-add counts 2); 0 when a shape is
        dynamic.
      }],
      "double", "getForwardFlops", (ins)>,
  ];
}

#endif // TRIAX_DIALECT_TRIAX_INTERFACES_COSTOPINTERFACE_TD
