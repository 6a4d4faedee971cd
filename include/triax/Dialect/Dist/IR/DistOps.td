//===- DistOps.td - Dist operations ------------------------*- tablegen -*-===//

#ifndef TRIAX_DIALECT_DIST_IR_DISTOPS_TD
#define TRIAX_DIALECT_DIST_IR_DISTOPS_TD

include "triax/Dialect/Dist/IR/DistBase.td"
include "triax/Dialect/Dist/IR/DistAttrs.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "triax/Dialect/Triax/Interfaces/DifferentiableOpInterface.td"
include "triax/Dialect/Triax/Interfaces/CostOpInterface.td"
include "triax/Dialect/Triax/Interfaces/ShardingRuleOpInterface.td"

def Dist_MeshOp : Dist_Op<"mesh", [Symbol]> {
  let summary = "A device mesh with named axes";
  let description = [{
    ```mlir
    dist.mesh @cluster <["dp"=2, "pp"=2, "tp"=2]>
    ```
    Axis names are unique and non-empty; sizes are >= 1. The device count
    is the product of the sizes. Ranks are laid out row-major over the axes
    as written (the last axis is innermost).
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, StrArrayAttr:$axis_names,
                       DenseI64ArrayAttr:$axis_sizes);
  let assemblyFormat = [{
    $sym_name custom<MeshAxes>($axis_names, $axis_sizes) attr-dict
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The size of `axis`, or nullopt if the mesh has no such axis.
    std::optional<int64_t> getAxisSize(::llvm::StringRef axis);
    /// The number of devices in the mesh.
    int64_t getNumDevices();
    /// The members of the group of `axes` (StringAttrs): the product of
    /// their sizes, an axis the mesh lacks counting 1 (verifiers report it).
    int64_t getGroupSize(::mlir::ArrayAttr axes);
  }];
}

def Dist_ShardingConstraintOp : Dist_Op<"sharding_constraint", [
    Pure, SameOperandsAndResultType, CostOpInterface,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "States the sharding a value must have at this point";
  let description = "```mlir\n%y = dist.sharding_constraint %x "
    "<@cluster, [{\"dp\"}, {}, {\"tp\"}]> : tensor<8x16x64xf32>\n```\n";
  let arguments = (ins AnyRankedTensor:$input, Dist_ShardingAttr:$sharding);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input $sharding attr-dict `:` type($result)";
}

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

// Every collective runs over the devices that differ only in the coordinates
// of `axes` (a group of prod(sizes of axes) devices) of mesh `mesh`.
class Dist_CollectiveOp<string mnemonic, list<Trait> traits = []>
    : Dist_Op<mnemonic, !listconcat(traits, [
        DeclareOpInterfaceMethods<SymbolUserOpInterface>])> {
  code commonClassDeclaration = [{
    /// Checks mesh and axes; on success returns the size of the group.
    ::mlir::FailureOr<int64_t>
    verifyGroup(::mlir::SymbolTableCollection &symbolTable);
  }];
  let extraClassDeclaration = commonClassDeclaration;
}

def Dist_AllReduceOp : Dist_CollectiveOp<"all_reduce", [
    Pure, SameOperandsAndResultType, DeclareOpInterfaceMethods<CostOpInterface, ["getCollectives"]>,
    DeclareOpInterfaceMethods<ShardingRuleOpInterface, ["getSplitRule"]>,
    DeclareOpInterfaceMethods<DifferentiableOpInterface>]> {
  let summary = "Reduces a tensor over the group; every member gets the result";
  let description = [{
    ```mlir
    %g = dist.all_reduce avg %grad over @cluster ["dp"] : tensor<64x256xf32>
    ```

    Differentiation (`triax-autodiff`): the vector-Jacobian product of a
    `sum` is the identity. This assumes what the programs Triax builds guarantee: the
    cotangent of the result is the same on every member of the group (the
    loss is replicated, and a reduced value is only used in replicated
    computations). Then the gradient of the global loss with respect to
    member i's input, sum over members j of d(result_j)/d(input_i) times
    the cotangent, is the cotangent itself. This is Megatron's `g` (the
    all_reduce after a row-split linear), whose backward is the identity;
    its conjugate is `dist.copy_to_group`. The other reductions are not
    differentiable here.
  }];
  let arguments = (ins Dist_ReductionKind:$reduction, AnyRankedTensor:$input,
                       FlatSymbolRefAttr:$mesh, StrArrayAttr:$axes);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $reduction $input `over` $mesh $axes attr-dict `:` type($result)
  }];
}

