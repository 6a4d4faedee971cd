//===- OptimizerKernels.cpp - global norm and the fused AdamW update ------===//

#include "KernelBuilder.h"

#include "triax/Conversion/RuntimeABI.h"
#include "triax/Dialect/Triax/IR/Triax.h"

#include <functional>

using namespace mlir;
using namespace mlir::triax;
using namespace mlir::triax::kernels;

namespace {

/// sqrt(sum of squares) over all gradients, accumulated in f64 in a fixed
/// order (the same norm, bit for bit, on every run).
struct GlobalNormLowering : OpConversionPattern<GlobalNormOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(GlobalNormOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    KernelBuilder k(rewriter, op.getLoc());
    std::optional<ArrayRef<int64_t>> replicas = op.getReplicas();
    Value total = k.f64(0.0);
    for (auto [index, grad] : llvm::enumerate(adaptor.getGrads())) {
      Value flat = k.flat(grad);
      int64_t n = cast<MemRefType>(flat.getType()).getNumElements();
      // A piece held by r members of the group counts 1/r on each.
      int64_t r = replicas ? (*replicas)[index] : 1;
      Value sum =
          k.reduce(n, {r > 1 ? k.f64(0.0) : total},
                   [&](KernelBuilder &k, Value i, ValueRange acc) {
                     Value g = k.toF64(k.load(flat, i));
                     return SmallVector<Value>{k.add(acc[0], k.mul(g, g))};
                   })[0];
      total = r > 1 ? k.add(total, k.div(sum, k.f64(double(r)))) : sum;
    }
    Value out = k.alloc(op.getType());
    if (op.getMesh()) {
      // The pieces' square sums, summed over the group, then the root.
      FailureOr<int64_t> mask =
          axisMask(op, op.getMeshAttr(), op.getAxesAttr());
      if (failed(mask))
        return failure();
      k.store(k.toF32(total), out, {});
      allReduceInPlace(k, out, /*sum=*/0, *mask);
      k.store(k.sqrt(k.load(out, {})), out, {});
    } else {
      k.store(k.toF32(k.sqrt(total)), out, {});
    }
    rewriter.replaceOp(op, out);
    return success();
  }
};

/// The buffers and constants of one parameter's AdamW update.
struct AdamWUpdate {
  Value p, m, v, g; // flat views: parameter, moments, gradient
  int64_t n;
  double beta1, beta2;
  Value bc1, bc2, eps, wd;
};

/// Views and bias corrections of `op`'s update (`grad`: its converted
/// gradient), built before the loop.
FailureOr<AdamWUpdate> prepareAdamW(KernelBuilder &k, AdamWOp op, Value grad,
                                    const ParamIndex &params,
                                    FailureOr<int64_t> index) {
  if (failed(index))
    return failure();
  auto type = cast<MemRefType>(grad.getType());
  if (!type.getElementType().isF32())
    return op.emitOpError("only f32 parameters are updated on the CPU yet");
  // Under ZeRO the gradient is this rank's chunk, and so are the moments
  // and the part of the parameter it updates.
  bool chunked = params.zeroSharded.contains(op.getParam());
  auto view = [&](int kind) {
    return chunked ? k.stateChunk(kind, *index, type)
                   : k.flat(k.state(kind, *index, type));
  };
  AdamWUpdate u;
  u.p = view(::triax::rt::kParam);
  u.m = view(::triax::rt::kAdamM);
  u.v = view(::triax::rt::kAdamV);
  u.g = k.flat(grad);
  u.n = type.getNumElements();
  u.beta1 = op.getBeta1().convertToDouble();
  u.beta2 = op.getBeta2().convertToDouble();
  Value step = arith::SIToFPOp::create(k.builder(), op.getLoc(),
                                       k.builder().getF32Type(), op.getStep());
  u.bc1 = k.sub(k.f32(1.0), k.pow(k.f32(u.beta1), step));
  u.bc2 = k.sub(k.f32(1.0), k.pow(k.f32(u.beta2), step));
  u.eps = k.f32(op.getEps().convertToDouble());
  u.wd = k.f32(op.getWeightDecay().convertToDouble());
  return u;
}

