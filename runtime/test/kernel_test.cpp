//===- kernel_test.cpp - Tests of the kernel ABI called by compiled code --===//
//
// Usage:
//   triax-rt-kernel-test            run all checks: trx_sgemm, the bf16 and
//                                   the batched GEMMs against a naive
//                                   double loop (transposes, transposed,
//                                   strided and offset views, broadcast
//                                   batches, alpha/beta, edge sizes), the
//                                   bf16 conversions, the state views and
//                                   the allocator
//   triax-rt-kernel-test gemm       only the GEMM family (with the bias
//                                   and GELU epilogue entries) and the bf16
//                                   conversions (buffers from trx_alloc;
//                                   triax-rt-gemm-cuda-test runs this on
//                                   cuBLASLt, where they are device memory:
//                                   the test keeps a host copy of each and
//                                   moves it with the copy hooks around
//                                   every GEMM call)
//   triax-rt-kernel-test abort WHAT make the ABI abort on purpose (for the
//                                   lit test of its messages); WHAT is one of
//                                   inner-stride, row-stride, shape, overlap,
//                                   batch, batch-overlap, batch-stride,
//                                   bf16-overlap, bias-length, bias-stride,
//                                   bias-overlap, gelu-aux-shape,
//                                   gelu-aux-stride, gelu-aux-overlap,
//                                   gelu-aux-overlap-a, gelu-c-transposed,
//                                   unbound, kind, index, rank,
//                                   alignment, free-param, double-free
//
//===----------------------------------------------------------------------===//

#include "bf16.h"
#include "check.h"
#include "gemm_padding.h"
#include "internal.h"
#include "triax_rt.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <set>
#include <type_traits>
#include <vector>

namespace {

uint64_t rngState = 0x12345678ULL;
float nextValue() {
  rngState = rngState * 6364136223846793005ULL + 1442695040888963407ULL;
  return float(int((rngState >> 40) % 2001) - 1000) / 500.0f; // [-2, 2]
}

/// A rows x cols view at `offset` inside a padded buffer with row stride
/// `ld` >= cols; everything outside the view holds a guard value.
struct Mat {
  std::vector<float> buf;
  int64_t rows, cols, ld, offset;
  static constexpr float kGuard = 12345.0f;
  Mat(int64_t r, int64_t c, int64_t padCols, int64_t off)
      : rows(r), cols(c), ld(c + padCols), offset(off) {
    buf.assign(size_t(off + (r > 0 ? r : 1) * ld + 8), kGuard);
    for (int64_t i = 0; i < r; ++i)
      for (int64_t j = 0; j < c; ++j)
        at(i, j) = nextValue();
  }
  float &at(int64_t i, int64_t j) { return buf[size_t(offset + i * ld + j)]; }
  trx_memref_f32_2d desc() {
    trx_memref_f32_2d d;
    d.allocated = buf.data();
    d.aligned = buf.data();
    d.offset = offset;
    d.sizes[0] = rows;
    d.sizes[1] = cols;
    d.strides[0] = ld;
    d.strides[1] = 1;
    return d;
  }
  bool inView(size_t idx) const {
    int64_t k = int64_t(idx) - offset;
    if (k < 0)
      return false;
    return k / ld < rows && k % ld < cols;
  }
};

/// Runs trx_sgemm on (M, N, K) with the given transposes, scalars and
/// padding and checks every element of C against a double-precision loop,
/// and that nothing outside C's view changed.
void checkGemm(int64_t M, int64_t N, int64_t K, bool ta, bool tb, float alpha,
               float beta, int64_t pad) {
  Mat A(ta ? K : M, ta ? M : K, pad, 3);
  Mat B(tb ? N : K, tb ? K : N, pad + 1, 5);
  Mat C(M, N, pad * 2, 7);
  if (beta == 0.0f) // beta == 0 must not read C.
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j)
        C.at(i, j) = std::numeric_limits<float>::quiet_NaN();
  Mat C0 = C;
  trx_memref_f32_2d a = A.desc(), b = B.desc(), c = C.desc();
  _mlir_ciface_trx_sgemm(&a, &b, &c, ta, tb, alpha, beta);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double sum = 0, mag = 0;
      for (int64_t k = 0; k < K; ++k) {
        double x = ta ? A.at(k, i) : A.at(i, k);
        double y = tb ? B.at(j, k) : B.at(k, j);
        sum += x * y;
        mag += std::fabs(x * y);
      }
      double want = double(alpha) * sum;
      if (beta != 0.0f)
        want += double(beta) * double(C0.at(i, j));
      double got = C.at(i, j);
      ++trxtest::checkCount();
      if (!(std::fabs(got - want) <=
            1e-5 * (std::fabs(double(alpha)) * mag + 1.0)))
        trxtest::failed(
            __FILE__, __LINE__,
            "sgemm M=" + std::to_string(M) + " N=" + std::to_string(N) +
                " K=" + std::to_string(K) + " ta=" + std::to_string(ta) +
                " tb=" + std::to_string(tb) + " at (" + std::to_string(i) +
                "," + std::to_string(j) + "): got " + std::to_string(got) +
                ", want " + std::to_string(want));
    }
  bool guardsOk = true;
  for (size_t idx = 0; idx < C.buf.size(); ++idx)
    if (!C.inView(idx) && C.buf[idx] != Mat::kGuard)
      guardsOk = false;
  CHECK(guardsOk);
}

void testSgemm() {
  const int64_t shapes[][3] = {{1, 1, 1}, {3, 5, 7}, {17, 9, 33}, {64, 48, 80},
                               {5, 1, 3}, {1, 6, 4}, {7, 7, 1},   {130, 3, 65}};
  const float alphas[] = {1.0f, -0.5f};
  const float betas[] = {0.0f, 1.0f, 0.25f};
  for (const auto &s : shapes)
    for (int ta = 0; ta < 2; ++ta)
      for (int tb = 0; tb < 2; ++tb)
        for (float alpha : alphas)
          for (float beta : betas)
            for (int64_t pad : {int64_t(0), int64_t(3)})
              checkGemm(s[0], s[1], s[2], ta, tb, alpha, beta, pad);
  // K = 0: C = beta * C; beta = 0 clears (even NaN).
  checkGemm(4, 3, 0, false, false, 1.0f, 0.5f, 2);
  checkGemm(4, 3, 0, true, true, 1.0f, 0.0f, 0);
  // M = 0 / N = 0: nothing happens.
  checkGemm(0, 3, 4, false, false, 1.0f, 1.0f, 1);
  checkGemm(3, 0, 4, false, true, 1.0f, 1.0f, 1);

  // A one-row view may carry any row stride (MLIR gives 1 x N subviews the
  // parent's), a one-column view any inner stride.
  {
    float a[4] = {1, 2, 3, 4}, b[4] = {1, 1, 1, 1}, c[1] = {0};
    trx_memref_f32_2d A = {a, a, 0, {1, 4}, {999, 1}};
    trx_memref_f32_2d B = {b, b, 0, {4, 1}, {1, 77}};
    trx_memref_f32_2d C = {c, c, 0, {1, 1}, {0, 0}};
    _mlir_ciface_trx_sgemm(&A, &B, &C, 0, 0, 1.0f, 0.0f);
    CHECK_EQ(c[0], 10.0f);
  }
  // Side-by-side blocks of one buffer (C = left half, A = right half) do not
  // overlap even though their address ranges interleave.
  {
    std::vector<float> buf(4 * 8, 0.0f), eye(4 * 4, 0.0f);
    for (int i = 0; i < 4; ++i) {
      eye[size_t(i * 4 + i)] = 1.0f;
      for (int j = 0; j < 4; ++j)
        buf[size_t(i * 8 + 4 + j)] = float(i * 4 + j);
    }
    trx_memref_f32_2d C = {buf.data(), buf.data(), 0, {4, 4}, {8, 1}};
    trx_memref_f32_2d A = {buf.data(), buf.data(), 4, {4, 4}, {8, 1}};
    trx_memref_f32_2d I = {eye.data(), eye.data(), 0, {4, 4}, {4, 1}};
    _mlir_ciface_trx_sgemm(&A, &I, &C, 0, 0, 1.0f, 0.0f);
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 4; ++j)
        CHECK_EQ(buf[size_t(i * 8 + j)], float(i * 4 + j));
  }
}

//===----------------------------------------------------------------------===//
// The bf16 and batched GEMMs, against a double-precision loop
//===----------------------------------------------------------------------===//

void testBf16Conversions() {
  using triax::rt::bf16ToF32;
  using triax::rt::f32ToBf16;
  CHECK_EQ(f32ToBf16(1.0f), uint16_t(0x3f80));
  CHECK_EQ(f32ToBf16(-2.0f), uint16_t(0xc000));
  CHECK_EQ(f32ToBf16(-0.0f), uint16_t(0x8000));
  // Ties go to the even mantissa: 1 + 2^-8 is halfway between 1 and
  // 1 + 2^-7 (down, to 1), 1 + 3 * 2^-8 between 1 + 2^-7 and 1 + 2^-6 (up).
  CHECK_EQ(f32ToBf16(1.0f + 0.00390625f), uint16_t(0x3f80));
  CHECK_EQ(f32ToBf16(1.0f + 3 * 0.00390625f), uint16_t(0x3f82));
  // Past halfway rounds up; below, down.
  CHECK_EQ(f32ToBf16(1.0f + 0.0040f), uint16_t(0x3f81));
  CHECK_EQ(f32ToBf16(1.0f + 0.0038f), uint16_t(0x3f80));
  CHECK_EQ(f32ToBf16(std::numeric_limits<float>::infinity()), uint16_t(0x7f80));
  CHECK_EQ(f32ToBf16(std::numeric_limits<float>::max()), uint16_t(0x7f80));
  CHECK_EQ(f32ToBf16(-std::numeric_limits<float>::max()), uint16_t(0xff80));
  // NaNs stay NaNs (even one whose payload is only in the low bits, which
  // plain rounding would turn into infinity).
  uint32_t lowNaN = 0x7f800001u;
  float f;
  std::memcpy(&f, &lowNaN, sizeof(f));
  CHECK(std::isnan(bf16ToF32(f32ToBf16(f))));
  CHECK(std::isnan(bf16ToF32(f32ToBf16(-std::nanf("")))));
  CHECK(std::signbit(bf16ToF32(f32ToBf16(-std::nanf("")))));
  // Widening is exact, and narrowing a widened value gives it back.
  for (uint32_t h = 0; h < 0x10000u; ++h) {
    float w = bf16ToF32(uint16_t(h));
    uint32_t bits;
    std::memcpy(&bits, &w, sizeof(bits));
    if (bits != h << 16 || (!std::isnan(w) && f32ToBf16(w) != uint16_t(h)))
      trxtest::failed(__FILE__, __LINE__,
                      "bf16 round trip of 0x" + std::to_string(h));
  }
  ++trxtest::checkCount();
}