def Dist_CopyToGroupOp : Dist_CollectiveOp<"copy_to_group", [
    Pure, SameOperandsAndResultType, CostOpInterface, DeclareOpInterfaceMethods<ShardingRuleOpInterface, ["getSplitRule"]>,
    DeclareOpInterfaceMethods<DifferentiableOpInterface>]> {
  let summary = "Identity in forward; sums the gradient over the group";
  let description = [{
    Marks a value that is replicated over the group and about to be used
    by each member for a different part of a computation (the input of a
    column-split linear in tensor parallelism). In forward it is the
    identity and moves no data. Its vector-Jacobian product is
    `dist.all_reduce sum` of the cotangent over the same group: every
    member's use contributes a part of the gradient of the replicated
    value, and the sum is the gradient of the global loss. This is
    Megatron's `f`; its conjugate is `dist.all_reduce sum`, whose
    backward is the identity.

    ```mlir
    %h = dist.copy_to_group %x over @cluster ["tp"] : tensor<4x8x64xf32>
    %q = triax.linear %h, %wq, %bq : (tensor<4x8x64xf32>, tensor<64x32xf32>, tensor<32xf32>) -> tensor<4x8x32xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, FlatSymbolRefAttr:$mesh,
                       StrArrayAttr:$axes);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `over` $mesh $axes attr-dict `:` type($result)
  }];
}

def Dist_AllGatherOp : Dist_CollectiveOp<"all_gather", [
    Pure, DeclareOpInterfaceMethods<CostOpInterface, ["getCollectives", "getScratchBytes"]>, DeclareOpInterfaceMethods<ShardingRuleOpInterface, ["getSplitRule"]>, DeclareOpInterfaceMethods<DifferentiableOpInterface,
                                    ["isRecomputedSelectively", "isRecomputedAlways"]>]> {
  let summary = "Concatenates every member's tensor along a dimension";
  let description = [{
    Member `i` of the group contributes slice `i` of dimension `dim`; the
    result's `dim` is the input's times the group size.
    ```mlir
    %w = dist.all_gather %shard over @cluster ["dp"] dim 0 : tensor<32x256xf32> -> tensor<64x256xf32>
    ```
    Its vector-Jacobian product is `dist.reduce_scatter sum` of the
    cotangent along `dim` (each member's slice is used by every member).
    Selective recomputation (`triax-recompute{mode=selective}`) gathers it
    again in the backward when every op that reads it is recomputed there
    (context parallelism's keys and values, read by the attention core):
    only the member's slice is kept.

    `replicated_grad`: every member uses the gathered tensor for the same
    computation (a MoE router's capacity scan over the whole sequence,
    under sequence parallelism), so the cotangent of the result is the same
    on every member and is the gradient itself: the VJP is the member's
    slice of it (`dist.shard_sequence ... contiguous`, no communication),
    not a sum of every member's copy (Megatron-LM's
    `gather_from_sequence_parallel_region(tensor_parallel_output_grad=False)`).
    ```mlir
    %l = dist.all_gather %ls over @mesh ["tp"] dim 1 replicated_grad : tensor<8x32x4xf32> -> tensor<8x64x4xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, FlatSymbolRefAttr:$mesh,
                       StrArrayAttr:$axes, I64Attr:$dim,
                       UnitAttr:$replicated_grad);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `over` $mesh $axes `dim` $dim (`replicated_grad` $replicated_grad^)?
    attr-dict `:` type($input) `->` type($result)
  }];
}

