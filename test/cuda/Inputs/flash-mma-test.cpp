//===- flash-mma-test.cpp - The tensor-core attention kernels, run on a CPU
//===//
//
// Builds the kernels of attention=flash-mma (AttentionMMA.cpp) for small
// shapes and runs them with a warp simulator: every gpu.launch block is
// run warp by warp, the 32 lanes of a warp in lockstep, so that
// gpu.shuffle and nvvm.mma.sync see the whole warp. mma.sync is evaluated
// from the PTX ISA's fragment tables ("Matrix Fragments for
// mma.m16n8k16", written out again here from the spec, not shared with
// the generator), as is ldmatrix.x4 (.trans); f32 arithmetic is rounded to
// f32 after every op and bf16 conversions round to nearest even. Shared
// memory is fresh (NaN) for every warp, vector accesses must be aligned as
// they claim, and an ldmatrix whose rows share a bank is a failure. The results
// are compared with causal attention and its gradient computed in double
// precision from the same inputs (test/cuda/flash-mma-sim.test).
//
// This is the check that runs without a GPU: it proves the index math,
// the fragment layouts, the online softmax and the masking; timing and
// the hardware's own behaviour wait for bench/gpu/run.sh on a GPU.
//
//===----------------------------------------------------------------------===//

#include "AttentionKernels.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <array>
#include <cmath>
#include <cstring>
#include <random>

using namespace mlir;
using namespace mlir::triax::kernels;

