//===- DistBucketOps.td - Gradient buckets -----------------*- tablegen -*-===//

#ifndef TRIAX_DIALECT_DIST_IR_DISTBUCKETOPS_TD
#define TRIAX_DIALECT_DIST_IR_DISTBUCKETOPS_TD

def Dist_AllReduceGradsOp : Dist_CollectiveOp<"all_reduce_grads", [DeclareOpInterfaceMethods<CostOpInterface, ["getCollectives"]>]> {
  let summary = "Reduces a bucket of gradient buffers in one collective";
  let description = [{
    Reduces the gradient buffers of the parameters `params` (a bucket)
    over the group, in place, as one message: the buffers are packed into
    one contiguous buffer, reduced, and unpacked. It runs at the
    accumulation boundary only — after the last micro-batch of an optimizer
    step (the runtime knows which micro-batch runs; on the others it does
    nothing, like DDP's `no_sync`) — so the step reduces each gradient
    once, whatever the accumulation. `dist-data-parallel` places each
    bucket right after the last gradient in it is added to its buffer, so
    the collective can overlap the rest of the backward pass.
    ```mlir
    dist.all_reduce_grads avg [@h.1.mlp.c_proj.weight, @h.1.mlp.c_proj.bias] over @mesh ["dp"]
    ```
  }];
  let arguments = (ins Dist_ReductionKind:$reduction,
                       SymbolRefArrayAttr:$params, FlatSymbolRefAttr:$mesh,
                       StrArrayAttr:$axes);
  let assemblyFormat = [{
    $reduction $params `over` $mesh $axes attr-dict
  }];
}

#endif // TRIAX_DIALECT_DIST_IR_DISTBUCKETOPS_TD
