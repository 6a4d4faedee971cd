//===- kernel_abi.cpp - The runtime functions compiled code calls ---------===//
//
// The kernel ABI of include/triax/Conversion/RuntimeABI.h on the CPU:
//  - _mlir_ciface_trx_sgemm: strided f32 GEMM through OpenBLAS cblas_sgemm;
//  - _mlir_ciface_trx_state_1d/2d: views of the runtime-owned parameter,
//    AdamW and gradient buffers bound with trx_state_bind;
//  - _mlir_memref_to_llvm_alloc/aligned_alloc/free: the compiled code's
//    temporaries, charged to TRX_MEM_ACTIV.
// Compiled code cannot handle errors, so violations print a message naming
// the function and the problem and abort().
//
//===----------------------------------------------------------------------===//

#include "internal.h"
#include "transport.h"
#include "triax_rt.h"

#include <cblas.h>

#include <algorithm>
#include <cinttypes>
#include <climits>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
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

/// A checked row-major view of one GEMM operand.
struct Operand {
  float *data;
  int64_t rows, cols, ld;
};

Operand checkOperand(const char *name, const trx_memref_f32_2d *m) {
  const char *fn = "trx_sgemm";
  if (!m)
    abortWith(fn, "operand %s is NULL", name);
  int64_t rows = m->sizes[0], cols = m->sizes[1];
  if (rows < 0 || cols < 0)
    abortWith(fn, "%s has negative sizes [%" PRId64 ", %" PRId64 "]", name,
              rows, cols);
  if (rows > INT_MAX || cols > INT_MAX)
    abortWith(
        fn, "%s sizes [%" PRId64 ", %" PRId64 "] exceed the BLAS integer range",
        name, rows, cols);
  if (m->offset < 0)
    abortWith(fn, "%s has negative offset %" PRId64, name, m->offset);
  // The inner stride only matters with more than one column, the row stride
  // only with more than one row.
  if (cols > 1 && m->strides[1] != 1)
    abortWith(fn,
              "%s has inner stride %" PRId64 " (must be 1; sizes [%" PRId64
              ", %" PRId64 "])",
              name, m->strides[1], rows, cols);
  int64_t minLd = cols > 1 ? cols : 1;
  int64_t ld = rows > 1 ? m->strides[0] : minLd;
  if (ld < minLd)
    abortWith(fn,
              "%s has row stride %" PRId64 " smaller than its %" PRId64
              " columns",
              name, m->strides[0], cols);
  if (ld > INT_MAX)
    abortWith(fn, "%s row stride %" PRId64 " exceeds the BLAS integer range",
              name, ld);
  if (rows > 0 && cols > 0 && !m->aligned)
    abortWith(fn, "%s has a NULL data pointer", name);
  return {m->aligned ? m->aligned + m->offset : nullptr, rows, cols, ld};
}

int64_t floorDiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

/// Whether two views share an element. Exact for row-major views: for each
/// row of `a` (a byte interval), looks for a row k of `b` whose interval
/// intersects it, i.e. x - b0 - wb < k*ldb < x + wa - b0. O(a.rows).
bool overlaps(const Operand &a, const Operand &b) {
  if (a.rows == 0 || a.cols == 0 || b.rows == 0 || b.cols == 0)
    return false;
  const int64_t fs = int64_t(sizeof(float));
  int64_t a0 = int64_t(reinterpret_cast<uintptr_t>(a.data));
  int64_t b0 = int64_t(reinterpret_cast<uintptr_t>(b.data));
  int64_t wa = a.cols * fs, wb = b.cols * fs;
  int64_t lda = a.ld * fs, ldb = b.ld * fs;
  // Quick reject on the bounding ranges.
  int64_t aEnd = a0 + (a.rows - 1) * lda + wa,
          bEnd = b0 + (b.rows - 1) * ldb + wb;
  if (aEnd <= b0 || bEnd <= a0)
    return false;
  for (int64_t i = 0; i < a.rows; ++i) {
    int64_t x = a0 + i * lda;
    // Smallest k with k*ldb > x - b0 - wb, largest with k*ldb < x + wa - b0.
    int64_t kLo = floorDiv(x - b0 - wb, ldb) + 1;
    int64_t kHi = -floorDiv(-(x + wa - b0), ldb) - 1;
    if (kLo < 0)
      kLo = 0;
    if (kHi > b.rows - 1)
      kHi = b.rows - 1;
    if (kLo <= kHi)
      return true;
  }
  return false;
}

