//===- MapLoopsToGPU.cpp - Outermost scf.parallel nests to gpu.launch -----===//
//
// Each outermost scf.parallel of a function becomes a gpu.launch with one
// thread per iteration: the iteration space is linearized over a 1-D grid
// of `block-size`-thread blocks and each thread recovers its loop indices
// with the innermost dimension fastest, so that consecutive threads touch
// consecutive elements (coalesced accesses). With rows=block, a row-wise
// kernel (a 1-D nest over rows of scalar ops and row loops, each a
// reduction or elementwise) becomes one block per row instead, its
// reductions finished by gpu.all_reduce. Nests the GPU cannot run
// (reductions into results, calls, allocations in the body) stay on the
// host.
//
// Assumes the kernel-level IR of convert-triax-to-kernels: buffers are
// memrefs the runtime allocated (CUDA managed memory on this target), loop
// bounds are index values of the host function.
//
//===----------------------------------------------------------------------===//

#include "triax/Conversion/KernelsToGPU/Passes.h"
#include "triax/Conversion/RowReductions.h"

#include "WriteDisjointness.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/Target/LLVM/NVVM/Target.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"

#include <algorithm>

namespace mlir::triax {
#define GEN_PASS_DEF_TRIAXMAPLOOPSTOGPU
#include "triax/Conversion/KernelsToGPU/Passes.h.inc"
} // namespace mlir::triax

using namespace mlir;
namespace gpu_mapping = mlir::triax::gpu_mapping;

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

