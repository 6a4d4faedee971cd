//===- TriaxScalar.cpp - Scalar formulas of the elementwise ops -----------===//
//
// ScalarElementwiseOpInterface: the formula of one element of each
// elementwise op, built from `arith` and `math` ops. Every kernel and fused
// group of these ops is generated from here, so each formula is written
// once. Constants take the operand's element type.
//
//===----------------------------------------------------------------------===//

#include "triax/Dialect/Triax/IR/Triax.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"

#include <cmath>

using namespace mlir;
using namespace mlir::triax;

namespace {

/// Scalar arithmetic at one insertion point, in the element type of `like`.
class Scalar {
public:
  Scalar(OpBuilder &b, Location loc, Value like)
      : b(b), loc(loc), type(like.getType()) {}

  Value c(double v) {
    return arith::ConstantOp::create(b, loc, b.getFloatAttr(type, v));
  }
  Value add(Value x, Value y) { return arith::AddFOp::create(b, loc, x, y); }
  Value sub(Value x, Value y) { return arith::SubFOp::create(b, loc, x, y); }
  Value mul(Value x, Value y) { return arith::MulFOp::create(b, loc, x, y); }
  Value div(Value x, Value y) { return arith::DivFOp::create(b, loc, x, y); }
  Value neg(Value x) { return arith::NegFOp::create(b, loc, x); }
  Value exp(Value x) { return math::ExpOp::create(b, loc, x); }
  Value tanh(Value x) { return math::TanhOp::create(b, loc, x); }
  /// 1 / (1 + exp(-x)).
  Value sigmoid(Value x) { return div(c(1.0), add(c(1.0), exp(neg(x)))); }

  /// tanh(sqrt(2/pi) (x + 0.044715 x^3)), the core of the GELU
  /// approximation.
  Value geluTanh(Value x) {
    Value x3 = mul(mul(x, x), x);
    return tanh(mul(c(kSqrt2OverPi), add(x, mul(c(kGeluCoeff), x3))));
  }

  static constexpr double kGeluCoeff = 0.044715;
  static inline const double kSqrt2OverPi = std::sqrt(2.0 / M_PI);

private:
  OpBuilder &b;
  Location loc;
  Type type;
};

} // namespace

Value AddOp::buildScalar(OpBuilder &b, Location loc, ValueRange v) {
  return Scalar(b, loc, v[0]).add(v[0], v[1]);
}

Value MulOp::buildScalar(OpBuilder &b, Location loc, ValueRange v) {
  return Scalar(b, loc, v[0]).mul(v[0], v[1]);
}

/// gelu(x) = 0.5 x (1 + t), t = tanh(sqrt(2/pi) (x + 0.044715 x^3)).
Value GeluOp::buildScalar(OpBuilder &b, Location loc, ValueRange v) {
  Scalar s(b, loc, v[0]);
  Value x = v[0];
  Value t = s.geluTanh(x);
  return s.mul(s.mul(s.c(0.5), x), s.add(s.c(1.0), t));
}

/// dy * gelu'(x), with
/// gelu'(x) = 0.5 (1 + t) + 0.5 x (1 - t^2) sqrt(2/pi) (1 + 3 * 0.044715 x^2).
Value GeluGradOp::buildScalar(OpBuilder &b, Location loc, ValueRange v) {
  Scalar s(b, loc, v[0]);
  Value x = v[0], dy = v[1];
  Value t = s.geluTanh(x);
  Value du =
      s.mul(s.c(Scalar::kSqrt2OverPi),
            s.add(s.c(1.0), s.mul(s.c(3.0 * Scalar::kGeluCoeff), s.mul(x, x))));
  Value left = s.mul(s.c(0.5), s.add(s.c(1.0), t));
  Value right =
      s.mul(s.mul(s.mul(s.c(0.5), x), s.sub(s.c(1.0), s.mul(t, t))), du);
  return s.mul(dy, s.add(left, right));
}

/// silu(x) = x sigmoid(x).
Value SiluOp::buildScalar(OpBuilder &b, Location loc, ValueRange v) {
  Scalar s(b, loc, v[0]);
  return s.mul(v[0], s.sigmoid(v[0]));
}

/// dy * silu'(x), with silu'(x) = sg (1 + x (1 - sg)), sg = sigmoid(x).
Value SiluGradOp::buildScalar(OpBuilder &b, Location loc, ValueRange v) {
  Scalar s(b, loc, v[0]);
  Value x = v[0], dy = v[1];
  Value sg = s.sigmoid(x);
  Value d = s.mul(sg, s.add(s.c(1.0), s.mul(x, s.sub(s.c(1.0), sg))));
  return s.mul(dy, d);
}
