//===- DataParallel.cpp - Gradient averaging over the dp axis -------------===//
//
// dist-data-parallel: one `dist.all_reduce avg` per gradient where
// @optimizer_step reads the gradient buffers (see Passes.td for why there).
//
//===----------------------------------------------------------------------===//

#include "triax/Dialect/Dist/Transforms/Passes.h"

#include "triax/Dialect/Dist/IR/Dist.h"
#include "triax/Dialect/Triax/IR/Triax.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace mlir::dist {
#define GEN_PASS_DEF_DISTDATAPARALLEL
#include "triax/Dialect/Dist/Transforms/Passes.h.inc"
} // namespace mlir::dist

using namespace mlir;
using namespace mlir::dist;

namespace {

struct DataParallelPass
    : public mlir::dist::impl::DistDataParallelBase<DataParallelPass> {
  using DistDataParallelBase::DistDataParallelBase;
  void runOnOperation() override;

  /// The module's mesh with the dp axis, created when there is none.
  MeshOp getOrCreateMesh(ModuleOp module);
};

} // namespace

MeshOp DataParallelPass::getOrCreateMesh(ModuleOp module) {
  SmallVector<MeshOp> meshes = llvm::to_vector(module.getOps<MeshOp>());
  if (meshes.size() > 1) {
    meshes[1].emitError("dist-data-parallel: the module has ")
        << meshes.size() << " meshes; expected at most one";
    return nullptr;
  }
  if (!meshes.empty()) {
    MeshOp mesh = meshes.front();
    std::optional<int64_t> size = mesh.getAxisSize(dpAxis);
    if (!size) {
      mesh.emitError("dist-data-parallel: mesh @")
          << mesh.getSymName() << " has no axis \"" << dpAxis.getValue()
          << "\"";
      return nullptr;
    }
    if (dp > 0 && *size != dp) {
      mesh.emitError("dist-data-parallel: mesh @")
          << mesh.getSymName() << " has " << dpAxis.getValue() << "=" << *size
          << " but the pass was asked for dp=" << dp.getValue();
      return nullptr;
    }
    return mesh;
  }
  if (dp < 1) {
    module.emitError("dist-data-parallel: the module has no dist.mesh; give "
                     "the size of the \"")
        << dpAxis.getValue() << "\" axis with the pass option dp=N";
    return nullptr;
  }
  if (module.lookupSymbol("mesh")) {
    module.emitError("dist-data-parallel: cannot create @mesh: the symbol is "
                     "taken");
    return nullptr;
  }
  OpBuilder b = OpBuilder::atBlockBegin(module.getBody());
  return MeshOp::create(b, module.getLoc(), "mesh",
                        b.getStrArrayAttr({dpAxis.getValue()}),
                        b.getDenseI64ArrayAttr({dp.getValue()}));
}

void DataParallelPass::runOnOperation() {
  ModuleOp module = getOperation();
  SmallVector<mlir::triax::ModelOp> models =
      llvm::to_vector(module.getOps<mlir::triax::ModelOp>());
  // Check every model before changing anything.
  for (mlir::triax::ModelOp model : models)
    if (!model.lookupSymbol<func::FuncOp>("optimizer_step")) {
      model.emitError("dist-data-parallel: model @")
          << model.getSymName()
          << " has no @optimizer_step; run triax-autodiff first";
      return signalPassFailure();
    }
  MeshOp mesh = getOrCreateMesh(module);
  if (!mesh)
    return signalPassFailure();
  OpBuilder b(&getContext());
  ArrayAttr axes = b.getStrArrayAttr({dpAxis.getValue()});
  for (mlir::triax::ModelOp model : models) {
    auto fn = model.lookupSymbol<func::FuncOp>("optimizer_step");
    SmallVector<mlir::triax::GetGradOp> reads;
    fn.walk([&](mlir::triax::GetGradOp op) { reads.push_back(op); });
    for (mlir::triax::GetGradOp read : reads) {
      b.setInsertionPointAfter(read);
      auto avg = AllReduceOp::create(b, read.getLoc(), read.getType(),
                                     ReductionKind::avg, read.getGrad(),
                                     mesh.getSymName(), axes);
      read.getGrad().replaceAllUsesExcept(avg.getResult(), avg);
    }
  }
}
