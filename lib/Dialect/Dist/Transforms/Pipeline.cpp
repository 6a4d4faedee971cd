//===- Pipeline.cpp - Pipeline stages, schedules and their checker --------===//
//
// dist-pipeline: cuts @forward_backward's blocks into pp stages, outlines
// each stage's forward and backward for one micro-batch, and builds
// @pipeline_step, the unrolled GPipe or 1F1B schedule of every stage.
// dist-verify-schedule: proves that a schedule's sends and recvs match and
// cannot deadlock. See Passes.td.
//
//===----------------------------------------------------------------------===//

#include "triax/Dialect/Dist/Transforms/Passes.h"

#include "triax/Dialect/Dist/IR/Dist.h"
#include "triax/Dialect/Dist/IR/MeshShape.h"
#include "triax/Dialect/Dist/Transforms/MeshAxis.h"
#include "triax/Dialect/Dist/Transforms/PipelineSchedule.h"
#include "triax/Dialect/Dist/Transforms/StagePartition.h"
#include "triax/Dialect/Triax/IR/Triax.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"

#include <limits>
#include <map>

namespace mlir::dist {
#define GEN_PASS_DEF_DISTPIPELINE
#define GEN_PASS_DEF_DISTVERIFYSCHEDULE
#include "triax/Dialect/Dist/Transforms/Passes.h.inc"
} // namespace mlir::dist

using namespace mlir;
using namespace mlir::dist;
namespace tx = mlir::triax;

//===----------------------------------------------------------------------===//
// The schedule checker
//===----------------------------------------------------------------------===//

namespace {
/// One send or recv of a device's program.
struct CommEvent {
  Operation *op;
  bool isSend;
  int64_t peer;
  std::optional<int64_t> tag;
  Type type;
};
} // namespace

/// "a send to stage 1 with tag 4".
static std::string describe(const CommEvent &e) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << (e.isSend ? "a send to stage " : "a recv from stage ") << e.peer;
  if (e.tag)
    os << " with tag " << *e.tag;
  else
    os << " without tag";
  return s;
}

/// The most stages the checker simulates: it keeps the program of every
/// stage, and a pipeline has no more stages than blocks (a mesh axis of
/// 2^63 - 1 stages made it allocate for each).
constexpr int64_t kMaxCheckedStages = 4096;

/// Checks one switch on `dist.axis_index`: see DistVerifySchedule.
static LogicalResult verifySwitch(scf::IndexSwitchOp sw, AxisIndexOp index) {
  MeshOp mesh;
  for (Operation *p = sw->getParentOp(); p && !mesh; p = p->getParentOp())
    if (p->hasTrait<OpTrait::SymbolTable>())
      mesh = dyn_cast_or_null<MeshOp>(
          SymbolTable::lookupSymbolIn(p, index.getMeshAttr()));
  if (!mesh)
    return index.emitError("dist-verify-schedule: unknown mesh ")
           << index.getMeshAttr();
  StringRef axis = cast<StringAttr>(index.getAxes()[0]).getValue();
  std::optional<int64_t> size = mesh.getAxisSize(axis);
  if (!size)
    return index.emitError("dist-verify-schedule: mesh @")
           << mesh.getSymName() << " has no axis \"" << axis << "\"";
  if (*size > kMaxCheckedStages)
    return index.emitError("dist-verify-schedule: axis \"")
           << axis << "\" of mesh @" << mesh.getSymName() << " has " << *size
           << " stages; the checker simulates at most " << kMaxCheckedStages;
  ArrayRef<int64_t> cases = sw.getCases();
  std::vector<std::vector<CommEvent>> programs(*size);
  for (int64_t k = 0; k < *size; ++k) {
    Region *region = &sw.getDefaultRegion();
    for (auto [i, value] : llvm::enumerate(cases))
      if (value == k)
        region = &sw.getCaseRegions()[i];
    std::vector<CommEvent> &events = programs[k];
    WalkResult walk = region->walk([&](Operation *op) {
      CommEvent e;
      ArrayAttr axes;
      FlatSymbolRefAttr meshRef;
      if (auto send = dyn_cast<SendOp>(op)) {
        e = {op, true, int64_t(send.getTo()), send.getTag(),
             send.getInput().getType()};
        axes = send.getAxes();
        meshRef = send.getMeshAttr();
      } else if (auto recv = dyn_cast<RecvOp>(op)) {
        e = {op, false, int64_t(recv.getFrom()), recv.getTag(), recv.getType()};
        axes = recv.getAxes();
        meshRef = recv.getMeshAttr();
      } else {
        return WalkResult::advance();
      }
      if (meshRef != index.getMeshAttr() || axes != index.getAxes())
        return WalkResult::advance();
      if (op->getParentRegion() != region) {
        op->emitError("dist-verify-schedule: a send or recv nested in "
                      "control flow inside a stage's case cannot be checked");
        return WalkResult::interrupt();
      }
      if (e.peer < 0 || e.peer >= *size || e.peer == k) {
        op->emitError("dist-verify-schedule: stage ")
            << k << " exchanges with stage " << e.peer << ", not a peer on \""
            << axis << "\" of size " << *size;
        return WalkResult::interrupt();
      }
      events.push_back(e);
      return WalkResult::advance();
    });
    if (walk.wasInterrupted())
      return failure();
  }

  // Blocking (rendezvous) execution: a send and the recv it names complete
  // together; run while some pair can.
  std::vector<size_t> pc(*size, 0);
  auto head = [&](int64_t k) -> const CommEvent * {
    return pc[k] < programs[k].size() ? &programs[k][pc[k]] : nullptr;
  };
  bool progress = true;
  while (progress) {
    progress = false;
    for (int64_t a = 0; a < *size; ++a) {
      const CommEvent *send = head(a);
      if (!send || !send->isSend)
        continue;
      const CommEvent *recv = head(send->peer);
      if (!recv || recv->isSend || recv->peer != a || recv->tag != send->tag)
        continue;
      if (recv->type != send->type) {
        InFlightDiagnostic diag =
            send->op->emitError("dist-verify-schedule: stage ")
            << a << " sends " << send->type << " to stage " << send->peer
            << " but the matching recv expects " << recv->type;
        diag.attachNote(recv->op->getLoc())
            << "the recv of stage " << send->peer;
        return failure();
      }
      ++pc[a];
      ++pc[send->peer];
      progress = true;
    }
  }
  for (int64_t a = 0; a < *size; ++a) {
    const CommEvent *blocked = head(a);
    if (!blocked)
      continue;
    const char *what = blocked->isSend ? "send" : "recv";
    const CommEvent *other = head(blocked->peer);
    if (!other) {
      blocked->op->emitError("dist-verify-schedule: stage ")
          << a << " blocks in this " << what << " ("
          << describe(*blocked).substr(2) << "), but stage " << blocked->peer
          << " has finished: no matching "
          << (blocked->isSend ? "recv" : "send");
      return failure();
    }
    InFlightDiagnostic diag =
        blocked->op->emitError("dist-verify-schedule: deadlock: stage ")
        << a << " blocks in this " << what << " ("
        << describe(*blocked).substr(2) << "), while stage " << blocked->peer
        << " waits in " << describe(*other);
    diag.attachNote(other->op->getLoc())
        << "stage " << blocked->peer << " waits in this "
        << (other->isSend ? "send" : "recv");
    return failure();
  }
  return success();
}