/// Every live RtBuffer, so that a GEMM call can move them all: pushAll()
/// before it (host copies to the trx_alloc blocks), pullAll() after it
/// (back; on CUDA trx_copy_to_host waits for the GEMM).
struct RtBufferBase {
  virtual void push() = 0;
  virtual void pull() = 0;

protected:
  ~RtBufferBase() = default;
};
std::set<RtBufferBase *> &liveBuffers() {
  static std::set<RtBufferBase *> live;
  return live;
}
void pushAll() {
  for (RtBufferBase *b : liveBuffers())
    b->push();
}
void pullAll() {
  for (RtBufferBase *b : liveBuffers())
    b->pull();
}

/// `n` elements: a host copy the test reads and writes (operator[]) and a
/// trx_alloc block the entries get (data(): host memory on the CPU, device
/// memory when linked with the CUDA runtime, so the GEMMs run on the device
/// in triax-rt-gemm-cuda-test), moved with the copy hooks by push / pull.
template <typename T> struct RtBuffer final : RtBufferBase {
  std::vector<T> host;
  T *ptr = nullptr;
  explicit RtBuffer(size_t count = 0) {
    allocate(count);
    liveBuffers().insert(this);
  }
  RtBuffer(const RtBuffer &o) : RtBufferBase() {
    allocate(o.size());
    host = o.host;
    liveBuffers().insert(this);
  }
  RtBuffer &operator=(const RtBuffer &) = delete;
  ~RtBuffer() {
    liveBuffers().erase(this);
    trx_free(ptr);
  }
  /// `count` elements of value `v` (the old ones are freed).
  void assign(size_t count, T v) {
    trx_free(ptr);
    allocate(count);
    host.assign(count, v);
  }
  T *data() { return ptr; }
  size_t size() const { return host.size(); }
  T &operator[](size_t i) { return host[i]; }
  const T &operator[](size_t i) const { return host[i]; }
  void push() override {
    trx_copy_to_device(ptr, host.data(), host.size() * sizeof(T));
  }
  void pull() override {
    trx_copy_to_host(host.data(), ptr, host.size() * sizeof(T));
  }

private:
  void allocate(size_t count) {
    host.assign(count, T());
    ptr = static_cast<T *>(
        trx_alloc((count ? count : 1) * sizeof(T), TRX_MEM_OTHER));
    if (!ptr)
      trxtest::failed(__FILE__, __LINE__, "trx_alloc failed");
  }
};

/// A [batch, rows, cols] operand in a padded buffer of f32 or bf16
/// elements: row-major or a transposed view (row stride 1), padding between
/// rows and matrices, a batch stride of 0 when broadcast. Everything
/// outside the view holds a guard value.
struct Operand3 {
  bool bf16;
  int64_t batch, rows, cols, offset, strides[3];
  RtBuffer<float> f;
  RtBuffer<uint16_t> h;
  static constexpr float kGuard = 12345.0f;

  Operand3(bool bf16, int64_t batch, int64_t rows, int64_t cols,
           bool transposed, int64_t pad, bool broadcast, int64_t offset)
      : bf16(bf16), batch(batch), rows(rows), cols(cols), offset(offset) {
    strides[1] = transposed ? 1 : cols + pad;
    strides[2] = transposed ? rows + pad : 1;
    int64_t span = transposed ? (cols - 1) * strides[2] + rows
                              : (rows - 1) * strides[1] + cols;
    if (rows == 0 || cols == 0)
      span = 1;
    strides[0] = broadcast ? 0 : span + pad + 2;
    size_t n =
        size_t(offset + (batch > 0 ? batch - 1 : 0) * strides[0] + span + 8);
    f.assign(n, kGuard);
    h.assign(n, triax::rt::f32ToBf16(kGuard));
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < cols; ++j)
          set(b, i, j, nextValue());
  }
  size_t index(int64_t b, int64_t i, int64_t j) const {
    return size_t(offset + b * strides[0] + i * strides[1] + j * strides[2]);
  }
  double get(int64_t b, int64_t i, int64_t j) const {
    return bf16 ? double(triax::rt::bf16ToF32(h[index(b, i, j)]))
                : double(f[index(b, i, j)]);
  }
  void set(int64_t b, int64_t i, int64_t j, float v) {
    if (bf16)
      h[index(b, i, j)] = triax::rt::f32ToBf16(v);
    else
      f[index(b, i, j)] = v;
  }
  template <typename D> D desc3() {
    D d;
    using T = std::remove_pointer_t<decltype(d.aligned)>;
    T *data = reinterpret_cast<T *>(bf16 ? static_cast<void *>(h.data())
                                         : static_cast<void *>(f.data()));
    d.allocated = data;
    d.aligned = data;
    d.offset = offset;
    for (int k = 0; k < 3; ++k) {
      d.sizes[k] = k == 0 ? batch : k == 1 ? rows : cols;
      d.strides[k] = strides[k];
    }
    return d;
  }
  template <typename D> D desc2() {
    D d;
    using T = std::remove_pointer_t<decltype(d.aligned)>;
    T *data = reinterpret_cast<T *>(bf16 ? static_cast<void *>(h.data())
                                         : static_cast<void *>(f.data()));
    d.allocated = data;
    d.aligned = data;
    d.offset = offset;
    d.sizes[0] = rows;
    d.sizes[1] = cols;
    d.strides[0] = strides[1];
    d.strides[1] = strides[2];
    return d;
  }
  /// Whether every element outside the view still holds the guard.
  bool guardsIntact() const {
    std::vector<bool> inView(bf16 ? h.size() : f.size(), false);
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < cols; ++j)
          inView[index(b, i, j)] = true;
    for (size_t k = 0; k < inView.size(); ++k)
      if (!inView[k] &&
          (bf16 ? h[k] != triax::rt::f32ToBf16(kGuard) : f[k] != kGuard))
        return false;
    return true;
  }
};

/// The double-precision reference of one element of op(A_b) op(B_b): the
/// sum over k, and the sum of the terms' magnitudes (for the tolerance).
struct RefDot {
  double sum = 0, mag = 0;
};
RefDot refDot(const Operand3 &A, const Operand3 &B, int64_t b, int64_t i,
              int64_t j, int64_t K, bool ta, bool tb) {
  RefDot r;
  for (int64_t k = 0; k < K; ++k) {
    double x = ta ? A.get(b, k, i) : A.get(b, i, k);
    double y = tb ? B.get(b, j, k) : B.get(b, k, j);
    r.sum += x * y;
    r.mag += std::fabs(x * y);
  }
  return r;
}

/// One GEMM through the entry of `type` (trx_gemm_type), 2-D or batched.
void callGemmEntry(int type, bool batched, Operand3 &A, Operand3 &B,
                   Operand3 &C, bool ta, bool tb, float alpha, float beta);

/// callGemmEntry between pushAll and pullAll: C (every buffer) is on the
/// host when it returns.
void callGemm(int type, bool batched, Operand3 &A, Operand3 &B, Operand3 &C,
              bool ta, bool tb, float alpha, float beta) {
  pushAll();
  callGemmEntry(type, batched, A, B, C, ta, tb, alpha, beta);
  pullAll();
}

void callGemmEntry(int type, bool batched, Operand3 &A, Operand3 &B,
                   Operand3 &C, bool ta, bool tb, float alpha, float beta) {
  if (batched) {
    auto a = A.desc3<trx_memref_bf16_3d>(), b = B.desc3<trx_memref_bf16_3d>();
    if (type == TRX_GEMM_F32) {
      auto af = A.desc3<trx_memref_f32_3d>(), bf = B.desc3<trx_memref_f32_3d>(),
           cf = C.desc3<trx_memref_f32_3d>();
      _mlir_ciface_trx_sgemm_batched(&af, &bf, &cf, ta, tb, alpha, beta);
    } else if (type == TRX_GEMM_BF16) {
      auto c = C.desc3<trx_memref_bf16_3d>();
      _mlir_ciface_trx_gemm_bf16_batched(&a, &b, &c, ta, tb, alpha, beta);
    } else {
      auto c = C.desc3<trx_memref_f32_3d>();
      _mlir_ciface_trx_gemm_bf16_f32_batched(&a, &b, &c, ta, tb, alpha, beta);
    }
    return;
  }
  auto a = A.desc2<trx_memref_bf16_2d>(), b = B.desc2<trx_memref_bf16_2d>();
  if (type == TRX_GEMM_F32) {
    auto af = A.desc2<trx_memref_f32_2d>(), bf = B.desc2<trx_memref_f32_2d>(),
         cf = C.desc2<trx_memref_f32_2d>();
    _mlir_ciface_trx_sgemm(&af, &bf, &cf, ta, tb, alpha, beta);
  } else if (type == TRX_GEMM_BF16) {
    auto c = C.desc2<trx_memref_bf16_2d>();
    _mlir_ciface_trx_gemm_bf16(&a, &b, &c, ta, tb, alpha, beta);
  } else {
    auto c = C.desc2<trx_memref_f32_2d>();
    _mlir_ciface_trx_gemm_bf16_f32(&a, &b, &c, ta, tb, alpha, beta);
  }
}

/// Layout of one case: which operands are transposed views, which are
/// broadcast over the batch.
struct GemmLayout {
  bool aT, bT, cT, aBcast, bBcast;
};

