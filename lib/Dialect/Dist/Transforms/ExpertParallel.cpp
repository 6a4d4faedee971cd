//===- ExpertParallel.cpp - The experts sharded over the ep axis ----------===//
//
// dist-expert-parallel: each member of the ep group holds E/ep of every
// MoE layer's experts; the dispatched buffer goes to the experts' members
// and comes back with one dist.all_to_all each way (see Passes.td).
//
//===----------------------------------------------------------------------===//

#include "triax/Dialect/Dist/Transforms/Passes.h"

#include "triax/Dialect/Dist/IR/Dist.h"
#include "triax/Dialect/Dist/Transforms/MeshAxis.h"
#include "triax/Dialect/Triax/IR/Triax.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/SetVector.h"

namespace mlir::dist {
#define GEN_PASS_DEF_DISTEXPERTPARALLEL
#include "triax/Dialect/Dist/Transforms/Passes.h.inc"
} // namespace mlir::dist

using namespace mlir;
using namespace mlir::dist;
namespace tx = mlir::triax;

namespace {

struct ExpertParallelPass
    : public mlir::dist::impl::DistExpertParallelBase<ExpertParallelPass> {
  using DistExpertParallelBase::DistExpertParallelBase;
  void runOnOperation() override;
};

/// The experts' computation of one MoE layer: the ops from a moe_dispatch's
/// buffer to the moe_combine that reads the experts' output, in order, and
/// the expert weights they read.
struct ExpertRegion {
  tx::MoEDispatchOp dispatch;
  SmallVector<Operation *> ops;
  tx::MoECombineOp combine;
  SmallVector<tx::GetParamOp> weights;
};

/// Every expert's rows are independent: expert_linear (its weight a
/// parameter), elementwise ops of region values and the tensor-parallel
/// collectives inside an expert (dist-tensor-parallel's copy_to_group before
/// the column products and all_reduce after the row products, over tp: the
/// same op on each row) run on any subset of the experts. Anything else
/// between the dispatch and the combine is an error.
FailureOr<ExpertRegion> findRegion(tx::MoEDispatchOp dispatch, StringRef pass) {
  ExpertRegion region;
  region.dispatch = dispatch;
  llvm::SetVector<Value> inside;
  inside.insert(dispatch.getResult());
  for (Operation *op = dispatch->getNextNode(); op; op = op->getNextNode()) {
    if (llvm::none_of(op->getOperands(),
                      [&](Value v) { return inside.contains(v); }))
      continue;
    if (auto combine = dyn_cast<tx::MoECombineOp>(op)) {
      if (combine.getInput() == dispatch.getResult() ||
          !inside.contains(combine.getInput()))
        return combine.emitOpError()
               << pass << ": its buffer must be the experts' output";
      region.combine = combine;
      break;
    }
    if (auto linear = dyn_cast<tx::ExpertLinearOp>(op)) {
      auto read = linear.getWeight().getDefiningOp<tx::GetParamOp>();
      if (!read || !read->hasOneUse())
        return linear.emitOpError()
               << pass << ": the experts' weight must be a parameter read "
               << "only here (it is split over the experts)";
      region.weights.push_back(read);
    } else if (!isa<tx::ScalarElementwiseOpInterface, CopyToGroupOp,
                    AllReduceOp>(op) ||
               llvm::any_of(op->getOperands(),
                            [&](Value v) { return !inside.contains(v); })) {
      return op->emitOpError()
             << pass << ": between a triax.moe_dispatch and its "
             << "triax.moe_combine only per-expert ops (triax.expert_linear, "
             << "elementwise ops of the experts' rows) can run on a shard of "
             << "the experts";
    }
    region.ops.push_back(op);
    inside.insert(op->getResults().begin(), op->getResults().end());
  }
  if (!region.combine)
    return dispatch.emitOpError()
           << pass << ": no triax.moe_combine reads this dispatch's experts";
  llvm::SmallPtrSet<Operation *, 8> members(region.ops.begin(),
                                            region.ops.end());
  members.insert(region.combine);
  for (Value v : inside)
    for (Operation *user : v.getUsers())
      if (!members.contains(user))
        return user->emitOpError()
               << pass << ": reads the experts' rows outside their "
               << "triax.moe_combine";
  return region;
}

/// [E, N, ...] held as this member's experts: [E/ep, ep*N, ...].
RankedTensorType shardType(RankedTensorType type, int64_t ep) {
  SmallVector<int64_t> shape(type.getShape());
  shape[0] /= ep;
  shape[1] *= ep;
  return type.clone(shape);
}

} // namespace

