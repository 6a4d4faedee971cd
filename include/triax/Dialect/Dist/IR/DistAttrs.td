//===- DistAttrs.td - Dist attributes ----------------------*- tablegen -*-===//

#ifndef TRIAX_DIALECT_DIST_IR_DISTATTRS_TD
#define TRIAX_DIALECT_DIST_IR_DISTATTRS_TD

include "triax/Dialect/Dist/IR/DistBase.td"
include "mlir/IR/BuiltinAttributeInterfaces.td"

def Dist_ShardingAttr : Dist_Attr<"Sharding", "sharding"> {
  let summary = "Per-dimension sharding of a tensor over named mesh axes";
  let description = [{
    One list of mesh axes per tensor dimension; the dimension is split over
    the product of those axes' sizes (major to minor), an empty list means
    the dimension is replicated. An axis may appear at most once.

    Batch over "dp", features over "tp", sequence replicated:
  }] # "\n```mlir\n#dist.sharding<@cluster, [{\"dp\"}, {}, {\"tp\"}]>\n```\n";
  let parameters = (ins "::mlir::FlatSymbolRefAttr":$mesh,
                        "::mlir::ArrayAttr":$dims);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The axes splitting dimension `dim`, major to minor.
    ::llvm::SmallVector<::llvm::StringRef> getDimAxes(unsigned dim) const;
    unsigned getRank() const { return getDims().size(); }
    /// The piece of a tensor of shape `global` one device holds: each
    /// dimension divided by the sizes of the axes that split it
    /// (`axisSize(name)`, which says 1 for an axis the mesh lacks).
    ::llvm::SmallVector<int64_t>
    getLocalShape(::llvm::ArrayRef<int64_t> global,
                  ::llvm::function_ref<int64_t(::llvm::StringRef)> axisSize)
        const;
  }];
}

def Dist_ZeroAttr : Dist_Attr<"Zero", "zero"> {
  let summary = "ZeRO sharding of a parameter's training state";
  let description = [{
    Placed by `dist-zero` on a `triax.param` as the discardable attribute
    `dist.zero`: the parameter's training state is split over the group of
    `axes` (normally the data-parallel axis) by ZeRO stage `stage`
    (Rajbhandari et al., 2020):

    | stage | sharded over the group | replicated |
    |---|---|---|
    | 1 | AdamW moments | parameter, gradient buffer |
    | 2 | moments, gradient buffer | parameter |
    | 3 | moments, gradient buffer, parameter | - |

    A sharded buffer is a flat piece: the parameter's (per-rank) elements in
    row-major order, padded with zeros to a multiple of the group size g,
    split into g equal chunks of `ceil(numel / g)`; group member i holds
    chunk i. Nothing is left replicated because it does not divide.
  }] # "\n```mlir\ntriax.param @w : tensor<64x256xf32> init <zeros> "
       "{dist.zero = #dist.zero<@mesh, [\"dp\"], stage = 2>}\n```\n";
  let parameters = (ins "::mlir::FlatSymbolRefAttr":$mesh,
                        "::mlir::ArrayAttr":$axes, "int64_t":$stage);
  let assemblyFormat = "`<` $mesh `,` $axes `,` `stage` `=` $stage `>`";
  let genVerifyDecl = 1;
}

def Dist_PartialGradAttr : Dist_Attr<"PartialGrad", "partial_grad"> {
  let summary = "A replicated parameter whose gradient each rank computes "
                "only in part";
  let description = [{
    Placed by `dist-tensor-parallel{sequence-parallel=true}` on a
    `triax.param` as the discardable attribute `dist.partial_grad`: the
    parameter is replicated over the group of `axes`, but each member
    applies it to its own slice of the activations (its tokens of the
    sequence), so its gradient is that slice's part; the full gradient is
    the sum over the group. `triax-autodiff` sums it
    (`dist.all_reduce sum`) before `triax.accumulate_grad`, so the gradient
    buffers hold full gradients, equal on every member. The layer norms'
    weights and biases, the row-split linears' biases and the position
    embedding of a sequence-parallel model are such parameters.
  }] # "\n```mlir\ntriax.param @ln.weight : tensor<64xf32> init <ones> "
       "{dist.partial_grad = #dist.partial_grad<@mesh, [\"tp\"]>}\n```\n";
  let parameters = (ins "::mlir::FlatSymbolRefAttr":$mesh,
                        "::mlir::ArrayAttr":$axes);
  let assemblyFormat = "`<` $mesh `,` $axes `>`";
  let genVerifyDecl = 1;
}

#endif // TRIAX_DIALECT_DIST_IR_DISTATTRS_TD