def Dist_AllToAllOp : Dist_CollectiveOp<"all_to_all", [
    Pure, DeclareOpInterfaceMethods<CostOpInterface, ["getCollectives", "getScratchBytes"]>,
    DeclareOpInterfaceMethods<DifferentiableOpInterface>]> {
  let summary = "Exchanges a slice between every pair of members";
  let description = [{
    The input's `split` dimension is cut into `g` equal slices (`g` the
    group size) and slice `j` goes to member `j`; the slices each member
    receives, from members `0 .. g-1`, are concatenated along the `concat`
    dimension in member order (JAX's `all_to_all`, `MPI_Alltoall`). The
    result's `split` dimension is the input's divided by `g` and its
    `concat` dimension the input's times `g`; the shape is unchanged when
    they are the same dimension. Expert parallelism dispatches tokens to
    their experts' ranks with one and combines them back with the inverse.
    ```mlir
    %t = dist.all_to_all %x over @mesh ["ep"] split 0 concat 1 : tensor<8x4x16xf32> -> tensor<4x8x16xf32>
    ```
    Its vector-Jacobian product is the inverse exchange of the cotangent:
    an all_to_all that splits along `concat` and concatenates along
    `split` (member `i`'s slice of the result came from member `i`, and
    its gradient goes back there).
  }];
  let arguments = (ins AnyRankedTensor:$input, FlatSymbolRefAttr:$mesh,
                       StrArrayAttr:$axes, I64Attr:$split_dim,
                       I64Attr:$concat_dim);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `over` $mesh $axes `split` $split_dim `concat` $concat_dim
    attr-dict `:` type($input) `->` type($result)
  }];
}

def Dist_ReduceScatterOp : Dist_CollectiveOp<"reduce_scatter", [
    Pure, DeclareOpInterfaceMethods<CostOpInterface, ["getCollectives", "getScratchBytes"]>, DeclareOpInterfaceMethods<ShardingRuleOpInterface, ["getSplitRule"]>, DeclareOpInterfaceMethods<DifferentiableOpInterface>]> {
  let summary = "Reduces over the group and leaves member i with slice i";
  let description = [{
    The input's `dim` must divide by the group size; the result's `dim` is
    the input's divided by it.
    ```mlir
    %g = dist.reduce_scatter sum %grad over @cluster ["dp"] dim 0 : tensor<64x256xf32> -> tensor<32x256xf32>
    ```
    The vector-Jacobian product of a `sum` is `dist.all_gather` of the
    cotangent along `dim`; other reductions are not differentiable here.
  }];
  let arguments = (ins Dist_ReductionKind:$reduction, AnyRankedTensor:$input,
                       FlatSymbolRefAttr:$mesh, StrArrayAttr:$axes,
                       I64Attr:$dim);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $reduction $input `over` $mesh $axes `dim` $dim attr-dict `:`
    type($input) `->` type($result)
  }];
}

