//===- Zero.cpp - ZeRO stages 1, 2 and 3 over the data-parallel ranks -----===//
//
// dist-zero{stage}: shards the training state of every parameter over the
// data-parallel ranks: dp, ep for the parameters replicated on it, cp where
// its gradient sums fold in (see Passes.td for the IR before and after).
//
//===----------------------------------------------------------------------===//

#include "triax/Dialect/Dist/Transforms/Passes.h"

#include "triax/Dialect/Dist/IR/Dist.h"
#include "triax/Dialect/Dist/IR/MeshShape.h"
#include "triax/Dialect/Dist/Transforms/MeshAxis.h"
#include "triax/Dialect/Dist/Transforms/OpenBuckets.h"
#include "triax/Dialect/Triax/IR/Triax.h"
#include "triax_abi.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/SetVector.h"

namespace mlir::dist {
#define GEN_PASS_DEF_DISTZERO
#include "triax/Dialect/Dist/Transforms/Passes.h.inc"
} // namespace mlir::dist

using namespace mlir;
using namespace mlir::dist;
namespace tx = mlir::triax;

namespace {

struct ZeroPass : public mlir::dist::impl::DistZeroBase<ZeroPass> {
  using DistZeroBase::DistZeroBase;
  void runOnOperation() override;

  /// Checks that `model` can be sharded (before anything changes).
  LogicalResult check(tx::ModelOp model);
  void shard(tx::ModelOp model, MeshOp mesh);
  /// The group a parameter's state is sharded over: the data axes it is
  /// replicated on (dp, and ep for all but the experts), and its size.
  struct Group {
    ArrayAttr axes;
    int64_t size = 1;
  };
  Group groupOf(tx::ModelOp model, StringRef param);
  /// This rank's chunks of the averages of `grads` (one group), in one
  /// collective at b's insertion point: a reduce_scatter_flat for one
  /// gradient, a reduce_scatter_bucket for more.
  SmallVector<Value> reduceScatter(OpBuilder &b, Location loc, ValueRange grads,
                                   const Group &group);
  /// Stage 1: the optimizer step's gradients `grads` reduce-scattered in
  /// buckets; returns each gradient's chunk.
  DenseMap<Value, Value>
  reduceScatterStep(tx::ModelOp model, ArrayRef<Value> grads,
                    const DenseMap<Value, StringRef> &paramOfGrad);
  /// Stage >= 2: each micro-batch's gradients reduce-scattered in buckets,
  /// each right after the last of its gradients is produced, its
  /// accumulations after it.
  void reduceScatterBackward(tx::ModelOp model);
  /// Stages 1 and 2: the updated chunks gathered in buckets after the last
  /// update of their block.
  void gatherUpdated(tx::ModelOp model, func::FuncOp step);
  /// Stage 3: the parameter gathers of each `triax.block` in buckets.
  void bucketGathers(tx::ModelOp model);
  /// Whether a bucket holding `bytes` is full.
  bool full(double bytes) const {
    return bucketMb > 0 && bytes >= bucketMb * 1024.0 * 1024.0;
  }

  /// dp, ep when the mesh has it, and cp where its sums fold in (per
  /// model).
  SmallVector<StringRef> dataAxes;
  MeshOp mesh;
  FlatSymbolRefAttr meshRef;
};

} // namespace

/// The flat chunk of `type` over a group of `group`: ceil(numel / group)
/// elements.
static RankedTensorType chunkType(RankedTensorType type, int64_t group) {
  return RankedTensorType::get({trx_zero_chunk(type.getNumElements(), group)},
                               type.getElementType());
}

