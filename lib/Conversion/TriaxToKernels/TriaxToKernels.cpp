//===- TriaxToKernels.cpp - Layer ops to loop kernels on buffers ----------===//
//
// The pass prepares the model (inlines blocks, moves the entry functions to
// the module, returns the loss as a scalar) and then runs one dialect
// conversion from tensors to memrefs with the kernel patterns of each op
// family (Linear/Elementwise/Embedding/Norm/Attention/Loss/Optimizer
// Kernels.cpp). Which kernel an op becomes is decided by its pattern, never
// by this file. After the conversion, the training step's entries hand
// their scalars (the loss, the gradient norm) to the caller in device
// buffers, and the step's remaining scalar code (loads, stores and the
// arithmetic on them: the clipping scale, a pipeline's mean loss) moves
// into one-iteration loop nests, so that on the GPU the host neither reads
// device memory nor waits inside a step (sinkHostScalars).
//
//===----------------------------------------------------------------------===//

#include "triax/Conversion/Passes.h"

#include "KernelBuilder.h"
#include "triax/Conversion/RuntimeABI.h"
#include "triax/Dialect/Dist/IR/Dist.h"
#include "triax/Dialect/Triax/IR/GradAccumulation.h"
#include "triax/Dialect/Triax/IR/Triax.h"

#include "mlir/Dialect/Func/Transforms/FuncConversions.h"
#include "mlir/Dialect/SCF/Transforms/Patterns.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "mlir/Transforms/DialectConversion.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"

namespace mlir::triax {
#define GEN_PASS_DEF_CONVERTTRIAXTOKERNELS
#define GEN_PASS_DEF_TRIAXOUTLINEKERNELS
#define GEN_PASS_DEF_TRIAXDEDUPEKERNELS
#include "triax/Conversion/Passes.h.inc"
} // namespace mlir::triax

using namespace mlir;
using namespace mlir::triax;
using namespace mlir::triax::kernels;

void declareRuntimeFunctions(ModuleOp module);

/// One converted copy of each parameter per function, made first: every
/// `triax.convert` of a `triax.get_param` (the bf16 weights of mixed
/// precision, converted once in the forward block and again in the
/// backward block of every layer) is replaced by one conversion at the
/// start of the function, in order of first use: the reads, then the
/// conversions, consecutive; `mark` (fuse-optimizer) marks them for
/// FusedParamCopyLowering, which makes each run of them one loop.
/// The parameters do not change inside a function (only optimizer_step
/// writes them), so the values are the same; the copies live for the whole
/// call (2 bytes per parameter in bf16, as Megatron-LM's bf16 weights).
static void hoistParamCopies(func::FuncOp fn, bool mark) {
  llvm::MapVector<std::pair<StringAttr, Type>, SmallVector<ConvertOp>> uses;
  fn.walk([&](ConvertOp convert) {
    if (auto read = convert.getInput().getDefiningOp<GetParamOp>())
      uses[{read.getNameAttr().getAttr(), convert.getType()}].push_back(
          convert);
  });
  if (uses.empty())
    return;
  Block &entry = fn.getBody().front();
  OpBuilder b(&entry, entry.begin());
  SmallVector<Value> reads;
  for (auto &[key, converts] : uses) {
    auto first = converts.front().getInput().getDefiningOp<GetParamOp>();
    reads.push_back(GetParamOp::create(b, first.getLoc(), first.getType(),
                                       first.getNameAttr()));
  }
  SmallVector<Value> copies;
  for (auto [read, entryUses] : llvm::zip(reads, uses)) {
    ConvertOp first = entryUses.second.front();
    auto copy = ConvertOp::create(b, first.getLoc(), first.getType(), read);
    if (mark)
      copy->setAttr(kParamCopyAttr, b.getUnitAttr());
    copies.push_back(copy);
  }
  // (The old ops go last: the insertion point may be one of them.)
  for (auto [copy, entryUses] : llvm::zip(copies, uses))
    for (ConvertOp convert : entryUses.second) {
      auto old = convert.getInput().getDefiningOp<GetParamOp>();
      convert.replaceAllUsesWith(copy);
      convert.erase();
      if (old->use_empty())
        old.erase();
    }
}

/// accumulate-in-gemm: `accumulate_grad @p, (a + b)`, the sum's only use,
/// becomes `accumulate_grad @p, a` then `accumulate_grad @p, b`, so that
/// each term can go into the gradient buffer where it is made (a tied
/// embedding's two gradients: the LM head's GEMM adds its dW into the
/// buffer, the embedding's scatter adds its rows there) instead of two
/// [V, d] buffers, their sum's buffer and an accumulation pass. The
/// buffer's value is (g + a) + b where it was g + (a + b).
static void splitAccumulatedSums(func::FuncOp fn) {
  SmallVector<AccumulateGradOp> accumulates;
  fn.walk([&](AccumulateGradOp op) { accumulates.push_back(op); });
  for (AccumulateGradOp op : accumulates) {
    auto sum = op.getGrad().getDefiningOp<AddOp>();
    if (!sum || !isAccumulatedTermByTerm(sum))
      continue;
    OpBuilder b(op);
    AccumulateGradOp::create(b, op.getLoc(), op.getParamAttr(), sum.getLhs());
    AccumulateGradOp::create(b, op.getLoc(), op.getParamAttr(), sum.getRhs());
    op.erase();
    sum.erase();
  }
}

/// elementwise-in-place and loss-grad-in-place: marks each elementwise op
/// and fused group of `fn` (`elementwise`) and each loss gradient (`loss`)
/// with the operands its results are written over (kOverwritesAttr), as
/// their result storage says (mayWriteOver). Before the blocks are inlined,
/// as the cost model's [A9] sees them: the rule never writes over a block's
/// argument (its caller's value), which inlined would be that value, so the
/// buffers are those [A9] counts.
static void markOverwrites(func::FuncOp fn, bool elementwise, bool loss) {
  fn.walk([&](Operation *op) {
    if (!(elementwise &&
          isa<ScalarElementwiseOpInterface, FusedElementwiseOp>(op)) &&
        !(loss && isa<CrossEntropyGradOp>(op)))
      return;
    SmallVector<int32_t> over;
    for (OpResult result : op->getResults()) {
      ResultStorage storage = getResultStorage(op, result.getResultNumber());
      over.push_back(storage.kind == ResultStorage::Kind::Operand
                         ? int32_t(storage.operand)
                         : -1);
    }
    if (llvm::any_of(over, [](int32_t i) { return i >= 0; }))
      op->setAttr(kOverwritesAttr,
                  DenseI32ArrayAttr::get(op->getContext(), over));
  });
}

