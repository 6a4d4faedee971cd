//===- kernel_abi.cpp - The runtime functions compiled code calls ---------===//
//
// The kernel ABI of runtime/include/triax_entries.def on the CPU:
//  - the GEMMs (_mlir_ciface_trx_sgemm, trx_gemm_bf16, trx_gemm_bf16_f32,
//    their _batched forms, trx_sgemm_bias and trx_gemm_bf16_bias, and the
//    GELU epilogues trx_sgemm_bias_gelu, trx_gemm_bf16_bias_gelu,
//    trx_sgemm_dgelu, trx_gemm_bf16_dgelu): one checker (shapes, strides,
//    overlap) in front of trx_gemm_compute, OpenBLAS cblas_sgemm here, or
//    another library's (trx_blas_load, --blas) (weak; cuBLASLt in the
//    CUDA runtime), the GELU formulas on the host
//    (trx_gemm_epilogue_host, also the CUDA runtime's fallback);
//  - _mlir_ciface_trx_state_1d/2d: views of the runtime-owned parameter,
//    AdamW and gradient buffers bound with trx_state_bind;
//  - _mlir_memref_to_llvm_alloc/aligned_alloc/free: the compiled code's
//    temporaries, charged to TRX_MEM_ACTIV.
// Compiled code cannot handle errors, so violations print a message naming
// the function and the problem and abort().
//
// The buffers the compiled code passes are device memory on the CUDA
// target. Nothing here dereferences one on the host except through the copy
// hooks: the GEMMs' host paths (K = 0, a transposed C with a bias) work on
// HostSpans; the collectives' padding is done on the device
// (trx_copy_on_device, trx_device_memset); the bucket's index list is read
// through a HostView (no copy when it is host memory).
//
//===----------------------------------------------------------------------===//

#include "bf16.h"
#include "device.h"
#include "internal.h"
#include "transport.h"
#include "triax_rt.h"

#include <cblas.h>
#include <dlfcn.h>
#include <strings.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <climits>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <type_traits>
#include <vector>

using namespace triax::rt;

