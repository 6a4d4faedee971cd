//===- LaneReductions.cpp - sums and maxima of CPU loops in lanes ---------===//
//
// triax-lane-reductions (Passes.td has the contract): a sequential loop of
// a CPU kernel whose every loop-carried value is a scalar sum or maximum
// (a row's LayerNorm statistics, a gradient's square sum) is one chain of
// dependent adds, one element per add latency, which LLVM may not reorder.
// This pass unrolls such a loop by `lanes`, each copy of the body adding
// into its own accumulator, and combines the accumulators after the loop
// in a fixed tree: independent chains the CPU overlaps (and LLVM's SLP
// vectorizer may put in one register), in an order fixed by the pass, not
// by the machine.
//
//===----------------------------------------------------------------------===//

#include "triax/Conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/IRMapping.h"

#include <cmath>

namespace mlir::triax {
#define GEN_PASS_DEF_TRIAXLANEREDUCTIONS
#include "triax/Conversion/Passes.h.inc"
} // namespace mlir::triax

using namespace mlir;

namespace {

/// Loop bodies larger than this (operations, nested ones counted) are left
/// alone: their copies would outgrow what the lanes save.
constexpr int64_t kMaxBodyOps = 64;
/// Loops with more loop-carried values than this are left alone (the
/// column-block sums already carry independent accumulators).
constexpr unsigned kMaxCarried = 4;

/// The operation that folds iteration argument `arg` of `loop` into the
/// value yielded at its position: an arith.addf or arith.maximumf of a
/// scalar f32 or f64 with `arg` as one operand, whose result only the yield
/// uses, and `arg` used by nothing else.
Operation *combineOf(scf::ForOp loop, unsigned position) {
  BlockArgument arg = loop.getRegionIterArgs()[position];
  if (!arg.hasOneUse() || !isa<Float32Type, Float64Type>(arg.getType()))
    return nullptr;
  Operation *op = *arg.user_begin();
  if (!isa<arith::AddFOp, arith::MaximumFOp>(op) ||
      op->getBlock() != loop.getBody() || !op->getResult(0).hasOneUse())
    return nullptr;
  auto yield = cast<scf::YieldOp>(loop.getBody()->getTerminator());
  if (yield.getOperand(position) != op->getResult(0))
    return nullptr;
  return op;
}

/// `x` combined with `y` as `like` combines (its fastmath flags kept).
Value combine(OpBuilder &b, Operation *like, Value x, Value y) {
  OperationState state(like->getLoc(), like->getName());
  state.addOperands({x, y});
  state.addTypes(x.getType());
  state.addAttributes(like->getAttrs());
  return b.create(state)->getResult(0);
}

/// The lane that starts from a sum's or maximum's identity: -0 (x + -0 = x
/// for every x, +0 included) or -inf.
Value identityOf(OpBuilder &b, Operation *like, Type type) {
  auto f = cast<FloatType>(type);
  double v = isa<arith::AddFOp>(like) ? -0.0 : -INFINITY;
  return arith::ConstantOp::create(b, like->getLoc(), type,
                                   b.getFloatAttr(f, v));
}

/// Unrolls `loop` by `lanes` into per-lane accumulators (the file comment),
/// or leaves it as it is.
void splitIntoLanes(scf::ForOp loop, int64_t lanes) {
  std::optional<int64_t> lb = getConstantIntValue(loop.getLowerBound()),
                         ub = getConstantIntValue(loop.getUpperBound()),
                         step = getConstantIntValue(loop.getStep());
  unsigned carried = loop.getNumRegionIterArgs();
  if (!lb || !ub || !step || *step <= 0 || carried == 0 ||
      carried > kMaxCarried || (*ub - *lb) % *step != 0)
    return;
  int64_t trips = (*ub - *lb) / *step;
  if (trips < 2 * lanes || trips % lanes != 0)
    return;
  SmallVector<Operation *> combines;
  for (unsigned i = 0; i < carried; ++i) {
    Operation *op = combineOf(loop, i);
    if (!op)
      return;
    combines.push_back(op);
  }
  int64_t bodyOps = 0;
  loop.getBody()->walk([&](Operation *) { ++bodyOps; });
  if (bodyOps > kMaxBodyOps)
    return;

  OpBuilder b(loop);
  Location loc = loop.getLoc();
  // Lane u of value i at [i * lanes + u]: lane 0 starts from the loop's
  // initial value, the others from the identity.
  SmallVector<Value> inits;
  for (auto [i, init] : llvm::enumerate(loop.getInitArgs())) {
    inits.push_back(init);
    for (int64_t u = 1; u < lanes; ++u)
      inits.push_back(identityOf(b, combines[i], init.getType()));
  }
  Value wideStep =
      arith::ConstantIndexOp::create(b, loc, *step * lanes).getResult();
  auto split = scf::ForOp::create(
      b, loc, loop.getLowerBound(), loop.getUpperBound(), wideStep, inits,
      [&](OpBuilder &nb, Location, Value iv, ValueRange accs) {
        SmallVector<Value> next(accs.size());
        for (int64_t u = 0; u < lanes; ++u) {
          IRMapping map;
          Value at =
              u == 0 ? iv
                     : arith::AddIOp::create(
                           nb, loc, iv,
                           arith::ConstantIndexOp::create(nb, loc, *step * u))
                           .getResult();
          map.map(loop.getInductionVar(), at);
          for (unsigned i = 0; i < carried; ++i)
            map.map(loop.getRegionIterArgs()[i], accs[i * lanes + u]);
          for (Operation &op : loop.getBody()->without_terminator())
            nb.clone(op, map);
          for (unsigned i = 0; i < carried; ++i)
            next[i * lanes + u] = map.lookup(combines[i]->getResult(0));
        }
        scf::YieldOp::create(nb, loc, next);
      });
  // Lanes l and l + w/2 combined, w halving: for 8 lanes
  // ((0 + 4) + (2 + 6)) + ((1 + 5) + (3 + 7)).
  SmallVector<Value> results;
  for (unsigned i = 0; i < carried; ++i) {
    SmallVector<Value> level(split.getResults().begin() + i * lanes,
                             split.getResults().begin() + (i + 1) * lanes);
    while (level.size() > 1) {
      size_t half = level.size() / 2;
      for (size_t l = 0; l < half; ++l)
        level[l] = combine(b, combines[i], level[l], level[l + half]);
      level.resize(half);
    }
    results.push_back(level.front());
  }
  loop.replaceAllUsesWith(results);
  loop.erase();
}

struct TriaxLaneReductionsPass
    : public mlir::triax::impl::TriaxLaneReductionsBase<
          TriaxLaneReductionsPass> {
  using TriaxLaneReductionsBase::TriaxLaneReductionsBase;

  void runOnOperation() override {
    if (int64_t(lanes) < 2 || (int64_t(lanes) & (int64_t(lanes) - 1)) != 0) {
      getOperation().emitError()
          << "triax-lane-reductions: lanes must be a power of two >= 2, got "
          << int64_t(lanes);
      return signalPassFailure();
    }
    SmallVector<scf::ForOp> loops;
    getOperation().walk([&](func::FuncOp f) {
      if (f->hasAttr("triax_kernel"))
        f.walk([&](scf::ForOp loop) { loops.push_back(loop); });
    });
    // Inner loops first (the walk's post-order): an outer loop sees its
    // inner loops already split.
    for (scf::ForOp loop : loops)
      splitIntoLanes(loop, lanes);
  }
};

} // namespace
