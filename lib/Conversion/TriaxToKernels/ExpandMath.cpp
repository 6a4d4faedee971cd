//===- ExpandMath.cpp - math.tanh and vector exp as arithmetic ------------===//
//
// triax-expand-math: each f32 math.tanh becomes Triax's formula (Passes.td
// has its derivation), so that CPU loops that evaluate a tanh (GELU and its
// gradient) vectorize instead of calling libm once per element. The
// runtime's GELU epilogue (kernel_abi.cpp, trxTanh) evaluates the same
// operations in the same order; keep the two in step. And each math.exp of
// a vector of f32 (the flash kernels' key blocks, AttentionBlocks.cpp)
// becomes arithmetic on its lanes, where the LLVM lowering makes one libm
// call per lane; a scalar exp stays libm's.
//
//===----------------------------------------------------------------------===//

#include "triax/Conversion/Passes.h"

#include "KernelBuilder.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::triax {
#define GEN_PASS_DEF_TRIAXEXPANDMATH
#include "triax/Conversion/Passes.h.inc"
} // namespace mlir::triax

using namespace mlir;
using mlir::triax::kernels::KernelBuilder;

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
    KernelBuilder k(rewriter, op.getLoc());
    OpBuilder &b = k.builder();
    Location loc = k.getLoc();
    Type f32 = b.getF32Type(), i32 = b.getI32Type();
    auto bitcast = [&](Type type, Value v) -> Value {
      return arith::BitcastOp::create(b, loc, type, v);
    };
    auto andi = [&](Value x, Value y) -> Value {
      return arith::AndIOp::create(b, loc, x, y);
    };

    Value x = op.getOperand();
    // a = |x| clamped to 9 (a select on a > 9, so that NaN stays NaN).
    Value a = math::AbsFOp::create(b, loc, x);
    Value big = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT, a,
                                      k.f32(kClamp));
    a = k.select(big, k.f32(kClamp), a);
    Value y = k.mul(k.f32(-2.0f), a);
    // n = the integer nearest y / ln 2 (y <= 0: truncating z - 1/2 rounds).
    Value n = arith::FPToSIOp::create(
        b, loc, i32, k.sub(k.mul(y, k.f32(kLog2E)), k.f32(0.5f)));
    Value nf = arith::SIToFPOp::create(b, loc, f32, n);
    Value r =
        k.sub(k.sub(y, k.mul(nf, k.f32(kLn2Hi))), k.mul(nf, k.f32(kLn2Lo)));
    // p = expm1(r): r + r^2 (1/2! + r (1/3! + ... + r / 7!)).
    Value q = k.f32(1.0f / 5040.0f);
    for (float c :
         {1.0f / 720.0f, 1.0f / 120.0f, 1.0f / 24.0f, 1.0f / 6.0f, 0.5f})
      q = k.add(k.f32(c), k.mul(r, q));
    Value p = k.add(r, k.mul(k.mul(r, r), q));
    // s = 2^n from its exponent bits; e = s p + (s - 1) = exp(y) - 1.
    Value bits =
        arith::ShLIOp::create(b, loc, k.addi(n, k.i32(127)), k.i32(23));
    Value s = bitcast(f32, bits);
    Value e = k.add(k.mul(s, p), k.sub(s, k.f32(1.0f)));
    Value t = k.div(k.neg(e), k.add(k.f32(2.0f), e));
    // copysign(t, x) on the bits (math.copysign has no lowering to LLVM
    // here): t's magnitude, x's sign.
    Value magnitude = andi(bitcast(i32, t), k.i32(0x7fffffff));
    Value sign = andi(bitcast(i32, x), k.i32(INT32_MIN));
    rewriter.replaceOp(
        op, bitcast(f32, arith::OrIOp::create(b, loc, magnitude, sign)));
    return success();
  }
};

/// The constants of the vector exp.
constexpr float kExpLow = -104.0f; // exp rounds to 0 below about -103.97
constexpr float kExpHigh = 89.0f;  // exp rounds to +inf above about 88.72
constexpr float kRoundMagic = 12582912.0f; // 1.5 * 2^23: (t + it) - it
                                           // rounds t to an integer (even)

