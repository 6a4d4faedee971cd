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

#include <functional>

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

/// The switch on the pipeline coordinate dist-pipeline made of @optimizer_step
/// (its cases are the stages), or null.
static scf::IndexSwitchOp findStageSwitch(func::FuncOp step) {
  for (Operation &op : step.getBody().front())
    if (auto sw = dyn_cast<scf::IndexSwitchOp>(op))
      if (sw.getArg().getDefiningOp<AxisIndexOp>())
        return sw;
  return nullptr;
}

/// The data axes a parameter's gradient is averaged over
/// (replicatedDataAxes).
static ArrayAttr averagingAxes(mlir::triax::ModelOp model, Attribute param,
                               ArrayRef<StringRef> dataAxes) {
  auto op = model.lookupSymbol<mlir::triax::ParamOp>(
      cast<FlatSymbolRefAttr>(param).getAttr());
  return op ? replicatedDataAxes(op, dataAxes)
            : Builder(model.getContext()).getStrArrayAttr(dataAxes);
}

/// Groups parameters into buckets of about `bucketBytes`, in the order
/// they are added; a bucket holds parameters averaged over one group of
/// axes, and `emit` is called with each (never with an empty group).
class Buckets {
public:
  Buckets(double bucketBytes,
          std::function<void(ArrayRef<Attribute>, ArrayAttr)> emit)
      : bucketBytes(bucketBytes), emit(emit) {}
  /// Whether `axes` differs from the open bucket's group.
  bool changes(ArrayAttr axes) const {
    return !bucket.empty() && axes != bucketAxes;
  }
  /// Adds `param` (averaged over `axes`), after closing the open bucket
  /// when its group differs; with `last`, closes the bucket.
  void add(Attribute param, ArrayAttr axes, RankedTensorType type, bool last) {
    if (changes(axes))
      flush();
    bucket.push_back(param);
    bucketAxes = axes;
    bytes += double(type.getNumElements()) *
             double(type.getElementTypeBitWidth() / 8);
    if (last || bytes >= bucketBytes)
      flush();
  }
  void flush() {
    if (!bucket.empty() && !bucketAxes.empty())
      emit(bucket, bucketAxes);
    bucket.clear();
    bytes = 0;
  }

private:
  double bucketBytes;
  std::function<void(ArrayRef<Attribute>, ArrayAttr)> emit;
  SmallVector<Attribute> bucket;
  ArrayAttr bucketAxes;
  double bytes = 0;
};

/// Under pipeline parallelism (the model has @pipeline_step): in each stage
/// case of @optimizer_step, before the gradients are read, one
/// dist.all_reduce_grads per bucket of the stage's gradients, in the order
/// the case reads them (DeepSpeed's pipeline engine reduces after the
/// flush too). A tied parameter is averaged on each of its stages.
static LogicalResult averageAfterFlush(mlir::triax::ModelOp model, MeshOp mesh,
                                       ArrayRef<StringRef> dataAxes,
                                       double bucketBytes) {
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
    b.setInsertionPointToStart(&block);
    Buckets buckets(bucketBytes, [&](ArrayRef<Attribute> params,
                                     ArrayAttr axes) {
      AllReduceGradsOp::create(b, sw.getLoc(), ReductionKind::avg,
                               b.getArrayAttr(params), mesh.getSymName(), axes);
    });
    auto reads = llvm::to_vector(block.getOps<mlir::triax::GetGradOp>());
    for (auto [i, read] : llvm::enumerate(reads))
      buckets.add(read.getParamAttr(),
                  averagingAxes(model, read.getParamAttr(), dataAxes),
                  cast<RankedTensorType>(read.getType()),
                  i + 1 == reads.size());
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
  // The batch is split over dp and, with expert parallelism, over ep too:
  // a mesh with ep but no dp (every member of ep a data rank) is taken as
  // it is, and so is one with cp but no dp (the context-parallel sums
  // folded into the once-per-step reduction).
  MeshOp mesh = getDataMesh(module, getArgument(), dpAxis, dp.getValue());
  if (!mesh)
    return signalPassFailure();
  OpBuilder b(&getContext());
  const double bucketBytes = bucketMb * 1024.0 * 1024.0;
  for (mlir::triax::ModelOp model : models) {
    // The axes a gradient is averaged over (less those its parameter is
    // split over), in mesh order: dp, ep, and cp where its sums folded.
    SmallVector<StringRef> names = {StringRef(dpAxis), StringRef(epAxis)};
    if (foldContextSums(model, mesh, cpAxis))
      names.push_back(cpAxis);
    SmallVector<StringRef> dataAxes = mlir::dist::dataAxes(mesh, names);
    // Under pipeline parallelism @forward_backward does not run: the
    // gradients are averaged after the flush, in @optimizer_step.
    if (model.getPipelineStep()) {
      if (failed(averageAfterFlush(model, mesh, dataAxes, bucketBytes)))
        return signalPassFailure();
      continue;
    }
    auto fn = model.getForwardBackward();
    // Buckets in the order the gradients are produced (last layer first),
    // each closed when it holds bucket-mb and reduced right after its last
    // gradient is accumulated.
    SmallVector<mlir::triax::AccumulateGradOp> accs;
    fn.walk([&](mlir::triax::AccumulateGradOp op) { accs.push_back(op); });
    mlir::triax::AccumulateGradOp last;
    Buckets buckets(bucketBytes, [&](ArrayRef<Attribute> params,
                                     ArrayAttr axes) {
      b.setInsertionPointAfter(last);
      AllReduceGradsOp::create(b, last.getLoc(), ReductionKind::avg,
                               b.getArrayAttr(params), mesh.getSymName(), axes);
    });
    for (auto [i, acc] : llvm::enumerate(accs)) {
      // A bucket closed by a change of axes ends at the previous gradient.
      ArrayAttr axes = averagingAxes(model, acc.getParamAttr(), dataAxes);
      if (buckets.changes(axes))
        buckets.flush();
      last = acc;
      buckets.add(acc.getParamAttr(), axes,
                  cast<RankedTensorType>(acc.getGrad().getType()),
                  i + 1 == accs.size());
    }
  }
}