/// Moves `fn` to the module as `name` and makes it return its 0-d tensor
/// results as f32 scalars.
static void exportEntry(func::FuncOp fn, ModuleOp module, StringRef name,
                        bool fuseParamCopies) {
  inlineBlocks(fn);
  hoistParamCopies(fn, fuseParamCopies);
  auto ret = cast<func::ReturnOp>(fn.front().getTerminator());
  OpBuilder b(ret);
  SmallVector<Value> scalars;
  for (Value v : ret.getOperands())
    scalars.push_back(
        isa<TensorType>(v.getType())
            ? tensor::ExtractOp::create(b, ret.getLoc(), v, ValueRange{})
                  .getResult()
            : v);
  ret->setOperands(scalars);
  fn.setFunctionType(
      b.getFunctionType(fn.getArgumentTypes(), ValueRange(scalars).getTypes()));
  fn->moveBefore(module.getBody(), module.getBody()->end());
  fn.setSymName(name);
  fn->setAttr("llvm.emit_c_interface", b.getUnitAttr());
}

/// The training entries keep their scalar result on the device: it goes to
/// a 0-d f32 buffer the caller passes as a new last argument (RuntimeABI.h),
/// added to it (`accumulate`: forward_backward's loss, summed over a step's
/// micro-batches; the step's first call, trx_first_micro_batch, writes it
/// instead, so the driver never zeroes it) or written (the optimizer
/// step's gradient norm), and the entry returns nothing. The update goes right
/// after the value is computed, so that it joins that computation's
/// device nest (sinkHostScalars).
static LogicalResult returnScalarThroughBuffer(func::FuncOp fn,
                                               bool accumulate) {
  Block &entry = fn.front();
  auto ret = cast<func::ReturnOp>(entry.getTerminator());
  if (ret.getNumOperands() != 1 || !ret.getOperand(0).getType().isF32())
    return fn.emitOpError("a training entry must return one f32 scalar, got ")
           << ret.getOperandTypes();
  Value result = ret.getOperand(0);
  Location loc = ret.getLoc();
  auto type = MemRefType::get({}, result.getType());
  if (failed(fn.insertArgument(fn.getNumArguments(), type, {}, loc)))
    return failure();
  Value out = entry.getArguments().back();
  OpBuilder b(fn.getContext());
  if (Operation *def = result.getDefiningOp())
    b.setInsertionPointAfter(def);
  else
    b.setInsertionPointToStart(&entry);
  Value value = result;
  if (accumulate) {
    // (The call goes first in the function, a host value by the time the
    // loss is known: the update stays in the loss's device nest.)
    OpBuilder atStart = OpBuilder::atBlockBegin(&entry);
    Value first =
        func::CallOp::create(atStart, loc, ::triax::rt::kFirstMicroBatch,
                             TypeRange{b.getI64Type()}, ValueRange{})
            .getResult(0);
    Value isFirst = arith::CmpIOp::create(
        b, loc, arith::CmpIPredicate::ne, first,
        arith::ConstantOp::create(b, loc, b.getI64IntegerAttr(0)));
    Value previous = memref::LoadOp::create(b, loc, out, ValueRange{});
    Value base = arith::SelectOp::create(
        b, loc, isFirst,
        arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0.0)), previous);
    value = arith::AddFOp::create(b, loc, base, result);
  }
  memref::StoreOp::create(b, loc, value, out, ValueRange{});
  ret->setOperands({});
  fn.setFunctionType(
      b.getFunctionType(fn.getArgumentTypes(), /*results=*/TypeRange{}));
  return success();
}

namespace {

/// Moves a function's host scalar code onto the device, block by block.
/// After the conversion a training step's host code is runtime calls, loop
/// nests, and scalar code between them: loads and stores of single
/// elements (a loss tensor read as a scalar, the loss handed to the
/// caller) and pure arithmetic on what they read (the clipping scale from
/// the gradient norm, a pipeline's mean over its micro-batches). On the GPU
/// every buffer is device memory, so each maximal run of that scalar code
/// (no call, nest or other memory access in between) becomes a nest of one
/// iteration, in program order (the same arithmetic, bit for bit, on the
/// CPU):
///
///   %n = memref.load %norm[]        scf.parallel (%i) = (%c0) to (%c1) {
///   %s = arith.mulf %n, %scale  ->    %n = memref.load %norm_1[%i]
///                                     %s = arith.mulf %n, %scale
///                                     memref.store %s, %s_buf_1[%i]
///                                   }
///
/// A value used after its nest lives in a one-element buffer: a later nest
/// loads it at the start of its body (the AdamW kernels read the clipping
/// scale there, not as a host argument), later scalar code reloads it (and
/// joins the next such nest). Inside the nest a single-element buffer is
/// accessed through a one-element 1-D view at the nest's variable (%norm_1
/// above), so that the GPU mapping proves its stores disjoint. The scalar
/// results of host branches (scf.index_switch, scf.if: a pipeline's stage
/// cases) go through one-element buffers the same way. Host values
/// (arguments, constants, arithmetic on them only) stay on the host and
/// are passed in.
class DeviceScalars {
public:
  /// loadBeforeNests (the CPU): a nest that uses such a value reads its
  /// buffer once in front of the nest, not at the start of its body, so
  /// that the loop sees a value, not a load that may alias its stores
  /// (LLVM then vectorizes the AdamW loops). Host and device memory are
  /// one there; the value is the same.
  explicit DeviceScalars(bool loadBeforeNests = false)
      : loadBeforeNests(loadBeforeNests) {}
  void run(Block &block);

private:
  /// Whether `op` is scalar code of the current run: a load or a store, or
  /// pure scalar arithmetic on a value the run computes.
  bool joins(Operation *op) const;
  /// Moves the current run into a nest in front of `before`.
  void flush(Operation *before);

