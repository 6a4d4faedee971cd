//===- DataParallel.cpp - Gradient averaging over the dp axis -------------===//
//
// dist-data-parallel: the gradient buffers are averaged over dp in buckets,
// each right after its last gradient is produced (see Passes.td).
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

/// Moves each `triax.accumulate_grad` of `fn` right after the op that
/// produces its gradient (autodiff adds them all at the end), so a bucket
/// can be reduced as soon as its last gradient is in its buffer.
static void accumulateEarly(func::FuncOp fn) {
  SmallVector<mlir::triax::AccumulateGradOp> accs;
  fn.walk([&](mlir::triax::AccumulateGradOp op) { accs.push_back(op); });
  // The last accumulation moved behind each producer (keeps their order).
  llvm::DenseMap<Operation *, Operation *> tail;
  for (mlir::triax::AccumulateGradOp acc : accs) {
    Operation *def = acc.getGrad().getDefiningOp();
    if (!def || def->getBlock() != acc->getBlock())
      continue;
    Operation *&after = tail[def];
    acc->moveAfter(after ? after : def);
    after = acc;
  }
}

void DataParallelPass::runOnOperation() {
  ModuleOp module = getOperation();
  SmallVector<mlir::triax::ModelOp> models =
      llvm::to_vector(module.getOps<mlir::triax::ModelOp>());
  // Check every model before changing anything.
  for (mlir::triax::ModelOp model : models)
    if (!model.lookupSymbol<func::FuncOp>("forward_backward")) {
      model.emitError("dist-data-parallel: model @")
          << model.getSymName()
          << " has no @forward_backward; run triax-autodiff first";
      return signalPassFailure();
    }
  if (bucketMb <= 0) {
    module.emitError("dist-data-parallel: bucket-mb must be > 0, got ")
        << bucketMb.getValue();
    return signalPassFailure();
  }
  MeshOp mesh =
      getOrCreateMeshAxis(module, getArgument(), dpAxis, dp.getValue());
  if (!mesh)
    return signalPassFailure();
  OpBuilder b(&getContext());
  ArrayAttr axes = b.getStrArrayAttr({dpAxis.getValue()});
  const double bucketBytes = bucketMb * 1024.0 * 1024.0;
  for (mlir::triax::ModelOp model : models) {
    auto fn = model.lookupSymbol<func::FuncOp>("forward_backward");
    accumulateEarly(fn);
    // Buckets in the order the gradients are produced (last layer first),
    // each closed when it holds bucket-mb and reduced right after its last
    // gradient is accumulated.
    SmallVector<mlir::triax::AccumulateGradOp> accs;
    fn.walk([&](mlir::triax::AccumulateGradOp op) { accs.push_back(op); });
    SmallVector<Attribute> bucket;
    double bytes = 0;
    auto flush = [&](mlir::triax::AccumulateGradOp last) {
      if (bucket.empty())
        return;
      b.setInsertionPointAfter(last);
      AllReduceGradsOp::create(b, last.getLoc(), ReductionKind::avg,
                               b.getArrayAttr(bucket), mesh.getSymName(), axes);
      bucket.clear();
      bytes = 0;
    };
    for (auto [i, acc] : llvm::enumerate(accs)) {
      auto type = cast<RankedTensorType>(acc.getGrad().getType());
      bucket.push_back(acc.getParamAttr());
      bytes += double(type.getNumElements()) *
               double(type.getElementTypeBitWidth() / 8);
      if (i + 1 == accs.size() || bytes >= bucketBytes)
        flush(acc);
    }
  }
}
