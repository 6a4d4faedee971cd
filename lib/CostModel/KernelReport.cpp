//===- KernelReport.cpp - What one training step runs, counted from its IR ===//
//
// The walk behind `triaxc --kernel-report` (docs/cuda.md "Kernel report").
// Its input is the kernel-level IR of one rank (rank 0): entry functions
// that call kernel functions, GEMM and collective calls into the runtime,
// and kernels (gpu.launch on CUDA, outermost scf.parallel on the CPU).
//
// The step: the driver (runtime/lib/cpu/driver.cpp, its training loop)
// calls triax_forward_backward once per `perCall` micro-batches of the
// step's accum = global_batch / (micro_batch x dp) (perCall = 1, or the
// micro-batches a pipeline's call takes at once), then
// triax_optimizer_step once. Each entry is walked once with a weight of
// 1; every op in it runs `weight` times per call:
// - scf.for / scf.parallel with constant bounds multiply their body by
//   their trip counts; when a bound or condition inside depends on the
//   loop's index, the iterations are enumerated;
// - scf.if takes the branch its condition selects when the condition is
//   a constant; a data-dependent condition counts its then-branch (an
//   upper bound for a guard, which is what the lowering emits); a
//   library's attention call (trx_fused_attention) answers 0, so the
//   generated kernels behind it, for when it declines, are not counted;
// - scf.index_switch takes the case of rank 0 (its position on every mesh
//   axis is 0: trx_group_position folds to 0), as the cost model's
//   ModuleFacts takes rank 0's pipeline stage;
// - func.call of a function defined in the module: its body, same weight.
// Inside a gpu.launch the weight is a thread count (grid x block): the
// lowering's guard `linear id < n` keeps the threads in range (each
// nesting of such guards narrows an interval of linear ids: the fused
// AdamW's tree of `e < offset`), and a block-strided loop (`for i = tid + a
// to n step blockDim`) runs max(0, n - a) iterations over a block's
// threads. A bound that stays unknown is an error naming the op.
//
//===----------------------------------------------------------------------===//

#include "triax/CostModel/KernelReport.h"

#include "gemm_padding.h" // the CUDA runtime's padded GEMM plan

#include "triax/Conversion/KernelAttrs.h"
#include "triax/Conversion/KernelsToGPU/HostPrivate.h"
#include "triax/Conversion/RuntimeABI.h"
#include "triax/Dialect/Dist/IR/MeshShape.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cmath>
#include <map>

using namespace mlir;
using namespace triax::cost;
namespace rt = ::triax::rt;