void ExpertParallelPass::runOnOperation() {
  ModuleOp module = getOperation();
  StringRef pass = getArgument();
  FailureOr<SmallVector<tx::ModelOp>> models = forwardModels(module, pass);
  if (failed(models))
    return signalPassFailure();
  // Check every layer before changing anything.
  SmallVector<ExpertRegion> regions;
  for (tx::ModelOp model : *models) {
    auto walk = model.getForward().walk([&](tx::MoEDispatchOp dispatch) {
      FailureOr<ExpertRegion> region = findRegion(dispatch, pass);
      if (failed(region))
        return WalkResult::interrupt();
      regions.push_back(*region);
      return WalkResult::advance();
    });
    if (walk.wasInterrupted())
      return signalPassFailure();
  }
  if (regions.empty()) {
    module.emitError()
        << pass << ": no mixture-of-experts layer (triax.moe_dispatch) to "
        << "split over " << epAxis.getValue()
        << "; for data parallelism alone use dp";
    return signalPassFailure();
  }
  MeshOp mesh = getOrCreateMeshAxis(module, pass, epAxis, ep.getValue());
  if (!mesh)
    return signalPassFailure();
  int64_t size = *mesh.getAxisSize(epAxis);
  for (ExpertRegion &region : regions) {
    int64_t experts = region.dispatch.getType().getDimSize(0);
    if (experts % size != 0) {
      region.dispatch.emitOpError()
          << pass << ": " << experts << " experts cannot be split over "
          << epAxis.getValue() << "=" << size << " members evenly";
      return signalPassFailure();
    }
  }

  MLIRContext *ctx = module.getContext();
  OpBuilder b(ctx);
  auto meshRef = FlatSymbolRefAttr::get(mesh.getSymNameAttr());
  ArrayAttr axes = b.getStrArrayAttr({epAxis.getValue()});
  for (ExpertRegion &region : regions) {
    // To the experts' members: each sends member j its experts' rows and
    // receives its own experts' rows of every member's sequences.
    Value buffer = region.dispatch.getResult();
    auto global = cast<RankedTensorType>(buffer.getType());
    b.setInsertionPointAfter(region.dispatch);
    auto toExperts =
        AllToAllOp::create(b, region.dispatch.getLoc(), shardType(global, size),
                           buffer, meshRef.getAttr(), axes,
                           /*split_dim=*/0, /*concat_dim=*/1);
    buffer.replaceUsesWithIf(toExperts.getResult(), [&](OpOperand &use) {
      return use.getOwner() != toExperts;
    });
    for (Operation *op : region.ops)
      for (Value result : op->getResults())
        result.setType(
            shardType(cast<RankedTensorType>(result.getType()), size));
    // Back to the tokens' members, in the dispatch's layout.
    Value output = region.combine.getInput();
    auto sharded = cast<RankedTensorType>(output.getType());
    b.setInsertionPoint(region.combine);
    auto toTokens = AllToAllOp::create(
        b, region.combine.getLoc(),
        sharded.clone({global.getDimSize(0), global.getDimSize(1),
                       sharded.getDimSize(2)}),
        output, meshRef.getAttr(), axes, /*split_dim=*/1, /*concat_dim=*/0);
    region.combine.getInputMutable().assign(toTokens.getResult());
    // The weights: this member's experts, dimension 0 split over ep.
    for (tx::GetParamOp read : region.weights) {
      auto model = read->getParentOfType<tx::ModelOp>();
      auto param = model.lookupSymbol<tx::ParamOp>(read.getName());
      auto type = cast<RankedTensorType>(read.getType());
      SmallVector<int64_t> shape(type.getShape());
      shape[0] /= size;
      read.getResult().setType(type.clone(shape));
      // (Tensor parallelism may have split another dimension already.)
      SmallVector<Attribute> dims(type.getRank(), b.getArrayAttr({}));
      if (auto tp = param->getAttrOfType<ShardingAttr>(
              DistDialect::kShardingAttrName))
        dims.assign(tp.getDims().begin(), tp.getDims().end());
      dims[0] = axes;
      param->setAttr(DistDialect::kShardingAttrName,
                     ShardingAttr::get(ctx, meshRef, b.getArrayAttr(dims)));
      // Its gradient sums the contributions of every member's tokens (the
      // all_to_all's gradient brings them here), each of whose losses is a
      // mean over that member's tokens: 1/ep of the sum is the gradient of
      // the loss averaged over the members.
      param->setAttr(DistDialect::kGradScaleAttrName,
                     b.getF64FloatAttr(1.0 / double(size)));
    }
  }
}
