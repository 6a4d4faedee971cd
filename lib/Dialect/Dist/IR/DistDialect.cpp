//===- DistDialect.cpp - Dist dialect registration and attribute checks ---===//

#include "triax/Dialect/Dist/IR/Dist.h"

#include "mlir/IR/DialectImplementation.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>

using namespace mlir;
using namespace mlir::dist;

#include "triax/Dialect/Dist/IR/DistDialect.cpp.inc"
#include "triax/Dialect/Dist/IR/DistEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "triax/Dialect/Dist/IR/DistAttrs.cpp.inc"

void DistDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "triax/Dialect/Dist/IR/DistOps.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "triax/Dialect/Dist/IR/DistAttrs.cpp.inc"
      >();
}

/// Checks a `dist.sharding` attribute placed on a value of type `type`.
static LogicalResult
verifyShardingAnnotation(Operation *op, NamedAttribute attr, Type type,
                         function_ref<InFlightDiagnostic()> emitError) {
  auto sharding = dyn_cast<ShardingAttr>(attr.getValue());
  if (!sharding)
    return emitError() << "'" << DistDialect::kShardingAttrName
                       << "' must be a #dist.sharding attribute, got "
                       << attr.getValue();
  if (!type)
    return emitError() << "'" << DistDialect::kShardingAttrName
                       << "' needs an op with one ranked tensor result or a "
                          "tensor 'type' attribute";
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor)
    return emitError() << "'" << DistDialect::kShardingAttrName
                       << "' needs a ranked tensor to shard, got " << type;
  MeshOp mesh = lookupMesh(op, sharding.getMesh());
  if (!mesh)
    return emitError() << "sharding refers to unknown mesh "
                       << sharding.getMesh();
  return verifySharding(sharding, tensor, mesh, emitError);
}

/// Checks a `dist.zero` attribute: on an op with a tensor `type` (a
/// parameter), naming a mesh that has its axes.
static LogicalResult verifyZeroAnnotation(Operation *op, NamedAttribute attr) {
  auto zero = dyn_cast<ZeroAttr>(attr.getValue());
  if (!zero)
    return op->emitOpError("'")
           << DistDialect::kZeroAttrName
           << "' must be a #dist.zero attribute, got " << attr.getValue();
  if (!op->getAttrOfType<TypeAttr>("type"))
    return op->emitOpError("'")
           << DistDialect::kZeroAttrName
           << "' belongs on a parameter (an op with a tensor 'type')";
  MeshOp mesh = lookupMesh(op, zero.getMesh());
  if (!mesh)
    return op->emitOpError("ZeRO sharding refers to unknown mesh ")
           << zero.getMesh();
  for (Attribute axis : zero.getAxes())
    if (!mesh.getAxisSize(cast<StringAttr>(axis).getValue()))
      return op->emitOpError("ZeRO sharding: mesh @")
             << mesh.getSymName() << " has no axis " << axis;
  return success();
}

/// The piece of a parameter (a symbol with a tensor `type`) split by
/// `dist.sharding` that each rank holds: the global shape divided along
/// each split dimension by the number of shards. None for other ops and for
/// a parameter ZeRO also shards (`dist.zero`: flat chunks, which that
/// attribute's ops check).
static std::optional<SmallVector<int64_t>> shardedPiece(Operation *op) {
  auto sharding =
      op->getAttrOfType<ShardingAttr>(DistDialect::kShardingAttrName);
  auto typeAttr = op->getAttrOfType<TypeAttr>("type");
  auto global =
      typeAttr ? dyn_cast<RankedTensorType>(typeAttr.getValue()) : nullptr;
  if (!sharding || !global || !isa<SymbolOpInterface>(op) ||
      op->hasAttr(DistDialect::kZeroAttrName) || !op->getParentOp())
    return std::nullopt;
  MeshOp mesh = lookupMesh(op, sharding.getMesh());
  if (!mesh)
    return std::nullopt;
  return sharding.getLocalShape(global.getShape(), [&](StringRef axis) {
    return mesh.getAxisSize(axis).value_or(1);
  });
}

