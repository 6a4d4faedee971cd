//===- MixedPrecision.cpp - bf16 activations, fp32 master state -----------===//
//
// Mixed-precision training as Megatron-LM does it, decided on types: the
// parameters, their gradient buffers, the AdamW moments and the optimizer
// stay f32 (the master state, ops marked Triax_MasterPrecision), and every
// activation between layer ops becomes bf16, also on its way through the
// model-parallel collectives (tp's partial sums, sequence parallelism's
// gathers and scatters, context parallelism's gathered keys, the experts'
// all_to_all): 2 bytes an element over the wire, as Megatron-LM moves them
// and as the cost model counts them ([C5]). The kernels compute each element in
// f32 whatever the storage type (KernelBuilder's load/store), so row
// statistics, softmax sums and the loss are f32 accumulators, and GEMMs take
// bf16 operands with f32 accumulation.
//
// What the pass decides is the type of each value the layer ops compute
// (the "flexible" values: rank >= 1 f32 tensors defined by a triax layer op,
// a triax.block, a block or function argument, or a call of a model
// function). Values that must agree on their type are one class: a block's
// inputs and its arguments, its yield and its results, a call's operands
// and results and the callee's arguments and returns, and the operands and
// results of an op that infers its result type from its operands
// (InferTypeOpInterface: add, gelu, bias_add, ...), and the operand and
// result of a collective that passes an activation on (passesActivation:
// an all_reduce, all_gather, reduce_scatter, all_to_all, copy_to_group or
// shard_sequence of a value the layer ops compute). A class is bf16 when a
// layer op outside the class reads it (an activation), and stays f32 when
// only master-state ops read it: weight gradients are then written by
// their producer in f32 (a GEMM with bf16 inputs and an f32 result)
// instead of being rounded to bf16 and converted back, and so are
// gradients on their way to a data-parallel reduction. A pipeline's
// messages are classes too: the values sent and received with one tag
// (when every value sent is an activation), so that a stage sends bf16
// activations exactly where the next one receives them. The collectives of
// parameters (ZeRO's gathers) stay f32.
//
// Residuals (row statistics an op keeps for its gradient, such as
// attention's log-sum-exp: DifferentiableOpInterface::getNumResiduals) and
// the values they are passed on as stay f32.
//
// Where a value's type and the type its user needs differ, a triax.convert
// is inserted (one per value and type, right after the value's
// definition): parameter reads feeding layer ops (f32 -> bf16), bf16
// activations reaching an f32 collective or a gradient buffer (-> f32),
// results of f32 collectives read by layer ops (-> bf16).
//
// Assumptions: it runs after triax-autodiff and the parallel passes (it
// refuses a model without a training step, or whose parameters are not
// f32), before triax-fuse-elementwise, and once (the model's
// train_config says `compute = bf16` afterwards, which the cost model
// reads).
//
//===----------------------------------------------------------------------===//

#include "triax/Dialect/Triax/Transforms/Passes.h"

#include "triax/Dialect/Dist/IR/Dist.h"
#include "triax/Dialect/Triax/IR/Triax.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/StringMap.h"

namespace mlir::triax {
#define GEN_PASS_DEF_TRIAXMIXEDPRECISION
#include "triax/Dialect/Triax/Transforms/Passes.h.inc"
} // namespace mlir::triax

using namespace mlir;
using namespace mlir::triax;