namespace {

constexpr int kLanes = 32;

//===--- values ---------------------------------------------------------===//

/// A value of each lane of a warp: integers and floats alike as doubles
/// (every integer here is below 2^53; f32 values are rounded to f32).
using Lanes = std::array<double, kLanes>;

float roundF32(double x) { return static_cast<float>(x); }
uint32_t bitsOf(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
float fromBits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
/// f32 -> bf16, round to nearest even (finite inputs), as a float.
float roundBF16(float f) {
  uint32_t u = bitsOf(f);
  if (std::isnan(f))
    return f;
  uint32_t lsb = (u >> 16) & 1;
  u += 0x7fff + lsb;
  return fromBits(u & 0xffff0000u);
}
/// The bf16 in the low 16 bits of `bits`, as a float.
float bf16FromBits(uint32_t bits) { return fromBits((bits & 0xffff) << 16); }

struct Buffer {
  std::vector<int64_t> shape;
  std::vector<double> data;
  bool bf16 = false;
  int64_t elementBytes() const { return bf16 ? 2 : 4; }
  int64_t offsetOf(ArrayRef<int64_t> idx) const {
    int64_t off = 0;
    for (size_t d = 0; d < shape.size(); ++d) {
      if (idx[d] < 0 || idx[d] >= shape[d]) {
        llvm::errs() << "FAIL out-of-bounds access, dim " << d << " index "
                     << idx[d] << " size " << shape[d] << "\n";
        std::exit(1);
      }
      off = off * shape[d] + idx[d];
    }
    return off;
  }
};

//===--- the warp simulator ---------------------------------------------===//

class Simulator {
public:
  /// Runs `fn` with its arguments bound to `args` (memrefs, in order).
  void run(func::FuncOp fn, ArrayRef<Buffer *> args) {
    for (auto [arg, buf] : llvm::zip(fn.getArguments(), args))
      buffers[arg] = buf;
    for (Operation &op : fn.getBody().front())
      host(op);
  }

private:
  llvm::DenseMap<Value, Buffer *> buffers;
  std::vector<std::unique_ptr<Buffer>> owned;
  llvm::DenseMap<Value, double> hostValues;
  llvm::DenseMap<Value, Lanes> lanes;
  llvm::DenseMap<Value, std::array<Lanes, 4>> structs;
  /// Vector values: element e of every lane.
  llvm::DenseMap<Value, SmallVector<Lanes>> vectors;
  /// The warp's shared memory (workgroup attributions): a fresh buffer
  /// of NaNs for every warp, so that a warp reading what another warp
  /// wrote (which would need a barrier) reads NaN. Its "address" is
  /// kSharedBase + 2 * element (bf16).
  std::unique_ptr<Buffer> shared;
  static constexpr double kSharedBase = 1 << 20;
  using Mask = std::array<bool, kLanes>;

  [[noreturn]] void unsupported(Operation &op) {
    llvm::errs() << "FAIL the simulator does not run " << op.getName() << "\n";
    std::exit(1);
  }

  std::optional<double> constant(Operation &op) {
    auto c = dyn_cast<arith::ConstantOp>(op);
    if (!c)
      return std::nullopt;
    if (auto i = dyn_cast<IntegerAttr>(c.getValue()))
      return double(i.getInt());
    if (auto f = dyn_cast<FloatAttr>(c.getValue()))
      return f.getValueAsDouble();
    unsupported(op);
  }

  void host(Operation &op) {
    if (std::optional<double> c = constant(op)) {
      hostValues[op.getResult(0)] = *c;
      return;
    }
    if (auto alloc = dyn_cast<memref::AllocOp>(op)) {
      auto type = alloc.getType();
      auto buf = std::make_unique<Buffer>();
      buf->shape.assign(type.getShape().begin(), type.getShape().end());
      buf->data.assign(type.getNumElements(),
                       std::numeric_limits<double>::quiet_NaN());
      buf->bf16 = type.getElementType().isBF16();
      buffers[alloc] = buf.get();
      owned.push_back(std::move(buf));
      return;
    }
    if (auto launch = dyn_cast<gpu::LaunchOp>(op)) {
      runLaunch(launch);
      return;
    }
    if (isa<func::ReturnOp>(op))
      return;
    unsupported(op);
  }

  void runLaunch(gpu::LaunchOp launch) {
    auto size = [&](Value v) { return int64_t(hostValues.lookup(v)); };
    int64_t grid = size(launch.getGridSizeX()),
            block = size(launch.getBlockSizeX());
    if (size(launch.getGridSizeY()) != 1 || size(launch.getBlockSizeY()) != 1 ||
        block % kLanes != 0) {
      llvm::errs() << "FAIL the simulator runs 1-D launches of whole warps\n";
      std::exit(1);
    }
    gpu::KernelDim3 bids = launch.getBlockIds(), tids = launch.getThreadIds();
    for (int64_t b = 0; b < grid; ++b)
      for (int64_t w = 0; w < block / kLanes; ++w) {
        lanes.clear();
        structs.clear();
        vectors.clear();
        newShared(launch);
        Lanes bid, tid, zero{};
        for (int l = 0; l < kLanes; ++l) {
          bid[l] = double(b);
          tid[l] = double(w * kLanes + l);
        }
        lanes[bids.x] = bid;
        lanes[tids.x] = tid;
        for (Value v : {bids.y, bids.z, tids.y, tids.z})
          lanes[v] = zero;
        Mask all;
        all.fill(true);
        runBlock(launch.getBody().front(), all);
      }
  }

  void newShared(gpu::LaunchOp launch) {
    auto attributions = launch.getWorkgroupAttributions();
    shared.reset();
    if (attributions.empty())
      return;
    if (attributions.size() != 1) {
      llvm::errs() << "FAIL the simulator runs one workgroup attribution\n";
      std::exit(1);
    }
    auto type = cast<MemRefType>(attributions[0].getType());
    shared = std::make_unique<Buffer>();
    shared->shape.assign(type.getShape().begin(), type.getShape().end());
    shared->data.assign(type.getNumElements(),
                        std::numeric_limits<double>::quiet_NaN());
    shared->bf16 = type.getElementType().isBF16();
    buffers[attributions[0]] = shared.get();
  }

  /// The 8 elements at shared address `addr` (ldmatrix's row), checked
  /// to be a 16-byte aligned row inside the buffer.
  std::array<double, 8> sharedRow(double addr) {
    int64_t bytes = int64_t(addr - kSharedBase);
    if (!shared || bytes < 0 || bytes % 16 != 0 ||
        bytes / 2 + 8 > int64_t(shared->data.size())) {
      llvm::errs() << "FAIL ldmatrix row address " << bytes
                   << " is not a 16-byte aligned row of shared memory\n";
      std::exit(1);
    }
    std::array<double, 8> row;
    for (int e = 0; e < 8; ++e)
      row[e] = shared->data[bytes / 2 + e];
    return row;
  }

  Lanes get(Value v) {
    auto it = lanes.find(v);
    if (it != lanes.end())
      return it->second;
    auto h = hostValues.find(v);
    if (h == hostValues.end()) {
      llvm::errs() << "FAIL a value without a definition\n";
      std::exit(1);
    }
    Lanes splat;
    splat.fill(h->second);
    return splat;
  }

  /// The value all active lanes agree on (loop bounds).
  double uniform(Value v, const Mask &mask) {
    Lanes x = get(v);
    std::optional<double> seen;
    for (int l = 0; l < kLanes; ++l)
      if (mask[l]) {
        if (seen && *seen != x[l]) {
          llvm::errs() << "FAIL a loop bound that differs between lanes\n";
          std::exit(1);
        }
        seen = x[l];
      }
    return seen.value_or(0);
  }

  template <typename F> Lanes map1(Value a, F f) {
    Lanes x = get(a), r;
    for (int l = 0; l < kLanes; ++l)
      r[l] = f(x[l]);
    return r;
  }
  template <typename F> Lanes map2(Value a, Value b, F f) {
    Lanes x = get(a), y = get(b), r;
    for (int l = 0; l < kLanes; ++l)
      r[l] = f(x[l], y[l]);
    return r;
  }

  SmallVector<Lanes> indices(ValueRange values) {
    SmallVector<Lanes> out;
    for (Value v : values)
      out.push_back(get(v));
    return out;
  }
  /// Lane l's index into a buffer.
  static SmallVector<int64_t> at(ArrayRef<Lanes> idx, int l) {
    SmallVector<int64_t> out;
    for (const Lanes &i : idx)
      out.push_back(int64_t(i[l]));
    return out;
  }

  /// Runs `block` for the lanes of `mask`; returns the yielded values.
  SmallVector<Lanes> runBlock(Block &block, const Mask &mask) {
    for (Operation &op : block) {
      if (isa<scf::YieldOp>(op)) {
        SmallVector<Lanes> out;
        for (Value v : op.getOperands())
          out.push_back(get(v));
        return out;
      }
      if (isa<gpu::TerminatorOp>(op))
        return {};
      step(op, mask);
    }
    return {};
  }

  void step(Operation &op, const Mask &mask) {
    if (std::optional<double> c = constant(op)) {
      Lanes splat;
      splat.fill(*c);
      lanes[op.getResult(0)] = splat;
      return;
    }
    Value r = op.getNumResults() ? op.getResult(0) : Value();
    auto u = [](double x) { return uint64_t(int64_t(x)); };
    auto f32 = [](double x) { return double(roundF32(x)); };
    llvm::TypeSwitch<Operation *>(&op)
        .Case([&](arith::AddIOp o) {
          lanes[r] = map2(o.getLhs(), o.getRhs(), std::plus<double>());
        })
        .Case([&](arith::SubIOp o) {
          lanes[r] = map2(o.getLhs(), o.getRhs(), std::minus<double>());
        })
        .Case([&](arith::MulIOp o) {
          lanes[r] = map2(o.getLhs(), o.getRhs(), std::multiplies<double>());
        })
        .Case([&](arith::DivUIOp o) {
          lanes[r] = map2(o.getLhs(), o.getRhs(), [&](double a, double b) {
            return double(u(a) / u(b));
          });
        })
        .Case([&](arith::RemUIOp o) {
          lanes[r] = map2(o.getLhs(), o.getRhs(), [&](double a, double b) {
            return double(u(a) % u(b));
          });
        })
        .Case([&](arith::CmpIOp o) {
          using P = arith::CmpIPredicate;
          P p = o.getPredicate();
          lanes[r] = map2(o.getLhs(), o.getRhs(), [&](double a, double b) {
            switch (p) {
            case P::eq:
              return double(a == b);
            case P::ne:
              return double(a != b);
            case P::ult:
            case P::slt:
              return double(a < b);
            case P::ule:
            case P::sle:
              return double(a <= b);
            case P::ugt:
            case P::sgt:
              return double(a > b);
            case P::uge:
            case P::sge:
              return double(a >= b);
            }
            return 0.0;
          });
        })
        .Case([&](arith::SelectOp o) {
          Lanes c = get(o.getCondition()), a = get(o.getTrueValue()),
                b = get(o.getFalseValue()), out;
          for (int l = 0; l < kLanes; ++l)
            out[l] = c[l] != 0 ? a[l] : b[l];
          lanes[r] = out;
        })
        .Case([&](arith::AddFOp o) {
          lanes[r] = map2(o.getLhs(), o.getRhs(),
                          [&](double a, double b) { return f32(a + b); });
        })
        .Case([&](arith::SubFOp o) {
          lanes[r] = map2(o.getLhs(), o.getRhs(),
                          [&](double a, double b) { return f32(a - b); });
        })
        .Case([&](arith::MulFOp o) {
          lanes[r] = map2(o.getLhs(), o.getRhs(),
                          [&](double a, double b) { return f32(a * b); });
        })
        .Case([&](arith::DivFOp o) {
          lanes[r] = map2(o.getLhs(), o.getRhs(),
                          [&](double a, double b) { return f32(a / b); });
        })
        .Case([&](arith::MaximumFOp o) {
          lanes[r] = map2(o.getLhs(), o.getRhs(), [](double a, double b) {
            return std::isnan(a) || std::isnan(b) ? NAN : std::max(a, b);
          });
        })
        .Case([&](math::ExpOp o) {
          lanes[r] = map1(o.getOperand(),
                          [](double a) { return double(std::exp(float(a))); });
        })
        .Case([&](math::LogOp o) {
          lanes[r] = map1(o.getOperand(),
                          [](double a) { return double(std::log(float(a))); });
        })
        .Case([&](arith::TruncFOp o) {
          if (auto vt = dyn_cast<VectorType>(o.getType())) {
            if (!vt.getElementType().isBF16())
              unsupported(op);
            SmallVector<Lanes> out = vectors.lookup(o.getIn());
            for (Lanes &x : out)
              for (double &v : x)
                v = roundBF16(float(v));
            vectors[r] = out;
            return;
          }
          if (!o.getType().isBF16())
            unsupported(op);
          lanes[r] = map1(o.getIn(),
                          [](double a) { return double(roundBF16(float(a))); });
        })
        .Case([&](arith::ExtFOp o) { lanes[r] = get(o.getIn()); })
        .Case([&](arith::BitcastOp o) {
          if (!o.getIn().getType().isBF16())
            unsupported(op);
          lanes[r] = map1(o.getIn(), [](double a) {
            return double(bitsOf(float(a)) >> 16);
          });
        })
        .Case([&](arith::ExtUIOp o) { lanes[r] = get(o.getIn()); })
        .Case([&](arith::ShLIOp o) {
          lanes[r] = map2(o.getLhs(), o.getRhs(), [&](double a, double b) {
            return double(uint32_t(u(a) << u(b)));
          });
        })
        .Case([&](arith::OrIOp o) {
          lanes[r] = map2(o.getLhs(), o.getRhs(), [&](double a, double b) {
            return double(uint32_t(u(a) | u(b)));
          });
        })
        .Case([&](memref::LoadOp o) {
          Buffer *buf = buffers.lookup(o.getMemref());
          SmallVector<Lanes> idx = indices(o.getIndices());
          Lanes out{};
          for (int l = 0; l < kLanes; ++l)
            if (mask[l])
              out[l] = buf->data[buf->offsetOf(at(idx, l))];
          lanes[r] = out;
        })
        .Case([&](memref::StoreOp o) {
          Buffer *buf = buffers.lookup(o.getMemref());
          Lanes v = get(o.getValue());
          SmallVector<Lanes> idx = indices(o.getIndices());
          for (int l = 0; l < kLanes; ++l)
            if (mask[l])
              buf->data[buf->offsetOf(at(idx, l))] = v[l];
        })
        .Case([&](vector::LoadOp o) {
          Buffer *buf = buffers.lookup(o.getBase());
          SmallVector<Lanes> idx = indices(o.getIndices());
          int64_t width = o.getVectorType().getNumElements();
          SmallVector<Lanes> out(width, Lanes{});
          for (int l = 0; l < kLanes; ++l)
            if (mask[l]) {
              int64_t off = vectorOffset(*buf, at(idx, l), width, o);
              for (int64_t e = 0; e < width; ++e)
                out[e][l] = buf->data[off + e];
            }
          vectors[r] = out;
        })
        .Case([&](vector::StoreOp o) {
          Buffer *buf = buffers.lookup(o.getBase());
          SmallVector<Lanes> idx = indices(o.getIndices());
          SmallVector<Lanes> v = vectors.lookup(o.getValueToStore());
          for (int l = 0; l < kLanes; ++l)
            if (mask[l]) {
              int64_t off = vectorOffset(*buf, at(idx, l), v.size(), o);
              for (size_t e = 0; e < v.size(); ++e)
                buf->data[off + e] = v[e][l];
            }
        })
        .Case([&](memref::ExtractAlignedPointerAsIndexOp o) {
          if (!shared || buffers.lookup(o.getSource()) != shared.get())
            unsupported(op);
          Lanes base;
          base.fill(kSharedBase);
          lanes[r] = base;
        })
        .Case([&](arith::IndexCastOp o) { lanes[r] = get(o.getIn()); })
        .Case([&](LLVM::IntToPtrOp o) { lanes[r] = get(o.getArg()); })
        .Case([&](NVVM::SyncWarpOp o) { requireAll(mask, op); })
        .Case([&](NVVM::LdMatrixOp o) { structs[r] = ldmatrix(o, mask); })
        .Case([&](scf::ForOp o) {
          double lb = uniform(o.getLowerBound(), mask),
                 ub = uniform(o.getUpperBound(), mask),
                 st = uniform(o.getStep(), mask);
          SmallVector<Lanes> carried;
          for (Value v : o.getInitArgs())
            carried.push_back(get(v));
          Block &body = *o.getBody();
          for (double i = lb; i < ub; i += st) {
            Lanes iv;
            iv.fill(i);
            lanes[o.getInductionVar()] = iv;
            for (auto [arg, v] : llvm::zip(o.getRegionIterArgs(), carried))
              lanes[arg] = v;
            carried = runBlock(body, mask);
          }
          for (auto [res, v] : llvm::zip(o.getResults(), carried))
            lanes[res] = v;
        })
        .Case([&](scf::IfOp o) {
          if (o.getNumResults())
            unsupported(op);
          Lanes c = get(o.getCondition());
          Mask thenMask, elseMask;
          for (int l = 0; l < kLanes; ++l) {
            thenMask[l] = mask[l] && c[l] != 0;
            elseMask[l] = mask[l] && c[l] == 0;
          }
          runBlock(o.getThenRegion().front(), thenMask);
          if (!o.getElseRegion().empty())
            runBlock(o.getElseRegion().front(), elseMask);
        })
        .Case([&](gpu::ShuffleOp o) {
          if (o.getMode() != gpu::ShuffleMode::XOR)
            unsupported(op);
          int64_t offset = int64_t(get(o.getOffset())[0]);
          Lanes x = get(o.getValue()), out, valid;
          for (int l = 0; l < kLanes; ++l) {
            out[l] = x[l ^ offset];
            valid[l] = 1;
          }
          lanes[o.getShuffleResult()] = out;
          lanes[o.getValid()] = valid;
        })
        .Case([&](NVVM::MmaOp o) { structs[r] = mma(o, mask); })
        .Case([&](LLVM::ExtractValueOp o) {
          lanes[r] = structs.lookup(o.getContainer())[o.getPosition()[0]];
        })
        .Default([&](Operation *) { unsupported(op); });
  }

  void requireAll(const Mask &mask, Operation &op) {
    for (int l = 0; l < kLanes; ++l)
      if (!mask[l]) {
        llvm::errs() << "FAIL " << op.getName() << " with inactive lanes\n";
        std::exit(1);
      }
  }

  /// The linear offset of a `width`-element vector access at `idx`: inside
  /// the buffer's last dimension and 16-byte aligned (the op's alignment
  /// attribute; buffers start 16-byte aligned).
  int64_t vectorOffset(const Buffer &buf, SmallVector<int64_t> idx,
                       int64_t width, Operation *op) {
    int64_t off = buf.offsetOf(idx);
    idx.back() += width - 1;
    buf.offsetOf(idx);
    std::optional<uint64_t> align;
    if (auto load = dyn_cast<vector::LoadOp>(op))
      align = load.getAlignment();
    else
      align = cast<vector::StoreOp>(op).getAlignment();
    if (align && (off * buf.elementBytes()) % int64_t(*align) != 0) {
      llvm::errs() << "FAIL a vector access at element " << off << " is not "
                   << *align << "-byte aligned\n";
      std::exit(1);
    }
    return off;
  }

  /// ldmatrix.sync.aligned.m8n8.x4(.trans).shared.b16, from the PTX ISA:
  /// lanes 8j..8j+7 give the addresses of rows 0-7 of matrix j (16
  /// bytes each); register j of lane l receives matrix j's row l / 4,
  /// elements 2 (l % 4) and 2 (l % 4) + 1 (the lower in the lower half),
  /// or with .trans its elements (2 (l % 4), l / 4) and (2 (l % 4) + 1,
  /// l / 4). Each matrix's 8 rows are one shared-memory wavefront only if
  /// they fall in distinct banks: a conflict is a failure.
  std::array<Lanes, 4> ldmatrix(NVVM::LdMatrixOp o, const Mask &mask) {
    requireAll(mask, *o);
    if (o.getNum() != 4 || o.getEltType() != NVVM::LdStMatrixEltType::B16)
      unsupported(*o);
    bool trans = o.getLayout() == NVVM::MMALayout::col;
    Lanes addr = get(o.getPtr());
    std::array<std::array<std::array<double, 8>, 8>, 4> m;
    for (int j = 0; j < 4; ++j) {
      uint32_t banks = 0;
      for (int row = 0; row < 8; ++row) {
        double a = addr[8 * j + row];
        m[j][row] = sharedRow(a);
        uint32_t bank4 = uint32_t(int64_t(a - kSharedBase) / 16) % 8;
        if (banks & (1u << bank4)) {
          llvm::errs() << "FAIL ldmatrix matrix " << j
                       << ": a shared-memory bank conflict\n";
          std::exit(1);
        }
        banks |= 1u << bank4;
      }
    }
    auto bits = [](double x) { return bitsOf(float(x)) >> 16; };
    std::array<Lanes, 4> out;
    for (int j = 0; j < 4; ++j)
      for (int l = 0; l < kLanes; ++l) {
        int r = l / 4, c = 2 * (l % 4);
        double lo = trans ? m[j][c][r] : m[j][r][c];
        double hi = trans ? m[j][c + 1][r] : m[j][r][c + 1];
        out[j][l] = double(bits(lo) | (bits(hi) << 16));
      }
    return out;
  }

  /// mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32, from the PTX
  /// ISA's tables: for lane l, groupID = l >> 2, threadID_in_group = l % 4;
  /// A element a_i (i = 0..7, two per register, a_{2j} in the low half of
  /// register j): row groupID for i < 2 or 4 <= i < 6, else groupID + 8;
  /// col threadID_in_group * 2 + (i & 1), + 8 for i >= 4. B element b_i
  /// (i = 0..3): row threadID_in_group * 2 + (i & 1), + 8 for i >= 2; col
  /// groupID. C/D element c_i: row groupID for i < 2, else groupID + 8;
  /// col threadID_in_group * 2 + (i & 1).
  std::array<Lanes, 4> mma(NVVM::MmaOp o, const Mask &mask) {
    for (int l = 0; l < kLanes; ++l)
      if (!mask[l]) {
        llvm::errs() << "FAIL mma.sync with inactive lanes\n";
        std::exit(1);
      }
    auto shape = o.getShapeAttr();
    if (shape.getM() != 16 || shape.getN() != 8 || shape.getK() != 16)
      unsupported(*o);
    double A[16][16], B[16][8], C[16][8];
    auto regs = [&](OperandRange range) {
      SmallVector<Lanes> out;
      for (Value v : range)
        out.push_back(get(v));
      return out;
    };
    SmallVector<Lanes> a = regs(o.getOperandA()), b = regs(o.getOperandB()),
                       c = regs(o.getOperandC());
    for (int l = 0; l < kLanes; ++l) {
      int group = l >> 2, tig = l % 4;
      for (int i = 0; i < 8; ++i) {
        uint32_t reg = uint32_t(a[i / 2][l]);
        float v = bf16FromBits(i % 2 ? reg >> 16 : reg);
        int row = (i < 2 || (i >= 4 && i < 6)) ? group : group + 8;
        int col = tig * 2 + (i & 1) + (i >= 4 ? 8 : 0);
        A[row][col] = v;
      }
      for (int i = 0; i < 4; ++i) {
        uint32_t reg = uint32_t(b[i / 2][l]);
        float v = bf16FromBits(i % 2 ? reg >> 16 : reg);
        B[tig * 2 + (i & 1) + (i >= 2 ? 8 : 0)][group] = v;
      }
      for (int i = 0; i < 4; ++i)
        C[i < 2 ? group : group + 8][tig * 2 + (i & 1)] = c[i][l];
    }
    std::array<Lanes, 4> d;
    for (int l = 0; l < kLanes; ++l) {
      int group = l >> 2, tig = l % 4;
      for (int i = 0; i < 4; ++i) {
        int row = i < 2 ? group : group + 8, col = tig * 2 + (i & 1);
        double sum = C[row][col];
        for (int kk = 0; kk < 16; ++kk)
          sum += A[row][kk] * B[kk][col];
        d[i][l] = roundF32(sum);
      }
    }
    return d;
  }
};

//===--- the reference --------------------------------------------------===//

struct Problem {
  AttentionDims dims;
  bool doutF32;
  const char *name;
};

/// Causal attention and its gradient in double precision.
struct Reference {
  std::vector<double> out, dq, dk, dv;
  /// The rows' log-sum-exp of the scaled scores, [B, heads, S].
  std::vector<double> lse;
};

Reference reference(const AttentionDims &d, const Buffer &q, const Buffer &k,
                    const Buffer &v, const Buffer &dout) {
  int64_t B = d.batch, S = d.seq, H = d.heads, KV = d.kvHeads, D = d.headDim;
  int64_t qCols = H * D, kvCols = KV * D;
  Reference r;
  r.out.assign(B * S * qCols, 0);
  r.dq.assign(B * S * qCols, 0);
  r.dk.assign(B * S * kvCols, 0);
  r.dv.assign(B * S * kvCols, 0);
  r.lse.assign(B * H * S, 0);
  auto Q = [&](int64_t b, int64_t i, int64_t h, int64_t c) {
    return q.data[(b * S + i) * qCols + h * D + c];
  };
  auto K = [&](int64_t b, int64_t t, int64_t g, int64_t c) {
    return k.data[(b * S + t) * kvCols + g * D + c];
  };
  auto V = [&](int64_t b, int64_t t, int64_t g, int64_t c) {
    return v.data[(b * S + t) * kvCols + g * D + c];
  };
  auto dO = [&](int64_t b, int64_t i, int64_t h, int64_t c) {
    return dout.data[(b * S + i) * qCols + h * D + c];
  };
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h) {
      int64_t g = h / (H / KV);
      for (int64_t i = 0; i < S; ++i) {
        std::vector<double> p(i + 1), dp(i + 1);
        double m = -INFINITY, sum = 0, delta = 0;
        for (int64_t t = 0; t <= i; ++t) {
          double s = 0;
          for (int64_t c = 0; c < D; ++c)
            s += Q(b, i, h, c) * K(b, t, g, c);
          p[t] = s * d.scale;
          m = std::max(m, p[t]);
        }
        for (int64_t t = 0; t <= i; ++t)
          sum += (p[t] = std::exp(p[t] - m));
        r.lse[(b * H + h) * S + i] = m + std::log(sum);
        for (int64_t t = 0; t <= i; ++t) {
          p[t] /= sum;
          double x = 0;
          for (int64_t c = 0; c < D; ++c) {
            r.out[(b * S + i) * qCols + h * D + c] += p[t] * V(b, t, g, c);
            x += dO(b, i, h, c) * V(b, t, g, c);
          }
          dp[t] = x;
          delta += p[t] * x;
        }
        for (int64_t t = 0; t <= i; ++t) {
          double ds = p[t] * (dp[t] - delta);
          for (int64_t c = 0; c < D; ++c) {
            r.dq[(b * S + i) * qCols + h * D + c] +=
                d.scale * ds * K(b, t, g, c);
            r.dk[(b * S + t) * kvCols + g * D + c] +=
                d.scale * ds * Q(b, i, h, c);
            r.dv[(b * S + t) * kvCols + g * D + c] += p[t] * dO(b, i, h, c);
          }
        }
      }
    }
  return r;
}

/// max |x - ref| / max |ref|.
double relError(const Buffer &x, const std::vector<double> &ref) {
  double err = 0, scale = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    if (std::isnan(x.data[i]))
      return INFINITY;
    err = std::max(err, std::abs(x.data[i] - ref[i]));
    scale = std::max(scale, std::abs(ref[i]));
  }
  return err / scale;
}

