//===- KernelBuilder.cpp - Building loop kernels on buffers ---------------===//

#include "KernelBuilder.h"

#include "triax/Conversion/RuntimeABI.h"

#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "llvm/ADT/StringSwitch.h"

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

void KernelBuilder::dispatchRanges(Value e, ArrayRef<int64_t> sizes,
                                   RangeBodyFn body) {
  SmallVector<int64_t> offsets{0};
  for (int64_t n : sizes)
    offsets.push_back(offsets.back() + n);
  // Ranges [lo, hi) hold e (offsets[lo] <= e < offsets[hi]).
  std::function<void(KernelBuilder &, size_t, size_t)> tree =
      [&](KernelBuilder &k, size_t lo, size_t hi) {
        if (hi - lo == 1) {
          Value local = e;
          if (offsets[lo] != 0)
            local = arith::SubIOp::create(k.b, k.loc, e, k.index(offsets[lo]));
          body(k, lo, local);
          return;
        }
        size_t mid = (lo + hi) / 2;
        Value below =
            k.cmpi(arith::CmpIPredicate::ult, e, k.index(offsets[mid]));
        auto branch = scf::IfOp::create(k.b, k.loc, below, /*withElse=*/true);
        OpBuilder::InsertionGuard guard(k.b);
        k.b.setInsertionPoint(branch.thenBlock()->getTerminator());
        tree(k, lo, mid);
        k.b.setInsertionPoint(branch.elseBlock()->getTerminator());
        tree(k, mid, hi);
      };
  tree(*this, 0, sizes.size());
}

void KernelBuilder::parallelConcat(ArrayRef<int64_t> sizes, ConcatBodyFn body) {
  int64_t total = 0;
  for (int64_t n : sizes)
    total += n;
  parallel({total}, [&](KernelBuilder &k, ValueRange e) {
    k.dispatchRanges(e[0], sizes, [&](KernelBuilder &k, size_t m, Value local) {
      body(k, m, local, e[0]);
    });
  });
}

void KernelBuilder::move(Value from, ValueRange i, Value to, ValueRange j) {
  Value x = memref::LoadOp::create(b, loc, from, i);
  memref::StoreOp::create(b, loc, x, to, j);
}

std::optional<ColumnSumForm>
mlir::triax::kernels::parseColumnSumForm(llvm::StringRef name) {
  return llvm::StringSwitch<std::optional<ColumnSumForm>>(name)
      .Case("columns", ColumnSumForm::Columns)
      .Case("rows", ColumnSumForm::Rows)
      .Case("chunks", ColumnSumForm::Chunks)
      .Default(std::nullopt);
}

namespace {
/// ColumnSumForm::Chunks: about this many (chunk, column) iterations (an
/// H200 runs ~270k threads at once; 64k keep its 132 SMs busy), chunks of
/// at least kMinChunkRows rows.
constexpr int64_t kColumnSumIterations = 65536;
constexpr int64_t kMinChunkRows = 16;

/// The number of row chunks: a divisor of rows.
int64_t columnSumChunks(int64_t rows, int64_t cols) {
  int64_t chunks =
      std::min(std::max<int64_t>(1, (kColumnSumIterations + cols - 1) / cols),
               std::max<int64_t>(1, rows / kMinChunkRows));
  while (rows % chunks != 0)
    --chunks;
  return chunks;
}
} // namespace

