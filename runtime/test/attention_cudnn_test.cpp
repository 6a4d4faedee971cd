//===- attention_cudnn_test.cpp - cuDNN's attention against doubles -------===//
//
// Usage (linked whole with libtriax_rt_cuda.a and libtriax_rt_cudnn.a; a
// GPU and libcudnn.so.9 on LD_LIBRARY_PATH; bench/gpu/run.sh runs it):
//   triax-rt-attention-cudnn-test           every case, then itself again
//                                           as `declined` under
//                                           TRX_CUDNN=0
//   triax-rt-attention-cudnn-test declined  only the decline: with
//                                           TRX_CUDNN=0 both entries
//                                           return non-zero and write
//                                           nothing
//
// Each case calls the real entries, _mlir_ciface_trx_fused_attention and
// _mlir_ciface_trx_fused_attention_grad, on trx_alloc blocks (device
// memory; the test keeps host copies and moves them with the copy hooks),
// and compares out, lse, dq, dk, dv with causal softmax attention computed
// here in double precision from the same bf16 inputs: multi-head, grouped
// and multi-query, d 64 and 128, S 96 (no multiple of 64), and views with
// row strides above their columns (q, k, v column blocks of one [rows,
// (heads + 2 kv_heads) d] buffer, the outputs in padded rows); every
// element outside a view must keep its guard value. The backward gets the
// forward's own out and lse, as compiled code hands them over. A second
// forward (the cached plan) and a second backward (deterministic) must give
// the same bits as the first.
//
// Tolerances, |got - want| <= atol + rtol |want| per element:
//  - out: atol 1e-2, rtol 1e-2. The inputs are bf16 values in [-1, 1];
//    cuDNN keeps the scores and the softmax in f32 but rounds P to bf16
//    (8 significant bits, relative error 2^-9) for the P.V product and the
//    result to bf16 once more: each costs up to half a bf16 ulp (about
//    0.2%) of a value of at most 1, and the sum of the P rounding errors
//    stays near one of them.
//  - lse: atol 1e-3, rtol 1e-4 (f32 arithmetic on exact inputs; the
//    scores are at most sqrt(d) / sqrt(d) * d = d in size here, well below
//    f32's precision at 1e-3).
//  - dq, dk, dv: atol 2e-2 * max |want| of the tensor, rtol 1e-2. They are
//    sums over up to S rows of products that cuDNN rounds to bf16 before
//    its tensor-core GEMMs (P for dV, dS for dQ and dK), and dk and dv sum
//    over a group's heads: the rounding errors are relative to the largest
//    terms, not to each result, so the absolute part scales with the
//    tensor's magnitude (2% is about 5 bf16 ulps of its largest value).
//
// Prints one line per case and a final "attention-cudnn: all N checks
// passed" (or what failed); exits non-zero on any failure, and when cuDNN
// is not there (the runtime declines the first call: this test expects
// it present).
//
//===----------------------------------------------------------------------===//

#include "bf16.h"
#include "triax_rt.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <spawn.h>
#include <string>
#include <sys/wait.h>
#include <vector>

extern char **environ;

using triax::rt::bf16ToF32;
using triax::rt::f32ToBf16;