  bool loadBeforeNests;
  /// The reads loadBeforeNests put in front of nests: host code, not the
  /// start of a new run (which would copy the value into another buffer).
  llvm::SmallPtrSet<Operation *, 16> readsBeforeNests;
  SmallVector<Operation *> run_;
  llvm::SmallPtrSet<Operation *, 16> members;
};

} // namespace

/// Whether `buffer` is host memory (a constant table, a stack buffer): its
/// accesses stay host code.
static bool isHostMemory(Value buffer) {
  while (auto view = buffer.getDefiningOp<ViewLikeOpInterface>())
    buffer = view.getViewSource();
  return buffer.getDefiningOp<memref::GetGlobalOp>() ||
         buffer.getDefiningOp<memref::AllocaOp>();
}

bool DeviceScalars::joins(Operation *op) const {
  if (auto load = dyn_cast<memref::LoadOp>(op))
    return !isHostMemory(load.getMemRef());
  if (auto store = dyn_cast<memref::StoreOp>(op))
    return !isHostMemory(store.getMemRef());
  if (op->getNumRegions() != 0 || !isMemoryEffectFree(op) ||
      !llvm::all_of(op->getResultTypes(),
                    [](Type t) { return t.isIntOrIndexOrFloat(); }))
    return false;
  return llvm::any_of(op->getOperands(), [&](Value v) {
    Operation *def = v.getDefiningOp();
    return def && members.contains(def);
  });
}

/// The buffer of a single element `buffer` as a one-element 1-D view, or
/// null when it holds more (or is strided).
static Value singleElementView(KernelBuilder &k, Value buffer) {
  auto type = cast<MemRefType>(buffer.getType());
  if (!type.hasStaticShape() || type.getNumElements() != 1 ||
      !type.getLayout().isIdentity())
    return {};
  return k.flat(buffer);
}

void DeviceScalars::flush(Operation *before) {
  if (run_.empty())
    return;
  OpBuilder b(before);
  Location loc = run_.front()->getLoc();
  KernelBuilder k(b, loc);
  // The one-element views of the buffers the run reads and writes, and a
  // one-element buffer for each value used after it.
  llvm::MapVector<Value, Value> views;
  auto viewOf = [&](Value buffer) -> Value {
    auto it = views.find(buffer);
    if (it != views.end())
      return it->second;
    return views[buffer] = singleElementView(k, buffer);
  };
  for (Operation *op : run_) {
    if (auto load = dyn_cast<memref::LoadOp>(op))
      viewOf(load.getMemRef());
    else if (auto store = dyn_cast<memref::StoreOp>(op))
      viewOf(store.getMemRef());
  }
  SmallVector<std::pair<Value, Value>> escaping; // value, its buffer
  for (Operation *op : run_)
    for (Value v : op->getResults())
      if (llvm::any_of(v.getUsers(), [&](Operation *user) {
            return !members.contains(user);
          }))
        escaping.push_back({v, memref::AllocOp::create(
                                   b, loc, MemRefType::get({1}, v.getType()))});
  for (auto &[v, buffer] : escaping)
    viewOf(buffer);
  k.parallel({1}, [&](KernelBuilder &k, ValueRange iv) {
    OpBuilder &nb = k.builder();
    for (Operation *op : run_) {
      op->moveBefore(nb.getInsertionBlock(), nb.getInsertionPoint());
      if (auto load = dyn_cast<memref::LoadOp>(op)) {
        if (Value view = views.lookup(load.getMemRef())) {
          load.getMemrefMutable().assign(view);
          load.getIndicesMutable().assign(iv);
        }
      } else if (auto store = dyn_cast<memref::StoreOp>(op)) {
        if (Value view = views.lookup(store.getMemRef())) {
          store.getMemrefMutable().assign(view);
          store.getIndicesMutable().assign(iv);
        }
      }
    }
    for (auto &[v, buffer] : escaping)
      members.insert(
          memref::StoreOp::create(nb, loc, v, views.lookup(buffer), iv));
  });
  // The uses after the nest read the buffer: once at the start of each
  // nest that uses it (or in front of it: loadBeforeNests), else right
  // before the user.
  Block *block = before->getBlock();
  auto load = [&](OpBuilder &at, Value buffer) -> Value {
    Value zero = arith::ConstantIndexOp::create(at, loc, 0);
    return memref::LoadOp::create(at, loc, buffer, ValueRange{zero});
  };
  for (auto &[v, buffer] : escaping) {
    llvm::DenseMap<Operation *, Value> nestLoads;
    for (OpOperand &use : llvm::make_early_inc_range(v.getUses())) {
      Operation *user = use.getOwner();
      if (members.contains(user))
        continue;
      Operation *ancestor = block->findAncestorOpInBlock(*user);
      if (auto nest = dyn_cast_if_present<scf::ParallelOp>(ancestor)) {
        Value &loaded = nestLoads[nest];
        if (!loaded) {
          OpBuilder at = loadBeforeNests
                             ? OpBuilder(nest)
                             : OpBuilder::atBlockBegin(nest.getBody());
          loaded = load(at, buffer);
          if (loadBeforeNests)
            readsBeforeNests.insert(loaded.getDefiningOp());
        }
        use.set(loaded);
        continue;
      }
      OpBuilder at(user);
      use.set(load(at, buffer));
    }
  }
  run_.clear();
  members.clear();
}

