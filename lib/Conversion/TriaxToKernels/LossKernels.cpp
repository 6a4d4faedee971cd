//===- LossKernels.cpp - cross-entropy and its gradient -------------------===//
//
// The logits are viewed as [rows, V] with one target per row. Each row is
// independent (one `scf.parallel` over rows); its max and softmax
// denominator come from one pass over the row (the online softmax,
// rowMaxSumExp): the loss reads the logits once, its gradient twice (the
// statistics, then the gradient). The denominator, a sum of up to ~1e5
// terms, is accumulated in f64, and the mean over
// rows is an f64 sum in a fixed order, so the loss is the same bit for bit
// on every run. That sum is a nest of one row (one GPU block, its sum a
// tree of the threads' partial sums; on the CPU a sequential sum in row
// order): the loss never leaves device memory. With row-lanes (the CPU
// pipeline) the row's pass runs 8 online states in vector lanes, one vector
// load and one vector exp per 8 logits, combined in a fixed tree after the
// row (rowMaxSumExp): the same on every run, the last bits differ from the
// scalar pass. With loss-grad-in-place (both pipelines) the gradient
// overwrites the logits' buffer where that is safe (gradientBuffer): each
// element is read and then written by the same iteration, after the row's
// statistics (on the GPU after their block or warp reductions, which every
// thread of the row joins), so no second [rows, V] buffer exists.
//
// Vocab-parallel (`vocab_parallel over @mesh [axes]`): each rank holds V
// columns of the vocabulary starting at its position in the group times V.
// One pass gives each rank's row max and sum of exp(logit - its max); the
// row maxima are all_reduced (max), each rank's sums rescaled by
// exp(its max - the group's), then the sums and the targets' logits (0 on
// the ranks that do not hold the target) are one all_reduce (sum) of a
// [2, rows] buffer; the logits never move.
//
// A padded vocabulary (`classes`, triax-pad-vocab): the row statistics run
// over the first `classes` columns only (a vocab-parallel rank over its
// columns before `classes`, possibly none: the online state then starts
// from max -inf, sum 0), and the gradient's padded columns are 0. Over the
// classes the arithmetic is the unpadded one.
//
//===----------------------------------------------------------------------===//

#include "KernelBuilder.h"

#include "triax/Conversion/RowReductions.h"
#include "triax/Dialect/Triax/IR/GradAccumulation.h"
#include "triax/Dialect/Triax/IR/Triax.h"

#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
using namespace mlir::triax;
using namespace mlir::triax::kernels;