namespace {

int checks = 0, failures = 0;

void check(bool ok, const std::string &what) {
  ++checks;
  if (!ok) {
    ++failures;
    printf("  FAILED: %s\n", what.c_str());
  }
}

/// A guard value outside every view: finite, not a result here.
const uint16_t kGuard = f32ToBf16(-12345.0f);
const float kGuardF = -54321.0f;

/// A trx_alloc block of `n` elements and its host copy, moved with the
/// copy hooks.
template <typename T> struct Buffer {
  std::vector<T> host;
  T *dev = nullptr;
  explicit Buffer(size_t n, T fill) : host(n, fill) {
    dev = static_cast<T *>(trx_alloc((n ? n : 1) * sizeof(T), TRX_MEM_OTHER));
    if (!dev) {
      fprintf(stderr, "trx_alloc of %zu bytes failed\n", n * sizeof(T));
      exit(1);
    }
  }
  Buffer(const Buffer &) = delete;
  Buffer &operator=(const Buffer &) = delete;
  ~Buffer() { trx_free(dev); }
  void push() {
    if (!host.empty())
      trx_copy_to_device(dev, host.data(), host.size() * sizeof(T));
  }
  void pull() {
    if (!host.empty())
      trx_copy_to_host(host.data(), dev, host.size() * sizeof(T));
  }
};

/// A bf16 [rows, cols] view at column `col` of a buffer of row stride ld.
struct View {
  Buffer<uint16_t> *buf;
  int64_t rows, cols, col, ld;
  uint16_t &at(int64_t r, int64_t c) const {
    return buf->host[size_t(r * ld + col + c)];
  }
  double get(int64_t r, int64_t c) const { return bf16ToF32(at(r, c)); }
  trx_memref_bf16_2d memref() const {
    trx_memref_bf16_2d m;
    m.allocated = m.aligned = buf->dev;
    m.offset = col;
    m.sizes[0] = rows;
    m.sizes[1] = cols;
    m.strides[0] = ld;
    m.strides[1] = 1;
    return m;
  }
  bool inside(size_t index) const {
    int64_t r = int64_t(index) / ld, c = int64_t(index) % ld - col;
    return r < rows && c >= 0 && c < cols;
  }
};

/// Whether every element of `buf` outside `views` still holds the guard.
bool guardsIntact(const Buffer<uint16_t> &buf,
                  std::vector<const View *> views) {
  for (size_t i = 0; i < buf.host.size(); ++i) {
    bool in = false;
    for (const View *v : views)
      in = in || v->inside(i);
    if (!in && buf.host[i] != kGuard)
      return false;
  }
  return true;
}

struct Case {
  const char *name;
  int64_t batch, seq, heads, kvHeads, dim;
  bool views; // q, k, v column blocks of one buffer; padded outputs
};

/// The reference in double: out, lse, and the gradients of
/// sum(out * dout) with respect to q, k, v.
struct Reference {
  std::vector<double> out, lse, dq, dk, dv;
};

Reference reference(const Case &c, const View &q, const View &k, const View &v,
                    const View &dout, double scale) {
  const int64_t B = c.batch, S = c.seq, H = c.heads, KV = c.kvHeads, D = c.dim,
                group = H / KV;
  Reference r;
  r.out.assign(size_t(B * S * H * D), 0);
  r.lse.assign(size_t(B * H * S), 0);
  r.dq.assign(size_t(B * S * H * D), 0);
  r.dk.assign(size_t(B * S * KV * D), 0);
  r.dv.assign(size_t(B * S * KV * D), 0);
  std::vector<double> p(static_cast<size_t>(S)), dp(static_cast<size_t>(S));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h) {
      int64_t g = h / group;
      for (int64_t i = 0; i < S; ++i) {
        int64_t qi = b * S + i;
        double m = -INFINITY;
        for (int64_t j = 0; j <= i; ++j) {
          int64_t kj = b * S + j;
          double s = 0;
          for (int64_t e = 0; e < D; ++e)
            s += q.get(qi, h * D + e) * k.get(kj, g * D + e);
          p[size_t(j)] = s * scale;
          m = std::max(m, p[size_t(j)]);
        }
        double sum = 0;
        for (int64_t j = 0; j <= i; ++j)
          sum += std::exp(p[size_t(j)] - m);
        double lse = m + std::log(sum);
        r.lse[size_t((b * H + h) * S + i)] = lse;
        for (int64_t j = 0; j <= i; ++j)
          p[size_t(j)] = std::exp(p[size_t(j)] - lse);
        // out = P v; D_i = dout_i . out_i; dP = dout v^T.
        double rowDot = 0;
        for (int64_t e = 0; e < D; ++e) {
          double o = 0;
          for (int64_t j = 0; j <= i; ++j)
            o += p[size_t(j)] * v.get(b * S + j, g * D + e);
          r.out[size_t(qi * H * D + h * D + e)] = o;
          rowDot += o * dout.get(qi, h * D + e);
        }
        for (int64_t j = 0; j <= i; ++j) {
          int64_t kj = b * S + j;
          double d = 0;
          for (int64_t e = 0; e < D; ++e)
            d += dout.get(qi, h * D + e) * v.get(kj, g * D + e);
          dp[size_t(j)] = d;
        }
        // dS = P (dP - D_i); dq += scale dS k; dk += scale dS q; dv += P dout.
        for (int64_t j = 0; j <= i; ++j) {
          int64_t kj = b * S + j;
          double ds = p[size_t(j)] * (dp[size_t(j)] - rowDot) * scale;
          for (int64_t e = 0; e < D; ++e) {
            r.dq[size_t(qi * H * D + h * D + e)] += ds * k.get(kj, g * D + e);
            r.dk[size_t(kj * KV * D + g * D + e)] += ds * q.get(qi, h * D + e);
            r.dv[size_t(kj * KV * D + g * D + e)] +=
                p[size_t(j)] * dout.get(qi, h * D + e);
          }
        }
      }
    }
  return r;
}

