//===- DistOps.cpp - Dist op syntax and verifiers -------------------------===//
//
// Collectives are checked against their mesh: the axes must exist and be
// distinct, and the result shape must follow from the group size (all_gather
// multiplies the gathered dimension by it, reduce_scatter divides).
//
//===----------------------------------------------------------------------===//

#include "triax/Dialect/Dist/IR/Dist.h"
#include "triax_abi.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/MathExtras.h"

#include <limits>

using namespace mlir;
using namespace mlir::dist;

//===----------------------------------------------------------------------===//
// MeshOp
//===----------------------------------------------------------------------===//

// <["a"=2, "b"=2, "c"=2]>
static ParseResult parseMeshAxes(OpAsmParser &parser, ArrayAttr &names,
                                 DenseI64ArrayAttr &sizes) {
  SmallVector<Attribute> nameAttrs;
  SmallVector<int64_t> sizeValues;
  auto parseAxis = [&]() -> ParseResult {
    std::string name;
    int64_t size = 0;
    if (parser.parseString(&name) || parser.parseEqual() ||
        parser.parseInteger(size))
      return failure();
    nameAttrs.push_back(parser.getBuilder().getStringAttr(name));
    sizeValues.push_back(size);
    return success();
  };
  if (parser.parseLess() ||
      parser.parseCommaSeparatedList(OpAsmParser::Delimiter::Square,
                                     parseAxis) ||
      parser.parseGreater())
    return failure();
  names = parser.getBuilder().getArrayAttr(nameAttrs);
  sizes = parser.getBuilder().getDenseI64ArrayAttr(sizeValues);
  return success();
}

static void printMeshAxes(OpAsmPrinter &printer, MeshOp, ArrayAttr names,
                          DenseI64ArrayAttr sizes) {
  printer << "<[";
  llvm::interleaveComma(
      llvm::zip(names, sizes.asArrayRef()), printer, [&](auto axis) {
        printer << "\"" << cast<StringAttr>(std::get<0>(axis)).getValue()
                << "\"=" << std::get<1>(axis);
      });
  printer << "]>";
}

LogicalResult MeshOp::verify() {
  ArrayAttr names = getAxisNames();
  ArrayRef<int64_t> sizes = getAxisSizes();
  if (names.empty())
    return emitOpError("mesh needs at least one axis");
  if (names.size() != sizes.size())
    return emitOpError("has ")
           << names.size() << " axis names but " << sizes.size() << " sizes";
  llvm::StringSet<> seen;
  int64_t devices = 1;
  for (auto [nameAttr, size] : llvm::zip(names, sizes)) {
    StringRef name = cast<StringAttr>(nameAttr).getValue();
    if (name.empty())
      return emitOpError("axis names must be non-empty");
    if (!seen.insert(name).second)
      return emitOpError("axis \"") << name << "\" appears more than once";
    if (size < 1)
      return emitOpError("axis \"")
             << name << "\" has size " << size << "; expected a size >= 1";
    // getNumDevices() and every rank count after it multiply the sizes.
    if (llvm::MulOverflow(devices, size, devices))
      return emitOpError("has more than ")
             << std::numeric_limits<int64_t>::max() << " devices";
  }
  return success();
}

std::optional<int64_t> MeshOp::getAxisSize(StringRef axis) {
  for (auto [name, size] : llvm::zip(getAxisNames(), getAxisSizes()))
    if (cast<StringAttr>(name).getValue() == axis)
      return size;
  return std::nullopt;
}

int64_t MeshOp::getNumDevices() {
  int64_t n = 1;
  for (int64_t size : getAxisSizes())
    n *= size;
  return n;
}

int64_t MeshOp::getGroupSize(ArrayAttr axes) {
  int64_t n = 1;
  for (Attribute axis : axes)
    n *= getAxisSize(cast<StringAttr>(axis).getValue()).value_or(1);
  return n;
}

