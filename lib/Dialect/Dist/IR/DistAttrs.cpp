//===- DistAttrs.cpp - #dist.sharding syntax and checks -------------------===//

#include "triax/Dialect/Dist/IR/Dist.h"

#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/StringSet.h"

using namespace mlir;
using namespace mlir::dist;

// #dist.sharding<@mesh, [{"a"}, {}, {"b", "c"}]>
Attribute ShardingAttr::parse(AsmParser &parser, Type) {
  SMLoc loc = parser.getCurrentLocation();
  MLIRContext *ctx = parser.getContext();
  FlatSymbolRefAttr mesh;
  SmallVector<Attribute> dims;
  if (parser.parseLess() || parser.parseAttribute(mesh) || parser.parseComma())
    return {};
  auto parseDim = [&]() -> ParseResult {
    SmallVector<Attribute> axes;
    if (parser.parseCommaSeparatedList(
            AsmParser::Delimiter::Braces, [&]() -> ParseResult {
              std::string axis;
              if (parser.parseString(&axis))
                return failure();
              axes.push_back(StringAttr::get(ctx, axis));
              return success();
            }))
      return failure();
    dims.push_back(ArrayAttr::get(ctx, axes));
    return success();
  };
  if (parser.parseCommaSeparatedList(AsmParser::Delimiter::Square, parseDim) ||
      parser.parseGreater())
    return {};
  return parser.getChecked<ShardingAttr>(loc, ctx, mesh,
                                         ArrayAttr::get(ctx, dims));
}

void ShardingAttr::print(AsmPrinter &printer) const {
  printer << "<" << getMesh() << ", [";
  llvm::interleaveComma(getDims(), printer, [&](Attribute dim) {
    printer << "{";
    llvm::interleaveComma(cast<ArrayAttr>(dim), printer, [&](Attribute axis) {
      printer << "\"" << cast<StringAttr>(axis).getValue() << "\"";
    });
    printer << "}";
  });
  printer << "]>";
}

LogicalResult ShardingAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                   FlatSymbolRefAttr mesh, ArrayAttr dims) {
  if (!mesh)
    return emitError() << "sharding needs a mesh symbol";
  llvm::StringSet<> seen;
  for (auto [i, dim] : llvm::enumerate(dims)) {
    auto axes = dyn_cast<ArrayAttr>(dim);
    if (!axes)
      return emitError() << "dimension " << i
                         << " must list its axes as an array, got " << dim;
    for (Attribute axis : axes) {
      auto name = dyn_cast<StringAttr>(axis);
      if (!name || name.getValue().empty())
        return emitError() << "dimension " << i
                           << " has an axis that is not a non-empty string";
      if (!seen.insert(name.getValue()).second)
        return emitError() << "axis \"" << name.getValue()
                           << "\" is used more than once in one sharding";
    }
  }
  return success();
}

SmallVector<StringRef> ShardingAttr::getDimAxes(unsigned dim) const {
  SmallVector<StringRef> axes;
  for (Attribute axis : cast<ArrayAttr>(getDims()[dim]))
    axes.push_back(cast<StringAttr>(axis).getValue());
  return axes;
}

SmallVector<int64_t>
ShardingAttr::getLocalShape(ArrayRef<int64_t> global,
                            function_ref<int64_t(StringRef)> axisSize) const {
  SmallVector<int64_t> local(global);
  for (unsigned d = 0; d < getRank() && d < local.size(); ++d)
    for (StringRef axis : getDimAxes(d))
      local[d] /= axisSize(axis);
  return local;
}

LogicalResult
mlir::dist::verifySharding(ShardingAttr sharding, RankedTensorType type,
                           MeshOp mesh,
                           function_ref<InFlightDiagnostic()> emitError) {
  if (sharding.getRank() != type.getRank())
    return emitError() << "sharding has " << sharding.getRank()
                       << " dimensions but the tensor " << type << " has rank "
                       << type.getRank();
  for (unsigned d = 0; d < sharding.getRank(); ++d) {
    int64_t parts = 1;
    for (StringRef axis : sharding.getDimAxes(d)) {
      std::optional<int64_t> size = mesh.getAxisSize(axis);
      if (!size)
        return emitError() << "unknown axis \"" << axis << "\" in mesh @"
                           << mesh.getSymName();
      parts *= *size;
    }
    int64_t extent = type.getDimSize(d);
    if (!ShapedType::isDynamic(extent) && extent % parts != 0)
      return emitError() << "dimension " << d << " of size " << extent
                         << " is not divisible by " << parts
                         << ", the number of shards over its axes";
  }
  return success();
}

LogicalResult ZeroAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                               FlatSymbolRefAttr mesh, ArrayAttr axes,
                               int64_t stage) {
  if (!mesh)
    return emitError() << "ZeRO sharding needs a mesh symbol";
  if (stage < 1 || stage > 3)
    return emitError() << "ZeRO stage " << stage << " does not exist "
                       << "(expected 1, 2 or 3)";
  if (axes.empty())
    return emitError() << "ZeRO sharding needs at least one mesh axis";
  llvm::StringSet<> seen;
  for (Attribute axis : axes) {
    auto name = dyn_cast<StringAttr>(axis);
    if (!name || name.getValue().empty())
      return emitError() << "ZeRO axis " << axis
                         << " is not a non-empty string";
    if (!seen.insert(name.getValue()).second)
      return emitError() << "ZeRO axis \"" << name.getValue()
                         << "\" is listed twice";
  }
  return success();
}

LogicalResult
PartialGradAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                        FlatSymbolRefAttr mesh, ArrayAttr axes) {
  if (!mesh)
    return emitError() << "a partial gradient needs a mesh symbol";
  if (axes.empty())
    return emitError() << "a partial gradient needs at least one mesh axis";
  llvm::StringSet<> seen;
  for (Attribute axis : axes) {
    auto name = dyn_cast<StringAttr>(axis);
    if (!name || name.getValue().empty())
      return emitError() << "partial gradient axis " << axis
                         << " is not a non-empty string";
    if (!seen.insert(name.getValue()).second)
      return emitError() << "partial gradient axis \"" << name.getValue()
                         << "\" is listed twice";
  }
  return success();
}