/// The scalar results of a host branch (scf.index_switch, scf.if) go
/// through one-element buffers: each region stores its values before its yield,
/// the code after the branch loads them. Returns the branch (a new op
/// without those results) or `op` unchanged.
static Operation *branchResultsToBuffers(Operation *op) {
  if (!isa<scf::IndexSwitchOp, scf::IfOp>(op) || op->getNumResults() == 0 ||
      !llvm::all_of(op->getResultTypes(),
                    [](Type t) { return t.isIntOrIndexOrFloat(); }))
    return op;
  Location loc = op->getLoc();
  OpBuilder b(op);
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  SmallVector<Value> buffers;
  for (Value result : op->getResults())
    buffers.push_back(memref::AllocOp::create(
        b, loc, MemRefType::get({1}, result.getType())));
  for (Region &region : op->getRegions()) {
    for (Block &block : region) {
      auto yield = cast<scf::YieldOp>(block.getTerminator());
      OpBuilder at(yield);
      for (auto [value, buffer] : llvm::zip(yield.getOperands(), buffers))
        memref::StoreOp::create(at, loc, value, buffer, ValueRange{zero});
      yield->setOperands({});
    }
  }
  Operation *branch;
  if (auto sw = dyn_cast<scf::IndexSwitchOp>(op)) {
    auto without = scf::IndexSwitchOp::create(b, loc, TypeRange{}, sw.getArg(),
                                              sw.getCases(), sw.getNumCases());
    without.getDefaultRegion().takeBody(sw.getDefaultRegion());
    for (auto [to, from] :
         llvm::zip(without.getCaseRegions(), sw.getCaseRegions()))
      to.takeBody(from);
    branch = without;
  } else {
    auto ifOp = cast<scf::IfOp>(op);
    auto without = scf::IfOp::create(b, loc, TypeRange{}, ifOp.getCondition(),
                                     /*withElse=*/false);
    without.getThenRegion().takeBody(ifOp.getThenRegion());
    without.getElseRegion().takeBody(ifOp.getElseRegion());
    branch = without;
  }
  b.setInsertionPointAfter(branch);
  for (auto [result, buffer] : llvm::zip(op->getResults(), buffers))
    result.replaceAllUsesWith(
        memref::LoadOp::create(b, loc, buffer, ValueRange{zero}).getResult());
  op->erase();
  return branch;
}

void DeviceScalars::run(Block &block) {
  for (Operation *op = &block.front(); op;) {
    if (op->hasTrait<OpTrait::IsTerminator>()) {
      flush(op);
      break;
    }
    if (!readsBeforeNests.contains(op) && joins(op)) {
      run_.push_back(op);
      members.insert(op);
      op = op->getNextNode();
      continue;
    }
    // Host values and new buffers do not end a run (a new buffer holds
    // nothing the run reads); views are pure.
    if (op->getNumRegions() == 0 &&
        (isMemoryEffectFree(op) || isa<memref::AllocOp>(op))) {
      op = op->getNextNode();
      continue;
    }
    flush(op);
    // Host control flow: its regions are host code too (a pipeline's stage
    // cases). A host loop carrying scalars is left as it is.
    if (isa<scf::IndexSwitchOp, scf::IfOp>(op) ||
        (isa<scf::ForOp>(op) && op->getNumResults() == 0)) {
      op = branchResultsToBuffers(op);
      for (Region &region : op->getRegions())
        for (Block &inner : region)
          DeviceScalars(loadBeforeNests).run(inner);
    }
    op = op->getNextNode();
  }
}

/// Whether `op` calls a function defined outside the module (the runtime).
static bool callsRuntime(Operation *op) {
  auto call = dyn_cast<func::CallOp>(op);
  if (!call)
    return false;
  auto callee = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
      op, call.getCalleeAttr());
  return callee && callee.isExternal();
}

/// A 1-D buffer the host fills with constants for runtime calls only (a
/// gradient bucket's parameter list, which trx_all_reduce_grads reads on
/// the host) is a table of the program, not device data: it becomes a
/// private constant memref.global (host memory: nothing to store, and on
/// the GPU nothing to wait for). Applies when each element is stored once,
/// by a constant at a constant index, in the buffer's block, before any
/// runtime call (directly or through a memref.cast) reads it.
static void constantTablesToGlobals(func::FuncOp fn) {
  auto module = fn->getParentOfType<ModuleOp>();
  SymbolTable symbols(module);
  SmallVector<memref::AllocOp> allocs;
  fn.walk([&](memref::AllocOp alloc) { allocs.push_back(alloc); });
  for (memref::AllocOp alloc : allocs) {
    MemRefType type = alloc.getType();
    if (type.getRank() != 1 || !type.hasStaticShape() ||
        !type.getLayout().isIdentity() || !type.getElementType().isIntOrFloat())
      continue;
    Block *block = alloc->getBlock();
    SmallVector<Attribute> values(type.getNumElements());
    SmallVector<Operation *> stores, readers;
    bool isTable = true;
    for (Operation *user : alloc->getUsers()) {
      if (auto store = dyn_cast<memref::StoreOp>(user)) {
        Attribute value;
        std::optional<int64_t> index =
            getConstantIntValue(store.getIndices().front());
        if (store.getMemRef() != alloc.getResult() ||
            store->getBlock() != block ||
            !matchPattern(store.getValue(), m_Constant(&value)) || !index ||
            *index < 0 || *index >= type.getNumElements() || values[*index]) {
          isTable = false;
          break;
        }
        values[*index] = value;
        stores.push_back(store);
      } else if (isa<memref::CastOp>(user) &&
                 llvm::all_of(user->getUsers(), callsRuntime)) {
        llvm::append_range(readers, user->getUsers());
      } else if (callsRuntime(user)) {
        readers.push_back(user);
      } else {
        isTable = false;
        break;
      }
    }
    if (!isTable || stores.empty() || llvm::is_contained(values, Attribute()))
      continue;
    if (llvm::any_of(readers, [&](Operation *reader) {
          Operation *at = block->findAncestorOpInBlock(*reader);
          return !at || llvm::any_of(stores, [&](Operation *store) {
            return !store->isBeforeInBlock(at);
          });
        }))
      continue;
    OpBuilder b(module.getBodyRegion());
    b.setInsertionPoint(fn);
    auto global = memref::GlobalOp::create(
        b, alloc.getLoc(), (fn.getSymName() + "_table").str(),
        b.getStringAttr("private"), type,
        DenseElementsAttr::get(
            RankedTensorType::get(type.getShape(), type.getElementType()),
            values),
        /*constant=*/true, /*alignment=*/IntegerAttr());
    symbols.insert(global); // renames on a clash: <fn>_table_0, ...
    b.setInsertionPoint(alloc);
    Value table = memref::GetGlobalOp::create(b, alloc.getLoc(), type,
                                              global.getSymName());
    for (Operation *store : stores)
      store->erase();
    alloc.replaceAllUsesWith(table);
    alloc.erase();
  }
}