MeshOp mlir::dist::lookupMesh(Operation *from, FlatSymbolRefAttr name,
                              SymbolTableCollection *symbolTable) {
  for (Operation *op = from; op; op = op->getParentOp()) {
    if (!op->hasTrait<OpTrait::SymbolTable>())
      continue;
    Operation *found = symbolTable
                           ? symbolTable->lookupSymbolIn(op, name.getAttr())
                           : SymbolTable::lookupSymbolIn(op, name.getAttr());
    if (auto mesh = dyn_cast_or_null<MeshOp>(found))
      return mesh;
  }
  return {};
}

//===----------------------------------------------------------------------===//
// ShardingConstraintOp
//===----------------------------------------------------------------------===//

LogicalResult
ShardingConstraintOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  MeshOp mesh = lookupMesh(*this, getSharding().getMesh(), &symbolTable);
  if (!mesh)
    return emitOpError("refers to unknown mesh ") << getSharding().getMesh();
  return verifySharding(getSharding(), getType(), mesh,
                        [&] { return emitOpError(); });
}

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

/// Checks that `axes` name distinct axes of mesh `meshName` and returns the
/// number of devices in one group.
static FailureOr<int64_t> verifyCollectiveGroup(Operation *op,
                                                FlatSymbolRefAttr meshName,
                                                ArrayAttr axes,
                                                SymbolTableCollection &table) {
  MeshOp mesh = lookupMesh(op, meshName, &table);
  if (!mesh)
    return op->emitOpError("refers to unknown mesh ") << meshName;
  if (axes.empty())
    return op->emitOpError("needs at least one mesh axis");
  llvm::StringSet<> seen;
  int64_t group = 1;
  for (Attribute attr : axes) {
    StringRef axis = cast<StringAttr>(attr).getValue();
    std::optional<int64_t> size = mesh.getAxisSize(axis);
    if (!size)
      return op->emitOpError("unknown axis \"")
             << axis << "\" in mesh @" << mesh.getSymName();
    if (!seen.insert(axis).second)
      return op->emitOpError("axis \"") << axis << "\" is listed twice";
    group *= *size;
  }
  return group;
}

#define DEFINE_VERIFY_GROUP(OP)                                                \
  FailureOr<int64_t> OP::verifyGroup(SymbolTableCollection &symbolTable) {     \
    return verifyCollectiveGroup(*this, getMeshAttr(), getAxes(),              \
                                 symbolTable);                                 \
  }
DEFINE_VERIFY_GROUP(AllReduceOp)
DEFINE_VERIFY_GROUP(CopyToGroupOp)
DEFINE_VERIFY_GROUP(AllGatherOp)
DEFINE_VERIFY_GROUP(ReduceScatterOp)
DEFINE_VERIFY_GROUP(AllToAllOp)
DEFINE_VERIFY_GROUP(BroadcastOp)
DEFINE_VERIFY_GROUP(SendOp)
DEFINE_VERIFY_GROUP(RecvOp)
DEFINE_VERIFY_GROUP(AxisIndexOp)
DEFINE_VERIFY_GROUP(ShardSequenceOp)
#undef DEFINE_VERIFY_GROUP

/// all_gather (scale = group) and reduce_scatter (scale = 1/group): the
/// result equals the input except along `dim`.
static LogicalResult verifyResizedDim(Operation *op, RankedTensorType input,
                                      RankedTensorType result, int64_t dim,
                                      int64_t group, bool gather) {
  if (dim < 0 || dim >= input.getRank())
    return op->emitOpError("dim ") << dim << " is out of range for " << input;
  if (input.getRank() != result.getRank() ||
      input.getElementType() != result.getElementType())
    return op->emitOpError("result ")
           << result << " must have the input's rank and element type ("
           << input << ")";
  for (int64_t d = 0; d < input.getRank(); ++d) {
    int64_t in = input.getDimSize(d), out = result.getDimSize(d);
    if (ShapedType::isDynamic(in) || ShapedType::isDynamic(out))
      continue;
    int64_t expected = in;
    if (d == dim && gather) {
      expected = in * group;
    } else if (d == dim) {
      if (in % group != 0)
        return op->emitOpError("dimension ")
               << d << " of size " << in
               << " is not divisible by the group size " << group;
      expected = in / group;
    }
    if (out != expected)
      return op->emitOpError("result dimension ")
             << d << " is " << out << ", expected " << expected
             << (d == dim ? (gather ? " (input times the group size "
                                    : " (input divided by the group size ")
                          : " (unchanged")
             << (d == dim ? std::to_string(group) : std::string()) << ")";
  }
  return success();
}

