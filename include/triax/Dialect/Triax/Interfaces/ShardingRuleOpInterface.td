//===- ShardingRuleOpInterface.td - How an op splits ---------*- tablegen -*-===//

#ifndef TRIAX_DIALECT_TRIAX_INTERFACES_SHARDINGRULEOPINTERFACE_TD
#define TRIAX_DIALECT_TRIAX_INTERFACES_SHARDINGRULEOPINTERFACE_TD

include "mlir/IR/OpBase.td"

def ShardingRuleOpInterface : OpInterface<"ShardingRuleOpInterface"> {
  let description = [{
    How an op runs when some of its operands hold only one member's slice
    of a tensor split over a mesh axis, in the spirit of upstream `shard`'s
    ShardingInterface and Shardy's sharding rules. The passes that split
    activations ask the op instead of switching on its kind:
    - `SplitDim::Sequence`, the tokens (dimension 1 of `[batch, seq, ...]`):
      dist-context-parallel follows the cp split through every op by its
      rule, and Megatron sequence parallelism (dist-tensor-parallel's
      sequence-parallel option) keeps on the slice exactly the ops whose
      rule is `Local`;
    - `SplitDim::Feature`, the last dimension (hidden columns, heads):
      dist-tensor-parallel keeps between a column-split and a row-split
      linear exactly the ops whose rule is `Local` or `Heads`.

    An op states, per dimension, its `SplitRule` (local, by
    heads, gathering some operands whole, a partial mean, or refused with
    the reason), the divisibility the split needs (`verifySplit`, with the
    error text) and what the split changes on the op besides its result
    types (`applySplit`). The pass builds the collectives the rule names
    and retypes the results. An op without the interface, or without an
    override, is local along both dimensions when it is `Elementwise` and
    refused otherwise. docs/dialects.md ("Adding a layer op") says when a
    new op needs a rule.
  }];
  let cppNamespace = "::mlir::triax";
  let methods = [
    InterfaceMethod<[{
        What the op does when its operands computed from the split hold a
        member's slice along `dim` (its parameters, never split along the
        activations' dimensions, are read whole).
      }],
      "::mlir::triax::SplitRule", "getSplitRule",
      (ins "::mlir::triax::SplitDim":$dim), [{}], [{
        return ::mlir::triax::SplitRule::byTraits($_op, dim);
      }]>,
    InterfaceMethod<[{
        Checks that the op can be split `n` ways along `dim`; the error
        names the op, `pass` (the pass that splits), the quantity that does
        not divide and `axis`=`n`.
      }],
      "::mlir::LogicalResult", "verifySplit",
      (ins "::mlir::triax::SplitDim":$dim, "int64_t":$n,
           "::llvm::StringRef":$pass, "::llvm::StringRef":$axis), [{}],
      [{ return ::mlir::success(); }]>,
    InterfaceMethod<[{
        Changes what the split changes on the op besides its result types,
        which the pass sets (attributes: the heads a member computes, the
        group whose members hold the other slices).
      }],
      "void", "applySplit",
      (ins "::mlir::triax::SplitDim":$dim, "int64_t":$n,
           "::mlir::FlatSymbolRefAttr":$mesh, "::mlir::ArrayAttr":$axes),
      [{}], [{ return; }]>,
    InterfaceMethod<[{
        For a `Gather` rule with `ring` along the sequence, when the pass
        passes blocks around the ring instead of gathering: the gathered
        operands stay the member's own slices, and the op moves them
        around the group of `axes` itself.
      }],
      "void", "applyRingSplit",
      (ins "int64_t":$n, "::mlir::FlatSymbolRefAttr":$mesh,
           "::mlir::ArrayAttr":$axes),
      [{}], [{ return; }]>,
  ];
}

#endif // TRIAX_DIALECT_TRIAX_INTERFACES_SHARDINGRULEOPINTERFACE_TD