/// See DeviceScalars.
static void sinkHostScalars(func::FuncOp fn, bool loadBeforeNests) {
  for (Block &block : fn.getBody())
    DeviceScalars(loadBeforeNests).run(block);
}

/// Makes every buffer `fn` returns one it owns, so the caller can free it:
/// a returned value that is not a buffer allocated in `fn` (an argument, a
/// view of a runtime state buffer or of another buffer) or that is
/// returned twice is copied into a new buffer first. Entry points return
/// scalars and are left alone.
static void ownReturnedBuffers(func::FuncOp fn) {
  fn.walk([&](func::ReturnOp ret) {
    llvm::SmallPtrSet<Value, 8> seen;
    OpBuilder b(ret);
    for (OpOperand &operand : ret->getOpOperands()) {
      Value v = operand.get();
      auto type = dyn_cast<MemRefType>(v.getType());
      if (!type)
        continue;
      if (v.getDefiningOp<memref::AllocOp>() && seen.insert(v).second)
        continue;
      KernelBuilder k(b, ret.getLoc());
      Value copy = k.alloc(type);
      Value from = k.flat(v), to = k.flat(copy);
      k.parallel({type.getNumElements()}, [&](KernelBuilder &k, ValueRange i) {
        k.store(k.load(from, i), to, i);
      });
      operand.set(copy);
    }
  });
}

/// Brackets each call of a stage function in the pipeline schedule `step`
/// with the runtime's trace calls (kind 0 for `@stage<s>_forward`, 1 for
/// `@stage<s>_backward`, 2 for `@stage<s>_weight`; the micro-batch is the
/// call's rank among the calls of that function, as every schedule runs each
/// stage's forwards, and its backwards, in micro-batch order; the chunk is the
/// function's `dist.chunk`, -1 without).
static void traceStageCalls(func::FuncOp step) {
  llvm::StringMap<int64_t> seen;
  step.walk([&](func::CallOp call) {
    StringRef callee = call.getCallee();
    if (!callee.starts_with("stage"))
      return;
    int64_t kind = callee.ends_with("_forward")  ? TRX_PASS_FORWARD
                   : callee.ends_with("_weight") ? TRX_PASS_WEIGHT
                                                 : TRX_PASS_BACKWARD;
    int64_t microBatch = seen[callee]++;
    int64_t chunk = -1;
    if (auto fn = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
            call, call.getCalleeAttr()))
      if (auto attr = fn->getAttrOfType<IntegerAttr>(
              mlir::dist::DistDialect::kChunkAttrName))
        chunk = attr.getInt();
    OpBuilder b(call);
    Location loc = call.getLoc();
    auto i64 = [&](int64_t v) -> Value {
      return arith::ConstantOp::create(b, loc, b.getI64IntegerAttr(v));
    };
    func::CallOp::create(b, loc, ::triax::rt::kTraceBegin, TypeRange{},
                         ValueRange{i64(kind), i64(microBatch), i64(chunk)});
    b.setInsertionPointAfter(call);
    func::CallOp::create(b, loc, ::triax::rt::kTraceEnd, TypeRange{},
                         ValueRange{});
  });
}

/// Frees each buffer right after its last use (through any view of it), so
/// a step holds only the activations still needed. The buffers are those
/// the kernels allocated and those a call of a model function returned
/// (owned by the caller, see ownReturnedBuffers); a buffer returned or
/// yielded out of its block is not freed there.
static void insertDeallocs(func::FuncOp fn) {
  SmallVector<Value> owned;
  fn.walk([&](Operation *op) {
    if (isa<memref::AllocOp>(op)) {
      owned.push_back(op->getResult(0));
    } else if (auto call = dyn_cast<func::CallOp>(op)) {
      auto callee = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
          call, call.getCalleeAttr());
      if (callee && !callee.isExternal())
        for (Value result : call.getResults())
          if (isa<MemRefType>(result.getType()))
            owned.push_back(result);
    }
  });
  for (Value buffer : owned) {
    Operation *def = buffer.getDefiningOp();
    Block *block = def->getBlock();
    Operation *last = def;
    bool escapes = false;
    SmallVector<Value> worklist = {buffer};
    while (!worklist.empty()) {
      Value value = worklist.pop_back_val();
      for (Operation *user : value.getUsers()) {
        if (isa<func::ReturnOp, scf::YieldOp>(user) &&
            user->getBlock() == block)
          escapes = true;
        if (auto view = dyn_cast<ViewLikeOpInterface>(user))
          if (view.getViewSource() == value)
            for (Value result : user->getResults())
              worklist.push_back(result);
        Operation *ancestor = block->findAncestorOpInBlock(*user);
        if (ancestor && last->isBeforeInBlock(ancestor))
          last = ancestor;
      }
    }
    if (escapes)
      continue;
    OpBuilder b(last->getContext());
    b.setInsertionPointAfter(last);
    memref::DeallocOp::create(b, def->getLoc(), buffer);
  }
}

/// Whether `op` is a parallel nest of exactly one iteration (constant
/// bounds): a device scalar's kernel (DeviceScalars, a loss or norm sum
/// over one row).
static bool isSingleIteration(Operation *op) {
  auto loop = dyn_cast<scf::ParallelOp>(op);
  if (!loop)
    return false;
  for (auto [lb, ub, step] :
       llvm::zip(loop.getLowerBound(), loop.getUpperBound(), loop.getStep())) {
    std::optional<int64_t> l = getConstantIntValue(lb),
                           u = getConstantIntValue(ub),
                           s = getConstantIntValue(step);
    if (!l || !u || !s || *s <= 0 || *u <= *l || *u - *l > *s)
      return false;
  }
  return true;
}