namespace {

[[noreturn]] void abortWith(const char *fn, const char *fmt, ...)
    TRX_PRINTF(2, 3);

[[noreturn]] void abortWith(const char *fn, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  fprintf(stderr, "triax runtime: %s: %s\n", fn, msg);
  fflush(stderr);
  std::abort();
}

//===----------------------------------------------------------------------===//
// GEMM
//===----------------------------------------------------------------------===//

/// The fields of an MLIR memref descriptor of rank 2 or 3 as
/// [batch, rows, cols] (batch 1 for rank 2), element pointer as bytes.
struct RawMemref {
  const char *aligned;
  int64_t offset;
  int rank;
  int64_t sizes[3], strides[3];
};

template <typename Desc>
RawMemref rawMemref(const char *fn, const char *name, const Desc *d) {
  if (!d)
    abortWith(fn, "operand %s is NULL", name);
  constexpr int rank = int(sizeof(d->sizes) / sizeof(d->sizes[0]));
  static_assert(rank == 2 || rank == 3, "GEMM operands are 2-D or 3-D");
  RawMemref m{reinterpret_cast<const char *>(d->aligned),
              d->offset,
              rank,
              {1, 0, 0},
              {0, 0, 0}};
  for (int i = 0; i < rank; ++i) {
    m.sizes[3 - rank + i] = d->sizes[i];
    m.strides[3 - rank + i] = d->strides[i];
  }
  return m;
}

/// "[rows, cols]" or "[batch, rows, cols]" of a descriptor.
std::string sizesOf(const RawMemref &m) {
  char buf[96];
  if (m.rank == 2)
    snprintf(buf, sizeof(buf), "[%" PRId64 ", %" PRId64 "]", m.sizes[1],
             m.sizes[2]);
  else
    snprintf(buf, sizeof(buf), "[%" PRId64 ", %" PRId64 ", %" PRId64 "]",
             m.sizes[0], m.sizes[1], m.sizes[2]);
  return buf;
}

/// A checked view of one GEMM operand: `batch` matrices of rows x cols, the
/// one of batch index b starting `b * bstride` elements after `data`. Each is
/// stored row-major as srows() x scols() with row stride `ld` (>= scols()):
/// the matrix itself, or its transpose when `colMajor` (a transposed view,
/// whose row stride is 1).
struct Operand {
  char *data;
  size_t elem;
  int64_t batch, rows, cols, bstride, ld;
  bool colMajor;
  int64_t srows() const { return colMajor ? cols : rows; }
  int64_t scols() const { return colMajor ? rows : cols; }
  char *matrix(int64_t b) const { return data + b * bstride * int64_t(elem); }
  /// Elements from the first of matrix 0 to past the last of matrix 0.
  int64_t span() const { return (srows() - 1) * ld + scols(); }
};

Operand checkOperand(const char *fn, const char *name, const RawMemref &m,
                     size_t elem) {
  int64_t batch = m.sizes[0], rows = m.sizes[1], cols = m.sizes[2];
  if (batch < 0 || rows < 0 || cols < 0)
    abortWith(fn, "%s has negative sizes %s", name, sizesOf(m).c_str());
  if (batch > INT_MAX || rows > INT_MAX || cols > INT_MAX)
    abortWith(fn, "%s sizes %s exceed the BLAS integer range", name,
              sizesOf(m).c_str());
  if (m.offset < 0)
    abortWith(fn, "%s has negative offset %" PRId64, name, m.offset);
  if (batch > 1 && m.strides[0] < 0)
    abortWith(fn, "%s has negative batch stride %" PRId64, name, m.strides[0]);
  // Row-major when the inner stride is 1, a transposed view when the row
  // stride is 1. The inner stride only matters with more than one column,
  // the row stride only with more than one row.
  int64_t rowStride = m.strides[1], colStride = m.strides[2];
  bool colMajor = false;
  if (cols > 1 && colStride != 1) {
    if (rows > 1 && rowStride != 1)
      abortWith(fn,
                "%s has strides [%" PRId64 ", %" PRId64
                "]: neither row-major (inner stride 1) nor transposed (row "
                "stride 1); sizes %s",
                name, rowStride, colStride, sizesOf(m).c_str());
    colMajor = true;
  }
  int64_t srows = colMajor ? cols : rows, scols = colMajor ? rows : cols;
  int64_t stride = colMajor ? colStride : rowStride;
  int64_t minLd = scols > 1 ? scols : 1;
  int64_t ld = srows > 1 ? stride : minLd;
  if (ld < minLd) {
    if (colMajor)
      abortWith(fn,
                "%s (a transposed view) has column stride %" PRId64
                " smaller than its %" PRId64 " rows",
                name, stride, rows);
    abortWith(fn,
              "%s has row stride %" PRId64 " smaller than its %" PRId64
              " columns",
              name, stride, cols);
  }
  if (ld > INT_MAX)
    abortWith(fn, "%s row stride %" PRId64 " exceeds the BLAS integer range",
              name, ld);
  if (batch > 0 && rows > 0 && cols > 0 && !m.aligned)
    abortWith(fn, "%s has a NULL data pointer", name);
  char *data = m.aligned
                   ? const_cast<char *>(m.aligned) + m.offset * int64_t(elem)
                   : nullptr;
  return {data, elem,    batch, rows, cols, batch > 1 ? m.strides[0] : 0,
          ld,   colMajor};
}

/// The bytes from an operand's first element to past its last (over the
/// whole batch), for a host view of it. Non-empty operands only.
size_t spanBytes(const Operand &m) {
  return size_t(((m.batch - 1) * m.bstride + m.span()) * int64_t(m.elem));
}

int64_t floorDiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

/// Whether matrix `i` of `a` and matrix `j` of `b` share a byte. Exact for
/// the stored row-major views: for each stored row of a (a byte interval),
/// looks for a row k of b whose interval intersects it, i.e.
/// x - b0 - wb < k*ldb < x + wa - b0. O(a.srows()).
bool overlaps(const Operand &a, int64_t i, const Operand &b, int64_t j) {
  if (a.rows == 0 || a.cols == 0 || b.rows == 0 || b.cols == 0)
    return false;
  int64_t a0 = int64_t(reinterpret_cast<uintptr_t>(a.matrix(i)));
  int64_t b0 = int64_t(reinterpret_cast<uintptr_t>(b.matrix(j)));
  int64_t ea = int64_t(a.elem), eb = int64_t(b.elem);
  int64_t wa = a.scols() * ea, wb = b.scols() * eb;
  int64_t lda = a.ld * ea, ldb = b.ld * eb;
  // Quick reject on the bounding ranges.
  int64_t aEnd = a0 + a.span() * ea, bEnd = b0 + b.span() * eb;
  if (aEnd <= b0 || bEnd <= a0)
    return false;
  for (int64_t r = 0; r < a.srows(); ++r) {
    int64_t x = a0 + r * lda;
    // Smallest k with k*ldb > x - b0 - wb, largest with k*ldb < x + wa - b0.
    int64_t kLo = floorDiv(x - b0 - wb, ldb) + 1;
    int64_t kHi = -floorDiv(-(x + wa - b0), ldb) - 1;
    if (kLo < 0)
      kLo = 0;
    if (kHi > b.srows() - 1)
      kHi = b.srows() - 1;
    if (kLo <= kHi)
      return true;
  }
  return false;
}

/// Aborts when a matrix of C shares an element with another of C's or with
/// one of `x`'s (A or B). Cheap in the usual cases: disjoint buffers are
/// told apart by their byte ranges, C's own matrices by their batch stride.
/// `cName` names the written operand in the message (aux of a GELU
/// epilogue).
void checkNoOverlap(const char *fn, bool batched, const Operand &c,
                    const Operand &x, const char *xName,
                    const char *cName = "C") {
  auto range = [](const Operand &m) {
    int64_t lo = int64_t(reinterpret_cast<uintptr_t>(m.data));
    int64_t n = (m.batch - 1) * m.bstride + m.span();
    return std::pair<int64_t, int64_t>(lo, lo + n * int64_t(m.elem));
  };
  auto [cLo, cHi] = range(c);
  auto [xLo, xHi] = range(x);
  if (cHi <= xLo || xHi <= cLo)
    return;
  for (int64_t i = 0; i < c.batch; ++i)
    for (int64_t j = 0; j < x.batch; ++j)
      if (overlaps(c, i, x, j)) {
        if (!batched)
          abortWith(fn, "%s overlaps %s", cName, xName);
        abortWith(fn, "%s[%" PRId64 "] overlaps %s[%" PRId64 "]", cName, i,
                  xName, j);
      }
}

void checkBatchDisjoint(const char *fn, const Operand &c) {
  // Matrix d of C is matrix 0 moved by d * bstride: they overlap for some
  // d < span / bstride only.
  for (int64_t d = 1; d < c.batch && d * c.bstride < c.span(); ++d)
    if (overlaps(c, 0, c, d))
      abortWith(fn,
                "C's matrices overlap (batch stride %" PRId64
                ": C[0] and C[%" PRId64 "] share elements)",
                c.bstride, d);
}

/// C = beta * C on the stored view of C (alpha op(A) op(B) is an empty sum
/// when K = 0); beta == 0 clears C without reading it.
void scaleC(const Operand &c, int32_t type, float beta) {
  for (int64_t b = 0; b < c.batch; ++b)
    for (int64_t i = 0; i < c.srows(); ++i) {
      char *row = c.matrix(b) + i * c.ld * int64_t(c.elem);
      for (int64_t j = 0; j < c.scols(); ++j) {
        if (type == TRX_GEMM_BF16) {
          uint16_t *e = reinterpret_cast<uint16_t *>(row) + j;
          *e = f32ToBf16(beta == 0.0f ? 0.0f : beta * bf16ToF32(*e));
        } else {
          float *e = reinterpret_cast<float *>(row) + j;
          *e = beta == 0.0f ? 0.0f : beta * *e;
        }
      }
    }
}

/// The fields of a rank-1 memref descriptor (the bias of the *_bias GEMMs).
struct RawVector {
  const char *aligned;
  int64_t offset, size, stride;
};

template <typename Desc>
RawVector rawVector(const char *fn, const char *name, const Desc *d) {
  if (!d)
    abortWith(fn, "operand %s is NULL", name);
  return {reinterpret_cast<const char *>(d->aligned), d->offset, d->sizes[0],
          d->strides[0]};
}

/// The bias of a *_bias GEMM as a 1 x N operand of C's element size, after
/// checking that it is a contiguous vector of N elements.
Operand checkBias(const char *fn, const RawVector &v, int64_t N, size_t elem) {
  if (v.size != N)
    abortWith(fn, "bias has %" PRId64 " elements but C has %" PRId64 " columns",
              v.size, N);
  if (v.offset < 0)
    abortWith(fn, "bias has negative offset %" PRId64, v.offset);
  if (N > 1 && v.stride != 1)
    abortWith(fn, "bias has stride %" PRId64 " (it must be contiguous)",
              v.stride);
  if (N > 0 && !v.aligned)
    abortWith(fn, "bias has a NULL data pointer");
  char *data = v.aligned
                   ? const_cast<char *>(v.aligned) + v.offset * int64_t(elem)
                   : nullptr;
  return {data, elem, 1, 1, N, 0, N > 1 ? N : 1, false};
}

/// C[i, j] = bias[j] on the stored view of C (batch 1), the element bytes
/// copied (bias has C's element type).
void fillBias(const Operand &c, const char *bias) {
  for (int64_t i = 0; i < c.srows(); ++i) {
    char *row = c.matrix(0) + i * c.ld * int64_t(c.elem);
    for (int64_t j = 0; j < c.scols(); ++j)
      std::memcpy(row + j * int64_t(c.elem),
                  bias + (c.colMajor ? i : j) * int64_t(c.elem), c.elem);
  }
}

/// The aux operand of a GELU epilogue: M x N like C, C's element size,
/// row-major (inner stride 1, row stride >= N).
Operand checkAux(const char *fn, const RawMemref &m, int64_t M, int64_t N,
                 size_t elem) {
  Operand aux = checkOperand(fn, "aux", m, elem);
  if (aux.rows != M || aux.cols != N)
    abortWith(fn,
              "aux is %" PRId64 "x%" PRId64 " but C is %" PRId64 "x%" PRId64,
              aux.rows, aux.cols, M, N);
  if (aux.colMajor)
    abortWith(fn,
              "aux has strides [%" PRId64 ", %" PRId64
              "]: it must be row-major (inner stride 1); sizes %s",
              m.strides[1], m.strides[2], sizesOf(m).c_str());
  return aux;
}

/// Bytes of an A or B element, and of a C (bias, aux) element, of a
/// trx_gemm_type.
size_t operandBytes(int32_t type) {
  return type == TRX_GEMM_F32 ? sizeof(float) : sizeof(uint16_t);
}
size_t resultBytes(int32_t type) {
  return type == TRX_GEMM_BF16 ? sizeof(uint16_t) : sizeof(float);
}

/// The shared body of every GEMM entry: checks the operands (shapes,
/// strides, batch sizes, overlap), handles the empty cases, and hands the
/// rest to trx_gemm_compute as a row-major problem. With `bias` (the 2-D
/// *_bias entries, beta 0), C = alpha op(A) op(B) + bias[n] on every row.
/// With a GELU `epilogue` (trx_gemm_epilogue; the 2-D *_gelu entries, beta
/// 0, a row-major C) and its `aux` operand, see trx_gemm_problem.
void runGemm(const char *fn, int32_t type, const RawMemref &A,
             const RawMemref &B, const RawMemref &C, int32_t transA,
             int32_t transB, float alpha, float beta,
             const RawVector *bias = nullptr,
             int32_t epilogue = TRX_GEMM_EPI_NONE,
             const RawMemref *aux = nullptr) {
  size_t abElem = operandBytes(type), cElem = resultBytes(type);
  bool batched = C.rank == 3;
  Operand a = checkOperand(fn, "A", A, abElem),
          b = checkOperand(fn, "B", B, abElem),
          c = checkOperand(fn, "C", C, cElem);
  int64_t M = c.rows, N = c.cols;
  int64_t aM = transA ? a.cols : a.rows, K = transA ? a.rows : a.cols;
  int64_t bK = transB ? b.cols : b.rows, bN = transB ? b.rows : b.cols;
  if (aM != M || bK != K || bN != N)
    abortWith(fn,
              "shapes do not agree: op(A) is %" PRId64 "x%" PRId64
              ", op(B) is %" PRId64 "x%" PRId64 ", C is %" PRId64 "x%" PRId64
              " (transA %d, transB %d)",
              aM, K, bK, bN, M, N, transA ? 1 : 0, transB ? 1 : 0);
  if (a.batch != c.batch || b.batch != c.batch)
    abortWith(fn,
              "batch sizes do not agree: A has %" PRId64 ", B %" PRId64
              ", C %" PRId64,
              a.batch, b.batch, c.batch);
  Operand biasOp{};
  if (bias)
    biasOp = checkBias(fn, *bias, N, cElem);
  Operand auxOp{};
  if (epilogue != TRX_GEMM_EPI_NONE) {
    if (c.colMajor)
      abortWith(fn,
                "C has strides [%" PRId64 ", %" PRId64
                "]: a GELU epilogue needs a row-major C (inner stride 1), "
                "not a transposed view; sizes %s",
                C.strides[1], C.strides[2], sizesOf(C).c_str());
    auxOp = checkAux(fn, *aux, M, N, cElem);
  }
  if (M == 0 || N == 0 || c.batch == 0)
    return;
  checkBatchDisjoint(fn, c);
  checkNoOverlap(fn, batched, c, a, "A");
  checkNoOverlap(fn, batched, c, b, "B");
  if (bias)
    checkNoOverlap(fn, batched, c, biasOp, "bias");
  if (epilogue != TRX_GEMM_EPI_NONE) {
    checkNoOverlap(fn, false, c, auxOp, "aux");
    checkNoOverlap(fn, false, auxOp, a, "A", "aux");
    checkNoOverlap(fn, false, auxOp, b, "B", "aux");
    if (bias)
      checkNoOverlap(fn, false, auxOp, biasOp, "bias", "aux");
  }
  // The problem handed to the backend, or to trx_gemm_epilogue_host below.
  trx_gemm_problem p = {};
  p.epilogue = epilogue;
  p.aux = auxOp.data;
  p.ldaux = auxOp.ld;
  if (K == 0) {
    // On the host, over host views of C, aux and the bias (copies on the
    // CUDA target, after the device's earlier work; written back in stream
    // order).
    HostSpans spans;
    int ci = spans.add(c.data, spanBytes(c), /*written=*/true);
    int xi = spans.add(auxOp.data,
                       epilogue != TRX_GEMM_EPI_NONE ? spanBytes(auxOp) : 0,
                       /*written=*/epilogue == TRX_GEMM_EPI_GELU_AUX);
    int bi = spans.add(biasOp.data, bias ? spanBytes(biasOp) : 0,
                       /*written=*/false);
    spans.stage();
    Operand hc = c, haux = auxOp;
    hc.data = spans.host(ci);
    haux.data = spans.host(xi);
    const char *hbias = spans.host(bi);
    if (epilogue == TRX_GEMM_EPI_GELU_AUX)
      fillBias(haux, hbias); // the pre-activation: the bias alone
    else if (bias)
      fillBias(hc, hbias);
    else
      scaleC(hc, type, beta);
    if (epilogue != TRX_GEMM_EPI_NONE) {
      // C = gelu(aux) / gelu_grad(aux, 0), as the elementwise kernel would.
      p.type = type;
      p.M = M;
      p.N = N;
      p.batch = 1;
      p.C = hc.data;
      p.ldc = c.ld;
      p.aux = haux.data;
      trx_gemm_epilogue_host(&p);
    }
    spans.finish();
    return;
  }
  // A transposed C is computed as C^T below, along whose rows the bias
  // would run (no backend epilogue does that): fill C with the bias (on a
  // host view of C) and accumulate into it instead (same result as the CPU
  // backend).
  const void *biasData = bias ? biasOp.data : nullptr;
  if (bias && c.colMajor) {
    HostSpans spans;
    int ci = spans.add(c.data, spanBytes(c), /*written=*/true);
    int bi = spans.add(biasOp.data, spanBytes(biasOp), /*written=*/false);
    spans.stage();
    Operand hc = c;
    hc.data = spans.host(ci);
    fillBias(hc, spans.host(bi));
    spans.finish();
    beta = 1.0f;
    biasData = nullptr;
  }
  // op(X) is stored X^(trans xor colMajor). A transposed C is computed as
  // C^T = op(B)^T op(A)^T.
  bool ta = (transA != 0) != a.colMajor, tb = (transB != 0) != b.colMajor;
  p.type = type;
  p.batch = c.batch;
  p.C = c.data;
  p.ldc = c.ld;
  p.strideC = c.bstride;
  p.alpha = alpha;
  p.beta = beta;
  p.bias = biasData;
  p.K = K;
  const Operand *first = &a, *second = &b;
  if (c.colMajor) {
    std::swap(first, second);
    std::swap(ta, tb);
    ta = !ta;
    tb = !tb;
    std::swap(M, N);
  }
  p.M = M;
  p.N = N;
  p.transA = ta;
  p.transB = tb;
  p.A = first->data;
  p.lda = first->ld;
  p.strideA = first->bstride;
  p.B = second->data;
  p.ldb = second->ld;
  p.strideB = second->bstride;
  trx_gemm_compute(&p);
}

//===----------------------------------------------------------------------===//
// Training-state buffers
//===----------------------------------------------------------------------===//

struct StateTable {
  std::vector<trx_param_desc> params;
  std::vector<ParamLayout> layouts;
  std::vector<void *> bufs[TRX_STATE_NKINDS];
};

StateTable &stateTable() {
  static StateTable table;
  return table;
}

/// The dtype of buffer `kind` of parameter `p`: the parameter and its
/// gradient in the parameter's dtype, the moments and the master copy f32.
int32_t stateDtype(const trx_param_desc &p, int32_t kind) {
  return kind == TRX_STATE_PARAM || kind == TRX_STATE_GRAD ? p.dtype : TRX_F32;
}

/// The bound parameter `index`, after checking that state is bound and
/// the index.
const trx_param_desc &boundParam(const char *fn, int64_t index) {
  StateTable &t = stateTable();
  if (t.params.empty())
    abortWith(fn, "no training state is bound (trx_state_bind was not "
                  "called)");
  if (index < 0 || index >= int64_t(t.params.size()))
    abortWith(fn,
              "parameter index %" PRId64 " out of range (the model has %zu)",
              index, t.params.size());
  return t.params[size_t(index)];
}

/// The bound buffer of (kind, index) after checking both, and that its
/// elements are `dtype` (the view's element type).
void *stateBuffer(const char *fn, int32_t kind, int64_t index,
                  const ParamLayout *&layout, int32_t dtype = TRX_F32) {
  StateTable &t = stateTable();
  const trx_param_desc &p = boundParam(fn, index);
  if (kind < 0 || kind >= TRX_STATE_NKINDS)
    abortWith(fn, "invalid state kind %" PRId32 " (expected 0..%d)", kind,
              TRX_STATE_NKINDS - 1);
  layout = &t.layouts[size_t(index)];
  if (!layout->present)
    abortWith(fn,
              "parameter %" PRId64 " '%s' lives on pipeline stage %" PRId64
              ", not on this rank's: the compiled program reads it on the "
              "wrong stage",
              index, p.name, layout->stageRoot);
  if (kind == TRX_STATE_MASTER && p.dtype != TRX_BF16)
    abortWith(fn,
              "parameter %" PRId64 " '%s' is %s: it has no master copy "
              "(state %d), only bf16 parameters do",
              index, p.name, trx_dtype_name(p.dtype), TRX_STATE_MASTER);
  if (stateDtype(p, kind) != dtype)
    abortWith(fn,
              "state %" PRId32 " of parameter %" PRId64 " '%s' holds %s "
              "elements, not %s",
              kind, index, p.name, trx_dtype_name(stateDtype(p, kind)),
              trx_dtype_name(dtype));
  return t.bufs[kind][size_t(index)];
}

/// The rank of the view of (kind, index): 1 for a ZeRO chunk, else the
/// parameter's.
int32_t viewRank(const ParamLayout &l, int32_t kind) {
  return l.sharded(kind) ? 1 : l.rank;
}

void checkViewRank(const char *fn, int32_t kind, int64_t index,
                   const ParamLayout &l, int32_t rank) {
  if (viewRank(l, kind) != rank)
    abortWith(fn,
              "state %" PRId32 " of parameter %" PRId64 " '%s' has rank "
              "%" PRId32 ", not %" PRId32,
              kind, index, stateTable().params[size_t(index)].name,
              viewRank(l, kind), rank);
}

void *checkedAlloc(const char *fn, size_t size, size_t alignment) {
  void *p = trx_alloc_aligned(size, alignment, TRX_MEM_ACTIV);
  if (!p)
    abortWith(fn, "%s", trx_last_error());
  return p;
}

} // namespace