static LogicalResult verifySchedules(Operation *root) {
  bool ok = true;
  root->walk([&](scf::IndexSwitchOp sw) {
    auto index = sw.getArg().getDefiningOp<AxisIndexOp>();
    if (index && index.getAxes().size() == 1 && failed(verifySwitch(sw, index)))
      ok = false;
  });
  return success(ok);
}

namespace {
struct VerifySchedulePass
    : public mlir::dist::impl::DistVerifyScheduleBase<VerifySchedulePass> {
  void runOnOperation() override {
    if (failed(verifySchedules(getOperation())))
      signalPassFailure();
  }
};
} // namespace

//===----------------------------------------------------------------------===//
// dist-pipeline
//===----------------------------------------------------------------------===//

namespace {

enum Dir { Fwd = 0, Bwd = 1 };

/// Where an op of @forward_backward runs: its stage (-1: a parameter read
/// or constant, cloned into every function that uses it) and direction.
struct Place {
  int64_t stage = -1;
  Dir dir = Fwd;
};

/// What one stage exchanges, in the order of first use.
struct StageIO {
  SmallVector<Operation *> ops[2];
  llvm::SetVector<Value> args[2]; // @forward_backward arguments read
  llvm::SetVector<Value> actIn;   // from stage s-1's forward
  llvm::SetVector<Value> actInUse[2];
  llvm::SetVector<Value> saved;  // own forward -> own backward
  llvm::SetVector<Value> gradIn; // from stage s+1's backward
  func::FuncOp fn[2];
  SmallVector<Value> fnInputs[2];
  SmallVector<Value> fnOutputs[2];
  // A schedule with a weight pass (zb-h1): fn[Bwd] computes the input
  // gradient and returns, after it, what `weightFn` reads of it; weightFn
  // takes fn[Bwd]'s arguments `weightArgs` and those values.
  func::FuncOp weightFn;
  SmallVector<unsigned> weightArgs;
  unsigned numCarried = 0;
};

struct PipelinePass : public mlir::dist::impl::DistPipelineBase<PipelinePass> {
  using DistPipelineBase::DistPipelineBase;
  void runOnOperation() override;
  LogicalResult pipeline(tx::ModelOp model, MeshOp mesh, int64_t ranks,
                         int64_t m);
  FailureOr<int64_t> resolveMicrobatches(tx::ModelOp model, MeshOp mesh);
};

} // namespace

static bool isLeaf(Operation *op) {
  return op->getNumOperands() == 0 && op->getNumRegions() == 0 &&
         op->getNumResults() == 1 && isMemoryEffectFree(op);
}

/// Outlines `ops` into `name(inputs) -> outputs` at the end of `model`.
static func::FuncOp outline(OpBuilder &b, tx::ModelOp model, StringRef name,
                            ArrayRef<Value> inputs, ArrayRef<Operation *> ops,
                            ArrayRef<Value> outputs, Location loc) {
  b.setInsertionPointToEnd(&model.getBody().front());
  auto type = b.getFunctionType(ValueRange(inputs).getTypes(),
                                ValueRange(outputs).getTypes());
  auto fn = func::FuncOp::create(b, loc, name, type);
  Block *entry = fn.addEntryBlock();
  IRMapping map;
  for (auto [value, arg] : llvm::zip(inputs, entry->getArguments()))
    map.map(value, arg);
  b.setInsertionPointToEnd(entry);
  for (Operation *op : ops) {
    for (Value operand : op->getOperands())
      if (!map.contains(operand))
        if (Operation *def = operand.getDefiningOp(); def && isLeaf(def))
          b.clone(*def, map);
    b.clone(*op, map);
  }
  SmallVector<Value> results;
  for (Value v : outputs)
    results.push_back(map.lookup(v));
  func::ReturnOp::create(b, loc, results);
  return fn;
}

//===----------------------------------------------------------------------===//
// The weight pass
//===----------------------------------------------------------------------===//

/// Splits stage backward `backward` (outlined, its blocks inlined here) in
/// two, for the zero-bubble schedules: it keeps what its results (the
/// input gradient sent to the previous stage) depend on, the B pass, and
/// returns after them the values the rest reads; the rest, the weight
/// gradients and their accumulation, moves to `@<name>_weight` (W), whose
/// arguments are the ones of `backward` it reads (their indices in
/// `io.weightArgs`) and then those values. A constant W reads is cloned
/// into it rather than carried. A `dist.all_gather` B makes whose result W
/// reads too is cloned into W (gathered again from the shard B hands over)
/// unless `carryGathered`, when B hands W the gathered tensor itself.
static void splitWeightPass(OpBuilder &b, tx::ModelOp model,
                            func::FuncOp backward, StringRef name, StageIO &io,
                            bool carryGathered) {
  tx::inlineBlocks(backward);
  Block &body = backward.getBody().front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  // B: the backward slice of the results.
  llvm::DenseSet<Operation *> inB;
  SmallVector<Operation *> worklist;
  auto reach = [&](Value v) {
    if (Operation *def = v.getDefiningOp())
      if (def->getBlock() == &body && inB.insert(def).second)
        worklist.push_back(def);
  };
  for (Value v : ret.getOperands())
    reach(v);
  while (!worklist.empty()) {
    Operation *op = worklist.pop_back_val();
    op->walk([&](Operation *nested) {
      for (Value operand : nested->getOperands())
        reach(operand);
    });
  }
  // A gather B makes and W reads too (sequence parallelism's: a row
  // linear's output gradient, which B's input gradient reads whole; under
  // full recomputation also the norms' outputs B's rebuilt forward
  // gathers) W gathers again from its shard, as it does the column
  // linears' inputs: the hand-over holds 1/t of it, for one all_gather
  // more in W. (carry-gathered: B hands over the gathered tensor, t times
  // the bytes, and W gathers nothing.)
  if (!carryGathered)
    for (Operation &op : body.without_terminator()) {
      auto gather = dyn_cast<AllGatherOp>(&op);
      if (!gather || !inB.contains(gather))
        continue;
      SmallVector<OpOperand *> weightUses;
      for (OpOperand &use : gather.getResult().getUses())
        if (!inB.contains(body.findAncestorOpInBlock(*use.getOwner())))
          weightUses.push_back(&use);
      if (weightUses.empty())
        continue;
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointAfter(gather);
      Value again = b.clone(*gather)->getResult(0);
      for (OpOperand *use : weightUses)
        use->set(again);
    }
  SmallVector<Operation *> weightOps;
  for (Operation &op : body.without_terminator())
    if (!inB.contains(&op))
      weightOps.push_back(&op);
  // What W reads from B and from the arguments.
  llvm::SetVector<Value> carried;
  llvm::SetVector<BlockArgument> args;
  for (Operation *op : weightOps)
    op->walk([&](Operation *nested) {
      for (Value operand : nested->getOperands()) {
        if (auto arg = dyn_cast<BlockArgument>(operand)) {
          if (arg.getOwner() == &body)
            args.insert(arg);
        } else if (Operation *def = operand.getDefiningOp();
                   inB.contains(def) && !isLeaf(def)) {
          carried.insert(operand);
        }
      }
    });
  SmallVector<BlockArgument> sortedArgs = args.takeVector();
  llvm::sort(sortedArgs, [](BlockArgument x, BlockArgument y) {
    return x.getArgNumber() < y.getArgNumber();
  });
  SmallVector<Value> inputs;
  for (BlockArgument arg : sortedArgs) {
    io.weightArgs.push_back(arg.getArgNumber());
    inputs.push_back(arg);
  }
  llvm::append_range(inputs, carried);
  io.numCarried = carried.size();
  io.weightFn = outline(b, model, (name + "_weight").str(), inputs, weightOps,
                        /*outputs=*/{}, backward.getLoc());
  // B returns the carried values too; W's ops leave it.
  ret.getOperandsMutable().append(carried.getArrayRef());
  backward.setType(
      b.getFunctionType(backward.getArgumentTypes(), ret.getOperandTypes()));
  for (Operation *op : llvm::reverse(weightOps))
    op->erase();
}