/// broadcast's root and send/recv's peer index a member of the group.
static LogicalResult verifyGroupMember(Operation *op, StringRef what,
                                       int64_t index, int64_t group) {
  if (index < 0 || index >= group)
    return op->emitOpError() << what << " " << index
                             << " is out of range for a group of " << group;
  return success();
}

LogicalResult AllReduceOp::verifySymbolUses(SymbolTableCollection &table) {
  return verifyGroup(table);
}

LogicalResult CopyToGroupOp::verifySymbolUses(SymbolTableCollection &table) {
  return verifyGroup(table);
}

LogicalResult AllGatherOp::verifySymbolUses(SymbolTableCollection &table) {
  FailureOr<int64_t> group = verifyGroup(table);
  if (failed(group))
    return failure();
  return verifyResizedDim(*this, getInput().getType(), getType(), getDim(),
                          *group, /*gather=*/true);
}

LogicalResult ReduceScatterOp::verifySymbolUses(SymbolTableCollection &table) {
  FailureOr<int64_t> group = verifyGroup(table);
  if (failed(group))
    return failure();
  return verifyResizedDim(*this, getInput().getType(), getType(), getDim(),
                          *group, /*gather=*/false);
}

LogicalResult AllToAllOp::verifySymbolUses(SymbolTableCollection &table) {
  FailureOr<int64_t> group = verifyGroup(table);
  if (failed(group))
    return failure();
  RankedTensorType input = getInput().getType(), result = getType();
  int64_t rank = input.getRank(), split = getSplitDim(),
          concat = getConcatDim();
  for (auto [what, dim] :
       {std::pair<StringRef, int64_t>{"split", split}, {"concat", concat}})
    if (dim < 0 || dim >= rank)
      return emitOpError() << what << " dimension " << dim
                           << " is out of range for " << input;
  if (result.getRank() != rank ||
      result.getElementType() != input.getElementType())
    return emitOpError("result ")
           << result << " must have the input's rank and element type ("
           << input << ")";
  int64_t in = input.getDimSize(split);
  if (!ShapedType::isDynamic(in) && in % *group != 0)
    return emitOpError("split dimension ")
           << split << " of size " << in
           << " is not divisible by the group size " << *group;
  for (int64_t d = 0; d < rank; ++d) {
    int64_t size = input.getDimSize(d), out = result.getDimSize(d);
    if (ShapedType::isDynamic(size) || ShapedType::isDynamic(out))
      continue;
    int64_t expected = size;
    if (d == split)
      expected /= *group;
    if (d == concat)
      expected *= *group;
    if (out != expected)
      return emitOpError("result dimension ")
             << d << " is " << out << ", expected " << expected
             << (d == split && d == concat ? " (unchanged: split and concat"
                                             " are the same dimension)"
                 : d == split  ? " (input divided by the group size)"
                 : d == concat ? " (input times the group size)"
                               : " (unchanged)");
  }
  return success();
}

LogicalResult ShardSequenceOp::verifySymbolUses(SymbolTableCollection &table) {
  FailureOr<int64_t> group = verifyGroup(table);
  if (failed(group))
    return failure();
  if (failed(verifyResizedDim(*this, getInput().getType(), getType(), getDim(),
                              *group, /*gather=*/false)))
    return failure();
  int64_t local = getType().getDimSize(getDim());
  if (!getContiguous() && !ShapedType::isDynamic(local) && local % 2 != 0)
    return emitOpError("each member keeps two equal chunks, but its ")
           << local << " elements along dim " << getDim() << " are odd";
  return success();
}