namespace {

/// One step of the online softmax: from the max m and sum s of the logits
/// so far, with logit x, m' = max(m, x) and s' = s exp(m - m') +
/// exp(x - m') with one exp, since one of the two is exp(0) = 1:
/// e = exp(min(m, x) - max(m, x)), s' = s e + 1 when the max grows, else
/// s + e. NaN stays NaN (its e is NaN). m and x are f32, s f64; or vectors
/// of them, lane by lane.
std::pair<Value, Value> onlineStep(KernelBuilder &k, Value m, Value s,
                                   Value x) {
  Value grows = k.lessThan(m, x);
  Value low = k.select(grows, m, x);
  Value high = k.select(grows, x, m);
  Value e = arith::ExtFOp::create(k.builder(), k.getLoc(), s.getType(),
                                  k.exp(k.sub(low, high)));
  auto vec = dyn_cast<VectorType>(s.getType());
  Value one =
      vec ? arith::ConstantOp::create(
                k.builder(), k.getLoc(), vec,
                DenseElementsAttr::get(vec, k.builder().getF64FloatAttr(1.0)))
                .getResult()
          : k.f64(1.0);
  Value rescaled = k.add(k.mul(s, e), one);
  Value added = k.add(s, e);
  return {high, k.select(grows, rescaled, added)};
}

/// The online (max, sum) state (onlineStep) from (m, s) over logits
/// [from, to) of row `r`, marked as such (kOnlineMaxSumExpAttr: its
/// combine, for a mapping that splits the row over threads).
std::pair<Value, Value> onlineSteps(KernelBuilder &k, Value logits, Value r,
                                    Value from, Value to, Value m, Value s) {
  SmallVector<Value> state = k.reduce(
      from, to, {m, s}, [&](KernelBuilder &k, Value v, ValueRange acc) {
        Value x = k.load(logits, {r, v});
        auto [next, sum] = onlineStep(k, acc[0], acc[1], x);
        return SmallVector<Value>{next, sum};
      });
  state[0].getDefiningOp()->setAttr(kOnlineMaxSumExpAttr,
                                    k.builder().getUnitAttr());
  return {state[0], state[1]};
}

/// Lanes of the vector form (rowLanes).
constexpr int64_t kRowLanes = 8;

/// The max of row `r` of logits [rows, V] and sum(exp(logit - max)) (f64),
/// in one pass over the row (the online softmax, onlineStep): from m =
/// logit 0, s = 1. With `lanes` (the CPU) and V >= 16: 8 online states,
/// lane u over logits u, u + 8, ... of the first 8 floor(V / 8), one
/// vector<8xf32> load and one vector exp per 8 logits; then M = the lanes'
/// max and S = the sum of s_u exp(m_u - M) over the lanes (a fixed tree, in
/// f64), and the last V mod 8 logits one by one.
std::pair<Value, Value> rowMaxSumExp(KernelBuilder &k, Value logits, Value r,
                                     int64_t vocab, bool lanes = false) {
  // (Operands that build ops are built one statement each, so that the IR
  // order does not depend on the compiler's argument evaluation order.)
  auto scalarSteps = [&](int64_t from, Value m, Value s) {
    Value begin = k.index(from);
    Value end = k.index(vocab);
    return onlineSteps(k, logits, r, begin, end, m, s);
  };
  int64_t vectors = vocab / kRowLanes;
  if (!lanes || vectors < 2) {
    Value first = k.load(logits, {r, k.index(0)});
    return scalarSteps(1, first, k.f64(1.0));
  }
  OpBuilder &b = k.builder();
  Location loc = k.getLoc();
  auto f32s = VectorType::get({kRowLanes}, b.getF32Type());
  auto f64s = VectorType::get({kRowLanes}, b.getF64Type());
  Type element = cast<MemRefType>(logits.getType()).getElementType();
  auto load = [&](KernelBuilder &k, Value column) -> Value {
    Value v = vector::LoadOp::create(k.builder(), loc,
                                     VectorType::get({kRowLanes}, element),
                                     logits, ValueRange{r, column});
    return element.isF32() ? v
                           : arith::ExtFOp::create(k.builder(), loc, f32s, v);
  };
  Value first = load(k, k.index(0));
  Value ones = arith::ConstantOp::create(
      b, loc, f64s, DenseElementsAttr::get(f64s, b.getF64FloatAttr(1.0)));
  SmallVector<Value> state =
      k.reduce(k.index(1), k.index(vectors), {first, ones},
               [&](KernelBuilder &k, Value j, ValueRange acc) {
                 Value x = load(k, k.muli(j, k.index(kRowLanes)));
                 auto [next, sum] = onlineStep(k, acc[0], acc[1], x);
                 return SmallVector<Value>{next, sum};
               });
  Value max = halvingSum(k, state[0], [](KernelBuilder &k, Value x, Value y) {
    return k.max(x, y);
  });
  Value spread = vector::BroadcastOp::create(b, loc, f32s, max);
  Value scales =
      arith::ExtFOp::create(b, loc, f64s, k.exp(k.sub(state[0], spread)));
  Value sum = halvingSum(
      k, k.mul(state[1], scales),
      [](KernelBuilder &k, Value x, Value y) { return k.add(x, y); });
  return scalarSteps(vectors * kRowLanes, max, sum);
}

/// The max and sum(exp(logit - max)) (f64) of the first `valid` logits of
/// row `r` (a dynamic count, possibly 0: then -inf and 0), one online pass
/// (onlineStep from max -inf, sum 0; a vocab-parallel rank's columns of a
/// padded vocabulary).
std::pair<Value, Value> rowMaxSumExpUpTo(KernelBuilder &k, Value logits,
                                         Value r, Value valid) {
  Value start = k.f32(-std::numeric_limits<double>::infinity());
  Value zero = k.f64(0.0);
  Value begin = k.index(0);
  return onlineSteps(k, logits, r, begin, valid, start, zero);
}

/// The statistics of vocab-parallel logits [rows, V], reduced over the
/// group: `max[r]` the maximum of row r over the whole vocabulary,
/// `stats[0, r]` the sum of exp(logit - max) and `stats[1, r]` the target's
/// logit; `offset` is the first vocabulary row this rank holds.
struct VocabStats {
  Value max, stats, offset;
};

/// How many of a vocab-parallel rank's `vocab` columns starting at global
/// column `offset` are classes: clamp(classes - offset, 0, vocab).
Value classesHeld(KernelBuilder &k, Value offset, int64_t vocab,
                  int64_t classes) {
  OpBuilder &b = k.builder();
  Value left = k.subi(k.index(classes), offset);
  Value atLeast0 = arith::MaxSIOp::create(b, k.getLoc(), left, k.index(0));
  return arith::MinSIOp::create(b, k.getLoc(), atLeast0, k.index(vocab));
}

/// For a loss op with `vocab_parallel over mesh axes`, its VocabStats; for
/// one without (null mesh), nullopt.
FailureOr<std::optional<VocabStats>>
vocabParallelStats(KernelBuilder &k, Operation *op, FlatSymbolRefAttr mesh,
                   ArrayAttr axes, Value logits, Value targets, bool lanes,
                   std::optional<int64_t> classes) {
  auto [rows, vocab] = KernelBuilder::rowsCols(logits);
  FailureOr<Value> offset = vocabOffset(k, op, mesh, axes, vocab);
  if (failed(offset))
    return failure();
  if (!*offset)
    return std::optional<VocabStats>();
  int64_t mask = *axisMask(op, mesh, axes);
  Type f32 = k.builder().getF32Type();
  // One pass over this rank's columns of each row: its own max and sum
  // (rowMaxSumExp); the sums wait in `stats` for the group's max.
  Value maxBuf = k.alloc(MemRefType::get({rows}, f32));
  Value stats = k.alloc(MemRefType::get({2, rows}, f32));
  Value localMax = k.alloc(MemRefType::get({rows}, f32));
  k.parallel({rows}, [&](KernelBuilder &k, ValueRange r) {
    auto [max, sum] =
        classes ? rowMaxSumExpUpTo(k, logits, r[0],
                                   classesHeld(k, *offset, vocab, *classes))
                : rowMaxSumExp(k, logits, r[0], vocab, lanes);
    k.store(max, maxBuf, r);
    k.store(max, localMax, r);
    k.store(k.toF32(sum), stats, {k.index(0), r[0]});
    Value target = k.toIndex(k.load(targets, r));
    auto [column, inside] = localRow(k, target, *offset, vocab);
    Value picked = k.load(logits, {r[0], column});
    Value kept = k.select(inside, picked, k.f32(0.0));
    k.store(kept, stats, {k.index(1), r[0]});
  });
  allReduceInPlace(k, maxBuf, TRX_REDUCE_MAX, mask);
  // Each rank's sum of exp(logit - its max) rescaled to the group's max.
  k.parallel({rows}, [&](KernelBuilder &k, ValueRange r) {
    Value local = k.load(localMax, r);
    Value group = k.load(maxBuf, r);
    Value shift = k.exp(k.sub(local, group));
    Value sum = k.load(stats, {k.index(0), r[0]});
    k.store(k.mul(sum, shift), stats, {k.index(0), r[0]});
  });
  allReduceInPlace(k, stats, TRX_REDUCE_SUM, mask);
  return std::optional<VocabStats>(VocabStats{maxBuf, stats, *offset});
}

/// loss = mean over rows of (logsumexp(row) - row[target]),
/// logsumexp(row) = max + log(sum(exp(row - max))).
struct CrossEntropyLowering : OpConversionPattern<CrossEntropyOp> {
  CrossEntropyLowering(TypeConverter &converter, MLIRContext *ctx, bool lanes)
      : OpConversionPattern(converter, ctx), lanes(lanes) {}
  bool lanes; // rowMaxSumExp in vector lanes (the CPU)
  LogicalResult
  matchAndRewrite(CrossEntropyOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    KernelBuilder k(rewriter, op.getLoc());
    Value logits = k.rows(adaptor.getLogits());
    Value targets = k.flat(adaptor.getTargets());
    auto [rows, vocab] = KernelBuilder::rowsCols(logits);
    Value perRow = k.alloc(MemRefType::get({rows}, rewriter.getF32Type()));
    FailureOr<std::optional<VocabStats>> parallel =
        vocabParallelStats(k, op, op.getMeshAttr(), op.getAxesAttr(), logits,
                           targets, lanes, op.getClasses());
    if (failed(parallel))
      return failure();
    if (std::optional<VocabStats> vp = *parallel) {
      k.parallel({rows}, [&](KernelBuilder &k, ValueRange r) {
        Value max = k.load(vp->max, r);
        Value picked = k.load(vp->stats, {k.index(1), r[0]});
        Value sum = k.toF64(k.load(vp->stats, {k.index(0), r[0]}));
        Value margin = k.toF64(k.sub(max, picked));
        Value loss = k.add(margin, k.log(sum));
        k.store(k.toF32(loss), perRow, r);
      });
    } else {
      int64_t classes = op.getClasses().value_or(vocab);
      k.parallel({rows}, [&](KernelBuilder &k, ValueRange r) {
        auto [max, sum] = rowMaxSumExp(k, logits, r[0], classes, lanes);
        Value target = k.toIndex(k.load(targets, r));
        // (max - picked) + log(sum), in f64 before the one rounding to f32.
        Value picked = k.load(logits, {r[0], target});
        Value margin = k.toF64(k.sub(max, picked));
        Value loss = k.add(margin, k.log(sum));
        k.store(k.toF32(loss), perRow, r);
      });
    }
    // The mean: one row, stored through the 0-d result's one-element view
    // at the nest's variable (each iteration its own element).
    Value out = k.alloc(op.getType());
    Value outElement = k.flat(out);
    k.parallel({1}, [&](KernelBuilder &k, ValueRange one) {
      Value total = k.reduce(rows, {k.f64(0.0)},
                             [&](KernelBuilder &k, Value r, ValueRange acc) {
                               Value loss = k.toF64(k.load(perRow, r));
                               return SmallVector<Value>{k.add(acc[0], loss)};
                             })[0];
      Value mean = k.div(total, k.f64(static_cast<double>(rows)));
      k.store(k.toF32(mean), outElement, one);
    });
    rewriter.replaceOp(op, out);
    return success();
  }
};

/// The buffer `op`'s gradient goes to: with loss-grad-in-place, the
/// logits' own buffer when convert-triax-to-kernels marked the op to write
/// over them (kOverwritesAttr, from mayWriteOver: the gradient's type, no
/// reader after `op`, so none reads them once overwritten and the buffer is
/// not yielded or returned) and the kernels allocated it with an identity
/// layout; else a new one. The buffer is freed after the gradient's last
/// use (insertDeallocs follows the value).
Value gradientBuffer(KernelBuilder &k, CrossEntropyGradOp op, Value logits) {
  if (op->hasAttr(kOverwritesAttr) && KernelBuilder::isOwnBuffer(logits))
    return logits;
  return k.alloc(op.getType());
}

/// dlogits[r, v] = (softmax(row)[v] - [v == target]) * dloss / rows.
struct CrossEntropyGradLowering : OpConversionPattern<CrossEntropyGradOp> {
  CrossEntropyGradLowering(TypeConverter &converter, MLIRContext *ctx,
                           bool lanes)
      : OpConversionPattern(converter, ctx), lanes(lanes) {}
  bool lanes; // rowMaxSumExp in vector lanes (the CPU)
  LogicalResult
  matchAndRewrite(CrossEntropyGradOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    KernelBuilder k(rewriter, op.getLoc());
    Value outBuf = gradientBuffer(k, op, adaptor.getLogits());
    Value logits = k.rows(adaptor.getLogits()), out = k.rows(outBuf);
    Value targets = k.flat(adaptor.getTargets());
    auto [rows, vocab] = KernelBuilder::rowsCols(logits);
    // The upstream gradient is a device scalar: read in the kernel (through
    // its one-element view).
    Value lossGrad = k.flat(adaptor.getLossGrad());
    auto rowScale = [&](KernelBuilder &k) {
      Value dloss = k.load(lossGrad, {k.index(0)});
      return k.div(dloss, k.f32(static_cast<double>(rows)));
    };
    FailureOr<std::optional<VocabStats>> parallel =
        vocabParallelStats(k, op, op.getMeshAttr(), op.getAxesAttr(), logits,
                           targets, lanes, op.getClasses());
    if (failed(parallel))
      return failure();
    if (std::optional<VocabStats> vp = *parallel) {
      k.parallel({rows}, [&](KernelBuilder &k, ValueRange r) {
        Value scale = rowScale(k);
        Value max = k.load(vp->max, r);
        Value denom = k.load(vp->stats, {k.index(0), r[0]});
        Value target = k.toIndex(k.load(targets, r));
        k.loop({vocab}, [&](KernelBuilder &k, ValueRange v) {
          Value l = k.load(logits, {r[0], v[0]});
          Value p = k.div(k.exp(k.sub(l, max)), denom);
          Value global = k.addi(v[0], vp->offset);
          Value isTarget = k.cmpi(arith::CmpIPredicate::eq, global, target);
          Value grad =
              k.mul(k.select(isTarget, k.sub(p, k.f32(1.0)), p), scale);
          if (std::optional<int64_t> classes = op.getClasses()) {
            Value isClass =
                k.cmpi(arith::CmpIPredicate::slt, global, k.index(*classes));
            grad = k.select(isClass, grad, k.f32(0.0));
          }
          k.store(grad, out, {r[0], v[0]});
        });
      });
      rewriter.replaceOp(op, outBuf);
      return success();
    }
    int64_t classes = op.getClasses().value_or(vocab);
    k.parallel({rows}, [&](KernelBuilder &k, ValueRange r) {
      Value scale = rowScale(k);
      auto [max, sum] = rowMaxSumExp(k, logits, r[0], classes, lanes);
      Value denom = k.toF32(sum);
      Value target = k.toIndex(k.load(targets, r));
      k.loop({classes}, [&](KernelBuilder &k, ValueRange v) {
        Value p = k.div(k.exp(k.sub(k.load(logits, {r[0], v[0]}), max)), denom);
        Value isTarget = k.cmpi(arith::CmpIPredicate::eq, v[0], target);
        Value grad = k.select(isTarget, k.sub(p, k.f32(1.0)), p);
        k.store(k.mul(grad, scale), out, {r[0], v[0]});
      });
      // The padding's columns: no class, no gradient.
      if (classes < vocab)
        k.loop({vocab - classes}, [&](KernelBuilder &k, ValueRange v) {
          k.store(k.f32(0.0), out, {r[0], k.addi(v[0], k.index(classes))});
        });
    });
    rewriter.replaceOp(op, outBuf);
    return success();
  }
};

} // namespace

void mlir::triax::kernels::populateLossPatterns(TypeConverter &converter,
                                                RewritePatternSet &patterns,
                                                bool rowLanes) {
  patterns.add<CrossEntropyLowering>(converter, patterns.getContext(),
                                     rowLanes);
  patterns.add<CrossEntropyGradLowering>(converter, patterns.getContext(),
                                         rowLanes);
}