//===----------------------------------------------------------------------===//
// The per-stage optimizer step
//===----------------------------------------------------------------------===//

/// `axes` with `axis` added, in the order of the mesh's axes.
static ArrayAttr withAxisInMeshOrder(MeshOp mesh, ArrayAttr axes,
                                     StringRef axis) {
  llvm::StringSet<> names;
  if (axes)
    for (Attribute a : axes)
      names.insert(cast<StringAttr>(a).getValue());
  names.insert(axis);
  SmallVector<Attribute> ordered;
  for (Attribute a : mesh.getAxisNames())
    if (names.contains(cast<StringAttr>(a).getValue()))
      ordered.push_back(a);
  return ArrayAttr::get(mesh.getContext(), ordered);
}

/// The stages whose optimizer step updates parameter `param`: its
/// `dist.tied_stages`, else its `dist.stage` (stage 0 for a parameter no
/// stage reads).
static SmallVector<int64_t> updatingStages(tx::ParamOp param) {
  if (auto tied = param->getAttrOfType<DenseI64ArrayAttr>(
          DistDialect::kTiedStagesAttrName))
    return SmallVector<int64_t>(tied.asArrayRef());
  if (auto stage =
          param->getAttrOfType<IntegerAttr>(DistDialect::kStageAttrName))
    return {stage.getInt()};
  return {0};
}