/// Checks one GEMM of (M, N, K, batch) against a double loop over the
/// (bf16-exact) operand values: f32 results within fp32 rounding, bf16
/// results within that plus half a bf16 ulp; the guards unchanged.
void checkGemm3(int type, bool batched, int64_t M, int64_t N, int64_t K,
                int64_t batch, bool ta, bool tb, GemmLayout l, float alpha,
                float beta, int64_t pad) {
  bool abBf16 = type != TRX_GEMM_F32, cBf16 = type == TRX_GEMM_BF16;
  Operand3 A(abBf16, batch, ta ? K : M, ta ? M : K, l.aT, pad, l.aBcast, 3);
  Operand3 B(abBf16, batch, tb ? N : K, tb ? K : N, l.bT, pad + 1, l.bBcast, 5);
  Operand3 C(cBf16, batch, M, N, l.cT, pad * 2, false, 7);
  if (beta == 0.0f) // beta == 0 must not read C.
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < N; ++j)
          C.set(b, i, j, std::numeric_limits<float>::quiet_NaN());
  Operand3 C0 = C;
  callGemm(type, batched, A, B, C, ta, tb, alpha, beta);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        auto [sum, mag] = refDot(A, B, b, i, j, K, ta, tb);
        double want = double(alpha) * sum, c0 = 0;
        if (beta != 0.0f) {
          c0 = double(beta) * C0.get(b, i, j);
          want += c0;
        }
        double tol =
            1e-5 * (std::fabs(double(alpha)) * mag + std::fabs(c0) + 1.0);
        // bf16: half an ulp (8 bits) of the result; with beta, half an
        // ulp of alpha*sum too (cuBLASLt may round the product to bf16
        // before it adds beta*C, as its bias epilogue does: checkGemmBias).
        if (cBf16)
          tol += (std::fabs(want) +
                  (beta != 0.0f ? std::fabs(double(alpha) * sum) : 0.0)) /
                 256.0;
        double got = C.get(b, i, j);
        ++trxtest::checkCount();
        if (!(std::fabs(got - want) <= tol))
          trxtest::failed(
              __FILE__, __LINE__,
              "gemm type " + std::to_string(type) + " batched=" +
                  std::to_string(batched) + " M=" + std::to_string(M) +
                  " N=" + std::to_string(N) + " K=" + std::to_string(K) +
                  " batch=" + std::to_string(batch) +
                  " ta=" + std::to_string(ta) + " tb=" + std::to_string(tb) +
                  " layout " + std::to_string(l.aT) + std::to_string(l.bT) +
                  std::to_string(l.cT) + std::to_string(l.aBcast) +
                  std::to_string(l.bBcast) + " alpha " + std::to_string(alpha) +
                  " beta " + std::to_string(beta) + " pad " +
                  std::to_string(pad) + " at (" + std::to_string(b) + "," +
                  std::to_string(i) + "," + std::to_string(j) + "): got " +
                  std::to_string(got) + ", want " + std::to_string(want));
      }
  CHECK(C.guardsIntact());
  CHECK(A.guardsIntact());
  CHECK(B.guardsIntact());
}

/// Defined by libtriax_rt_cuda.a only: non-null in triax-rt-gemm-cuda-test.
extern "C" uint64_t trx_cuda_gemms(void) __attribute__((weak));

/// The worst |got - want| / tolerance of C in the GELU epilogue checks
/// against the double loop, f32 and bf16.
double &geluMaxErr(bool bf16) {
  static double worst[2] = {0, 0};
  return worst[bf16 ? 1 : 0];
}

/// Checks one GEMM with a bias epilogue (trx_sgemm_bias, or
/// trx_gemm_bf16_bias when `bf16`) against a double loop: C[i, j] =
/// alpha op(A) op(B) + bias[j], C not read (NaN before), the guards of C and
/// of the bias buffer (at `biasOffset`) unchanged. On the CPU the result
/// must also equal, bit for bit, filling C with the bias and calling the
/// plain entry with beta 1 (what compiled code did before the bias entries).
void checkGemmBias(bool bf16, int64_t M, int64_t N, int64_t K, bool ta, bool tb,
                   GemmLayout l, float alpha, int64_t pad, int64_t biasOffset) {
  Operand3 A(bf16, 1, ta ? K : M, ta ? M : K, l.aT, pad, false, 3);
  Operand3 B(bf16, 1, tb ? N : K, tb ? K : N, l.bT, pad + 1, false, 5);
  Operand3 C(bf16, 1, M, N, l.cT, pad * 2, false, 7);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j)
      C.set(0, i, j, std::numeric_limits<float>::quiet_NaN());
  size_t biasLen = size_t(biasOffset + N + 4);
  RtBuffer<float> bf(biasLen);
  RtBuffer<uint16_t> bh(biasLen);
  for (size_t k = 0; k < biasLen; ++k) {
    bool inView = int64_t(k) >= biasOffset && int64_t(k) < biasOffset + N;
    float v = inView ? nextValue() : Operand3::kGuard;
    bf[k] = v;
    bh[k] = triax::rt::f32ToBf16(v);
  }
  auto biasAt = [&](int64_t j) {
    size_t k = size_t(biasOffset + j);
    return bf16 ? double(triax::rt::bf16ToF32(bh[k])) : double(bf[k]);
  };
  Operand3 C0 = C; // for the fill + beta 1 comparison
  pushAll();
  if (bf16) {
    auto a = A.desc2<trx_memref_bf16_2d>(), b = B.desc2<trx_memref_bf16_2d>(),
         c = C.desc2<trx_memref_bf16_2d>();
    trx_memref_bf16_1d v = {bh.data(), bh.data(), biasOffset, {N}, {1}};
    _mlir_ciface_trx_gemm_bf16_bias(&a, &b, &c, &v, ta, tb, alpha);
  } else {
    auto a = A.desc2<trx_memref_f32_2d>(), b = B.desc2<trx_memref_f32_2d>(),
         c = C.desc2<trx_memref_f32_2d>();
    trx_memref_f32_1d v = {bf.data(), bf.data(), biasOffset, {N}, {1}};
    _mlir_ciface_trx_sgemm_bias(&a, &b, &c, &v, ta, tb, alpha);
  }
  pullAll(); // the device's GEMM before the host reads C
  std::string what = std::string(bf16 ? "gemm_bf16_bias" : "sgemm_bias") +
                     " M=" + std::to_string(M) + " N=" + std::to_string(N) +
                     " K=" + std::to_string(K) + " ta=" + std::to_string(ta) +
                     " tb=" + std::to_string(tb) + " layout " +
                     std::to_string(l.aT) + std::to_string(l.bT) +
                     std::to_string(l.cT);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      auto [sum, mag] = refDot(A, B, 0, i, j, K, ta, tb);
      double want = double(alpha) * sum + biasAt(j);
      double tol =
          1e-5 * (std::fabs(double(alpha)) * mag + std::fabs(biasAt(j)) + 1.0);
      // bf16: half an ulp (8 significant bits) of the result, and half an
      // ulp of alpha*sum on top: the CPU rounds alpha*sum + bias once, but
      // cuBLASLt's bias epilogue may round the product to bf16 before it
      // adds the bias (on the H200, M=17 N=9 K=33 gave one element 0.72
      // ulps of the result off and another 3.7, which a rounding of the
      // product before the bias explains).
      if (bf16)
        tol += (std::fabs(double(alpha) * sum) + std::fabs(want)) / 256.0;
      double got = C.get(0, i, j);
      ++trxtest::checkCount();
      if (!(std::fabs(got - want) <= tol))
        trxtest::failed(__FILE__, __LINE__,
                        what + " at (" + std::to_string(i) + "," +
                            std::to_string(j) + "): got " +
                            std::to_string(got) + ", want " +
                            std::to_string(want));
    }
  CHECK(C.guardsIntact());
  for (size_t k = 0; k < biasLen; ++k)
    if (int64_t(k) < biasOffset || int64_t(k) >= biasOffset + N)
      CHECK(bf16 ? bh[k] == triax::rt::f32ToBf16(Operand3::kGuard)
                 : bf[k] == Operand3::kGuard);
  if (trx_cuda_gemms)
    return; // cuBLASLt rounds its own way; the tolerance above holds
  // The old order: C = bias on every row, then the plain GEMM with beta 1.
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j)
      C0.set(0, i, j, float(biasAt(j)));
  callGemm(bf16 ? TRX_GEMM_BF16 : TRX_GEMM_F32, false, A, B, C0, ta, tb, alpha,
           1.0f);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      size_t k = C.index(0, i, j);
      bool same = bf16 ? C.h[k] == C0.h[k]
                       : std::memcmp(&C.f[k], &C0.f[k], sizeof(float)) == 0;
      ++trxtest::checkCount();
      if (!same)
        trxtest::failed(__FILE__, __LINE__,
                        what +
                            ": not bit for bit the fill + beta 1 result at (" +
                            std::to_string(i) + "," + std::to_string(j) + ")");
    }
}

void testGemmBias() {
  const int64_t shapes[][3] = {{1, 1, 1}, {3, 5, 7},    {17, 9, 33},
                               {5, 1, 3}, {1, 6, 4},    {40, 24, 70},
                               {4, 3, 0}, {64, 96, 128}};
  const GemmLayout layouts[] = {{false, false, false, false, false},
                                {true, false, false, false, false},
                                {false, true, false, false, false},
                                {false, false, true, false, false},
                                {true, true, true, false, false}};
  int64_t offset = 0;
  for (bool bf16 : {false, true})
    for (const auto &s : shapes)
      for (int ta = 0; ta < 2; ++ta)
        for (int tb = 0; tb < 2; ++tb)
          for (const GemmLayout &l : layouts)
            for (float alpha : {1.0f, -0.5f}) {
              offset = (offset + 3) % 7; // odd offsets: unaligned vectors
              checkGemmBias(bf16, s[0], s[1], s[2], ta, tb, l, alpha,
                            alpha < 0 ? 2 : 1, offset);
            }
}

