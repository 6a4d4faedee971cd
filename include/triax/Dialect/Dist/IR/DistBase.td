//===- DistBase.td - Dist dialect definition ---------------*- tablegen -*-===//

#ifndef TRIAX_DIALECT_DIST_IR_DISTBASE_TD
#define TRIAX_DIALECT_DIST_IR_DISTBASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

def Dist_Dialect : Dialect {
  let name = "dist";
  let cppNamespace = "::mlir::dist";
  let summary = "Device meshes with named axes, shardings and collectives";
  let description = [{
    The `dist` dialect says how a program is spread over devices. A
    `dist.mesh` names the axes of a device grid (`"dp"`, `"pp"`, `"tp"`);
    `#dist.sharding` says, per tensor dimension, which mesh axes split it;
    collectives (`all_reduce`, `all_gather`, `reduce_scatter`, `broadcast`)
    and point-to-point `send`/`recv` move data over one or more named axes.
    Names and semantics follow upstream `shard` and Shardy so that import
    and export stay a mapping.

    A sharding can be attached to any op with one ranked tensor result, or
    to an op with a tensor `type` attribute such as `triax.param`, as the
    discardable attribute `dist.sharding`; it is verified against the
    tensor's shape there.
  }];
  let useDefaultAttributePrinterParser = 1;
  let hasOperationAttrVerify = 1;
  let hasRegionArgAttrVerify = 1;
  let hasRegionResultAttrVerify = 1;
  let extraClassDeclaration = [{
    /// Name of the discardable attribute carrying a tensor's sharding.
    static constexpr ::llvm::StringLiteral kShardingAttrName = "dist.sharding";
    /// Name of the discardable attribute carrying a parameter's ZeRO
    /// sharding (#dist.zero).
    static constexpr ::llvm::StringLiteral kZeroAttrName = "dist.zero";
    /// Name of the discardable attribute marking a replicated parameter
    /// whose gradient is summed over a group (#dist.partial_grad).
    static constexpr ::llvm::StringLiteral kPartialGradAttrName =
        "dist.partial_grad";
    /// Name of the discardable attribute giving the pipeline stage that
    /// holds a parameter (an i64, dist-pipeline).
    static constexpr ::llvm::StringLiteral kStageAttrName = "dist.stage";
    /// Name of the discardable attribute listing the stages that share a
    /// parameter (an array<i64>: an embedding tied to the head).
    static constexpr ::llvm::StringLiteral kTiedStagesAttrName =
        "dist.tied_stages";
    /// Name of the discardable attribute scaling a parameter's gradient
    /// before it is accumulated (an f64, dist-expert-parallel: an expert
    /// weight's gradient sums every ep member's tokens, whose losses are
    /// means over their own tokens).
    static constexpr ::llvm::StringLiteral kGradScaleAttrName =
        "dist.grad_scale";
    /// Name of the discardable attribute giving the model chunk of a stage
    /// function of the interleaved pipeline schedule (an i64: virtual stage
    /// k of pp ranks is chunk k / pp of rank k % pp, dist-pipeline).
    static constexpr ::llvm::StringLiteral kChunkAttrName = "dist.chunk";
  }];
}

class Dist_Op<string mnemonic, list<Trait> traits = []>
    : Op<Dist_Dialect, mnemonic, traits>;

class Dist_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<Dist_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

def Dist_ReductionKind : I32EnumAttr<"ReductionKind",
    "how a collective combines values", [
    I32EnumAttrCase<"sum", 0>,
    I32EnumAttrCase<"avg", 1>,
    I32EnumAttrCase<"max", 2>,
    I32EnumAttrCase<"min", 3>
  ]> {
  let cppNamespace = "::mlir::dist";
}

#endif // TRIAX_DIALECT_DIST_IR_DISTBASE_TD