/// Replaces `loop` by a gpu.launch running one thread per iteration of the
/// dimensions in `parallel`; the other dimensions (those the disjointness
/// analysis could not prove) run as sequential loops inside each thread, in
/// their original order. The index arithmetic folds where the bounds are
/// constants (always, for the kernels of convert-triax-to-kernels), so the
/// launch gets constant sizes.
void mapToLaunch(scf::ParallelOp loop, int64_t blockSize,
                 const llvm::SmallBitVector &parallel) {
  OpBuilder b(loop);
  Location loc = loop.getLoc();
  // Trip count of each dimension: ceil((ub - lb) / step).
  SmallVector<Value> extents;
  Value total = arith::ConstantIndexOp::create(b, loc, 1);
  for (auto [d, bounds] : llvm::enumerate(llvm::zip(
           loop.getLowerBound(), loop.getUpperBound(), loop.getStep()))) {
    auto [lb, ub, step] = bounds;
    Value span = b.createOrFold<arith::SubIOp>(loc, ub, lb);
    Value extent = b.createOrFold<arith::CeilDivUIOp>(loc, span, step);
    extents.push_back(extent);
    if (parallel.test(d))
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

  // Delinearize the parallel dimensions, innermost fastest.
  b.setInsertionPointToStart(inside.thenBlock());
  IRMapping map;
  Value rest = id;
  unsigned rank = loop.getNumLoops();
  int outermostParallel = parallel.find_first();
  for (unsigned d = rank; d-- > 0;) {
    if (!parallel.test(d))
      continue;
    Value index = int(d) == outermostParallel
                      ? rest
                      : b.createOrFold<arith::RemUIOp>(loc, rest, extents[d]);
    if (int(d) != outermostParallel)
      rest = b.createOrFold<arith::DivUIOp>(loc, rest, extents[d]);
    Value scaled = b.createOrFold<arith::MulIOp>(loc, index, loop.getStep()[d]);
    Value iv =
        b.createOrFold<arith::AddIOp>(loc, loop.getLowerBound()[d], scaled);
    map.map(loop.getInductionVars()[d], iv);
  }
  // The sequential dimensions: loops inside the thread, outermost first.
  for (unsigned d = 0; d < rank; ++d) {
    if (parallel.test(d))
      continue;
    auto seq = scf::ForOp::create(b, loc, loop.getLowerBound()[d],
                                  loop.getUpperBound()[d], loop.getStep()[d]);
    map.map(loop.getInductionVars()[d], seq.getInductionVar());
    b.setInsertionPoint(seq.getBody()->getTerminator());
  }
  for (Operation &op : loop.getBody()->without_terminator())
    b.clone(op, map);
  loop.erase();
}

/// How a reduction loop's iter_arg is combined with each element: the
/// all_reduce operation, and the kind whose identity starts each thread's
/// partial result.
struct Combine {
  gpu::AllReduceOperation reduce;
  arith::AtomicRMWKind identity;
};

std::optional<Combine> combineOf(Operation *op) {
  using R = gpu::AllReduceOperation;
  using K = arith::AtomicRMWKind;
  if (isa<arith::AddFOp>(op))
    return Combine{R::ADD, K::addf};
  if (isa<arith::AddIOp>(op))
    return Combine{R::ADD, K::addi};
  if (isa<arith::MulFOp>(op))
    return Combine{R::MUL, K::mulf};
  if (isa<arith::MaximumFOp>(op))
    return Combine{R::MAXIMUMF, K::maximumf};
  if (isa<arith::MaxNumFOp>(op))
    return Combine{R::MAXNUMF, K::maxnumf};
  if (isa<arith::MinimumFOp>(op))
    return Combine{R::MINIMUMF, K::minimumf};
  if (isa<arith::MinNumFOp>(op))
    return Combine{R::MINNUMF, K::minnumf};
  return std::nullopt;
}

/// The combines of a reduction loop over a row: every yielded value is
/// `combine(%acc_i, x_i)` with %acc_i used only there (so the elements can
/// be combined in any order). None for any other loop.
std::optional<SmallVector<Combine>> rowReduction(scf::ForOp loop) {
  SmallVector<Combine> combines;
  auto yield = cast<scf::YieldOp>(loop.getBody()->getTerminator());
  for (auto [acc, yielded] :
       llvm::zip(loop.getRegionIterArgs(), yield.getOperands())) {
    Operation *op = yielded.getDefiningOp();
    std::optional<Combine> combine = op ? combineOf(op) : std::nullopt;
    if (!combine || !acc.hasOneUse() || acc.getUses().begin()->getOwner() != op)
      return std::nullopt;
    combines.push_back(*combine);
  }
  return combines;
}

/// A row loop that says it is an online (max, sum of exp) reduction
/// (kOnlineMaxSumExpAttr): two float iter_args, the max's type the
/// elements'.
bool isOnlineMaxSumExp(scf::ForOp loop) {
  if (!loop->hasAttr(mlir::triax::kOnlineMaxSumExpAttr) ||
      loop.getNumResults() != 2)
    return false;
  return llvm::all_of(loop.getResultTypes(),
                      [](Type t) { return isa<FloatType>(t); });
}

/// x `reduce` y, in the arithmetic of their type.
Value combineValues(OpBuilder &b, Location loc, gpu::AllReduceOperation reduce,
                    Value x, Value y) {
  using R = gpu::AllReduceOperation;
  bool isFloat = isa<FloatType>(x.getType());
  switch (reduce) {
  case R::ADD:
    return isFloat ? arith::AddFOp::create(b, loc, x, y).getResult()
                   : arith::AddIOp::create(b, loc, x, y).getResult();
  case R::MUL:
    return arith::MulFOp::create(b, loc, x, y);
  case R::MAXIMUMF:
    return arith::MaximumFOp::create(b, loc, x, y);
  case R::MAXNUMF:
    return arith::MaxNumFOp::create(b, loc, x, y);
  case R::MINIMUMF:
    return arith::MinimumFOp::create(b, loc, x, y);
  case R::MINNUMF:
    return arith::MinNumFOp::create(b, loc, x, y);
  default:
    llvm_unreachable("a combine rowReduction does not produce");
  }
}

/// The reduction of `v` over the 32 lanes of a warp, in every lane: a
/// butterfly of gpu.shuffle xor 16, 8, 4, 2, 1 (shfl.sync on NVVM). Lane i
/// combines v_i with v_(i^k) and lane i^k the same two in the other order,
/// so every lane ends with the same bits (the combines are commutative).
Value warpAllReduce(OpBuilder &b, Location loc, Value v,
                    gpu::AllReduceOperation reduce) {
  for (int32_t offset = 16; offset > 0; offset /= 2) {
    auto shuffle =
        gpu::ShuffleOp::create(b, loc, v, offset, 32, gpu::ShuffleMode::XOR);
    v = combineValues(b, loc, reduce, v, shuffle.getShuffleResult());
  }
  return v;
}

/// The reduction of one partial value per thread over the row's threads:
/// the block's (gpu.all_reduce) or the warp's (shuffles).
Value rowAllReduce(OpBuilder &b, Location loc, Value v,
                   gpu::AllReduceOperation reduce, bool warpPerRow) {
  if (warpPerRow)
    return warpAllReduce(b, loc, v, reduce);
  return gpu::AllReduceOp::create(
      b, loc, v, gpu::AllReduceOperationAttr::get(b.getContext(), reduce),
      b.getUnitAttr());
}

/// The block's (M, S) from each thread's partial state (m, s) of an online
/// (max, sum of exp) row loop, then combined with the loop's initial state
/// (m0, s0): M = max over the threads, S = sum of s exp(m - M), where a
/// state with s = 0 (a thread that saw no element: m = -inf) adds 0, not
/// exp(-inf - -inf) = NaN times 0.
std::pair<Value, Value> combineOnlineMaxSumExp(OpBuilder &b, Location loc,
                                               Value m, Value s, Value m0,
                                               Value s0, bool warpPerRow) {
  auto rescaled = [&](Value mi, Value si, Value to) {
    Value e =
        math::ExpOp::create(b, loc, arith::SubFOp::create(b, loc, mi, to));
    if (e.getType() != si.getType())
      e = arith::ExtFOp::create(b, loc, si.getType(), e);
    Value zero =
        arith::ConstantOp::create(b, loc, b.getFloatAttr(si.getType(), 0.0));
    Value empty =
        arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, si, zero);
    return arith::SelectOp::create(b, loc, empty, zero,
                                   arith::MulFOp::create(b, loc, si, e))
        .getResult();
  };
  Value all =
      rowAllReduce(b, loc, m, gpu::AllReduceOperation::MAXIMUMF, warpPerRow);
  Value sum = rowAllReduce(b, loc, rescaled(m, s, all),
                           gpu::AllReduceOperation::ADD, warpPerRow);
  Value max = arith::MaximumFOp::create(b, loc, all, m0);
  Value total = arith::AddFOp::create(b, loc, rescaled(all, sum, max),
                                      rescaled(m0, s0, max));
  return {max, total};
}

