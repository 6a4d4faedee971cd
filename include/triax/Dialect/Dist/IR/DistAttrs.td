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
  }];
}

#endif // TRIAX_DIALECT_DIST_IR_DISTATTRS_TD
