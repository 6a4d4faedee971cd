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
//
//===----------------------------------------------------------------------===//

#include "KernelBuilder.h"

#include "triax/Dialect/Triax/IR/Triax.h"

#include "mlir/IR/IRMapping.h"

using namespace mlir;
using namespace mlir::triax;
using namespace mlir::triax::kernels;

namespace {

/// One parallel loop over all elements: out[i] = op's formula(in0[i], ...).
struct ElementwiseLowering
    : OpInterfaceConversionPattern<ScalarElementwiseOpInterface> {
  using OpInterfaceConversionPattern::OpInterfaceConversionPattern;

  LogicalResult
  matchAndRewrite(ScalarElementwiseOpInterface op, ArrayRef<Value> operands,
                  ConversionPatternRewriter &rewriter) const override {
    KernelBuilder k(rewriter, op->getLoc());
    auto type = cast<RankedTensorType>(op->getResult(0).getType());
    Value out = k.alloc(type);
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
    for (Type type : op.getResultTypes()) {
      outs.push_back(k.alloc(cast<RankedTensorType>(type)));
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

} // namespace

void mlir::triax::kernels::populateElementwisePatterns(
    TypeConverter &converter, RewritePatternSet &patterns) {
  MLIRContext *ctx = patterns.getContext();
  patterns.add<ElementwiseLowering, FusedElementwiseLowering>(converter, ctx);
}
