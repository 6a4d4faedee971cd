//===- KernelBuilder.cpp - Building loop kernels on buffers ---------------===//

#include "KernelBuilder.h"

#include "triax/Conversion/RuntimeABI.h"

using namespace mlir;
using namespace mlir::triax::kernels;

Value KernelBuilder::allocFilled(ShapedType type, double value) {
  Value buffer = alloc(type);
  Value flatView = flat(buffer);
  Type elt = type.getElementType();
  Value fill = arith::ConstantOp::create(b, loc, b.getFloatAttr(elt, value));
  parallel({cast<MemRefType>(flatView.getType()).getNumElements()},
           [&](KernelBuilder &k, ValueRange i) { k.store(fill, flatView, i); });
  return buffer;
}

Value KernelBuilder::rows(Value buffer) {
  auto type = cast<MemRefType>(buffer.getType());
  if (type.getRank() == 2)
    return buffer;
  if (type.getRank() == 1) {
    auto expanded =
        MemRefType::get({1, type.getDimSize(0)}, type.getElementType());
    return memref::ExpandShapeOp::create(
        b, loc, expanded, buffer, ArrayRef<ReassociationIndices>{{0, 1}});
  }
  ReassociationIndices leading;
  for (int64_t d = 0; d + 1 < type.getRank(); ++d)
    leading.push_back(d);
  return memref::CollapseShapeOp::create(
      b, loc, buffer,
      ArrayRef<ReassociationIndices>{leading, {type.getRank() - 1}});
}

Value KernelBuilder::flat(Value buffer) {
  auto type = cast<MemRefType>(buffer.getType());
  if (type.getRank() == 1)
    return buffer;
  if (type.getRank() == 0)
    return memref::ExpandShapeOp::create(
        b, loc, MemRefType::get({1}, type.getElementType()), buffer,
        ArrayRef<ReassociationIndices>{});
  ReassociationIndices all;
  for (int64_t d = 0; d < type.getRank(); ++d)
    all.push_back(d);
  return memref::CollapseShapeOp::create(b, loc, buffer,
                                         ArrayRef<ReassociationIndices>{all});
}

std::pair<int64_t, int64_t> KernelBuilder::rowsCols(Value buffer) {
  auto type = cast<MemRefType>(buffer.getType());
  if (type.getRank() == 0)
    return {1, 1};
  int64_t cols = type.getShape().back();
  return {type.getNumElements() / cols, cols};
}

Value KernelBuilder::block(Value buffer2d, Value row, Value col, int64_t rows,
                           int64_t cols) {
  SmallVector<OpFoldResult> offsets = {row, col};
  SmallVector<OpFoldResult> sizes = {b.getIndexAttr(rows),
                                     b.getIndexAttr(cols)};
  SmallVector<OpFoldResult> strides = {b.getIndexAttr(1), b.getIndexAttr(1)};
  return memref::SubViewOp::create(b, loc, buffer2d, offsets, sizes, strides);
}

void KernelBuilder::parallel(ArrayRef<int64_t> upperBounds, BodyFn body) {
  SmallVector<Value> lbs, ubs, steps;
  for (int64_t ub : upperBounds) {
    lbs.push_back(index(0));
    ubs.push_back(index(ub));
    steps.push_back(index(1));
  }
  scf::ParallelOp::create(b, loc, lbs, ubs, steps,
                          [&](OpBuilder &nested, Location l, ValueRange ivs) {
                            KernelBuilder k(nested, l);
                            body(k, ivs);
                          });
}

void KernelBuilder::loop(ArrayRef<int64_t> upperBounds, BodyFn body) {
  SmallVector<Value> ivs;
  std::function<void(KernelBuilder &, size_t)> nest = [&](KernelBuilder &k,
                                                          size_t depth) {
    if (depth == upperBounds.size()) {
      body(k, ivs);
      return;
    }
    scf::ForOp::create(
        k.b, k.loc, k.index(0), k.index(upperBounds[depth]), k.index(1),
        ValueRange{}, [&](OpBuilder &nested, Location l, Value iv, ValueRange) {
          KernelBuilder inner(nested, l);
          ivs.push_back(iv);
          nest(inner, depth + 1);
          ivs.pop_back();
          scf::YieldOp::create(nested, l);
        });
  };
  nest(*this, 0);
}

SmallVector<Value> KernelBuilder::reduce(Value lower, Value upper,
                                         ValueRange init, ReduceFn body) {
  auto loop = scf::ForOp::create(
      b, loc, lower, upper, index(1), init,
      [&](OpBuilder &nested, Location l, Value iv, ValueRange args) {
        KernelBuilder k(nested, l);
        SmallVector<Value> next = body(k, iv, args);
        scf::YieldOp::create(nested, l, next);
      });
  return SmallVector<Value>(loop.getResults());
}

Value KernelBuilder::indexToF32(Value idx) {
  Value i64 = arith::IndexCastOp::create(b, loc, b.getI64Type(), idx);
  return arith::SIToFPOp::create(b, loc, b.getF32Type(), i64);
}

/// The strided 2-D f32 memref type the runtime's GEMM takes.
static MemRefType gemmOperandType(MLIRContext *ctx) {
  int64_t dyn = ShapedType::kDynamic;
  return MemRefType::get({dyn, dyn}, Float32Type::get(ctx),
                         StridedLayoutAttr::get(ctx, dyn, {dyn, dyn}));
}