/// The loop nests of `block` in order, with those of the host branches
/// (scf.index_switch, scf.if: a pipeline's stage cases) it holds.
static void collectNests(Block &block, SmallVectorImpl<Operation *> &loops) {
  for (Operation &op : block) {
    if (isa<scf::ParallelOp, scf::ForOp>(op))
      loops.push_back(&op);
    else if (isa<scf::IndexSwitchOp, scf::IfOp>(op))
      for (Region &region : op.getRegions())
        for (Block &inner : region)
          collectNests(inner, loops);
  }
}

/// Moves each loop nest of `fn` outside other loops into a private function
/// of its own (`<fn>_kernel<N>`) and calls it. The entry functions of a
/// 96-layer model hold thousands of loop nests; as separate functions the
/// later lowering (SCF to CFG in particular) and LLVM's optimizer stay
/// linear in the model size, and each kernel is a unit the GPU outlining
/// can take as it is. Constants are re-created inside the kernel instead of
/// passed, except the upper bounds of a nest of one iteration: canonicalize
/// would inline that nest's body into the kernel function (scf.parallel's
/// single-iteration folding) and so leave a device scalar's code on the
/// host; passed in (as i64 arguments, 1 at the call), they keep it a kernel
/// of one thread (or one block).
static void outlineKernels(func::FuncOp fn) {
  SmallVector<Operation *> loops;
  collectNests(fn.front(), loops);
  OpBuilder b(fn.getContext());
  b.setInsertionPointAfter(fn);
  for (auto [n, loop] : llvm::enumerate(loops)) {
    llvm::SetVector<Value> captures;
    for (Value v : loop->getOperands())
      captures.insert(v);
    getUsedValuesDefinedAbove(loop->getRegions(), captures);
    SmallVector<Value> args;
    SmallVector<Operation *> constants;
    for (Value v : captures) {
      Operation *def = v.getDefiningOp();
      if (def && def->hasTrait<OpTrait::ConstantLike>())
        constants.push_back(def);
      else
        args.push_back(v);
    }
    // A nest of one iteration: its upper bounds, passed as i64 constants.
    SmallVector<Value> operands = args;
    unsigned bounds = 0;
    if (isSingleIteration(loop)) {
      OpBuilder at(loop);
      for (Value ub : cast<scf::ParallelOp>(loop).getUpperBound())
        operands.push_back(arith::ConstantOp::create(
            at, loop->getLoc(),
            at.getI64IntegerAttr(*getConstantIntValue(ub))));
      bounds = operands.size() - args.size();
    }
    Location loc = loop->getLoc();
    auto kernel = func::FuncOp::create(
        b, loc, (fn.getName() + "_kernel" + Twine(n)).str(),
        b.getFunctionType(ValueRange(operands).getTypes(),
                          loop->getResultTypes()));
    kernel.setPrivate();
    kernel->setAttr(kKernelFuncAttr, b.getUnitAttr());
    Block *entry = kernel.addEntryBlock();
    OpBuilder body = OpBuilder::atBlockBegin(entry);
    IRMapping mapping;
    mapping.map(args, entry->getArguments().take_front(args.size()));
    for (Operation *constant : constants)
      body.clone(*constant, mapping);
    Operation *moved = body.clone(*loop, mapping);
    if (bounds) {
      SmallVector<Value> ubs;
      for (BlockArgument bound : entry->getArguments().take_back(bounds))
        ubs.push_back(
            arith::IndexCastOp::create(body, loc, body.getIndexType(), bound));
      moved->moveAfter(ubs.back().getDefiningOp());
      cast<scf::ParallelOp>(moved).getUpperBoundMutable().assign(ubs);
    }
    func::ReturnOp::create(body, loc, moved->getResults());
    OpBuilder call(loop);
    auto callOp = func::CallOp::create(call, loc, kernel, operands);
    loop->replaceAllUsesWith(callOp.getResults());
    loop->erase();
  }
}

namespace {

//===----------------------------------------------------------------------===//
// Structural patterns: parameters, constants, scalars, positions
//===----------------------------------------------------------------------===//

struct GetParamLowering : ParamPattern<GetParamOp> {
  using ParamPattern::ParamPattern;
  LogicalResult
  matchAndRewrite(GetParamOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    FailureOr<int64_t> index = paramIndex(op, op.getName());
    if (failed(index))
      return failure();
    KernelBuilder k(rewriter, op.getLoc());
    auto type = cast<MemRefType>(getTypeConverter()->convertType(op.getType()));
    rewriter.replaceOp(op, k.state(TRX_STATE_PARAM, *index, type));
    return success();
  }
};

struct SplatConstantLowering : OpConversionPattern<arith::ConstantOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(arith::ConstantOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto splat = dyn_cast<SplatElementsAttr>(op.getValue());
    auto type = dyn_cast<RankedTensorType>(op.getType());
    if (!splat || !type || !isa<FloatType>(type.getElementType()))
      return rewriter.notifyMatchFailure(op, "not a float tensor splat");
    KernelBuilder k(rewriter, op.getLoc());
    double value = splat.getSplatValue<APFloat>().convertToDouble();
    rewriter.replaceOp(op, k.allocFilled(type, value));
    return success();
  }
};

struct ExtractLowering : OpConversionPattern<tensor::ExtractOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(tensor::ExtractOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOpWithNewOp<memref::LoadOp>(op, adaptor.getTensor(),
                                                adaptor.getIndices());
    return success();
  }
};

struct PositionIdsLowering : OpConversionPattern<PositionIdsOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(PositionIdsOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    KernelBuilder k(rewriter, op.getLoc());
    RankedTensorType type = op.getType();
    // Sequence-parallel: this rank's slice starts at its group position
    // times the local sequence length.
    Value offset;
    if (op.getMeshAttr()) {
      FailureOr<int64_t> mask =
          axisMask(op, op.getMeshAttr(), op.getAxesAttr());
      if (failed(mask))
        return failure();
      offset = k.muli(groupPosition(k, *mask), k.index(type.getDimSize(1)));
    }
    Value out = k.alloc(type);
    Type elt = type.getElementType();
    k.parallel(type.getShape(), [&](KernelBuilder &k, ValueRange ivs) {
      Value s = offset ? k.addi(offset, ivs[1]) : ivs[1];
      Value pos = arith::IndexCastOp::create(k.builder(), k.getLoc(), elt, s);
      k.store(pos, out, ivs);
    });
    rewriter.replaceOp(op, out);
    return success();
  }
};