LogicalResult BroadcastOp::verifySymbolUses(SymbolTableCollection &table) {
  FailureOr<int64_t> group = verifyGroup(table);
  if (failed(group))
    return failure();
  return verifyGroupMember(*this, "root", getRoot(), *group);
}

LogicalResult SendOp::verifySymbolUses(SymbolTableCollection &table) {
  FailureOr<int64_t> group = verifyGroup(table);
  if (failed(group))
    return failure();
  return verifyGroupMember(*this, "destination", getTo(), *group);
}

LogicalResult RecvOp::verifySymbolUses(SymbolTableCollection &table) {
  FailureOr<int64_t> group = verifyGroup(table);
  if (failed(group))
    return failure();
  return verifyGroupMember(*this, "source", getFrom(), *group);
}

LogicalResult AxisIndexOp::verifySymbolUses(SymbolTableCollection &table) {
  if (getAxes().size() != 1)
    return emitOpError("expects exactly one mesh axis, got ")
           << getAxes().size();
  return verifyGroup(table);
}

//===----------------------------------------------------------------------===//
// ZeRO's flat-chunk collectives
//===----------------------------------------------------------------------===//

/// A whole tensor and its flat chunk over a group of `group`: the chunk has
/// ceil(numel / group) elements of the same type.
static LogicalResult verifyChunk(Operation *op, RankedTensorType whole,
                                 RankedTensorType chunk, int64_t group) {
  if (!whole.hasStaticShape() || !chunk.hasStaticShape())
    return op->emitOpError("needs static shapes, got ")
           << whole << " and " << chunk;
  if (whole.getElementType() != chunk.getElementType())
    return op->emitOpError("element types differ: ")
           << whole << " and " << chunk;
  int64_t expected = trx_zero_chunk(whole.getNumElements(), group);
  if (chunk.getNumElements() != expected)
    return op->emitOpError("chunk ")
           << chunk << " must have ceil(" << whole.getNumElements() << " / "
           << group << ") = " << expected << " elements";
  return success();
}

#define DEFINE_VERIFY_GROUP(OP)                                                \
  FailureOr<int64_t> OP::verifyGroup(SymbolTableCollection &symbolTable) {     \
    return verifyCollectiveGroup(*this, getMeshAttr(), getAxes(),              \
                                 symbolTable);                                 \
  }
DEFINE_VERIFY_GROUP(ReduceScatterFlatOp)
DEFINE_VERIFY_GROUP(AllGatherFlatOp)
DEFINE_VERIFY_GROUP(AllGatherParamsOp)
DEFINE_VERIFY_GROUP(ReduceScatterBucketOp)
DEFINE_VERIFY_GROUP(AllGatherBucketOp)
#undef DEFINE_VERIFY_GROUP

LogicalResult
ReduceScatterFlatOp::verifySymbolUses(SymbolTableCollection &table) {
  FailureOr<int64_t> group = verifyGroup(table);
  if (failed(group))
    return failure();
  return verifyChunk(*this, getInput().getType(), getType(), *group);
}

LogicalResult AllGatherFlatOp::verifySymbolUses(SymbolTableCollection &table) {
  FailureOr<int64_t> group = verifyGroup(table);
  if (failed(group))
    return failure();
  return verifyChunk(*this, getType(), getInput().getType(), *group);
}

