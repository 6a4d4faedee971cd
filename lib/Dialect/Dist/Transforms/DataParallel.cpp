//===- DataParallel.cpp - Gradient averaging over the dp axis -------------===//
//
// dist-data-parallel: one `dist.all_reduce avg` per gradient where
// @optimizer_step reads the gradient buffers (see Passes.td for why there).
//
//===----------------------------------------------------------------------===//

#include "triax/Dialect/Dist/Transforms/Passes.h"

#include "triax/Dialect/Dist/IR/Dist.h"
#include "triax/Dialect/Dist/Transforms/MeshAxis.h"
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
};

} // namespace

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
  MeshOp mesh =
      getOrCreateMeshAxis(module, getArgument(), dpAxis, dp.getValue());
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