void testGemmFamily() {
  const int64_t shapes[][3] = {{1, 1, 1}, {3, 5, 7}, {17, 9, 33}, {5, 1, 3},
                               {1, 6, 4}, {7, 7, 1}, {40, 24, 70}};
  const GemmLayout layouts[] = {
      {false, false, false, false, false}, {true, false, false, false, false},
      {false, true, false, false, false},  {false, false, true, false, false},
      {true, true, true, false, false},    {false, false, false, true, false},
      {false, false, false, false, true},  {true, false, true, false, true}};
  const float alphaBeta[][2] = {{1.0f, 0.0f}, {-0.5f, 1.0f}, {2.0f, 0.25f}};
  for (int type : {TRX_GEMM_F32, TRX_GEMM_BF16, TRX_GEMM_BF16_F32})
    for (bool batched : {false, true})
      for (const auto &s : shapes)
        for (int ta = 0; ta < 2; ++ta)
          for (int tb = 0; tb < 2; ++tb)
            for (const GemmLayout &l : layouts) {
              // Broadcasting needs a batch; the 2-D entries have none.
              if (!batched && (l.aBcast || l.bBcast))
                continue;
              for (const auto &ab : alphaBeta)
                checkGemm3(type, batched, s[0], s[1], s[2], batched ? 3 : 1, ta,
                           tb, l, ab[0], ab[1], ab[0] < 0 ? 2 : 0);
            }
  for (int type : {TRX_GEMM_F32, TRX_GEMM_BF16, TRX_GEMM_BF16_F32}) {
    GemmLayout plain{false, false, false, false, false};
    GemmLayout cT{false, false, true, false, false};
    // K = 0: C = beta * C; beta = 0 clears (even NaN).
    checkGemm3(type, true, 4, 3, 0, 2, false, false, plain, 1.0f, 0.5f, 2);
    checkGemm3(type, true, 4, 3, 0, 2, true, true, cT, 1.0f, 0.0f, 0);
    checkGemm3(type, false, 4, 3, 0, 1, false, true, plain, 1.0f, 0.5f, 1);
    // Empty C, empty batch: nothing happens.
    checkGemm3(type, true, 0, 3, 4, 2, false, false, plain, 1.0f, 1.0f, 1);
    checkGemm3(type, true, 3, 2, 4, 0, false, false, plain, 1.0f, 1.0f, 1);
    checkGemm3(type, false, 3, 0, 4, 1, false, true, plain, 1.0f, 1.0f, 1);
    // A longer batch, both broadcast patterns.
    checkGemm3(type, true, 6, 5, 4, 9, false, true,
               {false, false, false, true, false}, 1.0f, 0.0f, 1);
    checkGemm3(type, true, 6, 5, 4, 9, true, false,
               {false, true, false, false, true}, 0.5f, 1.0f, 0);
  }
  // The heads of one [S, H*d] buffer as a batch (batch stride d, row stride
  // H*d): interleaved in memory, disjoint as elements. C = the heads of
  // another such buffer, A = Q heads, B = K heads transposed.
  {
    const int64_t S = 5, H = 3, d = 4;
    RtBuffer<float> q(size_t(S * H * d)), k(size_t(S * H * d)),
        out(size_t(S * H * S));
    for (size_t i = 0; i < q.size(); ++i) {
      q[i] = nextValue();
      k[i] = nextValue();
    }
    trx_memref_f32_3d Q = {q.data(), q.data(), 0, {H, S, d}, {d, H * d, 1}};
    trx_memref_f32_3d K = {k.data(), k.data(), 0, {H, S, d}, {d, H * d, 1}};
    trx_memref_f32_3d O = {out.data(), out.data(), 0, {H, S, S}, {S, H * S, 1}};
    pushAll();
    _mlir_ciface_trx_sgemm_batched(&Q, &K, &O, 0, 1, 1.0f, 0.0f);
    pullAll();
    bool ok = true;
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < S; ++i)
        for (int64_t j = 0; j < S; ++j) {
          double want = 0;
          for (int64_t t = 0; t < d; ++t)
            want += double(q[size_t(i * H * d + h * d + t)]) *
                    double(k[size_t(j * H * d + h * d + t)]);
          ok = ok && std::fabs(out[size_t(i * H * S + h * S + j)] - want) <=
                         1e-5 * (std::fabs(want) + 1.0);
        }
    CHECK(ok);
  }
}

//===----------------------------------------------------------------------===//
// The GELU epilogues
//===----------------------------------------------------------------------===//

/// The compiler's GELU formulas (TriaxScalar.cpp) in double: the reference.
const double kSqrt2OverPi = std::sqrt(2.0 / 3.14159265358979323846);
double geluRef(double x) {
  double t = std::tanh(kSqrt2OverPi * (x + 0.044715 * x * x * x));
  return 0.5 * x * (1.0 + t);
}
/// gelu'(x).
double geluDerivRef(double x) {
  double t = std::tanh(kSqrt2OverPi * (x + 0.044715 * x * x * x));
  return 0.5 * (1.0 + t) +
         0.5 * x * (1.0 - t * t) * kSqrt2OverPi * (1.0 + 3 * 0.044715 * x * x);
}

/// The same formulas in f32, operation by operation in the compiler's order
/// (this file is compiled with -ffp-contract=off): what the generated
/// triax.gelu / triax.gelu_grad kernels compute, written out again here
/// independently of the runtime's copy.
const float kK0f = float(std::sqrt(2.0 / 3.14159265358979323846));
const float kCf = float(0.044715), kC3f = float(3.0 * 0.044715);
/// triax-expand-math's tanh (include/triax/Conversion/Passes.td): exp(-2a) -
/// 1 for a = min(|x|, 9) by n = round(-2a / ln 2), r = -2a - n ln 2 and
/// expm1(r)'s Taylor polynomial to degree 7, then -e / (2 + e), x's sign.
float tanhF32(float x) {
  float a = std::min(std::fabs(x), 9.0f);
  if (std::isnan(x))
    a = x;
  float y = -2.0f * a;
  int32_t n = int32_t(y * 1.44269504088896341f - 0.5f);
  float nf = float(n);
  float r = (y - nf * 0.693145751953125f) - nf * 1.42860682030941723212e-6f;
  const float inv[] = {1.0f / 720.0f, 1.0f / 120.0f, 1.0f / 24.0f, 1.0f / 6.0f,
                       0.5f};
  float q = 1.0f / 5040.0f;
  for (float k : inv)
    q = k + r * q;
  float p = r + (r * r) * q;
  float s = std::ldexp(1.0f, n);
  float e = s * p + (s - 1.0f);
  return std::copysign(-e / (2.0f + e), x);
}
float geluTanhF32(float x) {
  float x3 = (x * x) * x;
  float inner = x + kCf * x3;
  return tanhF32(kK0f * inner);
}

/// The f32 tanh against the double one: within 3 ulps of tanh(x) on a
/// dense sweep of [-12, 12] (every 2^-14, and the small and tiny values
/// x = 2^-k), odd, exact at 0, NaN for NaN, +-1 at +-infinity.
void testTanh() {
  auto ulps = [](float got, double want) {
    float w = float(want);
    double ulp = double(std::nextafter(std::fabs(w), INFINITY) - std::fabs(w));
    return std::fabs(double(got) - want) / ulp;
  };
  double worst = 0, worstX = 0;
  std::vector<float> xs;
  for (int i = -12 * 16384; i <= 12 * 16384; ++i)
    xs.push_back(float(i) / 16384.0f);
  for (int k = 1; k < 120; ++k)
    xs.push_back(std::ldexp(1.0f, -k) * 1.37f);
  for (float x : xs) {
    float got = tanhF32(x);
    double err = ulps(got, std::tanh(double(x)));
    if (err > worst)
      worst = err, worstX = x;
    ++trxtest::checkCount();
    if (tanhF32(-x) != -got)
      CHECK(tanhF32(-x) == -got);
  }
  std::printf("  tanh: worst %.2f ulps at x = %.9g\n", worst, worstX);
  CHECK(worst <= 3.0);
  CHECK(tanhF32(0.0f) == 0.0f && !std::signbit(tanhF32(0.0f)));
  CHECK(std::signbit(tanhF32(-0.0f)));
  CHECK(std::isnan(tanhF32(NAN)));
  CHECK(tanhF32(INFINITY) == 1.0f && tanhF32(-INFINITY) == -1.0f);
}
float geluF32(float x) { return (0.5f * x) * (1.0f + geluTanhF32(x)); }
float geluGradF32(float x, float dy) {
  float t = geluTanhF32(x);
  float du = kK0f * (1.0f + kC3f * (x * x));
  float left = 0.5f * (1.0f + t);
  float right = ((0.5f * x) * (1.0f - t * t)) * du;
  return dy * (left + right);
}

/// Bounds of the f32 formulas' rounding against the double ones (measured
/// over [-40, 40] with 4-8x to spare): gelu within 1e-5 |gelu| + 1e-7
/// (1 + |x|), gelu' within 1e-5 |gelu'| + 1e-7 (1 + x^2).
double geluEvalTol(double x, double g) {
  return 1e-5 * std::fabs(g) + 1e-7 * (1.0 + std::fabs(x));
}
double geluDerivEvalTol(double x, double gp) {
  return 1e-5 * std::fabs(gp) + 1e-7 * (1.0 + x * x);
}
constexpr double kMaxGeluDeriv = 1.13; // max |gelu'| (1.1290 at x = 1.5)

