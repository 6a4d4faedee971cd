//===- OptimizerKernels.cpp - global norm and the fused AdamW update ------===//

#include "KernelBuilder.h"

#include "triax/Conversion/RuntimeABI.h"
#include "triax/Dialect/Triax/IR/Triax.h"

#include <functional>

using namespace mlir;
using namespace mlir::triax;
using namespace mlir::triax::kernels;

namespace {

/// Elements per partial sum of the global norm: one row of the row-wise
/// nest (one GPU block).
constexpr int64_t kNormRow = 4096;

/// sqrt(sum of squares) over all gradients, accumulated in f64 in a fixed
/// order (the same norm, bit for bit, on every run), without leaving device
/// memory:
/// - each gradient's squares are summed in rows of kNormRow elements by a
///   row-wise nest (one block per row on the GPU) into one f64 buffer of
///   partial sums, the gradients' rows one after the other (about 30,000
///   for gpt2); with fuse-optimizer the rows of all gradients are one nest
///   (rows dispatched to their gradient as the fused AdamW dispatches
///   elements: one launch per step instead of one per gradient), the same
///   sums;
/// - a nest of one row sums the partial sums in order: a run of gradients
///   held once is one sequential sum, a gradient whose piece r members of
///   the group hold adds its own sum divided by r. On the CPU that is the
///   same chain of f64 additions as a host loop over the rows; on the GPU
///   each such sum is one block's tree of its threads' partial sums (a
///   fixed order too);
/// - with a group (`over @mesh [axes]`), the square sums of the pieces are
///   all_reduced in place in the f32 result (a device buffer), and a nest of
///   one iteration takes the root.
struct GlobalNormLowering : OpConversionPattern<GlobalNormOp> {
  GlobalNormLowering(TypeConverter &converter, MLIRContext *ctx, bool fuse,
                     int64_t paramBytes)
      : OpConversionPattern(converter, ctx), fuse(fuse),
        paramBytes(paramBytes) {}
  bool fuse;
  int64_t paramBytes;
  LogicalResult
  matchAndRewrite(GlobalNormOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    KernelBuilder k(rewriter, op.getLoc());
    std::optional<ArrayRef<int64_t>> replicas = op.getReplicas();
    // Each gradient's rows: [first, first + rows) of the partial sums.
    struct Rows {
      int64_t first, rows, replicas;
    };
    SmallVector<Rows> spans;
    int64_t totalRows = 0;
    for (auto [index, grad] : llvm::enumerate(adaptor.getGrads())) {
      int64_t n = cast<MemRefType>(grad.getType()).getNumElements();
      int64_t cols = std::min<int64_t>(n, kNormRow);
      int64_t rows = cols > 0 ? (n + cols - 1) / cols : 0;
      spans.push_back({totalRows, rows, replicas ? (*replicas)[index] : 1});
      totalRows += rows;
    }
    Value partials =
        k.alloc(RankedTensorType::get({totalRows}, rewriter.getF64Type()));
    // Row r (`cols` elements, the last row's tail, past n, adding zeros)
    // of the flat gradient `flat` of n elements: the sum of its squares
    // into sums[at] (the row's place among all gradients' rows).
    auto sumRow = [&](KernelBuilder &k, Value flat, Value n, int64_t cols,
                      Value r, Value sums, Value at) {
      Value base = k.muli(r, k.index(cols));
      Value last = k.subi(n, k.index(1));
      Value sum = k.reduce(
          cols, {k.f64(0.0)}, [&](KernelBuilder &k, Value c, ValueRange acc) {
            Value i = k.addi(base, c);
            Value inside = k.cmpi(arith::CmpIPredicate::ule, i, last);
            Value g = k.toF64(k.load(flat, {k.select(inside, i, last)}));
            Value sq = k.select(inside, k.mul(g, g), k.f64(0.0));
            return SmallVector<Value>{k.add(acc[0], sq)};
          })[0];
      k.store(sum, sums, {at});
    };
    auto numElements = [](Value buffer) {
      return cast<MemRefType>(buffer.getType()).getNumElements();
    };
    SmallVector<Value> flats;
    for (Value grad : adaptor.getGrads())
      flats.push_back(k.flat(grad));
    auto atRow = [&](KernelBuilder &k, Value r, int64_t first) {
      return first ? k.addi(r, k.index(first)) : r;
    };
    if (!fuse) {
      // One loop over each gradient's rows, into its rows of the partial
      // sums: a view whose offset is a value, not part of its type, so
      // that gradients of one shape share one kernel function
      // (triax-dedupe-kernels) instead of one per gradient.
      for (auto [flat, span] : llvm::zip(flats, spans)) {
        int64_t n = numElements(flat);
        OpBuilder &b = k.builder();
        Value rows = memref::SubViewOp::create(
            b, k.getLoc(), partials,
            ArrayRef<OpFoldResult>{k.index(span.first)},
            ArrayRef<OpFoldResult>{b.getIndexAttr(span.rows)},
            ArrayRef<OpFoldResult>{b.getIndexAttr(1)});
        k.parallel({span.rows}, [&](KernelBuilder &k, ValueRange r) {
          sumRow(k, flat, k.index(n), std::min(n, kNormRow), r[0], rows, r[0]);
        });
      }
    } else {
      // fuse-optimizer: one loop over the concatenated rows of a run of
      // gradients, all rows kNormRow long (a shorter gradient's one row
      // adds zeros past its end: the same sum). A row's gradient is chosen
      // by selects on its index (the row's own buffer, first row and size),
      // so each iteration is still one row loop: one block per row on the
      // GPU. A run is cut where its launch would pass more than paramBytes
      // of kernel parameters (a 1-D buffer descriptor, 40 bytes, per
      // gradient; the partial sums' is shared) and where the element type
      // changes.
      constexpr int64_t kBufferBytes = 40;
      for (size_t g = 0; g < spans.size();) {
        Type type = cast<MemRefType>(flats[g].getType()).getElementType();
        size_t end = g + 1;
        while (end < spans.size() &&
               cast<MemRefType>(flats[end].getType()).getElementType() ==
                   type &&
               (paramBytes <= 0 ||
                (int64_t(end - g) + 2) * kBufferBytes <= paramBytes))
          ++end;
        auto dynamic = MemRefType::get({ShapedType::kDynamic}, type);
        int64_t first = spans[g].first;
        int64_t rows = spans[end - 1].first + spans[end - 1].rows - first;
        k.parallel({rows}, [&](KernelBuilder &k, ValueRange r) {
          // (The casts inside the nest: its kernel's parameters keep their
          // static shapes.)
          SmallVector<Value> members;
          for (size_t m = g; m < end; ++m)
            members.push_back(memref::CastOp::create(k.builder(), k.getLoc(),
                                                     dynamic, flats[m]));
          // The last member whose first row is at or before r.
          Value flat = members[0], start = k.index(0);
          Value n = k.index(numElements(flats[g]));
          for (size_t m = g + 1; m < end; ++m) {
            int64_t from = spans[m].first - first;
            Value at = k.cmpi(arith::CmpIPredicate::uge, r[0], k.index(from));
            flat = k.select(at, members[m - g], flat);
            start = k.select(at, k.index(from), start);
            n = k.select(at, k.index(numElements(flats[m])), n);
          }
          sumRow(k, flat, n, kNormRow, k.subi(r[0], start), partials,
                 atRow(k, r[0], first));
        });
        g = end;
      }
    }
    Value out = k.alloc(op.getType());
    Value outElement = k.flat(out);
    bool overGroup = bool(op.getMesh());
    k.parallel({1}, [&](KernelBuilder &k, ValueRange one) {
      auto sumRows = [&](int64_t begin, int64_t end, Value init) {
        return k.reduce(k.index(begin), k.index(end), {init},
                        [&](KernelBuilder &k, Value i, ValueRange acc) {
                          Value partial = k.load(partials, {i});
                          return SmallVector<Value>{k.add(acc[0], partial)};
                        })[0];
      };
      Value total = k.f64(0.0);
      for (size_t g = 0; g < spans.size();) {
        // A piece held by r members of the group counts 1/r on each.
        if (spans[g].replicas > 1) {
          Value sum = sumRows(spans[g].first, spans[g].first + spans[g].rows,
                              k.f64(0.0));
          total = k.add(total, k.div(sum, k.f64(double(spans[g].replicas))));
          ++g;
          continue;
        }
        // Consecutive gradients held once: one sum over their rows.
        size_t end = g;
        while (end < spans.size() && spans[end].replicas <= 1)
          ++end;
        total = sumRows(spans[g].first,
                        spans[end - 1].first + spans[end - 1].rows, total);
        g = end;
      }
      // Over a group the square sums are reduced first (below).
      Value result = overGroup ? total : k.sqrt(total);
      k.store(k.toF32(result), outElement, one);
    });
    if (overGroup) {
      FailureOr<int64_t> mask =
          axisMask(op, op.getMeshAttr(), op.getAxesAttr());
      if (failed(mask))
        return failure();
      allReduceInPlace(k, out, TRX_REDUCE_SUM, *mask);
      k.parallel({1}, [&](KernelBuilder &k, ValueRange one) {
        k.store(k.sqrt(k.load(outElement, one)), outElement, one);
      });
    }
    rewriter.replaceOp(op, out);
    return success();
  }
};

/// The buffers and constants of one parameter's AdamW update.
struct AdamWUpdate {
  Value p, m, v, g; // flat views: parameter, moments, gradient
  // A bf16 parameter's f32 master copy (null for an f32 parameter): the
  // update reads and writes it, and writes its rounding to `p`.
  Value master;
  int64_t n;
  double beta1, beta2;
  Value bc1, bc2, eps, wd;
};

/// Whether `a` and `b` have the same bias corrections (same betas; their
/// step is the same when they belong to one run).
bool sameBetas(AdamWOp a, AdamWOp b) {
  return a.getBeta1() == b.getBeta1() && a.getBeta2() == b.getBeta2();
}

/// Views and bias corrections of `op`'s update (`grad`: its converted
/// gradient), built before the loop. `shared`: an update of the same step
/// whose bias corrections are reused when the betas match (one value each
/// for a fused run: fewer kernel parameters).
FailureOr<AdamWUpdate>
prepareAdamW(KernelBuilder &k, AdamWOp op, Value grad, const ParamIndex &params,
             FailureOr<int64_t> index,
             std::optional<std::pair<AdamWOp, AdamWUpdate>> shared = {}) {
  if (failed(index))
    return failure();
  // The gradient has the parameter's type: f32, or bf16 (a true bf16
  // model: bf16 parameter and gradient, f32 master copy and moments).
  auto type = cast<MemRefType>(grad.getType());
  Type element = type.getElementType();
  if (!element.isF32() && !element.isBF16())
    return op.emitOpError("only f32 and bf16 parameters are updated, not ")
           << element;
  auto f32Type = cast<MemRefType>(type.clone(k.builder().getF32Type()));
  // Under ZeRO the gradient is this rank's chunk, and so are the moments,
  // the master copy and the part of the parameter it updates.
  bool chunked = params.zeroSharded.contains(op.getParam());
  auto view = [&](trx_state_kind kind, MemRefType viewType) {
    return chunked ? k.stateChunk(kind, *index, viewType)
                   : k.flat(k.state(kind, *index, viewType));
  };
  AdamWUpdate u;
  u.p = view(TRX_STATE_PARAM, type);
  if (element.isBF16())
    u.master = view(TRX_STATE_MASTER, f32Type);
  u.m = view(TRX_STATE_EXP_AVG, f32Type);
  u.v = view(TRX_STATE_EXP_AVG_SQ, f32Type);
  u.g = k.flat(grad);
  u.n = type.getNumElements();
  u.beta1 = op.getBeta1().convertToDouble();
  u.beta2 = op.getBeta2().convertToDouble();
  if (shared && sameBetas(shared->first, op)) {
    u.bc1 = shared->second.bc1;
    u.bc2 = shared->second.bc2;
  } else {
    Value step = arith::SIToFPOp::create(
        k.builder(), op.getLoc(), k.builder().getF32Type(), op.getStep());
    u.bc1 = k.sub(k.f32(1.0), k.pow(k.f32(u.beta1), step));
    u.bc2 = k.sub(k.f32(1.0), k.pow(k.f32(u.beta2), step));
  }
  u.eps = k.f32(op.getEps().convertToDouble());
  u.wd = k.f32(op.getWeightDecay().convertToDouble());
  return u;
}

/// Element `i` of one parameter's update (the same arithmetic, in the same
/// order, whether or not the loop is fused with other parameters'). A
/// scale that is not finite (the step's gradients were not: see AdamWOp)
/// stores the element's old parameter and moments back: the step updates
/// nothing. A select, not a branch: on the GPU the scale is a device scalar
/// the host never reads, and the selects cost no memory traffic.
void updateElement(KernelBuilder &k, const AdamWUpdate &u, Value lr,
                   Value scale, ValueRange i) {
  Value ok = k.isFinite(scale);
  Value gi = k.mul(k.load(u.g, i), scale);
  Value m0 = k.load(u.m, i), v0 = k.load(u.v, i);
  Value mi = k.add(k.mul(k.f32(u.beta1), m0), k.mul(k.f32(1.0 - u.beta1), gi));
  Value vi = k.add(k.mul(k.f32(u.beta2), v0),
                   k.mul(k.f32(1.0 - u.beta2), k.mul(gi, gi)));
  Value mhat = k.div(mi, u.bc1), vhat = k.div(vi, u.bc2);
  // A bf16 parameter is updated in its f32 master copy; its bf16 buffer
  // gets the result rounded to nearest even (the store's conversion).
  Value pi = k.load(u.master ? u.master : u.p, i);
  Value update =
      k.add(k.div(mhat, k.add(k.sqrt(vhat), u.eps)), k.mul(u.wd, pi));
  Value next = k.select(ok, k.sub(pi, k.mul(lr, update)), pi);
  if (u.master)
    k.store(next, u.master, i);
  k.store(next, u.p, i);
  k.store(k.select(ok, mi, m0), u.m, i);
  k.store(k.select(ok, vi, v0), u.v, i);
}

/// One fused pass over parameter, gradient and moments (see AdamWOp).
struct AdamWLowering : ParamPattern<AdamWOp> {
  using ParamPattern::ParamPattern;
  LogicalResult
  matchAndRewrite(AdamWOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    KernelBuilder k(rewriter, op.getLoc());
    FailureOr<AdamWUpdate> u = prepareAdamW(k, op, adaptor.getGrad(), params,
                                            paramIndex(op, op.getParam()));
    if (failed(u))
      return failure();
    Value lr = adaptor.getLr(), scale = adaptor.getGradScale();
    k.parallel({u->n}, [&](KernelBuilder &k, ValueRange i) {
      updateElement(k, *u, lr, scale, i);
    });
    rewriter.eraseOp(op);
    return success();
  }
};

/// Whether `next` updates with the same learning rate, step and gradient
/// scale as `first` (so both can share one loop).
bool sameStep(AdamWOp first, Operation *next) {
  auto other = dyn_cast_if_present<AdamWOp>(next);
  return other && other.getLr() == first.getLr() &&
         other.getStep() == first.getStep() &&
         other.getGradScale() == first.getGradScale();
}

/// fuse-optimizer: a run of consecutive `triax.adamw` ops of one step (the
/// optimizer step updates every parameter, or every parameter of a
/// gradient bucket, back to back) becomes one parallel loop over their
/// concatenated elements: element e of the run belongs to the parameter
/// whose range [offset, offset + n) holds it, found by a binary tree of
/// `scf.if e < offset` (depth log2 of the run's length), and is updated
/// exactly as AdamWLowering updates it. On the GPU the run is one kernel
/// launch instead of one per parameter. The ops of a run touch disjoint
/// state (each its own parameter's buffers), so their order does not
/// matter. Matches the run's first op and erases the others; a run of one
/// is AdamWLowering's loop. A run is cut where its launch would pass more
/// than `paramBytes` of kernel parameters (runFrom): with 4352 bytes (26
/// updates each, triax-lower-cuda's budget) gpt2's 196 updates are eight
/// launches; PTX ISA 8.1's 32764 bytes would make them one.
struct FusedAdamWLowering : ParamPattern<AdamWOp> {
  FusedAdamWLowering(TypeConverter &converter, MLIRContext *ctx,
                     const ParamIndex &params, int64_t paramBytes)
      : ParamPattern(converter, ctx, params), paramBytes(paramBytes) {}