void KernelBuilder::columnSums(int64_t rows, int64_t cols, ColumnSumForm form,
                               ArrayRef<Value> outs, TermsFn terms,
                               bool accumulate) {
  // Each column's sum over rows lo..hi-1 in order, then stored (added to
  // what the buffer holds with `accumulate`).
  auto sumDown = [&](KernelBuilder &k, Value lo, Value hi, Value c,
                     TermsFn terms) {
    SmallVector<Value> zeros(outs.size(), k.f32(0.0));
    return k.reduce(lo, hi, zeros,
                    [&](KernelBuilder &k, Value r, ValueRange acc) {
                      SmallVector<Value> t = terms(k, r, c);
                      SmallVector<Value> next;
                      for (auto [a, x] : llvm::zip(acc, t))
                        next.push_back(k.add(a, x));
                      return next;
                    });
  };
  auto store = [&](KernelBuilder &k, ArrayRef<Value> sums, Value c) {
    for (auto [sum, out] : llvm::zip(sums, outs))
      k.store(accumulate ? k.add(k.load(out, {c}), sum) : sum, out, {c});
  };
  int64_t chunks =
      form == ColumnSumForm::Chunks ? columnSumChunks(rows, cols) : 1;
  if (form == ColumnSumForm::Columns ||
      (form == ColumnSumForm::Chunks && chunks == 1)) {
    parallel({cols}, [&](KernelBuilder &k, ValueRange c) {
      store(k, sumDown(k, k.index(0), k.index(rows), c[0], terms), c[0]);
    });
    return;
  }
  if (form == ColumnSumForm::Chunks) {
    int64_t per = rows / chunks;
    SmallVector<Value> partial;
    for (size_t i = 0; i < outs.size(); ++i)
      partial.push_back(alloc(MemRefType::get({chunks, cols}, b.getF32Type())));
    parallel({chunks, cols}, [&](KernelBuilder &k, ValueRange at) {
      Value lo = k.muli(at[0], k.index(per));
      SmallVector<Value> sums =
          sumDown(k, lo, k.addi(lo, k.index(per)), at[1], terms);
      for (auto [sum, p] : llvm::zip(sums, partial))
        k.store(sum, p, at);
    });
    parallel({cols}, [&](KernelBuilder &k, ValueRange c) {
      SmallVector<Value> sums =
          sumDown(k, k.index(0), k.index(chunks), c[0],
                  [&](KernelBuilder &k, Value ch, Value c) {
                    SmallVector<Value> t;
                    for (Value p : partial)
                      t.push_back(k.load(p, {ch, c}));
                    return t;
                  });
      store(k, sums, c[0]);
    });
    return;
  }
  assert(!accumulate && "column sums by rows start every sum at 0");
  int64_t block = std::min<int64_t>(cols, 64);
  while (cols % block != 0)
    --block;
  parallel({cols / block}, [&](KernelBuilder &k, ValueRange nb) {
    Value base = k.muli(nb[0], k.index(block));
    k.loop({rows}, [&](KernelBuilder &k, ValueRange r) {
      // Row 0 starts every sum at 0 + its term, as the reduction does.
      Value first = k.cmpi(arith::CmpIPredicate::eq, r[0], k.index(0));
      k.loop({block}, [&](KernelBuilder &k, ValueRange j) {
        Value c = k.addi(base, j[0]);
        SmallVector<Value> starts;
        for (Value out : outs)
          starts.push_back(k.select(first, k.f32(0.0), k.load(out, {c})));
        SmallVector<Value> t = terms(k, r[0], c);
        for (auto [start, x, out] : llvm::zip(starts, t, outs))
          k.store(k.add(start, x), out, {c});
      });
    });
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

Value mlir::triax::kernels::halveLanes(
    KernelBuilder &k, Value v,
    function_ref<Value(KernelBuilder &, Value, Value)> combine) {
  int64_t half = cast<VectorType>(v.getType()).getNumElements() / 2;
  SmallVector<int64_t> low, high;
  for (int64_t l = 0; l < half; ++l) {
    low.push_back(l);
    high.push_back(l + half);
  }
  Value lo = vector::ShuffleOp::create(k.builder(), k.getLoc(), v, v, low);
  Value hi = vector::ShuffleOp::create(k.builder(), k.getLoc(), v, v, high);
  return combine(k, lo, hi);
}

Value mlir::triax::kernels::halvingSum(
    KernelBuilder &k, Value v,
    function_ref<Value(KernelBuilder &, Value, Value)> combine) {
  while (cast<VectorType>(v.getType()).getNumElements() > 2)
    v = halveLanes(k, v, combine);
  Value lane0 = vector::ExtractOp::create(k.builder(), k.getLoc(), v, 0);
  Value lane1 = vector::ExtractOp::create(k.builder(), k.getLoc(), v, 1);
  return combine(k, lane0, lane1);
}

Value KernelBuilder::indexToF32(Value idx) {
  Value i64 = arith::IndexCastOp::create(b, loc, b.getI64Type(), idx);
  return arith::SIToFPOp::create(b, loc, b.getF32Type(), i64);
}

/// The strided memref type of rank `rank` (2, or 3 for the batched GEMMs)
/// and element type `element` the runtime's GEMMs take: every size, stride
/// and the offset dynamic.
static MemRefType gemmOperandType(Type element, int64_t rank) {
  int64_t dyn = ShapedType::kDynamic;
  SmallVector<int64_t> dyns(rank, dyn);
  return MemRefType::get(
      dyns, element, StridedLayoutAttr::get(element.getContext(), dyn, dyns));
}

FailureOr<StringRef> KernelBuilder::gemmEntry(Type a, Type b, Type c,
                                              bool batched) {
  if (a.isF32() && b.isF32() && c.isF32())
    return batched ? ::triax::rt::kSgemmBatched : ::triax::rt::kSgemm;
  if (a.isBF16() && b.isBF16() && c.isBF16())
    return batched ? ::triax::rt::kGemmBf16Batched : ::triax::rt::kGemmBf16;
  if (a.isBF16() && b.isBF16() && c.isF32())
    return batched ? ::triax::rt::kGemmBf16F32Batched
                   : ::triax::rt::kGemmBf16F32;
  return failure();
}

LogicalResult KernelBuilder::callGemm(Value a, Value bm, Value c, bool transA,
                                      bool transB, double alpha, double beta,
                                      int64_t rank) {
  StringRef what = rank == 3 ? "batched GEMM" : "GEMM";
  SmallVector<Type> elements;
  for (auto [name, m] :
       {std::pair<StringRef, Value>{"A", a}, {"B", bm}, {"C", c}}) {
    auto type = dyn_cast<MemRefType>(m.getType());
    if (!type || type.getRank() != rank)
      return emitError(loc) << what << " operand " << name << " must be a "
                            << rank << "-D memref, got " << m.getType();
    elements.push_back(type.getElementType());
  }
  FailureOr<StringRef> entry =
      gemmEntry(elements[0], elements[1], elements[2], rank == 3);
  if (failed(entry))
    return emitError(loc) << "no runtime " << what << " for element types A "
                          << elements[0] << ", B " << elements[1] << ", C "
                          << elements[2]
                          << " (expected f32 f32 f32, bf16 bf16 bf16 or bf16 "
                             "bf16 f32)";
  SmallVector<Value> args;
  SmallVector<Value> operands = {a, bm, c};
  for (Value m : operands)
    args.push_back(stridedOperand(m));
  args.append({i32(transA), i32(transB), f32(alpha), f32(beta)});
  func::CallOp::create(b, loc, *entry, TypeRange{}, args);
  return success();
}

Value KernelBuilder::stridedOperand(Value buffer) {
  auto type = cast<MemRefType>(buffer.getType());
  return memref::CastOp::create(
      b, loc, gemmOperandType(type.getElementType(), type.getRank()), buffer);
}

LogicalResult KernelBuilder::gemm(Value a, Value bm, Value c, bool transA,
                                  bool transB, double alpha, double beta) {
  return callGemm(a, bm, c, transA, transB, alpha, beta, /*rank=*/2);
}

FailureOr<StringRef> KernelBuilder::gemmEpilogueEntry(Epilogue kind, Type t) {
  if (!t.isF32() && !t.isBF16())
    return failure();
  bool f32 = t.isF32();
  switch (kind) {
  case Epilogue::Bias:
    return f32 ? ::triax::rt::kSgemmBias : ::triax::rt::kGemmBf16Bias;
  case Epilogue::BiasGelu:
    return f32 ? ::triax::rt::kSgemmBiasGelu : ::triax::rt::kGemmBf16BiasGelu;
  case Epilogue::DGelu:
    return f32 ? ::triax::rt::kSgemmDGelu : ::triax::rt::kGemmBf16DGelu;
  }
  return failure();
}

LogicalResult KernelBuilder::gemmBias(Value a, Value bm, Value c, Value bias,
                                      bool transA, bool transB, double alpha) {
  return gemmEpilogue(Epilogue::Bias, a, bm, c, bias, /*aux=*/Value(), transA,
                      transB, alpha);
}

LogicalResult KernelBuilder::gemmEpilogue(Epilogue kind, Value a, Value bm,
                                          Value c, Value bias, Value aux,
                                          bool transA, bool transB,
                                          double alpha) {
  const char *what = kind == Epilogue::Bias       ? "GEMM with bias"
                     : kind == Epilogue::BiasGelu ? "GEMM with bias and GELU"
                                                  : "GEMM with GELU gradient";
  SmallVector<std::tuple<StringRef, Value, int64_t>> operands = {
      {"A", a, 2}, {"B", bm, 2}, {"C", c, 2}};
  if (kind != Epilogue::DGelu)
    operands.push_back({"bias", bias, 1});
  if (kind != Epilogue::Bias)
    operands.push_back({"aux", aux, 2});
  SmallVector<Value> args;
  Type element;
  for (auto [name, m, rank] : operands) {
    auto type = m ? dyn_cast<MemRefType>(m.getType()) : MemRefType();
    if (!type || type.getRank() != rank)
      return emitError(loc)
             << what << " operand " << name << " must be a " << rank
             << "-D memref, got " << (m ? m.getType() : Type());
    if (rank == 1 && !type.getLayout().isIdentity())
      return emitError(loc)
             << what << " needs a contiguous bias (identity layout), got "
             << m.getType();
    if (!element)
      element = type.getElementType();
    if (type.getElementType() != element ||
        failed(gemmEpilogueEntry(kind, type.getElementType())))
      return emitError(loc) << "no runtime " << what << " for operand " << name
                            << " of type " << m.getType() << " with A of "
                            << element << " (expected all f32 or all bf16)";
    args.push_back(memref::CastOp::create(
        b, loc,
        rank == 1 ? MemRefType::get({ShapedType::kDynamic}, element)
                  : gemmOperandType(element, 2),
        m));
  }
  // The ABI's order: A, B, C, [bias], [aux], transA, transB, alpha.
  args.append({i32(transA), i32(transB), f32(alpha)});
  func::CallOp::create(b, loc, *gemmEpilogueEntry(kind, element), TypeRange{},
                       args);
  return success();
}

LogicalResult KernelBuilder::gemmBatched(Value a, Value bm, Value c,
                                         bool transA, bool transB, double alpha,
                                         double beta) {
  return callGemm(a, bm, c, transA, transB, alpha, beta, /*rank=*/3);
}

Value KernelBuilder::stateChunk(trx_state_kind kind, int64_t param,
                                MemRefType type) {
  // A bf16 parameter's own buffer or gradient: the bf16 view.
  bool bf16 = type.getElementType().isBF16();
  auto dynType = MemRefType::get({ShapedType::kDynamic}, type.getElementType());
  Value view =
      func::CallOp::create(
          b, loc,
          bf16 ? ::triax::rt::kStateChunkBf16 : ::triax::rt::kStateChunk,
          TypeRange{dynType},
          ValueRange{i32(kind), arith::ConstantOp::create(
                                    b, loc, b.getI64IntegerAttr(param))})
          .getResult(0);
  return memref::CastOp::create(b, loc, type, view);
}

Value KernelBuilder::dynamicFlat(Value buffer) {
  auto dynType =
      MemRefType::get({ShapedType::kDynamic},
                      cast<MemRefType>(buffer.getType()).getElementType());
  return memref::CastOp::create(b, loc, dynType, flat(buffer));
}

Value KernelBuilder::state(trx_state_kind kind, int64_t param,
                           MemRefType type) {
  // The runtime holds a parameter of rank > 2 as its rows (the model
  // descriptor's [E*in, out] for [E, in, out]): view those as `type`.
  if (type.getRank() > 2) {
    int64_t cols = type.getShape().back();
    auto rowsType = MemRefType::get({type.getNumElements() / cols, cols},
                                    type.getElementType());
    ReassociationIndices leading;
    for (int64_t d = 0; d + 1 < type.getRank(); ++d)
      leading.push_back(d);
    return memref::ExpandShapeOp::create(
        b, loc, type, state(kind, param, rowsType),
        ArrayRef<ReassociationIndices>{leading, {type.getRank() - 1}});
  }
  int64_t dyn = ShapedType::kDynamic;
  bool matrix = type.getRank() == 2;
  Type element = type.getElementType();
  auto dynType = matrix ? MemRefType::get({dyn, dyn}, element)
                        : MemRefType::get({dyn}, element);
  StringRef callee =
      element.isBF16()
          ? (matrix ? ::triax::rt::kState2DBf16 : ::triax::rt::kState1DBf16)
          : (matrix ? ::triax::rt::kState2D : ::triax::rt::kState1D);
  Value view =
      func::CallOp::create(
          b, loc, callee, TypeRange{dynType},
          ValueRange{i32(kind), arith::ConstantOp::create(
                                    b, loc, b.getI64IntegerAttr(param))})
          .getResult(0);
  return memref::CastOp::create(b, loc, type, view);
}

/// The MLIR type of a type of the runtime ABI.
static Type entryType(Builder &b, ::triax::rt::EntryType t) {
  using ::triax::rt::EntryType;
  auto element = [&]() -> Type {
    switch (t.elem) {
    case EntryType::f32:
      return b.getF32Type();
    case EntryType::bf16:
      return b.getBF16Type();
    case EntryType::i64:
      return b.getI64Type();
    case EntryType::None:
      break;
    }
    llvm_unreachable("a memref type of triax_entries.def without an element");
  };
  switch (t.kind) {
  case EntryType::I32:
    return b.getI32Type();
  case EntryType::I64:
    return b.getI64Type();
  case EntryType::F32:
    return b.getF32Type();
  case EntryType::MemRef:
    return MemRefType::get(SmallVector<int64_t>(t.rank, ShapedType::kDynamic),
                           element());
  case EntryType::Strided:
    return gemmOperandType(element(), t.rank);
  }
  llvm_unreachable("unknown type of triax_entries.def");
}

/// Declares the runtime's entry points (runtime/include/triax_entries.def)
/// in `module`, private, with `llvm.emit_c_interface` for the TRX_ENTRY
/// ones. The CUDA target's host sync is left to triax-insert-host-syncs,
/// which declares it where it inserts a call.
void declareRuntimeFunctions(ModuleOp module);

void declareRuntimeFunctions(ModuleOp module) {
  OpBuilder b = OpBuilder::atBlockBegin(module.getBody());
  for (const ::triax::rt::Entry &entry : ::triax::rt::entries()) {
    if (entry.cls == ::triax::rt::EntryClass::HostSync ||
        module.lookupSymbol(entry.name))
      continue;
    auto types = [&](ArrayRef<::triax::rt::EntryType> list) {
      return llvm::map_to_vector(
          list, [&](::triax::rt::EntryType t) { return entryType(b, t); });
    };
    auto fn = func::FuncOp::create(
        b, module.getLoc(), entry.name,
        b.getFunctionType(types(entry.args), types(entry.results)));
    fn.setPrivate();
    if (entry.cInterface)
      fn->setAttr("llvm.emit_c_interface", b.getUnitAttr());
  }
}

mlir::triax::AccumulateGradOp
mlir::triax::kernels::accumulatedInto(Value gradient,
                                      const ParamIndex *params) {
  auto type = cast<ShapedType>(gradient.getType());
  Type element = type.getElementType();
  Operation *producer = gradient.getDefiningOp();
  if (!params || !producer || !gradient.hasOneUse() ||
      !(element.isF32() || element.isBF16()))
    return {};
  auto into = dyn_cast<AccumulateGradOp>(*gradient.getUsers().begin());
  if (!into || into->getBlock() != producer->getBlock() ||
      !params->count(into.getParam()))
    return {};
  return into;
}

Value mlir::triax::kernels::accumulationBuffer(KernelBuilder &k,
                                               const TypeConverter &converter,
                                               Value gradient,
                                               AccumulateGradOp into,
                                               const ParamIndex &params) {
  auto type = cast<MemRefType>(converter.convertType(gradient.getType()));
  return k.state(TRX_STATE_GRAD, params.lookup(into.getParam()), type);
}

mlir::triax::kernels::GradientBuffers::GradientBuffers(
    KernelBuilder &k, const TypeConverter &converter, const ParamIndex *params,
    ArrayRef<Value> grads) {
  for (Value grad : grads)
    into.push_back(accumulatedInto(grad, params));
  if (!llvm::all_of(into, [](AccumulateGradOp acc) { return bool(acc); }))
    into.clear();
  for (auto [i, grad] : llvm::enumerate(grads))
    buffers.push_back(into.empty() ? k.alloc(cast<ShapedType>(grad.getType()))
                                   : accumulationBuffer(k, converter, grad,
                                                        into[i], *params));
}

void mlir::triax::kernels::GradientBuffers::eraseAccumulations(
    ConversionPatternRewriter &rewriter) {
  for (AccumulateGradOp acc : into)
    rewriter.eraseOp(acc);
}