LogicalResult ZeroPass::check(tx::ModelOp model) {
  auto step = model.getOptimizerStep();
  auto fb = model.getForwardBackward();
  if (!step || !fb)
    return model.emitError("dist-zero: model @")
           << model.getSymName() << " has no @"
           << (step ? tx::ModelOp::kForwardBackwardName
                    : tx::ModelOp::kOptimizerStepName)
           << "; run triax-autodiff first";
  // Under pipeline parallelism only stage 1 (DeepSpeed refuses 2 and 3
  // with its pipeline engine too): the gradients are accumulated over the
  // micro-batches of the flush in whole buffers and reduced after it.
  if (stage >= 2 && model.getPipelineStep())
    return model.emitError("dist-zero: ZeRO-")
           << stage.getValue() << " with pipeline parallelism (model @"
           << model.getSymName()
           << " has @pipeline_step) is not supported; use ZeRO-1, which "
              "shards the optimizer state of each stage over dp";
  for (tx::ParamOp param : model.getParams())
    if (param->hasAttr(DistDialect::kZeroAttrName))
      return param.emitError("dist-zero: parameter @")
             << param.getSymName() << " is already sharded by ZeRO";
  // dist-data-parallel's all_reduce and ZeRO's reduce_scatter would both
  // reduce the gradients: ZeRO replaces data parallelism's reduction.
  WalkResult buckets = fb.walk([&](AllReduceGradsOp op) {
    op.emitError("dist-zero: the gradients are already all-reduced "
                 "(dist-data-parallel ran); ZeRO reduces them itself: run "
                 "dist-zero instead of dist-data-parallel");
    return WalkResult::interrupt();
  });
  if (buckets.wasInterrupted())
    return failure();
  // (Under pipeline parallelism dist-data-parallel reduces in the optimizer
  // step.)
  buckets = step.walk([&](AllReduceGradsOp op) {
    op.emitError("dist-zero: the gradients are already all-reduced "
                 "(dist-data-parallel ran); ZeRO reduces them itself: run "
                 "dist-zero instead of dist-data-parallel");
    return WalkResult::interrupt();
  });
  if (buckets.wasInterrupted())
    return failure();
  WalkResult found = step.walk([&](AllReduceOp op) {
    if (op.getInput().getDefiningOp<tx::GetGradOp>()) {
      op.emitError("dist-zero: the gradients are already all-reduced "
                   "(dist-data-parallel ran); ZeRO reduces them itself: run "
                   "dist-zero instead of dist-data-parallel");
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return failure(found.wasInterrupted());
}

/// A ZeRO-3 gather of parameters (one, or a bucket): every operand is a
/// parameter's chunk.
static bool isParamGather(Operation *op) {
  if (!isa<AllGatherFlatOp, AllGatherBucketOp>(op))
    return false;
  return llvm::all_of(op->getOperands(), [](Value chunk) {
    return chunk.getDefiningOp<tx::GetParamOp>() != nullptr;
  });
}

/// ZeRO-3 prefetch: in each sequence of `triax.block`s of one region (the
/// forward blocks, then the backward blocks), the parameter gathers of
/// block k+1 are issued right before block k instead of inside block k+1,
/// which receives the gathered parameters as extra inputs. A block's
/// gather then has a whole block of compute to hide behind (on a
/// communication stream), at the cost of two blocks' gathered parameters
/// alive at once; each gathered copy is still freed after its last use.
static void prefetchGathers(Region &region) {
  for (Block &block : region) {
    SmallVector<tx::BlockOp> blocks;
    for (Operation &op : block)
      if (auto b = dyn_cast<tx::BlockOp>(op))
        blocks.push_back(b);
    for (size_t k = 1; k < blocks.size(); ++k) {
      tx::BlockOp next = blocks[k];
      Block &body = next.getBody().front();
      SmallVector<Operation *> gathers;
      for (Operation &op : body)
        if (isParamGather(&op))
          gathers.push_back(&op);
      for (Operation *gather : gathers) {
        for (Value chunk : gather->getOperands())
          chunk.getDefiningOp()->moveBefore(blocks[k - 1]);
        gather->moveBefore(blocks[k - 1]);
        for (Value whole : gather->getResults()) {
          next.getInputsMutable().append(whole);
          Value arg = body.addArgument(whole.getType(), gather->getLoc());
          whole.replaceUsesWithIf(arg, [&](OpOperand &use) {
            return next->isProperAncestor(use.getOwner());
          });
        }
      }
    }
  }
}

ZeroPass::Group ZeroPass::groupOf(tx::ModelOp model, StringRef name) {
  Group g;
  auto param = model.lookupSymbol<tx::ParamOp>(name);
  g.axes = param ? replicatedDataAxes(param, dataAxes)
                 : Builder(model.getContext()).getStrArrayAttr(dataAxes);
  for (Attribute axis : g.axes)
    g.size *= *mesh.getAxisSize(cast<StringAttr>(axis).getValue());
  return g;
}

SmallVector<Value> ZeroPass::reduceScatter(OpBuilder &b, Location loc,
                                           ValueRange grads,
                                           const Group &group) {
  SmallVector<Type> chunks;
  for (Value grad : grads)
    chunks.push_back(
        chunkType(cast<RankedTensorType>(grad.getType()), group.size));
  if (grads.size() == 1)
    return {ReduceScatterFlatOp::create(b, loc, chunks[0], ReductionKind::avg,
                                        grads[0], meshRef.getValue(),
                                        group.axes)};
  auto bucket =
      ReduceScatterBucketOp::create(b, loc, chunks, ReductionKind::avg, grads,
                                    meshRef.getValue(), group.axes);
  return SmallVector<Value>(bucket.getResults());
}

/// The bytes of a whole tensor of `type`.
static double tensorBytes(Type type) {
  auto t = cast<RankedTensorType>(type);
  return double(t.getNumElements()) * double(t.getElementTypeBitWidth() / 8);
}

/// The op of `block` that is or holds `op`.
static Operation *inBlock(Block *block, Operation *op) {
  return block->findAncestorOpInBlock(*op);
}

DenseMap<Value, Value>
ZeroPass::reduceScatterStep(tx::ModelOp model, ArrayRef<Value> grads,
                            const DenseMap<Value, StringRef> &paramOfGrad) {
  OpBuilder b(&getContext());
  DenseMap<Value, Value> chunkOf;
  // A bucket's gradients must all be defined before any of them is used:
  // the collective goes after the last definition.
  using Buckets = OpenBuckets<Value>;
  Buckets buckets;
  auto lastDef = [](ArrayRef<Value> members) {
    Operation *last = nullptr;
    for (Value v : members)
      if (Operation *def = v.getDefiningOp();
          def && (!last || last->isBeforeInBlock(def)))
        last = def;
    return last;
  };
  auto firstUse = [](ArrayRef<Value> members) {
    Operation *first = nullptr;
    for (Value v : members)
      for (Operation *user : v.getUsers())
        if (Operation *op = inBlock(v.getParentBlock(), user);
            op && (!first || op->isBeforeInBlock(first)))
          first = op;
    return first;
  };
  auto flush = [&](Buckets::Bucket &bucket) {
    if (bucket.members.empty())
      return;
    if (Operation *def = lastDef(bucket.members))
      b.setInsertionPointAfter(def);
    else
      b.setInsertionPointToStart(bucket.block);
    Group group = groupOf(model, paramOfGrad.lookup(bucket.members.front()));
    SmallVector<Value> chunks = reduceScatter(
        b, bucket.members.front().getLoc(), bucket.members, group);
    for (auto [grad, chunk] : llvm::zip(bucket.members, chunks))
      chunkOf[grad] = chunk;
    bucket.members.clear();
    bucket.bytes = 0;
  };
  for (Value grad : grads) {
    Group g = groupOf(model, paramOfGrad.lookup(grad));
    Buckets::Bucket &bucket = buckets.of(grad.getParentBlock(), g.axes,
                                         getElementTypeOrSelf(grad.getType()));
    SmallVector<Value> with = bucket.members;
    with.push_back(grad);
    Operation *def = lastDef(with), *use = firstUse(with);
    if (def && use && !def->isBeforeInBlock(use))
      flush(bucket);
    bucket.members.push_back(grad);
    bucket.bytes += tensorBytes(grad.getType());
    if (full(bucket.bytes) || bucketMb <= 0)
      flush(bucket);
  }
  for (Buckets::Bucket &bucket : buckets.open)
    flush(bucket);
  return chunkOf;
}

void ZeroPass::reduceScatterBackward(tx::ModelOp model) {
  OpBuilder b(&getContext());
  auto fb = model.getForwardBackward();
  SmallVector<tx::AccumulateGradOp> accs;
  fb.walk([&](tx::AccumulateGradOp op) { accs.push_back(op); });
  // A bucket's collective goes right after the last of its gradients is
  // produced (and after the previous bucket of its key, which keeps two
  // accumulations of one parameter in their order), its accumulations
  // right after it, in their order.
  using Buckets = OpenBuckets<tx::AccumulateGradOp>;
  Buckets buckets;
  auto flush = [&](Buckets::Bucket &bucket) {
    if (bucket.members.empty())
      return;
    Operation *after = bucket.previous;
    SmallVector<Value> grads;
    for (tx::AccumulateGradOp acc : bucket.members) {
      grads.push_back(acc.getGrad());
      Operation *def = acc.getGrad().getDefiningOp();
      if (def && def->getBlock() == bucket.block &&
          (!after || after->isBeforeInBlock(def)))
        after = def;
    }
    if (after)
      b.setInsertionPointAfter(after);
    else
      b.setInsertionPointToStart(bucket.block);
    Group group = groupOf(model, bucket.members.front().getParam());
    SmallVector<Value> chunks =
        reduceScatter(b, bucket.members.back().getLoc(), grads, group);
    after = chunks.back().getDefiningOp();
    for (auto [acc, chunk] : llvm::zip(bucket.members, chunks)) {
      acc.getGradMutable().assign(chunk);
      acc->moveAfter(after);
      after = acc;
    }
    bucket.previous = after;
    bucket.members.clear();
    bucket.bytes = 0;
  };
  for (tx::AccumulateGradOp acc : accs) {
    Buckets::Bucket &bucket =
        buckets.of(acc->getBlock(), groupOf(model, acc.getParam()).axes,
                   getElementTypeOrSelf(acc.getGrad().getType()));
    bucket.members.push_back(acc);
    bucket.bytes += tensorBytes(acc.getGrad().getType());
    if (full(bucket.bytes) || bucketMb <= 0)
      flush(bucket);
  }
  for (Buckets::Bucket &bucket : buckets.open)
    flush(bucket);
}

void ZeroPass::gatherUpdated(tx::ModelOp model, func::FuncOp step) {
  OpBuilder b(&getContext());
  SmallVector<tx::AdamWOp> updates;
  step.walk([&](tx::AdamWOp op) { updates.push_back(op); });
  // The gathers follow the last update of their block, in the order the
  // buckets close, so that the updates stay consecutive (one fused launch
  // on the GPU: convert-triax-to-kernels{fuse-optimizer}).
  DenseMap<Block *, Operation *> insertAfter; // first: the last update
  for (tx::AdamWOp update : updates)
    insertAfter[update->getBlock()] = update;
  using Buckets = OpenBuckets<tx::AdamWOp>;
  Buckets buckets;
  auto flush = [&](Buckets::Bucket &bucket) {
    if (bucket.members.empty())
      return;
    SmallVector<Attribute> params;
    for (tx::AdamWOp update : bucket.members)
      params.push_back(update.getParamAttr());
    Operation *&after = insertAfter[bucket.block];
    b.setInsertionPointAfter(after);
    after =
        AllGatherParamsOp::create(b, bucket.members.front().getLoc(),
                                  b.getArrayAttr(params), meshRef, bucket.axes);
    bucket.members.clear();
    bucket.bytes = 0;
  };
  for (tx::AdamWOp update : updates) {
    // The parameter's element type, and its bytes on this rank: the
    // update's chunk times the group.
    auto param = model.lookupSymbol<tx::ParamOp>(update.getParam());
    auto chunk = cast<RankedTensorType>(update.getGrad().getType());
    Type element =
        param ? getElementTypeOrSelf(param.getType()) : chunk.getElementType();
    Group group = groupOf(model, update.getParam());
    Buckets::Bucket &bucket =
        buckets.of(update->getBlock(), group.axes, element);
    bucket.members.push_back(update);
    bucket.bytes += double(chunk.getNumElements() * group.size) *
                    double(element.getIntOrFloatBitWidth() / 8);
    if (full(bucket.bytes) || bucketMb <= 0)
      flush(bucket);
  }
  for (Buckets::Bucket &bucket : buckets.open)
    flush(bucket);
}

void ZeroPass::bucketGathers(tx::ModelOp model) {
  OpBuilder b(&getContext());
  SmallVector<tx::BlockOp> blocks;
  model.walk([&](tx::BlockOp block) { blocks.push_back(block); });
  // A block's parameters are used together (the unit FSDP wraps), so its
  // gathers join in buckets keyed by group and element type, each issued
  // where its first gather was; parameters read outside blocks are
  // gathered one by one where they are read.
  using Buckets = OpenBuckets<AllGatherFlatOp>;
  for (tx::BlockOp block : blocks) {
    Block &body = block.getBody().front();
    Buckets buckets;
    auto flush = [&](Buckets::Bucket &bucket) {
      if (bucket.members.size() > 1) {
        AllGatherFlatOp first = bucket.members.front();
        b.setInsertionPoint(first);
        SmallVector<Value> chunks;
        SmallVector<Type> wholes;
        for (AllGatherFlatOp gather : bucket.members) {
          gather.getInput().getDefiningOp()->moveBefore(first);
          chunks.push_back(gather.getInput());
          wholes.push_back(gather.getType());
        }
        auto merged = AllGatherBucketOp::create(b, first.getLoc(), wholes,
                                                chunks, meshRef, bucket.axes);
        for (auto [gather, whole] :
             llvm::zip(bucket.members, merged.getResults())) {
          gather.getResult().replaceAllUsesWith(whole);
          gather.erase();
        }
      }
      bucket.members.clear();
      bucket.bytes = 0;
    };
    for (Operation &op : llvm::make_early_inc_range(body)) {
      auto gather = dyn_cast<AllGatherFlatOp>(op);
      if (!gather || !isParamGather(gather))
        continue;
      Buckets::Bucket &bucket = buckets.of(
          &body, gather.getAxes(), getElementTypeOrSelf(gather.getType()));
      bucket.members.push_back(gather);
      bucket.bytes += tensorBytes(gather.getType());
      if (full(bucket.bytes) || bucketMb <= 0)
        flush(bucket);
    }
    for (Buckets::Bucket &bucket : buckets.open)
      flush(bucket);
  }
}

void ZeroPass::shard(tx::ModelOp model, MeshOp mesh) {
  OpBuilder b(&getContext());
  for (tx::ParamOp param : model.getParams())
    param->setAttr(DistDialect::kZeroAttrName,
                   ZeroAttr::get(&getContext(), meshRef,
                                 groupOf(model, param.getSymName()).axes,
                                 stage));

  // Stage 3: a parameter lives only as this rank's chunk; every read
  // gathers it (forward, and again in each backward block), and the
  // gathered copy dies after its last use.
  if (stage >= 3) {
    SmallVector<tx::GetParamOp> reads;
    model.walk([&](tx::GetParamOp op) { reads.push_back(op); });
    for (tx::GetParamOp read : reads) {
      auto whole = cast<RankedTensorType>(read.getType());
      Group g = groupOf(model, read.getName());
      read.getResult().setType(chunkType(whole, g.size));
      b.setInsertionPointAfter(read);
      auto gather = AllGatherFlatOp::create(b, read.getLoc(), whole,
                                            read.getResult(), meshRef, g.axes);
      read.getResult().replaceAllUsesExcept(gather.getResult(), gather);
    }
    bucketGathers(model);
    if (prefetch)
      for (func::FuncOp fn : model.getOps<func::FuncOp>())
        prefetchGathers(fn.getBody());
  }

  // Stage 2: each micro-batch's gradient is reduce-scattered as soon as it
  // is produced, and the gradient buffer keeps only this rank's chunk.
  if (stage >= 2)
    reduceScatterBackward(model);

  // The optimizer step works on chunks: the gradient's (reduce-scattered
  // here at stage 1, already at stage 2), the moments', and the
  // parameter's; at stages 1 and 2 the updated chunks are then gathered
  // into every rank's whole copy.
  auto step = model.getOptimizerStep();
  // Each gradient the optimizer step reads, and its parameter (its update's).
  DenseMap<Value, StringRef> paramOfGrad;
  step.walk([&](tx::AdamWOp update) {
    paramOfGrad[update.getGrad()] = update.getParam();
  });
  if (stage >= 2) {
    step.walk([&](tx::GetGradOp read) {
      auto type = cast<RankedTensorType>(read.getType());
      read.getGrad().setType(
          chunkType(type, groupOf(model, read.getParam()).size));
    });
  } else {
    // The gradients the norms and updates read: the buffers, or under
    // pipeline parallelism a tied parameter's sum of its stages' parts
    // (dist-pipeline's exchange stays whole; its sum is scattered).
    llvm::SetVector<Value> grads;
    step.walk([&](Operation *op) {
      if (auto norm = dyn_cast<tx::GlobalNormOp>(op))
        grads.insert_range(norm.getGrads());
      else if (auto update = dyn_cast<tx::AdamWOp>(op))
        grads.insert(update.getGrad());
    });
    DenseMap<Value, Value> chunkOf =
        reduceScatterStep(model, grads.getArrayRef(), paramOfGrad);
    for (Value grad : grads) {
      Value chunk = chunkOf.lookup(grad);
      // (The norm reads the chunk: it keeps its parameter.)
      paramOfGrad[chunk] = paramOfGrad.lookup(grad);
      grad.replaceUsesWithIf(chunk, [&](OpOperand &use) {
        return isa<tx::GlobalNormOp, tx::AdamWOp>(use.getOwner());
      });
    }
  }
  step.walk([&](tx::GlobalNormOp norm) {
    // Chunks are disjoint over their group: the data axes join the norm's
    // group (after the axes it has), and a gradient counted on `replicas`
    // members of an axis it is now chunked over counts once less often
    // (with ep, the gradients other than the experts': chunked over ep,
    // where they were whole copies).
    SmallVector<StringRef> group;
    if (ArrayAttr axes = norm.getAxesAttr())
      for (Attribute axis : axes)
        group.push_back(cast<StringAttr>(axis).getValue());
    SmallVector<StringRef> before = group;
    for (StringRef axis : dataAxes)
      if (!llvm::is_contained(group, axis))
        group.push_back(axis);
    SmallVector<int64_t> replicas;
    ArrayRef<int64_t> old;
    if (DenseI64ArrayAttr have = norm.getReplicasAttr())
      old = have.asArrayRef();
    for (auto [i, grad] : llvm::enumerate(norm.getGrads())) {
      int64_t copies = i < old.size() ? old[i] : 1;
      for (Attribute axis : groupOf(model, paramOfGrad.lookup(grad)).axes)
        if (llvm::is_contained(before, cast<StringAttr>(axis).getValue()))
          copies /= *mesh.getAxisSize(cast<StringAttr>(axis).getValue());
      replicas.push_back(std::max<int64_t>(copies, 1));
    }
    norm.setMeshAttr(meshRef);
    norm.setAxesAttr(b.getStrArrayAttr(group));
    if (llvm::any_of(replicas, [](int64_t r) { return r != 1; }))
      norm.setReplicasAttr(b.getDenseI64ArrayAttr(replicas));
    else
      norm.removeReplicasAttr();
  });
  if (stage <= 2)
    gatherUpdated(model, step);
}

void ZeroPass::runOnOperation() {
  ModuleOp module = getOperation();
  if (stage < 1 || stage > 3) {
    module.emitError("dist-zero: stage ")
        << stage.getValue() << " does not exist (expected 1, 2 or 3)";
    return signalPassFailure();
  }
  SmallVector<tx::ModelOp> models =
      llvm::to_vector(module.getOps<tx::ModelOp>());
  for (tx::ModelOp model : models)
    if (failed(check(model)))
      return signalPassFailure();
  mesh = getDataMesh(module, getArgument(), dpAxis, dp.getValue());
  if (!mesh)
    return signalPassFailure();
  meshRef = FlatSymbolRefAttr::get(mesh.getSymNameAttr());
  StringRef cpAxis = axisName(TRX_AXIS_CONTEXT);
  for (tx::ModelOp model : models) {
    // Expert parallelism's ranks train on their own sequences too: the
    // state of a parameter replicated on ep is sharded over dp and ep.
    // Context parallelism's gradient sums fold into the reduce-scatters:
    // the state is sharded over dp and cp (Megatron's distributed
    // optimizer shards over dp x cp too), over cp alone where dp = 1.
    SmallVector<StringRef> names = {StringRef(dpAxis),
                                    axisName(TRX_AXIS_EXPERT)};
    bool folded = foldContextSums(model, mesh, cpAxis);
    if (folded)
      names.push_back(cpAxis);
    dataAxes = mlir::dist::dataAxes(mesh, names);
    // Every parameter's group holds dp and the folded cp (neither splits a
    // parameter; ep splits the experts): they must hold two ranks.
    int64_t dpSize = mesh.getAxisSize(dpAxis).value_or(1);
    int64_t cpSize = mesh.getAxisSize(cpAxis).value_or(1);
    if (dpSize * (folded ? cpSize : 1) < 2) {
      InFlightDiagnostic diag = mesh.emitError(
          "dist-zero: ZeRO shards the training state over the \"");
      diag << dpAxis.getValue() << "\" axis, which has size " << dpSize;
      if (cpSize > 1)
        diag << ", and model @" << model.getSymName()
             << "'s gradient sums over \"" << cpAxis
             << "\" do not fold in (every parameter partial over it, each "
                "accumulation fed by its sum)";
      diag << "; it needs data parallelism (" << dpAxis.getValue()
           << " >= 2) or context parallelism (" << cpAxis << " >= 2)";
      return signalPassFailure();
    }
    shard(model, mesh);
  }
}