/// Every op that names a sharded parameter (shardedPiece) and has one ranked
/// tensor among its operands and results (the read, the gradient buffer's
/// read and update, the optimizer step) must have the piece's shape. The
/// parameters of one parent are checked together, in one walk over it, when
/// the first of them is verified (the others return at once): a walk per
/// parameter (SymbolTable::getSymbolUses) made verifying gpt3-175b under
/// tp=8 take seconds after every pass.
static LogicalResult verifyShardedSymbolUses(Operation *op) {
  if (!shardedPiece(op))
    return success();
  llvm::DenseMap<StringAttr, std::pair<Operation *, SmallVector<int64_t>>>
      pieces;
  for (Operation &sibling : op->getBlock()->getOperations()) {
    std::optional<SmallVector<int64_t>> piece = shardedPiece(&sibling);
    if (!piece)
      continue;
    if (pieces.empty() && &sibling != op)
      return success(); // an earlier parameter checks them all
    pieces[cast<SymbolOpInterface>(sibling).getNameAttr()] = {&sibling, *piece};
  }
  // The parameter an op names in an attribute (a symbol reference, or one
  // in an array of them), if it is one of `pieces`.
  auto named = [&](Attribute a) -> decltype(pieces)::iterator {
    auto ref = dyn_cast<SymbolRefAttr>(a);
    return ref ? pieces.find(ref.getRootReference()) : pieces.end();
  };
  LogicalResult result = success();
  op->getParentOp()->walk<WalkOrder::PreOrder>([&](Operation *user) {
    SmallVector<RankedTensorType> tensors;
    for (Type t : llvm::concat<const Type>(user->getOperandTypes(),
                                           user->getResultTypes()))
      if (auto tensor = dyn_cast<RankedTensorType>(t))
        tensors.push_back(tensor);
    if (tensors.size() != 1)
      return WalkResult::advance();
    for (NamedAttribute attr : user->getAttrs()) {
      SmallVector<Attribute> refs = {attr.getValue()};
      if (auto array = dyn_cast<ArrayAttr>(attr.getValue()))
        refs.assign(array.begin(), array.end());
      for (Attribute ref : refs) {
        auto it = named(ref);
        if (it == pieces.end() || it->second.first == user)
          continue;
        auto [param, local] = it->second;
        if (tensors.front().getShape() == ArrayRef(local))
          continue;
        auto global = cast<RankedTensorType>(
            param->getAttrOfType<TypeAttr>("type").getValue());
        InFlightDiagnostic diag =
            user->emitOpError("uses parameter @")
            << it->first.getValue() << " as " << tensors.front()
            << ", but this rank holds " << global.clone(local) << " of its "
            << global << " (split by "
            << param->getAttr(DistDialect::kShardingAttrName) << ")";
        diag.attachNote(param->getLoc()) << "parameter declared here";
        result = diag;
        return WalkResult::interrupt();
      }
    }
    return WalkResult::advance();
  });
  return result;
}

/// Checks a `dist.partial_grad` attribute: on a parameter, naming a mesh
/// that has its axes.
static LogicalResult verifyPartialGradAnnotation(Operation *op,
                                                 NamedAttribute attr) {
  auto partial = dyn_cast<PartialGradAttr>(attr.getValue());
  if (!partial)
    return op->emitOpError("'")
           << DistDialect::kPartialGradAttrName
           << "' must be a #dist.partial_grad attribute, got "
           << attr.getValue();
  if (!op->getAttrOfType<TypeAttr>("type"))
    return op->emitOpError("'")
           << DistDialect::kPartialGradAttrName
           << "' belongs on a parameter (an op with a tensor 'type')";
  MeshOp mesh = lookupMesh(op, partial.getMesh());
  if (!mesh)
    return op->emitOpError("partial gradient refers to unknown mesh ")
           << partial.getMesh();
  for (Attribute axis : partial.getAxes())
    if (!mesh.getAxisSize(cast<StringAttr>(axis).getValue()))
      return op->emitOpError("partial gradient: mesh @")
             << mesh.getSymName() << " has no axis " << axis;
  return success();
}