/// Checks one GELU epilogue GEMM: trx_sgemm_bias_gelu / trx_gemm_bf16_
/// bias_gelu (`dgelu` false) or trx_sgemm_dgelu / trx_gemm_bf16_dgelu, M x N
/// x K, A / B as transposed views when aT / bT, aux with row padding
/// `auxPad` at element offset `auxOffset` (a row stride that is a multiple
/// of 8 and offset 0 take cuBLASLt's epilogue, anything else its host
/// fallback). Against a double loop from A, B (and the bias): aux = the
/// pre-activation, C = gelu(pre) / product * gelu'(aux), within the
/// roundings. On the CPU, also within an f32 rounding / one bf16 ulp of the
/// double formula of the stored intermediates, and bit for bit the unfused
/// result: the bias / plain GEMM entry, then the f32 formula above.
void checkGemmGelu(bool bf16, bool dgelu, int64_t M, int64_t N, int64_t K,
                   bool ta, bool tb, bool aT, bool bT, float alpha, int64_t pad,
                   int64_t auxPad, int64_t auxOffset) {
  Operand3 A(bf16, 1, ta ? K : M, ta ? M : K, aT, pad, false, 3);
  Operand3 B(bf16, 1, tb ? N : K, tb ? K : N, bT, pad + 1, false, 5);
  Operand3 C(bf16, 1, M, N, false, pad * 2, false, 7);
  Operand3 aux(bf16, 1, M, N, false, auxPad, false, auxOffset);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      C.set(0, i, j, std::numeric_limits<float>::quiet_NaN()); // not read
      if (dgelu) // an input: the forward's pre-activation, in [-4, 4]
        aux.set(0, i, j, 2.0f * nextValue());
      else // an output
        aux.set(0, i, j, std::numeric_limits<float>::quiet_NaN());
    }
  size_t biasLen = size_t(N + 3);
  RtBuffer<float> bf(biasLen);
  RtBuffer<uint16_t> bh(biasLen);
  for (size_t k = 0; k < biasLen; ++k) {
    float v = k >= 1 && k < size_t(N) + 1 ? nextValue() : Operand3::kGuard;
    bf[k] = v;
    bh[k] = triax::rt::f32ToBf16(v);
  }
  auto biasAt = [&](int64_t j) {
    size_t k = size_t(1 + j);
    return bf16 ? double(triax::rt::bf16ToF32(bh[k])) : double(bf[k]);
  };
  Operand3 C0 = C, aux0 = aux; // for the unfused comparison
  auto callEntry = [&](Operand3 &c, Operand3 &x) {
    if (bf16) {
      auto a = A.desc2<trx_memref_bf16_2d>(), b = B.desc2<trx_memref_bf16_2d>(),
           cd = c.desc2<trx_memref_bf16_2d>(),
           xd = x.desc2<trx_memref_bf16_2d>();
      trx_memref_bf16_1d v = {bh.data(), bh.data(), 1, {N}, {1}};
      if (dgelu)
        _mlir_ciface_trx_gemm_bf16_dgelu(&a, &b, &cd, &xd, ta, tb, alpha);
      else
        _mlir_ciface_trx_gemm_bf16_bias_gelu(&a, &b, &cd, &v, &xd, ta, tb,
                                             alpha);
    } else {
      auto a = A.desc2<trx_memref_f32_2d>(), b = B.desc2<trx_memref_f32_2d>(),
           cd = c.desc2<trx_memref_f32_2d>(), xd = x.desc2<trx_memref_f32_2d>();
      trx_memref_f32_1d v = {bf.data(), bf.data(), 1, {N}, {1}};
      if (dgelu)
        _mlir_ciface_trx_sgemm_dgelu(&a, &b, &cd, &xd, ta, tb, alpha);
      else
        _mlir_ciface_trx_sgemm_bias_gelu(&a, &b, &cd, &v, &xd, ta, tb, alpha);
    }
  };
  pushAll();
  callEntry(C, aux);
  pullAll(); // the device's GEMM before the host reads C
  bool gpu = trx_cuda_gemms != nullptr;
  std::string what = std::string(bf16 ? "gemm_bf16_" : "sgemm_") +
                     (dgelu ? "dgelu" : "bias_gelu") +
                     " M=" + std::to_string(M) + " N=" + std::to_string(N) +
                     " K=" + std::to_string(K) + " ta=" + std::to_string(ta) +
                     " tb=" + std::to_string(tb) + " layout " +
                     std::to_string(aT) + std::to_string(bT) +
                     " ldaux=" + std::to_string(N + auxPad) +
                     " auxOffset=" + std::to_string(auxOffset);
  auto fail = [&](const char *kind, int64_t i, int64_t j, double got,
                  double want) {
    trxtest::failed(__FILE__, __LINE__,
                    what + ": " + kind + " at (" + std::to_string(i) + "," +
                        std::to_string(j) + "): got " + std::to_string(got) +
                        ", want " + std::to_string(want));
  };
  double maxErr = 0; // |got - want| / tol, the worst over C
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      auto [sum, mag] = refDot(A, B, 0, i, j, K, ta, tb);
      double prod = double(alpha) * sum;
      double prodTol = 1e-5 * (std::fabs(double(alpha)) * mag + 1.0);
      double got = C.get(0, i, j), want, tol;
      if (!dgelu) {
        // aux: the pre-activation, as trx_sgemm_bias checks it.
        double pre = prod + biasAt(j);
        double preTol = prodTol + 1e-5 * std::fabs(biasAt(j));
        if (bf16)
          preTol += std::fabs(pre) / 256.0; // half an ulp of 8 bits
        double gotAux = aux.get(0, i, j);
        ++trxtest::checkCount();
        if (!(std::fabs(gotAux - pre) <= preTol))
          fail("aux", i, j, gotAux, pre);
        want = geluRef(pre);
        tol = kMaxGeluDeriv * preTol + geluEvalTol(pre, want);
        if (gpu) // cuBLASLt's own tanh
          tol += 1e-3 * (1.0 + std::fabs(pre));
      } else {
        double x = aux.get(0, i, j), gp = geluDerivRef(x);
        if (bf16)
          prodTol += std::fabs(prod) / 256.0; // the product stored as bf16
        want = prod * gp;
        tol = std::fabs(gp) * prodTol +
              (std::fabs(prod) + prodTol) * geluDerivEvalTol(x, gp);
        if (gpu) // cuBLASLt's own tanh
          tol += 1e-3 * (1.0 + x * x) * std::fabs(prod);
      }
      if (bf16)
        tol += std::fabs(want) / 256.0; // C rounded to bf16
      ++trxtest::checkCount();
      if (!(std::fabs(got - want) <= tol))
        fail("C", i, j, got, want);
      maxErr = std::max(maxErr, std::fabs(got - want) / tol);
    }
  CHECK(C.guardsIntact());
  CHECK(aux.guardsIntact());
  CHECK(A.guardsIntact());
  CHECK(B.guardsIntact());
  for (size_t k = 0; k < biasLen; ++k)
    if (k == 0 || k >= size_t(N) + 1)
      CHECK(bf16 ? bh[k] == triax::rt::f32ToBf16(Operand3::kGuard)
                 : bf[k] == Operand3::kGuard);
  if (gpu)
    return; // cuBLASLt rounds its own way; the tolerances above hold

  // The unfused order on the CPU: the bias GEMM into aux0 (bias_gelu) or
  // the plain GEMM into C0 (dgelu), then the f32 formula element by
  // element on the stored values.
  if (dgelu) {
    callGemm(bf16 ? TRX_GEMM_BF16 : TRX_GEMM_F32, false, A, B, C0, ta, tb,
             alpha, 0.0f);
  } else if (bf16) {
    auto a = A.desc2<trx_memref_bf16_2d>(), b = B.desc2<trx_memref_bf16_2d>(),
         xd = aux0.desc2<trx_memref_bf16_2d>();
    trx_memref_bf16_1d v = {bh.data(), bh.data(), 1, {N}, {1}};
    pushAll();
    _mlir_ciface_trx_gemm_bf16_bias(&a, &b, &xd, &v, ta, tb, alpha);
    pullAll();
  } else {
    auto a = A.desc2<trx_memref_f32_2d>(), b = B.desc2<trx_memref_f32_2d>(),
         xd = aux0.desc2<trx_memref_f32_2d>();
    trx_memref_f32_1d v = {bf.data(), bf.data(), 1, {N}, {1}};
    pushAll();
    _mlir_ciface_trx_sgemm_bias(&a, &b, &xd, &v, ta, tb, alpha);
    pullAll();
  }
  auto bits = [&](const Operand3 &o, size_t k) {
    uint32_t u = 0;
    if (bf16)
      u = o.h[k];
    else
      std::memcpy(&u, &o.f[k], sizeof(u));
    return u;
  };
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      size_t kc = C.index(0, i, j), kx = aux.index(0, i, j);
      // The stored intermediates: the pre-activation (aux), the product.
      float x = float(aux0.get(0, i, j));
      float dy = dgelu ? float(C0.get(0, i, j)) : 0.0f;
      float r = dgelu ? geluGradF32(x, dy) : geluF32(x);
      if (bf16) {
        uint16_t h = triax::rt::f32ToBf16(r);
        C0.h[kc] = h;
      } else {
        C0.f[kc] = r;
      }
      // Within the f32 formula's rounding (one bf16 ulp) of the double
      // formula on the stored intermediates.
      double want = dgelu ? double(dy) * geluDerivRef(x) : geluRef(x);
      double tol = dgelu ? std::fabs(dy) * geluDerivEvalTol(x, geluDerivRef(x))
                         : geluEvalTol(x, want);
      if (bf16)
        tol += std::fabs(want) / 128.0; // one ulp of 8 bits
      double got = C.get(0, i, j);
      ++trxtest::checkCount();
      if (!(std::fabs(got - want) <= tol))
        fail("C vs the formula of the stored values", i, j, got, want);
      ++trxtest::checkCount();
      if (bits(C, kc) != bits(C0, kc))
        fail("C not bit for bit the unfused result", i, j, got,
             C0.get(0, i, j));
      if (!dgelu) {
        ++trxtest::checkCount();
        if (bits(aux, kx) != bits(aux0, kx))
          fail("aux not bit for bit trx_*_bias's", i, j, aux.get(0, i, j),
               aux0.get(0, i, j));
      }
    }
  geluMaxErr(bf16) = std::max(geluMaxErr(bf16), maxErr);
}

