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
#include "mlir/Dialect/SCF/IR/SCF.h"
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

/// The switch on the pipeline coordinate dist-pipeline made of @optimizer_step
/// (its cases are the stages), or null.
static scf::IndexSwitchOp findStageSwitch(func::FuncOp step) {
  for (Operation &op : step.getBody().front())
    if (auto sw = dyn_cast<scf::IndexSwitchOp>(op))
      if (sw.getArg().getDefiningOp<AxisIndexOp>())
        return sw;
  return nullptr;
}

/// Under pipeline parallelism (the model has @pipeline_step): in each stage
/// case of @optimizer_step, before the gradients are read, one
/// dist.all_reduce_grads per bucket of the stage's gradients, in the order
/// the case reads them (DeepSpeed's pipeline engine reduces after the
/// flush too). A tied parameter is averaged on each of its stages.
static LogicalResult averageAfterFlush(mlir::triax::ModelOp model, MeshOp mesh,
                                       ArrayAttr axes, double bucketBytes) {
  auto step = model.getOptimizerStep();
  scf::IndexSwitchOp sw = step ? findStageSwitch(step) : nullptr;
  if (!sw)
    return model.emitError("dist-data-parallel: model @")
           << model.getSymName()
           << " has @pipeline_step but no per-stage @optimizer_step (a "
              "switch on dist.axis_index); run dist-pipeline first";
  OpBuilder b(model.getContext());
  for (Region &region : sw.getCaseRegions()) {
    Block &block = region.front();
    SmallVector<Attribute> bucket;
    double bytes = 0;
    b.setInsertionPointToStart(&block);
    auto flush = [&] {
      if (bucket.empty())
        return;
      AllReduceGradsOp::create(b, sw.getLoc(), ReductionKind::avg,
                               b.getArrayAttr(bucket), mesh.getSymName(), axes);
      bucket.clear();
      bytes = 0;
    };
    auto reads = llvm::to_vector(block.getOps<mlir::triax::GetGradOp>());
    for (auto [i, read] : llvm::enumerate(reads)) {
      auto type = cast<RankedTensorType>(read.getType());
      bucket.push_back(read.getParamAttr());
      bytes += double(type.getNumElements()) *
               double(type.getElementTypeBitWidth() / 8);
      if (i + 1 == reads.size() || bytes >= bucketBytes)
        flush();
    }
  }
  return success();
}

void DataParallelPass::runOnOperation() {
  ModuleOp module = getOperation();
  SmallVector<mlir::triax::ModelOp> models =
      llvm::to_vector(module.getOps<mlir::triax::ModelOp>());
  // Check every model before changing anything.
  for (mlir::triax::ModelOp model : models)
    if (!model.getForwardBackward()) {
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
    // Under pipeline parallelism @forward_backward does not run: the
    // gradients are averaged after the flush, in @optimizer_step.
    if (model.getPipelineStep()) {
      if (failed(averageAfterFlush(model, mesh, axes, bucketBytes)))
        return signalPassFailure();
      continue;
    }
    auto fn = model.getForwardBackward();
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
