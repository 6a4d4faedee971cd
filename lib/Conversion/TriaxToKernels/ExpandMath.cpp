//===- ExpandMath.cpp - math.tanh as arithmetic LLVM vectorizes -----------===//
//
// triax-expand-math: each f32 math.tanh becomes Triax's formula (Passes.td
// has its derivation), so that CPU loops that evaluate a tanh (GELU and its
// gradient) vectorize instead of calling libm once per element. The
// runtime's GELU epilogue (kernel_abi.cpp, trxTanh) evaluates the same
// operations in the same order; keep the two in step.
//
//===----------------------------------------------------------------------===//

#include "triax/Conversion/Passes.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::triax {
#define GEN_PASS_DEF_TRIAXEXPANDMATH
#include "triax/Conversion/Passes.h.inc"
} // namespace mlir::triax

using namespace mlir;

namespace {

/// The constants of the formula, as f32.
constexpr float kClamp = 9.0f;
constexpr float kLog2E = 1.44269504088896341f;
constexpr float kLn2Hi = 0.693145751953125f; // ln 2 to 16 bits: n ln2_hi exact
constexpr float kLn2Lo = 1.42860682030941723212e-6f;

/// tanh(x) for f32 x (Passes.td, TriaxExpandMath).
struct ExpandTanh : OpRewritePattern<math::TanhOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(math::TanhOp op,
                                PatternRewriter &rewriter) const override {
    if (!op.getType().isF32())
      return rewriter.notifyMatchFailure(op, "not f32");
    Location loc = op.getLoc();
    OpBuilder &b = rewriter;
    Type f32 = b.getF32Type(), i32 = b.getI32Type();
    auto c = [&](float v) -> Value {
      return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(v));
    };
    auto ci = [&](int32_t v) -> Value {
      return arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(v));
    };
    auto mul = [&](Value x, Value y) -> Value {
      return arith::MulFOp::create(b, loc, x, y);
    };
    auto add = [&](Value x, Value y) -> Value {
      return arith::AddFOp::create(b, loc, x, y);
    };
    auto sub = [&](Value x, Value y) -> Value {
      return arith::SubFOp::create(b, loc, x, y);
    };

    Value x = op.getOperand();
    // a = |x| clamped to 9 (a select on a > 9, so that NaN stays NaN).
    Value a = math::AbsFOp::create(b, loc, x);
    Value big =
        arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT, a, c(kClamp));
    a = arith::SelectOp::create(b, loc, big, c(kClamp), a);
    Value y = mul(c(-2.0f), a);
    // n = the integer nearest y / ln 2 (y <= 0: truncating z - 1/2 rounds).
    Value n =
        arith::FPToSIOp::create(b, loc, i32, sub(mul(y, c(kLog2E)), c(0.5f)));
    Value nf = arith::SIToFPOp::create(b, loc, f32, n);
    Value r = sub(sub(y, mul(nf, c(kLn2Hi))), mul(nf, c(kLn2Lo)));
    // p = expm1(r): r + r^2 (1/2! + r (1/3! + ... + r / 7!)).
    Value q = c(1.0f / 5040.0f);
    for (float k :
         {1.0f / 720.0f, 1.0f / 120.0f, 1.0f / 24.0f, 1.0f / 6.0f, 0.5f})
      q = add(c(k), mul(r, q));
    Value p = add(r, mul(mul(r, r), q));
    // s = 2^n from its exponent bits; e = s p + (s - 1) = exp(y) - 1.
    Value bits = arith::ShLIOp::create(
        b, loc, arith::AddIOp::create(b, loc, n, ci(127)), ci(23));
    Value s = arith::BitcastOp::create(b, loc, f32, bits);
    Value e = add(mul(s, p), sub(s, c(1.0f)));
    Value t = arith::DivFOp::create(b, loc, arith::NegFOp::create(b, loc, e),
                                    add(c(2.0f), e));
    // copysign(t, x) on the bits (math.copysign has no lowering to LLVM
    // here): t's magnitude, x's sign.
    auto bitsOf = [&](Value v) -> Value {
      return arith::BitcastOp::create(b, loc, i32, v);
    };
    Value magnitude = arith::AndIOp::create(b, loc, bitsOf(t), ci(0x7fffffff));
    Value sign = arith::AndIOp::create(b, loc, bitsOf(x), ci(INT32_MIN));
    rewriter.replaceOp(
        op, arith::BitcastOp::create(
                b, loc, f32, arith::OrIOp::create(b, loc, magnitude, sign)));
    return success();
  }
};

struct TriaxExpandMathPass
    : public mlir::triax::impl::TriaxExpandMathBase<TriaxExpandMathPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<ExpandTanh>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