extern "C" void _mlir_ciface_trx_sgemm(trx_memref_f32_2d *A,
                                       trx_memref_f32_2d *B,
                                       trx_memref_f32_2d *C, int32_t transA,
                                       int32_t transB, float alpha,
                                       float beta) {
  const char *fn = "trx_sgemm";
  runGemm(fn, TRX_GEMM_F32, rawMemref(fn, "A", A), rawMemref(fn, "B", B),
          rawMemref(fn, "C", C), transA, transB, alpha, beta);
}

extern "C" void _mlir_ciface_trx_gemm_bf16(trx_memref_bf16_2d *A,
                                           trx_memref_bf16_2d *B,
                                           trx_memref_bf16_2d *C,
                                           int32_t transA, int32_t transB,
                                           float alpha, float beta) {
  const char *fn = "trx_gemm_bf16";
  runGemm(fn, TRX_GEMM_BF16, rawMemref(fn, "A", A), rawMemref(fn, "B", B),
          rawMemref(fn, "C", C), transA, transB, alpha, beta);
}

extern "C" void _mlir_ciface_trx_gemm_bf16_f32(trx_memref_bf16_2d *A,
                                               trx_memref_bf16_2d *B,
                                               trx_memref_f32_2d *C,
                                               int32_t transA, int32_t transB,
                                               float alpha, float beta) {
  const char *fn = "trx_gemm_bf16_f32";
  runGemm(fn, TRX_GEMM_BF16_F32, rawMemref(fn, "A", A), rawMemref(fn, "B", B),
          rawMemref(fn, "C", C), transA, transB, alpha, beta);
}

extern "C" void _mlir_ciface_trx_sgemm_batched(trx_memref_f32_3d *A,
                                               trx_memref_f32_3d *B,
                                               trx_memref_f32_3d *C,
                                               int32_t transA, int32_t transB,
                                               float alpha, float beta) {
  const char *fn = "trx_sgemm_batched";
  runGemm(fn, TRX_GEMM_F32, rawMemref(fn, "A", A), rawMemref(fn, "B", B),
          rawMemref(fn, "C", C), transA, transB, alpha, beta);
}

extern "C" void
_mlir_ciface_trx_gemm_bf16_batched(trx_memref_bf16_3d *A, trx_memref_bf16_3d *B,
                                   trx_memref_bf16_3d *C, int32_t transA,
                                   int32_t transB, float alpha, float beta) {
  const char *fn = "trx_gemm_bf16_batched";
  runGemm(fn, TRX_GEMM_BF16, rawMemref(fn, "A", A), rawMemref(fn, "B", B),
          rawMemref(fn, "C", C), transA, transB, alpha, beta);
}

extern "C" void _mlir_ciface_trx_gemm_bf16_f32_batched(
    trx_memref_bf16_3d *A, trx_memref_bf16_3d *B, trx_memref_f32_3d *C,
    int32_t transA, int32_t transB, float alpha, float beta) {
  const char *fn = "trx_gemm_bf16_f32_batched";
  runGemm(fn, TRX_GEMM_BF16_F32, rawMemref(fn, "A", A), rawMemref(fn, "B", B),
          rawMemref(fn, "C", C), transA, transB, alpha, beta);
}

extern "C" void
_mlir_ciface_trx_sgemm_bias(trx_memref_f32_2d *A, trx_memref_f32_2d *B,
                            trx_memref_f32_2d *C, trx_memref_f32_1d *bias,
                            int32_t transA, int32_t transB, float alpha) {
  const char *fn = "trx_sgemm_bias";
  RawVector v = rawVector(fn, "bias", bias);
  runGemm(fn, TRX_GEMM_F32, rawMemref(fn, "A", A), rawMemref(fn, "B", B),
          rawMemref(fn, "C", C), transA, transB, alpha, 0.0f, &v);
}

extern "C" void
_mlir_ciface_trx_gemm_bf16_bias(trx_memref_bf16_2d *A, trx_memref_bf16_2d *B,
                                trx_memref_bf16_2d *C, trx_memref_bf16_1d *bias,
                                int32_t transA, int32_t transB, float alpha) {
  const char *fn = "trx_gemm_bf16_bias";
  RawVector v = rawVector(fn, "bias", bias);
  runGemm(fn, TRX_GEMM_BF16, rawMemref(fn, "A", A), rawMemref(fn, "B", B),
          rawMemref(fn, "C", C), transA, transB, alpha, 0.0f, &v);
}

extern "C" void
_mlir_ciface_trx_sgemm_bias_gelu(trx_memref_f32_2d *A, trx_memref_f32_2d *B,
                                 trx_memref_f32_2d *C, trx_memref_f32_1d *bias,
                                 trx_memref_f32_2d *aux, int32_t transA,
                                 int32_t transB, float alpha) {
  const char *fn = "trx_sgemm_bias_gelu";
  RawVector v = rawVector(fn, "bias", bias);
  RawMemref x = rawMemref(fn, "aux", aux);
  runGemm(fn, TRX_GEMM_F32, rawMemref(fn, "A", A), rawMemref(fn, "B", B),
          rawMemref(fn, "C", C), transA, transB, alpha, 0.0f, &v,
          TRX_GEMM_EPI_GELU_AUX, &x);
}

extern "C" void _mlir_ciface_trx_gemm_bf16_bias_gelu(
    trx_memref_bf16_2d *A, trx_memref_bf16_2d *B, trx_memref_bf16_2d *C,
    trx_memref_bf16_1d *bias, trx_memref_bf16_2d *aux, int32_t transA,
    int32_t transB, float alpha) {
  const char *fn = "trx_gemm_bf16_bias_gelu";
  RawVector v = rawVector(fn, "bias", bias);
  RawMemref x = rawMemref(fn, "aux", aux);
  runGemm(fn, TRX_GEMM_BF16, rawMemref(fn, "A", A), rawMemref(fn, "B", B),
          rawMemref(fn, "C", C), transA, transB, alpha, 0.0f, &v,
          TRX_GEMM_EPI_GELU_AUX, &x);
}

extern "C" void
_mlir_ciface_trx_sgemm_dgelu(trx_memref_f32_2d *A, trx_memref_f32_2d *B,
                             trx_memref_f32_2d *C, trx_memref_f32_2d *aux,
                             int32_t transA, int32_t transB, float alpha) {
  const char *fn = "trx_sgemm_dgelu";
  RawMemref x = rawMemref(fn, "aux", aux);
  runGemm(fn, TRX_GEMM_F32, rawMemref(fn, "A", A), rawMemref(fn, "B", B),
          rawMemref(fn, "C", C), transA, transB, alpha, 0.0f, nullptr,
          TRX_GEMM_EPI_DGELU, &x);
}

extern "C" void
_mlir_ciface_trx_gemm_bf16_dgelu(trx_memref_bf16_2d *A, trx_memref_bf16_2d *B,
                                 trx_memref_bf16_2d *C, trx_memref_bf16_2d *aux,
                                 int32_t transA, int32_t transB, float alpha) {
  const char *fn = "trx_gemm_bf16_dgelu";
  RawMemref x = rawMemref(fn, "aux", aux);
  runGemm(fn, TRX_GEMM_BF16, rawMemref(fn, "A", A), rawMemref(fn, "B", B),
          rawMemref(fn, "C", C), transA, transB, alpha, 0.0f, nullptr,
          TRX_GEMM_EPI_DGELU, &x);
}

//===----------------------------------------------------------------------===//
// Attention by a library
//===----------------------------------------------------------------------===//

