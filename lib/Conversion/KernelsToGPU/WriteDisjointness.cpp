//===- WriteDisjointness.cpp - Proving that GPU threads write apart -------===//
//
// Index analysis of every store and load of a loop nest against the
// induction variables the GPU mapping runs in parallel (WriteDisjointness.h
// says what it assumes). An index is "linear" when it is
//     sum_k c_k * iv_k + u
// over the mapped induction variables iv_k, with constant c_k and u the
// same in every thread (built from values defined outside the nest,
// constants, and pure ops and loads of unwritten buffers on those), plus
// terms e_j * w_j of sequential loops inside the nest with constant bounds
// (a thread's own offsets, a feature loop's c in [h * d + c]), whose most
// movement sum |e_j step_j| (trips_j - 1) the one-to-one test below must
// stay under. A store
// is disjoint over a set S of mapped variables when each of them is covered
// by an index position whose linear form is one-to-one in the variables it
// holds (one variable with c != 0; several: mixed-radix coefficients over
// known trip counts, so that a flattened [i * 64 + j] still counts). Two
// iterations that differ in a covered variable then write different
// elements. A data-dependent index (a token's row) counts when the scf.if
// around the access confines it to [L, L + W) with L linear in one variable
// whose next iteration moves L by at least W (the embedding backward's
// vocabulary slices). Reads are safe when a thread reads only the elements it
// writes itself (the same buffer at the same index values as one of its
// stores), or buffers the kernel does not write. A vector.load or
// vector.store of a 1-D vector of N elements counts as an access at its
// indices whose last one also moves by up to N - 1 (the elements it
// covers), as a sequential loop's term would.
//
//===----------------------------------------------------------------------===//

#include "WriteDisjointness.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/CheckedArithmetic.h"

#include <cstdlib>

using namespace mlir;
using namespace mlir::triax::gpu_mapping;

namespace {

/// A mapped induction variable: iv = lb + step * k, k in [0, trips).
struct Extent {
  int dim = -1; // the scf.parallel dimension, -1 for a row loop
  std::optional<int64_t> step, trips;
};

/// sum coeff[iv] * iv + sum local[w] * w + (a value uniform across
/// threads), the w variables of sequential loops inside the nest with
/// constant bounds (a thread's own offsets: a feature loop's c in
/// [h * d + c]).
struct Linear {
  llvm::SmallDenseMap<Value, int64_t, 4> coeff;
  llvm::SmallDenseMap<Value, int64_t, 4> local;
  bool uniform() const { return coeff.empty() && local.empty(); }
};

Value rootOf(Value memref) {
  while (auto view = memref.getDefiningOp<ViewLikeOpInterface>())
    memref = view.getViewSource();
  return memref;
}

/// A memory access the analysis indexes: memref.load and memref.store (one
/// element), vector.load and vector.store of a 1-D vector (`width`
/// consecutive elements from the indices on, along the last dimension).
struct Access {
  Operation *op = nullptr;
  Value memref;
  SmallVector<Value, 4> indices;
  int64_t width = 1;
  Value stored; // the value a store writes; null for a load

  bool isStore() const { return static_cast<bool>(stored); }
};

std::optional<Access> accessOf(Operation *op) {
  auto make = [&](Value memref, ValueRange indices, int64_t width,
                  Value stored) {
    return Access{op, memref, SmallVector<Value, 4>(indices), width, stored};
  };
  if (auto store = dyn_cast<memref::StoreOp>(op))
    return make(store.getMemRef(), store.getIndices(), 1,
                store.getValueToStore());
  if (auto load = dyn_cast<memref::LoadOp>(op))
    return make(load.getMemRef(), load.getIndices(), 1, Value());
  if (auto store = dyn_cast<vector::StoreOp>(op);
      store && store.getVectorType().getRank() == 1 &&
      !store.getIndices().empty())
    return make(store.getBase(), store.getIndices(),
                store.getVectorType().getNumElements(),
                store.getValueToStore());
  if (auto load = dyn_cast<vector::LoadOp>(op);
      load && load.getVectorType().getRank() == 1 && !load.getIndices().empty())
    return make(load.getBase(), load.getIndices(),
                load.getVectorType().getNumElements(), Value());
  return std::nullopt;
}

std::optional<int64_t> tripCount(Value lb, Value ub, Value step) {
  std::optional<int64_t> l = getConstantIntValue(lb),
                         u = getConstantIntValue(ub),
                         s = getConstantIntValue(step);
  if (!l || !u || !s || *s <= 0)
    return std::nullopt;
  // ceil((u - l) / s), without overflowing int64 (bounds such as
  // -2^63, which index constants can hold).
  std::optional<int64_t> span = llvm::checkedSub(*u, *l);
  if (!span)
    return std::nullopt;
  return *span <= 0 ? 0 : (*span - 1) / *s + 1;
}

/// Index arithmetic of one phase of a kernel (the code that runs between
/// two block-wide synchronizations) over its mapped induction variables.
class IndexAnalysis {
public:
  IndexAnalysis(Region &nest, const llvm::DenseMap<Value, Extent> &mapped,
                const llvm::DenseSet<Value> &writtenRoots)
      : nest(nest), mapped(mapped), writtenRoots(writtenRoots) {}