/// Rewrites @optimizer_step (signature unchanged) into one case per stage
/// of a switch on the pp coordinate, each a copy of the original body
/// restricted to the stage's parameters: the other stages' per-parameter
/// ops are erased and their gradients leave the global norm, which becomes
/// partial over pp. A tied parameter's gradient parts are exchanged between
/// its stages (lower stage sends first) and summed in stage order, so every
/// copy gets bitwise the same update. See the dist-pipeline description.
static LogicalResult splitOptimizerStep(tx::ModelOp model, MeshOp mesh,
                                        StringRef ppAxis, int64_t stages,
                                        int64_t tagBase, StringRef pass) {
  auto step = model.getOptimizerStep();
  if (!step)
    return model.emitError() << pass << ": model @" << model.getSymName()
                             << " has no @optimizer_step; run "
                                "triax-autodiff first";
  for (Type type : step.getResultTypes())
    if (!isa<FloatType>(type))
      return step.emitError()
             << pass << ": @optimizer_step must return floating-point "
             << "scalars, got " << type;
  llvm::StringMap<SmallVector<int64_t>> owners;
  llvm::StringMap<int64_t> tiedIndex; // tag offset of each tied parameter
  for (tx::ParamOp param : model.getParams()) {
    SmallVector<int64_t> on = updatingStages(param);
    if (on.size() > 1) {
      int64_t next = tiedIndex.size();
      tiedIndex[param.getSymName()] = next;
    }
    owners[param.getSymName()] = std::move(on);
  }
  auto paramOf = [](Operation *op) -> StringRef {
    if (auto ref = op->getAttrOfType<FlatSymbolRefAttr>("param"))
      return ref.getValue();
    return {};
  };
  auto onStage = [&](StringRef param, int64_t s) {
    auto it = owners.find(param);
    return it == owners.end() || llvm::is_contained(it->second, s);
  };

  MLIRContext *ctx = model.getContext();
  OpBuilder b(ctx);
  Location loc = step.getLoc();
  auto meshRef = FlatSymbolRefAttr::get(ctx, mesh.getSymName());
  ArrayAttr axes = b.getStrArrayAttr({ppAxis});
  // Move the original body out, build the switch, clone it into each case.
  Block &body = step.getBody().front();
  auto original = std::make_unique<Block>();
  original->getOperations().splice(original->end(), body.getOperations());
  llvm::scope_exit dropOriginal([&] {
    for (Operation &op : llvm::reverse(*original))
      op.dropAllUses();
    while (!original->empty())
      original->back().erase();
  });
  b.setInsertionPointToEnd(&body);
  Value coordinate =
      AxisIndexOp::create(b, loc, b.getIndexType(), meshRef, axes);
  SmallVector<int64_t> caseValues;
  for (int64_t s = 0; s < stages; ++s)
    caseValues.push_back(s);
  auto sw = scf::IndexSwitchOp::create(b, loc, step.getResultTypes(),
                                       coordinate, caseValues, stages);
  {
    // Never taken: every coordinate on pp has its case.
    b.setInsertionPointToEnd(b.createBlock(&sw.getDefaultRegion()));
    SmallVector<Value> zeros;
    for (Type type : step.getResultTypes())
      zeros.push_back(
          arith::ConstantOp::create(b, loc, b.getFloatAttr(type, 0.0)));
    scf::YieldOp::create(b, loc, zeros);
  }
  b.setInsertionPointAfter(sw);
  func::ReturnOp::create(b, loc, sw.getResults());

  for (int64_t s = 0; s < stages; ++s) {
    Block *block = b.createBlock(&sw.getCaseRegions()[s]);
    // The moved ops still read the function's arguments directly.
    IRMapping map;
    b.setInsertionPointToEnd(block);
    for (Operation &op : *original) {
      if (auto ret = dyn_cast<func::ReturnOp>(op)) {
        SmallVector<Value> results;
        for (Value v : ret.getOperands())
          results.push_back(map.lookupOrDefault(v));
        scf::YieldOp::create(b, ret.getLoc(), results);
        continue;
      }
      b.clone(op, map);
    }

    // The other stages' per-parameter ops go; their gradients leave the
    // norms.
    SmallVector<Operation *> offStage;
    for (Operation &op : *block) {
      StringRef param = paramOf(&op);
      if (!param.empty() && !onStage(param, s))
        offStage.push_back(&op);
    }
    auto gradParam = [&](Value v) -> StringRef {
      if (auto get = v.getDefiningOp<tx::GetGradOp>())
        return get.getParam();
      return {};
    };
    for (auto norm : llvm::to_vector(block->getOps<tx::GlobalNormOp>())) {
      SmallVector<Value> kept;
      SmallVector<int64_t> replicas;
      std::optional<ArrayRef<int64_t>> had = norm.getReplicas();
      for (auto [i, g] : llvm::enumerate(norm.getGrads())) {
        StringRef param = gradParam(g);
        if (!param.empty() && !onStage(param, s))
          continue;
        int64_t copies = 1;
        if (!param.empty())
          if (auto it = owners.find(param); it != owners.end())
            copies = it->second.size();
        kept.push_back(g);
        replicas.push_back((had ? (*had)[i] : 1) * copies);
      }
      norm.getGradsMutable().assign(kept);
      norm.setMeshAttr(meshRef);
      norm.setAxesAttr(withAxisInMeshOrder(mesh, norm.getAxesAttr(), ppAxis));
      norm.setReplicasAttr(b.getDenseI64ArrayAttr(replicas));
    }
    for (Operation *op : llvm::reverse(offStage)) {
      if (!op->use_empty())
        return op->emitError()
               << pass << ": this op of @optimizer_step reads parameter @"
               << paramOf(op) << ", which is not on stage " << s
               << ", and its result is used by more than the norm and the "
               << "parameter's own update";
      op->erase();
    }

    // Tied parameters: each stage holds its part of the gradient; the parts
    // are exchanged pairwise in stage order (the lower stage sends first,
    // the higher receives first: deadlock-free with blocking send/recv)
    // and summed in stage order on every tied stage.
    for (auto get : llvm::to_vector(block->getOps<tx::GetGradOp>())) {
      auto it = owners.find(get.getParam());
      if (it == owners.end() || it->second.size() < 2)
        continue;
      ArrayRef<int64_t> tied = it->second;
      auto tag = b.getI64IntegerAttr(tagBase + tiedIndex[get.getParam()]);
      b.setInsertionPointAfter(get);
      llvm::DenseMap<int64_t, Value> parts;
      parts[s] = get.getGrad();
      SmallVector<Operation *> exchange;
      for (int64_t peer : tied) {
        if (peer == s)
          continue;
        auto peerAttr = b.getI64IntegerAttr(peer);
        auto send = [&] {
          exchange.push_back(SendOp::create(b, get.getLoc(), get.getGrad(),
                                            meshRef, axes, peerAttr, tag));
        };
        auto recv = [&] {
          auto op = RecvOp::create(b, get.getLoc(), get.getType(), meshRef,
                                   axes, peerAttr, tag);
          parts[peer] = op.getResult();
        };
        if (s < peer) {
          send();
          recv();
        } else {
          recv();
          send();
        }
      }
      Value sum;
      for (int64_t t : tied)
        sum = sum ? tx::AddOp::create(b, get.getLoc(), get.getType(), sum,
                                      parts[t])
                        .getResult()
                  : parts[t];
      // The norm and the update read the sum; the exchange and the sum
      // itself read this stage's part.
      Operation *sumOp = sum.getDefiningOp();
      get.getGrad().replaceUsesWithIf(sum, [&](OpOperand &use) {
        Operation *user = use.getOwner();
        return !llvm::is_contained(exchange, user) && user != sumOp &&
               !(user->getBlock() == block && user->isBeforeInBlock(sumOp));
      });
    }
  }
  return success();
}