Buffer random(int64_t rows, int64_t cols, bool bf16, std::mt19937 &gen) {
  std::normal_distribution<double> normal(0.0, 1.0);
  Buffer b;
  b.shape = {rows, cols};
  b.bf16 = bf16;
  for (int64_t i = 0; i < rows * cols; ++i) {
    float v = float(normal(gen));
    b.data.push_back(bf16 ? roundBF16(v) : v);
  }
  return b;
}
Buffer empty(int64_t rows, int64_t cols, bool bf16) {
  Buffer b;
  b.shape = {rows, cols};
  b.bf16 = bf16;
  b.data.assign(rows * cols, std::numeric_limits<double>::quiet_NaN());
  return b;
}

/// Builds func @kernels(args...) with `emit` as its body.
func::FuncOp build(ModuleOp module, ArrayRef<Type> argTypes,
                   function_ref<void(KernelBuilder &, ValueRange)> emit) {
  OpBuilder b(module.getBodyRegion());
  Location loc = module.getLoc();
  auto fn =
      func::FuncOp::create(b, loc, "kernels", b.getFunctionType(argTypes, {}));
  Block *entry = fn.addEntryBlock();
  b.setInsertionPointToStart(entry);
  KernelBuilder k(b, loc);
  emit(k, entry->getArguments());
  func::ReturnOp::create(b, loc);
  return fn;
}