  std::optional<Linear> linear(Value v) {
    auto it = memo.find(v);
    if (it != memo.end())
      return it->second;
    std::optional<Linear> result = compute(v);
    memo[v] = result;
    return result;
  }

  /// The mapped variables that `indices` (of an access at `at`) separate:
  /// two iterations that differ in one of them access different elements.
  /// The access covers `lastWidth` elements from the last index on (a
  /// vector's lanes).
  llvm::SmallDenseSet<Value, 4> separated(ValueRange indices, Operation *at,
                                          int64_t lastWidth = 1) {
    llvm::SmallDenseSet<Value, 4> covered;
    SmallVector<Range> ranges = guardsOf(at);
    // [x / C, x mod C] together determine x (a row split into (head, row)
    // of attention's [heads, S, S] scratch): x counts as a position. Each
    // position's extra movement: the lanes past the last index (and past
    // x, when x mod C is the last index).
    SmallVector<Value> positions(indices.begin(), indices.end());
    SmallVector<int64_t> lanes(indices.size(), 0);
    if (!indices.empty())
      lanes.back() = lastWidth - 1;
    for (Value quotient : indices)
      if (auto div = quotient.getDefiningOp<arith::DivUIOp>())
        for (Value remainder : indices)
          if (auto rem = remainder.getDefiningOp<arith::RemUIOp>();
              rem && rem.getLhs() == div.getLhs() &&
              rem.getRhs() == div.getRhs() &&
              getConstantIntValue(div.getRhs()).value_or(0) > 0) {
            positions.push_back(div.getLhs());
            lanes.push_back(remainder == indices.back() ? lastWidth - 1 : 0);
          }
    for (auto [index, extra] : llvm::zip_equal(positions, lanes)) {
      std::optional<Linear> lin = linear(index);
      if (!lin) {
        // A data-dependent index confined by its guard to [L, L + W), L
        // moving by at least W from one iteration of a variable to the
        // next: the intervals of two iterations do not meet.
        for (const Range &range : ranges) {
          std::optional<Linear> low = linear(range.low);
          if (range.x != index || !low || low->coeff.size() != 1 ||
              !low->local.empty())
            continue;
          auto [iv, c] = *low->coeff.begin();
          std::optional<int64_t> step = mapped.lookup(iv).step;
          if (step && range.width > 0 &&
              range.width + extra <= std::abs(c * *step))
            covered.insert(iv);
        }
        continue;
      }
      if (lin->coeff.empty())
        continue;
      // The most the sequential loops' terms (and the lanes) move the index
      // within one thread: sum |c step| (trips - 1).
      std::optional<int64_t> noise = extra;
      for (auto [w, c] : lin->local) {
        auto loop =
            cast<scf::ForOp>(cast<BlockArgument>(w).getOwner()->getParentOp());
        std::optional<int64_t> trips = tripCount(
            loop.getLowerBound(), loop.getUpperBound(), loop.getStep());
        std::optional<int64_t> step = getConstantIntValue(loop.getStep());
        if (!trips || !step) {
          noise = std::nullopt;
          break;
        }
        *noise += std::abs(c * *step) * std::max<int64_t>(*trips - 1, 0);
      }
      if (!noise)
        continue;
      // Coefficients of the iteration numbers k (iv = lb + step * k).
      SmallVector<std::pair<int64_t, Value>> terms;
      bool known = true;
      for (auto [iv, c] : lin->coeff) {
        const Extent &e = mapped.lookup(iv);
        if (!e.step) {
          known = false;
          break;
        }
        terms.push_back({c * *e.step, iv});
      }
      if (!known)
        continue;
      if (terms.size() == 1) {
        if (std::abs(terms.front().first) > *noise)
          covered.insert(terms.front().second);
        continue;
      }
      // Mixed radix: with the terms sorted by |a|, each |a_i| exceeds the
      // largest span sum_{j<i} |a_j| (trips_j - 1) of the smaller ones
      // plus the sequential loops' noise.
      llvm::sort(terms, [](auto &x, auto &y) {
        return std::abs(x.first) < std::abs(y.first);
      });
      int64_t span = *noise;
      bool oneToOne = true;
      for (auto [a, iv] : terms) {
        std::optional<int64_t> trips = mapped.lookup(iv).trips;
        if (std::abs(a) <= span || !trips) {
          oneToOne = false;
          break;
        }
        span += std::abs(a) * std::max<int64_t>(*trips - 1, 0);
      }
      if (oneToOne)
        for (auto [a, iv] : terms)
          covered.insert(iv);
    }
    return covered;
  }

private:
  std::optional<Linear> uniformValue() { return Linear(); }