LogicalResult PipelinePass::pipeline(tx::ModelOp model, MeshOp mesh,
                                     int64_t ranks, int64_t m) {
  StringRef pass = getArgument();
  // Virtual stage k runs on rank k % ranks as its chunk k / ranks.
  const PipelineSchedule kind = *parseSchedule(schedule);
  const int64_t chunks = virtualStages, stages = ranks * chunks;
  auto rankOf = [&](int64_t stage) { return stage % ranks; };
  std::string stagesText =
      chunks > 1 ? (Twine("pp x virtual-stages = ") + Twine(ranks) + " x " +
                    Twine(chunks) + " = " + Twine(stages))
                       .str()
                 : (Twine("pp=") + Twine(ranks)).str();
  auto original = model.getForwardBackward();
  for (StringRef name :
       {StringRef(tx::ModelOp::kPipelineStepName), StringRef("stage0_forward")})
    if (model.lookupSymbol(name))
      return model.emitError() << pass << ": model @" << model.getSymName()
                               << " already has @" << name;
  // Work on a detached copy: tied gradients are split in it.
  auto fb = cast<func::FuncOp>(original->clone());
  llvm::scope_exit cleanup([&] { fb->erase(); });
  Block &body = fb.getBody().front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  if (ret.getNumOperands() != 1)
    return original.emitError()
           << pass << ": @forward_backward must return the loss";
  Value loss = ret.getOperand(0);

  // The forward part: everything the loss depends on.
  llvm::DenseSet<Operation *> forward;
  SmallVector<Operation *> worklist;
  if (Operation *def = loss.getDefiningOp())
    worklist.push_back(def);
  while (!worklist.empty()) {
    Operation *op = worklist.pop_back_val();
    if (!forward.insert(op).second)
      continue;
    for (Value operand : op->getOperands())
      if (Operation *def = operand.getDefiningOp())
        worklist.push_back(def);
  }

  // The forward blocks, their costs, and what runs before and after them.
  SmallVector<tx::BlockOp> blocks;
  for (auto block : body.getOps<tx::BlockOp>())
    if (forward.contains(block))
      blocks.push_back(block);
  int64_t numBlocks = blocks.size();
  if (stages > numBlocks)
    return model.emitError()
           << pass << ": " << stagesText << " stages but model @"
           << model.getSymName() << " has " << numBlocks
           << " blocks; every stage needs at least one";
  // (After the blocks: too few layers is the first thing to fix.)
  if (std::string error = scheduleError(kind, ranks, chunks, m); !error.empty())
    return model.emitError() << pass << ": " << error;
  SmallVector<int64_t> counts;
  if (!stageLayers.empty()) {
    SmallVector<StringRef> fields;
    StringRef(stageLayers).split(fields, ',');
    for (StringRef field : fields) {
      int64_t count;
      if (field.trim().getAsInteger(10, count) || count < 0)
        return model.emitError() << pass << ": stage-layers: '" << field
                                 << "' is not a block count";
      if (count == 0)
        return model.emitError()
               << pass << ": stage-layers: every stage needs at least one "
               << "block, got 0";
      counts.push_back(count);
    }
    if (int64_t(counts.size()) != stages)
      return model.emitError() << pass << ": stage-layers has " << counts.size()
                               << " entries but " << stagesText;
    int64_t sum = 0;
    for (int64_t c : counts)
      sum += c;
    if (sum != numBlocks)
      return model.emitError() << pass << ": stage-layers sums to " << sum
                               << " blocks but model @" << model.getSymName()
                               << " has " << numBlocks;
  } else {
    BlockCosts costs =
        weighBlocks(body, [&](Operation *op) { return forward.contains(op); });
    counts = balanceStages(costs.blocks, stages, costs.before, costs.after);
  }
  llvm::StringMap<int64_t> blockStage;
  {
    int64_t i = 0;
    for (int64_t s = 0; s < stages; ++s)
      for (int64_t c = 0; c < counts[s]; ++c, ++i)
        blockStage[blocks[i].getName()] = s;
  }

  // Place every op.
  llvm::DenseMap<Operation *, Place> place;
  auto stageOf = [&](Value v) -> int64_t {
    Operation *def = v.getDefiningOp();
    if (!def)
      return -1;
    auto it = place.find(def);
    return it == place.end() ? -1 : it->second.stage;
  };
  auto assign = [&](Operation *op) {
    Place p;
    p.dir = forward.contains(op) ? Fwd : Bwd;
    if (auto block = dyn_cast<tx::BlockOp>(op)) {
      StringRef name = block.getName();
      if (p.dir == Bwd)
        name.consume_back(tx::ModelOp::kGradSuffix);
      auto it = blockStage.find(name);
      if (it != blockStage.end()) {
        p.stage = it->second;
        return p;
      }
    }
    int64_t stage = -1;
    for (Value operand : op->getOperands()) {
      int64_t s = stageOf(operand);
      if (s < 0)
        continue;
      if (stage < 0)
        stage = s;
      else
        stage = p.dir == Fwd ? std::max(stage, s) : std::min(stage, s);
    }
    // (-3, -2: placed below, with their users.)
    p.stage = stage >= 0 ? stage : (p.dir == Fwd ? -3 : -2);
    return p;
  };
  for (Operation &op : body.without_terminator()) {
    if (isLeaf(&op))
      place[&op] = Place();
    else
      place[&op] = assign(&op);
  }
  // A gradient summed from several stages (a tied embedding and head) is
  // accumulated on each of them.
  OpBuilder b(&getContext());
  for (auto acc : llvm::to_vector(body.getOps<tx::AccumulateGradOp>())) {
    SmallVector<Value> summands, todo = {acc.getGrad()};
    while (!todo.empty()) {
      Value v = todo.pop_back_val();
      auto add = v.getDefiningOp<tx::AddOp>();
      if (add && stageOf(add.getLhs()) >= 0 && stageOf(add.getRhs()) >= 0 &&
          stageOf(add.getLhs()) != stageOf(add.getRhs())) {
        todo.push_back(add.getRhs());
        todo.push_back(add.getLhs());
      } else {
        summands.push_back(v);
      }
    }
    if (summands.size() < 2)
      continue;
    for (Value v : summands) {
      // Each part right after the op that makes it (autodiff's placement).
      if (Operation *def = v.getDefiningOp())
        b.setInsertionPointAfter(def);
      else
        b.setInsertionPoint(acc);
      Operation *part = b.clone(*acc);
      part->setOperand(0, v);
      place[part] = Place{stageOf(v), Bwd};
    }
    Operation *sum = acc.getGrad().getDefiningOp();
    place.erase(acc);
    acc->erase();
    // Erase the now dead sums.
    SmallVector<Operation *> dead = {sum};
    while (!dead.empty()) {
      Operation *op = dead.pop_back_val();
      if (!op || !op->use_empty() || !isa<tx::AddOp>(op))
        continue;
      SmallVector<Operation *> defs;
      for (Value operand : op->getOperands())
        defs.push_back(operand.getDefiningOp());
      place.erase(op);
      op->erase();
      dead.append(defs);
    }
  }
  // Ops that read no staged value go with their first user: in the
  // forward (the inputs' preparation, as context parallelism's shards of
  // the targets, which only the last stage reads) or the backward; else
  // the first stage (forward) or the last (backward).
  for (Operation &op : llvm::reverse(body.without_terminator())) {
    Place &p = place[&op];
    if (p.stage != -2 && p.stage != -3)
      continue;
    int64_t first = std::numeric_limits<int64_t>::max();
    for (Operation *user : op.getUsers())
      if (place.count(user) && place[user].stage >= 0)
        first = std::min(first, place[user].stage);
    p.stage = first != std::numeric_limits<int64_t>::max() ? first
              : p.stage == -3                              ? 0
                                                           : stages - 1;
  }
  if (place[loss.getDefiningOp()].stage != stages - 1 ||
      place[loss.getDefiningOp()].dir != Fwd)
    return loss.getDefiningOp()->emitError()
           << pass << ": the loss is computed on stage "
           << place[loss.getDefiningOp()].stage << ", not the last ("
           << stages - 1 << ")";

  // A backward op that reads nothing but its stage's forward values (and
  // constants and arguments), and is the only backward reader of one it
  // can be written over (of its type), runs at the end of the forward
  // instead, and the forward keeps its result in that value's place: the
  // last stage's loss gradient is made over the logits, one V-wide buffer
  // per micro-batch in flight where the backward made it in a second one
  // beside the logits the forward kept. What it reads that is computed
  // from constants alone for it only (context parallelism's seed, 1/cp)
  // moves with it.
  auto fromConstants = [&](Operation *def, Operation *user) {
    return def->getNumRegions() == 0 && isMemoryEffectFree(def) &&
           def->hasOneUse() && *def->getUsers().begin() == user &&
           llvm::all_of(def->getOperands(), [&](Value v) {
             Operation *d = v.getDefiningOp();
             return d && isLeaf(d);
           });
  };
  for (Operation &op : body.without_terminator()) {
    Place &p = place[&op];
    if (p.dir != Bwd || p.stage < 0 || op.getNumResults() != 1 ||
        op.getNumRegions() != 0)
      continue;
    bool forwardOnly = true, overwrites = false;
    SmallVector<Operation *> seeds;
    for (Value operand : op.getOperands()) {
      if (isa<BlockArgument>(operand))
        continue;
      Place q = place.lookup(operand.getDefiningOp());
      if (q.stage < 0)
        continue;
      if (q.stage == p.stage && q.dir == Bwd &&
          fromConstants(operand.getDefiningOp(), &op)) {
        seeds.push_back(operand.getDefiningOp());
        continue;
      }
      if (q.stage != p.stage || q.dir != Fwd) {
        forwardOnly = false;
        break;
      }
      overwrites |= operand.getType() == op.getResult(0).getType() &&
                    llvm::all_of(operand.getUsers(), [&](Operation *user) {
                      return user == &op || place.lookup(user).dir == Fwd;
                    });
    }
    if (forwardOnly && overwrites) {
      p.dir = Fwd;
      for (Operation *seed : seeds)
        place[seed].dir = Fwd;
    }
  }

  // What crosses between stages.
  std::vector<StageIO> io(stages);
  for (Operation &op : body.without_terminator()) {
    Place p = place[&op];
    if (p.stage < 0)
      continue;
    StageIO &mine = io[p.stage];
    mine.ops[p.dir].push_back(&op);
    for (Value operand : op.getOperands()) {
      if (isa<BlockArgument>(operand)) {
        mine.args[p.dir].insert(operand);
        continue;
      }
      Operation *def = operand.getDefiningOp();
      Place q = place[def];
      if (q.stage < 0 || (q.stage == p.stage && q.dir == p.dir))
        continue;
      if (q.dir == Fwd && q.stage == p.stage - 1) {
        mine.actIn.insert(operand);
        mine.actInUse[p.dir].insert(operand);
      } else if (q.dir == Fwd && q.stage == p.stage && p.dir == Bwd) {
        mine.saved.insert(operand);
      } else if (q.dir == Bwd && q.stage == p.stage + 1 && p.dir == Bwd) {
        mine.gradIn.insert(operand);
      } else {
        return op.emitError()
               << pass << ": this op runs in the "
               << (p.dir == Fwd ? "forward" : "backward") << " of stage "
               << p.stage << " but reads a value of the "
               << (q.dir == Fwd ? "forward" : "backward") << " of stage "
               << q.stage << "; only neighbouring stages exchange values";
      }
    }
  }

  // Parameter ownership.
  llvm::StringMap<std::set<int64_t>> paramStages;
  auto noteParams = [&](Operation *root, int64_t stage) {
    root->walk([&](Operation *op) {
      if (auto get = dyn_cast<tx::GetParamOp>(op))
        paramStages[get.getName()].insert(stage);
      else if (auto acc = dyn_cast<tx::AccumulateGradOp>(op))
        paramStages[acc.getParam()].insert(stage);
    });
  };
  for (Operation &op : body.without_terminator()) {
    Place p = place[&op];
    if (p.stage >= 0) {
      noteParams(&op, rankOf(p.stage));
      continue;
    }
    for (Operation *user : op.getUsers())
      if (place.count(user) && place[user].stage >= 0)
        noteParams(&op, rankOf(place[user].stage));
  }
  for (auto param : model.getBody().front().getOps<tx::ParamOp>()) {
    auto it = paramStages.find(param.getSymName());
    if (it == paramStages.end())
      continue;
    const std::set<int64_t> &set = it->second;
    param->setAttr(DistDialect::kStageAttrName,
                   b.getI64IntegerAttr(*set.begin()));
    if (set.size() > 1)
      param->setAttr(
          DistDialect::kTiedStagesAttrName,
          b.getDenseI64ArrayAttr(SmallVector<int64_t>(set.begin(), set.end())));
  }

  // The stage functions (the @forward_backward arguments in their order).
  Location loc = original.getLoc();
  for (int64_t s = 0; s < stages; ++s) {
    StageIO &mine = io[s];
    for (llvm::SetVector<Value> &args : mine.args) {
      SmallVector<Value> sorted = args.takeVector();
      llvm::sort(sorted, [](Value a, Value b) {
        return cast<BlockArgument>(a).getArgNumber() <
               cast<BlockArgument>(b).getArgNumber();
      });
      args.insert_range(sorted);
    }
    bool last = s == stages - 1;
    SmallVector<Value> &fin = mine.fnInputs[Fwd], &fout = mine.fnOutputs[Fwd];
    llvm::append_range(fin, mine.args[Fwd]);
    llvm::append_range(fin, mine.actInUse[Fwd]);
    if (last)
      fout.push_back(loss);
    else
      llvm::append_range(fout, io[s + 1].actIn);
    llvm::append_range(fout, mine.saved);
    mine.fn[Fwd] = outline(b, model, ("stage" + Twine(s) + "_forward").str(),
                           fin, mine.ops[Fwd], fout, loc);
    SmallVector<Value> &bin = mine.fnInputs[Bwd], &bout = mine.fnOutputs[Bwd];
    llvm::append_range(bin, mine.args[Bwd]);
    llvm::append_range(bin, mine.actInUse[Bwd]);
    llvm::append_range(bin, mine.saved);
    llvm::append_range(bin, mine.gradIn);
    if (s > 0)
      llvm::append_range(bout, io[s - 1].gradIn);
    mine.fn[Bwd] = outline(b, model, ("stage" + Twine(s) + "_backward").str(),
                           bin, mine.ops[Bwd], bout, loc);
    if (splitsWeightPass(kind))
      splitWeightPass(b, model, mine.fn[Bwd], ("stage" + Twine(s)).str(), mine,
                      carryGathered);
    if (chunks > 1)
      for (func::FuncOp fn : mine.fn)
        fn->setAttr(DistDialect::kChunkAttrName,
                    b.getI64IntegerAttr(s / ranks));
  }

  // @pipeline_step.
  SmallVector<Type> argTypes;
  for (Type type : original.getArgumentTypes()) {
    auto tensor = dyn_cast<RankedTensorType>(type);
    if (!tensor || tensor.getRank() < 1 || tensor.isDynamicDim(0))
      return original.emitError()
             << pass << ": @forward_backward's arguments must be tensors "
             << "with a static batch dimension, got " << type;
    SmallVector<int64_t> shape(tensor.getShape());
    shape[0] *= m;
    argTypes.push_back(tensor.clone(shape));
  }
  // The loss is returned as a scalar: the kernel lowering has no pattern
  // for arith on tensors, and the driver reads one f32.
  auto lossTensor = dyn_cast<RankedTensorType>(loss.getType());
  if (!lossTensor || lossTensor.getRank() != 0 ||
      !lossTensor.getElementType().isF32())
    return original.emitError()
           << pass << ": @forward_backward must return the loss as "
           << "tensor<f32>, got " << loss.getType();
  Type lossType = b.getF32Type();
  b.setInsertionPointToEnd(&model.getBody().front());
  auto step = func::FuncOp::create(b, loc, tx::ModelOp::kPipelineStepName,
                                   b.getFunctionType(argTypes, {lossType}));
  Block *entry = step.addEntryBlock();
  b.setInsertionPointToEnd(entry);
  MLIRContext *ctx = &getContext();
  auto meshRef = FlatSymbolRefAttr::get(ctx, mesh.getSymName());
  ArrayAttr axes = b.getStrArrayAttr({ppAxis.getValue()});
  Value coordinate =
      AxisIndexOp::create(b, loc, b.getIndexType(), meshRef, axes);
  SmallVector<int64_t> caseValues;
  for (int64_t r = 0; r < ranks; ++r)
    caseValues.push_back(r);
  auto sw = scf::IndexSwitchOp::create(b, loc, TypeRange{lossType}, coordinate,
                                       caseValues, ranks);
  auto zeroLoss = [&]() -> Value {
    return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0.0));
  };
  {
    Block *dflt = b.createBlock(&sw.getDefaultRegion());
    b.setInsertionPointToEnd(dflt);
    scf::YieldOp::create(b, loc, ValueRange{zeroLoss()});
  }
  int64_t width = 1;
  for (int64_t s = 0; s < stages; ++s)
    width = std::max<int64_t>(
        width, std::max(io[s].actIn.size(), io[s].gradIn.size()));
  // Value j of micro-batch mb over the boundary after virtual stage
  // `lower` (one chunk: the boundary is implied by the ranks).
  auto tag = [&](int64_t mb, Dir dir, int64_t lower, int64_t j) {
    return b.getI64IntegerAttr(
        ((2 * mb + dir) * chunks + lower / ranks) * width + j);
  };
  auto peer = [&](int64_t stage) { return b.getI64IntegerAttr(rankOf(stage)); };

  // Other schedules: sends and recvs placed in one global order.
  std::vector<std::vector<PipelineEvent>> programs;
  if (kind != PipelineSchedule::GPipe && kind != PipelineSchedule::OneFOneB)
    programs = pipelinePrograms(kind, ranks, chunks, m);
  for (int64_t r = 0; r < ranks; ++r) {
    Block *block = b.createBlock(&sw.getCaseRegions()[r]);
    b.setInsertionPointToEnd(block);
    // Per micro-batch: @forward_backward value -> value in this case (the
    // values of different virtual stages are different ops).
    std::vector<IRMapping> env(m);
    SmallVector<Value> losses(m);
    auto argValue = [&](int64_t mb, Value arg) -> Value {
      if (Value v = env[mb].lookupOrNull(arg))
        return v;
      auto blockArg = cast<BlockArgument>(arg);
      Value whole = entry->getArgument(blockArg.getArgNumber());
      auto type = cast<RankedTensorType>(arg.getType());
      SmallVector<OpFoldResult> offsets(type.getRank(), b.getIndexAttr(0));
      SmallVector<OpFoldResult> sizes,
          strides(type.getRank(), b.getIndexAttr(1));
      offsets[0] = b.getIndexAttr(mb * type.getDimSize(0));
      for (int64_t d : type.getShape())
        sizes.push_back(b.getIndexAttr(d));
      Value slice = tensor::ExtractSliceOp::create(b, loc, type, whole, offsets,
                                                   sizes, strides);
      env[mb].map(arg, slice);
      return slice;
    };
    auto inputs = [&](int64_t s, int64_t mb, Dir dir) {
      SmallVector<Value> values;
      for (Value v : io[s].fnInputs[dir])
        values.push_back(isa<BlockArgument>(v) ? argValue(mb, v)
                                               : env[mb].lookup(v));
      return values;
    };
    // Virtual stage s's passes of micro-batch mb and their messages.
    auto forwardRecv = [&](int64_t s, int64_t mb) {
      if (s > 0)
        for (auto [j, v] : llvm::enumerate(io[s].actIn))
          env[mb].map(v, RecvOp::create(b, loc, v.getType(), meshRef, axes,
                                        peer(s - 1), tag(mb, Fwd, s - 1, j)));
    };
    auto forwardCompute = [&](int64_t s, int64_t mb) {
      auto call =
          func::CallOp::create(b, loc, io[s].fn[Fwd], inputs(s, mb, Fwd));
      for (auto [v, r] : llvm::zip(io[s].fnOutputs[Fwd], call.getResults()))
        env[mb].map(v, r);
      if (s == stages - 1)
        losses[mb] = env[mb].lookup(loss);
    };
    auto forwardSend = [&](int64_t s, int64_t mb) {
      if (s < stages - 1)
        for (auto [j, v] : llvm::enumerate(io[s + 1].actIn))
          SendOp::create(b, loc, env[mb].lookup(v), meshRef, axes, peer(s + 1),
                         tag(mb, Fwd, s, j));
    };
    auto backwardRecv = [&](int64_t s, int64_t mb) {
      if (s < stages - 1)
        for (auto [j, v] : llvm::enumerate(io[s].gradIn))
          env[mb].map(v, RecvOp::create(b, loc, v.getType(), meshRef, axes,
                                        peer(s + 1), tag(mb, Bwd, s, j)));
    };
    // The input gradients a backward returns, to send; and what its weight
    // pass reads of it, per micro-batch and stage.
    SmallVector<SmallVector<Value>> sent(m);
    std::map<std::pair<int64_t, int64_t>, SmallVector<Value>> carried;
    auto backwardCompute = [&](int64_t s, int64_t mb) {
      auto call =
          func::CallOp::create(b, loc, io[s].fn[Bwd], inputs(s, mb, Bwd));
      ValueRange results = call.getResults();
      unsigned numSent = results.size() - io[s].numCarried;
      sent[mb] = SmallVector<Value>(results.take_front(numSent));
      carried[{s, mb}] = SmallVector<Value>(results.drop_front(numSent));
    };
    auto weightCompute = [&](int64_t s, int64_t mb) {
      SmallVector<Value> all = inputs(s, mb, Bwd), args;
      for (unsigned i : io[s].weightArgs)
        args.push_back(all[i]);
      llvm::append_range(args, carried[{s, mb}]);
      func::CallOp::create(b, loc, io[s].weightFn, args);
      carried.erase({s, mb});
    };
    auto backwardSend = [&](int64_t s, int64_t mb) {
      if (s > 0)
        for (auto [j, v] : llvm::enumerate(sent[mb]))
          SendOp::create(b, loc, v, meshRef, axes, peer(s - 1),
                         tag(mb, Bwd, s - 1, j));
    };
    if (programs.empty()) {
      // GPipe and 1F1B: each pass between its recv and its send, in
      // pipelineOrder's order (one chunk: virtual stage r).
      const int64_t s = r;
      std::vector<PipelineStep> order = pipelineOrder(kind, ranks, 1, m, r);
      for (size_t i = 0; i < order.size(); ++i) {
        const int64_t mb = order[i].microBatch;
        if (!order[i].forward()) {
          backwardRecv(s, mb);
          backwardCompute(s, mb);
          backwardSend(s, mb);
          continue;
        }
        forwardRecv(s, mb);
        forwardCompute(s, mb);
        // 1F1B's steady F(w+j) B(j): receive B(j)'s gradient before sending
        // F(w+j)'s activation, as the next stage sends that gradient before
        // it receives the activation.
        const bool exchange = kind == PipelineSchedule::OneFOneB &&
                              i + 1 < order.size() && !order[i + 1].forward();
        if (!exchange) {
          forwardSend(s, mb);
          continue;
        }
        const int64_t next = order[++i].microBatch;
        backwardRecv(s, next);
        forwardSend(s, mb);
        backwardCompute(s, next);
        backwardSend(s, next);
      }
    } else {
      for (const PipelineEvent &e : programs[r]) {
        const int64_t s = e.step.chunk * ranks + r, mb = e.step.microBatch;
        bool fwd = e.step.forward();
        switch (e.kind) {
        case PipelineEvent::Recv:
          fwd ? forwardRecv(s, mb) : backwardRecv(s, mb);
          break;
        case PipelineEvent::Compute:
          if (e.step.pass == mlir::dist::Pass::Weight)
            weightCompute(s, mb);
          else
            fwd ? forwardCompute(s, mb) : backwardCompute(s, mb);
          break;
        case PipelineEvent::Send:
          fwd ? forwardSend(s, mb) : backwardSend(s, mb);
          break;
        }
      }
    }
    Value result;
    if (r == rankOf(stages - 1)) {
      // The mean over the micro-batches, summed in micro-batch order.
      for (Value l : losses) {
        Value scalar = tensor::ExtractOp::create(b, loc, l, ValueRange{});
        result =
            result ? arith::AddFOp::create(b, loc, result, scalar) : scalar;
      }
      Value scale = arith::ConstantOp::create(
          b, loc, b.getF32FloatAttr(float(1.0 / double(m))));
      result = arith::MulFOp::create(b, loc, result, scale);
    } else {
      result = zeroLoss();
    }
    scf::YieldOp::create(b, loc, ValueRange{result});
  }
  b.setInsertionPointAfter(sw);
  func::ReturnOp::create(b, loc, sw.getResults());
  // The optimizer step's exchanges are tagged above every schedule tag.
  return splitOptimizerStep(model, mesh, ppAxis, ranks,
                            /*tagBase=*/2 * m * chunks * width, pass);
}