namespace {

/// A checked bf16 rows operand of an attention entry: `rows` x `cols`,
/// unit column stride (or one column), row stride `ld` >= cols.
const uint16_t *attentionRows(const char *fn, const char *name,
                              const trx_memref_bf16_2d *d, int64_t rows,
                              int64_t cols, int64_t *ld) {
  RawMemref m = rawMemref(fn, name, d);
  if (m.sizes[1] != rows || m.sizes[2] != cols)
    abortWith(fn, "%s is %s, expected [%" PRId64 ", %" PRId64 "]", name,
              sizesOf(m).c_str(), rows, cols);
  if (m.offset < 0 || (cols > 1 && m.strides[2] != 1) ||
      (rows > 1 && m.strides[1] < cols))
    abortWith(fn,
              "%s has offset %" PRId64 " and strides [%" PRId64 ", %" PRId64
              "]: expected rows of unit stride, row stride >= %" PRId64,
              name, m.offset, m.strides[1], m.strides[2], cols);
  if (!m.aligned)
    abortWith(fn, "%s has a NULL data pointer", name);
  *ld = rows > 1 ? m.strides[1] : cols;
  return reinterpret_cast<const uint16_t *>(m.aligned) + m.offset;
}

/// The problem's sizes from q's rows [batch*S, heads*d], checked.
trx_attention_problem attentionProblem(const char *fn,
                                       const trx_memref_bf16_2d *q,
                                       int64_t batch, int64_t heads,
                                       int64_t kvHeads, float scale) {
  if (!q)
    abortWith(fn, "operand q is NULL");
  int64_t rows = q->sizes[0], cols = q->sizes[1];
  if (batch <= 0 || heads <= 0 || kvHeads <= 0 || heads % kvHeads != 0)
    abortWith(fn,
              "batch %" PRId64 ", heads %" PRId64 ", kv_heads %" PRId64
              ": expected positive counts, heads a multiple of kv_heads",
              batch, heads, kvHeads);
  if (rows <= 0 || cols <= 0 || rows % batch != 0 || cols % heads != 0)
    abortWith(fn,
              "q is [%" PRId64 ", %" PRId64 "]: expected [batch*S, heads*d] "
              "with batch %" PRId64 " and heads %" PRId64,
              rows, cols, batch, heads);
  trx_attention_problem p = {};
  p.batch = batch;
  p.seq = rows / batch;
  p.heads = heads;
  p.kv_heads = kvHeads;
  p.head_dim = cols / heads;
  p.scale = scale;
  return p;
}

float *attentionLse(const char *fn, const trx_memref_f32_1d *lse,
                    const trx_attention_problem &p) {
  int64_t n = p.batch * p.heads * p.seq;
  if (!lse || lse->sizes[0] != n || lse->strides[0] != 1 || !lse->aligned)
    abortWith(fn, "lse must be %" PRId64 " contiguous floats [batch, heads, S]",
              n);
  return lse->aligned + lse->offset;
}

} // namespace

extern "C" int32_t
_mlir_ciface_trx_fused_attention(trx_memref_bf16_2d *q, trx_memref_bf16_2d *k,
                                 trx_memref_bf16_2d *v, trx_memref_bf16_2d *out,
                                 trx_memref_f32_1d *lse, int64_t batch,
                                 int64_t heads, int64_t kv_heads, float scale) {
  const char *fn = "trx_fused_attention";
  trx_attention_problem p =
      attentionProblem(fn, q, batch, heads, kv_heads, scale);
  int64_t rows = p.batch * p.seq, kvCols = p.kv_heads * p.head_dim;
  p.q = attentionRows(fn, "q", q, rows, p.heads * p.head_dim, &p.ldq);
  p.k = attentionRows(fn, "k", k, rows, kvCols, &p.ldk);
  p.v = attentionRows(fn, "v", v, rows, kvCols, &p.ldv);
  p.out = const_cast<uint16_t *>(
      attentionRows(fn, "out", out, rows, p.heads * p.head_dim, &p.ldo));
  p.lse = attentionLse(fn, lse, p);
  return trx_attention_compute(&p, 0);
}

extern "C" int32_t _mlir_ciface_trx_fused_attention_grad(
    trx_memref_bf16_2d *q, trx_memref_bf16_2d *k, trx_memref_bf16_2d *v,
    trx_memref_bf16_2d *out, trx_memref_bf16_2d *dout, trx_memref_f32_1d *lse,
    trx_memref_bf16_2d *dq, trx_memref_bf16_2d *dk, trx_memref_bf16_2d *dv,
    int64_t batch, int64_t heads, int64_t kv_heads, float scale) {
  const char *fn = "trx_fused_attention_grad";
  trx_attention_problem p =
      attentionProblem(fn, q, batch, heads, kv_heads, scale);
  int64_t rows = p.batch * p.seq, qCols = p.heads * p.head_dim,
          kvCols = p.kv_heads * p.head_dim;
  auto writable = [](const uint16_t *ptr) {
    return const_cast<uint16_t *>(ptr);
  };
  p.q = attentionRows(fn, "q", q, rows, qCols, &p.ldq);
  p.k = attentionRows(fn, "k", k, rows, kvCols, &p.ldk);
  p.v = attentionRows(fn, "v", v, rows, kvCols, &p.ldv);
  p.out = writable(attentionRows(fn, "out", out, rows, qCols, &p.ldo));
  p.dout = attentionRows(fn, "dout", dout, rows, qCols, &p.lddo);
  p.lse = attentionLse(fn, lse, p);
  p.dq = writable(attentionRows(fn, "dq", dq, rows, qCols, &p.lddq));
  p.dk = writable(attentionRows(fn, "dk", dk, rows, kvCols, &p.lddk));
  p.dv = writable(attentionRows(fn, "dv", dv, rows, kvCols, &p.lddv));
  return trx_attention_compute(&p, 1);
}

extern "C" int32_t trx_attention_compute(const trx_attention_problem *problem,
                                         int32_t backward) {
  return triax::rt::activeDevice().attention(problem, backward);
}

int32_t triax::rt::host::attention(const trx_attention_problem *,
                                   int32_t /*backward*/) {
  return 1;
}

namespace {

// The GELU formulas exactly as the compiler generates them for the CPU
// (lib/Dialect/Triax/IR/TriaxScalar.cpp, GeluOp / GeluGradOp::buildScalar:
// f32 arith ops with f32 constants; math.tanh expanded by triax-expand-math,
// lib/Conversion/TriaxToKernels/ExpandMath.cpp), one rounding per operation
// in the same order. This file is compiled with -ffp-contract=off
// (runtime/CMakeLists.txt) so that no a * b + c is fused. The constants are
// the compiler's doubles rounded to f32.
const float kGeluK0 = float(std::sqrt(2.0 / 3.14159265358979323846));
const float kGeluC = float(0.044715);
const float kGeluC3 = float(3.0 * 0.044715);

/// tanh as triax-expand-math writes it (include/triax/Conversion/Passes.td
/// derives it): expm1(-2 min(|x|, 9)) by Cody-Waite reduction and a
/// degree-7 Taylor polynomial, then -e / (2 + e) with x's sign. Plain
/// arithmetic, so the epilogue's loops vectorize as the kernels' do.
[[gnu::always_inline]] inline float trxTanh(float x) {
  float a = std::fabs(x);
  a = a > 9.0f ? 9.0f : a;
  float y = -2.0f * a;
  int32_t n = int32_t(y * 1.44269504088896341f - 0.5f);
  float nf = float(n);
  float r = (y - nf * 0.693145751953125f) - nf * 1.42860682030941723212e-6f;
  float q = 1.0f / 5040.0f;
  q = 1.0f / 720.0f + r * q;
  q = 1.0f / 120.0f + r * q;
  q = 1.0f / 24.0f + r * q;
  q = 1.0f / 6.0f + r * q;
  q = 0.5f + r * q;
  float p = r + (r * r) * q;
  uint32_t bits = uint32_t(n + 127) << 23;
  float s;
  std::memcpy(&s, &bits, sizeof s);
  float e = s * p + (s - 1.0f);
  return std::copysign(-e / (2.0f + e), x);
}

/// tanh(k0 (x + c ((x x) x))).
[[gnu::always_inline]] inline float geluTanh(float x) {
  float x3 = (x * x) * x;
  float inner = x + kGeluC * x3;
  return trxTanh(kGeluK0 * inner);
}

[[gnu::always_inline]] inline float gelu(float x) {
  return (0.5f * x) * (1.0f + geluTanh(x));
}

[[gnu::always_inline]] inline float geluGrad(float x, float dy) {
  float t = geluTanh(x);
  float du = kGeluK0 * (1.0f + kGeluC3 * (x * x));
  float left = 0.5f * (1.0f + t);
  float right = ((0.5f * x) * (1.0f - t * t)) * du;
  return dy * (left + right);
}

// One row of the epilogue, c = gelu(x) or dgelu(x) * c. Cloned for
// AVX-512 and AVX2, picked by the CPU at load time, where GCC vectorizes
// the formulas (trxTanh is plain arithmetic). Every clone evaluates the
// same IEEE operations, so the results are bit for bit the same.
__attribute__((target_clones("avx512f", "avx2", "default"))) void
geluRowF32(bool dgelu, const float *x, float *c, int64_t n) {
  if (dgelu)
    for (int64_t j = 0; j < n; ++j)
      c[j] = geluGrad(x[j], c[j]);
  else
    for (int64_t j = 0; j < n; ++j)
      c[j] = gelu(x[j]);
}

__attribute__((target_clones("avx512f", "avx2", "default"))) void
geluRowBf16(bool dgelu, const uint16_t *x, uint16_t *c, int64_t n) {
  if (dgelu)
    for (int64_t j = 0; j < n; ++j)
      c[j] = f32ToBf16(geluGrad(bf16ToF32(x[j]), bf16ToF32(c[j])));
  else
    for (int64_t j = 0; j < n; ++j)
      c[j] = f32ToBf16(gelu(bf16ToF32(x[j])));
}

} // namespace

extern "C" void trx_gemm_epilogue_host(const trx_gemm_problem *p) {
  if (!p || p->epilogue == TRX_GEMM_EPI_NONE)
    return;
  if ((p->epilogue != TRX_GEMM_EPI_GELU_AUX &&
       p->epilogue != TRX_GEMM_EPI_DGELU) ||
      (p->type != TRX_GEMM_F32 && p->type != TRX_GEMM_BF16) || !p->aux ||
      !p->C || p->ldc < p->N || p->ldaux < p->N)
    abortWith("trx_gemm_epilogue_host",
              "invalid GELU epilogue (epilogue %d, type %d, ldc %" PRId64
              ", ldaux %" PRId64 ", N %" PRId64 ")",
              int(p->epilogue), int(p->type), p->ldc, p->ldaux, p->N);
  bool dgelu = p->epilogue == TRX_GEMM_EPI_DGELU;
  for (int64_t i = 0; i < p->M; ++i) {
    if (p->type == TRX_GEMM_F32)
      geluRowF32(dgelu, static_cast<const float *>(p->aux) + i * p->ldaux,
                 static_cast<float *>(p->C) + i * p->ldc, p->N);
    else
      geluRowBf16(dgelu, static_cast<const uint16_t *>(p->aux) + i * p->ldaux,
                  static_cast<uint16_t *>(p->C) + i * p->ldc, p->N);
  }
}