void testGemmGelu() {
  // N = 5, 9, 13: rows not a multiple of 8 (the host fallback on cuBLASLt);
  // 24, 96: cuBLASLt's epilogue with an unpadded aux.
  const int64_t shapes[][3] = {{1, 1, 1},  {3, 5, 7},  {17, 9, 33},
                               {5, 13, 3}, {1, 24, 4}, {40, 24, 70},
                               {4, 24, 0}, {7, 5, 0},  {64, 96, 128}};
  const bool views[][2] = {
      {false, false}, {true, false}, {false, true}, {true, true}};
  for (bool bf16 : {false, true})
    for (bool dgelu : {false, true})
      for (const auto &s : shapes)
        for (int ta = 0; ta < 2; ++ta)
          for (int tb = 0; tb < 2; ++tb)
            for (const auto &v : views)
              for (float alpha : {1.0f, -0.5f})
                checkGemmGelu(bf16, dgelu, s[0], s[1], s[2], ta, tb, v[0], v[1],
                              alpha, alpha < 0 ? 2 : 1, 0, 0);
  for (bool bf16 : {false, true})
    for (bool dgelu : {false, true}) {
      // aux padded to a row stride of 32 (cuBLASLt), of 27, at an odd
      // offset (both the host fallback on cuBLASLt).
      checkGemmGelu(bf16, dgelu, 9, 24, 17, false, true, false, false, 1.0f, 0,
                    8, 0);
      checkGemmGelu(bf16, dgelu, 9, 24, 17, true, false, false, false, 1.0f, 1,
                    3, 0);
      checkGemmGelu(bf16, dgelu, 9, 24, 17, false, false, false, true, 2.0f, 0,
                    0, 3);
      // Empty C: nothing happens (row strides >= 1 for the views' sake).
      checkGemmGelu(bf16, dgelu, 0, 5, 3, false, false, false, false, 1.0f, 1,
                    1, 0);
      checkGemmGelu(bf16, dgelu, 4, 0, 3, false, false, false, false, 1.0f, 1,
                    1, 0);
    }
  // bf16 comes close to 1 by design: the tolerance is the sum of the two
  // half-ulp roundings (aux or the product, then C), which both can reach.
  printf("gelu epilogues: worst C error vs the double loop: f32 %.3f, bf16 "
         "%.3f of the tolerance\n",
         geluMaxErr(false), geluMaxErr(true));
}

const trx_param_desc kParams[] = {
    {"w", 2, {3, 5}, TRX_INIT_NORMAL, 0.02f, 1, nullptr},
    {"b", 1, {5, 0}, TRX_INIT_ZEROS, 0.0f, 0, nullptr},
};

/// A parameter's split dimensions (trx_param_desc::split_*): the declared
/// shape must view the state's rows x columns; without MPI every split has
/// one member, and the conversions between the whole and the block are the
/// identity through the 3-D block copies. (Blocks on two split dimensions
/// across ranks: test/e2e/expert-parallel.test.)
void testSplitLayout() {
  using triax::rt::ParamLayout;
  auto layoutOf = [](int32_t rank, std::initializer_list<int64_t> shape,
                     int32_t splitRank,
                     std::initializer_list<int64_t> splitShape, ParamLayout &l,
                     std::string &msg) {
    trx_param_desc p = {};
    p.name = "w";
    p.rank = rank;
    std::copy(shape.begin(), shape.end(), p.shape);
    p.split_rank = splitRank;
    std::copy(splitShape.begin(), splitShape.end(), p.split_shape);
    p.split_axes[0] = 1; // axis 0, one member without MPI
    return triax::rt::computeParamLayout(p, l, msg);
  };
  ParamLayout l;
  std::string msg;
  // The experts' [4, 3, 5] as rows [12, 5].
  CHECK(layoutOf(2, {12, 5}, 3, {4, 3, 5}, l, msg));
  CHECK_EQ(l.local[0], int64_t(12));
  CHECK_EQ(l.local[1], int64_t(5));
  CHECK_EQ(l.splits.size(), size_t(1));
  CHECK_EQ(l.splits[0].dim, int32_t(0));
  CHECK_EQ(l.splits[0].parts, int64_t(1));
  std::vector<float> whole(60), back(60, -1.0f);
  for (size_t i = 0; i < whole.size(); ++i)
    whole[i] = float(i);
  std::vector<float> buf(size_t(l.allocCount(TRX_STATE_PARAM)));
  triax::rt::scatterWhole(l, TRX_STATE_PARAM, whole.data(), buf.data());
  CHECK(buf == whole);
  triax::rt::gatherWhole(l, TRX_STATE_PARAM, buf.data(), back.data());
  CHECK(back == whole);
  // A vector split along its only dimension.
  CHECK(layoutOf(1, {8}, 1, {8}, l, msg));
  CHECK_EQ(l.local[0], int64_t(8));
  // Shapes that do not view the state: an error naming the parameter.
  CHECK(!layoutOf(2, {12, 5}, 4, {1, 4, 3}, l, msg));
  CHECK_EQ(msg, std::string("parameter 'w': split rank 4 is not 1 to 3"));
  CHECK(!layoutOf(2, {12, 5}, 3, {4, 0, 5}, l, msg));
  CHECK_EQ(msg, std::string("parameter 'w': split shape dimension 1 is not "
                            "positive"));
  CHECK(layoutOf(2, {12, 5}, 3, {2, 6, 5}, l, msg)); // other factors: fine
  CHECK(!layoutOf(2, {12, 5}, 3, {4, 5, 3}, l, msg));
  CHECK_EQ(msg, std::string("parameter 'w': split shape does not view the "
                            "parameter's rows x columns"));
  CHECK(!layoutOf(2, {12, 5}, 2, {12, 4}, l, msg));
  CHECK(!layoutOf(1, {8}, 2, {2, 4}, l, msg));
  CHECK_EQ(msg, std::string("parameter 'w': split shape does not view the "
                            "parameter's elements"));
}

/// The rows operands of a library attention over `data` (bf16 storage):
/// B = 2, S = 4, 4 query heads of d = 2 sharing 2 kv heads; q, k, v are
/// the column blocks of one [8, 16] buffer (row stride 16), out, dout,
/// dq, dk, dv contiguous.
struct AttentionOperands {
  std::vector<uint16_t> qkv = std::vector<uint16_t>(8 * 16, 0x3f80),
                        rest = std::vector<uint16_t>(8 * 8 * 3 + 8 * 4 * 2,
                                                     0x1234);
  std::vector<float> lse = std::vector<float>(2 * 4 * 4, -7.0f);
  trx_memref_bf16_2d q = {qkv.data(), qkv.data(), 0, {8, 8}, {16, 1}},
                     k = {qkv.data(), qkv.data(), 8, {8, 4}, {16, 1}},
                     v = {qkv.data(), qkv.data(), 12, {8, 4}, {16, 1}},
                     out = {rest.data(), rest.data(), 0, {8, 8}, {8, 1}},
                     dout = {rest.data(), rest.data(), 64, {8, 8}, {8, 1}},
                     dq = {rest.data(), rest.data(), 128, {8, 8}, {8, 1}},
                     dk = {rest.data(), rest.data(), 192, {8, 4}, {4, 1}},
                     dv = {rest.data(), rest.data(), 224, {8, 4}, {4, 1}};
  trx_memref_f32_1d l = {lse.data(), lse.data(), 0, {32}, {1}};
  int32_t forward() {
    return _mlir_ciface_trx_fused_attention(&q, &k, &v, &out, &l, 2, 4, 2,
                                            0.5f);
  }
  int32_t backward() {
    return _mlir_ciface_trx_fused_attention_grad(&q, &k, &v, &out, &dout, &l,
                                                 &dq, &dk, &dv, 2, 4, 2, 0.5f);
  }
};

/// The CPU has no attention library: both entries decline on valid
/// operands and write nothing (the compiled code then runs its kernels).
void testAttentionDeclines() {
  AttentionOperands o;
  std::vector<uint16_t> rest = o.rest;
  std::vector<float> lse = o.lse;
  CHECK(o.forward() != 0);
  CHECK(o.backward() != 0);
  CHECK(o.rest == rest);
  CHECK(o.lse == lse);
}

void testState() {
  float w[15], b[5], mw[15], mb[5], vw[15], vb[5], gw[15], gb[5];
  float *m[] = {mw, mb}, *v[] = {vw, vb};
  void *p[] = {w, b}, *g[] = {gw, gb};
  char err[256] = "";
  CHECK_EQ(trx_state_bind(2, kParams, p, m, v, g, nullptr, err, sizeof(err)),
           TRX_OK);
  trx_memref_f32_2d d2;
  _mlir_ciface_trx_state_2d(&d2, TRX_STATE_PARAM, 0);
  CHECK(d2.aligned == w && d2.allocated == w);
  CHECK_EQ(d2.offset, int64_t(0));
  CHECK_EQ(d2.sizes[0], int64_t(3));
  CHECK_EQ(d2.sizes[1], int64_t(5));
  CHECK_EQ(d2.strides[0], int64_t(5));
  CHECK_EQ(d2.strides[1], int64_t(1));
  _mlir_ciface_trx_state_2d(&d2, TRX_STATE_EXP_AVG_SQ, 0);
  CHECK(d2.aligned == vw);
  trx_memref_f32_1d d1;
  _mlir_ciface_trx_state_1d(&d1, TRX_STATE_EXP_AVG, 1);
  CHECK(d1.aligned == mb && d1.allocated == mb);
  CHECK_EQ(d1.sizes[0], int64_t(5));
  CHECK_EQ(d1.strides[0], int64_t(1));
  _mlir_ciface_trx_state_2d(&d2, TRX_STATE_GRAD, 0);
  CHECK(d2.aligned == gw);
  _mlir_ciface_trx_state_1d(&d1, TRX_STATE_GRAD, 1);
  CHECK(d1.aligned == gb);

  void *bad[] = {w, nullptr};
  CHECK_ERR(trx_state_bind(2, kParams, bad, m, v, g, nullptr, err, sizeof(err)),
            TRX_ERR_ARG, err,
            "trx_state_bind: parameter 1 'b' has a NULL buffer");
  // A failed bind keeps the previous one.
  _mlir_ciface_trx_state_1d(&d1, TRX_STATE_PARAM, 1);
  CHECK(d1.aligned == b);

  // A bf16 parameter: bf16 parameter and gradient views, f32 moments and
  // master copy; a bf16 parameter without its master buffer is refused.
  trx_param_desc bf[2] = {kParams[0], kParams[1]};
  bf[0].dtype = TRX_BF16;
  uint16_t wb[15], gwb[15];
  float master[15];
  void *pb[] = {wb, b}, *gb16[] = {gwb, gb};
  float *masters[] = {master, nullptr};
  CHECK_ERR(trx_state_bind(2, bf, pb, m, v, gb16, nullptr, err, sizeof(err)),
            TRX_ERR_ARG, err,
            "trx_state_bind: parameter 0 'w' has a NULL buffer");
  CHECK_EQ(trx_state_bind(2, bf, pb, m, v, gb16, masters, err, sizeof(err)),
           TRX_OK);
  trx_memref_bf16_2d h2;
  _mlir_ciface_trx_state_bf16_2d(&h2, TRX_STATE_PARAM, 0);
  CHECK(h2.aligned == wb);
  CHECK_EQ(h2.sizes[0], int64_t(3));
  CHECK_EQ(h2.strides[0], int64_t(5));
  _mlir_ciface_trx_state_bf16_2d(&h2, TRX_STATE_GRAD, 0);
  CHECK(h2.aligned == gwb);
  _mlir_ciface_trx_state_2d(&d2, TRX_STATE_MASTER, 0);
  CHECK(d2.aligned == master);
  _mlir_ciface_trx_state_2d(&d2, TRX_STATE_EXP_AVG, 0);
  CHECK(d2.aligned == mw);
  _mlir_ciface_trx_state_1d(&d1, TRX_STATE_PARAM, 1); // 'b' stays f32
  CHECK(d1.aligned == b);
  CHECK_EQ(trx_state_bind(0, nullptr, nullptr, nullptr, nullptr, nullptr,
                          nullptr, err, sizeof(err)),
           TRX_OK);
}