struct ConvertTriaxToKernelsPass
    : public mlir::triax::impl::ConvertTriaxToKernelsBase<
          ConvertTriaxToKernelsPass> {
  using Base::Base;
  void runOnOperation() override;
};

struct TriaxOutlineKernelsPass
    : public mlir::triax::impl::TriaxOutlineKernelsBase<
          TriaxOutlineKernelsPass> {
  void runOnOperation() override {
    SmallVector<func::FuncOp> entries;
    for (func::FuncOp fn : getOperation().getOps<func::FuncOp>())
      if (!fn.isExternal() && !fn->hasAttr(kKernelFuncAttr))
        entries.push_back(fn);
    for (func::FuncOp fn : entries)
      outlineKernels(fn);
  }
};

struct TriaxDedupeKernelsPass
    : public mlir::triax::impl::TriaxDedupeKernelsBase<TriaxDedupeKernelsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    // Each kernel's printed text with its name left out: the key of its
    // group (types, attributes and body included).
    llvm::StringMap<StringAttr> first;
    DenseMap<StringAttr, StringAttr> copyOf;
    SmallVector<func::FuncOp> copies;
    OpPrintingFlags flags;
    flags.useLocalScope();
    for (func::FuncOp fn : module.getOps<func::FuncOp>()) {
      if (!fn->hasAttr(kKernelFuncAttr) || fn.isExternal())
        continue;
      std::string text;
      llvm::raw_string_ostream os(text);
      fn->print(os, flags);
      // The name appears once, in the header: "... @<name>(".
      std::string name = ("@" + fn.getSymName() + "(").str();
      size_t at = text.find(name);
      if (at == std::string::npos)
        continue;
      text.replace(at, name.size(), "@(");
      auto [it, inserted] = first.try_emplace(text, fn.getSymNameAttr());
      if (!inserted) {
        copyOf[fn.getSymNameAttr()] = it->second;
        copies.push_back(fn);
      }
    }
    if (copies.empty())
      return;
    // One walk re-points every call; the copies are then unreferenced.
    module.walk([&](func::CallOp call) {
      auto it = copyOf.find(call.getCalleeAttr().getAttr());
      if (it != copyOf.end())
        call.setCalleeAttr(FlatSymbolRefAttr::get(it->second));
    });
    for (func::FuncOp fn : copies)
      fn.erase();
  }
};

} // namespace

void mlir::triax::kernels::populateStructuralPatterns(
    TypeConverter &converter, RewritePatternSet &patterns,
    const ParamIndex &params) {
  MLIRContext *ctx = patterns.getContext();
  patterns.add<GetParamLowering>(converter, ctx, params);
  patterns.add<SplatConstantLowering, ExtractLowering, PositionIdsLowering>(
      converter, ctx);
}

/// The type of parameter `param` on one rank: each dimension divided by
/// the sizes of the mesh axes its dist.sharding splits it over.
static RankedTensorType localType(ParamOp param) {
  RankedTensorType type = param.getTensorType();
  auto sharding = param->getAttrOfType<dist::ShardingAttr>(
      dist::DistDialect::kShardingAttrName);
  dist::MeshOp mesh =
      sharding ? dist::lookupMesh(param, sharding.getMesh()) : nullptr;
  if (!mesh)
    return type;
  return type.clone(
      sharding.getLocalShape(type.getShape(), [&](StringRef axis) {
        return mesh.getAxisSize(axis).value_or(1);
      }));
}