namespace {

/// Widens a rows x cols bf16 matrix with row stride `ld` into a contiguous
/// f32 one.
void widen(const uint16_t *src, int64_t rows, int64_t cols, int64_t ld,
           float *dst) {
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j)
      dst[i * cols + j] = bf16ToF32(src[i * ld + j]);
}

/// Scratch of `n` floats, or an abort naming the GEMM's size.
void resizeScratch(std::vector<float> &v, int64_t n) {
  try {
    v.resize(size_t(n));
  } catch (const std::bad_alloc &) {
    abortWith("trx_gemm_compute",
              "out of memory for %" PRId64 " floats of f32 scratch", n);
  }
}

} // namespace

namespace {

/// The sgemm the CPU backend calls: the linked OpenBLAS's, or the one of the
/// library trx_blas_load opened (--blas, TRIAX_BLAS).
using SgemmFn = decltype(&cblas_sgemm);
SgemmFn sgemmFn = &cblas_sgemm;
std::string loadedBlas; // its description (trx_blas_describe)

} // namespace

extern "C" int trx_blas_load(const char *path, char *err, size_t errlen) {
  if (!path || !*path)
    return fail(TRX_ERR_ARG, err, errlen, "empty path");
  if (!openblas_get_corename())
    return fail(TRX_ERR_ARG, err, errlen,
                "%s: this binary runs its GEMMs on the GPU (cuBLAS); a BLAS "
                "library is for the CPU's",
                path);
  // DEEPBIND: the library's own symbols first (a reference BLAS's
  // cblas_sgemm calls its own sgemm_, not the linked OpenBLAS's).
  void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
  if (!lib)
    return fail(TRX_ERR_ARG, err, errlen, "%s: cannot load it: %s", path,
                dlerror());
  auto fn = reinterpret_cast<SgemmFn>(dlsym(lib, "cblas_sgemm"));
  if (!fn) {
    dlclose(lib);
    return fail(TRX_ERR_ARG, err, errlen, "%s: the library has no cblas_sgemm",
                path);
  }
  // One thread per call, as the linked OpenBLAS runs under OpenMP: the
  // kernels' threads cut the GEMMs (trx_gemm_compute). MKL's layer must be
  // chosen before its first call (1 = MKL_THREADING_SEQUENTIAL).
  std::string what = path;
  if (auto layer = reinterpret_cast<int (*)(int)>(
          dlsym(lib, "MKL_Set_Threading_Layer"))) {
    layer(1);
    if (auto version = reinterpret_cast<void (*)(char *, int)>(
            dlsym(lib, "MKL_Get_Version_String"))) {
      char buf[200] = {0};
      version(buf, int(sizeof(buf)) - 1);
      what += std::string(" (") + buf + ", sequential)";
    }
  } else if (auto threads = reinterpret_cast<void (*)(int)>(
                 dlsym(lib, "openblas_set_num_threads"))) {
    threads(1);
  }
  sgemmFn = fn;
  loadedBlas = what;
  return TRX_OK;
}

extern "C" const char *trx_blas_describe(void) {
  if (!loadedBlas.empty())
    return loadedBlas.c_str();
  static std::string linked;
  if (linked.empty()) {
    const char *core = openblas_get_corename(); // NULL: no OpenBLAS (CUDA)
    linked = core ? std::string("the linked OpenBLAS, ") + core + " kernels"
                  : std::string("none (the GEMMs run on the device)");
  }
  return linked.c_str();
}

namespace {

/// The CPU backend's GEMM without an epilogue (the bias, if any, included).
void cpuGemm(const trx_gemm_problem *problem) {
  // A bias: C = bias on every row, then the product accumulated with
  // beta 1, the order the compiled code used before the *_bias entries
  // (bit for bit the same results).
  trx_gemm_problem withBias;
  const trx_gemm_problem *p = problem;
  if (problem->bias) {
    withBias = *problem;
    size_t elem = resultBytes(p->type);
    const char *b = static_cast<const char *>(p->bias);
    for (int64_t r = 0; r < p->M; ++r) {
      char *row = static_cast<char *>(p->C) + r * p->ldc * int64_t(elem);
      std::memcpy(row, b, size_t(p->N) * elem);
    }
    withBias.beta = 1.0f;
    withBias.bias = nullptr;
    p = &withBias;
  }
  CBLAS_TRANSPOSE ta = p->transA ? CblasTrans : CblasNoTrans;
  CBLAS_TRANSPOSE tb = p->transB ? CblasTrans : CblasNoTrans;
  int M = int(p->M), N = int(p->N), K = int(p->K);
  if (p->type == TRX_GEMM_F32) {
    for (int64_t i = 0; i < p->batch; ++i)
      sgemmFn(CblasRowMajor, ta, tb, M, N, K, p->alpha,
              static_cast<const float *>(p->A) + i * p->strideA, int(p->lda),
              static_cast<const float *>(p->B) + i * p->strideB, int(p->ldb),
              p->beta, static_cast<float *>(p->C) + i * p->strideC,
              int(p->ldc));
    return;
  }
  // Stored A is (transA ? K x M : M x K), B (transB ? N x K : K x N).
  int64_t aRows = p->transA ? p->K : p->M, aCols = p->transA ? p->M : p->K;
  int64_t bRows = p->transB ? p->N : p->K, bCols = p->transB ? p->K : p->N;
  std::vector<float> a, b, c;
  resizeScratch(a, aRows * aCols);
  resizeScratch(b, bRows * bCols);
  if (p->type == TRX_GEMM_BF16)
    resizeScratch(c, p->M * p->N);
  const uint16_t *lastA = nullptr, *lastB = nullptr;
  for (int64_t i = 0; i < p->batch; ++i) {
    // A broadcast operand (batch stride 0) is widened once.
    const uint16_t *ai = static_cast<const uint16_t *>(p->A) + i * p->strideA;
    const uint16_t *bi = static_cast<const uint16_t *>(p->B) + i * p->strideB;
    if (ai != lastA)
      widen(ai, aRows, aCols, p->lda, a.data());
    if (bi != lastB)
      widen(bi, bRows, bCols, p->ldb, b.data());
    lastA = ai;
    lastB = bi;
    if (p->type == TRX_GEMM_BF16_F32) {
      sgemmFn(CblasRowMajor, ta, tb, M, N, K, p->alpha, a.data(), int(aCols),
              b.data(), int(bCols), p->beta,
              static_cast<float *>(p->C) + i * p->strideC, int(p->ldc));
      continue;
    }
    uint16_t *ci = static_cast<uint16_t *>(p->C) + i * p->strideC;
    if (p->beta != 0.0f)
      widen(ci, p->M, p->N, p->ldc, c.data());
    sgemmFn(CblasRowMajor, ta, tb, M, N, K, p->alpha, a.data(), int(aCols),
            b.data(), int(bCols), p->beta, c.data(), N);
    for (int64_t r = 0; r < p->M; ++r)
      for (int64_t j = 0; j < p->N; ++j)
        ci[r * p->ldc + j] = f32ToBf16(c[size_t(r * p->N + j)]);
  }
}

} // namespace

// LLVM's OpenMP runtime (libomp), whose threads run the compiled kernels'
// parallel loops (`triaxc --openmp`, the CPU default). Weak: in a binary
// without it (`--openmp=false`) the GEMMs run on OpenBLAS's threads, and
// the CUDA target's binaries need none. GOMP_parallel is the GCC entry
// libomp also provides.
extern "C" {
void GOMP_parallel(void (*fn)(void *), void *data, unsigned threads,
                   unsigned flags) __attribute__((weak));
int omp_get_thread_num(void) __attribute__((weak));
int omp_get_num_threads(void) __attribute__((weak));
int omp_get_max_threads(void) __attribute__((weak));
int omp_in_parallel(void) __attribute__((weak));
void omp_set_num_threads(int threads) __attribute__((weak));
}

namespace {

bool haveOpenMP() {
  return GOMP_parallel && omp_get_thread_num && omp_get_num_threads &&
         omp_get_max_threads && omp_in_parallel && omp_set_num_threads;
}

/// The CPU backend for one problem: OpenBLAS, one cblas_sgemm per matrix of
/// the batch. bf16 operands are widened to f32 scratch (exact), multiplied
/// with fp32 accumulation, and a bf16 C is rounded back once. A GELU
/// epilogue: the GEMM (with its bias) into aux (GELU_AUX) or C (DGELU),
/// rounded to C's type, then trx_gemm_epilogue_host on every element: bit
/// for bit the unfused GEMM and elementwise kernel.
void cpuGemmWithEpilogue(const trx_gemm_problem *problem) {
  if (problem->epilogue == TRX_GEMM_EPI_NONE) {
    cpuGemm(problem);
    return;
  }
  trx_gemm_problem gemm = *problem;
  gemm.epilogue = TRX_GEMM_EPI_NONE;
  gemm.aux = nullptr;
  gemm.ldaux = 0;
  if (problem->epilogue == TRX_GEMM_EPI_GELU_AUX) {
    gemm.C = problem->aux; // the pre-activation
    gemm.ldc = problem->ldaux;
  }
  cpuGemm(&gemm);
  trx_gemm_epilogue_host(problem);
}

/// How a problem is cut among threads: by matrices of the batch, by rows of
/// C, or by columns of C. Every element of C is computed by one call with
/// the same K, so the pieces are the whole problem's arithmetic.
enum class Cut { Batch, Rows, Cols };

/// The part [lo, hi) of `p` along `cut`.
trx_gemm_problem gemmPart(const trx_gemm_problem &p, Cut cut, int64_t lo,
                          int64_t hi) {
  size_t ab = operandBytes(p.type), c = resultBytes(p.type);
  auto at = [](const void *base, int64_t elems, size_t size) {
    return static_cast<char *>(const_cast<void *>(base)) +
           elems * int64_t(size);
  };
  trx_gemm_problem q = p;
  switch (cut) {
  case Cut::Batch:
    q.batch = hi - lo;
    q.A = at(p.A, lo * p.strideA, ab);
    q.B = at(p.B, lo * p.strideB, ab);
    q.C = at(p.C, lo * p.strideC, c);
    break;
  case Cut::Rows:
    q.M = hi - lo;
    q.A = at(p.A, p.transA ? lo : lo * p.lda, ab);
    q.C = at(p.C, lo * p.ldc, c);
    if (p.aux)
      q.aux = at(p.aux, lo * p.ldaux, c);
    break;
  case Cut::Cols:
    q.N = hi - lo;
    q.B = at(p.B, p.transB ? lo * p.ldb : lo, ab);
    q.C = at(p.C, lo, c);
    if (p.aux)
      q.aux = at(p.aux, lo, c);
    if (p.bias)
      q.bias = at(p.bias, lo, c);
    break;
  }
  return q;
}

/// Below about a million multiply-adds a fork costs more than it saves.
int64_t gemmCutMinWork = int64_t(1) << 20;

struct GemmParts {
  const trx_gemm_problem *problem;
  Cut cut;
  int64_t extent, align;
};

/// One OpenMP thread's share: pieces of `align` rows, columns or matrices,
/// as even as they divide.
void runGemmPart(void *data) {
  const GemmParts &w = *static_cast<const GemmParts *>(data);
  int64_t t = omp_get_thread_num(), n = omp_get_num_threads();
  int64_t units = (w.extent + w.align - 1) / w.align;
  int64_t lo = std::min(w.extent, units * t / n * w.align);
  int64_t hi = std::min(w.extent, units * (t + 1) / n * w.align);
  if (lo < hi) {
    trx_gemm_problem part = gemmPart(*w.problem, w.cut, lo, hi);
    cpuGemmWithEpilogue(&part);
  }
}

} // namespace