/// Whether `loop` is a row-wise kernel one block per row can run: a 1-D
/// nest whose body is scalar ops and sequential loops over the row, each
/// either a reduction (rowReduction) or an elementwise loop (no results).
bool isRowKernel(scf::ParallelOp loop) {
  if (loop.getNumLoops() != 1)
    return false;
  bool hasRowLoop = false;
  for (Operation &op : loop.getBody()->without_terminator()) {
    if (auto inner = dyn_cast<scf::ForOp>(op)) {
      if (inner.getNumResults() != 0 && !rowReduction(inner) &&
          !isOnlineMaxSumExp(inner))
        return false;
      hasRowLoop = true;
      continue;
    }
    if (op.getNumRegions() != 0)
      return false;
  }
  return hasRowLoop;
}

/// Whether a warp can reduce every row loop's partial results with 32-bit
/// shuffles (rows=warp): each result is an f32 or an i32.
bool warpReducible(scf::ParallelOp loop) {
  for (auto inner : loop.getBody()->getOps<scf::ForOp>())
    for (Type t : inner.getResultTypes())
      if (!t.isF32() && !t.isInteger(32))
        return false;
  return true;
}

/// Replaces the row kernel `loop` by a gpu.launch of one block per row
/// (rows=block) or one warp per row (rows=warp: blocks of maxBlockSize / 32
/// warps, threads (32, rows per block), a guard for the last block's rows
/// past the end). The row's threads split each row loop (thread t takes
/// elements t, t + B, ..., B the threads of a row), a reduction's partial
/// results are combined (gpu.all_reduce over the block: warp shuffles and
/// shared memory after convert-gpu-to-nvvm; over a warp: shuffles only)
/// and then with the loop's initial value, and a barrier follows each
/// elementwise loop (a later loop may read what it wrote; a warp's is
/// bar.warp.sync). Scalar ops run in every thread (the same values);
/// their stores run in the row's thread 0 only, followed by a barrier when
/// a row loop comes after them.
void mapRowsToBlocks(scf::ParallelOp loop, int64_t maxBlockSize,
                     bool warpPerRow) {
  // B: the longest row loop's trip count rounded up to a warp, at most
  // maxBlockSize (a 64-element row needs 64 threads, not 256); a warp's 32.
  int64_t blockSize = 32;
  for (auto inner : loop.getBody()->getOps<scf::ForOp>()) {
    std::optional<int64_t> lb = getConstantIntValue(inner.getLowerBound()),
                           ub = getConstantIntValue(inner.getUpperBound()),
                           step = getConstantIntValue(inner.getStep());
    int64_t want = maxBlockSize;
    if (lb && ub && step && *step > 0)
      want = ((std::max<int64_t>(*ub - *lb, 0) + *step - 1) / *step + 31) / 32 *
             32;
    blockSize = std::max(blockSize, std::min(want, maxBlockSize));
  }
  if (warpPerRow)
    blockSize = 32;
  const int64_t rowsPerBlock = warpPerRow ? maxBlockSize / 32 : 1;
  OpBuilder b(loop);
  Location loc = loop.getLoc();
  Value lb = loop.getLowerBound()[0], step = loop.getStep()[0];
  Value span = b.createOrFold<arith::SubIOp>(loc, loop.getUpperBound()[0], lb);
  Value rows = b.createOrFold<arith::CeilDivUIOp>(loc, span, step);
  std::optional<int64_t> knownRows = getConstantIntValue(rows);
  if (knownRows && *knownRows == 0) {
    loop.erase();
    return;
  }
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  Value block = arith::ConstantIndexOp::create(b, loc, blockSize);
  Value perBlock = arith::ConstantIndexOp::create(b, loc, rowsPerBlock);
  Value grid = b.createOrFold<arith::CeilDivUIOp>(loc, rows, perBlock);
  if (!knownRows) {
    Value zero = arith::ConstantIndexOp::create(b, loc, 0);
    Value nonEmpty =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ugt, rows, zero);
    auto guard = scf::IfOp::create(b, loc, nonEmpty, /*withElseRegion=*/false);
    b.setInsertionPointToStart(guard.thenBlock());
  }
  auto launch =
      gpu::LaunchOp::create(b, loc, grid, one, one, block, perBlock, one);
  b.setInsertionPointToStart(&launch.getBody().front());
  gpu::TerminatorOp::create(b, loc);
  b.setInsertionPointToStart(&launch.getBody().front());
  // The row number: the block's, or the block's warp's (rows=warp), whose
  // warps past the last row do nothing (a whole warp: its shuffles and
  // bar.warp.sync see all 32 lanes).
  Value rowNumber = launch.getBlockIds().x;
  if (warpPerRow) {
    rowNumber = b.createOrFold<arith::AddIOp>(
        loc, b.createOrFold<arith::MulIOp>(loc, rowNumber, perBlock),
        launch.getThreadIds().y);
    Value inRange = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult,
                                          rowNumber, rows);
    auto inside = scf::IfOp::create(b, loc, inRange, /*withElseRegion=*/false);
    b.setInsertionPointToStart(inside.thenBlock());
  }
  IRMapping map;
  Value row = b.createOrFold<arith::AddIOp>(
      loc, lb, b.createOrFold<arith::MulIOp>(loc, rowNumber, step));
  map.map(loop.getInductionVars()[0], row);
  Value tid = launch.getThreadIds().x;
  auto barrier = [&] {
    if (warpPerRow)
      NVVM::SyncWarpOp::create(
          b, loc, arith::ConstantIntOp::create(b, loc, -1, 32).getResult());
    else
      gpu::BarrierOp::create(b, loc);
  };

  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value first =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, tid, zero);
  for (Operation &op : loop.getBody()->without_terminator()) {
    auto inner = dyn_cast<scf::ForOp>(op);
    if (!inner) {
      // A store of the row's scalar code: thread 0 alone writes (a
      // read-modify-write of the row's element stays one), and a later row
      // loop that may read it waits at a barrier.
      if (isa<memref::StoreOp>(op)) {
        auto single =
            scf::IfOp::create(b, loc, first, /*withElseRegion=*/false);
        {
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPoint(single.thenBlock()->getTerminator());
          b.clone(op, map);
        }
        bool rowLoopLater = llvm::any_of(
            llvm::make_range(std::next(op.getIterator()),
                             loop.getBody()->without_terminator().end()),
            [](Operation &later) { return isa<scf::ForOp>(later); });
        if (rowLoopLater)
          barrier();
        continue;
      }
      b.clone(op, map);
      continue;
    }
    // This thread's share of the row: lb + tid * step, step * B, ...
    Value innerStep = map.lookupOrDefault(inner.getStep());
    Value start = b.createOrFold<arith::AddIOp>(
        loc, map.lookupOrDefault(inner.getLowerBound()),
        b.createOrFold<arith::MulIOp>(loc, tid, innerStep));
    Value stride = b.createOrFold<arith::MulIOp>(loc, innerStep, block);
    bool online = isOnlineMaxSumExp(inner);
    std::optional<SmallVector<Combine>> combines =
        online ? std::nullopt : rowReduction(inner);
    // Each thread's partial results start from the combine's identity.
    SmallVector<Value> inits;
    if (combines)
      for (auto [init, combine] : llvm::zip(inner.getInitArgs(), *combines))
        inits.push_back(
            arith::getIdentityValue(combine.identity, init.getType(), b, loc));
    if (online)
      inits = {arith::getIdentityValue(arith::AtomicRMWKind::maximumf,
                                       inner.getResult(0).getType(), b, loc),
               arith::getIdentityValue(arith::AtomicRMWKind::addf,
                                       inner.getResult(1).getType(), b, loc)};
    auto split = scf::ForOp::create(b, loc, start,
                                    map.lookupOrDefault(inner.getUpperBound()),
                                    stride, inits);
    {
      OpBuilder::InsertionGuard guard(b);
      // The original body, its yield included, replaces the default one.
      if (split.getBody()->mightHaveTerminator())
        split.getBody()->getTerminator()->erase();
      b.setInsertionPointToEnd(split.getBody());
      map.map(inner.getInductionVar(), split.getInductionVar());
      for (auto [from, to] :
           llvm::zip(inner.getRegionIterArgs(), split.getRegionIterArgs()))
        map.map(from, to);
      for (Operation &bodyOp : inner.getBody()->getOperations())
        b.clone(bodyOp, map);
    }
    if (inner.getNumResults() == 0) {
      // A later loop may read what this one wrote.
      barrier();
      continue;
    }
    if (online) {
      auto [max, sum] = combineOnlineMaxSumExp(
          b, loc, split.getResult(0), split.getResult(1),
          map.lookupOrDefault(inner.getInitArgs()[0]),
          map.lookupOrDefault(inner.getInitArgs()[1]), warpPerRow);
      map.map(inner.getResult(0), max);
      map.map(inner.getResult(1), sum);
      continue;
    }
    // The row's result, then the loop's own initial value.
    auto yield = cast<scf::YieldOp>(inner.getBody()->getTerminator());
    for (auto [i, combine] : llvm::enumerate(*combines)) {
      Value all =
          rowAllReduce(b, loc, split.getResult(i), combine.reduce, warpPerRow);
      Operation *original = yield.getOperand(i).getDefiningOp();
      IRMapping operands;
      Value acc = inner.getRegionIterArgs()[i];
      for (Value operand : original->getOperands())
        operands.map(operand, operand == acc
                                  ? map.lookupOrDefault(inner.getInitArgs()[i])
                                  : all);
      Operation *result = b.clone(*original, operands);
      map.map(inner.getResult(i), result->getResult(0));
    }
  }
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
    if (rows != "thread" && rows != "block" && rows != "warp") {
      getOperation().emitError() << "triax-map-loops-to-gpu: rows '" << rows
                                 << "' is not thread, block or warp";
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
      if (rows != "thread" && isRowKernel(loop)) {
        std::optional<gpu_mapping::UnprovedWrite> race =
            gpu_mapping::rowKernelRace(loop);
        if (!race) {
          // rows=warp: a warp per row where its reductions are 32-bit
          // shuffles, else a block.
          mapRowsToBlocks(loop, blockSize,
                          rows == "warp" && warpReducible(loop));
          continue;
        }
        // Splitting a row loop over a block would race: each row's loop
        // stays in one thread (the mapping below proves the rows apart).
        InFlightDiagnostic remark = loop.emitRemark()
                                    << "row kernel keeps one thread per row: "
                                       "splitting its row loop would race";
        remark.attachNote(race->op->getLoc()) << race->why;
      }
      SmallVector<gpu_mapping::UnprovedWrite> unproved;
      llvm::SmallBitVector parallel =
          gpu_mapping::provablyParallelDims(loop, unproved);
      if (parallel.none()) {
        reportRace(loop, unproved.front());
        return signalPassFailure();
      }
      for (const gpu_mapping::UnprovedWrite &write : unproved) {
        InFlightDiagnostic remark =
            loop.emitRemark()
            << "dimension " << write.dim
            << " runs sequentially in each thread: its iterations may write "
               "the same element";
        remark.attachNote(write.op->getLoc()) << write.why;
      }
      mapToLaunch(loop, blockSize, parallel);
    }
  }

  /// No dimension of `loop` can run in parallel: an error naming the
  /// kernel, the write and two iterations that (may) collide.
  void reportRace(scf::ParallelOp loop,
                  const gpu_mapping::UnprovedWrite &write) {
    auto kernel = loop->getParentOfType<func::FuncOp>();
    int d = write.dim;
    auto iteration = [&](int64_t offset) {
      std::string text = "(";
      for (unsigned i = 0; i < loop.getNumLoops(); ++i) {
        std::optional<int64_t> lb =
            getConstantIntValue(loop.getLowerBound()[i]);
        std::optional<int64_t> step = getConstantIntValue(loop.getStep()[i]);
        text += (i ? ", " : "") + std::string("d") + std::to_string(i) + " = ";
        text += lb ? std::to_string(*lb +
                                    (int(i) == d && step ? offset * *step : 0))
                   : std::string(int(i) == d ? "lb + step" : "lb");
      }
      return text + ")";
    };
    InFlightDiagnostic error =
        write.op->emitError()
        << "kernel '" << (kernel ? kernel.getSymName() : "?")
        << "' cannot run on the GPU without a race: iterations " << iteration(0)
        << " and " << iteration(1) << (write.certain ? " write" : " may write")
        << " the same element (" << write.why << "), and no dimension of the "
        << "nest is proved to write apart";
    error.attachNote(loop.getLoc()) << "the parallel loop nest";
  }
};

} // namespace
