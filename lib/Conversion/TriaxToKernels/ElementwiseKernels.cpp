//===- ElementwiseKernels.cpp - Elementwise ops and fused groups ----------===//
//
// An elementwise op (ScalarElementwiseOpInterface: add, mul, activations
// and their gradients) is one parallel loop over all elements whose body is
// the op's own scalar formula (`buildScalar`, TriaxScalar.cpp): nothing
// here knows any op's math. Elements are computed in f32 for f32 and bf16
// tensors alike: KernelBuilder's load extends a bf16 element, its store
// rounds to the buffer's type (a triax.convert is just that). A
// `triax.fused_elementwise` is one parallel loop for the whole group: each
// input loaded once, the region's scalar ops cloned, each result stored.
// With elementwise-in-place a result is stored over an input the
// conversion marked (nothing reads it afterwards): every input's element is
// loaded before any result's is stored, at the same index.
//
//===----------------------------------------------------------------------===//

#include "KernelBuilder.h"

#include "triax/Dialect/Triax/IR/Triax.h"

#include "mlir/IR/IRMapping.h"

using namespace mlir;
using namespace mlir::triax;
using namespace mlir::triax::kernels;

namespace {

/// A conversion of a parameter read (a weight's bf16 copy) that
/// convert-triax-to-kernels marked for FusedParamCopyLowering.
bool isParamCopy(Operation *op) {
  return isa_and_nonnull<ConvertOp>(op) && op->hasAttr(kParamCopyAttr);
}

/// Result `index`'s buffer: with elementwise-in-place, the operand
/// convert-triax-to-kernels marked it to overwrite (kOverwritesAttr), when
/// that is a buffer of the kernels' own; else a new one. The loops below
/// load every operand's element before they store the result's.
Value resultBuffer(KernelBuilder &k, Operation *op, unsigned index,
                   ValueRange operands) {
  if (auto over = op->getAttrOfType<DenseI32ArrayAttr>(kOverwritesAttr))
    if (over[index] >= 0 && KernelBuilder::isOwnBuffer(operands[over[index]]))
      return operands[over[index]];
  return k.alloc(cast<RankedTensorType>(op->getResult(index).getType()));
}

/// One parallel loop over all elements: out[i] = op's formula(in0[i], ...).
/// (Not the marked parameter copies: FusedParamCopyLowering's.)
struct ElementwiseLowering
    : OpInterfaceConversionPattern<ScalarElementwiseOpInterface> {
  using OpInterfaceConversionPattern::OpInterfaceConversionPattern;

  LogicalResult
  matchAndRewrite(ScalarElementwiseOpInterface op, ArrayRef<Value> operands,
                  ConversionPatternRewriter &rewriter) const override {
    if (isParamCopy(op))
      return rewriter.notifyMatchFailure(op, "a fused parameter copy");
    KernelBuilder k(rewriter, op->getLoc());
    auto type = cast<RankedTensorType>(op->getResult(0).getType());
    Value out = resultBuffer(k, op, 0, operands);
    Value flatOut = k.flat(out);
    SmallVector<Value> inputs;
    for (Value operand : operands)
      inputs.push_back(k.flat(operand));
    k.parallel({type.getNumElements()}, [&](KernelBuilder &k, ValueRange i) {
      SmallVector<Value> scalars;
      for (Value in : inputs)
        scalars.push_back(k.load(in, i));
      k.store(op.buildScalar(k.builder(), k.getLoc(), scalars), flatOut, i);
    });
    rewriter.replaceOp(op, out);
    return success();
  }
};

/// One parallel loop for a fused group: load each input, run the region's
/// scalar ops, store each result.
struct FusedElementwiseLowering : OpConversionPattern<FusedElementwiseOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(FusedElementwiseOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    KernelBuilder k(rewriter, op.getLoc());
    SmallVector<Value> outs, flatOuts, flatIns;
    for (unsigned r = 0; r < op->getNumResults(); ++r) {
      outs.push_back(resultBuffer(k, op, r, adaptor.getInputs()));
      flatOuts.push_back(k.flat(outs.back()));
    }
    for (Value input : adaptor.getInputs())
      flatIns.push_back(k.flat(input));
    Block &body = op.getBodyBlock();
    int64_t elements =
        cast<RankedTensorType>(op.getResult(0).getType()).getNumElements();
    k.parallel({elements}, [&](KernelBuilder &k, ValueRange i) {
      IRMapping scalars;
      for (auto [arg, in] : llvm::zip_equal(body.getArguments(), flatIns))
        scalars.map(arg, k.load(in, i));
      for (Operation &scalarOp : body.without_terminator())
        k.builder().clone(scalarOp, scalars);
      for (auto [value, out] :
           llvm::zip_equal(op.getYield().getValues(), flatOuts))
        k.store(scalars.lookupOrDefault(value), out, i);
    });
    rewriter.replaceOp(op, outs);
    return success();
  }
};