void triax::rt::setGemmCutMinWork(int64_t work) { gemmCutMinWork = work; }

extern "C" void trx_gemm_compute(const trx_gemm_problem *problem) {
  triax::rt::activeDevice().gemm(problem);
}

/// The CPU device's GEMM: the problem cut among the OpenMP threads when the
/// binary has them (OpenBLAS runs one thread per call then, so that one
/// pool of threads runs the kernels and the GEMMs and neither spins while
/// the other works), else OpenBLAS's own threads. The CUDA device's is
/// cuBLASLt (lib/cuda/blas.cpp).
void triax::rt::host::gemm(const trx_gemm_problem *problem) {
  const trx_gemm_problem &p = *problem;
  int threads = haveOpenMP() && !omp_in_parallel() ? omp_get_max_threads() : 1;
  if (threads > 1 && p.M * p.N * p.K * p.batch >= gemmCutMinWork) {
    GemmParts w{problem, Cut::Rows, p.M, 16};
    if (p.batch >= threads)
      w = {problem, Cut::Batch, p.batch, 1};
    else if (p.N > p.M)
      w = {problem, Cut::Cols, p.N, 16};
    int64_t parts = (w.extent + w.align - 1) / w.align;
    GOMP_parallel(runGemmPart, &w, unsigned(std::min<int64_t>(threads, parts)),
                  0);
    return;
  }
  cpuGemmWithEpilogue(problem);
}

extern "C" void trx_blas_set_threads(int n) {
  if (haveOpenMP()) {
    // One pool: the OpenMP threads cut the GEMMs, OpenBLAS runs each piece.
    if (n > 0)
      omp_set_num_threads(n);
    openblas_set_num_threads(1);
  } else if (n > 0) {
    openblas_set_num_threads(n);
  }
}

namespace {

/// The vector instructions of an OpenBLAS core type's kernels: 0 SSE, 1 AVX,
/// 2 AVX2 and FMA, 3 AVX-512; -1 for a name not listed (left alone).
int coreTypeLevel(const char *name) {
  static const struct {
    const char *name;
    int level;
  } kTypes[] = {
      {"Katmai", 0},    {"Coppermine", 0}, {"Northwood", 0},
      {"Prescott", 0},  {"Banias", 0},     {"Atom", 0},
      {"Core2", 0},     {"Penryn", 0},     {"Dunnington", 0},
      {"Nehalem", 0},   {"Opteron", 0},    {"Opteron_SSE3", 0},
      {"Barcelona", 0}, {"Bobcat", 0},     {"Sandybridge", 1},
      {"Bulldozer", 1}, {"Piledriver", 1}, {"Steamroller", 1},
      {"Excavator", 1}, {"Haswell", 2},    {"Zen", 2},
      {"SkylakeX", 3},  {"Cooperlake", 3}, {"SapphireRapids", 3},
  };
  for (const auto &t : kTypes)
    if (strcasecmp(name, t.name) == 0)
      return t.level;
  return -1;
}

} // namespace

int triax::rt::cpuVectorLevel() {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl"))
    return 3;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    return 2;
  return __builtin_cpu_supports("avx") ? 1 : 0;
}

const char *triax::rt::blasCoreToRequest(const char *chosen, int cpuLevel) {
  if (!chosen)
    return nullptr;
  int have = coreTypeLevel(chosen);
  // Only OpenBLAS's fallback: kernels without AVX2 on a CPU with it. A
  // known AVX2 type on an AVX-512 CPU (AMD Zen 4 is "Zen") is its choice.
  if (have < 0 || have >= 2 || cpuLevel < 2)
    return nullptr;
  return cpuLevel >= 3 ? "SkylakeX" : "Haswell";
}

namespace {

/// Whether argv is this process's command line (/proc/self/cmdline), so
/// that executing it again starts the same program with the same arguments.
bool isProcessCommandLine(char **argv) {
  std::string cmdline;
  if (readFile("/proc/self/cmdline", cmdline) != 0)
    return false;
  std::string joined;
  for (char **a = argv; *a; ++a)
    joined.append(*a).push_back('\0');
  return joined == cmdline;
}

} // namespace

extern "C" void trx_blas_select_core(char **argv, int quiet) {
  if (!argv || !argv[0] || std::getenv("OPENBLAS_CORETYPE"))
    return; // chosen by the user (or by this function, before the exec)
  const char *core = openblas_get_corename(); // NULL: no OpenBLAS (CUDA)
  const char *want = blasCoreToRequest(core, cpuVectorLevel());
  if (!want)
    return;
  if (!isProcessCommandLine(argv))
    return; // called with arguments of its own: starting again would lose them
  if (setenv("OPENBLAS_CORETYPE", want, 1) != 0)
    return;
  if (!quiet)
    fprintf(stderr,
            "triax: OpenBLAS does not know this CPU and chose its %s kernels "
            "(no AVX2); starting again with OPENBLAS_CORETYPE=%s\n",
            core, want);
  fflush(stdout);
  fflush(stderr);
  execv("/proc/self/exe", argv);
  fprintf(stderr,
          "triax: could not start again with OPENBLAS_CORETYPE=%s (%s); "
          "continuing with OpenBLAS's %s kernels\n",
          want, strerror(errno), core);
}

extern "C" int trx_state_bind(int64_t n, const trx_param_desc *params,
                              void *const *param_bufs, float *const *exp_avg,
                              float *const *exp_avg_sq, void *const *grads,
                              float *const *masters, char *err, size_t errlen) {
  StateTable &t = stateTable();
  if (n == 0) {
    t.params.clear();
    for (auto &b : t.bufs)
      b.clear();
    return TRX_OK;
  }
  if (n < 0 || !params || !param_bufs || !exp_avg || !exp_avg_sq || !grads)
    return fail(TRX_ERR_ARG, err, errlen,
                "trx_state_bind: invalid arguments (n %" PRId64
                ", NULL descriptor or buffer array)",
                n);
  for (int64_t i = 0; i < n; ++i) {
    const trx_param_desc &p = params[i];
    if (!p.name || (p.rank != 1 && p.rank != 2) || p.shape[0] <= 0 ||
        (p.rank == 2 && p.shape[1] <= 0))
      return fail(TRX_ERR_ARG, err, errlen,
                  "trx_state_bind: parameter %" PRId64
                  " has an invalid name, rank or shape",
                  i);
  }
  try {
    StateTable fresh;
    fresh.params.assign(params, params + n);
    for (int64_t i = 0; i < n; ++i) {
      ParamLayout l;
      std::string msg;
      if (!computeParamLayout(params[i], l, msg))
        return fail(TRX_ERR_ARG, err, errlen, "trx_state_bind: %s",
                    msg.c_str());
      // A parameter another pipeline stage holds has no buffers here.
      const bool bf16 = params[i].dtype == TRX_BF16;
      if (l.present && (!param_bufs[i] || !exp_avg[i] || !exp_avg_sq[i] ||
                        !grads[i] || (bf16 && (!masters || !masters[i]))))
        return fail(TRX_ERR_ARG, err, errlen,
                    "trx_state_bind: parameter %" PRId64
                    " '%s' has a NULL buffer",
                    i, params[i].name);
      fresh.layouts.push_back(std::move(l));
      fresh.bufs[TRX_STATE_MASTER].push_back(bf16 ? masters[i] : nullptr);
    }
    fresh.bufs[TRX_STATE_PARAM].assign(param_bufs, param_bufs + n);
    fresh.bufs[TRX_STATE_EXP_AVG].assign(exp_avg, exp_avg + n);
    fresh.bufs[TRX_STATE_EXP_AVG_SQ].assign(exp_avg_sq, exp_avg_sq + n);
    fresh.bufs[TRX_STATE_GRAD].assign(grads, grads + n);
    t = std::move(fresh);
  } catch (const std::bad_alloc &) {
    return fail(TRX_ERR_NOMEM, err, errlen, "trx_state_bind: out of memory");
  }
  return TRX_OK;
}

namespace {
float *gMoECounters = nullptr;
} // namespace

extern "C" void trx_moe_counters_bind(float *counters) {
  gMoECounters = counters;
}

extern "C" void _mlir_ciface_trx_moe_counters(trx_memref_f32_1d *out) {
  if (!out)
    abortWith("trx_moe_counters", "NULL result descriptor");
  if (!gMoECounters) {
    // Nothing bound: counters of the runtime's own, never read.
    static float *own = nullptr;
    if (!own) {
      own = static_cast<float *>(
          trx_alloc(TRX_MOE_NCOUNTERS * sizeof(float), TRX_MEM_OTHER));
      if (!own)
        abortWith("trx_moe_counters", "%s", trx_last_error());
    }
    gMoECounters = own;
  }
  out->allocated = gMoECounters;
  out->aligned = gMoECounters;
  out->offset = 0;
  out->sizes[0] = TRX_MOE_NCOUNTERS;
  out->strides[0] = 1;
}