/// The micro-batches of one optimizer step on one dp rank: the model's
/// accumulation count global_batch / (micro_batch · dp). `microbatches`,
/// when given, must equal it: @pipeline_step then trains exactly the step
/// the training config describes.
FailureOr<int64_t> PipelinePass::resolveMicrobatches(tx::ModelOp model,
                                                     MeshOp mesh) {
  StringRef pass = getArgument();
  tx::TrainConfigAttr config = model.getConfig();
  int64_t batch = config.getGlobalBatch(), micro = config.getMicroBatch();
  // Expert-parallel ranks train on their own sequences too.
  int64_t dp = mesh.getAxisSize(dpAxis).value_or(1) *
               mesh.getAxisSize(axisName(TRX_AXIS_EXPERT)).value_or(1);
  FailureOr<int64_t> steps = accumulationSteps(model, dp, pass);
  if (failed(steps))
    return failure();
  int64_t accumulation = *steps;
  if (microbatches == 0)
    return accumulation;
  if (microbatches != accumulation) {
    model.emitError() << pass << ": microbatches=" << microbatches.getValue()
                      << " but model @" << model.getSymName()
                      << " accumulates global_batch / (micro_batch x dp) = "
                      << batch << " / (" << micro << " x " << dp
                      << ") = " << accumulation
                      << " micro-batches per step; set the batch with "
                         "triax-model --batch "
                      << microbatches.getValue() * micro * dp
                      << " --micro-batch " << micro << " (or leave "
                      << "microbatches unset)";
    return failure();
  }
  return accumulation;
}

