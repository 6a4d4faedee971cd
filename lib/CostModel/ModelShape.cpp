//===- ModelShape.cpp - A model's shape for the planner, from its IR ------===//
//
// dist-plan reads the model before any parallelization: what each op of
// @forward tells of it (CostOpInterface::describeModel: the blocks, the
// attention's heads, the embeddings, the linears), which parameters are
// read where, and how Megatron tensor parallelism would cut each one. Which
// parameters tp cuts is dist-tensor-parallel's own rule (tensorParallelSplits:
// the column/row linear pairs and the columns' biases, the LM head, the token
// embedding), so the planner counts what the pass will build.
//
//===----------------------------------------------------------------------===//

#include "triax/CostModel/Planner.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "triax/Dialect/Dist/IR/Dist.h"
#include "triax/Dialect/Dist/Transforms/StagePartition.h"
#include "triax/Dialect/Dist/Transforms/TensorParallelSplits.h"
#include "triax/Dialect/Triax/IR/Triax.h"

#include "llvm/ADT/StringMap.h"

using namespace triax::cost;
namespace tx = mlir::triax;

namespace {
llvm::Error failure(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

struct ParamUse {
  int64_t elems = 0;
  bool split = false;        // tensor parallelism cuts it
  bool inBlock = false;      // read inside a triax.block
  bool embedding = false;    // an embedding table (the first stage)
  bool linearWeight = false; // a linear's weight (with `embedding`: tied)
  bool expert = false;       // a stacked expert weight (triax.expert_linear)
  bool normScale = false;    // a normalization's scale
  bool used = false;
  /// Whether a gradient reads it (a weight, not a bias or a table).
  bool readByGradient() const { return linearWeight || expert || normScale; }
};
} // namespace

LayerShape triax::cost::readLayerShape(mlir::Operation *model, int64_t hidden,
                                       int64_t heads, int64_t kvHeads,
                                       int64_t ffn) {
  tx::BlockOp first;
  model->walk([&](tx::BlockOp block) {
    if (!first && !block->getParentOfType<tx::BlockOp>() &&
        !block.getName().ends_with(tx::ModelOp::kGradSuffix))
      first = block;
  });
  LayerShape layer{hidden, heads, kvHeads, ffn, 0, 0, 0};
  if (!first)
    return layer;
  llvm::SmallVector<int64_t> widths;
  first.walk([&](tx::LinearOp linear) {
    layer.biases = layer.biases || linear.getBias();
  });
  first.walk([&](tx::CostOpInterface op) {
    tx::ModelFacts told;
    op.describeModel(told);
    if (told.normStats) {
      ++layer.norms;
      layer.normStats += told.normStats;
    }
    if (!told.weight)
      return;
    // The parameter behind the weight (a cast, a gather in between): its
    // type is the whole tensor, whatever a rank holds.
    mlir::Value w = told.weight;
    for (int hop = 0;
         hop < 4 && w.getDefiningOp() && !w.getDefiningOp<tx::GetParamOp>() &&
         w.getDefiningOp()->getNumOperands() > 0;
         ++hop)
      w = w.getDefiningOp()->getOperand(0);
    auto get = w.getDefiningOp<tx::GetParamOp>();
    auto owner = get ? get->getParentOfType<tx::ModelOp>() : tx::ModelOp();
    auto param = owner ? owner.lookupSymbol<tx::ParamOp>(get.getNameAttr())
                       : tx::ParamOp();
    auto type = param ? llvm::dyn_cast<mlir::RankedTensorType>(param.getType())
                      : mlir::RankedTensorType();
    widths.push_back(type && told.weightOutputDim < type.getRank()
                         ? type.getDimSize(told.weightOutputDim)
                         : told.width);
  });
  if (layer.ffn <= 0)
    layer.ffn = widths.empty() ? hidden : *llvm::max_element(widths);
  int64_t products = llvm::count(widths, layer.ffn);
  if (layer.ffn == hidden)
    products -= 3 + (kvHeads == heads ? 2 : 0);
  layer.mlpTensors = 2 * std::max<int64_t>(products, 0);
  return layer;
}

llvm::Expected<ModelShape> triax::cost::readModelShape(mlir::ModuleOp module) {
  tx::ModelOp model;
  module.walk([&](tx::ModelOp m) {
    if (!model)
      model = m;
  });
  if (!model)
    return failure("no triax.model in the module");
  // The planner chooses the mesh: a module that already has one would give
  // it per-rank shapes.
  bool parallelized = false;
  module.walk([&](mlir::Operation *op) {
    parallelized |= llvm::isa<mlir::dist::MeshOp>(op) ||
                    op->hasAttr(mlir::dist::DistDialect::kShardingAttrName) ||
                    op->hasAttr(mlir::dist::DistDialect::kZeroAttrName);
  });
  if (parallelized)
    return failure("the model is already parallelized (it has a dist.mesh): "
                   "dist-plan reads the model before triax-parallelize");
  ModelShape shape;
  shape.name = model.getSymName().str();
  auto config =
      llvm::dyn_cast_or_null<tx::TrainConfigAttr>(model->getAttr("config"));
  if (!config)
    return failure("triax.model has no #triax.train_config");
  shape.globalBatch = config.getGlobalBatch();
  shape.microBatch = config.getMicroBatch();
  shape.seq = config.getSeq();
  shape.dtype = config.getComputeType() != config.getMasterType()
                    ? DTypeMode::Mixed
                    : DTypeMode::FP32;
  shape.activationBytes =
      int64_t(config.getComputeType().getIntOrFloatBitWidth() + 7) / 8;

  llvm::StringMap<ParamUse> params;
  for (mlir::Operation &op : model.getBody().front())
    if (auto param = llvm::dyn_cast<tx::ParamOp>(op)) {
      auto type = llvm::cast<mlir::ShapedType>(param.getType());
      params[param.getSymName()].elems = type.getNumElements();
      shape.params += type.getNumElements();
    }
  shape.flopParams = model.getFlopParameters();

  mlir::func::FuncOp forward;
  model.walk([&](mlir::func::FuncOp f) {
    if (f.getSymName() == mlir::triax::ModelOp::kForwardName)
      forward = f;
  });
  if (!forward) {
    bool trained = false;
    model.walk([&](mlir::func::FuncOp f) {
      trained |= f.getSymName() == mlir::triax::ModelOp::kForwardBackwardName;
    });
    return failure(trained ? "the model is already differentiated (it has "
                             "@forward_backward but no @forward): dist-plan "
                             "reads a model before triax-autodiff"
                           : "the model has no @forward");
  }

  // What tensor parallelism cuts (the structure: tp = 1 checks no
  // divisibility; the planner checks each tp against the shape below).
  // Where the rule refuses the model, its error (the pass's) is the
  // reason every plan with tp > 1 is rejected.
  mlir::FailureOr<llvm::MapVector<mlir::StringAttr, int64_t>> splits;
  {
    mlir::ScopedDiagnosticHandler capture(
        model.getContext(), [&](mlir::Diagnostic &diag) {
          if (shape.tensorParallelError.empty())
            shape.tensorParallelError = diag.str();
          return mlir::success();
        });
    splits = mlir::dist::tensorParallelSplits(model, /*tp=*/1);
  }
  bool splittable = mlir::succeeded(splits);
  if (splittable)
    shape.tensorParallelError.clear(); // a note or warning, not a refusal
  else
    splits = llvm::MapVector<mlir::StringAttr, int64_t>();
  for (const auto &[name, dim] : *splits)
    if (auto it = params.find(name.getValue()); it != params.end())
      it->second.split = true;

  // The parameter a value reads, if it is a triax.get_param.
  auto paramOf = [&](mlir::Value v) -> ParamUse * {
    auto get = v ? v.getDefiningOp<tx::GetParamOp>() : nullptr;
    if (!get)
      return nullptr;
    auto it = params.find(get.getName());
    return it == params.end() ? nullptr : &it->second;
  };
  auto insideBlock = [](mlir::Operation *op) {
    return op->getParentOfType<tx::BlockOp>() != nullptr;
  };
  // What each op tells of the model (CostOpInterface::describeModel), and
  // which parameters are read where; the MoE layers and their experts'
  // products (2 per layer for GELU experts, 3 for SwiGLU).
  int64_t products = 0, layersWithExperts = 0;
  forward.walk([&](mlir::Operation *op) {
    if (auto get = llvm::dyn_cast<tx::GetParamOp>(op)) {
      auto it = params.find(get.getName());
      if (it == params.end())
        return;
      it->second.used = true;
      if (insideBlock(op))
        it->second.inBlock = true;
      return;
    }
    // The experts of a MoE layer: E, the rows per expert and sequence, and
    // their weights (split over ep, not by tp).
    if (llvm::isa<tx::MoEDispatchOp>(op)) {
      ++layersWithExperts;
      return;
    }
    if (auto route = llvm::dyn_cast<tx::MoERouteOp>(op)) {
      shape.expertTopK = int64_t(route.getTopK());
      return;
    }
    if (auto experts = llvm::dyn_cast<tx::ExpertLinearOp>(op)) {
      ++products;
      auto rows = experts.getInput().getType();
      shape.experts = rows.getDimSize(0);
      if (shape.microBatch > 0)
        shape.expertRows = rows.getDimSize(1) / shape.microBatch;
      if (ParamUse *w = paramOf(experts.getWeight()))
        w->expert = true;
      // The experts' MLP width (their widest product): the model's ffn.
      shape.ffn =
          std::max<int64_t>(shape.ffn, experts.getType().getShape().back());
      return;
    }
    auto described = llvm::dyn_cast<tx::CostOpInterface>(op);
    if (!described)
      return;
    tx::ModelFacts facts;
    described.describeModel(facts);
    if (facts.layer && !op->getParentOfType<tx::BlockOp>()) {
      ++shape.layers;
      if (facts.hidden)
        shape.hidden = facts.hidden;
    }
    if (facts.heads) {
      shape.heads = facts.heads;
      shape.kvHeads = facts.kvHeads;
    }
    if (ParamUse *scale = paramOf(facts.scale))
      scale->normScale = true;
    if (ParamUse *table = paramOf(facts.table)) {
      table->embedding = true;
      if (facts.vocab)
        shape.vocab = facts.vocab;
    }
    if (facts.weight) {
      if (ParamUse *w = paramOf(facts.weight))
        w->linearWeight = true;
      // A column-split linear (its weight cut along the outputs) inside a
      // block: the widest is the MLP's (ffn). Without tensor parallelism,
      // the widest linear of a block.
      auto read = facts.weight.getDefiningOp<tx::GetParamOp>();
      auto split =
          read ? splits->find(read.getNameAttr().getAttr()) : splits->end();
      bool column =
          split != splits->end() && split->second == facts.weightOutputDim;
      if (insideBlock(op) && (column || !splittable))
        shape.ffn = std::max<int64_t>(shape.ffn, facts.width);
    }
  });
  // What dist-pipeline balances its stages by, read as it reads it.
  mlir::dist::BlockCosts costs =
      mlir::dist::weighBlocks(forward.getBody().front());
  shape.blockFlops.assign(costs.blocks.begin(), costs.blocks.end());
  shape.beforeFlops = costs.before;
  shape.afterFlops = costs.after;
  if (layersWithExperts > 0)
    shape.expertMlpTensors = 2 * (products / layersWithExperts - 1);
  // [A8]: a dense MLP keeps each ffn-wide product and its activation (GELU:
  // 2; SwiGLU's two products: 4); a MoE layer's experts are [A7]'s.
  shape.layer = readLayerShape(model, shape.hidden, shape.heads, shape.kvHeads,
                               shape.ffn);
  if (shape.layers == 0 || shape.heads == 0 || shape.hidden == 0)
    return failure("@forward of @" + shape.name +
                   " has no triax.block with a triax.attention: dist-plan "
                   "plans transformers");

  for (const auto &entry : params) {
    const ParamUse &p = entry.second;
    if (!p.used)
      continue;
    int64_t split = p.split ? p.elems : 0, repl = p.split ? 0 : p.elems;
    int64_t unread = p.readByGradient() ? 0 : 1;
    if (p.expert) {
      shape.layerExpert += p.elems;
      ++shape.layerExpertTensors;
    } else if (p.inBlock) {
      shape.layerSplit += split;
      shape.layerRepl += repl;
      shape.layerUnreadSplit += unread * split;
      shape.layerUnreadRepl += unread * repl;
      ++shape.layerTensors;
      shape.layerReplTensors += !p.split;
    } else if (p.embedding) {
      shape.firstSplit += split;
      shape.firstRepl += repl;
      shape.firstUnreadSplit += unread * split;
      shape.firstUnreadRepl += unread * repl;
      ++shape.firstTensors;
      shape.firstReplTensors += !p.split;
      // A table the head also reads as its weight: tied.
      if (p.linearWeight && p.split)
        shape.tiedSplit += split;
    } else {
      shape.lastSplit += split;
      shape.lastRepl += repl;
      shape.lastUnreadSplit += unread * split;
      shape.lastUnreadRepl += unread * repl;
      ++shape.lastTensors;
      shape.lastReplTensors += !p.split;
    }
  }
  return shape;
}