namespace {

llvm::Error failure(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

/// The first file:line:col in `loc` (the model's source line of the layer
/// op the kernel came from), or "unknown location".
std::string locationOf(Location loc) {
  std::function<std::string(Location)> find = [&](Location l) -> std::string {
    if (auto file = dyn_cast<FileLineColLoc>(l))
      return (file.getFilename().getValue() + ":" +
              llvm::Twine(file.getLine()) + ":" + llvm::Twine(file.getColumn()))
          .str();
    if (auto name = dyn_cast<NameLoc>(l))
      return find(name.getChildLoc());
    if (auto site = dyn_cast<CallSiteLoc>(l))
      return find(site.getCallee());
    if (auto fused = dyn_cast<FusedLoc>(l))
      for (Location inner : fused.getLocations())
        if (std::string s = find(inner); !s.empty())
          return s;
    return "";
  };
  std::string s = find(loc);
  return s.empty() ? "unknown location" : s;
}

std::string describe(Operation *op) {
  return "'" + op->getName().getStringRef().str() + "' at " +
         locationOf(op->getLoc());
}

int64_t elemBytes(Type type) {
  Type elem = getElementTypeOrSelf(type);
  if (elem.isIndex())
    return 8;
  return int64_t(elem.getIntOrFloatBitWidth() + 7) / 8;
}

/// The runtime's library calls by what the report does with them (their
/// classes in runtime/include/triax_entries.def).
enum class CallClass {
  Gemm,
  Attention,
  Collective,
  PointToPoint,
  HostSync,
  Free,
  Other
};

/// A GEMM entry's argument list (RuntimeABI.h): A, B, C, then an optional
/// bias and aux buffer, the transposition flags (i32), alpha and, for the
/// plain and batched GEMMs, beta (f32).
/// The CUDA runtime runs a plain GEMM whose rows are not 16-byte aligned,
/// or whose M, N or K is not a whole number of 16-byte groups, on padded
/// copies (runtime/lib/cuda/blas.cpp): what triax::rt::planPaddedGemm,
/// the runtime's own plan, copies is added to `item`'s bytes and its
/// product is the padded one. Leading dimensions come from the operands'
/// layouts; their base addresses are taken as aligned (the allocator's
/// blocks are) plus a static offset.
void addPaddedCopies(KernelItem &item, MemRefType a, MemRefType b, MemRefType c,
                     bool transA, bool transB, int64_t m, int64_t n, int64_t k,
                     int64_t abBytes, int64_t cBytes, bool readsC) {
  auto rowsOf = [](MemRefType t, int64_t cols, int64_t elem, int64_t &ld) {
    ld = cols;
    intptr_t address = 256;
    if (!t)
      return reinterpret_cast<const void *>(address);
    int64_t offset = 0;
    SmallVector<int64_t> strides;
    if (succeeded(t.getStridesAndOffset(strides, offset)) && t.getRank() >= 2 &&
        !ShapedType::isDynamic(strides[t.getRank() - 2]))
      ld = strides[t.getRank() - 2];
    if (!ShapedType::isDynamic(offset))
      address += intptr_t(offset * elem);
    return reinterpret_cast<const void *>(address);
  };
  trx_gemm_problem p{};
  p.type = abBytes == 4  ? TRX_GEMM_F32
           : cBytes == 2 ? TRX_GEMM_BF16
                         : TRX_GEMM_BF16_F32;
  p.transA = transA;
  p.transB = transB;
  p.M = m;
  p.N = n;
  p.K = k;
  p.batch = 1;
  p.A = rowsOf(a, transA ? m : k, abBytes, p.lda);
  p.B = rowsOf(b, transB ? k : n, abBytes, p.ldb);
  p.C = const_cast<void *>(rowsOf(c, n, cBytes, p.ldc));
  p.beta = readsC ? 1.0f : 0.0f;
  triax::rt::PaddedGemm plan;
  if (!triax::rt::planPaddedGemm(p, plan))
    return;
  // Each staged operand is read and written once into its copy (C back
  // out, and in first when the product reads it).
  auto copy = [&](const triax::rt::PaddedOperand &o, bool in, bool out) {
    if (!o.staged)
      return;
    int64_t user = o.rows * o.cols * int64_t(o.elem);
    int64_t padded = int64_t(o.bytes());
    if (in) {
      item.bytesRead += user;
      item.bytesWritten += padded;
      item.paddedCopyBytes += user + padded;
    }
    if (out) {
      item.bytesRead += padded;
      item.bytesWritten += user;
      item.paddedCopyBytes += user + padded;
    }
  };
  copy(plan.a, true, false);
  copy(plan.b, true, false);
  copy(plan.c, readsC, true);
  const trx_gemm_problem &q = plan.problem;
  item.flops = 2.0 * double(q.M) * double(q.N) * double(q.K);
}

struct GemmSignature {
  llvm::StringRef name;
  bool batched = false, hasBeta = true;
  int bias = -1, aux = -1; // operand positions
  bool auxWritten = false; // bias_gelu writes the pre-activation
};

llvm::ArrayRef<GemmSignature> gemmSignatures() {
  static const GemmSignature table[] = {
      {rt::kSgemm},
      {rt::kGemmBf16},
      {rt::kGemmBf16F32},
      {rt::kSgemmBatched, true},
      {rt::kGemmBf16Batched, true},
      {rt::kGemmBf16F32Batched, true},
      {rt::kSgemmBias, false, false, 3},
      {rt::kGemmBf16Bias, false, false, 3},
      {rt::kSgemmBiasGelu, false, false, 3, 4, true},
      {rt::kGemmBf16BiasGelu, false, false, 3, 4, true},
      {rt::kSgemmDGelu, false, false, -1, 3, false},
      {rt::kGemmBf16DGelu, false, false, -1, 3, false},
  };
  return table;
}

const GemmSignature *findGemm(llvm::StringRef name) {
  for (const GemmSignature &g : gemmSignatures())
    if (g.name == name)
      return &g;
  return nullptr;
}

CallClass classify(llvm::StringRef name) {
  if (findGemm(name))
    return CallClass::Gemm;
  std::optional<rt::EntryClass> cls = rt::entryClass(name);
  if (!cls)
    return CallClass::Other;
  switch (*cls) {
  case rt::EntryClass::Collective:
    return CallClass::Collective;
  case rt::EntryClass::PointToPoint:
    return CallClass::PointToPoint;
  case rt::EntryClass::HostSync:
    return CallClass::HostSync;
  // Views of the state, positions, the markers of a gradient region and of
  // the trace: no device work of their own.
  case rt::EntryClass::View:
  case rt::EntryClass::Mark:
    return CallClass::Free;
  case rt::EntryClass::Attention:
    return CallClass::Attention;
  // A GEMM entry without a row in gemmSignatures(): its operands are unknown.
  case rt::EntryClass::Gemm:
    break;
  }
  return CallClass::Other;
}

/// Bytes the runtime zero-fills when `alloc` runs, of its `bytes`. THE
/// ONE PLACE for this rule. The compiled code's allocations are
/// TRX_MEM_ACTIV blocks (_mlir_memref_to_llvm_alloc): the CUDA runtime
/// does not zero them (runtime/lib/cuda/mem.cpp: the compiled code writes
/// every element before reading it, which TRX_ALLOC_POISON=1 checks on
/// the CPU); the CPU runtime still does (runtime/lib/cpu/mem.cpp).
int64_t zeroFilledBytes(memref::AllocOp alloc, int64_t bytes,
                        KernelTarget target) {
  (void)alloc;
  return target == KernelTarget::CUDA ? 0 : bytes;
}

/// A floating-point operation of a kernel body: an arith op on floats
/// other than a constant, a select or a conversion, or a math op (exp,
/// tanh, sqrt, ...: 1 each, whatever its cost in instructions).
bool isFlop(Operation *op) {
  auto floaty = [](Type t) { return isa<FloatType>(getElementTypeOrSelf(t)); };
  bool onFloats = llvm::any_of(op->getOperandTypes(), floaty) ||
                  llvm::any_of(op->getResultTypes(), floaty);
  if (!onFloats)
    return false;
  if (isa<math::MathDialect>(op->getDialect()))
    return true;
  if (!isa<arith::ArithDialect>(op->getDialect()))
    return false;
  return !isa<arith::ConstantOp, arith::SelectOp, arith::ExtFOp,
              arith::TruncFOp, arith::SIToFPOp, arith::UIToFPOp,
              arith::FPToSIOp, arith::FPToUIOp, arith::BitcastOp>(op);
}

/// The FLOPs one lane's share of a warp-wide tensor-core product is worth:
/// 2 m n k / 32 for nvvm.mma.sync (the 32 lanes execute it together);
/// 0 for any other op.
double tensorFlopsPerLane(Operation *op) {
  auto mma = dyn_cast<NVVM::MmaOp>(op);
  if (!mma)
    return 0;
  NVVM::MMAShapeAttr shape = mma.getShapeAttr();
  return 2.0 * shape.getM() * shape.getN() * shape.getK() / 32.0;
}

/// The buffer a view is a view of (through casts, reshapes, subviews,
/// reinterpret_casts).
Value rootOf(Value v) {
  while (auto view = v.getDefiningOp<ViewLikeOpInterface>())
    v = view.getViewSource();
  return v;
}

/// What a kernel (`kernel`) accessing `v` is charged for: the buffer `v`
/// is a view of, or a static view made outside the kernel (the column
/// views of fused projections: q, k and v, or dq, dk and dv, each a third
/// of one buffer), which is then a buffer of its own size.
Value regionOf(Value v, Operation *kernel) {
  while (auto view = v.getDefiningOp<ViewLikeOpInterface>()) {
    auto subview = dyn_cast<memref::SubViewOp>(view.getOperation());
    if (subview && !kernel->isProperAncestor(subview) &&
        subview.getType().hasStaticShape() &&
        llvm::none_of(subview.getStaticOffsets(), ShapedType::isDynamic))
      return v;
    v = view.getViewSource();
  }
  return v;
}

//===----------------------------------------------------------------------===//
// Integer values: constants, enumerated indices, rank 0's positions
//===----------------------------------------------------------------------===//

class Evaluator {
public:
  /// Values given a concrete value: enumerated loop indices, block ids,
  /// a launch's size arguments.
  llvm::DenseMap<Value, int64_t> env;

  std::optional<int64_t> eval(Value v, unsigned depth = 0) const {
    if (auto it = env.find(v); it != env.end())
      return it->second;
    Operation *def = v.getDefiningOp();
    if (!def || depth > 64)
      return std::nullopt;
    IntegerAttr attr;
    if (matchPattern(v, m_Constant(&attr)))
      return attr.getType().isInteger(1)
                 ? int64_t(attr.getValue().getZExtValue())
                 : attr.getValue().getSExtValue();
    // Rank 0 is at position 0 of every group of mesh axes; a library's
    // attention is taken to run (its answer 0: the generated kernels behind
    // it do not).
    if (auto call = dyn_cast<func::CallOp>(def)) {
      std::optional<rt::EntryClass> cls = rt::entryClass(call.getCallee());
      return call.getCallee() == rt::kGroupPosition ||
                     cls == rt::EntryClass::Attention
                 ? std::optional<int64_t>(0)
                 : std::nullopt;
    }
    auto operand = [&](unsigned i) {
      return eval(def->getOperand(i), depth + 1);
    };
    if (isa<arith::IndexCastOp, arith::IndexCastUIOp, arith::ExtSIOp,
            arith::ExtUIOp, arith::TruncIOp>(def))
      return operand(0);
    if (auto select = dyn_cast<arith::SelectOp>(def)) {
      std::optional<int64_t> c = operand(0);
      if (!c)
        return std::nullopt;
      return eval(*c ? select.getTrueValue() : select.getFalseValue(),
                  depth + 1);
    }
    if (def->getNumOperands() != 2 || def->getNumResults() != 1)
      return std::nullopt;
    std::optional<int64_t> a = operand(0), b = operand(1);
    if (!a || !b)
      return std::nullopt;
    int64_t x = *a, y = *b;
    uint64_t ux = uint64_t(x), uy = uint64_t(y);
    auto nonzero = [&](auto f) -> std::optional<int64_t> {
      if (y == 0)
        return std::nullopt;
      return f();
    };
    return llvm::TypeSwitch<Operation *, std::optional<int64_t>>(def)
        .Case([&](arith::AddIOp) { return x + y; })
        .Case([&](arith::SubIOp) { return x - y; })
        .Case([&](arith::MulIOp) { return x * y; })
        .Case([&](arith::DivUIOp) {
          return nonzero([&] { return int64_t(ux / uy); });
        })
        .Case([&](arith::DivSIOp) { return nonzero([&] { return x / y; }); })
        .Case([&](arith::RemUIOp) {
          return nonzero([&] { return int64_t(ux % uy); });
        })
        .Case([&](arith::RemSIOp) { return nonzero([&] { return x % y; }); })
        .Case([&](arith::CeilDivUIOp) {
          return nonzero([&] { return int64_t((ux + uy - 1) / uy); });
        })
        .Case([&](arith::CeilDivSIOp) {
          return nonzero([&] { return (x + y - (y > 0 ? 1 : -1)) / y; });
        })
        .Case([&](arith::FloorDivSIOp) {
          return nonzero([&] {
            int64_t q = x / y;
            return (x % y != 0 && ((x < 0) != (y < 0))) ? q - 1 : q;
          });
        })
        .Case([&](arith::MinUIOp) { return int64_t(std::min(ux, uy)); })
        .Case([&](arith::MaxUIOp) { return int64_t(std::max(ux, uy)); })
        .Case([&](arith::MinSIOp) { return std::min(x, y); })
        .Case([&](arith::MaxSIOp) { return std::max(x, y); })
        .Case([&](arith::AndIOp) { return x & y; })
        .Case([&](arith::OrIOp) { return x | y; })
        .Case([&](arith::XOrIOp) { return x ^ y; })
        .Case([&](arith::ShLIOp) { return int64_t(ux << (uy & 63)); })
        .Case([&](arith::ShRUIOp) { return int64_t(ux >> (uy & 63)); })
        .Case([&](arith::ShRSIOp) { return x >> (y & 63); })
        .Case([&](arith::CmpIOp cmp) -> std::optional<int64_t> {
          switch (cmp.getPredicate()) {
          case arith::CmpIPredicate::eq:
            return x == y;
          case arith::CmpIPredicate::ne:
            return x != y;
          case arith::CmpIPredicate::slt:
            return x < y;
          case arith::CmpIPredicate::sle:
            return x <= y;
          case arith::CmpIPredicate::sgt:
            return x > y;
          case arith::CmpIPredicate::sge:
            return x >= y;
          case arith::CmpIPredicate::ult:
            return ux < uy;
          case arith::CmpIPredicate::ule:
            return ux <= uy;
          case arith::CmpIPredicate::ugt:
            return ux > uy;
          case arith::CmpIPredicate::uge:
            return ux >= uy;
          }
          return std::nullopt;
        })
        .Default([](Operation *) { return std::nullopt; });
  }
};

/// Whether `v` is computed from one of `leaves` (through the operands of
/// the ops defining it).
bool dependsOn(Value v, llvm::ArrayRef<Value> leaves,
               llvm::SmallPtrSetImpl<Operation *> &seen) {
  if (llvm::is_contained(leaves, v))
    return true;
  Operation *def = v.getDefiningOp();
  if (!def || !seen.insert(def).second)
    return false;
  return llvm::any_of(def->getOperands(), [&](Value operand) {
    return dependsOn(operand, leaves, seen);
  });
}

/// Whether `v` is computed from a value loaded from memory.
bool dependsOnLoad(Value v) {
  llvm::SmallVector<Value> worklist{v};
  llvm::SmallPtrSet<Operation *, 16> seen;
  while (!worklist.empty()) {
    Operation *def = worklist.pop_back_val().getDefiningOp();
    if (!def || !seen.insert(def).second)
      continue;
    if (isa<memref::LoadOp>(def))
      return true;
    llvm::append_range(worklist, def->getOperands());
  }
  return false;
}

/// The trip count of [lb, ub) by step (0 when empty or the step is not
/// positive).
int64_t tripCount(int64_t lb, int64_t ub, int64_t step) {
  if (step <= 0 || ub <= lb)
    return 0;
  return (ub - lb + step - 1) / step;
}

//===----------------------------------------------------------------------===//
// Facts of the kernel IR: the state views' shapes
//===----------------------------------------------------------------------===//

/// The static shape of each state view (kind, parameter) the program casts
/// somewhere: the runtime hands out memref<?xf32> / memref<?x?xf32>, and
/// the compiled code casts each to the parameter's local shape where it
/// uses it as a kernel operand.
class StateShapes {
public:
  explicit StateShapes(ModuleOp module) {
    Evaluator ev;
    module.walk([&](func::CallOp call) {
      llvm::StringRef callee = call.getCallee();
      if (callee != rt::kState1D && callee != rt::kState2D &&
          callee != rt::kState1DBf16 && callee != rt::kState2DBf16)
        return;
      std::optional<int64_t> kind = ev.eval(call.getOperand(0));
      std::optional<int64_t> param = ev.eval(call.getOperand(1));
      if (!kind || !param || call.getNumResults() != 1)
        return;
      for (Operation *user : call.getResult(0).getUsers())
        if (auto cast = dyn_cast<memref::CastOp>(user))
          if (auto type = dyn_cast<MemRefType>(cast.getType());
              type && type.hasStaticShape()) {
            byKind[{*kind, *param}] = type;
            byParam[*param] = type;
          }
    });
    // A view used only as a GEMM operand is cast to the ABI's dynamic
    // type: its shape follows from C's and the other input's, by the
    // transposition flags (op(A) is M x K, op(B) K x N).
    module.walk([&](func::CallOp call) {
      if (!findGemm(call.getCallee()) || call.getNumOperands() < 3)
        return;
      llvm::SmallVector<int64_t, 2> flags;
      for (Value operand : call.getOperands())
        if (operand.getType().isInteger(32))
          if (std::optional<int64_t> v = ev.eval(operand))
            flags.push_back(*v);
      MemRefType c = staticType(call.getOperand(2));
      if (flags.size() < 2 || !c || c.getRank() != 2)
        return;
      int64_t m = c.getDimSize(0), n = c.getDimSize(1);
      for (unsigned i : {0u, 1u}) {
        auto view = rootOf(call.getOperand(i)).getDefiningOp<func::CallOp>();
        MemRefType other = staticType(call.getOperand(1 - i));
        if (!view || !other || other.getRank() != 2 ||
            view.getNumResults() != 1 || view.getNumOperands() != 2)
          continue;
        std::optional<int64_t> kind = ev.eval(view.getOperand(0));
        std::optional<int64_t> param = ev.eval(view.getOperand(1));
        if (!kind || !param || byKind.count({*kind, *param}))
          continue;
        // K from the other input; then this one's shape.
        int64_t k =
            i == 0 ? (flags[1] ? other.getDimSize(1) : other.getDimSize(0))
                   : (flags[0] ? other.getDimSize(0) : other.getDimSize(1));
        llvm::SmallVector<int64_t, 2> shape =
            i == 0 ? (flags[0] ? llvm::SmallVector<int64_t, 2>{k, m}
                               : llvm::SmallVector<int64_t, 2>{m, k})
                   : (flags[1] ? llvm::SmallVector<int64_t, 2>{n, k}
                               : llvm::SmallVector<int64_t, 2>{k, n});
        auto type = MemRefType::get(
            shape, getElementTypeOrSelf(view.getResult(0).getType()));
        byKind.try_emplace({*kind, *param}, type);
        byParam.try_emplace(*param, type);
      }
      // A bias has C's columns.
      const GemmSignature &sig = *findGemm(call.getCallee());
      if (sig.bias < 0)
        return;
      auto view =
          rootOf(call.getOperand(sig.bias)).getDefiningOp<func::CallOp>();
      if (!view || view.getNumResults() != 1 || view.getNumOperands() != 2)
        return;
      std::optional<int64_t> kind = ev.eval(view.getOperand(0));
      std::optional<int64_t> param = ev.eval(view.getOperand(1));
      if (!kind || !param)
        return;
      auto type = MemRefType::get(
          {n}, getElementTypeOrSelf(view.getResult(0).getType()));
      byKind.try_emplace({*kind, *param}, type);
      byParam.try_emplace(*param, type);
    });
  }

  /// The static type of `v`, looking through memref.cast (the runtime's
  /// ABI takes dynamic shapes) to a static source or to a state view.
  MemRefType staticType(Value v) const {
    Evaluator ev;
    while (true) {
      if (auto type = dyn_cast<MemRefType>(v.getType());
          type && type.hasStaticShape())
        return type;
      if (auto cast = v.getDefiningOp<memref::CastOp>()) {
        v = cast.getSource();
        continue;
      }
      if (auto call = v.getDefiningOp<func::CallOp>()) {
        std::optional<int64_t> kind = ev.eval(call.getOperand(0));
        std::optional<int64_t> param = ev.eval(call.getOperand(1));
        if (kind && param) {
          if (auto it = byKind.find({*kind, *param}); it != byKind.end())
            return it->second;
          if (auto it = byParam.find(*param); it != byParam.end())
            return it->second;
        }
      }
      return {};
    }
  }

  /// Elements of parameter `param` on this rank: its TRX_STATE_PARAM view
  /// (under ZeRO-2 the gradient views are chunks).
  std::optional<int64_t> paramElements(int64_t param) const {
    auto it = byKind.find({TRX_STATE_PARAM, param});
    if (it == byKind.end())
      return std::nullopt;
    return it->second.getNumElements();
  }
  /// Bytes per element of parameter `param` (and of its gradient): 2 for a
  /// bf16 parameter, 4 for an f32 one (its TRX_STATE_PARAM view's type).
  int64_t paramElementBytes(int64_t param) const {
    auto it = byKind.find({TRX_STATE_PARAM, param});
    return it == byKind.end() ? 4 : elemBytes(it->second);
  }

private:
  std::map<std::pair<int64_t, int64_t>, MemRefType> byKind;
  std::map<int64_t, MemRefType> byParam;
};

//===----------------------------------------------------------------------===//
// The walk
//===----------------------------------------------------------------------===//

/// Where a kernel body's ops run: the launch and the interval of linear
/// thread ids the current region covers (launch only).
struct KernelCtx {
  gpu::LaunchOp launch;
  int64_t blockX = 1;
  bool hasLinear = false;
  int64_t lo = 0, hi = 0;
};

/// Limit on the ops visited while enumerating iterations (a bound that
/// depends on an index makes the walk visit a body once per value).
constexpr int64_t kMaxVisits = 100'000'000;

class StepCounter {
public:
  StepCounter(ModuleOp module, const ModuleFacts &facts, const Hardware &hw,
              KernelTarget target, KernelReport &report)
      : module(module), facts(facts), hw(hw), target(target), report(report),
        shapes(module) {}

  llvm::Error countEntry(func::FuncOp fn, double callsPerStep,
                         EntryCounts &counts);

private:
  llvm::Error walkHost(Block &block, double w);
  llvm::Error walkKernel(Block &block, double w, const KernelCtx &ctx,
                         double &flops);
  llvm::Error kernel(Operation *op, double w);
  llvm::Error libraryCall(func::CallOp call, double w);
  llvm::Error hostAccess(Operation *op, double w);
  llvm::Error allocation(memref::AllocOp alloc, double w);
  /// Runs `body(weight)` for the iterations of a loop nest with indices
  /// `ivs`: once with the weight times the trip counts, or once per point
  /// when the nest's body has control flow depending on an index.
  llvm::Error iterate(Operation *loop, ValueRange ivs, ValueRange lbs,
                      ValueRange ubs, ValueRange steps, double w,
                      llvm::function_ref<llvm::Error(double)> body);
  /// Whether the control flow in `region` (bounds, conditions, cases,
  /// launch sizes) depends on one of `leaves`; guards on the linear thread
  /// id of `launch` (handled by intervals) do not count.
  bool controlDependsOn(Region &region, llvm::ArrayRef<Value> leaves,
                        gpu::LaunchOp launch = {});
  bool isLinearId(Value v, gpu::LaunchOp launch) const;
  std::optional<int64_t> blockStridedTrips(scf::ForOp loop,
                                           const KernelCtx &ctx) const;
  /// A loop whose bounds vary by thread (the flash-attention kernels' loops
  /// to the thread's query position) in a kernel of linear thread ids: its
  /// mean trip count over the threads; none when its bounds are constant
  /// or do not evaluate from the thread's id.
  std::optional<double> meanTripsOverThreads(scf::ForOp loop,
                                             const KernelCtx &ctx);
  llvm::Error countVisit(Operation *op) {
    if (++visits > kMaxVisits)
      return failure("cannot count " + describe(op) + ": more than " +
                     llvm::Twine(kMaxVisits) +
                     " ops to visit (loop bounds that depend on indices over "
                     "too many iterations)");
    return llvm::Error::success();
  }
  KernelItem &itemFor(Operation *op, ItemKind kind, llvm::StringRef name);
  /// (group size, span in ranks) of the mesh axes in `mask`.
  std::pair<int64_t, int64_t> group(int64_t mask) const;
  /// The tensor-core FLOPs (nvvm.mma.sync) of the kernel being counted.
  double tensorFlops = 0;
  /// Generated kernels' scalar code and f32 GEMMs: the FP32 peak where
  /// the hardware names one; bf16 GEMMs (cuBLASLt, tensor cores) and the
  /// generated kernels' nvvm.mma.sync products the dense bf16 peak.
  double kernelPeak() const {
    return hw.fp32Flops > 0 ? hw.fp32Flops : hw.peakFlops;
  }
  double roofline(double flops, double bytes, double peak) const {
    return std::max(peak > 0 ? flops / peak : 0.0,
                    hw.hbmBandwidth > 0 ? bytes / hw.hbmBandwidth : 0.0);
  }

  ModuleOp module;
  const ModuleFacts &facts;
  const Hardware &hw;
  KernelTarget target;
  KernelReport &report;
  StateShapes shapes;
  Evaluator ev;
  int64_t visits = 0;
  /// The entry being walked: its calls per step, its counts per call.
  double scale = 0;
  EntryCounts *entry = nullptr;
  /// Items by op and the values its function's integer arguments were
  /// given at the call (a kernel function called with other sizes is
  /// another item).
  llvm::StringMap<size_t> itemIndex;
  std::string keyOf(Operation *op) const;
  bool seen(Operation *op) const { return itemIndex.count(keyOf(op)); }
  llvm::SmallPtrSet<Operation *, 8> activeCalls;
};

std::string StepCounter::keyOf(Operation *op) const {
  std::string key = std::to_string(reinterpret_cast<uintptr_t>(op));
  if (auto fn = op->getParentOfType<func::FuncOp>())
    for (BlockArgument arg : fn.getArguments())
      if (auto it = ev.env.find(arg); it != ev.env.end())
        key += "," + std::to_string(it->second);
  return key;
}

KernelItem &StepCounter::itemFor(Operation *op, ItemKind kind,
                                 llvm::StringRef name) {
  auto [it, fresh] = itemIndex.try_emplace(keyOf(op), report.items.size());
  if (fresh) {
    KernelItem item;
    item.kind = kind;
    item.name = name.str();
    auto fn = op->getParentOfType<func::FuncOp>();
    item.function = fn ? fn.getSymName().str() : "";
    item.location = locationOf(op->getLoc());
    report.items.push_back(std::move(item));
  }
  return report.items[it->second];
}

std::pair<int64_t, int64_t> StepCounter::group(int64_t mask) const {
  int64_t g = 1, span = 1;
  for (size_t i = 0; i < facts.axisSizes.size(); ++i) {
    if (!(mask & (int64_t(1) << i)))
      continue;
    int64_t stride = 1;
    for (size_t j = i + 1; j < facts.axisSizes.size(); ++j)
      stride *= facts.axisSizes[j];
    g *= facts.axisSizes[i];
    span += (facts.axisSizes[i] - 1) * stride;
  }
  return {g, span};
}

bool StepCounter::isLinearId(Value v, gpu::LaunchOp launch) const {
  if (!launch)
    return false;
  auto add = v.getDefiningOp<arith::AddIOp>();
  if (!add)
    return false;
  std::optional<int64_t> blockX = ev.eval(launch.getBlockSizeX());
  Value tid = launch.getThreadIds().x, bid = launch.getBlockIds().x;
  for (auto [x, y] : {std::pair(add.getLhs(), add.getRhs()),
                      std::pair(add.getRhs(), add.getLhs())}) {
    if (y != tid)
      continue;
    auto mul = x.getDefiningOp<arith::MulIOp>();
    if (!mul)
      continue;
    for (auto [p, q] : {std::pair(mul.getLhs(), mul.getRhs()),
                        std::pair(mul.getRhs(), mul.getLhs())})
      if (p == bid && blockX && ev.eval(q) == blockX)
        return true;
  }
  return false;
}

/// `pred` with its operands swapped: C < id is id > C.
arith::CmpIPredicate swapOperands(arith::CmpIPredicate pred) {
  using P = arith::CmpIPredicate;
  switch (pred) {
  case P::ult:
    return P::ugt;
  case P::ule:
    return P::uge;
  case P::ugt:
    return P::ult;
  case P::uge:
    return P::ule;
  case P::slt:
    return P::sgt;
  case P::sle:
    return P::sge;
  case P::sgt:
    return P::slt;
  case P::sge:
    return P::sle;
  default:
    return pred; // eq, ne
  }
}

/// A guard `linear id <pred> C` (or `C <pred> linear id`) of `launch`:
/// the predicate with the id on the left, and C.
std::optional<std::pair<arith::CmpIPredicate, Value>>
linearGuard(Value cond, gpu::LaunchOp launch,
            llvm::function_ref<bool(Value)> isLinear) {
  auto cmp = cond.getDefiningOp<arith::CmpIOp>();
  if (!cmp || !launch)
    return std::nullopt;
  if (isLinear(cmp.getLhs()))
    return std::pair(cmp.getPredicate(), cmp.getRhs());
  if (isLinear(cmp.getRhs()))
    return std::pair(swapOperands(cmp.getPredicate()), cmp.getLhs());
  return std::nullopt;
}

bool StepCounter::controlDependsOn(Region &region, llvm::ArrayRef<Value> leaves,
                                   gpu::LaunchOp launch) {
  auto isLinear = [&](Value v) { return isLinearId(v, launch); };
  // Control computed from the linear thread id (a warp's or a thread's
  // rows) is evaluated thread by thread (meanTripsOverThreads): it is not
  // a dependence on the block id the id is made of.
  llvm::SmallPtrSet<Operation *, 4> linearIds;
  if (launch)
    launch.getBody().walk([&](arith::AddIOp add) {
      if (isLinear(add))
        linearIds.insert(add);
    });
  bool found = false;
  region.walk([&](Operation *op) {
    llvm::SmallVector<Value> control;
    if (auto loop = dyn_cast<scf::ForOp>(op))
      control = {loop.getLowerBound(), loop.getUpperBound(), loop.getStep()};
    else if (auto loop = dyn_cast<scf::ParallelOp>(op))
      llvm::append_range(control, op->getOperands());
    else if (auto branch = dyn_cast<scf::IfOp>(op)) {
      auto guard = linearGuard(branch.getCondition(), launch, isLinear);
      if (guard)
        control = {guard->second};
      else if (!dependsOnLoad(branch.getCondition()))
        // (A condition on loaded data never evaluates: the walk takes its
        // then-branch whatever the indices.)
        control = {branch.getCondition()};
    } else if (auto sw = dyn_cast<scf::IndexSwitchOp>(op))
      control = {sw.getArg()};
    else if (auto inner = dyn_cast<gpu::LaunchOp>(op))
      llvm::append_range(control, inner->getOperands());
    else if (auto call = dyn_cast<func::CallOp>(op))
      // A kernel function's sizes.
      for (Value operand : call.getOperands())
        if (operand.getType().isIntOrIndex())
          control.push_back(operand);
    for (Value v : control) {
      llvm::SmallPtrSet<Operation *, 16> seen(linearIds.begin(),
                                              linearIds.end());
      if (dependsOn(v, leaves, seen)) {
        found = true;
        return WalkResult::interrupt();
      }
    }
    return WalkResult::advance();
  });
  return found;
}

llvm::Error StepCounter::iterate(Operation *loop, ValueRange ivs,
                                 ValueRange lbs, ValueRange ubs,
                                 ValueRange steps, double w,
                                 llvm::function_ref<llvm::Error(double)> body) {
  llvm::SmallVector<int64_t> lo, hi, step;
  double trips = 1;
  for (auto [lb, ub, st] : llvm::zip(lbs, ubs, steps)) {
    std::optional<int64_t> l = ev.eval(lb), u = ev.eval(ub), s = ev.eval(st);
    if ((!l || !u || !s) && lbs.size() == 1)
      if (auto expected =
              loop->getAttrOfType<IntegerAttr>(::triax::kExpectedTripsAttr))
        // A loop over data: the lowering's expected trip count.
        return body(w * double(expected.getInt()));
    if (!l || !u || !s)
      return failure("cannot count the iterations of " + describe(loop) +
                     ": its bounds are not constants");
    lo.push_back(*l);
    hi.push_back(*u);
    step.push_back(*s);
    trips *= double(tripCount(*l, *u, *s));
  }
  if (trips == 0)
    return llvm::Error::success();
  llvm::SmallVector<Value> leaves(ivs.begin(), ivs.end());
  if (!controlDependsOn(loop->getRegion(0), leaves))
    return body(w * trips);
  // Enumerate the points of the variables the control depends on; the
  // others multiply the weight (a flash-attention nest over (b, h, i) whose
  // loops run to i: S points, not B*H*S).
  llvm::SmallVector<Value> enumerated;
  {
    llvm::SmallVector<int64_t> keptLo, keptHi, keptStep;
    for (auto [iv, l, u, st] : llvm::zip(ivs, lo, hi, step)) {
      if (controlDependsOn(loop->getRegion(0), {iv})) {
        enumerated.push_back(iv);
        keptLo.push_back(l);
        keptHi.push_back(u);
        keptStep.push_back(st);
      } else {
        w *= double(tripCount(l, u, st));
      }
    }
    lo = keptLo;
    hi = keptHi;
    step = keptStep;
  }
  ivs = enumerated;
  // Enumerate the points of the nest (last index fastest).
  llvm::SmallVector<int64_t> point(lo);
  while (true) {
    for (auto [iv, v] : llvm::zip(ivs, point))
      ev.env[iv] = v;
    if (llvm::Error e = body(w))
      return e;
    size_t d = point.size();
    while (d > 0) {
      --d;
      point[d] += step[d];
      if (point[d] < hi[d])
        break;
      point[d] = lo[d];
      if (d == 0) {
        d = size_t(-1);
        break;
      }
    }
    if (d == size_t(-1))
      break;
  }
  for (Value iv : ivs)
    ev.env.erase(iv);
  return llvm::Error::success();
}

std::optional<double> StepCounter::meanTripsOverThreads(scf::ForOp loop,
                                                        const KernelCtx &ctx) {
  gpu::LaunchOp launch = ctx.launch;
  if (!launch || !ctx.hasLinear || ctx.hi <= ctx.lo || ctx.blockX <= 0)
    return std::nullopt;
  Value tid = launch.getThreadIds().x, bid = launch.getBlockIds().x;
  if (ev.env.count(tid))
    return std::nullopt;
  // Walked block by block (the block id set): its threads' ids.
  bool perBlock = ev.env.count(bid);
  auto bounds = [&] {
    return std::array{ev.eval(loop.getLowerBound()),
                      ev.eval(loop.getUpperBound()), ev.eval(loop.getStep())};
  };
  if (llvm::all_of(bounds(), [](auto v) { return v.has_value(); }))
    return std::nullopt; // constant: the ordinary walk
  // The body's control must not depend on the loop's own variable (one
  // walk of it stands for every iteration).
  if (controlDependsOn(loop.getRegion(), {loop.getInductionVar()}, launch))
    return std::nullopt;
  // Thread ids [lo, hi): every one up to kThreadSamples, else that many
  // spread evenly over the range (the mean trip count of a triangular
  // loop within a fraction of a percent).
  constexpr int64_t kThreadSamples = 4096;
  int64_t n = ctx.hi - ctx.lo, samples = std::min(n, kThreadSamples);
  double total = 0;
  std::optional<double> mean;
  for (int64_t k = 0; k < samples; ++k) {
    int64_t id = ctx.lo + (samples == n ? k : k * n / samples);
    if (!perBlock)
      ev.env[bid] = id / ctx.blockX;
    ev.env[tid] = id % ctx.blockX;
    auto [l, u, st] = bounds();
    if (!l || !u || !st) {
      total = -1;
      break;
    }
    total += double(tripCount(*l, *u, *st));
  }
  if (!perBlock)
    ev.env.erase(bid);
  ev.env.erase(tid);
  if (total >= 0)
    mean = total / double(samples);
  return mean;
}

std::optional<int64_t>
StepCounter::blockStridedTrips(scf::ForOp loop, const KernelCtx &ctx) const {
  gpu::LaunchOp launch = ctx.launch;
  if (!launch)
    return std::nullopt;
  Value tid = launch.getThreadIds().x;
  if (ev.env.count(tid))
    return std::nullopt;
  // lb = tid + a.
  Value lb = loop.getLowerBound();
  std::optional<int64_t> offset;
  if (lb == tid) {
    offset = 0;
  } else if (auto add = lb.getDefiningOp<arith::AddIOp>()) {
    if (add.getLhs() == tid)
      offset = ev.eval(add.getRhs());
    else if (add.getRhs() == tid)
      offset = ev.eval(add.getLhs());
  }
  std::optional<int64_t> ub = ev.eval(loop.getUpperBound());
  std::optional<int64_t> step = ev.eval(loop.getStep());
  if (!offset || !ub || !step || *step <= 0)
    return std::nullopt;
  // Over a block's threads t = 0 .. B-1: each index of [a, ub) once when
  // the step is the block size; else counted thread by thread.
  if (*step == ctx.blockX)
    return std::max<int64_t>(0, *ub - *offset);
  int64_t sum = 0;
  for (int64_t t = 0; t < ctx.blockX; ++t)
    sum += tripCount(*offset + t, *ub, *step);
  return sum;
}

llvm::Error StepCounter::walkKernel(Block &block, double w,
                                    const KernelCtx &ctx, double &flops) {
  auto isLinear = [&](Value v) { return isLinearId(v, ctx.launch); };
  for (Operation &op : block) {
    if (w == 0)
      return llvm::Error::success();
    if (llvm::Error e = countVisit(&op))
      return e;
    if (auto branch = dyn_cast<scf::IfOp>(op)) {
      if (std::optional<int64_t> c = ev.eval(branch.getCondition())) {
        Region &taken = *c ? branch.getThenRegion() : branch.getElseRegion();
        if (!taken.empty())
          if (llvm::Error e = walkKernel(taken.front(), w, ctx, flops))
            return e;
        continue;
      }
      auto guard = linearGuard(branch.getCondition(), ctx.launch, isLinear);
      std::optional<int64_t> bound =
          guard ? ev.eval(guard->second) : std::nullopt;
      if (guard && bound && ctx.hasLinear) {
        // The ids of [lo, hi) that satisfy `id pred C` form a prefix or a
        // suffix of it; the rest take the else-branch.
        int64_t c = *bound, split = 0;
        bool prefix = true, interval = true;
        switch (guard->first) {
        case arith::CmpIPredicate::ult:
        case arith::CmpIPredicate::slt:
          split = c;
          break;
        case arith::CmpIPredicate::ule:
        case arith::CmpIPredicate::sle:
          split = c + 1;
          break;
        case arith::CmpIPredicate::ugt:
        case arith::CmpIPredicate::sgt:
          split = c + 1, prefix = false;
          break;
        case arith::CmpIPredicate::uge:
        case arith::CmpIPredicate::sge:
          split = c, prefix = false;
          break;
        default:
          interval = false; // eq, ne
          break;
        }
        if (interval) {
          split = std::clamp(split, ctx.lo, ctx.hi);
          double span = double(ctx.hi - ctx.lo);
          KernelCtx below = ctx, above = ctx;
          below.hi = split;
          above.lo = split;
          const KernelCtx &thenCtx = prefix ? below : above;
          const KernelCtx &elseCtx = prefix ? above : below;
          auto weightOf = [&](const KernelCtx &k) {
            return span > 0 ? w * double(k.hi - k.lo) / span : 0.0;
          };
          if (llvm::Error e = walkKernel(branch.getThenRegion().front(),
                                         weightOf(thenCtx), thenCtx, flops))
            return e;
          if (!branch.getElseRegion().empty())
            if (llvm::Error e = walkKernel(branch.getElseRegion().front(),
                                           weightOf(elseCtx), elseCtx, flops))
              return e;
          continue;
        }
      }
      // A data-dependent condition: the then-branch, as if always taken.
      if (llvm::Error e =
              walkKernel(branch.getThenRegion().front(), w, ctx, flops))
        return e;
      continue;
    }
    if (auto loop = dyn_cast<scf::ForOp>(op)) {
      if (std::optional<int64_t> sum = blockStridedTrips(loop, ctx)) {
        double perThread = double(*sum) / double(ctx.blockX);
        if (llvm::Error e =
                walkKernel(*loop.getBody(), w * perThread, ctx, flops))
          return e;
        continue;
      }
      if (std::optional<double> mean = meanTripsOverThreads(loop, ctx)) {
        if (llvm::Error e = walkKernel(*loop.getBody(), w * *mean, ctx, flops))
          return e;
        continue;
      }
      if (llvm::Error e = iterate(
              loop, loop.getInductionVar(), loop.getLowerBound(),
              loop.getUpperBound(), loop.getStep(), w, [&](double weight) {
                return walkKernel(*loop.getBody(), weight, ctx, flops);
              }))
        return e;
      continue;
    }
    if (auto loop = dyn_cast<scf::ParallelOp>(op)) {
      if (llvm::Error e = iterate(
              loop, loop.getInductionVars(), loop.getLowerBound(),
              loop.getUpperBound(), loop.getStep(), w, [&](double weight) {
                return walkKernel(*loop.getBody(), weight, ctx, flops);
              }))
        return e;
      continue;
    }
    if (auto sw = dyn_cast<scf::IndexSwitchOp>(op)) {
      std::optional<int64_t> value = ev.eval(sw.getArg());
      if (!value)
        return failure("cannot tell which case of " + describe(&op) +
                       " runs: its selector is not a constant");
      Region *taken = &sw.getDefaultRegion();
      for (auto [i, c] : llvm::enumerate(sw.getCases()))
        if (c == *value)
          taken = &sw.getCaseRegions()[i];
      if (llvm::Error e = walkKernel(taken->front(), w, ctx, flops))
        return e;
      continue;
    }
    if (isa<scf::WhileOp, func::CallOp, gpu::LaunchOp>(op))
      return failure("cannot count " + describe(&op) + " inside a kernel");
    if (isFlop(&op))
      flops += w;
    tensorFlops += w * tensorFlopsPerLane(&op);
    // gpu.all_reduce: one combine per thread (its tree of shuffles does
    // fewer, its shared-memory stage a few more).
    if (auto reduce = dyn_cast<gpu::AllReduceOp>(op))
      if (isa<FloatType>(reduce.getType()))
        flops += w;
    for (Region &region : op.getRegions())
      for (Block &inner : region)
        if (llvm::Error e = walkKernel(inner, w, ctx, flops))
          return e;
  }
  return llvm::Error::success();
}

llvm::Error StepCounter::kernel(Operation *op, double w) {
  auto fn = op->getParentOfType<func::FuncOp>();
  llvm::StringRef fnName = fn ? fn.getSymName() : "";
  bool fresh = !seen(op);
  // Named after its function, "#i" the i-th kernel there when it has
  // several.
  std::string name = fnName.str();
  if (fresh && fn) {
    int position = 0, total = 0;
    fn.walk([&](Operation *inner) {
      if (inner == op)
        position = total;
      if (isa<gpu::LaunchOp>(inner) ||
          (isa<scf::ParallelOp>(inner) &&
           !inner->getParentOfType<scf::ParallelOp>()))
        ++total;
    });
    if (total > 1)
      name += "#" + std::to_string(position);
  }
  itemFor(op, ItemKind::Kernel, name);
  size_t index = itemIndex.lookup(keyOf(op));
  entry->launches += w;
  report.items[index].callsPerStep += w * scale;
  if (!fresh)
    return llvm::Error::success();

  // FLOPs of one execution: scalar ones, and tensor-core products.
  double flops = 0;
  tensorFlops = 0;
  if (auto launch = dyn_cast<gpu::LaunchOp>(op)) {
    KernelCtx ctx;
    ctx.launch = launch;
    int64_t sizes[6];
    Value operands[6] = {launch.getGridSizeX(),  launch.getGridSizeY(),
                         launch.getGridSizeZ(),  launch.getBlockSizeX(),
                         launch.getBlockSizeY(), launch.getBlockSizeZ()};
    Value args[6] = {launch.getGridSize().x,  launch.getGridSize().y,
                     launch.getGridSize().z,  launch.getBlockSize().x,
                     launch.getBlockSize().y, launch.getBlockSize().z};
    for (int i = 0; i < 6; ++i) {
      std::optional<int64_t> v = ev.eval(operands[i]);
      if (!v)
        return failure("cannot count " + describe(op) +
                       ": its grid or block size is not a constant");
      sizes[i] = *v;
      ev.env[args[i]] = *v;
    }
    int64_t blocks = sizes[0] * sizes[1] * sizes[2];
    int64_t threads = sizes[3] * sizes[4] * sizes[5];
    ctx.blockX = sizes[3];
    report.items[index].shape =
        sizes[1] == 1 && sizes[2] == 1 && sizes[4] == 1 && sizes[5] == 1
            ? llvm::formatv("{0}x{1}", sizes[0], sizes[3]).str()
            : llvm::formatv("{0},{1},{2}x{3},{4},{5}", sizes[0], sizes[1],
                            sizes[2], sizes[3], sizes[4], sizes[5])
                  .str();
    Value bid = launch.getBlockIds().x;
    gpu::KernelDim3 bids = launch.getBlockIds();
    llvm::SmallVector<Value> blockIds = {bids.x, bids.y, bids.z};
    if (!controlDependsOn(launch.getBody(), blockIds, launch)) {
      ctx.hasLinear = true;
      ctx.lo = 0;
      ctx.hi = sizes[0] * sizes[3];
      if (llvm::Error e = walkKernel(launch.getBody().front(),
                                     double(blocks * threads), ctx, flops))
        return e;
    } else {
      // Bounds that depend on the block (one block per row): block by
      // block.
      if (sizes[1] != 1 || sizes[2] != 1)
        return failure("cannot count " + describe(op) +
                       ": its loop bounds depend on a 2-D or 3-D grid");
      for (int64_t b = 0; b < sizes[0]; ++b) {
        ev.env[bid] = b;
        ctx.hasLinear = true;
        ctx.lo = b * sizes[3];
        ctx.hi = ctx.lo + sizes[3];
        if (llvm::Error e = walkKernel(launch.getBody().front(),
                                       double(threads), ctx, flops))
          return e;
      }
      ev.env.erase(bid);
    }
    for (Value arg : args)
      ev.env.erase(arg);
  } else {
    // A CPU kernel: the outermost scf.parallel, one execution of the nest.
    KernelCtx ctx;
    auto loop = cast<scf::ParallelOp>(op);
    if (llvm::Error e = iterate(
            loop, loop.getInductionVars(), loop.getLowerBound(),
            loop.getUpperBound(), loop.getStep(), 1.0, [&](double weight) {
              return walkKernel(*loop.getBody(), weight, ctx, flops);
            }))
      return e;
  }

  // Bytes: each distinct buffer (root through views, regionOf) the kernel
  // loads from counts once, whole, as read; each it stores to, once as
  // written. A block's shared memory (a workgroup attribution) is not HBM
  // traffic.
  llvm::SetVector<Value> read, written;
  op->walk([&](MemoryEffectOpInterface effects) {
    llvm::SmallVector<MemoryEffects::EffectInstance> list;
    effects.getEffects(list);
    for (const MemoryEffects::EffectInstance &e : list) {
      Value v = e.getValue();
      if (!v || !isa<MemRefType>(v.getType()))
        continue;
      if (gpu::GPUDialect::hasWorkgroupMemoryAddressSpace(
              cast<MemRefType>(v.getType())))
        continue;
      // A buffer chosen per iteration (`arith.select` of buffers, the
      // fused gradient norm's rows) is each of the buffers it chooses from.
      llvm::SmallVector<Value> buffers{regionOf(v, op)};
      while (auto select = buffers.back().getDefiningOp<arith::SelectOp>()) {
        buffers.back() = regionOf(select.getFalseValue(), op);
        buffers.insert(buffers.end() - 1, regionOf(select.getTrueValue(), op));
      }
      for (Value buffer : buffers) {
        if (isa<MemoryEffects::Read>(e.getEffect()))
          read.insert(buffer);
        else if (isa<MemoryEffects::Write>(e.getEffect()))
          written.insert(buffer);
      }
    }
  });
  auto bytesOf = [&](const llvm::SetVector<Value> &buffers,
                     int64_t &out) -> llvm::Error {
    for (Value buffer : buffers) {
      MemRefType type = shapes.staticType(buffer);
      if (!type)
        return failure("cannot size a buffer of " + describe(op) +
                       ": its shape is not static");
      out += type.getNumElements() * elemBytes(type);
    }
    return llvm::Error::success();
  };
  KernelItem &k = report.items[index];
  k.flops = flops + tensorFlops;
  k.tensorFlops = tensorFlops;
  if (llvm::Error e = bytesOf(read, k.bytesRead))
    return e;
  if (llvm::Error e = bytesOf(written, k.bytesWritten))
    return e;
  // The scalar FLOPs at the generated kernels' peak plus the tensor-core
  // ones at the dense peak (the two issue from the same warps), or the
  // bytes at HBM bandwidth, whichever is longer.
  double compute = (kernelPeak() > 0 ? flops / kernelPeak() : 0.0) +
                   (hw.peakFlops > 0 ? tensorFlops / hw.peakFlops : 0.0);
  double bytes = double(k.bytesRead + k.bytesWritten);
  k.seconds =
      std::max(compute, hw.hbmBandwidth > 0 ? bytes / hw.hbmBandwidth : 0.0);
  return llvm::Error::success();
}

llvm::Error StepCounter::libraryCall(func::CallOp call, double w) {
  llvm::StringRef callee = call.getCallee();
  CallClass kind = classify(callee);
  switch (kind) {
  case CallClass::Free:
    return llvm::Error::success();
  case CallClass::HostSync:
    entry->hostSyncs += w;
    return llvm::Error::success();
  case CallClass::Other: {
    KernelItem &item = itemFor(call, ItemKind::Other, callee);
    item.callsPerStep += w * scale;
    return llvm::Error::success();
  }
  case CallClass::Gemm: {
    bool fresh = !seen(call);
    KernelItem &item = itemFor(call, ItemKind::Gemm, callee);
    item.callsPerStep += w * scale;
    entry->gemms += w;
    if (!fresh)
      return llvm::Error::success();
    const GemmSignature &sig = *findGemm(callee);
    // M, N (and the batch) from C; K from A or B by their transposition
    // flags (the first two i32 operands).
    llvm::SmallVector<int64_t, 2> flags;
    std::optional<double> beta;
    for (Value operand : call.getOperands()) {
      if (operand.getType().isInteger(32))
        if (std::optional<int64_t> v = ev.eval(operand))
          flags.push_back(*v);
      FloatAttr f;
      if (isa<FloatType>(operand.getType()) &&
          matchPattern(operand, m_Constant(&f)))
        beta = f.getValueAsDouble();
    }
    if (flags.size() < 2)
      return failure("cannot count " + describe(call) +
                     ": its transposition flags are not constants");
    MemRefType a = shapes.staticType(call.getOperand(0));
    MemRefType b = shapes.staticType(call.getOperand(1));
    MemRefType c = shapes.staticType(call.getOperand(2));
    if (!c || (!a && !b))
      return failure("cannot count " + describe(call) +
                     ": the shapes of its operands are not static");
    int64_t r = c.getRank();
    int64_t batch = sig.batched ? c.getDimSize(0) : 1;
    int64_t m = c.getDimSize(r - 2), n = c.getDimSize(r - 1);
    int64_t kdim = a ? (flags[0] ? a.getDimSize(r - 2) : a.getDimSize(r - 1))
                     : (flags[1] ? b.getDimSize(r - 1) : b.getDimSize(r - 2));
    auto eltOf = [&](unsigned i) {
      return elemBytes(call.getOperand(i).getType());
    };
    item.flops = 2.0 * double(m) * double(n) * double(kdim) * double(batch);
    item.bytesRead = batch * (m * kdim * eltOf(0) + kdim * n * eltOf(1));
    item.bytesWritten = batch * m * n * eltOf(2);
    // beta != 0 (or unknown) reads C as well.
    if (sig.hasBeta && (!beta || *beta != 0))
      item.bytesRead += batch * m * n * eltOf(2);
    if (sig.bias >= 0)
      item.bytesRead += n * eltOf(sig.bias);
    if (sig.aux >= 0)
      (sig.auxWritten ? item.bytesWritten : item.bytesRead) +=
          m * n * eltOf(sig.aux);
    // f32 operands run on the FP32 units: the runtime's cuBLASLt computes
    // in CUBLAS_COMPUTE_32F, no TF32 (on the H200 gpt2 fp32's GEMMs took
    // 333 ms of a 426 ms step, 42 TFLOP/s: runtime/lib/cuda/blas.cpp).
    item.tensorCoreGemm = eltOf(0) != 4;
    if (target == KernelTarget::CUDA && !sig.batched && sig.bias < 0 &&
        sig.aux < 0)
      addPaddedCopies(item, a, b, c, flags[0] != 0, flags[1] != 0, m, n, kdim,
                      eltOf(0), eltOf(2), !sig.hasBeta || !beta || *beta != 0);
    // (The padded copies are copy kernels of their own, at HBM bandwidth,
    // not hidden under the product's roofline.)
    item.seconds = roofline(item.flops,
                            double(item.bytesRead + item.bytesWritten -
                                   item.paddedCopyBytes),
                            item.tensorCoreGemm ? hw.peakFlops : kernelPeak()) +
                   roofline(0, double(item.paddedCopyBytes), 0);
    return llvm::Error::success();
  }
  case CallClass::Attention: {
    // The library's fused causal attention (cuDNN's flash attention), as
    // one kernel at the tensor cores' dense peak: forward 4d FLOPs per
    // (query, key) pair at or below the diagonal (q k^T, P v), backward 10d
    // (the scores again, dO v^T, P^T dO, dS k, dS^T q); it reads its
    // operands and writes its results once.
    bool fresh = !seen(call);
    KernelItem &item = itemFor(call, ItemKind::Kernel, callee);
    item.callsPerStep += w * scale;
    entry->launches += w;
    if (!fresh)
      return llvm::Error::success();
    bool backward = callee == rt::kFusedAttentionGrad;
    unsigned counts = backward ? 9 : 5; // the buffers before the counts
    std::optional<int64_t> batch = ev.eval(call.getOperand(counts)),
                           heads = ev.eval(call.getOperand(counts + 1));
    MemRefType q = shapes.staticType(call.getOperand(0));
    if (!batch || !heads || !q || *batch <= 0 || *heads <= 0)
      return failure("cannot count " + describe(call) +
                     ": its sizes are not constants");
    int64_t seq = q.getDimSize(0) / *batch, d = q.getDimSize(1) / *heads;
    double pairs =
        double(*batch) * double(*heads) * double(seq) * double(seq + 1) / 2.0;
    item.flops = item.tensorFlops = (backward ? 10.0 : 4.0) * double(d) * pairs;
    for (unsigned i = 0; i < counts; ++i) {
      MemRefType t = shapes.staticType(call.getOperand(i));
      if (!t)
        return failure("cannot size an operand of " + describe(call) +
                       ": its shape is not static");
      bool written = backward ? i >= 6 : i >= 3;
      (written ? item.bytesWritten : item.bytesRead) +=
          t.getNumElements() * elemBytes(t);
    }
    item.seconds = roofline(
        item.flops, double(item.bytesRead + item.bytesWritten), hw.peakFlops);
    return llvm::Error::success();
  }
  case CallClass::Collective:
  case CallClass::PointToPoint: {
    bool fresh = !seen(call);
    KernelItem &item =
        itemFor(call,
                kind == CallClass::Collective ? ItemKind::Collective
                                              : ItemKind::PointToPoint,
                callee);
    // The gradient bucket's all_reduce runs at the accumulation boundary
    // only (the runtime skips it on the other micro-batches): once per
    // step, whatever the calls of its entry.
    double perStep =
        callee == rt::kAllReduceGrads ? std::min(scale, 1.0) : scale;
    item.callsPerStep += w * perStep;
    entry->collectives += w;
    if (!fresh)
      return llvm::Error::success();
    // The axis mask is the last operand (a ring shift's is before its
    // slot).
    std::optional<int64_t> mask =
        ev.eval(callee == rt::kShiftStartF32 ? call.getOperand(2)
                                             : call.getOperands().back());
    if (!mask)
      return failure("cannot count " + describe(call) +
                     ": its axis mask is not a constant");
    auto [g, span] = group(*mask);
    item.groupSize = g;
    item.spanRanks = span;
    auto elements = [&](Value v) -> std::optional<int64_t> {
      if (MemRefType t = shapes.staticType(v))
        return t.getNumElements();
      return std::nullopt;
    };
    std::optional<int64_t> n;
    // The bytes of an element of the call's buffers (f32 or bf16 entries:
    // a memref<?xf32> or memref<?xbf16> operand).
    const int64_t elt = elemBytes(call.getOperand(0).getType());
    if (callee == rt::kAllReduceF32 || callee == rt::kAllReduceBf16) {
      if ((n = elements(call.getOperand(0))))
        item.commBytes = allReduceBytes(*n, elt, g, 0);
    } else if (callee == rt::kReduceScatterF32 ||
               callee == rt::kReduceScatterBf16) {
      if ((n = elements(call.getOperand(1))))
        item.commBytes = reduceScatterBytes(*n, elt, g);
    } else if (callee == rt::kAllGatherF32 || callee == rt::kAllGatherBf16) {
      if ((n = elements(call.getOperand(0))))
        item.commBytes = allGatherBytes(*n, elt, g);
    } else if (callee == rt::kAllToAllF32 || callee == rt::kAllToAllBf16) {
      if ((n = elements(call.getOperand(0))))
        item.commBytes = allToAllBytes(*n, elt, g);
    } else if (callee == rt::kZeroAllGatherParam) {
      std::optional<int64_t> param = ev.eval(call.getOperand(0));
      if (param && !(n = shapes.paramElements(*param)))
        return failure("cannot size the message of " + describe(call) +
                       ": no view of parameter " + llvm::Twine(*param) +
                       " has a static shape");
      if (n)
        item.commBytes = allGatherBytes(zeroChunk(*n, g),
                                        shapes.paramElementBytes(*param), g);
    } else if (callee == rt::kAllReduceGrads) {
      // The bucket's parameter indices: a constant global, or stored one
      // by one into the buffer the call reads.
      Value indices = rootOf(call.getOperand(0));
      llvm::SmallVector<std::optional<int64_t>> params;
      if (auto get = indices.getDefiningOp<memref::GetGlobalOp>()) {
        auto global = SymbolTable::lookupNearestSymbolFrom<memref::GlobalOp>(
            get, get.getNameAttr());
        auto values = global ? dyn_cast_or_null<DenseIntElementsAttr>(
                                   global.getInitialValueAttr())
                             : DenseIntElementsAttr();
        if (values)
          for (const llvm::APInt &v : values)
            params.push_back(v.getSExtValue());
      } else {
        for (Operation *user : indices.getUsers())
          if (auto store = dyn_cast<memref::StoreOp>(user))
            params.push_back(ev.eval(store.getValue()));
      }
      // The runtime reduces a bucket's f32 and bf16 gradients as one
      // message each (4 and 2 bytes per element).
      int64_t total = 0, byWidth[2] = {0, 0}; // f32, bf16 elements
      bool known = !params.empty();
      for (std::optional<int64_t> param : params) {
        std::optional<int64_t> elems =
            param ? shapes.paramElements(*param) : std::nullopt;
        known &= elems.has_value();
        total += elems.value_or(0);
        if (elems)
          byWidth[shapes.paramElementBytes(*param) == 2] += *elems;
      }
      if (known) {
        n = total;
        item.commBytes = 0;
        for (int bf16 : {0, 1})
          if (byWidth[bf16])
            item.commBytes += allReduceBytes(byWidth[bf16], bf16 ? 2 : 4, g, 0);
      }
    } else {
      // trx_send_* / trx_recv_*: the buffer; trx_shift_start_f32: the
      // block it sends (and receives as much).
      if ((n = elements(call.getOperand(0))))
        item.commBytes = *n * elt;
    }
    if (!n)
      return failure("cannot size the message of " + describe(call) +
                     ": the shape of its buffer (or parameter) is not known");
    return llvm::Error::success();
  }
  }
  return llvm::Error::success();
}

llvm::Error StepCounter::hostAccess(Operation *op, double w) {
  // Host code touching managed memory: only on CUDA, where the buffers are
  // the device's.
  if (target != KernelTarget::CUDA)
    return llvm::Error::success();
  Value buffer;
  int64_t bytes = 0;
  if (auto load = dyn_cast<memref::LoadOp>(op)) {
    buffer = load.getMemRef();
    bytes = elemBytes(load.getType());
  } else if (auto store = dyn_cast<memref::StoreOp>(op)) {
    buffer = store.getMemRef();
    bytes = elemBytes(store.getValue().getType());
  } else if (auto copy = dyn_cast<memref::CopyOp>(op)) {
    buffer = copy.getSource();
    MemRefType type = shapes.staticType(buffer);
    if (!type)
      return failure("cannot size " + describe(op) +
                     ": its source's shape is not static");
    bytes = type.getNumElements() * elemBytes(type);
  }
  if (!buffer || ::triax::isHostPrivate(buffer))
    return llvm::Error::success();
  entry->hostAccesses += w;
  report.totals.hostAccessBytes += w * scale * double(bytes);
  return llvm::Error::success();
}

llvm::Error StepCounter::allocation(memref::AllocOp alloc, double w) {
  MemRefType type = alloc.getType();
  int64_t elements = 1;
  unsigned dynamic = 0;
  for (int64_t d : type.getShape()) {
    if (!ShapedType::isDynamic(d)) {
      elements *= d;
      continue;
    }
    std::optional<int64_t> size = ev.eval(alloc.getDynamicSizes()[dynamic++]);
    if (!size)
      return failure("cannot size " + describe(alloc) +
                     ": its dynamic size is not a constant");
    elements *= *size;
  }
  int64_t bytes = elements * elemBytes(type);
  entry->allocations += w;
  report.totals.allocationBytes += w * scale * double(bytes);
  report.totals.allocationMemsetBytes +=
      w * scale * double(zeroFilledBytes(alloc, bytes, target));
  return llvm::Error::success();
}

llvm::Error StepCounter::walkHost(Block &block, double w) {
  for (Operation &op : block) {
    if (llvm::Error e = countVisit(&op))
      return e;
    if (isa<gpu::LaunchOp>(op)) {
      if (llvm::Error e = kernel(&op, w))
        return e;
      continue;
    }
    if (auto loop = dyn_cast<scf::ParallelOp>(op)) {
      // On the CPU an outermost parallel nest is a kernel, unless it calls
      // or allocates (a host loop around runtime calls, as the GPU mapping
      // leaves on the host).
      bool hostLoop = false;
      loop.getBody()->walk([&](Operation *inner) {
        hostLoop |= isa<func::CallOp, memref::AllocOp, gpu::LaunchOp>(inner);
      });
      if (target == KernelTarget::CPU && !hostLoop) {
        if (llvm::Error e = kernel(&op, w))
          return e;
        continue;
      }
      if (llvm::Error e = iterate(
              loop, loop.getInductionVars(), loop.getLowerBound(),
              loop.getUpperBound(), loop.getStep(), w,
              [&](double weight) { return walkHost(*loop.getBody(), weight); }))
        return e;
      continue;
    }
    if (auto loop = dyn_cast<scf::ForOp>(op)) {
      if (llvm::Error e = iterate(
              loop, loop.getInductionVar(), loop.getLowerBound(),
              loop.getUpperBound(), loop.getStep(), w,
              [&](double weight) { return walkHost(*loop.getBody(), weight); }))
        return e;
      continue;
    }
    if (auto branch = dyn_cast<scf::IfOp>(op)) {
      std::optional<int64_t> c = ev.eval(branch.getCondition());
      Region &taken =
          c && !*c ? branch.getElseRegion() : branch.getThenRegion();
      if (!taken.empty())
        if (llvm::Error e = walkHost(taken.front(), w))
          return e;
      continue;
    }
    if (auto sw = dyn_cast<scf::IndexSwitchOp>(op)) {
      std::optional<int64_t> value = ev.eval(sw.getArg());
      if (!value)
        return failure("cannot tell which case of " + describe(&op) +
                       " runs: its selector is not a constant");
      Region *taken = &sw.getDefaultRegion();
      for (auto [i, c] : llvm::enumerate(sw.getCases()))
        if (c == *value)
          taken = &sw.getCaseRegions()[i];
      if (llvm::Error e = walkHost(taken->front(), w))
        return e;
      continue;
    }
    if (isa<scf::WhileOp>(op))
      return failure("cannot count the iterations of " + describe(&op));
    if (auto call = dyn_cast<func::CallOp>(op)) {
      auto fn = module.lookupSymbol<func::FuncOp>(call.getCallee());
      if (fn && !fn.isExternal()) {
        if (!activeCalls.insert(fn).second)
          return failure("cannot count " + describe(&op) +
                         ": the call is recursive");
        // The callee's integer arguments take the caller's values (a
        // kernel function's sizes).
        llvm::SmallVector<Value> bound;
        for (auto [arg, operand] :
             llvm::zip(fn.getArguments(), call.getOperands()))
          if (arg.getType().isIntOrIndex())
            if (std::optional<int64_t> v = ev.eval(operand)) {
              ev.env[arg] = *v;
              bound.push_back(arg);
            }
        llvm::Error e = walkHost(fn.getBody().front(), w);
        for (Value arg : bound)
          ev.env.erase(arg);
        activeCalls.erase(fn);
        if (e)
          return e;
        continue;
      }
      if (llvm::Error e = libraryCall(call, w))
        return e;
      continue;
    }
    if (auto alloc = dyn_cast<memref::AllocOp>(op)) {
      if (llvm::Error e = allocation(alloc, w))
        return e;
      continue;
    }
    if (isa<memref::LoadOp, memref::StoreOp, memref::CopyOp>(op)) {
      if (llvm::Error e = hostAccess(&op, w))
        return e;
      continue;
    }
    for (Region &region : op.getRegions())
      for (Block &inner : region)
        if (llvm::Error e = walkHost(inner, w))
          return e;
  }
  return llvm::Error::success();
}

llvm::Error StepCounter::countEntry(func::FuncOp fn, double callsPerStep,
                                    EntryCounts &counts) {
  scale = callsPerStep;
  entry = &counts;
  counts.name = fn.getSymName().str();
  counts.callsPerStep = callsPerStep;
  fn.walk([&](func::ReturnOp ret) {
    if (ret->getParentOp() == fn)
      counts.returnedValues = int64_t(ret.getNumOperands());
  });
  return walkHost(fn.getBody().front(), 1.0);
}

std::string meshOf(const ModuleFacts &facts) {
  std::string mesh;
  for (size_t i = 0; i < facts.axisNames.size(); ++i)
    mesh += (mesh.empty() ? "" : ",") + facts.axisNames[i] + "=" +
            std::to_string(facts.axisSizes[i]);
  return mesh.empty() ? "one rank" : mesh;
}

const char *kindName(ItemKind kind) {
  switch (kind) {
  case ItemKind::Kernel:
    return "kernel";
  case ItemKind::Gemm:
    return "gemm";
  case ItemKind::Collective:
    return "collective";
  case ItemKind::PointToPoint:
    return "p2p";
  case ItemKind::Other:
    return "call";
  }
  return "";
}

} // namespace

llvm::Expected<KernelReport> triax::cost::analyzeKernelModule(
    ModuleOp kernelIR, const ModuleFacts &facts, const Hardware &hw,
    KernelTarget target, llvm::StringRef modelName, llvm::StringRef precision) {
  KernelReport report;
  report.target = target;
  report.model = modelName.str();
  report.mesh = meshOf(facts);
  report.precision = precision.str();
  report.hardware = hw;
  report.globalBatch = facts.globalBatch;
  report.microBatch = facts.microBatch;
  report.seq = facts.seq;
  report.dp = std::max<int64_t>(facts.plan.dp, 1);
  if (report.microBatch <= 0)
    return failure("the model's micro-batch is " +
                   llvm::Twine(report.microBatch));
  // The driver's training loop (runtime/lib/cpu/driver.cpp):
  //   accum = global_batch / (micro_batch * dp)
  //   for (k = 0; k < accum; k += perCall) forward_backward(...)
  //   optimizer_step(...)
  // perCall: the micro-batches one call takes (a pipeline's stacked
  // micro-batches: the entry's token rows / micro_batch), else 1.
  report.accum = report.globalBatch / (report.microBatch * report.dp);
  auto fb = kernelIR.lookupSymbol<func::FuncOp>(rt::kForwardBackwardEntry);
  auto opt = kernelIR.lookupSymbol<func::FuncOp>(rt::kOptimizerStepEntry);
  auto fwd = kernelIR.lookupSymbol<func::FuncOp>(rt::kForwardEntry);
  if (!fb || !opt)
    return failure("the kernel IR has no @" + rt::kForwardBackwardEntry +
                   " or @" + rt::kOptimizerStepEntry);
  int64_t perCall = 1;
  if (fb.getNumArguments() > 0)
    if (auto tokens = dyn_cast<MemRefType>(fb.getArgumentTypes().front());
        tokens && tokens.hasStaticShape() && tokens.getRank() >= 1)
      perCall = std::max<int64_t>(1, tokens.getDimSize(0) / report.microBatch);
  double fbCalls = double((report.accum + perCall - 1) / perCall);

  StepCounter counter(kernelIR, facts, hw, target, report);
  std::pair<func::FuncOp, double> entries[] = {
      {fb, fbCalls}, {opt, 1.0}, {fwd, 0.0}};
  for (auto [fn, calls] : entries) {
    if (!fn)
      continue;
    EntryCounts counts;
    if (llvm::Error e = counter.countEntry(fn, calls, counts))
      return std::move(e);
    report.entries.push_back(std::move(counts));
  }
  // What the evaluation entry alone runs is not part of the step.
  llvm::erase_if(report.items,
                 [](const KernelItem &item) { return item.callsPerStep == 0; });

  KernelReportTotals &t = report.totals;
  bool cuda = target == KernelTarget::CUDA;
  for (const EntryCounts &e : report.entries) {
    double n = e.callsPerStep;
    t.launches += n * e.launches;
    t.gemms += n * e.gemms;
    t.hostSyncCalls += n * e.hostSyncs;
    // A value an entry returns to the host (the loss, the gradient norm) is
    // read from device memory: a synchronization on CUDA.
    t.hostSyncs += n * (e.hostSyncs + (cuda ? double(e.returnedValues) : 0));
    t.hostAccesses += n * e.hostAccesses;
    t.allocations += n * e.allocations;
  }
  // The driver zeroes every gradient buffer before each step
  // (runtime/lib/cpu/driver.cpp zeroGrads): this rank's gradient bytes,
  // [M2].
  t.gradientZeroBytes = double(facts.state.grads);
  // The loss accumulator is not zeroed: the step's first forward_backward
  // writes it (RuntimeABI.h, kFirstMicroBatch).
  t.scalarZeroBytes = 0;
  t.memsetBytes =
      t.allocationMemsetBytes + t.gradientZeroBytes + t.scalarZeroBytes;
  // The driver reads the loss and the gradient norm with one copy to the
  // host, on the steps it logs only (runtime/lib/cpu/driver.cpp).
  t.loggedStepHostSyncs = t.hostSyncs + (cuda ? 1 : 0);
  t.deviceAllocationsAfterFirstStep = cuda ? 0 : t.allocations;
  std::vector<CommLoad> loads;
  for (const KernelItem &item : report.items) {
    switch (item.kind) {
    case ItemKind::Kernel:
      t.kernelFlops += item.flops * item.callsPerStep;
      t.kernelSeconds += item.secondsPerStep();
      break;
    case ItemKind::Gemm:
      t.kernelFlops += item.flops * item.callsPerStep;
      t.gemmSeconds += item.secondsPerStep();
      // (Its padded copies, memory-bound, are not the library's GEMM
      // efficiency's to scale.)
      if (item.tensorCoreGemm)
        t.tensorGemmSeconds +=
            item.secondsPerStep() -
            (hw.hbmBandwidth > 0 ? double(item.paddedCopyBytes) *
                                       item.callsPerStep / hw.hbmBandwidth
                                 : 0.0);
      break;
    case ItemKind::Collective:
    case ItemKind::PointToPoint:
      t.collectiveCalls += item.callsPerStep;
      t.collectiveBytes += double(item.commBytes) * item.callsPerStep;
      loads.push_back(
          {int64_t(std::llround(double(item.commBytes) * item.callsPerStep)),
           int64_t(std::llround(item.callsPerStep)), item.groupSize,
           item.spanRanks});
      break;
    case ItemKind::Other:
      break;
    }
  }
  // [T2] the collectives' bytes over their link plus the latency per
  // call, as the cost model predicts them (not overlapped with compute).
  t.collectiveSeconds = predictStepTime(hw, Plan(), 0, 0, 1, loads, 1.0).comm;
  t.stepSeconds = t.kernelSeconds + t.gemmSeconds + t.collectiveSeconds;
  // Host <-> device: the host's accesses of device memory, the tokens the
  // driver copies in for each call (the entry's integer buffer arguments)
  // and the values the entries return.
  if (cuda) {
    t.hostDeviceBytes = t.hostAccessBytes;
    for (auto [fn, calls] : entries) {
      if (!fn)
        continue;
      for (Type type : fn.getArgumentTypes())
        if (auto m = dyn_cast<MemRefType>(type);
            m && m.hasStaticShape() && isa<IntegerType>(m.getElementType()))
          t.hostDeviceBytes +=
              calls * double(m.getNumElements() * elemBytes(m));
      for (Type type : fn.getResultTypes())
        t.hostDeviceBytes += calls * double(elemBytes(type));
    }
  }
  // [F1] per step over the mesh, this rank's share: MFU against the
  // hardware's peak.
  int64_t ranks = 1;
  for (int64_t s : facts.axisSizes)
    ranks *= s;
  t.modelFlops =
      flopsPerToken(facts.flopParams, facts.layers, facts.hidden, facts.seq) *
      double(facts.globalBatch * facts.seq) / double(ranks);
  if (t.stepSeconds > 0 && hw.peakFlops > 0)
    t.mfu = t.modelFlops / (t.stepSeconds * hw.peakFlops);
  if (hw.gemmEfficiency > 0) {
    t.measuredGemmStepSeconds =
        t.stepSeconds + t.tensorGemmSeconds * (1 / hw.gemmEfficiency - 1);
    if (t.measuredGemmStepSeconds > 0 && hw.peakFlops > 0)
      t.measuredGemmMfu =
          t.modelFlops / (t.measuredGemmStepSeconds * hw.peakFlops);
  }
  return report;
}

//===----------------------------------------------------------------------===//
// Output
//===----------------------------------------------------------------------===//

namespace {
std::string count(double v) { return std::to_string(int64_t(std::llround(v))); }

std::vector<const KernelItem *> byTimePerStep(const KernelReport &r) {
  std::vector<const KernelItem *> items;
  for (const KernelItem &item : r.items)
    items.push_back(&item);
  std::stable_sort(items.begin(), items.end(),
                   [](const KernelItem *a, const KernelItem *b) {
                     return a->secondsPerStep() > b->secondsPerStep();
                   });
  return items;
}

/// A generated kernel's name says its function (`<entry>_kernelN`); a
/// library call's (a GEMM, a collective, a library's attention kernel)
/// gets it added.
std::string displayName(const KernelItem &item) {
  if (item.kind == ItemKind::Kernel &&
      !llvm::StringRef(item.name).starts_with("trx_"))
    return item.name;
  return item.name + " (" + item.function + ")";
}
} // namespace

void triax::cost::printKernelReport(llvm::raw_ostream &os,
                                    const KernelReport &r, size_t top) {
  bool cuda = r.target == KernelTarget::CUDA;
  const Hardware &hw = r.hardware;
  os << "kernel-report: model " << r.model << ", target "
     << (cuda ? "cuda" : "cpu") << ", mesh " << r.mesh << ", precision "
     << r.precision << ", hardware " << hw.name << " (rank 0)\n";
  os << "step: accum " << r.accum << " = global_batch " << r.globalBatch
     << " / (micro_batch " << r.microBatch << " x dp " << r.dp << ")";
  for (const EntryCounts &e : r.entries)
    if (e.callsPerStep > 0)
      os << "; " << count(e.callsPerStep) << " x " << e.name;
  os << "\n";
  os << llvm::format("roofline: max(FLOPs / peak, bytes / %.4g B/s); peak "
                     "%.4g FLOP/s for bf16 GEMMs and generated mma.sync "
                     "(dense bf16), %.4g for f32 GEMMs and generated scalar "
                     "code (fp32)\n",
                     hw.hbmBandwidth, hw.peakFlops,
                     hw.fp32Flops > 0 ? hw.fp32Flops : hw.peakFlops);
  os << "bytes: each distinct buffer a kernel loads (stores) counts once, "
        "whole, as read (written)\n";

  os << "\nper call of each entry:\n";
  for (const EntryCounts &e : r.entries) {
    os << "  " << e.name << " (";
    if (e.callsPerStep > 0)
      os << count(e.callsPerStep) << " per step";
    else
      os << "not in the step";
    os << "): " << count(e.launches) << (cuda ? " launches, " : " kernels, ")
       << count(e.gemms) << " GEMMs, " << count(e.collectives)
       << " collectives, " << count(e.allocations) << " allocations";
    if (cuda)
      os << ", " << count(e.hostSyncs) << " host syncs + " << e.returnedValues
         << " returned, " << count(e.hostAccesses) << " host accesses";
    os << "\n";
  }

  std::vector<const KernelItem *> items = byTimePerStep(r);
  os << "\ntop " << std::min(top, items.size()) << " of " << items.size()
     << " kernels and calls by time per step:\n";
  os << llvm::formatv("  {0,-52} {1,-10} {2,10} {3,13} {4,13} {5,13} {6,11}\n",
                      "name", "kind", "calls/step", "bytes read",
                      "bytes written", "FLOPs", "us/step");
  for (size_t i = 0; i < items.size() && i < top; ++i) {
    const KernelItem &item = *items[i];
    os << llvm::formatv(
        "  {0,-52} {1,-10} {2,10} {3,13} {4,13} {5,13} {6,11}\n",
        displayName(item), kindName(item.kind), count(item.callsPerStep),
        item.bytesRead, item.bytesWritten,
        llvm::formatv("{0:e3}", item.flops).str(),
        llvm::formatv("{0:f1}", item.secondsPerStep() * 1e6).str());
  }

  const KernelReportTotals &t = r.totals;
  os << "\ntotals per step:\n";
  os << "  kernel launches: " << count(t.launches) << "\n";
  os << "  GEMM calls: " << count(t.gemms) << "\n";
  os << "  collective calls: " << count(t.collectiveCalls) << "\n";
  os << "  collective bytes: " << count(t.collectiveBytes) << "\n";
  os << "  host syncs: " << count(t.hostSyncs) << " (" << count(t.hostSyncCalls)
     << " trx_cuda_host_sync + " << count(t.hostSyncs - t.hostSyncCalls)
     << " returned values)\n";
  os << "  host syncs on a logged step: " << count(t.loggedStepHostSyncs)
     << "\n";
  os << "  host accesses: " << count(t.hostAccesses) << "\n";
  os << "  host access bytes: " << count(t.hostAccessBytes) << "\n";
  os << "  allocations: " << count(t.allocations) << "\n";
  os << "  device allocations after the first step: "
     << count(t.deviceAllocationsAfterFirstStep)
     << (cuda ? " (caching allocator)" : " (malloc)") << "\n";
  os << "  allocation bytes: " << count(t.allocationBytes) << "\n";
  os << "  memset bytes: " << count(t.memsetBytes) << " (allocations "
     << count(t.allocationMemsetBytes) << " + gradient zeroing "
     << count(t.gradientZeroBytes) << " + loss accumulator "
     << count(t.scalarZeroBytes)
     << llvm::format("; %.1f us at HBM bandwidth, not in the step time)\n",
                     hw.hbmBandwidth > 0 ? t.memsetBytes / hw.hbmBandwidth * 1e6
                                         : 0.0);
  os << "  host-device bytes: " << count(t.hostDeviceBytes) << "\n";
  os << llvm::format("  FLOPs counted: %.6g\n", t.kernelFlops);
  os << llvm::format("  predicted step time: %.1f us (kernels %.1f + GEMMs "
                     "%.1f + collectives %.1f)\n",
                     t.stepSeconds * 1e6, t.kernelSeconds * 1e6,
                     t.gemmSeconds * 1e6, t.collectiveSeconds * 1e6);
  os << llvm::format("  model FLOPs: %.6g ([F1] per token x tokens / ranks)\n",
                     t.modelFlops);
  os << llvm::format("  MFU: %.4f\n", t.mfu);
  if (hw.gemmEfficiency > 0)
    os << llvm::format("  with bf16 GEMMs at %.2f of peak (the library's "
                       "measured efficiency on %s): step %.1f us, MFU %.4f\n",
                       hw.gemmEfficiency, hw.name.c_str(),
                       t.measuredGemmStepSeconds * 1e6, t.measuredGemmMfu);
}

void triax::cost::printKernelReportJSON(llvm::raw_ostream &os,
                                        const KernelReport &r) {
  llvm::json::Array entries, items;
  for (const EntryCounts &e : r.entries)
    entries.push_back(llvm::json::Object{{"name", e.name},
                                         {"calls_per_step", e.callsPerStep},
                                         {"launches", e.launches},
                                         {"gemms", e.gemms},
                                         {"collectives", e.collectives},
                                         {"host_syncs", e.hostSyncs},
                                         {"returned_values", e.returnedValues},
                                         {"allocations", e.allocations},
                                         {"host_accesses", e.hostAccesses}});
  for (const KernelItem *item : byTimePerStep(r)) {
    llvm::json::Object o{{"name", item->name},
                         {"kind", kindName(item->kind)},
                         {"function", item->function},
                         {"location", item->location},
                         {"calls_per_step", item->callsPerStep},
                         {"bytes_read", item->bytesRead},
                         {"bytes_written", item->bytesWritten},
                         {"flops", item->flops},
                         {"tensor_flops", item->tensorFlops},
                         {"seconds", item->seconds},
                         {"seconds_per_step", item->secondsPerStep()}};
    if (!item->shape.empty())
      o["grid_x_block"] = item->shape;
    if (item->paddedCopyBytes)
      o["padded_copy_bytes"] = item->paddedCopyBytes;
    if (item->kind == ItemKind::Collective ||
        item->kind == ItemKind::PointToPoint) {
      o["comm_bytes"] = item->commBytes;
      o["group_size"] = item->groupSize;
    }
    items.push_back(std::move(o));
  }
  const KernelReportTotals &t = r.totals;
  llvm::json::Object root{
      {"model", r.model},
      {"target", r.target == KernelTarget::CUDA ? "cuda" : "cpu"},
      {"mesh", r.mesh},
      {"precision", r.precision},
      {"hardware", r.hardware.name},
      {"peak_flops", r.hardware.peakFlops},
      {"kernel_peak_flops",
       r.hardware.fp32Flops > 0 ? r.hardware.fp32Flops : r.hardware.peakFlops},
      {"hbm_bandwidth", r.hardware.hbmBandwidth},
      {"step", llvm::json::Object{{"global_batch", r.globalBatch},
                                  {"micro_batch", r.microBatch},
                                  {mlir::dist::axisName(TRX_AXIS_DATA), r.dp},
                                  {"accum", r.accum}}},
      {"entries", std::move(entries)},
      {"items", std::move(items)},
      {"totals", llvm::json::Object{
                     {"kernel_launches", t.launches},
                     {"gemm_calls", t.gemms},
                     {"collective_calls", t.collectiveCalls},
                     {"collective_bytes", t.collectiveBytes},
                     {"host_syncs", t.hostSyncs},
                     {"host_sync_calls", t.hostSyncCalls},
                     {"host_accesses", t.hostAccesses},
                     {"host_access_bytes", t.hostAccessBytes},
                     {"allocations", t.allocations},
                     {"allocation_bytes", t.allocationBytes},
                     {"memset_bytes", t.memsetBytes},
                     {"allocation_memset_bytes", t.allocationMemsetBytes},
                     {"gradient_zero_bytes", t.gradientZeroBytes},
                     {"scalar_zero_bytes", t.scalarZeroBytes},
                     {"logged_step_host_syncs", t.loggedStepHostSyncs},
                     {"device_allocations_after_first_step",
                      t.deviceAllocationsAfterFirstStep},
                     {"host_device_bytes", t.hostDeviceBytes},
                     {"flops_counted", t.kernelFlops},
                     {"kernel_seconds", t.kernelSeconds},
                     {"gemm_seconds", t.gemmSeconds},
                     {"collective_seconds", t.collectiveSeconds},
                     {"step_seconds", t.stepSeconds},
                     {"model_flops", t.modelFlops},
                     {"mfu", t.mfu},
                     {"gemm_efficiency", r.hardware.gemmEfficiency},
                     {"measured_gemm_step_seconds", t.measuredGemmStepSeconds},
                     {"measured_gemm_mfu", t.measuredGemmMfu}}}};
  os << llvm::formatv("{0:2}", llvm::json::Value(std::move(root))) << "\n";
}