namespace {

/// The tensors the pass may make bf16: f32 tensors of rank >= 1 (scalars,
/// the loss and its gradient, stay f32).
bool isCandidateType(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && tensor.getRank() >= 1 && tensor.getElementType().isF32();
}

/// `type` with element type `element`.
Type withElementType(Type type, Type element) {
  return cast<RankedTensorType>(type).clone(element);
}

/// Ops that keep their f32 types: the master state and the collectives.
bool keepsF32(Operation *op) {
  return op->hasTrait<MasterPrecision>() ||
         isa_and_nonnull<dist::DistDialect>(op->getDialect());
}

/// A collective that passes an activation on: its one tensor result has its
/// operand's element type, and belongs to its operand's class.
bool passesActivation(Operation *op) {
  return isa<dist::AllReduceOp, dist::AllGatherOp, dist::ReduceScatterOp,
             dist::AllToAllOp, dist::CopyToGroupOp, dist::ShardSequenceOp>(
             op) &&
         op->getNumOperands() == 1 && op->getNumResults() == 1;
}

/// A layer op: a triax op on activations (not the master state, not the
/// block structure, not a conversion someone already placed).
bool isLayerOp(Operation *op) {
  return isa_and_nonnull<TriaxDialect>(op->getDialect()) && !keepsF32(op) &&
         !isa<BlockOp, YieldOp, ConvertOp>(op);
}

/// The decision of one model: the classes of flexible values and the type
/// of each.
class PrecisionPlan {
public:
  PrecisionPlan(ModelOp model, Type compute) : model(model), compute(compute) {}

  void run();

private:
  void collect();
  void unite();
  void uniteMessages();
  void decide();
  void retype();
  void insertConverts();

  Value find(Value v) {
    Value root = v;
    while (parent[root] != root)
      root = parent[root];
    while (parent[v] != root) {
      Value next = parent[v];
      parent[v] = root;
      v = next;
    }
    return root;
  }
  void join(Value a, Value b) {
    if (!parent.count(a) || !parent.count(b))
      return;
    parent[find(a)] = find(b);
  }
  void addFlexible(Value v) {
    if (isCandidateType(v.getType()))
      parent.try_emplace(v, v);
  }
  /// The model function `call` calls, or null.
  func::FuncOp calleeOf(func::CallOp call) {
    return model.lookupSymbol<func::FuncOp>(call.getCallee());
  }
  /// Whether `use` only passes its value on within its class (an edge:
  /// block input, yield, call operand, callee return, or an operand an op
  /// infers its result's type from).
  bool isClassEdge(OpOperand &use);
  /// The type `use` needs its value to have.
  Type requiredType(OpOperand &use);

