//===- kernel_test.cpp - Tests of the kernel ABI called by compiled code --===//
//
// Usage:
//   triax-rt-kernel-test            run all checks: trx_sgemm against a naive
//                                   triple loop (transposes, strided and
//                                   offset views, alpha/beta, edge sizes),
//                                   the state views and the allocator
//   triax-rt-kernel-test abort WHAT make the ABI abort on purpose (for the
//                                   lit test of its messages); WHAT is one of
//                                   inner-stride, row-stride, shape, overlap,
//                                   unbound, kind, index, rank, alignment,
//                                   free-param, double-free
//
//===----------------------------------------------------------------------===//

#include "check.h"
#include "triax_rt.h"

#include <cmath>
#include <limits>

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

const trx_param_desc kParams[] = {
    {"w", 2, {3, 5}, TRX_INIT_NORMAL, 0.02f, 1, nullptr},
    {"b", 1, {5, 0}, TRX_INIT_ZEROS, 0.0f, 0, nullptr},
};

void testState() {
  float w[15], b[5], mw[15], mb[5], vw[15], vb[5], gw[15], gb[5];
  float *p[] = {w, b}, *m[] = {mw, mb}, *v[] = {vw, vb}, *g[] = {gw, gb};
  char err[256] = "";
  CHECK_EQ(trx_state_bind(2, kParams, p, m, v, g, err, sizeof(err)), TRX_OK);
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

  float *bad[] = {w, nullptr};
  CHECK_ERR(trx_state_bind(2, kParams, bad, m, v, g, err, sizeof(err)),
            TRX_ERR_ARG, err,
            "trx_state_bind: parameter 1 'b' has a NULL buffer");
  // A failed bind keeps the previous one.
  _mlir_ciface_trx_state_1d(&d1, TRX_STATE_PARAM, 1);
  CHECK(d1.aligned == b);
  CHECK_EQ(trx_state_bind(0, nullptr, nullptr, nullptr, nullptr, nullptr, err,
                          sizeof(err)),
           TRX_OK);
}

void testAlloc() {
  size_t base = trx_mem_current(TRX_MEM_ACTIV);
  trx_mem_reset_peaks();
  void *a = _mlir_memref_to_llvm_alloc(100);
  CHECK(a != nullptr && reinterpret_cast<uintptr_t>(a) % 64 == 0);
  void *b = _mlir_memref_to_llvm_aligned_alloc(4096, 8192);
  CHECK(b != nullptr && reinterpret_cast<uintptr_t>(b) % 4096 == 0);
  void *c = _mlir_memref_to_llvm_aligned_alloc(16, 48);
  CHECK(c != nullptr && reinterpret_cast<uintptr_t>(c) % 64 == 0);
  bool zero = true;
  for (size_t i = 0; i < 8192; ++i)
    zero = zero && static_cast<unsigned char *>(b)[i] == 0;
  CHECK(zero);
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
  float *p[] = {w, b}, *m[] = {w, b}, *v[] = {w, b};
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
  } else if (what == "unbound") {
    trx_memref_f32_2d d;
    _mlir_ciface_trx_state_2d(&d, 0, 0);
  } else if (what == "kind" || what == "index" || what == "rank") {
    if (trx_state_bind(2, kParams, p, m, v, p, nullptr, 0) != TRX_OK)
      return 1;
    trx_memref_f32_2d d;
    if (what == "kind")
      _mlir_ciface_trx_state_2d(&d, 4, 0);
    else if (what == "index")
      _mlir_ciface_trx_state_2d(&d, 0, 2);
    else
      _mlir_ciface_trx_state_2d(&d, 0, 1);
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

int main(int argc, char **argv) {
  if (argc == 3 && std::string(argv[1]) == "abort")
    return abortCase(argv[2]);
  if (argc != 1) {
    fprintf(stderr, "usage: triax-rt-kernel-test [abort WHAT]\n");
    return 2;
  }
  trx_blas_set_threads(1);
  testSgemm();
  testState();
  testAlloc();
  trxtest::done("kernel");
  return 0;
}