/// Compares a bf16 view with `want` ([rows, cols] contiguous); returns the
/// largest error and counts the elements over tolerance.
struct Compare {
  double maxErr = 0;
  int64_t bad = 0;
  std::string first;
};

Compare compareView(const View &got, const std::vector<double> &want,
                    double atol, double rtol) {
  Compare c;
  for (int64_t r = 0; r < got.rows; ++r)
    for (int64_t j = 0; j < got.cols; ++j) {
      double w = want[size_t(r * got.cols + j)], g = got.get(r, j);
      double err = std::fabs(g - w);
      if (!(err <= atol + rtol * std::fabs(w))) {
        if (!c.bad++) {
          char s[160];
          snprintf(s, sizeof(s), "first at [%lld, %lld]: %g, expected %g",
                   (long long)r, (long long)j, g, w);
          c.first = s;
        }
      }
      if (!(err <= c.maxErr))
        c.maxErr = std::isnan(err) ? INFINITY : std::max(c.maxErr, err);
    }
  return c;
}

double maxAbs(const std::vector<double> &x) {
  double m = 0;
  for (double v : x)
    m = std::max(m, std::fabs(v));
  return m;
}

void expectClose(const char *what, const View &got,
                 const std::vector<double> &want, double atol, double rtol) {
  Compare c = compareView(got, want, atol, rtol);
  char s[256];
  snprintf(s, sizeof(s),
           "%s: %lld of %lld elements over atol %.3g + rtol %.3g (max error "
           "%.3g; %s)",
           what, (long long)c.bad, (long long)(got.rows * got.cols), atol, rtol,
           c.maxErr, c.first.c_str());
  check(c.bad == 0, s);
  printf("    %-4s max error %.3g (atol %.3g, rtol %.3g)\n", what, c.maxErr,
         atol, rtol);
}

/// Uniform bf16 values in [-1, 1] into a view.
void randomize(const View &v, std::mt19937 &rng) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (int64_t r = 0; r < v.rows; ++r)
    for (int64_t c = 0; c < v.cols; ++c)
      v.at(r, c) = f32ToBf16(u(rng));
}

trx_memref_f32_1d lseMemref(Buffer<float> &lse) {
  trx_memref_f32_1d m;
  m.allocated = m.aligned = lse.dev;
  m.offset = 0;
  m.sizes[0] = int64_t(lse.host.size());
  m.strides[0] = 1;
  return m;
}