  /// `x` in [low, low + width): a conjunct `(x - low) <u width` of the
  /// condition of an scf.if whose then-region holds the access.
  struct Range {
    Value x, low;
    int64_t width;
  };
  SmallVector<Range> guardsOf(Operation *at) {
    SmallVector<Range> ranges;
    for (Operation *op = at; nest.isAncestor(op->getParentRegion());
         op = op->getParentOp()) {
      auto guard = dyn_cast<scf::IfOp>(op->getParentOp());
      if (!guard || op->getParentRegion() != &guard.getThenRegion())
        continue;
      SmallVector<Value> conjuncts{guard.getCondition()};
      while (!conjuncts.empty()) {
        Value c = conjuncts.pop_back_val();
        if (auto both = c.getDefiningOp<arith::AndIOp>()) {
          conjuncts.append({both.getLhs(), both.getRhs()});
          continue;
        }
        auto cmp = c.getDefiningOp<arith::CmpIOp>();
        if (!cmp || cmp.getPredicate() != arith::CmpIPredicate::ult)
          continue;
        auto diff = cmp.getLhs().getDefiningOp<arith::SubIOp>();
        std::optional<int64_t> width = getConstantIntValue(cmp.getRhs());
        if (diff && width)
          ranges.push_back({diff.getLhs(), diff.getRhs(), *width});
      }
    }
    return ranges;
  }

  std::optional<Linear> compute(Value v) {
    if (mapped.count(v)) {
      Linear l;
      l.coeff[v] = 1;
      return l;
    }
    if (!nest.isAncestor(v.getParentRegion()))
      return uniformValue(); // defined outside the nest
    if (matchPattern(v, m_Constant()))
      return uniformValue();
    Operation *op = v.getDefiningOp();
    if (!op) {
      // A sequential loop's variable with constant bounds: a bounded
      // offset within the thread; any other block argument (an iteration
      // argument, a loop with bounds that vary) is unknown.
      auto loop = dyn_cast<scf::ForOp>(
          cast<BlockArgument>(v).getOwner()->getParentOp());
      if (!loop || loop.getInductionVar() != v ||
          !tripCount(loop.getLowerBound(), loop.getUpperBound(),
                     loop.getStep()))
        return std::nullopt;
      Linear l;
      l.local[v] = 1;
      return l;
    }
    auto both = [&](Value a, Value b, int64_t sign) -> std::optional<Linear> {
      std::optional<Linear> x = linear(a), y = linear(b);
      if (!x || !y)
        return std::nullopt;
      for (auto [iv, c] : y->coeff)
        x->coeff[iv] += sign * c;
      for (auto [w, c] : y->local)
        x->local[w] += sign * c;
      for (auto *terms : {&x->coeff, &x->local})
        for (auto it = terms->begin(); it != terms->end();)
          it->second == 0 ? (void)terms->erase(it++) : (void)++it;
      return x;
    };
    if (auto add = dyn_cast<arith::AddIOp>(op))
      return both(add.getLhs(), add.getRhs(), 1);
    if (auto sub = dyn_cast<arith::SubIOp>(op))
      return both(sub.getLhs(), sub.getRhs(), -1);
    if (auto mul = dyn_cast<arith::MulIOp>(op)) {
      for (auto [factor, other] : {std::pair(mul.getLhs(), mul.getRhs()),
                                   std::pair(mul.getRhs(), mul.getLhs())}) {
        std::optional<int64_t> c = getConstantIntValue(factor);
        if (!c)
          continue;
        std::optional<Linear> x = linear(other);
        if (!x)
          return std::nullopt;
        if (*c == 0)
          return uniformValue();
        for (auto &term : x->coeff)
          term.second *= *c;
        for (auto &term : x->local)
          term.second *= *c;
        return x;
      }
    }
    // Widening casts keep the value (indices are small and non-negative).
    if (isa<arith::IndexCastOp, arith::IndexCastUIOp, arith::ExtSIOp,
            arith::ExtUIOp>(op))
      return linear(op->getOperand(0));
    // A load is uniform when every thread reads the same element of a
    // buffer nobody writes in the kernel.
    if (auto load = dyn_cast<memref::LoadOp>(op)) {
      if (writtenRoots.count(rootOf(load.getMemRef())))
        return std::nullopt;
      for (Value index : load.getIndices()) {
        std::optional<Linear> l = linear(index);
        if (!l || !l->uniform())
          return std::nullopt;
      }
      return uniformValue();
    }
    // Any other pure op on uniform values is uniform.
    if (op->getNumRegions() == 0 && isPure(op)) {
      for (Value operand : op->getOperands()) {
        std::optional<Linear> l = linear(operand);
        if (!l || !l->uniform())
          return std::nullopt;
      }
      return uniformValue();
    }
    return std::nullopt;
  }