namespace {

/// The view of state (kind, index) of element type T (float or uint16_t,
/// bf16) as a 1-D or 2-D memref descriptor (Memref: trx_memref_*_1d/2d).
template <typename T, int Rank, typename Memref>
void stateView(const char *fn, Memref *out, int32_t kind, int64_t index) {
  if (!out)
    abortWith(fn, "NULL result descriptor");
  const ParamLayout *l = nullptr;
  T *buf = static_cast<T *>(stateBuffer(
      fn, kind, index, l, std::is_same_v<T, float> ? TRX_F32 : TRX_BF16));
  checkViewRank(fn, kind, index, *l, Rank);
  out->allocated = buf;
  out->aligned = buf;
  out->offset = 0;
  if constexpr (Rank == 1) {
    out->sizes[0] = l->viewCount(kind);
    out->strides[0] = 1;
  } else {
    out->sizes[0] = l->local[0];
    out->sizes[1] = l->local[1];
    out->strides[0] = l->local[1];
    out->strides[1] = 1;
  }
}

/// The view of this rank's ZeRO chunk of state (kind, index).
template <typename T, typename Memref>
void stateChunkView(const char *fn, Memref *out, int32_t kind, int64_t index) {
  if (!out)
    abortWith(fn, "NULL result descriptor");
  const ParamLayout *l = nullptr;
  T *buf = static_cast<T *>(stateBuffer(
      fn, kind, index, l, std::is_same_v<T, float> ? TRX_F32 : TRX_BF16));
  if (l->zeroStage == 0)
    abortWith(fn, "parameter %" PRId64 " '%s' is not sharded by ZeRO", index,
              stateTable().params[size_t(index)].name);
  if (!l->sharded(kind) && l->allocCount(kind) != l->chunk * l->zeroParts)
    abortWith(fn,
              "state %" PRId32 " of parameter %" PRId64 " '%s' is "
              "replicated and not padded: it has no chunks",
              kind, index, stateTable().params[size_t(index)].name);
  // memref<?xT> has a static offset of 0: point `aligned` at the chunk.
  out->allocated = buf;
  out->aligned = l->sharded(kind) ? buf : buf + l->zeroPos * l->chunk;
  out->offset = 0;
  out->sizes[0] = l->chunk;
  out->strides[0] = 1;
}

} // namespace

extern "C" void _mlir_ciface_trx_state_1d(trx_memref_f32_1d *out, int32_t kind,
                                          int64_t index) {
  stateView<float, 1>("trx_state_1d", out, kind, index);
}

extern "C" void _mlir_ciface_trx_state_2d(trx_memref_f32_2d *out, int32_t kind,
                                          int64_t index) {
  stateView<float, 2>("trx_state_2d", out, kind, index);
}

extern "C" void _mlir_ciface_trx_state_bf16_1d(trx_memref_bf16_1d *out,
                                               int32_t kind, int64_t index) {
  stateView<uint16_t, 1>("trx_state_bf16_1d", out, kind, index);
}

extern "C" void _mlir_ciface_trx_state_bf16_2d(trx_memref_bf16_2d *out,
                                               int32_t kind, int64_t index) {
  stateView<uint16_t, 2>("trx_state_bf16_2d", out, kind, index);
}

extern "C" void _mlir_ciface_trx_state_chunk(trx_memref_f32_1d *out,
                                             int32_t kind, int64_t index) {
  stateChunkView<float>("trx_state_chunk", out, kind, index);
}

extern "C" void _mlir_ciface_trx_state_chunk_bf16(trx_memref_bf16_1d *out,
                                                  int32_t kind, int64_t index) {
  stateChunkView<uint16_t>("trx_state_chunk_bf16", out, kind, index);
}

extern "C" void trx_zero_all_gather_param(int64_t index, int64_t axis_mask) {
  const char *fn = "trx_zero_all_gather_param";
  StreamOrderedScope streamOrdered; // the compiled code reads it next
  const ParamLayout *l = nullptr;
  const trx_param_desc &p = boundParam(fn, index);
  void *buf = stateBuffer(fn, TRX_STATE_PARAM, index, l, p.dtype);
  if (l->zeroStage < 1 || l->zeroStage > 2 ||
      axesOfMask(uint64_t(axis_mask)) != l->zeroAxes)
    abortWith(fn,
              "parameter %" PRId64 " '%s' is not replicated under ZeRO 1/2 "
              "over the axes of mask 0x%" PRIx64,
              index, p.name, uint64_t(axis_mask));
  // A bf16 parameter moves its bf16 elements (2 bytes each): the chunks
  // each member rounded from its updated master chunk.
  if (p.dtype == TRX_BF16) {
    auto *bf = static_cast<uint16_t *>(buf);
    trx_all_gather_bf16(bf + l->zeroPos * l->chunk, l->chunk, bf,
                        l->zeroAxes.data(), int32_t(l->zeroAxes.size()));
    return;
  }
  auto *f = static_cast<float *>(buf);
  trx_all_gather(f + l->zeroPos * l->chunk, l->chunk, f, l->zeroAxes.data(),
                 int32_t(l->zeroAxes.size()));
}

extern "C" void *_mlir_memref_to_llvm_alloc(size_t size) {
  return checkedAlloc("_mlir_memref_to_llvm_alloc", size, 64);
}

extern "C" void *_mlir_memref_to_llvm_aligned_alloc(size_t alignment,
                                                    size_t size) {
  return checkedAlloc("_mlir_memref_to_llvm_aligned_alloc", size, alignment);
}

extern "C" void _mlir_memref_to_llvm_free(void *ptr) {
  if (!ptr)
    return;
  // Only the compiled code's own temporaries: freeing a parameter or moment
  // buffer (a trx_state_* view) would leave the runtime with a dangling one.
  int cat = allocCategory(ptr);
  if (cat != TRX_MEM_ACTIV)
    abortWith(
        "_mlir_memref_to_llvm_free",
        "pointer %p was not allocated by _mlir_memref_to_llvm_alloc "
        "(%s)",
        ptr, cat < 0 ? "unknown or already freed" : trx_mem_category_name(cat));
  trx_free(ptr);
}

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

namespace {

/// The axes of a compiled collective's mask, checked against the mesh.
std::vector<int32_t> groupAxes(const char *fn, int64_t axis_mask) {
  int32_t naxes = trx_dist_num_axes();
  if (axis_mask <= 0 || axis_mask >= (int64_t(1) << TRX_DIST_MAX_AXES) ||
      (naxes >= 0 && (axis_mask >> naxes) != 0)) {
    char msg[256];
    snprintf(msg, sizeof(msg),
             "%s: axis mask 0x%" PRIx64 " does not fit the mesh of %" PRId32
             " axes (was the binary started with its mesh?)",
             fn, uint64_t(axis_mask), naxes);
    trx_dist_abort(msg);
  }
  return axesOfMask(uint64_t(axis_mask));
}

/// The contiguous data of a 1-D memref argument (f32 or bf16).
template <typename Memref>
auto *contiguous(const char *fn, const char *what, Memref *m) {
  char msg[256];
  if (!m) {
    snprintf(msg, sizeof(msg), "%s: %s is NULL", fn, what);
    trx_dist_abort(msg);
  }
  if (m->sizes[0] > 1 && m->strides[0] != 1) {
    snprintf(msg, sizeof(msg),
             "%s: %s has stride %" PRId64 " (must be contiguous)", fn, what,
             m->strides[0]);
    trx_dist_abort(msg);
  }
  return m->aligned + m->offset;
}

int32_t groupSize(const std::vector<int32_t> &axes) {
  const trx_dist_group *g = trx_dist_comm(axes.data(), int32_t(axes.size()));
  return g ? trx_dist_group_size(g) : 1;
}

// The entries below are one template each for f32 and bf16 buffers
// (trx_memref_f32_1d / trx_memref_bf16_1d), given the C front of their
// element type (comm.cpp: trx_all_reduce / trx_all_reduce_bf16, ...).

/// all_reduce of `buf` in place through `front`.
template <typename Memref, typename Front>
void allReduceEntry(Front front, Memref *buf, int32_t op, int64_t axis_mask,
                    const char *fn) {
  StreamOrderedScope streamOrdered; // the compiled code reads it next
  auto *data = contiguous(fn, "buffer", buf);
  std::vector<int32_t> axes = groupAxes(fn, axis_mask);
  front(data, buf->sizes[0], op, axes.data(), int32_t(axes.size()));
}

/// A send or a receive of `buf` (trx_send / trx_recv and their forms).
template <typename Memref, typename Front>
void pointToPointEntry(Front front, Memref *buf, int64_t peer, int64_t tag,
                       int64_t axis_mask, const char *fn) {
  StreamOrderedScope streamOrdered; // the compiled code reads it next
  auto *data = contiguous(fn, "buffer", buf);
  std::vector<int32_t> axes = groupAxes(fn, axis_mask);
  front(data, buf->sizes[0], int32_t(peer), axes.data(), int32_t(axes.size()),
        int32_t(tag));
}

/// all_to_all of `send` into `recv` (the same size, g equal chunks).
template <typename Memref, typename Front>
void allToAllEntry(Front front, Memref *send, Memref *recv, int64_t axis_mask,
                   const char *fn) {
  StreamOrderedScope streamOrdered; // the compiled code reads it next
  auto *src = contiguous(fn, "send", send);
  auto *dst = contiguous(fn, "recv", recv);
  std::vector<int32_t> axes = groupAxes(fn, axis_mask);
  const int64_t g = groupSize(axes), n = send->sizes[0];
  char msg[256];
  if (recv->sizes[0] != n) {
    snprintf(msg, sizeof(msg),
             "%s: send has %" PRId64 " elements but recv has %" PRId64, fn, n,
             recv->sizes[0]);
    trx_dist_abort(msg);
  }
  if (n % g != 0) {
    snprintf(msg, sizeof(msg),
             "%s: %" PRId64 " elements do not split into %" PRId64
             " equal chunks (one per member of the group)",
             fn, n, g);
    trx_dist_abort(msg);
  }
  front(src, n / g, dst, axes.data(), int32_t(axes.size()));
}

} // namespace

extern "C" void _mlir_ciface_trx_all_reduce_f32(trx_memref_f32_1d *buf,
                                                int32_t op, int64_t axis_mask) {
  allReduceEntry(trx_all_reduce, buf, op, axis_mask, "trx_all_reduce_f32");
}

extern "C" void _mlir_ciface_trx_all_reduce_bf16(trx_memref_bf16_1d *buf,
                                                 int32_t op,
                                                 int64_t axis_mask) {
  allReduceEntry(trx_all_reduce_bf16, buf, op, axis_mask,
                 "trx_all_reduce_bf16");
}