/// One case: forward and backward against the reference. Returns false
/// when the runtime declined (cuDNN absent or refusing the shape).
bool runCase(const Case &c) {
  const int64_t B = c.batch, S = c.seq, H = c.heads, KV = c.kvHeads, D = c.dim,
                rows = B * S, qCols = H * D, kvCols = KV * D;
  const double scale = 1.0 / std::sqrt(double(D));
  int before = failures;
  printf("case %s: B %lld, S %lld, heads %lld, kv %lld, d %lld%s\n", c.name,
         (long long)B, (long long)S, (long long)H, (long long)KV, (long long)D,
         c.views ? ", strided views" : "");
  std::mt19937 rng(uint32_t(B * 1000003 + S * 1009 + H * 101 + KV * 11 + D));

  // Inputs: one buffer each, or q, k, v as column blocks of one buffer.
  // Outputs: padded rows (64 more columns) in the views case.
  const int64_t pad = c.views ? 64 : 0, qkvLd = qCols + 2 * kvCols;
  Buffer<uint16_t> qkv(size_t(c.views ? rows * qkvLd : 0), kGuard);
  Buffer<uint16_t> qB(size_t(c.views ? 0 : rows * qCols), kGuard),
      kB(size_t(c.views ? 0 : rows * kvCols), kGuard),
      vB(size_t(c.views ? 0 : rows * kvCols), kGuard);
  View q = c.views ? View{&qkv, rows, qCols, 0, qkvLd}
                   : View{&qB, rows, qCols, 0, qCols};
  View k = c.views ? View{&qkv, rows, kvCols, qCols, qkvLd}
                   : View{&kB, rows, kvCols, 0, kvCols};
  View v = c.views ? View{&qkv, rows, kvCols, qCols + kvCols, qkvLd}
                   : View{&vB, rows, kvCols, 0, kvCols};
  Buffer<uint16_t> outB(size_t(rows * (qCols + pad)), kGuard),
      doutB(size_t(rows * (qCols + pad)), kGuard),
      dqB(size_t(rows * (qCols + pad)), kGuard);
  // dk and dv: column blocks of one buffer in the views case.
  Buffer<uint16_t> dkvB(size_t(rows * 2 * kvCols), kGuard),
      dkB(size_t(c.views ? 0 : rows * kvCols), kGuard),
      dvB(size_t(c.views ? 0 : rows * kvCols), kGuard);
  View out{&outB, rows, qCols, 0, qCols + pad};
  View dout{&doutB, rows, qCols, 0, qCols + pad};
  View dq{&dqB, rows, qCols, 0, qCols + pad};
  View dk = c.views ? View{&dkvB, rows, kvCols, 0, 2 * kvCols}
                    : View{&dkB, rows, kvCols, 0, kvCols};
  View dv = c.views ? View{&dkvB, rows, kvCols, kvCols, 2 * kvCols}
                    : View{&dvB, rows, kvCols, 0, kvCols};
  Buffer<float> lse(size_t(B * H * S), kGuardF);
  randomize(q, rng);
  randomize(k, rng);
  randomize(v, rng);
  randomize(dout, rng);
  for (auto *b : {&qkv, &qB, &kB, &vB, &outB, &doutB, &dqB, &dkvB, &dkB, &dvB})
    b->push();
  lse.push();

  trx_memref_bf16_2d mq = q.memref(), mk = k.memref(), mv = v.memref(),
                     mo = out.memref(), mdo = dout.memref(), mdq = dq.memref(),
                     mdk = dk.memref(), mdv = dv.memref();
  trx_memref_f32_1d ml = lseMemref(lse);
  int32_t rc = _mlir_ciface_trx_fused_attention(&mq, &mk, &mv, &mo, &ml, B, H,
                                                KV, float(scale));
  if (rc != 0) {
    printf("  the forward was declined (status %d): see the runtime's line "
           "above\n",
           rc);
    check(false, std::string(c.name) + ": forward declined");
    return false;
  }
  outB.pull();
  lse.pull();
  Reference ref = reference(c, q, k, v, dout, scale);
  expectClose("out", out, ref.out, 1e-2, 1e-2);
  {
    double maxErr = 0;
    int64_t bad = 0;
    for (size_t i = 0; i < ref.lse.size(); ++i) {
      double err = std::fabs(double(lse.host[i]) - ref.lse[i]);
      bad += !(err <= 1e-3 + 1e-4 * std::fabs(ref.lse[i]));
      maxErr = std::isnan(err) ? INFINITY : std::max(maxErr, err);
    }
    check(bad == 0, std::string(c.name) + ": lse: " + std::to_string(bad) +
                        " values over atol 1e-3 + rtol 1e-4");
    printf("    lse  max error %.3g (atol 1e-3, rtol 1e-4)\n", maxErr);
  }
  check(guardsIntact(outB, {&out}),
        std::string(c.name) + ": out wrote outside its view");

  // The plan cache: the same problem again gives the same bits.
  if (!c.views) {
    std::vector<uint16_t> first = outB.host;
    rc = _mlir_ciface_trx_fused_attention(&mq, &mk, &mv, &mo, &ml, B, H, KV,
                                          float(scale));
    outB.pull();
    check(rc == 0 && outB.host == first,
          std::string(c.name) + ": a second forward (cached plan) differs");
  }

  rc = _mlir_ciface_trx_fused_attention_grad(
      &mq, &mk, &mv, &mo, &mdo, &ml, &mdq, &mdk, &mdv, B, H, KV, float(scale));
  if (rc != 0) {
    printf("  the backward was declined (status %d): see the runtime's line "
           "above\n",
           rc);
    check(false, std::string(c.name) + ": backward declined");
    return false;
  }
  for (auto *b : {&dqB, &dkvB, &dkB, &dvB, &qkv, &qB, &kB, &vB, &doutB})
    b->pull();
  // Deterministic (attention.cpp asks cuDNN for it): a second backward
  // gives the same bits.
  {
    std::vector<uint16_t> dq1 = dqB.host, dkv1 = dkvB.host, dk1 = dkB.host,
                          dv1 = dvB.host;
    rc = _mlir_ciface_trx_fused_attention_grad(&mq, &mk, &mv, &mo, &mdo, &ml,
                                               &mdq, &mdk, &mdv, B, H, KV,
                                               float(scale));
    for (auto *b : {&dqB, &dkvB, &dkB, &dvB})
      b->pull();
    check(rc == 0 && dqB.host == dq1 && dkvB.host == dkv1 && dkB.host == dk1 &&
              dvB.host == dv1,
          std::string(c.name) + ": a second backward gives other bits");
  }
  expectClose("dq", dq, ref.dq, 2e-2 * maxAbs(ref.dq), 1e-2);
  expectClose("dk", dk, ref.dk, 2e-2 * maxAbs(ref.dk), 1e-2);
  expectClose("dv", dv, ref.dv, 2e-2 * maxAbs(ref.dv), 1e-2);
  check(guardsIntact(dqB, {&dq}),
        std::string(c.name) + ": dq wrote outside its view");
  if (c.views) {
    check(guardsIntact(dkvB, {&dk, &dv}),
          std::string(c.name) + ": dk, dv wrote outside their views");
    check(guardsIntact(qkv, {&q, &k, &v}),
          std::string(c.name) + ": the qkv buffer changed outside q, k, v");
  }
  printf("  %s\n", failures == before ? "ok" : "FAILED");
  return true;
}