  /// Kernel-parameter bytes of one update: four flat buffers (parameter,
  /// gradient, moments; five with a bf16 parameter's master copy), each a
  /// 1-D memref descriptor (allocated and aligned pointers, offset, size,
  /// stride: 40 bytes), plus its own two f32 bias corrections unless its
  /// betas are the run's first's.
  static int64_t bytesOf(AdamWOp first, AdamWOp update) {
    bool master = getElementTypeOrSelf(update.getGrad().getType()).isBF16();
    return (master ? 5 : 4) * 40 + (sameBetas(first, update) ? 0 : 8);
  }
  /// Shared by the run: the learning rate and the first update's bias
  /// corrections (f32), the gradient scale's buffer (the clipping scale is
  /// a device scalar, read in the kernel: a 0-d memref descriptor, 24
  /// bytes), with room for alignment.
  static constexpr int64_t kSharedBytes = 48;
  int64_t paramBytes;

  /// The run that starts at `first`: it and the consecutive updates of its
  /// step after it, while the launch's parameters fit (at least one;
  /// paramBytes 0: no limit).
  SmallVector<AdamWOp> runFrom(AdamWOp first) const {
    SmallVector<AdamWOp> run{first};
    int64_t bytes = kSharedBytes + bytesOf(first, first);
    while (auto next =
               dyn_cast_if_present<AdamWOp>(run.back()->getNextNode())) {
      if (!sameStep(first, next) ||
          (paramBytes > 0 && bytes + bytesOf(first, next) > paramBytes))
        break;
      bytes += bytesOf(first, next);
      run.push_back(next);
    }
    return run;
  }