void testAlloc() {
  // The compiled code's blocks: aligned as asked, counted as activations,
  // not zero-filled (the compiled code writes before it reads; mem_test
  // checks that and TRX_ALLOC_POISON).
  unsetenv("TRX_ALLOC_POISON");
  size_t base = trx_mem_current(TRX_MEM_ACTIV);
  trx_mem_reset_peaks();
  void *a = _mlir_memref_to_llvm_alloc(100);
  CHECK(a != nullptr && reinterpret_cast<uintptr_t>(a) % 64 == 0);
  void *b = _mlir_memref_to_llvm_aligned_alloc(4096, 8192);
  CHECK(b != nullptr && reinterpret_cast<uintptr_t>(b) % 4096 == 0);
  void *c = _mlir_memref_to_llvm_aligned_alloc(16, 48);
  CHECK(c != nullptr && reinterpret_cast<uintptr_t>(c) % 64 == 0);
  std::memset(b, 0xab, 8192); // The whole block is usable.
  CHECK_EQ(trx_mem_current(TRX_MEM_ACTIV), base + 100 + 8192 + 48);
  _mlir_memref_to_llvm_free(b);
  _mlir_memref_to_llvm_free(a);
  _mlir_memref_to_llvm_free(c);
  _mlir_memref_to_llvm_free(nullptr);
  CHECK_EQ(trx_mem_current(TRX_MEM_ACTIV), base);
  CHECK_EQ(trx_mem_peak(TRX_MEM_ACTIV), base + 100 + 8192 + 48);
  void *z = _mlir_memref_to_llvm_alloc(0);
  CHECK(z != nullptr);
  _mlir_memref_to_llvm_free(z);

  CHECK(trx_alloc_aligned(8, 3, TRX_MEM_OTHER) == nullptr);
  CHECK_STREQ(trx_last_error(),
              "trx_alloc_aligned: alignment 3 is not a power of two");
  void *big = trx_alloc_aligned(10, 1 << 16, TRX_MEM_OTHER);
  CHECK(big != nullptr && reinterpret_cast<uintptr_t>(big) % (1 << 16) == 0);
  trx_free(big);
  CHECK_EQ(trx_mem_current(TRX_MEM_OTHER), size_t(0));
}

int abortCase(const std::string &what) {
  float buf[64] = {};
  trx_memref_f32_2d A = {buf, buf, 0, {2, 3}, {3, 1}};
  trx_memref_f32_2d B = {buf + 8, buf + 8, 0, {3, 4}, {4, 1}};
  trx_memref_f32_2d C = {buf + 24, buf + 24, 0, {2, 4}, {4, 1}};
  float w[15], b[5];
  float *m[] = {w, b}, *v[] = {w, b};
  void *p[] = {w, b};
  if (what == "inner-stride") {
    A.strides[1] = 2;
    _mlir_ciface_trx_sgemm(&A, &B, &C, 0, 0, 1.0f, 0.0f);
  } else if (what == "row-stride") {
    B.strides[0] = 2;
    _mlir_ciface_trx_sgemm(&A, &B, &C, 0, 0, 1.0f, 0.0f);
  } else if (what == "shape") {
    _mlir_ciface_trx_sgemm(&A, &B, &C, 1, 0, 1.0f, 0.0f);
  } else if (what == "overlap") {
    C.aligned = buf + 4; // Shares elements with A.
    _mlir_ciface_trx_sgemm(&A, &B, &C, 0, 0, 1.0f, 0.0f);
  } else if (what == "batch" || what == "batch-overlap" ||
             what == "batch-stride" || what == "bf16-overlap") {
    // [2, 2, 3] x [2, 3, 4] -> [2, 2, 4] in separate buffers.
    float a3[12] = {}, b3[24] = {}, c3[16] = {};
    trx_memref_f32_3d A3 = {a3, a3, 0, {2, 2, 3}, {6, 3, 1}};
    trx_memref_f32_3d B3 = {b3, b3, 0, {2, 3, 4}, {12, 4, 1}};
    trx_memref_f32_3d C3 = {c3, c3, 0, {2, 2, 4}, {8, 4, 1}};
    if (what == "batch")
      B3.sizes[0] = 3;
    else if (what == "batch-overlap")
      C3.strides[0] = 4; // C[1] starts at C[0]'s second row.
    else if (what == "batch-stride")
      A3.strides[0] = -6;
    if (what == "bf16-overlap") {
      // A bf16 C that starts inside B's last matrix.
      uint16_t h[64] = {};
      trx_memref_bf16_3d A = {h, h, 0, {2, 2, 3}, {6, 3, 1}};
      trx_memref_bf16_3d B = {h, h, 12, {2, 3, 4}, {12, 4, 1}};
      trx_memref_bf16_3d C = {h, h, 30, {2, 2, 4}, {8, 4, 1}};
      _mlir_ciface_trx_gemm_bf16_batched(&A, &B, &C, 0, 0, 1.0f, 0.0f);
    } else {
      _mlir_ciface_trx_sgemm_batched(&A3, &B3, &C3, 0, 0, 1.0f, 0.0f);
    }
  } else if (what == "bias-length" || what == "bias-stride" ||
             what == "bias-overlap") {
    trx_memref_f32_1d v = {buf + 40, buf + 40, 0, {4}, {1}};
    if (what == "bias-length")
      v.sizes[0] = 3;
    else if (what == "bias-stride")
      v.strides[0] = 2;
    else
      v.aligned = buf + 26; // inside C (buf + 24 .. buf + 32)
    _mlir_ciface_trx_sgemm_bias(&A, &B, &C, &v, 0, 0, 1.0f);
  } else if (what.rfind("gelu-", 0) == 0) {
    trx_memref_f32_1d v = {buf + 40, buf + 40, 0, {4}, {1}};
    trx_memref_f32_2d X = {buf + 48, buf + 48, 0, {2, 4}, {4, 1}};
    if (what == "gelu-aux-shape") {
      X.sizes[1] = 3;
      X.strides[0] = 3;
      _mlir_ciface_trx_sgemm_bias_gelu(&A, &B, &C, &v, &X, 0, 0, 1.0f);
    } else if (what == "gelu-aux-stride") {
      X.strides[0] = 1; // a transposed view
      X.strides[1] = 2;
      _mlir_ciface_trx_sgemm_dgelu(&A, &B, &C, &X, 0, 0, 1.0f);
    } else if (what == "gelu-aux-overlap") {
      X.aligned = buf + 26; // inside C (buf + 24 .. buf + 32)
      _mlir_ciface_trx_sgemm_dgelu(&A, &B, &C, &X, 0, 0, 1.0f);
    } else if (what == "gelu-aux-overlap-a") {
      X.aligned = buf + 2; // inside A (buf .. buf + 6)
      _mlir_ciface_trx_sgemm_bias_gelu(&A, &B, &C, &v, &X, 0, 0, 1.0f);
    } else if (what == "gelu-c-transposed") {
      C.strides[0] = 1;
      C.strides[1] = 2;
      _mlir_ciface_trx_sgemm_bias_gelu(&A, &B, &C, &v, &X, 0, 0, 1.0f);
    } else {
      fprintf(stderr, "unknown abort case '%s'\n", what.c_str());
      return 2;
    }
  } else if (what.rfind("attention-", 0) == 0) {
    AttentionOperands o;
    if (what == "attention-kv-rows") {
      o.k.sizes[0] = 4;
      o.forward();
    } else if (what == "attention-column-stride") {
      o.dq.strides[1] = 2;
      o.backward();
    } else if (what == "attention-heads") {
      _mlir_ciface_trx_fused_attention(&o.q, &o.k, &o.v, &o.out, &o.l, 2, 4, 3,
                                       0.5f);
    } else if (what == "attention-lse") {
      o.l.sizes[0] = 16;
      o.backward();
    } else {
      fprintf(stderr, "unknown abort case '%s'\n", what.c_str());
      return 2;
    }
  } else if (what == "unbound") {
    trx_memref_f32_2d d;
    _mlir_ciface_trx_state_2d(&d, 0, 0);
  } else if (what == "kind" || what == "index" || what == "rank") {
    if (trx_state_bind(2, kParams, p, m, v, p, nullptr, nullptr, 0) != TRX_OK)
      return 1;
    trx_memref_f32_2d d;
    if (what == "kind")
      _mlir_ciface_trx_state_2d(&d, TRX_STATE_NKINDS, 0);
    else if (what == "index")
      _mlir_ciface_trx_state_2d(&d, 0, 2);
    else
      _mlir_ciface_trx_state_2d(&d, 0, 1);
  } else if (what == "master" || what == "bf16-view") {
    // An f32 parameter has no master copy, nor bf16 buffers.
    if (trx_state_bind(2, kParams, p, m, v, p, nullptr, nullptr, 0) != TRX_OK)
      return 1;
    trx_memref_f32_2d d;
    trx_memref_bf16_2d h;
    if (what == "master")
      _mlir_ciface_trx_state_2d(&d, TRX_STATE_MASTER, 0);
    else
      _mlir_ciface_trx_state_bf16_2d(&h, TRX_STATE_PARAM, 0);
  } else if (what == "alignment") {
    _mlir_memref_to_llvm_aligned_alloc(48, 96);
  } else if (what == "free-param") {
    _mlir_memref_to_llvm_free(trx_alloc(64, TRX_MEM_PARAMS));
  } else if (what == "double-free") {
    void *q = _mlir_memref_to_llvm_alloc(64);
    _mlir_memref_to_llvm_free(q);
    _mlir_memref_to_llvm_free(q);
  } else {
    fprintf(stderr, "unknown abort case '%s'\n", what.c_str());
    return 2;
  }
  fprintf(stderr, "did not abort\n");
  return 0;
}

} // namespace

