//===- DataParallel.cpp - Gradient averaging over the dp axis -------------===//
//
// dist-data-parallel: the gradient buffers are averaged over dp in buckets,
// each right after its last gradient is produced (see Passes.td).
//
//===----------------------------------------------------------------------===//

#include "triax/Dialect/Dist/Transforms/Passes.h"

#include "triax/Dialect/Dist/IR/Dist.h"
#include "triax/Dialect/Dist/Transforms/MeshAxis.h"
#include "triax/Dialect/Dist/Transforms/OpenBuckets.h"
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

/// The bytes of a tensor of `type`.
static double tensorBytes(RankedTensorType type) {
  return double(type.getNumElements()) *
         double(type.getElementTypeBitWidth() / 8);
}

/// Data parallelism's buckets of parameters (OpenBuckets keyed by block,
/// averaging axes and gradient element type), each closed when it holds
/// `bucketBytes` and the rest at the end; `emit` is called with each
/// closed bucket whose group is not empty.
struct GradBuckets {
  /// A gradient's accumulation or read, and its parameter.
  struct Member {
    Operation *op;
    Attribute param;
  };
  using Buckets = OpenBuckets<Member>;
  using Emit = std::function<void(const Buckets::Bucket &)>;
  GradBuckets(double bucketBytes, Emit emit)
      : bucketBytes(bucketBytes), emit(std::move(emit)) {}
  /// Adds the gradient of `param`, accumulated or read by `op`.
  void add(Operation *op, Attribute param, ArrayAttr axes,
           RankedTensorType grad) {
    Buckets::Bucket &bucket =
        buckets.of(op->getBlock(), axes, grad.getElementType());
    bucket.members.push_back({op, param});
    bucket.bytes += tensorBytes(grad);
    if (bucket.bytes >= bucketBytes)
      flush(bucket);
  }
  /// Closes every open bucket, in the order they were opened.
  void finish() {
    for (Buckets::Bucket &bucket : buckets.open)
      flush(bucket);
  }

private:
  void flush(Buckets::Bucket &bucket) {
    if (!bucket.members.empty() && !bucket.axes.empty())
      emit(bucket);
    bucket.members.clear();
    bucket.bytes = 0;
  }
  double bucketBytes;
  Emit emit;
  Buckets buckets;
};

/// The parameters of `bucket`.
static ArrayAttr paramsOf(OpBuilder &b,
                          const GradBuckets::Buckets::Bucket &bucket) {
  SmallVector<Attribute> params;
  for (const GradBuckets::Member &member : bucket.members)
    params.push_back(member.param);
  return b.getArrayAttr(params);
}

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
    GradBuckets buckets(
        bucketBytes, [&](const GradBuckets::Buckets::Bucket &bucket) {
          AllReduceGradsOp::create(b, sw.getLoc(), ReductionKind::avg,
                                   paramsOf(b, bucket), mesh.getSymName(),
                                   bucket.axes);
        });
    for (mlir::triax::GetGradOp read :
         llvm::to_vector(block.getOps<mlir::triax::GetGradOp>()))
      buckets.add(read, read.getParamAttr(),
                  averagingAxes(model, read.getParamAttr(), dataAxes),
                  cast<RankedTensorType>(read.getType()));
    buckets.finish();
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
    // one open per group (a MoE layer's experts, averaged over dp, and the
    // rest, over dp x ep, fill two side by side), each closed when it
    // holds bucket-mb and reduced right after its last gradient is
    // accumulated.
    SmallVector<mlir::triax::AccumulateGradOp> accs;
    fn.walk([&](mlir::triax::AccumulateGradOp op) { accs.push_back(op); });
    GradBuckets buckets(
        bucketBytes, [&](const GradBuckets::Buckets::Bucket &bucket) {
          Operation *last = bucket.members.back().op;
          b.setInsertionPointAfter(last);
          AllReduceGradsOp::create(b, last->getLoc(), ReductionKind::avg,
                                   paramsOf(b, bucket), mesh.getSymName(),
                                   bucket.axes);
        });
    for (mlir::triax::AccumulateGradOp acc : accs)
      buckets.add(acc, acc.getParamAttr(),
                  averagingAxes(model, acc.getParamAttr(), dataAxes),
                  cast<RankedTensorType>(acc.getGrad().getType()));
    buckets.finish();
  }
}