void KernelBuilder::gemm(Value a, Value bm, Value c, bool transA, bool transB,
                         double alpha, double beta) {
  MemRefType type = gemmOperandType(b.getContext());
  SmallVector<Value> args;
  for (Value m : {a, bm, c})
    args.push_back(memref::CastOp::create(b, loc, type, m));
  args.append({i32(transA), i32(transB), f32(alpha), f32(beta)});
  func::CallOp::create(b, loc, ::triax::rt::kSgemm, TypeRange{}, args);
}

Value KernelBuilder::stateChunk(int kind, int64_t param, MemRefType type) {
  auto dynType = MemRefType::get({ShapedType::kDynamic}, b.getF32Type());
  Value view =
      func::CallOp::create(
          b, loc, ::triax::rt::kStateChunk, TypeRange{dynType},
          ValueRange{i32(kind), arith::ConstantOp::create(
                                    b, loc, b.getI64IntegerAttr(param))})
          .getResult(0);
  return memref::CastOp::create(b, loc, type, view);
}

Value KernelBuilder::dynamicFlat(Value buffer) {
  auto dynType = MemRefType::get({ShapedType::kDynamic}, b.getF32Type());
  return memref::CastOp::create(b, loc, dynType, flat(buffer));
}

Value KernelBuilder::state(int kind, int64_t param, MemRefType type) {
  int64_t dyn = ShapedType::kDynamic;
  bool matrix = type.getRank() == 2;
  auto dynType = matrix ? MemRefType::get({dyn, dyn}, b.getF32Type())
                        : MemRefType::get({dyn}, b.getF32Type());
  Value view =
      func::CallOp::create(
          b, loc, matrix ? ::triax::rt::kState2D : ::triax::rt::kState1D,
          TypeRange{dynType},
          ValueRange{i32(kind), arith::ConstantOp::create(
                                    b, loc, b.getI64IntegerAttr(param))})
          .getResult(0);
  return memref::CastOp::create(b, loc, type, view);
}

/// Declares the runtime's entry points (see RuntimeABI.h) in `module`.
void declareRuntimeFunctions(ModuleOp module);

void declareRuntimeFunctions(ModuleOp module) {
  MLIRContext *ctx = module.getContext();
  OpBuilder b = OpBuilder::atBlockBegin(module.getBody());
  Type f32 = b.getF32Type(), i32 = b.getI32Type(), i64 = b.getI64Type();
  int64_t dyn = ShapedType::kDynamic;
  MemRefType g = gemmOperandType(ctx);
  auto declare = [&](StringRef name, FunctionType type) {
    if (module.lookupSymbol(name))
      return;
    auto fn = func::FuncOp::create(b, module.getLoc(), name, type);
    fn.setPrivate();
    fn->setAttr("llvm.emit_c_interface", b.getUnitAttr());
  };
  declare(::triax::rt::kSgemm,
          b.getFunctionType({g, g, g, i32, i32, f32, f32}, {}));
  declare(::triax::rt::kState1D,
          b.getFunctionType({i32, i64}, {MemRefType::get({dyn}, f32)}));
  declare(::triax::rt::kState2D,
          b.getFunctionType({i32, i64}, {MemRefType::get({dyn, dyn}, f32)}));
  declare(::triax::rt::kAllReduceF32,
          b.getFunctionType({MemRefType::get({dyn}, f32), i32, i64}, {}));
  MemRefType flat = MemRefType::get({dyn}, f32);
  declare(::triax::rt::kReduceScatterF32,
          b.getFunctionType({flat, flat, i32, i64}, {}));
  declare(::triax::rt::kAllGatherF32, b.getFunctionType({flat, flat, i64}, {}));
  for (StringRef name : {::triax::rt::kSendF32, ::triax::rt::kRecvF32})
    declare(name, b.getFunctionType({flat, i64, i64, i64}, {}));
  declare(::triax::rt::kStateChunk, b.getFunctionType({i32, i64}, {flat}));
  declare(::triax::rt::kAllReduceGrads,
          b.getFunctionType({MemRefType::get({dyn}, i64), i32, i64}, {}));
  if (!module.lookupSymbol(::triax::rt::kZeroAllGatherParam))
    func::FuncOp::create(b, module.getLoc(), ::triax::rt::kZeroAllGatherParam,
                         b.getFunctionType({i64, i64}, {}))
        .setPrivate();
  if (!module.lookupSymbol(::triax::rt::kTraceBegin))
    func::FuncOp::create(b, module.getLoc(), ::triax::rt::kTraceBegin,
                         b.getFunctionType({i64, i64}, {}))
        .setPrivate();
  if (!module.lookupSymbol(::triax::rt::kTraceEnd))
    func::FuncOp::create(b, module.getLoc(), ::triax::rt::kTraceEnd,
                         b.getFunctionType({}, {}))
        .setPrivate();
  if (!module.lookupSymbol(::triax::rt::kGroupPosition))
    func::FuncOp::create(b, module.getLoc(), ::triax::rt::kGroupPosition,
                         b.getFunctionType({i64}, {i64}))
        .setPrivate();
}
