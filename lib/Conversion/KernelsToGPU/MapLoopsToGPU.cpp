//===- MapLoopsToGPU.cpp - Outermost scf.parallel nests to gpu.launch -----===//
//
// Each outermost scf.parallel of a function becomes a gpu.launch with one
// thread per iteration: the iteration space is linearized over a 1-D grid
// of `block-size`-thread blocks and each thread recovers its loop indices
// with the innermost dimension fastest, so that consecutive threads touch
// consecutive elements (coalesced accesses). Nests the GPU cannot run
// (reductions, calls, allocations in the body) stay on the host.
//
// Assumes the kernel-level IR of convert-triax-to-kernels: buffers are
// memrefs the runtime allocated (CUDA managed memory on this target), loop
// bounds are index values of the host function.
//
//===----------------------------------------------------------------------===//

#include "triax/Conversion/KernelsToGPU/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/Target/LLVM/NVVM/Target.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"

namespace mlir::triax {
#define GEN_PASS_DEF_TRIAXMAPLOOPSTOGPU
#include "triax/Conversion/KernelsToGPU/Passes.h.inc"
} // namespace mlir::triax

using namespace mlir;

namespace {

/// Why `loop` cannot run as a GPU kernel, or "" when it can.
std::string whyNotOnGPU(scf::ParallelOp loop) {
  if (loop.getNumResults() != 0)
    return "it reduces into " + std::to_string(loop.getNumResults()) +
           " value(s)";
  std::string why;
  loop.getBody()->walk([&](Operation *op) {
    if (isa<CallOpInterface>(op))
      why = "its body calls '" + op->getName().getStringRef().str() + "'";
    else if (isa<memref::AllocOp, memref::AllocaOp, memref::DeallocOp>(op))
      why = "its body allocates or frees a buffer";
    return why.empty() ? WalkResult::advance() : WalkResult::interrupt();
  });
  return why;
}

/// Replaces `loop` by a gpu.launch running one thread per iteration. The
/// index arithmetic folds where the bounds are constants (always, for the
/// kernels of convert-triax-to-kernels), so the launch gets constant sizes.
void mapToLaunch(scf::ParallelOp loop, int64_t blockSize) {
  OpBuilder b(loop);
  Location loc = loop.getLoc();
  // Trip count of each dimension: ceil((ub - lb) / step).
  SmallVector<Value> extents;
  Value total = arith::ConstantIndexOp::create(b, loc, 1);
  for (auto [lb, ub, step] :
       llvm::zip(loop.getLowerBound(), loop.getUpperBound(), loop.getStep())) {
    Value span = b.createOrFold<arith::SubIOp>(loc, ub, lb);
    Value extent = b.createOrFold<arith::CeilDivUIOp>(loc, span, step);
    extents.push_back(extent);
    total = b.createOrFold<arith::MulIOp>(loc, total, extent);
  }
  std::optional<int64_t> knownTotal = getConstantIntValue(total);
  if (knownTotal && *knownTotal == 0) {
    loop.erase(); // nothing to run
    return;
  }
  Value block = arith::ConstantIndexOp::create(b, loc, blockSize);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  Value grid = b.createOrFold<arith::CeilDivUIOp>(loc, total, block);

  // An empty iteration space launches nothing (a 0-block grid is an error);
  // only a size unknown here needs the check at run time.
  if (!knownTotal) {
    Value zero = arith::ConstantIndexOp::create(b, loc, 0);
    Value nonEmpty =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ugt, total, zero);
    auto guard = scf::IfOp::create(b, loc, nonEmpty, /*withElseRegion=*/false);
    b.setInsertionPointToStart(guard.thenBlock());
  }
  auto launch = gpu::LaunchOp::create(b, loc, grid, one, one, block, one, one);

  b.setInsertionPointToStart(&launch.getBody().front());
  Value id = arith::AddIOp::create(
      b, loc, arith::MulIOp::create(b, loc, launch.getBlockIds().x, block),
      launch.getThreadIds().x);
  // The last block's threads past the end do nothing.
  Value inRange =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, id, total);
  auto inside = scf::IfOp::create(b, loc, inRange, /*withElseRegion=*/false);
  gpu::TerminatorOp::create(b, loc);

  // Delinearize, innermost dimension fastest.
  b.setInsertionPointToStart(inside.thenBlock());
  IRMapping map;
  Value rest = id;
  unsigned rank = loop.getNumLoops();
  for (unsigned d = rank; d-- > 0;) {
    Value index =
        d == 0 ? rest : b.createOrFold<arith::RemUIOp>(loc, rest, extents[d]);
    if (d != 0)
      rest = b.createOrFold<arith::DivUIOp>(loc, rest, extents[d]);
    Value scaled = b.createOrFold<arith::MulIOp>(loc, index, loop.getStep()[d]);
    Value iv =
        b.createOrFold<arith::AddIOp>(loc, loop.getLowerBound()[d], scaled);
    map.map(loop.getInductionVars()[d], iv);
  }
  for (Operation &op : loop.getBody()->without_terminator())
    b.clone(op, map);
  loop.erase();
}

struct TriaxMapLoopsToGPUPass
    : public mlir::triax::impl::TriaxMapLoopsToGPUBase<TriaxMapLoopsToGPUPass> {
  using Base::Base;

  void getDependentDialects(DialectRegistry &registry) const override {
    Base::getDependentDialects(registry);
    // The rest of triax-lower-cuda converts the kernels with the dialects'
    // ConvertToLLVM interfaces and serializes them through the #nvvm.target
    // interface and the LLVM IR translations; registered here so that any
    // tool running the pipeline (triax-opt, triaxc) needs no setup of its
    // own.
    registerAllExtensions(registry);
    NVVM::registerNVVMTargetInterfaceExternalModels(registry);
    // gpu-module-to-binary translates the gpu.module to LLVM IR.
    registerAllToLLVMIRTranslations(registry);
  }

  void runOnOperation() override {
    if (blockSize < 32 || blockSize > 1024 || blockSize % 32 != 0) {
      getOperation().emitError()
          << "triax-map-loops-to-gpu: block-size " << int64_t(blockSize)
          << " is not a multiple of 32 in [32, 1024]";
      return signalPassFailure();
    }
    SmallVector<scf::ParallelOp> outermost;
    getOperation().walk<WalkOrder::PreOrder>([&](scf::ParallelOp loop) {
      outermost.push_back(loop);
      return WalkResult::skip();
    });
    for (scf::ParallelOp loop : outermost) {
      std::string why = whyNotOnGPU(loop);
      if (!why.empty()) {
        loop.emitRemark() << "loop nest stays on the host: " << why;
        continue;
      }
      mapToLaunch(loop, blockSize);
    }
  }
};

} // namespace
