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

def Dist_ReduceScatterBucketOp : Dist_CollectiveOp<"reduce_scatter_bucket", [
    Pure, DeclareOpInterfaceMethods<CostOpInterface, ["getCollectives"]>]> {
  let summary = "Reduce-scatters a bucket of tensors into flat chunks in one "
                "collective";
  let description = [{
    Result j is what `dist.reduce_scatter_flat` of input j would give (this
    member's flat chunk of the reduction of input j over the group: the
    row-major elements padded to g * k_j, k_j = ceil(numel_j / g)), but
    the bucket is one message: each input's g chunks are packed member by
    member (member i's part holds chunk i of every input, one after the
    other: k = k_1 + ... + k_n elements), the packed g * k elements are
    reduce-scattered, and member i's k elements are its chunks of every
    input. ZeRO 1 and 2 reduce their gradients in such buckets
    (`dist-zero{bucket-mb}`). The inputs have one element type.
    ```mlir
    %cw, %cb = dist.reduce_scatter_bucket avg %gw, %gb over @mesh ["dp"] : tensor<64x25xf32>, tensor<25xf32> -> tensor<800xf32>, tensor<13xf32>
    ```
  }];
  let arguments = (ins Dist_ReductionKind:$reduction,
                       Variadic<AnyRankedTensor>:$inputs,
                       FlatSymbolRefAttr:$mesh, StrArrayAttr:$axes);
  let results = (outs Variadic<1DTensorOf<[AnyFloat]>>:$results);
  let assemblyFormat = [{
    $reduction $inputs `over` $mesh $axes attr-dict `:` type($inputs) `->`
    type($results)
  }];
}

def Dist_AllGatherBucketOp : Dist_CollectiveOp<"all_gather_bucket", [
    Pure, DeclareOpInterfaceMethods<CostOpInterface, ["getCollectives",
                                                       "getScratchBytes"]>]> {
  let summary = "Reassembles a bucket of tensors from every member's flat "
                "chunks in one collective";
  let description = [{
    Result j is what `dist.all_gather_flat` of input j would give (the
    members' flat chunks of k_j = ceil(numel_j / g) elements concatenated
    in group order, the padding dropped, laid out row-major in result j's
    shape), but the bucket is one message: each member packs its chunks
    one after the other (k = k_1 + ... + k_n elements), the packs are
    gathered (g * k elements, member-major), and each result's elements
    are copied out of the members' packs. ZeRO 3 gathers a block's
    parameters this way (`dist-zero{bucket-mb}`). The inputs have one
    element type.
    ```mlir
    %w, %b = dist.all_gather_bucket %cw, %cb over @mesh ["dp"] : tensor<800xf32>, tensor<13xf32> -> tensor<64x25xf32>, tensor<25xf32>
    ```
  }];
  let arguments = (ins Variadic<1DTensorOf<[AnyFloat]>>:$inputs,
                       FlatSymbolRefAttr:$mesh, StrArrayAttr:$axes);
  let results = (outs Variadic<AnyRankedTensor>:$results);
  let assemblyFormat = [{
    $inputs `over` $mesh $axes attr-dict `:` type($inputs) `->`
    type($results)
  }];
}

#endif // TRIAX_DIALECT_DIST_IR_DISTBUCKETOPS_TD