/// fuse-optimizer: a run of consecutive conversions of parameter reads (a
/// function's bf16 weight copies, which convert-triax-to-kernels puts at
/// its start) becomes one parallel loop over their concatenated elements,
/// each converted exactly as ElementwiseLowering converts it: one GPU
/// launch per step instead of one per parameter. A run is cut where its
/// launch would pass more than `paramBytes` of kernel parameters (two 1-D
/// buffer descriptors, 80 bytes, per parameter). Matches the run's first
/// op; the others go with it.
struct FusedParamCopyLowering : OpConversionPattern<ConvertOp> {
  FusedParamCopyLowering(TypeConverter &converter, MLIRContext *ctx,
                         int64_t paramBytes)
      : OpConversionPattern(converter, ctx, /*benefit=*/2),
        paramBytes(paramBytes) {}
  int64_t paramBytes;

  LogicalResult
  matchAndRewrite(ConvertOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    if (!isParamCopy(op))
      return rewriter.notifyMatchFailure(op, "not a parameter's copy");
    // The runs are cut greedily from the first copy of a chain.
    constexpr int64_t kBytesPerCopy = 80;
    auto runFrom = [&](Operation *first) {
      SmallVector<ConvertOp> run{cast<ConvertOp>(first)};
      while (isParamCopy(run.back()->getNextNode()) &&
             (paramBytes <= 0 ||
              int64_t(run.size() + 1) * kBytesPerCopy <= paramBytes))
        run.push_back(cast<ConvertOp>(run.back()->getNextNode()));
      return run;
    };
    Operation *head = op;
    while (isParamCopy(head->getPrevNode()))
      head = head->getPrevNode();
    SmallVector<ConvertOp> run = runFrom(head);
    while (run.front() != op) {
      if (llvm::is_contained(run, op))
        return rewriter.notifyMatchFailure(op, "not the first of a run");
      run = runFrom(run.back()->getNextNode());
    }
    rewriter.setInsertionPoint(op);
    KernelBuilder k(rewriter, op.getLoc());
    SmallVector<Value> outs, ins, outFlats;
    SmallVector<int64_t> sizes;
    for (ConvertOp member : run) {
      Value in = rewriter.getRemappedValue(member.getInput());
      if (!in)
        return rewriter.notifyMatchFailure(member, "input not converted");
      auto type = cast<RankedTensorType>(member.getType());
      outs.push_back(k.alloc(type));
      outFlats.push_back(k.flat(outs.back()));
      ins.push_back(k.flat(in));
      sizes.push_back(type.getNumElements());
    }
    k.parallelConcat(sizes,
                     [&](KernelBuilder &k, size_t m, Value local, Value) {
                       k.store(k.load(ins[m], local), outFlats[m], local);
                     });
    for (auto [member, out] : llvm::zip(run, outs))
      rewriter.replaceOp(member, out);
    return success();
  }
};

} // namespace

void mlir::triax::kernels::populateElementwisePatterns(
    TypeConverter &converter, RewritePatternSet &patterns, bool fuseParamCopies,
    int64_t kernelParamBytes) {
  MLIRContext *ctx = patterns.getContext();
  patterns.add<ElementwiseLowering, FusedElementwiseLowering>(converter, ctx);
  if (fuseParamCopies)
    patterns.add<FusedParamCopyLowering>(converter, ctx, kernelParamBytes);
}
