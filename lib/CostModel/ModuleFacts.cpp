//===- ModuleFacts.cpp - What a parallelized module says about a rank -----===//
//
// Model facts come from the IR: the per-rank shapes of the parameters and
// the collectives that triax-parallelize inserted. Each op states what it
// sends over its group (CostOpInterface::getCollectives, on the dist and
// triax ops); the walk turns that into bytes by [C1]/[C2] and names no
// collective itself.
//
//===----------------------------------------------------------------------===//

#include "triax/CostModel/CostModel.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "triax/Dialect/Dist/IR/Dist.h"
#include "triax/Dialect/Dist/IR/MeshShape.h"
#include "triax/Dialect/Dist/Transforms/StagePartition.h"
#include "triax/Dialect/Triax/IR/Triax.h"

#include "llvm/ADT/StringMap.h"

#include <functional>
#include <set>

using namespace triax::cost;
namespace tx = mlir::triax;

namespace {

llvm::Error failure(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

int64_t elemBytes(mlir::Type type) {
  auto shaped = llvm::dyn_cast<mlir::ShapedType>(type);
  mlir::Type elem = shaped ? shaped.getElementType() : type;
  return int64_t(elem.getIntOrFloatBitWidth() + 7) / 8;
}

/// [A9] The peak bytes of the tensors one call of `fn` holds at once, as the
/// CPU lowering allocates them: each op says where its results go
/// (CostOpInterface::getResultStorage: a buffer of their own by default;
/// none for parameter and gradient views and for the gradients the GEMM or
/// the scatter adds into a gradient buffer; an operand's buffer for a
/// cross-entropy gradient written over its logits and for an elementwise
/// result written over an operand nothing reads afterwards), and a buffer
/// is freed after the last use of it or of what aliases it (a triax.block's
/// region arguments alias its operands and its results the values its body
/// yields). The ops of the blocks are taken in order, as the kernel
/// conversion inlines them. Kernel scratch counts as the op states it
/// (CostOpInterface::getScratchBytes: context-parallel attention's, the
/// collectives' group-major copies); a parameter's converted copy (mixed
/// precision's bf16 weight) is made once at the start, as the kernel
/// conversion hoists it; what the elementwise fusion saves besides is not
/// modelled. `callPeak`, when given, is the peak of a call's own buffers (0:
/// not a call): while the callee runs, the caller's live buffers stay (a
/// pipeline stage's schedule calling its stage functions; their results are
/// then the caller's buffers).
int64_t activationPeakFromLiveness(
    mlir::Block &entry,
    llvm::function_ref<int64_t(mlir::Operation *)> callPeak = nullptr) {
  llvm::DenseMap<mlir::Value, mlir::Value> alias; // value -> its buffer
  llvm::DenseMap<mlir::Value, int64_t> lastUse;   // buffer -> op position
  llvm::SmallVector<mlir::Operation *> order;
  auto bufferOf = [&](mlir::Value v) {
    while (alias.count(v))
      v = alias.lookup(v);
    return v;
  };
  std::function<void(mlir::Block &)> flatten = [&](mlir::Block &block) {
    for (mlir::Operation &op : block) {
      if (auto inner = llvm::dyn_cast<mlir::triax::BlockOp>(op)) {
        mlir::Block &body = inner.getBody().front();
        for (auto [arg, input] :
             llvm::zip(body.getArguments(), inner.getInputs()))
          alias[arg] = input;
        flatten(body);
        for (auto [result, yielded] :
             llvm::zip(inner.getResults(), body.getTerminator()->getOperands()))
          alias[result] = yielded;
        continue;
      }
      order.push_back(&op);
      for (mlir::OpResult result : op.getResults()) {
        tx::ResultStorage storage =
            tx::getResultStorage(&op, result.getResultNumber());
        if (storage.kind == tx::ResultStorage::Kind::Operand)
          alias[result] = op.getOperand(storage.operand);
      }
    }
  };
  flatten(entry);
  auto bytesOf = [](mlir::Value v) -> int64_t {
    auto type = llvm::dyn_cast<mlir::RankedTensorType>(v.getType());
    return type ? type.getNumElements() * elemBytes(type) : 0;
  };
  // The kernel conversion makes one converted copy of each parameter per
  // function, at its start (mixed precision's bf16 weights, converted in
  // every block that reads them: hoistParamCopies): the first conversion
  // of a parameter to a type is that copy, alive from the start, and the
  // later ones read it.
  llvm::DenseMap<std::pair<mlir::Attribute, mlir::Type>, mlir::Value> copies;
  llvm::DenseSet<mlir::Operation *> hoisted;
  int64_t live = 0, peak = 0;
  for (mlir::Operation *op : order) {
    auto convert = llvm::dyn_cast<tx::ConvertOp>(op);
    auto read = convert ? convert.getInput().getDefiningOp<tx::GetParamOp>()
                        : tx::GetParamOp();
    if (!read)
      continue;
    auto [it, first] = copies.try_emplace(
        {read.getNameAttr().getAttr(), convert.getType()}, convert);
    if (!first) {
      alias[convert.getResult()] = it->second;
      continue;
    }
    hoisted.insert(op);
    live += bytesOf(convert.getResult());
  }
  for (auto [pos, op] : llvm::enumerate(order))
    for (mlir::Value operand : op->getOperands())
      lastUse[bufferOf(operand)] = int64_t(pos);
  std::vector<std::vector<int64_t>> frees(order.size());
  for (auto [pos, op] : llvm::enumerate(order)) {
    if (callPeak)
      peak = std::max(peak, live + callPeak(op));
    for (mlir::OpResult result : op->getResults()) {
      if (tx::getResultStorage(op, result.getResultNumber()).kind !=
              tx::ResultStorage::Kind::Buffer ||
          alias.count(result))
        continue;
      int64_t bytes = bytesOf(result);
      if (!bytes)
        continue;
      if (!hoisted.contains(op))
        live += bytes;
      auto last = lastUse.find(result);
      // A result nothing reads is freed right away.
      int64_t at = last == lastUse.end() ? int64_t(pos) : last->second;
      frees[std::max<int64_t>(at, pos)].push_back(bytes);
    }
    auto cost = llvm::dyn_cast<tx::CostOpInterface>(op);
    peak = std::max(peak, live + (cost ? cost.getScratchBytes() : 0));
    for (int64_t bytes : frees[pos])
      live -= bytes;
  }
  return peak;
}

struct ParamInfo {
  int64_t localElems = 0; // after dist.sharding
  int64_t elemBytes = 4;
  int64_t zeroGroup = 1;
  int stage = 0;
};

class Walker {
public:
  Walker(ModuleFacts &facts) : facts(facts) {}

  llvm::Error run(mlir::ModuleOp module);

private:
  int64_t axisIndex(llvm::StringRef axis) const {
    for (size_t i = 0; i < facts.axisNames.size(); ++i)
      if (facts.axisNames[i] == axis)
        return int64_t(i);
    return -1;
  }
  int64_t axisIndex(trx_axis_role role) const {
    return axisIndex(mlir::dist::axisName(role));
  }
  int64_t axisSize(llvm::StringRef axis) const {
    int64_t i = axisIndex(axis);
    return i < 0 ? 1 : facts.axisSizes[i];
  }
  int64_t axisSize(trx_axis_role role) const {
    return axisSize(mlir::dist::axisName(role));
  }
  int64_t stride(int64_t i) const {
    int64_t s = 1;
    for (size_t j = i + 1; j < facts.axisSizes.size(); ++j)
      s *= facts.axisSizes[j];
    return s;
  }
  llvm::Expected<std::vector<int64_t>> axesOf(mlir::Operation *op) const;
  void add(llvm::StringRef kind, const std::vector<int64_t> &axes,
           int64_t bytes, int64_t calls, llvm::StringRef source);
  llvm::Error collective(mlir::Operation *op, int64_t times);

  /// Visits the collectives `op` runs, `times` each: on this rank's branch
  /// of a switch on the pipeline stage, and through calls into the
  /// functions they call (the pipeline's stage functions).
  llvm::Error visitRun(mlir::Operation *op, int64_t times);

  ModuleFacts &facts;
  llvm::StringMap<ParamInfo> params;
  int64_t myStage = 0;
};

llvm::Error Walker::visitRun(mlir::Operation *op, int64_t times) {
  auto visitRegion = [&](mlir::Region &region) -> llvm::Error {
    for (mlir::Block &block : region)
      for (mlir::Operation &inner : block)
        if (llvm::Error e = visitRun(&inner, times))
          return e;
    return llvm::Error::success();
  };
  if (auto sw = llvm::dyn_cast<mlir::scf::IndexSwitchOp>(op)) {
    auto selector = sw.getArg().getDefiningOp<mlir::dist::AxisIndexOp>();
    auto cases = sw.getCasesAttr();
    auto axes = selector ? selector.getAxes() : mlir::ArrayAttr();
    if (cases && selector && axes && axes.size() == 1 &&
        llvm::cast<mlir::StringAttr>(axes[0]) ==
            mlir::dist::axisName(TRX_AXIS_PIPELINE)) {
      // Region 0 is the default, region i + 1 the case cases[i].
      const auto *it = llvm::find(cases.asArrayRef(), myStage);
      unsigned region = it == cases.asArrayRef().end()
                            ? 0
                            : unsigned(it - cases.asArrayRef().begin()) + 1;
      return visitRegion(op->getRegion(region));
    }
  }
  if (llvm::isa<mlir::func::CallOp>(op)) {
    auto callee = op->getAttrOfType<mlir::FlatSymbolRefAttr>("callee");
    auto fn =
        callee ? mlir::SymbolTable::lookupNearestSymbolFrom<mlir::func::FuncOp>(
                     op, callee)
               : mlir::func::FuncOp();
    if (fn && !fn.isExternal())
      return visitRegion(fn.getBody());
  }
  if (llvm::Error e = collective(op, times))
    return e;
  for (mlir::Region &region : op->getRegions())
    if (llvm::Error e = visitRegion(region))
      return e;
  return llvm::Error::success();
}

llvm::Expected<std::vector<int64_t>> Walker::axesOf(mlir::Operation *op) const {
  auto axes = op->getAttrOfType<mlir::ArrayAttr>("axes");
  if (!axes)
    return failure(op->getName().getStringRef() + ": no 'axes' attribute");
  std::vector<int64_t> out;
  for (mlir::Attribute a : axes) {
    auto s = llvm::dyn_cast<mlir::StringAttr>(a);
    int64_t i = s ? axisIndex(s.getValue()) : -1;
    if (i < 0)
      return failure(op->getName().getStringRef() + ": axis not in the mesh");
    out.push_back(i);
  }
  std::sort(out.begin(), out.end());
  return out;
}

void Walker::add(llvm::StringRef kind, const std::vector<int64_t> &axes,
                 int64_t bytes, int64_t calls, llvm::StringRef source) {
  CollectiveKey key{kind.str(), ""};
  int64_t g = 1, span = 1;
  for (int64_t i : axes) {
    key.axes += (key.axes.empty() ? "" : ",") + facts.axisNames[i];
    g *= facts.axisSizes[i];
    span += (facts.axisSizes[i] - 1) * stride(i);
  }
  CollectiveTotal &t = facts.collectives[key];
  t.bytes += bytes;
  t.calls += calls;
  t.groupSize = g;
  t.spanRanks = span;
  if (llvm::find(t.sources, source.str()) == t.sources.end())
    t.sources.push_back(source.str());
}

llvm::Error Walker::collective(mlir::Operation *op, int64_t times) {
  llvm::StringRef name = op->getName().getStringRef();
  auto group =
      [&]() -> llvm::Expected<
                std::pair<std::vector<int64_t>, std::pair<int64_t, int64_t>>> {
    auto axes = axesOf(op);
    if (!axes)
      return axes.takeError();
    // Group size and this rank's position in it (row-major over the
    // group's axes in mesh order, as the rank's coordinates).
    int64_t g = 1, pos = 0;
    for (int64_t i : *axes) {
      int64_t coord = (facts.rank / stride(i)) % facts.axisSizes[i];
      pos = pos * facts.axisSizes[i] + coord;
      g *= facts.axisSizes[i];
    }
    return std::make_pair(*axes, std::make_pair(g, pos));
  };
  // What the op says it sends (CostOpInterface::getCollectives). An op
  // of a group without the interface is not modelled.
  auto cost = llvm::dyn_cast<tx::CostOpInterface>(op);
  if (!cost) {
    if (op->hasAttr("mesh") &&
        llvm::find(facts.unmodelled, name.str()) == facts.unmodelled.end())
      facts.unmodelled.push_back(name.str());
    return llvm::Error::success();
  }
  llvm::SmallVector<tx::Collective> list;
  cost.getCollectives(list);
  if (list.empty())
    return llvm::Error::success();
  auto gr = group();
  if (!gr)
    return gr.takeError();
  auto [axes, gp] = *gr;
  auto [g, pos] = gp;
  for (const tx::Collective &c : list) {
    int64_t elements = c.elements, bytesPerElem = c.elemBytes;
    if (!c.params.empty()) {
      elements = 0;
      for (mlir::SymbolRefAttr ref : c.params) {
        auto it = params.find(ref.getLeafReference().getValue());
        if (it == params.end())
          return failure(name + ": unknown parameter @" +
                         ref.getLeafReference().getValue());
        elements += c.zeroChunk ? zeroChunk(it->second.localElems, g)
                                : it->second.localElems;
        bytesPerElem = it->second.elemBytes;
      }
    }
    int64_t calls = c.oncePerStep ? 1 : times;
    using Kind = tx::Collective::Kind;
    switch (c.kind) {
    case Kind::AllReduce:
      add("all_reduce", axes,
          calls * allReduceBytes(elements, bytesPerElem, g, pos), calls, name);
      break;
    case Kind::AllGather:
      add("all_gather", axes, calls * allGatherBytes(elements, bytesPerElem, g),
          calls, name);
      break;
    case Kind::AllToAll:
      add("all_to_all", axes, calls * allToAllBytes(elements, bytesPerElem, g),
          calls, name);
      break;
    case Kind::ReduceScatter:
      add("reduce_scatter", axes,
          calls * reduceScatterBytes(elements, bytesPerElem, g), calls, name);
      break;
    case Kind::Send:
    case Kind::Recv:
      add(c.kind == Kind::Send ? "send" : "recv", axes,
          calls * elements * bytesPerElem, calls, name);
      break;
    }
  }
  return llvm::Error::success();
}

llvm::Error Walker::run(mlir::ModuleOp module) {
  // The mesh (none: one rank).
  module.walk([&](mlir::dist::MeshOp mesh) {
    if (!facts.axisNames.empty())
      return;
    for (mlir::Attribute a : mesh.getAxisNames())
      facts.axisNames.push_back(llvm::cast<mlir::StringAttr>(a).str());
    for (int64_t s : mesh.getAxisSizes())
      facts.axisSizes.push_back(s);
  });
  int64_t ranks = 1;
  for (int64_t s : facts.axisSizes)
    ranks *= s;
  if (facts.rank < 0 || facts.rank >= ranks)
    return failure("rank " + llvm::Twine(facts.rank) + " is not in the mesh (" +
                   llvm::Twine(ranks) + " ranks)");
  for (const mlir::dist::AxisRoleInfo &row : mlir::dist::axisRoles())
    if (int64_t *size = axisField(facts.plan, row.role))
      *size = axisSize(row.role);

  mlir::triax::ModelOp model;
  module.walk([&](mlir::triax::ModelOp m) {
    if (!model)
      model = m;
  });
  if (!model)
    return failure("no triax.model in the module");
  auto config = llvm::dyn_cast_or_null<mlir::triax::TrainConfigAttr>(
      model->getAttr("config"));
  if (!config)
    return failure("triax.model has no #triax.train_config");
  facts.globalBatch = config.getGlobalBatch();
  facts.microBatch = config.getMicroBatch();
  facts.flopParams = model.getFlopParameters();
  facts.seq = config.getSeq();
  facts.activationBytes =
      int64_t(config.getComputeType().getIntOrFloatBitWidth() + 7) / 8;
  // The training state the program holds: triax-mixed-precision keeps the
  // parameters and their gradient buffers in f32 (they are the master copy;
  // the bf16 copies its conversions make are activations, counted by [A9]),
  // so f32 parameters mean 4 + 4 + 8 bytes whatever the compute type.
  bool f32Params = llvm::all_of(model.getParams(), [](auto param) {
    return param.getTensorType().getElementType().isF32();
  });
  facts.plan.dtype =
      config.getComputeType() != config.getMasterType() && !f32Params
          ? DTypeMode::Mixed
          : DTypeMode::FP32;
  // Sequences per rank and micro-batch call: expert-parallel ranks train on
  // their own sequences like data-parallel ones.
  int64_t perRank = facts.microBatch * facts.plan.dp * facts.plan.ep;
  facts.plan.microBatches =
      perRank > 0 ? std::max<int64_t>(1, facts.globalBatch / perRank) : 1;
  // The interleaved schedule: its stage functions carry their chunk; a
  // zero-bubble schedule has weight passes (@stage<s>_weight).
  model.walk([&](mlir::func::FuncOp fn) {
    if (auto chunk = fn->getAttrOfType<mlir::IntegerAttr>(
            mlir::dist::DistDialect::kChunkAttrName)) {
      facts.plan.schedule = Schedule::Interleaved;
      facts.plan.virtualStages =
          std::max(facts.plan.virtualStages, chunk.getInt() + 1);
    }
    if (fn.getSymName().starts_with("stage") &&
        fn.getSymName().ends_with("_weight"))
      facts.plan.schedule = Schedule::ZeroBubbleH1;
  });

  // Pipeline parallelism: this rank's stage, which holds only the
  // parameters of its stage (dist.stage, or dist.tied_stages).
  int64_t ppAxis = axisIndex(TRX_AXIS_PIPELINE);
  myStage =
      ppAxis < 0 ? 0 : (facts.rank / stride(ppAxis)) % facts.axisSizes[ppAxis];
  facts.stage = myStage;

  // Parameters: local shape, ZeRO chunks, state per rank ([M1]-[M4]).
  for (mlir::Operation &op : model.getBody().front()) {
    if (!llvm::isa<tx::ParamOp>(op))
      continue;
    auto sym = op.getAttrOfType<mlir::StringAttr>("sym_name");
    auto typeAttr = op.getAttrOfType<mlir::TypeAttr>("type");
    if (!sym || !typeAttr)
      return failure("triax.param without a name or type");
    auto type = llvm::cast<mlir::RankedTensorType>(typeAttr.getValue());
    ParamInfo info;
    info.elemBytes = elemBytes(type);
    facts.numParams += type.getNumElements();
    if (auto tied = op.getAttrOfType<mlir::DenseI64ArrayAttr>(
            mlir::dist::DistDialect::kTiedStagesAttrName)) {
      if (!llvm::is_contained(tied.asArrayRef(), myStage))
        continue;
    } else if (auto stage = op.getAttrOfType<mlir::IntegerAttr>(
                   mlir::dist::DistDialect::kStageAttrName)) {
      if (stage.getInt() != myStage)
        continue;
    }
    info.localElems = type.getNumElements();
    if (auto sharding = op.getAttrOfType<mlir::dist::ShardingAttr>(
            mlir::dist::DistDialect::kShardingAttrName)) {
      info.localElems = 1;
      for (int64_t n :
           sharding.getLocalShape(type.getShape(), [&](llvm::StringRef axis) {
             return axisSize(axis);
           }))
        info.localElems *= n;
    }
    if (auto zero = op.getAttrOfType<mlir::dist::ZeroAttr>(
            mlir::dist::DistDialect::kZeroAttrName)) {
      info.stage = int(zero.getStage());
      for (mlir::Attribute a : zero.getAxes())
        info.zeroGroup *= axisSize(llvm::cast<mlir::StringAttr>(a).getValue());
      facts.plan.zeroStage = std::max(facts.plan.zeroStage, info.stage);
    }
    StateBytes s = stateBytesPerRank({info.localElems}, info.zeroGroup,
                                     info.stage, facts.plan.dtype);
    facts.state.params += s.params;
    facts.state.grads += s.grads;
    facts.state.optim += s.optim;
    facts.localParamElems.push_back(info.localElems);
    params[sym.getValue()] = info;
  }

  // The shape of the transformer: blocks, hidden size, heads.
  auto fb = module.lookupSymbol<mlir::func::FuncOp>(
      mlir::triax::ModelOp::kForwardBackwardName);
  if (!fb)
    model.walk([&](mlir::func::FuncOp f) {
      if (f.getSymName() == mlir::triax::ModelOp::kForwardBackwardName)
        fb = f;
    });
  mlir::func::FuncOp opt;
  model.walk([&](mlir::func::FuncOp f) {
    if (f.getSymName() == mlir::triax::ModelOp::kOptimizerStepName)
      opt = f;
  });
  if (!fb)
    return failure("no @forward_backward: run triax-parallelize (or "
                   "triax-autodiff) first, e.g. triaxc --emit=mlir");
  int64_t kvHeads = 0;
  std::set<std::string> blocks;
  fb.walk([&](mlir::Operation *op) {
    // What the op tells of the model (CostOpInterface::describeModel).
    tx::ModelFacts told;
    if (auto described = llvm::dyn_cast<tx::CostOpInterface>(op))
      described.describeModel(told);
    if (told.layer && told.hidden) {
      // The backward's blocks are named "<block>.grad".
      if (!told.layerName.ends_with(mlir::triax::ModelOp::kGradSuffix))
        blocks.insert(told.layerName.str());
      facts.hidden = told.hidden;
    }
    // Each rank's attention has its tp share of the heads.
    if (told.heads && !facts.heads) {
      facts.heads = told.heads * facts.plan.tp;
      kvHeads = told.kvHeads * facts.plan.tp;
    }
    if (told.sequenceParallel)
      facts.plan.sequenceParallel = true;
    // triax-recompute marks the backward blocks that recompute.
    if (auto mode = op->getAttrOfType<mlir::StringAttr>(
            tx::TriaxDialect::kRecomputeAttrName))
      facts.plan.recompute =
          mode.getValue() == "full" ? Recompute::Full : Recompute::Selective;
  });
  facts.layers = int64_t(blocks.size());
  // [A8]'s layer, whole-model sizes.
  facts.layer = readLayerShape(model, facts.hidden, facts.heads, kvHeads);
  facts.activationPeak = activationPeakFromLiveness(fb.getBody().front());
  // N_L of [F2]: the parameters named after a block ("h.0.attn.q.weight").
  for (mlir::Operation &op : model.getBody().front())
    if (auto sym = op.getAttrOfType<mlir::StringAttr>("sym_name");
        sym && llvm::isa<tx::ParamOp>(op))
      for (const std::string &block : blocks)
        if (sym.getValue().starts_with(block + "."))
          facts.layerParams +=
              double(llvm::cast<mlir::RankedTensorType>(
                         op.getAttrOfType<mlir::TypeAttr>("type").getValue())
                         .getNumElements());

  // Collectives: per micro-batch in @forward_backward, once in
  // @optimizer_step.
  llvm::Error err = llvm::Error::success();
  auto visit = [&](mlir::func::FuncOp f, int64_t times) {
    f.walk([&](mlir::Operation *op) {
      if (err)
        return mlir::WalkResult::interrupt();
      if (llvm::Error e = collective(op, times)) {
        err = std::move(e);
        return mlir::WalkResult::interrupt();
      }
      return mlir::WalkResult::advance();
    });
  };
  // A pipeline runs @pipeline_step once per step: this rank's stage's
  // schedule, its calls and sends; and its stage's optimizer step.
  mlir::func::FuncOp step;
  model.walk([&](mlir::func::FuncOp f) {
    if (f.getSymName() == mlir::triax::ModelOp::kPipelineStepName)
      step = f;
  });
  if (step) {
    // [A9] over this stage's schedule: the micro-batches' saved activations
    // its calls return stay alive until their backward, and each call's
    // own peak comes on top of what the schedule holds then.
    llvm::DenseMap<mlir::Operation *, int64_t> calleePeaks;
    auto callPeak = [&](mlir::Operation *op) -> int64_t {
      auto callee = op->getAttrOfType<mlir::FlatSymbolRefAttr>("callee");
      if (!llvm::isa<mlir::func::CallOp>(op) || !callee)
        return 0;
      auto fn = mlir::SymbolTable::lookupNearestSymbolFrom<mlir::func::FuncOp>(
          op, callee);
      if (!fn || fn.isExternal())
        return 0;
      auto [it, fresh] = calleePeaks.try_emplace(fn, 0);
      if (fresh)
        it->second = activationPeakFromLiveness(fn.getBody().front());
      return it->second;
    };
    step.walk([&](mlir::Operation *op) {
      auto cases = op->getAttrOfType<mlir::DenseI64ArrayAttr>("cases");
      if (!llvm::isa<mlir::scf::IndexSwitchOp>(op) || !cases)
        return;
      const auto *it = llvm::find(cases.asArrayRef(), myStage);
      if (it == cases.asArrayRef().end())
        return;
      unsigned region = unsigned(it - cases.asArrayRef().begin()) + 1;
      facts.activationPeak =
          activationPeakFromLiveness(op->getRegion(region).front(), callPeak);
    });
    if (llvm::Error e = visitRun(step, 1))
      return e;
    if (opt)
      return visitRun(opt, 1);
    return llvm::Error::success();
  }
  visit(fb, facts.plan.microBatches);
  if (err)
    return err;
  if (opt)
    visit(opt, 1);
  return err;
}

} // namespace

llvm::Expected<ModuleFacts> triax::cost::analyzeModule(mlir::ModuleOp module,
                                                       int64_t rank) {
  ModuleFacts facts;
  facts.rank = rank;
  Walker walker(facts);
  if (llvm::Error e = walker.run(module))
    return e;
  // [P3] the stages' forward FLOPs, as dist-pipeline cut them.
  const int64_t pp = facts.plan.pp;
  if (pp > 1) {
    std::vector<double> flops(pp, 0);
    module.walk([&](mlir::func::FuncOp fn) {
      llvm::StringRef name = fn.getSymName();
      int64_t k;
      if (name.consume_front("stage") && name.consume_back("_forward") &&
          !name.getAsInteger(10, k)) {
        flops[k % pp] += mlir::dist::forwardFlops(fn);
        if (k % pp == facts.stage)
          fn.walk([&](tx::BlockOp) { ++facts.stageLayers; });
      }
    });
    facts.stageLoad = stageLoads(flops);
  }
  return facts;
}