/// Element `i` of one parameter's update (the same arithmetic, in the same
/// order, whether or not the loop is fused with other parameters').
void updateElement(KernelBuilder &k, const AdamWUpdate &u, Value lr,
                   Value scale, ValueRange i) {
  Value gi = k.mul(k.load(u.g, i), scale);
  Value mi = k.add(k.mul(k.f32(u.beta1), k.load(u.m, i)),
                   k.mul(k.f32(1.0 - u.beta1), gi));
  Value vi = k.add(k.mul(k.f32(u.beta2), k.load(u.v, i)),
                   k.mul(k.f32(1.0 - u.beta2), k.mul(gi, gi)));
  Value mhat = k.div(mi, u.bc1), vhat = k.div(vi, u.bc2);
  Value pi = k.load(u.p, i);
  Value update =
      k.add(k.div(mhat, k.add(k.sqrt(vhat), u.eps)), k.mul(u.wd, pi));
  k.store(k.sub(pi, k.mul(lr, update)), u.p, i);
  k.store(mi, u.m, i);
  k.store(vi, u.v, i);
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
/// is AdamWLowering's loop. Runs longer than kMaxRun are cut (the kernel's
/// parameters must fit a launch): tiny's 36 updates are 2 launches, gpt2's
/// 196 are 9.
struct FusedAdamWLowering : ParamPattern<AdamWOp> {
  using ParamPattern::ParamPattern;
  static constexpr int64_t kMaxRun = 24;
  LogicalResult
  matchAndRewrite(AdamWOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    // Only the first op of a run (the others go with it). A run holds at
    // most kMaxRun updates: each passes four buffers (memref descriptors of
    // 40 bytes on the GPU) and two bias corrections to the kernel, 168
    // bytes, and PTX before ISA 8.1 (+ptx80) allows 4352 bytes of kernel
    // parameters.
    int64_t before = 0;
    for (Operation *prev = op->getPrevNode(); sameStep(op, prev);
         prev = prev->getPrevNode())
      ++before;
    if (before % kMaxRun != 0)
      return rewriter.notifyMatchFailure(op, "not the first adamw of a run");
    SmallVector<AdamWOp> run{op};
    while (int64_t(run.size()) < kMaxRun &&
           sameStep(op, run.back()->getNextNode()))
      run.push_back(cast<AdamWOp>(run.back()->getNextNode()));
    // The views, constants and the loop go in front of the run (the ops
    // are consecutive, so every operand is defined there), which keeps
    // the later runs' chains of adamw ops (and their heads) intact.
    rewriter.setInsertionPoint(op);
    KernelBuilder k(rewriter, op.getLoc());
    SmallVector<AdamWUpdate> updates;
    SmallVector<int64_t> offsets{0};
    for (AdamWOp member : run) {
      Value grad = rewriter.getRemappedValue(member.getGrad());
      if (!grad)
        return rewriter.notifyMatchFailure(member, "gradient not converted");
      FailureOr<AdamWUpdate> u = prepareAdamW(
          k, member, grad, params, paramIndex(member, member.getParam()));
      if (failed(u))
        return failure();
      updates.push_back(*u);
      offsets.push_back(offsets.back() + u->n);
    }
    Value lr = adaptor.getLr(), scale = adaptor.getGradScale();
    OpBuilder &b = rewriter;
    Location loc = op.getLoc();
    // Parameters [lo, hi) hold element e (offsets[lo] <= e < offsets[hi]).
    std::function<void(KernelBuilder &, Value, size_t, size_t)> tree =
        [&](KernelBuilder &k, Value e, size_t lo, size_t hi) {
          if (hi - lo == 1) {
            Value local = e;
            if (offsets[lo] != 0)
              local = arith::SubIOp::create(b, loc, e, k.index(offsets[lo]));
            updateElement(k, updates[lo], lr, scale, ValueRange{local});
            return;
          }
          size_t mid = (lo + hi) / 2;
          Value below = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult,
                                              e, k.index(offsets[mid]));
          auto branch = scf::IfOp::create(b, loc, below, /*withElse=*/true);
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPoint(branch.thenBlock()->getTerminator());
          tree(k, e, lo, mid);
          b.setInsertionPoint(branch.elseBlock()->getTerminator());
          tree(k, e, mid, hi);
        };
    k.parallel({offsets.back()}, [&](KernelBuilder &k, ValueRange i) {
      tree(k, i[0], 0, run.size());
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
    auto type = cast<MemRefType>(adaptor.getGrad().getType());
    Value buffer = k.flat(k.state(::triax::rt::kGrad, *index, type));
    Value g = k.flat(adaptor.getGrad());
    k.parallel({type.getNumElements()}, [&](KernelBuilder &k, ValueRange i) {
      k.store(k.add(k.load(buffer, i), k.load(g, i)), buffer, i);
    });
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
    rewriter.replaceOp(op, k.state(::triax::rt::kGrad, *index, type));
    return success();
  }
};

} // namespace

void mlir::triax::kernels::populateOptimizerPatterns(
    TypeConverter &converter, RewritePatternSet &patterns,
    const ParamIndex &params, bool fuseOptimizer) {
  patterns.add<GlobalNormLowering>(converter, patterns.getContext());
  patterns.add<AccumulateGradLowering, GetGradLowering>(
      converter, patterns.getContext(), params);
  if (fuseOptimizer)
    patterns.add<FusedAdamWLowering>(converter, patterns.getContext(), params);
  else
    patterns.add<AdamWLowering>(converter, patterns.getContext(), params);
}