  Region &nest;
  const llvm::DenseMap<Value, Extent> &mapped;
  const llvm::DenseSet<Value> &writtenRoots;
  llvm::DenseMap<Value, std::optional<Linear>> memo;
};

/// Whether `v` may depend on `iv` (through any chain of definitions in the
/// nest; inner loop variables and iteration arguments count as "may").
bool mayDependOn(Value v, Value iv, Region &nest, llvm::DenseSet<Value> &seen) {
  if (v == iv)
    return true;
  if (!seen.insert(v).second || !nest.isAncestor(v.getParentRegion()))
    return false;
  Operation *op = v.getDefiningOp();
  if (!op)
    return true;
  return llvm::any_of(op->getOperands(), [&](Value operand) {
    return mayDependOn(operand, iv, nest, seen);
  });
}

/// Whether `load`'s value flows only through pure ops into the values (not
/// the indices) of `stores`.
bool feedsOnlyStores(const Access &load, ArrayRef<Access> stores) {
  SmallVector<Value> worklist(load.op->getResults());
  llvm::DenseSet<Value> seen;
  while (!worklist.empty()) {
    Value v = worklist.pop_back_val();
    if (!seen.insert(v).second)
      continue;
    for (OpOperand &use : v.getUses()) {
      Operation *user = use.getOwner();
      if (const Access *store = llvm::find_if(
              stores, [&](const Access &s) { return s.op == user; });
          store != stores.end()) {
        if (use.get() != store->stored)
          return false;
        continue;
      }
      if (accessOf(user))
        return false; // a store of another phase, or an index
      if (user->getNumRegions() != 0 || !isPure(user))
        return false;
      worklist.append(user->result_begin(), user->result_end());
    }
  }
  return true;
}

std::string describeIndices(const Access &store) {
  std::string text = "[";
  llvm::raw_string_ostream os(text);
  llvm::interleaveComma(store.indices, os, [&](Value index) {
    if (std::optional<int64_t> c = getConstantIntValue(index))
      os << *c;
    else if (auto arg = dyn_cast<BlockArgument>(index))
      os << "%arg" << arg.getArgNumber();
    else
      os << index.getDefiningOp()->getName().getStringRef();
  });
  os << "]";
  return text;
}

/// One phase: `ops` run concurrently in the threads that `mapped` tells
/// apart. Appends what it cannot prove. `redundant`: every thread of a block
/// runs these ops with the same values and thread 0 alone stores (a row
/// kernel's scalar code), so a read of a stored buffer is safe only when it
/// feeds nothing but those stores.
void checkPhase(Region &nest, ArrayRef<Operation *> ops,
                const llvm::DenseMap<Value, Extent> &mapped, bool redundant,
                SmallVectorImpl<UnprovedWrite> &out) {
  SmallVector<Access> stores, loads;
  SmallVector<Operation *> otherReads;
  for (Operation *top : ops)
    top->walk([&](Operation *op) {
      if (std::optional<Access> access = accessOf(op))
        (access->isStore() ? stores : loads).push_back(*access);
      else if (auto effects = dyn_cast<MemoryEffectOpInterface>(op);
               effects && effects.hasEffect<MemoryEffects::Write>() &&
               !isa<memref::AllocaOp>(op))
        out.push_back(
            {op, -1, false, "it writes memory the analysis cannot index"});
      else if (effects && effects.hasEffect<MemoryEffects::Read>())
        otherReads.push_back(op);
    });
  llvm::DenseSet<Value> written;
  for (const Access &store : stores)
    written.insert(rootOf(store.memref));
  // A read the analysis cannot index (a masked or strided vector read) is
  // safe only from buffers the kernel does not write.
  for (Operation *op : otherReads) {
    SmallVector<MemoryEffects::EffectInstance> effects;
    cast<MemoryEffectOpInterface>(op).getEffects(effects);
    for (const MemoryEffects::EffectInstance &effect : effects)
      if (isa<MemoryEffects::Read>(effect.getEffect()) &&
          (!effect.getValue() || written.count(rootOf(effect.getValue())))) {
        out.push_back({op, -1, false,
                       "it reads memory the kernel writes, in a form the "
                       "analysis cannot index"});
        break;
      }
  }
  IndexAnalysis analysis(nest, mapped, written);
  // The variables in dimension order (a row loop's last), so that the
  // diagnostics do not depend on hash order.
  SmallVector<std::pair<Value, Extent>> ordered(mapped.begin(), mapped.end());
  llvm::sort(ordered, [](const auto &x, const auto &y) {
    return unsigned(x.second.dim) < unsigned(y.second.dim);
  });

  for (const Access &store : stores) {
    llvm::SmallDenseSet<Value, 4> covered =
        analysis.separated(store.indices, store.op, store.width);
    for (auto &[iv, extent] : ordered) {
      if (covered.count(iv))
        continue;
      bool depends = llvm::any_of(store.indices, [&](Value index) {
        llvm::DenseSet<Value> seen;
        return mayDependOn(index, iv, nest, seen);
      });
      out.push_back({store.op, extent.dim, !depends,
                     "its index " + describeIndices(store) +
                         (depends ? " is not a one-to-one function of"
                                  : " does not depend on") +
                         " the parallel loop variable"});
    }
  }
  // Two accesses of one buffer in different threads touch different
  // elements when the index positions they share (the same values at the
  // same places of the same view) separate the threads: thread r storing
  // [r, j] never meets thread r' loading [r', k]. That covers several
  // stores of one buffer (a row's loops) and in-place updates (a load at
  // the store's own indices).
  // When the last indices are shared, the wider access's lanes count.
  auto apart = [&](const Access &x, const Access &y) {
    llvm::SmallDenseSet<Value, 4> covered;
    if (x.memref != y.memref || x.indices.size() != y.indices.size())
      return covered;
    SmallVector<Value> shared;
    for (auto [i, j] : llvm::zip(x.indices, y.indices))
      if (i == j)
        shared.push_back(i);
    int64_t width = x.indices.empty() || x.indices.back() != y.indices.back()
                        ? 1
                        : std::max(x.width, y.width);
    return analysis.separated(shared, y.op, width);
  };
  auto unprovedPair = [&](Operation *op,
                          const llvm::SmallDenseSet<Value, 4> &covered,
                          const char *why) {
    for (auto &[iv, extent] : ordered)
      if (!covered.count(iv))
        out.push_back({op, extent.dim, false, why});
  };
  for (auto [i, store] : llvm::enumerate(stores))
    for (const Access &other : ArrayRef(stores).drop_front(i + 1))
      if (rootOf(store.memref) == rootOf(other.memref))
        unprovedPair(other.op, apart(store, other),
                     "it writes a buffer another store of the kernel writes, "
                     "and their common indices do not tell the threads apart");
  for (const Access &load : loads) {
    Value root = rootOf(load.memref);
    if (!written.count(root))
      continue;
    if (redundant) {
      // The scalar code's stores run in thread 0 alone: a read of what
      // they write is safe when it only feeds those stores (a
      // read-modify-write); another thread could read the new value.
      if (!feedsOnlyStores(load, stores))
        out.push_back({load.op, -1, false,
                       "the row's scalar code reads a buffer it writes, and "
                       "uses the value for more than the write"});
      continue;
    }
    for (const Access &store : stores)
      if (rootOf(store.memref) == root)
        unprovedPair(load.op, apart(store, load),
                     "it reads an element of a buffer the kernel writes, "
                     "at indices other than its own store's");
  }
}

llvm::DenseMap<Value, Extent>
parallelExtents(scf::ParallelOp loop, const llvm::SmallBitVector &dims) {
  llvm::DenseMap<Value, Extent> mapped;
  for (int d : dims.set_bits())
    mapped[loop.getInductionVars()[d]] = {
        d, getConstantIntValue(loop.getStep()[d]),
        tripCount(loop.getLowerBound()[d], loop.getUpperBound()[d],
                  loop.getStep()[d])};
  return mapped;
}

} // namespace