//===----------------------------------------------------------------------===//
// Training-state buffers
//===----------------------------------------------------------------------===//

struct StateTable {
  std::vector<trx_param_desc> params;
  std::vector<ParamLayout> layouts;
  std::vector<float *> bufs[TRX_STATE_NKINDS];
};

StateTable &stateTable() {
  static StateTable table;
  return table;
}

/// The bound buffer of (kind, index) after checking both.
float *stateBuffer(const char *fn, int32_t kind, int64_t index,
                   const ParamLayout *&layout) {
  StateTable &t = stateTable();
  if (t.params.empty())
    abortWith(fn, "no training state is bound (trx_state_bind was not "
                  "called)");
  if (kind < 0 || kind >= TRX_STATE_NKINDS)
    abortWith(fn, "invalid state kind %" PRId32 " (expected 0..%d)", kind,
              TRX_STATE_NKINDS - 1);
  if (index < 0 || index >= int64_t(t.params.size()))
    abortWith(fn,
              "parameter index %" PRId64 " out of range (the model has %zu)",
              index, t.params.size());
  layout = &t.layouts[size_t(index)];
  if (!layout->present)
    abortWith(fn,
              "parameter %" PRId64 " '%s' lives on pipeline stage %" PRId64
              ", not on this rank's: the compiled program reads it on the "
              "wrong stage",
              index, t.params[size_t(index)].name, layout->stageRoot);
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
  Operand a = checkOperand("A", A), b = checkOperand("B", B),
          c = checkOperand("C", C);
  int64_t M = c.rows, N = c.cols;
  int64_t aM = transA ? a.cols : a.rows, K = transA ? a.rows : a.cols;
  int64_t bK = transB ? b.cols : b.rows, bN = transB ? b.rows : b.cols;
  if (aM != M || bK != K || bN != N)
    abortWith(fn,
              "shapes do not agree: op(A) is %" PRId64 "x%" PRId64
              ", op(B) is %" PRId64 "x%" PRId64 ", C is %" PRId64 "x%" PRId64
              " (transA %d, transB %d)",
              aM, K, bK, bN, M, N, transA ? 1 : 0, transB ? 1 : 0);
  if (M == 0 || N == 0)
    return;
  if (overlaps(c, a) || overlaps(c, b))
    abortWith(fn, "C overlaps %s", overlaps(c, a) ? "A" : "B");
  if (K == 0) {
    // C = beta * C (alpha * op(A) op(B) is an empty sum).
    for (int64_t i = 0; i < M; ++i) {
      float *row = c.data + i * c.ld;
      for (int64_t j = 0; j < N; ++j)
        row[j] = beta == 0.0f ? 0.0f : beta * row[j];
    }
    return;
  }
  cblas_sgemm(CblasRowMajor, transA ? CblasTrans : CblasNoTrans,
              transB ? CblasTrans : CblasNoTrans, int(M), int(N), int(K), alpha,
              a.data, int(a.ld), b.data, int(b.ld), beta, c.data, int(c.ld));
}

extern "C" void trx_blas_set_threads(int n) {
  if (n > 0)
    openblas_set_num_threads(n);
}

