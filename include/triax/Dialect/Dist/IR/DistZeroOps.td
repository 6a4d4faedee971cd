//===- DistZeroOps.td - ZeRO's collectives on flat chunks --*- tablegen -*-===//
//
// ZeRO (#dist.zero) splits a parameter's training state into flat chunks:
// the row-major elements, padded with zeros to a multiple of the group size
// g, cut into g chunks of ceil(numel / g). These collectives move between a
// whole tensor and the chunks.
//
//===----------------------------------------------------------------------===//

#ifndef TRIAX_DIALECT_DIST_IR_DISTZEROOPS_TD
#define TRIAX_DIALECT_DIST_IR_DISTZEROOPS_TD

def Dist_ReduceScatterFlatOp : Dist_CollectiveOp<"reduce_scatter_flat", [
    Pure, DeclareOpInterfaceMethods<CostOpInterface, ["getCollectives"]>]> {
  let summary = "Reduces a tensor over the group; member i keeps flat chunk i";
  let description = [{
    The input's row-major elements, padded with zeros to g * k (k =
    ceil(numel / g), g the group size), are reduced over the group; member
    i gets elements [i k, (i + 1) k) of the result. ZeRO 1 and 2 reduce the
    gradients this way: each rank needs only the gradient of the chunk of
    the parameter whose optimizer state it owns.
    ```mlir
    %g = dist.reduce_scatter_flat avg %grad over @mesh ["dp"] : tensor<64x25xf32> -> tensor<800xf32>
    ```
  }];
  let arguments = (ins Dist_ReductionKind:$reduction, AnyRankedTensor:$input,
                       FlatSymbolRefAttr:$mesh, StrArrayAttr:$axes);
  let results = (outs 1DTensorOf<[AnyFloat]>:$result);
  let assemblyFormat = [{
    $reduction $input `over` $mesh $axes attr-dict `:` type($input) `->`
    type($result)
  }];
}

def Dist_AllGatherFlatOp : Dist_CollectiveOp<"all_gather_flat", [Pure, DeclareOpInterfaceMethods<CostOpInterface, ["getCollectives"]>]> {
  let summary = "Reassembles a tensor from every member's flat chunk";
  let description = [{
    The inverse of `reduce_scatter_flat`'s split: the members' chunks (k
    elements each) are concatenated in group order, the padding beyond the
    result's element count dropped, and the elements laid out row-major in
    the result's shape. ZeRO 3 gathers each parameter this way right before
    it is used.
    ```mlir
    %w = dist.all_gather_flat %chunk over @mesh ["dp"] : tensor<800xf32> -> tensor<64x25xf32>
    ```
  }];
  let arguments = (ins 1DTensorOf<[AnyFloat]>:$input, FlatSymbolRefAttr:$mesh,
                       StrArrayAttr:$axes);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `over` $mesh $axes attr-dict `:` type($input) `->` type($result)
  }];
}

def Dist_AllGatherParamsOp : Dist_CollectiveOp<"all_gather_params", [DeclareOpInterfaceMethods<CostOpInterface, ["getCollectives"]>]> {
  let summary = "Gathers parameters' updated chunks into every member's copy";
  let description = [{
    ZeRO stages 1 and 2 keep every parameter whole on every rank but let
    each rank update only its chunk (`triax.adamw` on a chunk). This op
    then gathers the chunks of the parameters `params` (a bucket), in
    place, so that every member holds the whole updated parameters again.
    Every parameter must carry `dist.zero` with stage 1 or 2 over the same
    axes, and all have one element type. A bucket of several parameters is
    one message: each member's chunks are packed one after the other, the
    packs gathered, and every parameter's chunks copied out of the members'
    packs (the same values as one gather per parameter).
    ```mlir
    dist.all_gather_params [@w, @b] over @mesh ["dp"]
    ```
  }];
  let arguments = (ins SymbolRefArrayAttr:$params, FlatSymbolRefAttr:$mesh,
                       StrArrayAttr:$axes);
  let assemblyFormat = "$params `over` $mesh $axes attr-dict";
}

#endif // TRIAX_DIALECT_DIST_IR_DISTZEROOPS_TD