void ConvertTriaxToKernelsPass::runOnOperation() {
  ModuleOp module = getOperation();
  if (attention != "flash" && attention != "flash-mma" &&
      attention != "batched-gemm" && attention != "cudnn") {
    module.emitError("convert-triax-to-kernels: unknown attention '")
        << attention << "'; expected flash, flash-mma, batched-gemm or cudnn";
    return signalPassFailure();
  }
  std::optional<ColumnSumForm> columnSumForm = parseColumnSumForm(columnSums);
  if (!columnSumForm) {
    module.emitError("convert-triax-to-kernels: unknown column-sums '")
        << columnSums << "'; expected columns, rows or chunks";
    return signalPassFailure();
  }
  if (embeddingGradThreads < 0) {
    module.emitError("convert-triax-to-kernels: embedding-grad-threads=")
        << int64_t(embeddingGradThreads)
        << " is not a count (expected N >= 1 iterations, or 0: one per "
           "feature)";
    return signalPassFailure();
  }
  SmallVector<ModelOp> models = llvm::to_vector(module.getOps<ModelOp>());
  if (models.size() != 1) {
    module.emitError("convert-triax-to-kernels expects exactly one "
                     "triax.model, found ")
        << models.size();
    return signalPassFailure();
  }
  ModelOp model = models.front();
  ParamIndex params;
  for (auto [i, param] : llvm::enumerate(model.getParams())) {
    params[param.getSymName()] = i;
    if (param->hasAttr(dist::DistDialect::kZeroAttrName))
      params.zeroSharded.insert(param.getSymName());
    params.localTypes[param.getSymName()] = localType(param);
  }
  // With pipeline parallelism (dist-pipeline ran), @pipeline_step is the
  // training step: each rank runs its stage's part of the micro-batch
  // schedule. @forward and @forward_backward read every stage's
  // parameters, which a rank no longer holds: they are not exported.
  auto pipelineStep = model.getPipelineStep();
  if (elementwiseInPlace || lossGradInPlace)
    module.walk([&](func::FuncOp fn) {
      markOverwrites(fn, elementwiseInPlace, lossGradInPlace);
    });
  if (!pipelineStep)
    exportEntry(model.getForward(), module, ::triax::rt::kForwardEntry,
                fuseOptimizer);
  std::pair<StringRef, StringRef> entries[] = {
      {pipelineStep ? ModelOp::kPipelineStepName
                    : ModelOp::kForwardBackwardName,
       ::triax::rt::kForwardBackwardEntry},
      {ModelOp::kOptimizerStepName, ::triax::rt::kOptimizerStepEntry}};
  for (auto [name, entry] : entries)
    if (auto fn = model.lookupSymbol<func::FuncOp>(name))
      exportEntry(fn, module, entry, fuseOptimizer);
  // The functions the entries call (the pipeline's stage functions) move
  // to the module too, private; the buffers they return belong to the
  // caller.
  SmallVector<func::FuncOp> callees;
  if (pipelineStep)
    for (func::FuncOp fn : model.getOps<func::FuncOp>())
      if (fn.getSymName().starts_with("stage"))
        callees.push_back(fn);
  for (func::FuncOp fn : callees) {
    inlineBlocks(fn);
    hoistParamCopies(fn, fuseOptimizer);
    fn->moveBefore(module.getBody(), module.getBody()->end());
    fn.setPrivate();
  }
  if (pipelineStep)
    traceStageCalls(pipelineStep);
  // What stays in the model is not part of the program (the whole-model
  // functions a pipeline replaced): it goes now, before the conversion.
  for (func::FuncOp fn : llvm::to_vector(model.getOps<func::FuncOp>()))
    fn.erase();
  if (accumulateInGemm)
    for (func::FuncOp fn : module.getOps<func::FuncOp>())
      splitAccumulatedSums(fn);
  // (After the blocks are inlined: a layer's forward and backward, and the
  // saved values between them, are then one function's.)
  if (fuseProjectionsOption)
    for (func::FuncOp fn : module.getOps<func::FuncOp>())
      if (!fn.isExternal())
        fuseProjections(fn);
  // Parameter reads keep referring to the model's symbols until they are
  // rewritten; the model goes once the conversion is done.
  declareRuntimeFunctions(module);

  MLIRContext *ctx = &getContext();
  TypeConverter converter;
  converter.addConversion([](Type type) { return type; });
  converter.addConversion([](RankedTensorType type) -> Type {
    return MemRefType::get(type.getShape(), type.getElementType());
  });

  ConversionTarget target(*ctx);
  target.addLegalDialect<arith::ArithDialect, math::MathDialect,
                         memref::MemRefDialect, scf::SCFDialect>();
  // The tensor-core attention kernels (attention=flash-mma) are gpu.launch
  // ops of NVVM MMAs.
  target
      .addLegalDialect<gpu::GPUDialect, NVVM::NVVMDialect, LLVM::LLVMDialect>();
  // The CPU flash kernels' dot products (vector-dots).
  target.addLegalDialect<vector::VectorDialect>();
  target.addIllegalDialect<TriaxDialect, tensor::TensorDialect>();
  target.addLegalOp<ModelOp, ParamOp>();
  // Collectives become runtime calls; the mesh stays until they are
  // lowered (they look up its axis order) and goes with the model.
  target.addIllegalDialect<dist::DistDialect>();
  target.addLegalOp<dist::MeshOp>();
  target.addDynamicallyLegalOp<arith::ConstantOp>(
      [](arith::ConstantOp op) { return !isa<TensorType>(op.getType()); });
  target.addDynamicallyLegalOp<func::FuncOp>([&](func::FuncOp op) {
    return converter.isSignatureLegal(op.getFunctionType());
  });
  target.addDynamicallyLegalOp<func::ReturnOp, func::CallOp>(
      [&](Operation *op) { return converter.isLegal(op); });

  RewritePatternSet patterns(ctx);
  populateFunctionOpInterfaceTypeConversionPattern<func::FuncOp>(patterns,
                                                                 converter);
  populateReturnOpTypeConversionPattern(patterns, converter);
  populateCallOpTypeConversionPattern(patterns, converter);
  scf::populateSCFStructuralTypeConversionsAndLegality(converter, patterns,
                                                       target);
  populateStructuralPatterns(converter, patterns, params);
  populateLinearPatterns(converter, patterns, geluEpilogue, &params,
                         accumulateInGemm, *columnSumForm);
  populateElementwisePatterns(converter, patterns, fuseOptimizer,
                              kernelParamBytes);
  populateEmbeddingPatterns(converter, patterns, embeddingGradThreads,
                            accumulateInGemm ? &params : nullptr);
  populateNormPatterns(converter, patterns, *columnSumForm,
                       accumulateInGemm ? &params : nullptr);
  populateAttentionPatterns(converter, patterns, attention, vectorDots,
                            keyBlocks);
  populateLossPatterns(converter, patterns, rowLanes);
  populateOptimizerPatterns(converter, patterns, params, fuseOptimizer,
                            kernelParamBytes);
  populateCollectivePatterns(converter, patterns);
  populateMoEPatterns(converter, patterns,
                      accumulateInGemm ? &params : nullptr);
  populateZeroPatterns(converter, patterns, params, fuseBucketCopies,
                       kernelParamBytes);
  populatePipelinePatterns(converter, patterns);
  populateViewPatterns(converter, patterns);
  if (failed(applyPartialConversion(module, target, std::move(patterns))))
    return signalPassFailure();
  model.erase();
  for (dist::MeshOp mesh : llvm::to_vector(module.getOps<dist::MeshOp>()))
    mesh.erase();
  // The training step: its scalars stay on the device (RuntimeABI.h's
  // entries; the evaluation forward returns its loss to the host).
  for (auto [entry, accumulate] :
       {std::pair<StringRef, bool>{::triax::rt::kForwardBackwardEntry, true},
        {::triax::rt::kOptimizerStepEntry, false}})
    if (auto fn = module.lookupSymbol<func::FuncOp>(entry))
      if (failed(returnScalarThroughBuffer(fn, accumulate)))
        return signalPassFailure();
  SmallVector<func::FuncOp> lowered;
  for (func::FuncOp fn : module.getOps<func::FuncOp>())
    if (!fn.isExternal())
      lowered.push_back(fn);
  for (func::FuncOp fn : lowered) {
    constantTablesToGlobals(fn);
    if (fn.getSymName() != ::triax::rt::kForwardEntry)
      sinkHostScalars(fn, scalarsBeforeNests);
    ownReturnedBuffers(fn);
    insertDeallocs(fn);
  }
}