bool check(MLIRContext &ctx, const Problem &pr) {
  const AttentionDims &d = pr.dims;
  int64_t rows = d.batch * d.seq, qCols = d.heads * d.headDim,
          kvCols = d.kvHeads * d.headDim;
  std::mt19937 gen(1234);
  Buffer q = random(rows, qCols, true, gen),
         k = random(rows, kvCols, true, gen),
         v = random(rows, kvCols, true, gen),
         dout = random(rows, qCols, !pr.doutF32, gen);
  Buffer out = empty(rows, qCols, true), dq = empty(rows, qCols, false),
         dk = empty(rows, kvCols, false), dv = empty(rows, kvCols, true);
  Reference ref = reference(d, q, k, v, dout);

  OpBuilder b(&ctx);
  Type bf16 = b.getBF16Type(), f32 = b.getF32Type();
  auto type = [&](const Buffer &x) {
    return MemRefType::get(x.shape, x.bf16 ? bf16 : f32);
  };
  OwningOpRef<ModuleOp> module = ModuleOp::create(b.getUnknownLoc());
  // The forward also returns the rows' log-sum-exp (as a differentiated
  // attention does).
  Buffer lse;
  lse.shape = {d.batch, d.heads, d.seq};
  lse.data.assign(d.batch * d.heads * d.seq,
                  std::numeric_limits<double>::quiet_NaN());
  func::FuncOp fwd =
      build(*module, {type(q), type(k), type(v), type(out), type(lse)},
            [&](KernelBuilder &kb, ValueRange a) {
              AttentionBuffers buf{a[0], a[1], a[2], a[3]};
              buf.lse = a[4];
              flashMMA(kb, buf, d);
            });
  Simulator().run(fwd, {&q, &k, &v, &out, &lse});
  // The backward twice: with the forward's L and O saved, and running the
  // forward's loop again for them.
  Buffer dqSaved = empty(rows, qCols, false),
         dkSaved = empty(rows, kvCols, false),
         dvSaved = empty(rows, kvCols, true);
  OwningOpRef<ModuleOp> gradModule = ModuleOp::create(b.getUnknownLoc());
  func::FuncOp bwd = build(
      *gradModule,
      {type(q), type(k), type(v), type(dout), type(dq), type(dk), type(dv)},
      [&](KernelBuilder &kb, ValueRange a) {
        flashMMAGrad(kb, {a[0], a[1], a[2], {}, a[3], a[4], a[5], a[6]}, d);
      });
  Simulator().run(bwd, {&q, &k, &v, &dout, &dq, &dk, &dv});
  OwningOpRef<ModuleOp> savedModule = ModuleOp::create(b.getUnknownLoc());
  func::FuncOp bwdSaved = build(
      *savedModule,
      {type(q), type(k), type(v), type(dout), type(dq), type(dk), type(dv),
       type(out), type(lse)},
      [&](KernelBuilder &kb, ValueRange a) {
        AttentionBuffers buf{a[0], a[1], a[2], {}, a[3], a[4], a[5], a[6]};
        buf.savedOut = a[7];
        buf.lse = a[8];
        flashMMAGrad(kb, buf, d);
      });
  Simulator().run(
      bwdSaved, {&q, &k, &v, &dout, &dqSaved, &dkSaved, &dvSaved, &out, &lse});

  // bf16 P and dS in the second products, bf16 outputs: errors of a few
  // bf16 ulps (2^-8) of the largest element; a wrong index is O(1).
  const double tol = 2e-2;
  bool ok = true;
  for (auto [what, buf, r] :
       {std::tuple{"out", &out, &ref.out}, std::tuple{"lse", &lse, &ref.lse},
        std::tuple{"dq", &dq, &ref.dq}, std::tuple{"dk", &dk, &ref.dk},
        std::tuple{"dv", &dv, &ref.dv},
        std::tuple{"dq (saved L, O)", &dqSaved, &ref.dq},
        std::tuple{"dk (saved L, O)", &dkSaved, &ref.dk},
        std::tuple{"dv (saved L, O)", &dvSaved, &ref.dv}}) {
    double err = relError(*buf, *r);
    bool good = err <= tol;
    ok &= good;
    llvm::outs() << (good ? "ok   " : "FAIL ") << pr.name << " " << what
                 << ": max |error| / max |ref| = " << llvm::format("%.2e", err)
                 << "\n";
  }
  return ok;
}

} // namespace

int main() {
  MLIRContext ctx;
  ctx.loadDialect<func::FuncDialect, arith::ArithDialect, math::MathDialect,
                  memref::MemRefDialect, scf::SCFDialect, gpu::GPUDialect,
                  NVVM::NVVMDialect, LLVM::LLVMDialect,
                  vector::VectorDialect>();
  auto dims = [](int64_t b, int64_t s, int64_t h, int64_t kv, int64_t d) {
    return AttentionDims{b, s, h, kv, d, 1.0 / std::sqrt(double(d))};
  };
  // 48 = 3 query tiles (a block of 4 warps with idle ones), two feature
  // blocks of 16, grouped-query attention, an f32 result gradient.
  Problem problems[] = {
      {dims(2, 48, 2, 2, 32), false, "b2-s48-h2-d32"},
      {dims(1, 64, 4, 2, 16), true, "gqa-b1-s64-h4-kv2-d16-dout-f32"},
      {dims(1, 32, 1, 1, 64), false, "b1-s32-h1-d64"},
  };
  bool ok = true;
  for (const Problem &p : problems)
    ok &= check(ctx, p);
  llvm::outs() << (ok ? "all ok" : "FAILED") << "\n";
  return ok ? 0 : 1;
}
