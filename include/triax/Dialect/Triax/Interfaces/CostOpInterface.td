//===- CostOpInterface.td - What an op costs -----------------*- tablegen -*-===//

#ifndef TRIAX_DIALECT_TRIAX_INTERFACES_COSTOPINTERFACE_TD
#define TRIAX_DIALECT_TRIAX_INTERFACES_COSTOPINTERFACE_TD

include "mlir/IR/OpBase.td"

def CostOpInterface : OpInterface<"CostOpInterface"> {
  let description = [{
    An op that states its own cost, so that the passes and the cost model
    that weigh work ask the op instead of switching on its kind:
    - its FLOPs: the pipeline balancer (dist-pipeline's stage partition)
      sums the forward FLOPs of each block's ops. Ops without the interface,
      or without an override, count as free (elementwise ops, norms:
      memory-bound, small beside the GEMMs and the attention);
    - its communication: the cost model (ModuleFacts) counts the bytes of
      the collectives each op says it runs over its group (the mesh axes of
      its `axes` attribute), by [C1]/[C2] of docs/cost-model.md. An op that
      carries a `mesh` and has no interface is listed as unmodelled; one
      with the interface and no override moves nothing;
    - its kernels' scratch: the activation peak adds it while the op runs;
    - what it tells of the model's shape: the planner's reading of the
      model (ModelShape: layers, hidden, heads, vocabulary, ffn, which
      parameters are embeddings or linear weights) asks each op;
    - where the kernel lowering puts its results (a buffer of their own, none
      at all, or an operand's buffer written over): the activation peak's
      liveness ([A9], ModuleFacts) asks each op.
  }];
  let cppNamespace = "::mlir::triax";
  let methods = [
    InterfaceMethod<[{
        The floating-point operations of one forward evaluation of the op
        on its static shapes (a multiply-add counts 2); 0 when a shape is
        dynamic.
      }],
      "double", "getForwardFlops", (ins), [{}], [{ return 0.0; }]>,
    InterfaceMethod<[{
        Appends the collectives (and point-to-point messages) one execution
        of the op runs over its group, one entry per call.
      }],
      "void", "getCollectives",
      (ins "::llvm::SmallVectorImpl<::mlir::triax::Collective> &":$out),
      [{}], [{ return; }]>,
    InterfaceMethod<[{
        The bytes of scratch the op's kernels hold while it runs, beside its
        results (the activation peak's [A9], docs/cost-model.md); 0 when
        they need none the cost model counts.
      }],
      "int64_t", "getScratchBytes", (ins), [{}], [{ return 0; }]>,
    InterfaceMethod<[{
        Fills in what the op tells of the model's shape (ModelFacts: a
        layer and its width, attention heads, an embedding table and its
        vocabulary, a linear's weight and width); nothing by default.
      }],
      "void", "describeModel", (ins "::mlir::triax::ModelFacts &":$facts),
      [{}], [{ return; }]>,
    InterfaceMethod<[{
        Where convert-triax-to-kernels (with the pipelines' options) puts
        result `index`: a buffer of its own by default.
      }],
      "::mlir::triax::ResultStorage", "getResultStorage",
      (ins "unsigned":$index), [{}], [{ return {}; }]>,
  ];
}

#endif // TRIAX_DIALECT_TRIAX_INTERFACES_COSTOPINTERFACE_TD