  ModelOp model;
  Type compute;
  llvm::DenseMap<Value, Value> parent;
  /// Functions of the model that are called (their signature may change);
  /// the others are entry points (their signature is the runtime's ABI).
  llvm::DenseSet<Operation *> called;
  llvm::StringMap<SmallVector<func::CallOp>> callsOf;
  llvm::DenseSet<Value> bf16Roots;
  /// Residuals (DifferentiableOpInterface::getNumResiduals: row statistics
  /// such as attention's log-sum-exp), and the roots of their classes,
  /// which stay f32 wherever they are passed on and read.
  SmallVector<Value> residuals;
  llvm::DenseSet<Value> residualRoots;
  /// Point-to-point messages whose sent values are all activations, by
  /// (mesh, axes, tag): each group's sent values and received results are
  /// one class, so that a sender and its receiver agree on the type.
  SmallVector<SmallVector<Operation *>> messages;
  llvm::DenseSet<Operation *> activationSends;
};

bool PrecisionPlan::isClassEdge(OpOperand &use) {
  Operation *user = use.getOwner();
  if (isa<BlockOp, YieldOp>(user))
    return true;
  if (passesActivation(user))
    return parent.count(user->getResult(0)) != 0;
  if (isa<dist::SendOp>(user))
    return activationSends.contains(user);
  if (auto call = dyn_cast<func::CallOp>(user))
    return calleeOf(call) != nullptr;
  if (isa<func::ReturnOp>(user))
    return called.contains(user->getParentOfType<func::FuncOp>());
  if (isLayerOp(user) && isa<InferTypeOpInterface>(user))
    for (Value result : user->getResults())
      if (isCandidateType(result.getType()) &&
          cast<ShapedType>(result.getType()).getShape() ==
              cast<ShapedType>(use.get().getType()).getShape())
        return true;
  return false;
}

void PrecisionPlan::collect() {
  model.walk([&](func::CallOp call) {
    if (func::FuncOp callee = calleeOf(call)) {
      called.insert(callee);
      callsOf[callee.getSymName()].push_back(call);
    }
  });
  for (auto fn : model.getOps<func::FuncOp>())
    if (called.contains(fn))
      for (BlockArgument arg : fn.getArguments())
        addFlexible(arg);
  model.walk([&](Operation *op) {
    if (auto block = dyn_cast<BlockOp>(op))
      for (BlockArgument arg : block.getBody().getArguments())
        addFlexible(arg);
    bool modelCall = false;
    if (auto call = dyn_cast<func::CallOp>(op))
      modelCall = calleeOf(call) != nullptr;
    if (isLayerOp(op) || isa<BlockOp>(op) || modelCall)
      for (Value result : op->getResults())
        addFlexible(result);
    if (auto differentiable = dyn_cast<DifferentiableOpInterface>(op))
      llvm::append_range(residuals, op->getResults().take_back(
                                        differentiable.getNumResiduals()));
  });
  // Then the collectives of those values (in program order: a gather of a
  // reduction's result is one too).
  model.walk<WalkOrder::PreOrder>([&](Operation *op) {
    if (passesActivation(op) && parent.count(op->getOperand(0)))
      addFlexible(op->getResult(0));
  });
  // And the pipeline's messages: a group of sends and recvs with one tag
  // whose sent values are all activations carries them in their class's
  // type (bf16 when the layer ops read them: the receiver's or the
  // sender's); any other group (one whose other side is not in the module
  // too) stays f32 on both sides.
  using MessageKey = std::tuple<Attribute, Attribute, int64_t>;
  auto keyOf = [](auto op) -> MessageKey {
    return {op.getMeshAttr(), op.getAxesAttr(),
            op.getTag() ? int64_t(*op.getTag()) : -1};
  };
  llvm::MapVector<MessageKey, SmallVector<Operation *>> byTag;
  model.walk([&](Operation *op) {
    if (auto send = dyn_cast<dist::SendOp>(op))
      byTag[keyOf(send)].push_back(op);
    else if (auto recv = dyn_cast<dist::RecvOp>(op))
      byTag[keyOf(recv)].push_back(op);
  });
  for (auto &[key, group] : byTag) {
    bool activations = llvm::all_of(group, [&](Operation *op) {
      auto send = dyn_cast<dist::SendOp>(op);
      return send ? parent.count(send.getInput()) != 0
                  : isCandidateType(op->getResult(0).getType());
    });
    bool both = llvm::any_of(group, llvm::IsaPred<dist::SendOp>) &&
                llvm::any_of(group, llvm::IsaPred<dist::RecvOp>);
    if (!activations || !both)
      continue;
    for (Operation *op : group) {
      if (isa<dist::SendOp>(op))
        activationSends.insert(op);
      else
        addFlexible(op->getResult(0));
    }
    messages.push_back(group);
  }
}

void PrecisionPlan::unite() {
  model.walk([&](Operation *op) {
    if (auto block = dyn_cast<BlockOp>(op)) {
      for (auto [input, arg] :
           llvm::zip_equal(block.getInputs(), block.getBody().getArguments()))
        join(input, arg);
      auto yield = cast<YieldOp>(block.getBody().front().getTerminator());
      for (auto [value, result] :
           llvm::zip_equal(yield.getValues(), block.getResults()))
        join(value, result);
    } else if (auto call = dyn_cast<func::CallOp>(op)) {
      func::FuncOp callee = calleeOf(call);
      if (!callee)
        return;
      for (auto [operand, arg] :
           llvm::zip_equal(call.getOperands(), callee.getArguments()))
        join(operand, arg);
      // Every call site's result i and the callee's return operand i are
      // one value as far as types go.
      func::CallOp first = callsOf[callee.getSymName()].front();
      for (auto [result, firstResult] :
           llvm::zip_equal(call.getResults(), first.getResults()))
        join(result, firstResult);
      callee.walk([&](func::ReturnOp ret) {
        if (ret->getParentOp() == callee)
          for (auto [value, result] :
               llvm::zip_equal(ret.getOperands(), call.getResults()))
            join(value, result);
      });
    } else if (passesActivation(op)) {
      join(op->getOperand(0), op->getResult(0));
    } else if (isLayerOp(op) && isa<InferTypeOpInterface>(op)) {
      for (OpOperand &use : op->getOpOperands())
        if (isClassEdge(use))
          for (Value result : op->getResults())
            if (result.getType() == use.get().getType())
              join(use.get(), result);
    }
  });
}

void PrecisionPlan::uniteMessages() {
  for (ArrayRef<Operation *> group : messages) {
    auto value = [](Operation *op) {
      return isa<dist::SendOp>(op) ? op->getOperand(0) : op->getResult(0);
    };
    for (Operation *op : group.drop_front())
      join(value(group.front()), value(op));
  }
}

void PrecisionPlan::decide() {
  for (Value v : residuals)
    if (parent.count(v))
      residualRoots.insert(find(v));
  // A class is an activation (bf16) when a layer op reads one of its values
  // other than through an edge; otherwise only the master state and the
  // collectives of it read it and it stays f32. A residual's class stays
  // f32.
  for (auto &entry : parent) {
    Value v = entry.first;
    for (OpOperand &use : v.getUses())
      if (!isClassEdge(use) && isLayerOp(use.getOwner()) &&
          !residualRoots.contains(find(v)))
        bf16Roots.insert(find(v));
  }
}

void PrecisionPlan::retype() {
  SmallVector<Value> values;
  for (auto &entry : parent)
    values.push_back(entry.first);
  for (Value v : values)
    if (bf16Roots.contains(find(v)))
      v.setType(withElementType(v.getType(), compute));
  // The called functions' signatures follow their arguments and their call
  // sites' results.
  for (auto fn : model.getOps<func::FuncOp>()) {
    if (!called.contains(fn))
      continue;
    func::CallOp call = callsOf[fn.getSymName()].front();
    fn.setFunctionType(FunctionType::get(model.getContext(),
                                         fn.front().getArgumentTypes(),
                                         call.getResultTypes()));
  }
}

Type PrecisionPlan::requiredType(OpOperand &use) {
  Operation *user = use.getOwner();
  Type type = use.get().getType();
  if (auto block = dyn_cast<BlockOp>(user))
    return block.getBody().getArgument(use.getOperandNumber()).getType();
  if (auto yield = dyn_cast<YieldOp>(user))
    return yield->getParentOp()->getResult(use.getOperandNumber()).getType();
  if (auto call = dyn_cast<func::CallOp>(user))
    if (func::FuncOp callee = calleeOf(call))
      return callee.getArgumentTypes()[use.getOperandNumber()];
  if (activationSends.contains(user))
    return type;
  if (passesActivation(user) && parent.count(user->getResult(0)))
    return withElementType(
        type,
        cast<RankedTensorType>(user->getResult(0).getType()).getElementType());
  if (isa<func::ReturnOp>(user)) {
    auto fn = user->getParentOfType<func::FuncOp>();
    if (called.contains(fn) && user->getParentOp() == fn)
      return fn.getResultTypes()[use.getOperandNumber()];
  }
  if (parent.count(use.get()) && residualRoots.contains(find(use.get())))
    return type;
  if (isLayerOp(user)) {
    // An op that infers its result from its operands has its float
    // operands in its result's element type (f32 when the result's class
    // is); every other layer op reads activations.
    if (isa<InferTypeOpInterface>(user))
      for (Value result : user->getResults())
        if (auto tensor = dyn_cast<RankedTensorType>(result.getType()))
          if (isa<FloatType>(tensor.getElementType()))
            return withElementType(type, tensor.getElementType());
    return withElementType(type, compute);
  }
  // Master state, the other collectives and everything else: f32.
  return withElementType(type, Float32Type::get(model.getContext()));
}

void PrecisionPlan::insertConverts() {
  // One conversion per value and type, right after the value's definition,
  // shared by every use that needs it.
  DenseMap<std::pair<Value, Type>, Value> converted;
  auto convert = [&](Value v, Type type) -> Value {
    auto [it, inserted] = converted.try_emplace({v, type}, Value());
    if (!inserted)
      return it->second;
    OpBuilder b(model.getContext());
    if (auto arg = dyn_cast<BlockArgument>(v))
      b.setInsertionPointToStart(arg.getOwner());
    else
      b.setInsertionPointAfter(v.getDefiningOp());
    it->second = ConvertOp::create(b, v.getLoc(), type, v);
    return it->second;
  };
  SmallVector<OpOperand *> uses;
  model.walk([&](Operation *op) {
    if (isa<ConvertOp>(op))
      return;
    for (OpOperand &use : op->getOpOperands()) {
      auto type = dyn_cast<RankedTensorType>(use.get().getType());
      if (type && type.getRank() >= 1 &&
          (type.getElementType().isF32() || type.getElementType().isBF16()))
        uses.push_back(&use);
    }
  });
  for (OpOperand *use : uses) {
    Type required = requiredType(*use);
    if (required != use->get().getType())
      use->set(convert(use->get(), required));
  }
}

void PrecisionPlan::run() {
  collect();
  unite();
  uniteMessages();
  decide();
  retype();
  insertConverts();
  TrainConfigAttr c = model.getConfig();
  model.setConfigAttr(TrainConfigAttr::get(
      model.getContext(), c.getOptimizer(), c.getLr(), c.getBeta1(),
      c.getBeta2(), c.getEps(), c.getWeightDecay(), c.getGradClip(),
      c.getGlobalBatch(), c.getMicroBatch(), c.getSeq(), compute,
      c.getMasterType()));
}

struct TriaxMixedPrecisionPass
    : public mlir::triax::impl::TriaxMixedPrecisionBase<
          TriaxMixedPrecisionPass> {
  using TriaxMixedPrecisionBase::TriaxMixedPrecisionBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (compute != "f32" && compute != "bf16") {
      module.emitError("triax-mixed-precision: unknown compute type '")
          << compute << "'; expected f32 or bf16";
      return signalPassFailure();
    }
    if (compute == "f32")
      return;
    Type bf16 = BFloat16Type::get(&getContext());
    for (ModelOp model : module.getOps<ModelOp>()) {
      if (!model.getForwardBackward() && !model.getPipelineStep()) {
        model.emitOpError("has no training step (@forward_backward): "
                          "triax-mixed-precision runs after triax-autodiff");
        return signalPassFailure();
      }
      if (!model.getConfig().getComputeType().isF32()) {
        model.emitOpError("already computes in ")
            << model.getConfig().getComputeType()
            << ": triax-mixed-precision converts an f32 model once (a model "
               "built with triax-model --dtype bf16 trains in bf16 as it is: "
               "compile it without --precision bf16)";
        return signalPassFailure();
      }
      for (ParamOp param : model.getParams())
        if (!param.getTensorType().getElementType().isF32()) {
          param.emitOpError("is ")
              << param.getType()
              << ": triax-mixed-precision converts a model of f32 "
                 "parameters (a bf16 parameter has its f32 master copy in "
                 "the runtime: compile a bf16 model without --precision "
                 "bf16)";
          return signalPassFailure();
        }
      PrecisionPlan(model, bf16).run();
    }
  }
};

} // namespace
