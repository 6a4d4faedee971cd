//===- InsertHostSyncs.cpp - Wait for the device before host accesses -----===//
//
// On the CUDA target kernels and GEMMs are stream-ordered and asynchronous:
// the host function that launched them goes on at once. Code that stayed on
// the host after triax-map-loops-to-gpu (nests the mapping refused, plain
// loads and stores) reads and writes memory the device may still be using,
// so it must wait for the device first: a call to the runtime's
// trx_cuda_host_sync before the outermost host op that touches memory,
// skipped when nothing enqueued device work since the last one on the same
// path.
//
// A training step needs none: convert-triax-to-kernels keeps its scalars
// (the loss, the gradient norm and its sum, the clipping scale, a
// pipeline's mean loss) in device buffers and computes them in kernels, so
// after this pass the step's entries and everything they call hold no sync
// (test/cuda/no-host-in-step.test). What remains is outside the step: the
// evaluation forward returns its loss to the host, after one sync.
//
//===----------------------------------------------------------------------===//

#include "triax/Conversion/KernelsToGPU/Passes.h"

#include "triax/Conversion/KernelsToGPU/HostPrivate.h"
#include "triax/Conversion/RuntimeABI.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Interfaces/CallInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/DenseSet.h"

namespace mlir::triax {
#define GEN_PASS_DEF_TRIAXINSERTHOSTSYNCS
#include "triax/Conversion/KernelsToGPU/Passes.h.inc"
} // namespace mlir::triax

using namespace mlir;

namespace {

/// Runtime calls that only hand out views or positions (class TRX_VIEW in
/// triax_entries.def) and the sync itself: they enqueue no device work (a
/// sync before them is not needed, nor after them).
bool isQuietRuntimeCall(CallOpInterface call) {
  auto callee = dyn_cast_if_present<SymbolRefAttr>(call.getCallableForCallee());
  if (!callee)
    return false;
  std::optional<::triax::rt::EntryClass> cls =
      ::triax::rt::entryClass(callee.getLeafReference().getValue());
  return cls == ::triax::rt::EntryClass::View ||
         cls == ::triax::rt::EntryClass::HostSync;
}

/// Whether `op` itself (not its regions) may enqueue work on the device.
bool enqueues(Operation *op) {
  if (isa<gpu::LaunchOp, gpu::LaunchFuncOp>(op))
    return true;
  if (auto call = dyn_cast<CallOpInterface>(op))
    return !isQuietRuntimeCall(call);
  // The runtime zero-fills a new block on the stream.
  return isa<memref::AllocOp>(op);
}

/// Whether `op` itself reads or writes memory through a memref on the host.
bool accessesMemory(Operation *op) {
  if (isa<memref::AllocOp, memref::AllocaOp, memref::DeallocOp>(op))
    return false;
  auto effects = dyn_cast<MemoryEffectOpInterface>(op);
  if (!effects) {
    // Unknown effects: an op with memref operands may touch them.
    return !op->hasTrait<OpTrait::HasRecursiveMemoryEffects>() &&
           llvm::any_of(op->getOperandTypes(), llvm::IsaPred<MemRefType>);
  }
  SmallVector<MemoryEffects::EffectInstance> list;
  effects.getEffects(list);
  return llvm::any_of(list, [](const MemoryEffects::EffectInstance &e) {
    return isa<MemoryEffects::Read, MemoryEffects::Write>(e.getEffect());
  });
}

struct Contents {
  bool enqueues = false;
  bool accesses = false;
};

/// What the regions of `op` hold (gpu.launch bodies are device code).
Contents regionContents(Operation *op) {
  Contents c;
  for (Region &region : op->getRegions())
    region.walk([&](Operation *inner) {
      if (isa<gpu::LaunchOp>(inner)) {
        c.enqueues = true;
        return WalkResult::skip();
      }
      c.enqueues |= enqueues(inner);
      c.accesses |= accessesMemory(inner);
      return WalkResult::advance();
    });
  return c;
}

/// The buffer `op` loads from or stores to, if it is one of those.
Value accessedBuffer(Operation *op) {
  if (auto load = dyn_cast<memref::LoadOp>(op))
    return load.getMemRef();
  if (auto store = dyn_cast<memref::StoreOp>(op))
    return store.getMemRef();
  return {};
}

class Inserter {
public:
  explicit Inserter(func::FuncOp sync) : sync(sync) {}

  /// Inserts the syncs `block` needs, starting in state `synced`; returns
  /// the state at its end.
  bool run(Block &block, bool synced) {
    for (Operation &op : llvm::make_early_inc_range(block)) {
      if (isa<gpu::LaunchOp>(op)) {
        synced = false;
        continue;
      }
      if (op.getNumRegions() == 0) {
        if (enqueues(&op)) {
          synced = false;
          continue;
        }
        if (!accessesMemory(&op))
          continue;
        Value buffer = accessedBuffer(&op);
        // Once a sync follows its allocation, a host-private buffer's
        // accesses need no other.
        bool privateBuffer = buffer && ::triax::isHostPrivate(buffer);
        if (privateBuffer && settled.contains(buffer))
          continue;
        if (!synced) {
          insertBefore(&op);
          synced = true;
        }
        if (privateBuffer)
          settled.insert(buffer);
        continue;
      }
      Contents c = regionContents(&op);
      if (!c.enqueues) {
        // One sync for the whole op (a host loop: not per iteration).
        if ((c.accesses || accessesMemory(&op)) && !synced) {
          insertBefore(&op);
          synced = true;
        }
        continue;
      }
      // The regions launch too: handle them inside. A loop's body runs
      // again after its own launches, so every block starts unsynced.
      if (accessesMemory(&op) && !synced)
        insertBefore(&op);
      for (Region &region : op.getRegions())
        for (Block &inner : region)
          run(inner, false);
      synced = false;
    }
    return synced;
  }

  int64_t inserted = 0;

private:
  void insertBefore(Operation *op) {
    OpBuilder b(op);
    func::CallOp::create(b, op->getLoc(), sync, ValueRange{});
    ++inserted;
  }

  func::FuncOp sync;
  /// Host-private buffers a sync has followed since their allocation.
  llvm::DenseSet<Value> settled;
};

struct TriaxInsertHostSyncsPass
    : public mlir::triax::impl::TriaxInsertHostSyncsBase<
          TriaxInsertHostSyncsPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<func::FuncOp> functions;
    for (auto fn : module.getOps<func::FuncOp>())
      if (!fn.isExternal())
        functions.push_back(fn);
    func::FuncOp sync;
    bool declared = false;
    if (Operation *existing =
            SymbolTable::lookupSymbolIn(module, ::triax::rt::kHostSync)) {
      sync = dyn_cast<func::FuncOp>(existing);
      if (!sync ||
          sync.getFunctionType() != FunctionType::get(&getContext(), {}, {})) {
        existing->emitError()
            << "triax-insert-host-syncs: '" << ::triax::rt::kHostSync
            << "' exists and is not a function of type () -> ()";
        return signalPassFailure();
      }
    } else {
      OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
      sync = func::FuncOp::create(b, module.getLoc(), ::triax::rt::kHostSync,
                                  b.getFunctionType({}, {}));
      sync.setPrivate();
      declared = true;
    }
    Inserter inserter(sync);
    for (func::FuncOp fn : functions)
      for (Block &block : fn.getBody())
        inserter.run(block, /*synced=*/false);
    // Nothing to wait for anywhere: no declaration either.
    if (declared && inserter.inserted == 0)
      sync.erase();
  }
};

} // namespace