extern "C" int trx_state_bind(int64_t n, const trx_param_desc *params,
                              float *const *param_bufs, float *const *exp_avg,
                              float *const *exp_avg_sq, float *const *grads,
                              char *err, size_t errlen) {
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
      if (l.present &&
          (!param_bufs[i] || !exp_avg[i] || !exp_avg_sq[i] || !grads[i]))
        return fail(TRX_ERR_ARG, err, errlen,
                    "trx_state_bind: parameter %" PRId64
                    " '%s' has a NULL buffer",
                    i, params[i].name);
      fresh.layouts.push_back(std::move(l));
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

extern "C" void _mlir_ciface_trx_state_1d(trx_memref_f32_1d *out, int32_t kind,
                                          int64_t index) {
  const char *fn = "trx_state_1d";
  if (!out)
    abortWith(fn, "NULL result descriptor");
  const ParamLayout *l = nullptr;
  float *buf = stateBuffer(fn, kind, index, l);
  checkViewRank(fn, kind, index, *l, 1);
  out->allocated = buf;
  out->aligned = buf;
  out->offset = 0;
  out->sizes[0] = l->viewCount(kind);
  out->strides[0] = 1;
}

extern "C" void _mlir_ciface_trx_state_2d(trx_memref_f32_2d *out, int32_t kind,
                                          int64_t index) {
  const char *fn = "trx_state_2d";
  if (!out)
    abortWith(fn, "NULL result descriptor");
  const ParamLayout *l = nullptr;
  float *buf = stateBuffer(fn, kind, index, l);
  checkViewRank(fn, kind, index, *l, 2);
  out->allocated = buf;
  out->aligned = buf;
  out->offset = 0;
  out->sizes[0] = l->local[0];
  out->sizes[1] = l->local[1];
  out->strides[0] = l->local[1];
  out->strides[1] = 1;
}

extern "C" void _mlir_ciface_trx_state_chunk(trx_memref_f32_1d *out,
                                             int32_t kind, int64_t index) {
  const char *fn = "trx_state_chunk";
  if (!out)
    abortWith(fn, "NULL result descriptor");
  const ParamLayout *l = nullptr;
  float *buf = stateBuffer(fn, kind, index, l);
  if (l->zeroStage == 0)
    abortWith(fn, "parameter %" PRId64 " '%s' is not sharded by ZeRO", index,
              stateTable().params[size_t(index)].name);
  if (!l->sharded(kind) && l->allocCount(kind) != l->chunk * l->zeroParts)
    abortWith(fn,
              "state %" PRId32 " of parameter %" PRId64 " '%s' is "
              "replicated and not padded: it has no chunks",
              kind, index, stateTable().params[size_t(index)].name);
  // memref<?xf32> has a static offset of 0: point `aligned` at the chunk.
  out->allocated = buf;
  out->aligned = l->sharded(kind) ? buf : buf + l->zeroPos * l->chunk;
  out->offset = 0;
  out->sizes[0] = l->chunk;
  out->strides[0] = 1;
}

extern "C" void trx_zero_all_gather_param(int64_t index, int64_t axis_mask) {
  const char *fn = "trx_zero_all_gather_param";
  StreamOrderedScope streamOrdered; // the compiled code reads it next
  const ParamLayout *l = nullptr;
  float *buf = stateBuffer(fn, TRX_STATE_PARAM, index, l);
  if (l->zeroStage < 1 || l->zeroStage > 2 ||
      axesOfMask(uint64_t(axis_mask)) != l->zeroAxes)
    abortWith(fn,
              "parameter %" PRId64 " '%s' is not replicated under ZeRO 1/2 "
              "over the axes of mask 0x%" PRIx64,
              index, stateTable().params[size_t(index)].name,
              uint64_t(axis_mask));
  trx_all_gather(buf + l->zeroPos * l->chunk, l->chunk, buf, l->zeroAxes.data(),
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

/// The contiguous data of a 1-D memref argument.
float *contiguous(const char *fn, const char *what, trx_memref_f32_1d *m) {
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

} // namespace

extern "C" void _mlir_ciface_trx_all_reduce_f32(trx_memref_f32_1d *buf,
                                                int32_t op, int64_t axis_mask) {
  const char *fn = "trx_all_reduce_f32";
  StreamOrderedScope streamOrdered; // the compiled code reads it next
  float *data = contiguous(fn, "buffer", buf);
  std::vector<int32_t> axes = groupAxes(fn, axis_mask);
  trx_all_reduce(data, buf->sizes[0], op, axes.data(), int32_t(axes.size()));
}

extern "C" void _mlir_ciface_trx_reduce_scatter_f32(trx_memref_f32_1d *in,
                                                    trx_memref_f32_1d *out,
                                                    int32_t op,
                                                    int64_t axis_mask) {
  const char *fn = "trx_reduce_scatter_f32";
  StreamOrderedScope streamOrdered; // the compiled code reads it next
  float *src = contiguous(fn, "input", in);
  float *dst = contiguous(fn, "output", out);
  std::vector<int32_t> axes = groupAxes(fn, axis_mask);
  int64_t g = groupSize(axes), k = out->sizes[0], n = in->sizes[0];
  if (k != (n + g - 1) / g) {
    char msg[256];
    snprintf(msg, sizeof(msg),
             "%s: input of %" PRId64 " elements does not pad to %" PRId64
             " chunks of %" PRId64,
             fn, n, g, k);
    trx_dist_abort(msg);
  }
  std::vector<float> padded;
  if (n != g * k) {
    padded.assign(size_t(g * k), 0.0f);
    std::copy(src, src + n, padded.begin());
    src = padded.data();
  }
  trx_reduce_scatter(src, k, dst, op, axes.data(), int32_t(axes.size()));
}

extern "C" void _mlir_ciface_trx_all_gather_f32(trx_memref_f32_1d *in,
                                                trx_memref_f32_1d *out,
                                                int64_t axis_mask) {
  const char *fn = "trx_all_gather_f32";
  StreamOrderedScope streamOrdered; // the compiled code reads it next
  float *src = contiguous(fn, "input", in);
  float *dst = contiguous(fn, "output", out);
  std::vector<int32_t> axes = groupAxes(fn, axis_mask);
  int64_t g = groupSize(axes), k = in->sizes[0], n = out->sizes[0];
  if (k != (n + g - 1) / g) {
    char msg[256];
    snprintf(msg, sizeof(msg),
             "%s: output of %" PRId64 " elements is not %" PRId64
             " chunks of %" PRId64 " less their padding",
             fn, n, g, k);
    trx_dist_abort(msg);
  }
  if (n == g * k) {
    trx_all_gather(src, k, dst, axes.data(), int32_t(axes.size()));
    return;
  }
  std::vector<float> whole(size_t(g * k));
  trx_all_gather(src, k, whole.data(), axes.data(), int32_t(axes.size()));
  std::copy(whole.begin(), whole.begin() + n, dst);
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
  const char *fn = "trx_send_f32";
  StreamOrderedScope streamOrdered; // the compiled code reads it next
  float *data = contiguous(fn, "buffer", buf);
  std::vector<int32_t> axes = groupAxes(fn, axis_mask);
  trx_send(data, buf->sizes[0], int32_t(peer), axes.data(),
           int32_t(axes.size()), int32_t(tag));
}

extern "C" void _mlir_ciface_trx_recv_f32(trx_memref_f32_1d *buf, int64_t peer,
                                          int64_t tag, int64_t axis_mask) {
  const char *fn = "trx_recv_f32";
  StreamOrderedScope streamOrdered; // the compiled code reads it next
  float *data = contiguous(fn, "buffer", buf);
  std::vector<int32_t> axes = groupAxes(fn, axis_mask);
  trx_recv(data, buf->sizes[0], int32_t(peer), axes.data(),
           int32_t(axes.size()), int32_t(tag));
}

namespace {
bool accumulationBoundary = true;
} // namespace

extern "C" void trx_set_accumulation_boundary(int last_micro_batch) {
  accumulationBoundary = last_micro_batch != 0;
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
  std::vector<float *> bufs;
  std::vector<int64_t> counts;
  for (int64_t i = 0; i < params->sizes[0]; ++i) {
    int64_t index = params->aligned[params->offset + i * params->strides[0]];
    const ParamLayout *l = nullptr;
    bufs.push_back(stateBuffer(fn, TRX_STATE_GRAD, index, l));
    counts.push_back(l->viewCount(TRX_STATE_GRAD));
  }
  // One message (comm.cpp); on the GPU queued on the communication stream.
  StreamOrderedScope streamOrdered;
  trx_all_reduce_bucket(bufs.data(), counts.data(), int32_t(bufs.size()), op,
                        axes.data(), int32_t(axes.size()));
}

extern "C" int64_t trx_group_position(int64_t axis_mask) {
  if (!trx_dist_initialized())
    return 0;
  std::vector<int32_t> axes = groupAxes("trx_group_position", axis_mask);
  const trx_dist_group *g = trx_dist_comm(axes.data(), int32_t(axes.size()));
  return g ? trx_dist_group_position(g) : 0;
}
