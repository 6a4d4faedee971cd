//===- ElementwiseKernels.cpp - add, mul, activations and their grads -----===//

#include "KernelBuilder.h"

#include "triax/Dialect/Triax/IR/Triax.h"

#include <cmath>

using namespace mlir;
using namespace mlir::triax;
using namespace mlir::triax::kernels;

namespace {

/// One parallel loop over all elements: out[i] = fn(in0[i], in1[i], ...).
template <typename OpT>
struct ElementwiseLowering : OpConversionPattern<OpT> {
  using ScalarFn =
      std::function<Value(KernelBuilder &, ArrayRef<Value> operands)>;
  ElementwiseLowering(TypeConverter &converter, MLIRContext *ctx, ScalarFn fn)
      : OpConversionPattern<OpT>(converter, ctx), fn(std::move(fn)) {}

  LogicalResult
  matchAndRewrite(OpT op, typename OpConversionPattern<OpT>::OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    KernelBuilder k(rewriter, op.getLoc());
    auto type = cast<RankedTensorType>(op->getResult(0).getType());
    if (!type.getElementType().isF32())
      return op.emitOpError("only f32 kernels are generated on the CPU yet");
    Value out = k.alloc(type);
    Value flatOut = k.flat(out);
    SmallVector<Value> inputs;
    for (Value operand : adaptor.getOperands())
      inputs.push_back(k.flat(operand));
    k.parallel({type.getNumElements()}, [&](KernelBuilder &k, ValueRange i) {
      SmallVector<Value> scalars;
      for (Value in : inputs)
        scalars.push_back(k.load(in, i));
      k.store(fn(k, scalars), flatOut, i);
    });
    rewriter.replaceOp(op, out);
    return success();
  }
  ScalarFn fn;
};

constexpr double kGeluCoeff = 0.044715;

/// tanh(sqrt(2/pi) (x + 0.044715 x^3)).
Value geluTanh(KernelBuilder &k, Value x) {
  double c = std::sqrt(2.0 / M_PI);
  Value x3 = k.mul(k.mul(x, x), x);
  return k.tanh(k.mul(k.f32(c), k.add(x, k.mul(k.f32(kGeluCoeff), x3))));
}

} // namespace

void mlir::triax::kernels::populateElementwisePatterns(
    TypeConverter &converter, RewritePatternSet &patterns) {
  MLIRContext *ctx = patterns.getContext();
  patterns.add<ElementwiseLowering<AddOp>>(
      converter, ctx,
      [](KernelBuilder &k, ArrayRef<Value> v) { return k.add(v[0], v[1]); });
  patterns.add<ElementwiseLowering<MulOp>>(
      converter, ctx,
      [](KernelBuilder &k, ArrayRef<Value> v) { return k.mul(v[0], v[1]); });
  // gelu(x) = 0.5 x (1 + t)
  patterns.add<ElementwiseLowering<GeluOp>>(
      converter, ctx, [](KernelBuilder &k, ArrayRef<Value> v) {
        Value t = geluTanh(k, v[0]);
        return k.mul(k.mul(k.f32(0.5), v[0]), k.add(k.f32(1.0), t));
      });
  // gelu'(x) = 0.5 (1 + t) + 0.5 x (1 - t^2) sqrt(2/pi) (1 + 3 * 0.044715 x^2)
  patterns.add<ElementwiseLowering<GeluGradOp>>(
      converter, ctx, [](KernelBuilder &k, ArrayRef<Value> v) {
        Value x = v[0], dy = v[1];
        Value t = geluTanh(k, x);
        Value du = k.mul(k.f32(std::sqrt(2.0 / M_PI)),
                         k.add(k.f32(1.0),
                               k.mul(k.f32(3.0 * kGeluCoeff), k.mul(x, x))));
        Value left = k.mul(k.f32(0.5), k.add(k.f32(1.0), t));
        Value right = k.mul(k.mul(k.mul(k.f32(0.5), x),
                                  k.sub(k.f32(1.0), k.mul(t, t))),
                            du);
        return k.mul(dy, k.add(left, right));
      });
  // silu(x) = x s, s = sigmoid(x)
  patterns.add<ElementwiseLowering<SiluOp>>(
      converter, ctx, [](KernelBuilder &k, ArrayRef<Value> v) {
        return k.mul(v[0], k.sigmoid(v[0]));
      });
  // silu'(x) = s (1 + x (1 - s))
  patterns.add<ElementwiseLowering<SiluGradOp>>(
      converter, ctx, [](KernelBuilder &k, ArrayRef<Value> v) {
        Value x = v[0], s = k.sigmoid(x);
        Value d = k.mul(s, k.add(k.f32(1.0), k.mul(x, k.sub(k.f32(1.0), s))));
        return k.mul(v[1], d);
      });
}