/// exp(x) for a vector of f32 (Passes.td, TriaxExpandMath).
struct ExpandVectorExp : OpRewritePattern<math::ExpOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(math::ExpOp op,
                                PatternRewriter &rewriter) const override {
    auto type = dyn_cast<VectorType>(op.getType());
    if (!type || !type.getElementType().isF32())
      return rewriter.notifyMatchFailure(op, "not a vector of f32");
    KernelBuilder k(rewriter, op.getLoc());
    OpBuilder &b = k.builder();
    Location loc = k.getLoc();
    auto ints = VectorType::get(type.getShape(), b.getI32Type());
    auto cst = [&](float v) -> Value {
      return arith::ConstantOp::create(
          b, loc, DenseElementsAttr::get(type, b.getF32FloatAttr(v)));
    };
    auto icst = [&](int32_t v) -> Value {
      return arith::ConstantOp::create(
          b, loc, DenseElementsAttr::get(ints, b.getI32IntegerAttr(v)));
    };
    auto cmp = [&](arith::CmpFPredicate p, Value x, Value y) -> Value {
      return arith::CmpFOp::create(b, loc, p, x, y);
    };
    // 2^m for integers m in [-126, 127], from the exponent bits.
    auto pow2 = [&](Value m) -> Value {
      Value bits =
          arith::ShLIOp::create(b, loc, k.addi(m, icst(127)), icst(23));
      return arith::BitcastOp::create(b, loc, type, bits);
    };

    Value x = op.getOperand();
    // c = x clamped to [-104, 89] (selects: NaN passes, and is put back at
    // the end).
    Value c = k.select(cmp(arith::CmpFPredicate::OLT, x, cst(kExpLow)),
                       cst(kExpLow), x);
    c = k.select(cmp(arith::CmpFPredicate::OGT, c, cst(kExpHigh)),
                 cst(kExpHigh), c);
    // n = the integer nearest c / ln 2, in [-150, 129].
    Value t = k.mul(c, cst(kLog2E));
    Value nf = k.sub(k.add(t, cst(kRoundMagic)), cst(kRoundMagic));
    Value n = arith::FPToSIOp::create(b, loc, ints, nf);
    Value r = k.sub(k.sub(c, k.mul(nf, cst(kLn2Hi))), k.mul(nf, cst(kLn2Lo)));
    // p = exp(r) = 1 + r q(r), q(r) = 1 + r/2! + ... + r^6/7! by Estrin's
    // scheme with fused multiply-adds: (1 + r/2) + r^2 (1/3! + r/4!) +
    // r^4 (1/5! + r/6! + r^2/7!), three levels of independent operations
    // where Horner's rule chains six (the softmax's exp is on the critical
    // path of every key block).
    auto fma = [&](Value x, Value y, Value z) -> Value {
      return vector::FMAOp::create(b, loc, x, y, z);
    };
    Value r2 = k.mul(r, r);
    Value r4 = k.mul(r2, r2);
    // (One op per statement: the IR order must not depend on the
    // compiler's argument evaluation order.)
    auto term = [&](Value x, float a, float c) {
      Value va = cst(a);
      Value vc = cst(c);
      return fma(x, va, vc);
    };
    Value q01 = term(r, 0.5f, 1.0f);
    Value q23 = term(r, 1.0f / 24.0f, 1.0f / 6.0f);
    Value q45 = term(r, 1.0f / 720.0f, 1.0f / 120.0f);
    Value c6 = cst(1.0f / 5040.0f);
    Value q456 = fma(r2, c6, q45);
    Value q0123 = fma(r2, q23, q01);
    Value q = fma(r4, q456, q0123);
    Value one = cst(1.0f);
    Value p = fma(r, q, one);
    // p 2^n as p 2^h 2^(n - h), h = floor(n / 2): both factors normal, the
    // first product exact, the second rounded once (to a subnormal, 0 or
    // +inf at the ends).
    Value half = arith::ShRSIOp::create(b, loc, n, icst(1));
    Value e = k.mul(k.mul(p, pow2(half)), pow2(k.subi(n, half)));
    Value nan = cmp(arith::CmpFPredicate::UNO, x, x);
    rewriter.replaceOp(op, k.select(nan, x, e));
    return success();
  }
};

struct TriaxExpandMathPass
    : public mlir::triax::impl::TriaxExpandMathBase<TriaxExpandMathPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<ExpandTanh, ExpandVectorExp>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