def Dist_BroadcastOp : Dist_CollectiveOp<"broadcast", [
    Pure, SameOperandsAndResultType]> {
  let summary = "Every member gets the tensor of the root member";
  let description = [{
    ```mlir
    %w = dist.broadcast %w0 over @cluster ["dp"] root 0 : tensor<64xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, FlatSymbolRefAttr:$mesh,
                       StrArrayAttr:$axes, I64Attr:$root);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `over` $mesh $axes `root` $root attr-dict `:` type($result)
  }];
}

def Dist_SendOp : Dist_CollectiveOp<"send", [DeclareOpInterfaceMethods<CostOpInterface, ["getCollectives"]>]> {
  let summary = "Sends a tensor to the group member at position `to`";
  let description = [{
    ```mlir
    dist.send %act over @cluster ["pp"] to 1 : tensor<4x8x64xf32>
    dist.send %act over @cluster ["pp"] to 1 tag 6 : tensor<4x8x64xf32>
    ```
    The optional `tag` tells apart the messages between one pair of
    members (a pipeline schedule tags each micro-batch and direction); a
    send matches the recv with the same tag (none matches none).
  }];
  let arguments = (ins AnyRankedTensor:$input, FlatSymbolRefAttr:$mesh,
                       StrArrayAttr:$axes, I64Attr:$to,
                       OptionalAttr<I64Attr>:$tag);
  let assemblyFormat = [{
    $input `over` $mesh $axes `to` $to (`tag` $tag^)? attr-dict `:`
    type($input)
  }];
}

def Dist_RecvOp : Dist_CollectiveOp<"recv", [DeclareOpInterfaceMethods<CostOpInterface, ["getCollectives"]>]> {
  let summary = "Receives a tensor from the group member at position `from`";
  let description = [{
    ```mlir
    %act = dist.recv over @cluster ["pp"] from 0 : tensor<4x8x64xf32>
    %act6 = dist.recv over @cluster ["pp"] from 0 tag 6 : tensor<4x8x64xf32>
    ```
    The optional `tag` is the matching send's.
  }];
  let arguments = (ins FlatSymbolRefAttr:$mesh, StrArrayAttr:$axes,
                       I64Attr:$from, OptionalAttr<I64Attr>:$tag);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    `over` $mesh $axes `from` $from (`tag` $tag^)? attr-dict `:`
    type($result)
  }];
}

def Dist_AxisIndexOp : Dist_CollectiveOp<"axis_index", [Pure, CostOpInterface]> {
  let summary = "This device's coordinate along one mesh axis";
  let description = [{
    ```mlir
    %stage = dist.axis_index @cluster ["pp"] : index
    ```
    The position (0 .. size-1) of the executing device along the axis; a
    pipeline schedule switches on it (`scf.index_switch`) to run the
    program of its stage. It moves no data; exactly one axis.
  }];
  let arguments = (ins FlatSymbolRefAttr:$mesh, StrArrayAttr:$axes);
  let results = (outs Index:$result);
  let assemblyFormat = "$mesh $axes attr-dict `:` type($result)";
}

def Dist_ShardSequenceOp : Dist_CollectiveOp<"shard_sequence", [Pure, CostOpInterface, DeclareOpInterfaceMethods<ShardingRuleOpInterface, ["getSplitRule"]>]> {
  let summary = "Keeps this member's chunks of a sequence";
  let description = [{
    Context parallelism's split of the sequence (dimension `dim`) over the
    `n` members of the group: the sequence is cut into `2n` equal chunks
    and member `c` keeps chunks `c` and `2n-1-c`, in that order, so that
    under a causal mask every member has the same work (the early tokens
    see few keys, their mirrors many). It moves no data: every member has
    the whole input and copies its chunks out of it.
    ```mlir
    %t = dist.shard_sequence %tokens over @mesh ["cp"] dim 1 : tensor<8x256xi32> -> tensor<8x128xi32>
    ```
    `dist-context-parallel` applies it to the token ids, the targets and
    the positions, integers, so it is not differentiated.

    `contiguous`: member `c` keeps the `c`-th of `n` equal chunks instead,
    as sequence parallelism splits the sequence (dist-context-parallel
    cuts a sequence-parallel model's positions so, after its own split).
    ```mlir
    %p = dist.shard_sequence %q over @mesh ["tp"] dim 1 contiguous : tensor<8x128xi32> -> tensor<8x64xi32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, FlatSymbolRefAttr:$mesh,
                       StrArrayAttr:$axes, I64Attr:$dim,
                       UnitAttr:$contiguous);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `over` $mesh $axes `dim` $dim (`contiguous` $contiguous^)?
    attr-dict `:` type($input) `->` type($result)
  }];
}

include "triax/Dialect/Dist/IR/DistZeroOps.td"
include "triax/Dialect/Dist/IR/DistBucketOps.td"

#endif // TRIAX_DIALECT_DIST_IR_DISTOPS_TD
