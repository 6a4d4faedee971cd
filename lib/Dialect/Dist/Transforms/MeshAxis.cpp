//===- MeshAxis.cpp - The mesh axis a dist pass works on ------------------===//

#include "triax/Dialect/Dist/Transforms/MeshAxis.h"

#include "triax/Dialect/Dist/IR/MeshShape.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Builders.h"

using namespace mlir;
using namespace mlir::dist;

MeshOp mlir::dist::getOrCreateMeshAxis(ModuleOp module, StringRef pass,
                                       StringRef axis, int64_t size) {
  SmallVector<MeshOp> meshes = llvm::to_vector(module.getOps<MeshOp>());
  if (meshes.size() > 1) {
    meshes[1].emitError() << pass << ": the module has " << meshes.size()
                          << " meshes; expected at most one";
    return nullptr;
  }
  if (!meshes.empty()) {
    MeshOp mesh = meshes.front();
    std::optional<int64_t> have = mesh.getAxisSize(axis);
    if (!have) {
      mesh.emitError() << pass << ": mesh @" << mesh.getSymName()
                       << " has no axis \"" << axis << "\"";
      return nullptr;
    }
    if (size > 0 && *have != size) {
      mesh.emitError() << pass << ": mesh @" << mesh.getSymName() << " has "
                       << axis << "=" << *have << " but the pass was asked for "
                       << axis << "=" << size;
      return nullptr;
    }
    return mesh;
  }
  if (size < 1) {
    module.emitError() << pass
                       << ": the module has no dist.mesh; give the size of "
                          "the \""
                       << axis << "\" axis with the pass option " << axis
                       << "=N";
    return nullptr;
  }
  if (module.lookupSymbol("mesh")) {
    module.emitError() << pass << ": cannot create @mesh: the symbol is taken";
    return nullptr;
  }
  OpBuilder b = OpBuilder::atBlockBegin(module.getBody());
  return MeshOp::create(b, module.getLoc(), "mesh", b.getStrArrayAttr({axis}),
                        b.getDenseI64ArrayAttr({size}));
}

MeshOp mlir::dist::getDataMesh(ModuleOp module, StringRef pass,
                               StringRef dpAxis, int64_t size) {
  auto meshes = llvm::to_vector(module.getOps<MeshOp>());
  if (meshes.size() == 1 && !meshes.front().getAxisSize(dpAxis) &&
      (meshes.front().getAxisSize(axisName(TRX_AXIS_EXPERT)) ||
       meshes.front().getAxisSize(axisName(TRX_AXIS_CONTEXT))))
    return meshes.front();
  return getOrCreateMeshAxis(module, pass, dpAxis, size);
}

FailureOr<SmallVector<triax::ModelOp>>
mlir::dist::forwardModels(ModuleOp module, StringRef pass) {
  SmallVector<triax::ModelOp> models =
      llvm::to_vector(module.getOps<triax::ModelOp>());
  for (triax::ModelOp model : models)
    for (StringRef name : {triax::ModelOp::kForwardBackwardName,
                           triax::ModelOp::kOptimizerStepName})
      if (model.lookupSymbol(name)) {
        model.emitError() << pass << ": model @" << model.getSymName()
                          << " already has @" << name << "; run " << pass
                          << " before triax-autodiff";
        return failure();
      }
  return models;
}

SmallVector<StringRef> mlir::dist::dataAxes(MeshOp mesh,
                                            ArrayRef<StringRef> names) {
  SmallVector<StringRef> axes;
  for (StringRef axis : names)
    if (mesh.getAxisSize(axis))
      axes.push_back(axis);
  return axes;
}

ArrayAttr mlir::dist::replicatedDataAxes(triax::ParamOp param,
                                         ArrayRef<StringRef> dataAxes) {
  Builder b(param.getContext());
  auto sharding =
      param->getAttrOfType<ShardingAttr>(DistDialect::kShardingAttrName);
  SmallVector<StringRef> axes;
  for (StringRef axis : dataAxes) {
    bool split = false;
    for (unsigned d = 0; sharding && d < sharding.getRank(); ++d)
      split |= llvm::is_contained(sharding.getDimAxes(d), axis);
    if (!split)
      axes.push_back(axis);
  }
  return b.getStrArrayAttr(axes);
}

FailureOr<int64_t> mlir::dist::accumulationSteps(triax::ModelOp model,
                                                 int64_t dp, StringRef pass) {
  triax::TrainConfigAttr config = model.getConfig();
  int64_t batch = config.getGlobalBatch(), micro = config.getMicroBatch();
  if (micro < 1 || dp < 1 || batch % (micro * dp) != 0) {
    model.emitError() << pass << ": model @" << model.getSymName()
                      << "'s global batch " << batch
                      << " is not a multiple of micro_batch x dp = " << micro
                      << " x " << dp << "; choose the batch with "
                      << "triax-model --batch B --micro-batch b (B a multiple "
                      << "of b x dp)";
    return failure();
  }
  return batch / (micro * dp);
}

bool mlir::dist::foldContextSums(triax::ModelOp model, MeshOp mesh,
                                 StringRef cpAxis) {
  std::optional<int64_t> size = mesh.getAxisSize(cpAxis);
  auto step = model.getOptimizerStep();
  if (!size || *size < 2 || !step)
    return false;
  auto partialOverCp = [&](triax::ParamOp param) {
    auto partial = param->getAttrOfType<PartialGradAttr>(
        DistDialect::kPartialGradAttrName);
    return partial && partial.getMesh().getValue() == mesh.getSymName() &&
           llvm::is_contained(partial.getAxes(),
                              StringAttr::get(model.getContext(), cpAxis));
  };
  if (!llvm::all_of(model.getParams(), partialOverCp))
    return false;
  SmallVector<AllReduceOp> sums;
  WalkResult walk = model.walk([&](triax::AccumulateGradOp acc) {
    auto sum = acc.getGrad().getDefiningOp<AllReduceOp>();
    if (!sum || sum.getReduction() != ReductionKind::sum || !sum->hasOneUse() ||
        sum.getMesh() != mesh.getSymName() ||
        !llvm::is_contained(sum.getAxes(),
                            StringAttr::get(model.getContext(), cpAxis)))
      return WalkResult::interrupt();
    sums.push_back(sum);
    return WalkResult::advance();
  });
  if (walk.wasInterrupted() || sums.empty())
    return false;
  for (AllReduceOp sum : sums) {
    SmallVector<Attribute> rest;
    for (Attribute axis : sum.getAxes())
      if (cast<StringAttr>(axis).getValue() != cpAxis)
        rest.push_back(axis);
    if (!rest.empty()) {
      sum.setAxesAttr(ArrayAttr::get(model.getContext(), rest));
      continue;
    }
    sum.getResult().replaceAllUsesWith(sum.getInput());
    sum.erase();
  }
  Block &entry = step.getBody().front();
  Value gradScale = entry.getArgument(2);
  OpBuilder b = OpBuilder::atBlockBegin(&entry);
  Value factor = arith::ConstantOp::create(b, step.getLoc(),
                                           b.getF32FloatAttr(float(*size)));
  auto scaled = arith::MulFOp::create(b, step.getLoc(), gradScale, factor);
  gradScale.replaceAllUsesExcept(scaled, scaled);
  return true;
}