/// trx_blas_select_core's choice: OpenBLAS's fallback kernels (no AVX2) on
/// a CPU with AVX2 are replaced; anything else is kept.
void testBlasCoreChoice() {
  using triax::rt::blasCoreToRequest;
  auto is = [](const char *got, const char *want) {
    return got && want ? std::string(got) == want : got == want;
  };
  CHECK(is(blasCoreToRequest("Prescott", 3), "SkylakeX"));
  CHECK(is(blasCoreToRequest("Nehalem", 2), "Haswell"));
  CHECK(is(blasCoreToRequest("sandybridge", 3), "SkylakeX"));
  CHECK(is(blasCoreToRequest("Prescott", 1), nullptr)); // no AVX2: keep
  CHECK(is(blasCoreToRequest("Haswell", 3), nullptr));  // its choice
  CHECK(is(blasCoreToRequest("Zen", 3), nullptr));
  CHECK(is(blasCoreToRequest("SkylakeX", 3), nullptr));
  CHECK(is(blasCoreToRequest("NewCore", 3), nullptr)); // unknown: keep
  CHECK(is(blasCoreToRequest(nullptr, 3), nullptr));   // no OpenBLAS
  int level = triax::rt::cpuVectorLevel();
  CHECK(level >= 0 && level <= 3);
}

/// The padded-copies plan of the CUDA backend (gemm_padding.h), run here
/// on host copies through this backend's trx_gemm_compute: zero padding,
/// the rows copied at the copy's row stride, the padded problem, C's rows
/// copied back. It must give the problem's own result (within fp32
/// summation order; for a bf16 C one ulp: the same f32 value may round
/// either way after a different summation), leave C's elements past N
/// untouched, and pad every dimension to whole 16-byte groups with rows of
/// 16-byte multiples.
void checkPaddedGemm(int type, int64_t M, int64_t N, int64_t K, bool ta,
                     bool tb, float beta) {
  const size_t ab = type == TRX_GEMM_F32 ? 4 : 2;
  const size_t ce = type == TRX_GEMM_BF16 ? 2 : 4;
  const int64_t rowsA = ta ? K : M, colsA = ta ? M : K;
  const int64_t rowsB = tb ? N : K, colsB = tb ? K : N;
  // Odd row strides: no row is 16-byte aligned.
  const int64_t lda = colsA + 1, ldb = colsB + 3, ldc = N + 1;
  auto store = [](std::vector<uint8_t> &buf, size_t elem, int64_t i, float v) {
    if (elem == 4)
      std::memcpy(&buf[size_t(i) * 4], &v, 4);
    else {
      uint16_t h = triax::rt::f32ToBf16(v);
      std::memcpy(&buf[size_t(i) * 2], &h, 2);
    }
  };
  auto load = [](const std::vector<uint8_t> &buf, size_t elem, int64_t i) {
    if (elem == 4) {
      float v;
      std::memcpy(&v, &buf[size_t(i) * 4], 4);
      return v;
    }
    uint16_t h;
    std::memcpy(&h, &buf[size_t(i) * 2], 2);
    return triax::rt::bf16ToF32(h);
  };
  std::vector<uint8_t> A(size_t(rowsA * lda) * ab), B(size_t(rowsB * ldb) * ab),
      C1(size_t(M * ldc) * ce);
  for (int64_t i = 0; i < rowsA * lda; ++i)
    store(A, ab, i, float((i * 37) % 17) / 8.0f - 1.0f);
  for (int64_t i = 0; i < rowsB * ldb; ++i)
    store(B, ab, i, float((i * 11) % 13) / 4.0f - 1.5f);
  for (int64_t i = 0; i < M * ldc; ++i)
    store(C1, ce, i, float(i % 7) - 3.0f);
  std::vector<uint8_t> C2 = C1;
  trx_gemm_problem p = {};
  p.type = type;
  p.transA = ta;
  p.transB = tb;
  p.M = M;
  p.N = N;
  p.K = K;
  p.batch = 1;
  p.A = A.data();
  p.lda = lda;
  p.B = B.data();
  p.ldb = ldb;
  p.C = C1.data();
  p.ldc = ldc;
  p.alpha = 0.75f;
  p.beta = beta;
  trx_gemm_compute(&p);

  p.C = C2.data();
  triax::rt::PaddedGemm plan;
  CHECK(triax::rt::planPaddedGemm(p, plan));
  trx_gemm_problem q = plan.problem;
  const int64_t group = type == TRX_GEMM_F32 ? 4 : 8;
  CHECK(q.M % group == 0 && q.N % group == 0 && q.K % group == 0);
  CHECK(q.M >= M && q.N >= N && q.K >= K && q.M - M < group &&
        q.N - N < group && q.K - K < group);
  CHECK(plan.a.staged && plan.b.staged && plan.c.staged);
  // The host copies, as the CUDA backend makes them on the device.
  auto fill = [](const triax::rt::PaddedOperand &o, const uint8_t *user,
                 bool in) {
    CHECK_EQ(size_t(o.paddedLd) * o.elem % 16, size_t(0));
    std::vector<uint8_t> copy(o.bytes(), 0);
    if (in)
      for (int64_t r = 0; r < o.rows; ++r)
        std::memcpy(&copy[size_t(r * o.paddedLd) * o.elem],
                    user + size_t(r * o.ld) * o.elem, size_t(o.cols) * o.elem);
    return copy;
  };
  std::vector<uint8_t> a = fill(plan.a, A.data(), true),
                       b = fill(plan.b, B.data(), true),
                       c = fill(plan.c, C2.data(), beta != 0.0f);
  q.A = a.data();
  q.lda = plan.a.paddedLd;
  q.B = b.data();
  q.ldb = plan.b.paddedLd;
  q.C = c.data();
  q.ldc = plan.c.paddedLd;
  trx_gemm_compute(&q);
  for (int64_t r = 0; r < M; ++r)
    std::memcpy(&C2[size_t(r * ldc) * ce], &c[size_t(r * plan.c.paddedLd) * ce],
                size_t(N) * ce);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < ldc; ++j) {
      float want = load(C1, ce, i * ldc + j), got = load(C2, ce, i * ldc + j);
      float tol = j >= N    ? 0.0f
                  : ce == 2 ? std::fabs(want) / 128.0f
                            : 1e-5f * (std::fabs(want) + float(K));
      ++trxtest::checkCount();
      if (!(std::fabs(got - want) <= tol))
        trxtest::failed(
            __FILE__, __LINE__,
            "padded gemm type " + std::to_string(type) +
                " M=" + std::to_string(M) + " N=" + std::to_string(N) +
                " K=" + std::to_string(K) + " at (" + std::to_string(i) + "," +
                std::to_string(j) + "): got " + std::to_string(got) +
                ", want " + std::to_string(want));
    }
}

void testPaddedGemm() {
  // A problem that needs nothing: aligned rows, whole groups.
  std::vector<float> x(64 * 64, 1.0f), y(64 * 64, 0.0f);
  trx_gemm_problem aligned = {};
  aligned.type = TRX_GEMM_F32;
  aligned.M = aligned.N = aligned.K = 64;
  aligned.batch = 1;
  aligned.A = aligned.B = x.data();
  aligned.C = y.data();
  aligned.lda = aligned.ldb = aligned.ldc = 64;
  triax::rt::PaddedGemm plan;
  CHECK(uintptr_t(x.data()) % 16 != 0 || uintptr_t(y.data()) % 16 != 0 ||
        !triax::rt::planPaddedGemm(aligned, plan));
  for (int type : {TRX_GEMM_F32, TRX_GEMM_BF16, TRX_GEMM_BF16_F32})
    for (bool ta : {false, true})
      for (bool tb : {false, true})
        for (float beta : {0.0f, 0.5f}) {
          checkPaddedGemm(type, 17, 9, 33, ta, tb, beta);
          checkPaddedGemm(type, 5, 50, 7, ta, tb, beta);
        }
}

int main(int argc, char **argv) {
  if (argc == 3 && std::string(argv[1]) == "abort")
    return abortCase(argv[2]);
  if (argc == 2 && std::string(argv[1]) == "gemm") {
    // The GEMM family alone, on buffers from trx_alloc: what
    // triax-rt-gemm-cuda-test runs on cuBLASLt.
    testBf16Conversions();
    testGemmFamily();
    testGemmBias();
    testGemmGelu();
    trxtest::done("gemm");
    return 0;
  }
  if (argc != 1) {
    fprintf(stderr, "usage: triax-rt-kernel-test [gemm | abort WHAT]\n");
    return 2;
  }
  trx_blas_set_threads(1);
  testSgemm();
  // The same GEMMs cut among 3 OpenMP threads (by rows, columns or
  // matrices of the batch), every size cut: against the same references.
  trx_blas_set_threads(3);
  triax::rt::setGemmCutMinWork(1);
  testSgemm();
  testGemmFamily();
  testGemmBias();
  testGemmGelu();
  triax::rt::setGemmCutMinWork(int64_t(1) << 20);
  trx_blas_set_threads(1);
  testBf16Conversions();
  testGemmFamily();
  testGemmBias();
  testTanh();
  testGemmGelu();
  testPaddedGemm();
  testState();
  testAttentionDeclines();
  testSplitLayout();
  testAlloc();
  testBlasCoreChoice();
  trxtest::done("kernel");
  return 0;
}