/// TRX_CUDNN=0: both entries decline and leave their outputs alone.
int runDeclined() {
  setenv("TRX_CUDNN", "0", 1);
  const int64_t B = 1, S = 64, H = 2, KV = 2, D = 64, rows = B * S;
  printf("case declined (TRX_CUDNN=0): B %lld, S %lld, heads %lld, d %lld\n",
         (long long)B, (long long)S, (long long)H, (long long)D);
  Buffer<uint16_t> q(size_t(rows * H * D), f32ToBf16(0.5f)),
      k(size_t(rows * KV * D), f32ToBf16(0.25f)),
      v(size_t(rows * KV * D), f32ToBf16(-0.5f)),
      out(size_t(rows * H * D), kGuard), dout(size_t(rows * H * D), kGuard),
      dq(size_t(rows * H * D), kGuard), dk(size_t(rows * KV * D), kGuard),
      dv(size_t(rows * KV * D), kGuard);
  Buffer<float> lse(size_t(B * H * S), kGuardF);
  for (auto *b : {&q, &k, &v, &out, &dout, &dq, &dk, &dv})
    b->push();
  lse.push();
  View vq{&q, rows, H * D, 0, H * D}, vk{&k, rows, KV * D, 0, KV * D},
      vv{&v, rows, KV * D, 0, KV * D}, vo{&out, rows, H * D, 0, H * D},
      vdo{&dout, rows, H * D, 0, H * D}, vdq{&dq, rows, H * D, 0, H * D},
      vdk{&dk, rows, KV * D, 0, KV * D}, vdv{&dv, rows, KV * D, 0, KV * D};
  trx_memref_bf16_2d mq = vq.memref(), mk = vk.memref(), mv = vv.memref(),
                     mo = vo.memref(), mdo = vdo.memref(), mdq = vdq.memref(),
                     mdk = vdk.memref(), mdv = vdv.memref();
  trx_memref_f32_1d ml = lseMemref(lse);
  int32_t rc = _mlir_ciface_trx_fused_attention(&mq, &mk, &mv, &mo, &ml, B, H,
                                                KV, 0.125f);
  check(rc != 0, "the forward did not decline under TRX_CUDNN=0");
  rc = _mlir_ciface_trx_fused_attention_grad(
      &mq, &mk, &mv, &mo, &mdo, &ml, &mdq, &mdk, &mdv, B, H, KV, 0.125f);
  check(rc != 0, "the backward did not decline under TRX_CUDNN=0");
  for (auto *b : {&out, &dq, &dk, &dv})
    b->pull();
  lse.pull();
  check(guardsIntact(out, {}) && guardsIntact(dq, {}) && guardsIntact(dk, {}) &&
            guardsIntact(dv, {}),
        "a declined call wrote an output");
  bool lseKept = true;
  for (float x : lse.host)
    lseKept = lseKept && x == kGuardF;
  check(lseKept, "a declined forward wrote lse");
  printf("  %s\n", failures ? "FAILED" : "ok");
  return failures;
}

} // namespace