llvm::SmallBitVector mlir::triax::gpu_mapping::provablyParallelDims(
    scf::ParallelOp loop, SmallVectorImpl<UnprovedWrite> &unproved) {
  llvm::SmallBitVector dims(loop.getNumLoops(), true);
  SmallVector<Operation *> body;
  for (Operation &op : loop.getBody()->without_terminator())
    body.push_back(&op);
  // Dropping a dimension makes its variable differ per thread, which can
  // unprove another store: iterate to the fixed point.
  while (dims.any()) {
    SmallVector<UnprovedWrite> found;
    checkPhase(loop.getRegion(), body, parallelExtents(loop, dims),
               /*redundant=*/false, found);
    bool changed = false;
    for (UnprovedWrite &write : found) {
      // A write not tied to one dimension unproves them all.
      if (write.dim < 0) {
        for (int d : dims.set_bits())
          unproved.push_back({write.op, d, write.certain, write.why});
        dims.reset();
        return dims;
      }
      if (dims.test(write.dim)) {
        dims.reset(write.dim);
        unproved.push_back(write);
        changed = true;
      }
    }
    if (!changed)
      break;
  }
  return dims;
}

std::optional<UnprovedWrite>
mlir::triax::gpu_mapping::rowKernelRace(scf::ParallelOp loop) {
  Region &nest = loop.getRegion();
  llvm::DenseMap<Value, Extent> rowOnly =
      parallelExtents(loop, llvm::SmallBitVector(1, true));
  SmallVector<UnprovedWrite> found;
  SmallVector<Operation *> scalarCode;
  // Buffers the row loops after each point write (a scalar read of one of
  // them could see another thread's write: no barrier before a loop).
  SmallVector<Operation *> body;
  for (Operation &op : loop.getBody()->without_terminator())
    body.push_back(&op);
  for (auto [i, op] : llvm::enumerate(body)) {
    auto rowLoop = dyn_cast<scf::ForOp>(op);
    if (!rowLoop) {
      scalarCode.push_back(op);
      continue;
    }
    // Blocks take rows, the block's threads take the row loop's elements.
    llvm::DenseMap<Value, Extent> mapped = rowOnly;
    mapped[rowLoop.getInductionVar()] = {
        -1, getConstantIntValue(rowLoop.getStep()),
        tripCount(rowLoop.getLowerBound(), rowLoop.getUpperBound(),
                  rowLoop.getStep())};
    checkPhase(nest, {op}, mapped, /*redundant=*/false, found);
    if (!found.empty())
      return found.front();
  }
  checkPhase(nest, scalarCode, rowOnly, /*redundant=*/true, found);
  if (!found.empty())
    return found.front();
  // A scalar read before the next row loop that writes the same buffer
  // (each row loop ends in a block-wide synchronization: the barrier after
  // an elementwise loop, gpu.all_reduce after a reduction; so only the
  // next loop can overtake a slow thread's read).
  llvm::DenseSet<Value> writtenLater;
  for (Operation *op : llvm::reverse(body)) {
    if (isa<scf::ForOp>(op)) {
      writtenLater.clear();
      op->walk([&](Operation *inner) {
        if (std::optional<Access> access = accessOf(inner);
            access && access->isStore())
          writtenLater.insert(rootOf(access->memref));
      });
      continue;
    }
    std::optional<UnprovedWrite> race;
    op->walk([&](Operation *inner) {
      std::optional<Access> load = accessOf(inner);
      if (!race && load && !load->isStore() &&
          writtenLater.count(rootOf(load->memref)))
        race = UnprovedWrite{inner, -1, false,
                             "the row's scalar code reads a buffer the next "
                             "row loop writes, with no barrier between"};
    });
    if (race)
      return race;
  }
  return std::nullopt;
}