  LogicalResult
  matchAndRewrite(AdamWOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    // Only the first op of a run (the others go with it): the step's
    // updates are cut into runs greedily from the first.
    AdamWOp head = op;
    while (sameStep(op, head->getPrevNode()))
      head = cast<AdamWOp>(head->getPrevNode());
    SmallVector<AdamWOp> run = runFrom(head);
    while (run.front() != op) {
      if (llvm::is_contained(run, op))
        return rewriter.notifyMatchFailure(op, "not the first adamw of a run");
      run = runFrom(cast<AdamWOp>(run.back()->getNextNode()));
    }
    // The views, constants and the loop go in front of the run (the ops
    // are consecutive, so every operand is defined there), which keeps
    // the later runs' chains of adamw ops (and their heads) intact.
    rewriter.setInsertionPoint(op);
    KernelBuilder k(rewriter, op.getLoc());
    SmallVector<AdamWUpdate> updates;
    for (AdamWOp member : run) {
      Value grad = rewriter.getRemappedValue(member.getGrad());
      if (!grad)
        return rewriter.notifyMatchFailure(member, "gradient not converted");
      FailureOr<AdamWUpdate> u = prepareAdamW(
          k, member, grad, params, paramIndex(member, member.getParam()),
          updates.empty() ? std::nullopt
                          : std::optional(std::pair(op, updates.front())));
      if (failed(u))
        return failure();
      updates.push_back(*u);
    }
    Value lr = adaptor.getLr(), scale = adaptor.getGradScale();
    SmallVector<int64_t> sizes;
    for (const AdamWUpdate &u : updates)
      sizes.push_back(u.n);
    k.parallelConcat(
        sizes, [&](KernelBuilder &k, size_t m, Value local, Value) {
          updateElement(k, updates[m], lr, scale, ValueRange{local});
        });
    for (AdamWOp member : run)
      rewriter.eraseOp(member);
    return success();
  }
};

/// grad[p] += g: one parallel loop into the runtime's gradient buffer.
struct AccumulateGradLowering : ParamPattern<AccumulateGradOp> {
  using ParamPattern::ParamPattern;
  LogicalResult
  matchAndRewrite(AccumulateGradOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    FailureOr<int64_t> index = paramIndex(op, op.getParam());
    if (failed(index))
      return failure();
    KernelBuilder k(rewriter, op.getLoc());
    accumulateGrad(k, *index, adaptor.getGrad());
    rewriter.eraseOp(op);
    return success();
  }
};

/// The gradient buffer, read in place.
struct GetGradLowering : ParamPattern<GetGradOp> {
  using ParamPattern::ParamPattern;
  LogicalResult
  matchAndRewrite(GetGradOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    FailureOr<int64_t> index = paramIndex(op, op.getParam());
    if (failed(index))
      return failure();
    KernelBuilder k(rewriter, op.getLoc());
    auto type = cast<MemRefType>(getTypeConverter()->convertType(op.getType()));
    rewriter.replaceOp(op, k.state(TRX_STATE_GRAD, *index, type));
    return success();
  }
};

} // namespace

void mlir::triax::kernels::accumulateGrad(KernelBuilder &k, int64_t index,
                                          Value grad) {
  auto type = cast<MemRefType>(grad.getType());
  Value buffer = k.flat(k.state(TRX_STATE_GRAD, index, type));
  Value g = k.flat(grad);
  k.parallel({type.getNumElements()}, [&](KernelBuilder &k, ValueRange i) {
    k.store(k.add(k.load(buffer, i), k.load(g, i)), buffer, i);
  });
}

void mlir::triax::kernels::populateOptimizerPatterns(
    TypeConverter &converter, RewritePatternSet &patterns,
    const ParamIndex &params, bool fuseOptimizer, int64_t kernelParamBytes) {
  patterns.add<GlobalNormLowering>(converter, patterns.getContext(),
                                   fuseOptimizer, kernelParamBytes);
  patterns.add<AccumulateGradLowering, GetGradLowering>(
      converter, patterns.getContext(), params);
  if (fuseOptimizer)
    patterns.add<FusedAdamWLowering>(converter, patterns.getContext(), params,
                                     kernelParamBytes);
  else
    patterns.add<AdamWLowering>(converter, patterns.getContext(), params);
}