LogicalResult DistDialect::verifyOperationAttribute(Operation *op,
                                                    NamedAttribute attr) {
  // Pipeline stages (dist-pipeline): `dist.stage = S` on a parameter is the
  // stage that owns it; `dist.tied_stages = array<i64: ...>` lists every
  // stage that reads a parameter tied across stages (an embedding and head).
  // `dist.chunk = C` on a stage function of the interleaved schedule is
  // its model chunk.
  if (attr.getName() == kStageAttrName || attr.getName() == kChunkAttrName) {
    auto stage = dyn_cast<IntegerAttr>(attr.getValue());
    if (!stage || stage.getInt() < 0)
      return op->emitOpError("'")
             << attr.getName().getValue() << "' must be an integer >= 0, got "
             << attr.getValue();
    return success();
  }
  if (attr.getName() == kTiedStagesAttrName) {
    auto stages = dyn_cast<DenseI64ArrayAttr>(attr.getValue());
    if (!stages || stages.size() < 2 ||
        llvm::any_of(stages.asArrayRef(), [](int64_t s) { return s < 0; }))
      return op->emitOpError("'dist.tied_stages' must be an array of at "
                             "least two stages >= 0, got ")
             << attr.getValue();
    return success();
  }
  // Expert parallelism: `dist.grad_scale = F` scales a parameter's
  // gradient before it is accumulated (a finite number > 0).
  if (attr.getName() == kGradScaleAttrName) {
    auto scale = dyn_cast<FloatAttr>(attr.getValue());
    if (!scale || !std::isfinite(scale.getValueAsDouble()) ||
        scale.getValueAsDouble() <= 0)
      return op->emitOpError("'dist.grad_scale' must be a finite number > 0, "
                             "got ")
             << attr.getValue();
    return success();
  }
  if (attr.getName() == kZeroAttrName)
    return verifyZeroAnnotation(op, attr);
  if (attr.getName() == kPartialGradAttrName)
    return verifyPartialGradAnnotation(op, attr);
  if (attr.getName() != kShardingAttrName)
    return op->emitError("unknown dist attribute '")
           << attr.getName().getValue() << "'; expected '" << kShardingAttrName
           << "', '" << kZeroAttrName << "', '" << kPartialGradAttrName
           << "', '" << kGradScaleAttrName << "', '" << kStageAttrName << "', '"
           << kTiedStagesAttrName << "' or '" << kChunkAttrName << "'";
  // The sharded tensor is the op's `type` attribute (e.g. triax.param) or
  // its single result.
  Type type;
  if (auto typeAttr = op->getAttrOfType<TypeAttr>("type"))
    type = typeAttr.getValue();
  else if (op->getNumResults() == 1)
    type = op->getResult(0).getType();
  if (failed(verifyShardingAnnotation(op, attr, type,
                                      [&] { return op->emitOpError(); })))
    return failure();
  return verifyShardedSymbolUses(op);
}

LogicalResult DistDialect::verifyRegionArgAttribute(Operation *op,
                                                    unsigned regionIndex,
                                                    unsigned argIndex,
                                                    NamedAttribute attr) {
  if (attr.getName() != kShardingAttrName)
    return op->emitError("unknown dist argument attribute '")
           << attr.getName().getValue() << "'";
  // Declarations have no entry block: take the type from the signature.
  Type type;
  if (auto fn = dyn_cast<FunctionOpInterface>(op))
    type = fn.getArgumentTypes()[argIndex];
  else
    type = op->getRegion(regionIndex).getArgument(argIndex).getType();
  return verifyShardingAnnotation(op, attr, type, [&] {
    return op->emitOpError("argument #") << argIndex << ": ";
  });
}

LogicalResult DistDialect::verifyRegionResultAttribute(Operation *op,
                                                       unsigned regionIndex,
                                                       unsigned resultIndex,
                                                       NamedAttribute attr) {
  if (attr.getName() != kShardingAttrName)
    return op->emitError("unknown dist result attribute '")
           << attr.getName().getValue() << "'";
  auto fn = dyn_cast<FunctionOpInterface>(op);
  if (!fn)
    return op->emitOpError("'")
           << kShardingAttrName << "' on a result needs a function";
  return verifyShardingAnnotation(
      op, attr, fn.getResultTypes()[resultIndex],
      [&] { return op->emitOpError("result #") << resultIndex << ": "; });
}