namespace {

/// The flat reduce-scatter of ZeRO and sequence parallelism through
/// `front` (trx_reduce_scatter / _bf16): `in` (n elements) is padded with
/// zeros to g*k, k the size of `out`, which must be ceil(n / g).
template <typename Memref, typename Front>
void reduceScatterEntry(Front front, Memref *in, Memref *out, int32_t op,
                        int64_t axis_mask, const char *fn) {
  StreamOrderedScope streamOrdered; // the compiled code reads it next
  auto *src = contiguous(fn, "input", in);
  auto *dst = contiguous(fn, "output", out);
  using T = std::remove_pointer_t<decltype(dst)>;
  std::vector<int32_t> axes = groupAxes(fn, axis_mask);
  int64_t g = groupSize(axes), k = out->sizes[0], n = in->sizes[0];
  if (k != trx_zero_chunk(n, g)) {
    char msg[256];
    snprintf(msg, sizeof(msg),
             "%s: input of %" PRId64 " elements does not pad to %" PRId64
             " chunks of %" PRId64,
             fn, n, g, k);
    trx_dist_abort(msg);
  }
  // Padded on the device: a temporary of g*k elements, the input copied
  // in and the tail zeroed (stream-ordered; no host access). Zero bytes
  // are 0 in f32 and bf16 alike.
  T *padded = nullptr;
  if (n != g * k) {
    padded = static_cast<T *>(checkedAlloc(fn, size_t(g * k) * sizeof(T), 64));
    trx_copy_on_device(padded, src, size_t(n) * sizeof(T));
    trx_device_memset(padded + n, 0, size_t(g * k - n) * sizeof(T));
    src = padded;
  }
  front(src, k, dst, op, axes.data(), int32_t(axes.size()));
  trx_free(padded);
}

/// The flat all-gather through `front` (trx_all_gather / _bf16): the
/// members' `in` blocks (k elements each) in group order, cut to the n of
/// `out`, k = ceil(n / g).
template <typename Memref, typename Front>
void allGatherEntry(Front front, Memref *in, Memref *out, int64_t axis_mask,
                    const char *fn) {
  StreamOrderedScope streamOrdered; // the compiled code reads it next
  auto *src = contiguous(fn, "input", in);
  auto *dst = contiguous(fn, "output", out);
  using T = std::remove_pointer_t<decltype(dst)>;
  std::vector<int32_t> axes = groupAxes(fn, axis_mask);
  int64_t g = groupSize(axes), k = in->sizes[0], n = out->sizes[0];
  if (k != trx_zero_chunk(n, g)) {
    char msg[256];
    snprintf(msg, sizeof(msg),
             "%s: output of %" PRId64 " elements is not %" PRId64
             " chunks of %" PRId64 " less their padding",
             fn, n, g, k);
    trx_dist_abort(msg);
  }
  if (n == g * k) {
    front(src, k, dst, axes.data(), int32_t(axes.size()));
    return;
  }
  // Gathered into a device temporary, then cut to n on the device.
  T *whole = static_cast<T *>(checkedAlloc(fn, size_t(g * k) * sizeof(T), 64));
  front(src, k, whole, axes.data(), int32_t(axes.size()));
  trx_copy_on_device(dst, whole, size_t(n) * sizeof(T));
  trx_free(whole);
}

} // namespace

extern "C" void _mlir_ciface_trx_reduce_scatter_f32(trx_memref_f32_1d *in,
                                                    trx_memref_f32_1d *out,
                                                    int32_t op,
                                                    int64_t axis_mask) {
  reduceScatterEntry(trx_reduce_scatter, in, out, op, axis_mask,
                     "trx_reduce_scatter_f32");
}

extern "C" void _mlir_ciface_trx_reduce_scatter_bf16(trx_memref_bf16_1d *in,
                                                     trx_memref_bf16_1d *out,
                                                     int32_t op,
                                                     int64_t axis_mask) {
  reduceScatterEntry(trx_reduce_scatter_bf16, in, out, op, axis_mask,
                     "trx_reduce_scatter_bf16");
}

extern "C" void _mlir_ciface_trx_all_gather_f32(trx_memref_f32_1d *in,
                                                trx_memref_f32_1d *out,
                                                int64_t axis_mask) {
  allGatherEntry(trx_all_gather, in, out, axis_mask, "trx_all_gather_f32");
}

extern "C" void _mlir_ciface_trx_all_gather_bf16(trx_memref_bf16_1d *in,
                                                 trx_memref_bf16_1d *out,
                                                 int64_t axis_mask) {
  allGatherEntry(trx_all_gather_bf16, in, out, axis_mask,
                 "trx_all_gather_bf16");
}

extern "C" void _mlir_ciface_trx_broadcast_f32(trx_memref_f32_1d *buf,
                                               int64_t root,
                                               int64_t axis_mask) {
  const char *fn = "trx_broadcast_f32";
  StreamOrderedScope streamOrdered; // the compiled code reads it next
  float *data = contiguous(fn, "buffer", buf);
  std::vector<int32_t> axes = groupAxes(fn, axis_mask);
  trx_broadcast(data, buf->sizes[0], int32_t(root), axes.data(),
                int32_t(axes.size()));
}

extern "C" void _mlir_ciface_trx_send_f32(trx_memref_f32_1d *buf, int64_t peer,
                                          int64_t tag, int64_t axis_mask) {
  pointToPointEntry(trx_send, buf, peer, tag, axis_mask, "trx_send_f32");
}

extern "C" void _mlir_ciface_trx_recv_f32(trx_memref_f32_1d *buf, int64_t peer,
                                          int64_t tag, int64_t axis_mask) {
  pointToPointEntry(trx_recv, buf, peer, tag, axis_mask, "trx_recv_f32");
}

extern "C" void _mlir_ciface_trx_send_bf16(trx_memref_bf16_1d *buf,
                                           int64_t peer, int64_t tag,
                                           int64_t axis_mask) {
  pointToPointEntry(trx_send_bf16, buf, peer, tag, axis_mask, "trx_send_bf16");
}

extern "C" void _mlir_ciface_trx_recv_bf16(trx_memref_bf16_1d *buf,
                                           int64_t peer, int64_t tag,
                                           int64_t axis_mask) {
  pointToPointEntry(trx_recv_bf16, buf, peer, tag, axis_mask, "trx_recv_bf16");
}

extern "C" void _mlir_ciface_trx_all_to_all_f32(trx_memref_f32_1d *send,
                                                trx_memref_f32_1d *recv,
                                                int64_t axis_mask) {
  allToAllEntry(trx_all_to_all, send, recv, axis_mask, "trx_all_to_all_f32");
}

extern "C" void _mlir_ciface_trx_all_to_all_bf16(trx_memref_bf16_1d *send,
                                                 trx_memref_bf16_1d *recv,
                                                 int64_t axis_mask) {
  allToAllEntry(trx_all_to_all_bf16, send, recv, axis_mask,
                "trx_all_to_all_bf16");
}

namespace {
/// The ring shift's entries (f32 and bf16 buffers): both contiguous and of
/// one size.
template <typename Memref>
void shiftStartEntry(const char *fn, Memref *send, Memref *recv,
                     int64_t axis_mask, int64_t slot) {
  StreamOrderedScope streamOrdered; // trx_shift_wait orders the reads
  auto *src = contiguous(fn, "send", send);
  auto *dst = contiguous(fn, "recv", recv);
  std::vector<int32_t> axes = groupAxes(fn, axis_mask);
  if (send->sizes[0] != recv->sizes[0]) {
    char msg[256];
    snprintf(msg, sizeof(msg),
             "%s: send has %" PRId64 " elements but recv has %" PRId64, fn,
             send->sizes[0], recv->sizes[0]);
    trx_dist_abort(msg);
  }
  shiftStart(src, dst, send->sizes[0], int64_t(sizeof(*src)), axes.data(),
             int32_t(axes.size()), slot, fn);
}
} // namespace

extern "C" void _mlir_ciface_trx_shift_start_f32(trx_memref_f32_1d *send,
                                                 trx_memref_f32_1d *recv,
                                                 int64_t axis_mask,
                                                 int64_t slot) {
  shiftStartEntry("trx_shift_start_f32", send, recv, axis_mask, slot);
}

extern "C" void _mlir_ciface_trx_shift_start_bf16(trx_memref_bf16_1d *send,
                                                  trx_memref_bf16_1d *recv,
                                                  int64_t axis_mask,
                                                  int64_t slot) {
  shiftStartEntry("trx_shift_start_bf16", send, recv, axis_mask, slot);
}

extern "C" void trx_shift_wait(int64_t slot) {
  StreamOrderedScope streamOrdered; // the compiled code reads recv next
  shiftWait(slot, "trx_shift_wait");
}

namespace {
bool accumulationBoundary = true;
bool firstMicroBatch = true;
} // namespace

extern "C" void trx_set_accumulation_boundary(int last_micro_batch) {
  accumulationBoundary = last_micro_batch != 0;
}

extern "C" void trx_set_first_micro_batch(int first) {
  firstMicroBatch = first != 0;
}

extern "C" int64_t trx_first_micro_batch(void) {
  return firstMicroBatch ? 1 : 0;
}

extern "C" void _mlir_ciface_trx_all_reduce_grads(trx_memref_i64_1d *params,
                                                  int32_t op,
                                                  int64_t axis_mask) {
  const char *fn = "trx_all_reduce_grads";
  std::vector<int32_t> axes = groupAxes(fn, axis_mask);
  if (!params || params->sizes[0] < 1)
    abortWith(fn, "no parameters in the bucket");
  if (!accumulationBoundary)
    return;
  // The index list on the host: read in place when it is host memory (a
  // constant or a stack array of the compiled code), else copied (which
  // waits for the device).
  const int64_t count = params->sizes[0], stride = params->strides[0];
  if (count > 1 && stride < 1)
    abortWith(fn, "the parameter list has stride %" PRId64, stride);
  HostView list(params->aligned + params->offset,
                size_t((count - 1) * stride + 1) * sizeof(int64_t));
  const int64_t *indices = static_cast<const int64_t *>(list.data());
  // The f32 and the bf16 gradient buffers (parameters of either dtype).
  std::vector<float *> bufs;
  std::vector<uint16_t *> bf16Bufs;
  std::vector<int64_t> counts, bf16Counts;
  for (int64_t i = 0; i < count; ++i) {
    int64_t index = indices[i * stride];
    const ParamLayout *l = nullptr;
    const int32_t dtype = boundParam(fn, index).dtype;
    void *buf = stateBuffer(fn, TRX_STATE_GRAD, index, l, dtype);
    if (dtype == TRX_BF16) {
      bf16Bufs.push_back(static_cast<uint16_t *>(buf));
      bf16Counts.push_back(l->viewCount(TRX_STATE_GRAD));
    } else {
      bufs.push_back(static_cast<float *>(buf));
      counts.push_back(l->viewCount(TRX_STATE_GRAD));
    }
  }
  // One message per dtype (comm.cpp); on the GPU queued on the
  // communication stream.
  StreamOrderedScope streamOrdered;
  if (!bufs.empty())
    trx_all_reduce_bucket(bufs.data(), counts.data(), int32_t(bufs.size()), op,
                          axes.data(), int32_t(axes.size()));
  if (!bf16Bufs.empty())
    trx_all_reduce_bucket_bf16(bf16Bufs.data(), bf16Counts.data(),
                               int32_t(bf16Bufs.size()), op, axes.data(),
                               int32_t(axes.size()));
}

extern "C" int64_t trx_group_position(int64_t axis_mask) {
  if (!trx_dist_initialized())
    return 0;
  std::vector<int32_t> axes = groupAxes("trx_group_position", axis_mask);
  const trx_dist_group *g = trx_dist_comm(axes.data(), int32_t(axes.size()));
  return g ? trx_dist_group_position(g) : 0;
}