LogicalResult
AllGatherParamsOp::verifySymbolUses(SymbolTableCollection &table) {
  if (failed(verifyGroup(table)))
    return failure();
  if (getParams().empty())
    return emitOpError("needs at least one parameter");
  Type element;
  for (Attribute ref : getParams()) {
    auto name = cast<SymbolRefAttr>(ref);
    Operation *param = table.lookupNearestSymbolFrom(*this, name);
    if (!param)
      return emitOpError("unknown parameter ") << name;
    auto zero = param->getAttrOfType<ZeroAttr>(DistDialect::kZeroAttrName);
    if (!zero || zero.getStage() > 2)
      return emitOpError("parameter ")
             << name
             << " must carry dist.zero with stage 1 or 2 (its whole copy is "
                "gathered in place)";
    if (zero.getMesh() != getMeshAttr() || zero.getAxes() != getAxes())
      return emitOpError("gathers over ")
             << getMeshAttr() << " " << getAxes() << " but parameter " << name
             << " is sharded over " << zero.getMesh() << " " << zero.getAxes();
    auto typeAttr = param->getAttrOfType<TypeAttr>("type");
    Type t = typeAttr ? getElementTypeOrSelf(typeAttr.getValue()) : Type();
    if (element && t && t != element)
      return emitOpError("parameters of element types ")
             << element << " and " << t
             << " in one bucket (one message has one element type)";
    if (t)
      element = t;
  }
  return success();
}

//===----------------------------------------------------------------------===//
// ReduceScatterBucketOp, AllGatherBucketOp
//===----------------------------------------------------------------------===//

/// A bucket op's operands: at least one input, one result per input, one
/// element type, and each (whole, chunk) pair of `wholes` and `chunks` a
/// tensor and its flat chunk over a group of `group`; `perInput` names
/// what each input has one of.
static LogicalResult verifyBucket(Operation *op, int64_t group,
                                  ValueRange inputs, ValueRange results,
                                  ValueRange wholes, ValueRange chunks,
                                  StringRef perInput) {
  if (inputs.empty())
    return op->emitOpError("needs at least one input");
  if (inputs.size() != results.size())
    return op->emitOpError("has ")
           << inputs.size() << " inputs but " << results.size() << " results ("
           << perInput << ")";
  Type element = getElementTypeOrSelf(inputs[0].getType());
  for (Value in : inputs)
    if (getElementTypeOrSelf(in.getType()) != element)
      return op->emitOpError("inputs of element types ")
             << element << " and " << getElementTypeOrSelf(in.getType())
             << " in one bucket (one message has one element type)";
  for (auto [whole, chunk] : llvm::zip(wholes, chunks))
    if (failed(verifyChunk(op, cast<RankedTensorType>(whole.getType()),
                           cast<RankedTensorType>(chunk.getType()), group)))
      return failure();
  return success();
}

LogicalResult
ReduceScatterBucketOp::verifySymbolUses(SymbolTableCollection &table) {
  FailureOr<int64_t> group = verifyGroup(table);
  if (failed(group))
    return failure();
  return verifyBucket(*this, *group, getInputs(), getResults(), getInputs(),
                      getResults(), "one chunk per input");
}

LogicalResult
AllGatherBucketOp::verifySymbolUses(SymbolTableCollection &table) {
  FailureOr<int64_t> group = verifyGroup(table);
  if (failed(group))
    return failure();
  return verifyBucket(*this, *group, getInputs(), getResults(), getResults(),
                      getInputs(), "one whole tensor per chunk");
}

//===----------------------------------------------------------------------===//
// AllReduceGradsOp
//===----------------------------------------------------------------------===//

FailureOr<int64_t>
AllReduceGradsOp::verifyGroup(SymbolTableCollection &symbolTable) {
  return verifyCollectiveGroup(*this, getMeshAttr(), getAxes(), symbolTable);
}

LogicalResult AllReduceGradsOp::verifySymbolUses(SymbolTableCollection &table) {
  if (failed(verifyGroup(table)))
    return failure();
  if (getParams().empty())
    return emitOpError("needs at least one parameter");
  for (Attribute param : getParams())
    if (!table.lookupNearestSymbolFrom(*this, cast<SymbolRefAttr>(param)))
      return emitOpError("unknown parameter ") << param;
  return success();
}

#define GET_OP_CLASSES
#include "triax/Dialect/Dist/IR/DistOps.cpp.inc"