void PipelinePass::runOnOperation() {
  ModuleOp module = getOperation();
  StringRef pass = getArgument();
  SmallVector<tx::ModelOp> models =
      llvm::to_vector(module.getOps<tx::ModelOp>());
  for (tx::ModelOp model : models) {
    auto fb = model.getForwardBackward();
    if (!fb) {
      model.emitError() << pass << ": model @" << model.getSymName()
                        << " has no @forward_backward; run triax-autodiff "
                           "first";
      return signalPassFailure();
    }
    // The data-parallel passes work on what this pass builds (the
    // per-stage optimizer step); run before it, their reductions would
    // land on the wrong stage.
    bool sharded = llvm::any_of(model.getParams(), [](tx::ParamOp p) {
      return p->hasAttr(DistDialect::kZeroAttrName);
    });
    WalkResult bucketed =
        fb.walk([](AllReduceGradsOp) { return WalkResult::interrupt(); });
    if (sharded || bucketed.wasInterrupted()) {
      model.emitError() << pass << ": model @" << model.getSymName()
                        << " is already data-parallel ("
                        << (sharded ? "dist-zero" : "dist-data-parallel")
                        << " ran); run dist-pipeline before it";
      return signalPassFailure();
    }
  }
  if (!parseSchedule(schedule)) {
    module.emitError() << pass << ": unknown schedule '" << schedule
                       << "'; expected gpipe, 1f1b, interleaved or zb-h1";
    return signalPassFailure();
  }
  if (virtualStages < 1) {
    module.emitError() << pass << ": virtual-stages must be >= 1, got "
                       << virtualStages.getValue();
    return signalPassFailure();
  }
  if (std::string error = chunksError(*parseSchedule(schedule), virtualStages);
      !error.empty()) {
    module.emitError() << pass << ": " << error;
    return signalPassFailure();
  }
  if (carryGathered && !splitsWeightPass(*parseSchedule(schedule))) {
    module.emitError() << pass << ": carry-gathered applies to a schedule "
                       << "with a weight pass (zb-h1), not '" << schedule
                       << "'";
    return signalPassFailure();
  }
  if (microbatches < 0) {
    module.emitError() << pass << ": microbatches must be >= 1 (or 0: the "
                       << "training config's), got " << microbatches.getValue();
    return signalPassFailure();
  }
  MeshOp mesh = getOrCreateMeshAxis(module, pass, ppAxis, pp.getValue());
  if (!mesh)
    return signalPassFailure();
  int64_t ranks = *mesh.getAxisSize(ppAxis);
  for (tx::ModelOp model : models) {
    FailureOr<int64_t> m = resolveMicrobatches(model, mesh);
    if (failed(m))
      return signalPassFailure();
    if (failed(pipeline(model, mesh, ranks, *m)))
      return signalPassFailure();
  }
  if (failed(verifySchedules(module)))
    return signalPassFailure();
}