int main(int argc, char **argv) {
  if (argc > 1 && std::strcmp(argv[1], "declined") == 0) {
    int bad = runDeclined();
    printf("attention-cudnn declined: %s (%d checks)\n",
           bad ? "FAILED" : "all checks passed", checks);
    return bad ? 1 : 0;
  }
  if (argc > 1) {
    fprintf(stderr, "usage: %s [declined]\n", argv[0]);
    return 2;
  }
  const Case cases[] = {
      {"mha", 2, 128, 4, 4, 64, false}, {"gqa", 2, 128, 4, 2, 64, false},
      {"mqa", 1, 128, 4, 1, 64, false}, {"d128", 2, 128, 4, 4, 128, false},
      {"s96", 2, 96, 4, 4, 64, false},  {"views", 2, 128, 4, 2, 64, true},
  };
  bool present = true;
  for (const Case &c : cases) {
    if (!runCase(c) && &c == &cases[0]) {
      printf("cuDNN's attention is not available here (the runtime declined "
             "the first call): this test needs libcudnn.so.9 on "
             "LD_LIBRARY_PATH\n");
      present = false;
      break;
    }
  }

  // The decline, in a process of its own (TRX_CUDNN is read once).
  if (present) {
    fflush(stdout);
    fflush(stderr);
    const char *off = "TRX_CUDNN=";
    std::vector<std::string> env = {std::string(off) + "0"};
    for (char **e = environ; *e; ++e)
      if (std::strncmp(*e, off, std::strlen(off)) != 0)
        env.push_back(*e);
    std::vector<char *> envp;
    for (std::string &s : env)
      envp.push_back(s.data());
    envp.push_back(nullptr);
    char self[] = "/proc/self/exe", mode[] = "declined";
    char *args[] = {argv[0], mode, nullptr};
    pid_t pid = 0;
    int status = 0;
    bool ran =
        posix_spawn(&pid, self, nullptr, nullptr, args, envp.data()) == 0 &&
        waitpid(pid, &status, 0) == pid;
    check(ran && WIFEXITED(status) && WEXITSTATUS(status) == 0,
          "the TRX_CUDNN=0 process failed");
  }

  if (failures)
    printf("attention-cudnn: %d of %d checks failed\n", failures, checks);
  else
    printf("attention-cudnn: all %d checks passed\n", checks);
  return failures ? 1 : 0;
}
