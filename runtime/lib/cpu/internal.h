//===- internal.h - Shared helpers of the Triax CPU runtime -----*- C++ -*-===//
//
// Not installed and not part of the ABI: error formatting, file helpers and
// the small JSON reader/writer used by the safetensors and checkpoint code.
//
//===----------------------------------------------------------------------===//

#ifndef TRIAX_RT_LIB_CPU_INTERNAL_H
#define TRIAX_RT_LIB_CPU_INTERNAL_H

#include "triax_rt.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the Triax runtime requires a little-endian target"
#endif

#if defined(__GNUC__)
#define TRX_PRINTF(fmt, args) __attribute__((format(printf, fmt, args)))
#else
#define TRX_PRINTF(fmt, args)
#endif

namespace triax::rt {

/// Where the pieces of one parameter live on this rank (trx_param_desc's
/// split_* and zero_* fields resolved against the initialized mesh; one
/// device when MPI is not started).
struct ParamLayout {
  int32_t rank = 1;
  int64_t global[2] = {0, 0}; // the whole parameter
  int64_t local[2] = {0, 0};  // this rank's tensor-parallel block
  int64_t numel = 0;          // elements of the block
  // The split dimensions of the declared shape (split_shape; 3-D, padded
  // with leading 1s), the whole and this rank's block of it, and each split
  // (empty: not split) with its group, its size and this rank's position.
  int32_t splitRank = 0; // split_rank: dims[3 - splitRank] is its dim 0
  int64_t dims[3] = {1, 1, 1}, blockDims[3] = {1, 1, 1};
  struct Split {
    int32_t dim; // of dims
    std::vector<int32_t> axes;
    int64_t parts, pos;
  };
  std::vector<Split> splits;
  int32_t zeroStage = 0;
  std::vector<int32_t> zeroAxes;
  int64_t zeroParts = 1, zeroPos = 0;
  int64_t chunk = 0; // ceil(numel / zeroParts)
  // Pipeline stages: whether this rank's stage holds the parameter, and
  // the lowest stage that does (checkpoints take it from there).
  bool present = true;
  std::vector<int32_t> stageAxes; // empty: every stage holds it
  int64_t stageRoot = 0;
  // trx_param_desc::dtype: TRX_F32 or TRX_BF16. A bf16 parameter's
  // parameter and gradient buffers hold bf16 (uint16_t), and it has an f32
  // master copy (TRX_STATE_MASTER); every other buffer is f32.
  int32_t dtype = TRX_F32;

  /// Whether the parameter has buffer `kind` (trx_state_kind) at all, on
  /// the stages that hold it (see allocCount): every kind but
  /// TRX_STATE_MASTER, which only a bf16 parameter has.
  bool hasBuffer(int kind) const {
    return kind != TRX_STATE_MASTER || dtype == TRX_BF16;
  }
  /// Whether buffer `kind` holds only this rank's chunk: the moments and
  /// the master copy from ZeRO stage 1, the gradient from 2, the parameter
  /// from 3.
  bool sharded(int kind) const;
  /// Bytes of one element of buffer `kind`: 2 for the parameter and the
  /// gradient of a bf16 parameter, else 4 (f32).
  size_t elementSize(int kind) const {
    return dtype == TRX_BF16 &&
                   (kind == TRX_STATE_PARAM || kind == TRX_STATE_GRAD)
               ? 2
               : 4;
  }
  /// Elements to allocate for buffer `kind` (of elementSize(kind) bytes):
  /// 0 on a stage that does not hold the parameter, and for the master
  /// copy of an f32 parameter.
  int64_t allocCount(int kind) const;
  /// Bytes to allocate for buffer `kind`.
  size_t allocBytes(int kind) const {
    return size_t(allocCount(kind)) * elementSize(kind);
  }
  /// Elements the compiled code sees in buffer `kind` (its view; 0 where
  /// allocCount is 0).
  int64_t viewCount(int kind) const {
    return !present || !hasBuffer(kind) ? 0 : sharded(kind) ? chunk : numel;
  }
};

/// --trace (trace.cpp): a timeline of the run, recorded per rank and written
/// by rank 0 as one Chrome trace. traceRecord ends an event now that began
/// at `start` (traceNow(), µs) on thread `tid` (1 compute, 2 send, 3 recv,
/// 4 collectives); nothing is recorded until traceEnable().
double traceNow();
/// The CPU's vector instructions: 0 SSE, 1 AVX, 2 AVX2 and FMA, 3 AVX-512
/// (F, BW, DQ, VL).
int cpuVectorLevel();

/// The OpenBLAS core type to ask for (OPENBLAS_CORETYPE) when OpenBLAS chose
/// the kernels `chosen` (openblas_get_corename) on a CPU of `cpuLevel`
/// (cpuVectorLevel), or nullptr to keep its choice: SkylakeX or Haswell when
/// it fell back to kernels without AVX2 on a CPU that has AVX2
/// (trx_blas_select_core).
const char *blasCoreToRequest(const char *chosen, int cpuLevel);

/// The CPU GEMMs are cut among the OpenMP threads from this many
/// multiply-adds (M N K batch) on; tests lower it to cut small problems.
void setGemmCutMinWork(int64_t work);

void traceEnable();
bool traceOn();
void traceRecord(std::string name, const char *cat, int tid, double start,
                 int64_t microBatch = -1);
/// Collective over all ranks; rank 0 writes `path` (temporary file, then
/// renamed).
bool traceWrite(const char *path, std::string &error);

/// Resolves `p` against the mesh; false with a message ("parameter 'x':
/// ...") when its placement does not fit the mesh or its dtype is neither
/// TRX_F32 nor TRX_BF16.
bool computeParamLayout(const trx_param_desc &p, ParamLayout &out,
                        std::string &msg);

/// The axis list of a mask (bit i = axis i).
std::vector<int32_t> axesOfMask(uint64_t mask);

/// Collective over the parameter's groups: assembles the whole tensor of
/// f32 buffer `kind` (global[0] x global[1], row-major; the moments, the
/// master copy, or any buffer of an f32 parameter) from every rank's piece
/// into `whole` on every rank. `buf` is the rank's buffer (a trx_alloc
/// block, device memory on CUDA: read with trx_copy_to_host), `whole` host
/// memory.
void gatherWhole(const ParamLayout &l, int kind, const float *buf,
                 float *whole);
/// The inverse, no communication: this rank's piece of the f32 tensor
/// `whole` into buf (allocCount(kind) elements of T; padding zeroed), with
/// one trx_copy_to_device. T is float for an f32 buffer, uint16_t for a
/// bf16 one (the parameter buffer of a bf16 parameter: each element
/// rounded to nearest even, f32ToBf16). Defined for those two.
template <typename T>
void scatterWhole(const ParamLayout &l, int kind, const float *whole, T *buf);

/// Formats a message into (err, errlen); tolerates err == nullptr and
/// errlen == 0.
void setErr(char *err, size_t errlen, const char *fmt, ...) TRX_PRINTF(3, 4);

/// setErr, then returns `code`; for `return fail(...)` one-liners.
int fail(int code, char *err, size_t errlen, const char *fmt, ...)
    TRX_PRINTF(4, 5);

/// Records the thread-local message read by trx_last_error().
void setLastError(const char *fmt, ...) TRX_PRINTF(1, 2);

/// strerror(errnum) as a std::string (thread-safe).
std::string errnoStr(int errnum);

/// Writes all of [data, data+n) to fd, retrying on EINTR and short writes.
/// Returns 0 or an errno value.
int writeAll(int fd, const void *data, size_t n);

/// Directory part of a path ("." when it has none).
std::string dirName(const std::string &path);

/// Last component of a path.
std::string baseName(const std::string &path);

/// a + "/" + b, without doubling a trailing slash.
std::string joinPath(const std::string &a, const std::string &b);

/// Opens and fsyncs a directory. Returns 0 or an errno value (EINVAL and
/// ENOTSUP from file systems that cannot sync directories count as success).
int fsyncDir(const std::string &dir);

/// Atomically replaces `path` with `content`: "<path>.tmp.<pid>", write,
/// fsync, rename, fsync of the directory. Returns a TRX status.
int atomicWriteFile(const std::string &path, std::string_view content,
                    char *err, size_t errlen);

/// Removes the files "<dir>/<prefix><pid>" left by writers (pid) that no
/// longer run, e.g. prefix "model.safetensors.tmp.". Best effort.
void removeStaleTemps(const std::string &dir, const std::string &prefix);

/// Validates tensors for writing (names present, unique and not
/// "__metadata__", known dtype, rank 0..8, non-negative shape, data present
/// when non-empty) and returns their byte sizes. Messages start with
/// "<label>: ".
int validateTensors(const char *label, int64_t n, const trx_tensor *tensors,
                    std::vector<uint64_t> &sizes, char *err, size_t errlen);

/// The category of a live trx_alloc block, or -1 when `p` does not look like
/// one (best effort, like trx_free's check). NULL gives -1.
int allocCategory(const void *p);

/// Counts one call of trx_copy_* / trx_device_memset (kind: trx_copy_kind)
/// after checking that neither pointer is NULL when bytes > 0 (a message
/// naming `fn`, then abort()). Both the CPU definitions (copy.cpp) and the
/// CUDA ones call it.
void countCopy(int kind, const char *fn, const void *dst, const void *src,
               size_t bytes);

/// Set by the CUDA runtime (a global constructor): whether `p` is device
/// memory, which the host must not dereference. nullptr on the CPU, where
/// every buffer is host memory (tests may set it to run the staging paths
/// below on the CPU).
extern bool (*gDeviceMemoryHook)(const void *p);
/// gDeviceMemoryHook(p), false without a hook or for NULL.
bool isDeviceMemory(const void *p);

/// A host view of the `bytes` bytes at `p` for runtime code that must read
/// or write them on the host (a collective of the MPI transport, a GEMM's
/// host fallback): `p` itself when it is host memory (isDeviceMemory is
/// false: always on the CPU), else a host copy, filled with
/// trx_copy_to_host when `in`, written back with trx_copy_to_device by
/// finish() (or the destructor) when `out`.
class HostView {
public:
  HostView(void *p, size_t bytes, bool in, bool out)
      : user_(p), bytes_(bytes), out_(out),
        staged_(bytes > 0 && isDeviceMemory(p)) {
    if (!staged_)
      return;
    copy_.resize(bytes);
    if (in)
      trx_copy_to_host(copy_.data(), p, bytes);
  }
  HostView(const void *p, size_t bytes)
      : HostView(const_cast<void *>(p), bytes, /*in=*/true, /*out=*/false) {}
  ~HostView() { finish(); }
  HostView(const HostView &) = delete;
  HostView &operator=(const HostView &) = delete;
  void *data() { return staged_ ? copy_.data() : user_; }
  bool staged() const { return staged_; }
  /// Writes a staged copy back (once).
  void finish() {
    if (staged_ && out_)
      trx_copy_to_device(user_, copy_.data(), bytes_);
    out_ = false;
  }

private:
  void *user_;
  size_t bytes_;
  bool out_, staged_;
  std::vector<unsigned char> copy_;
};

/// Host views of several byte ranges (the operands of a host fallback: a
/// GEMM with K = 0, a GELU epilogue cuBLASLt cannot do). Ranges that share
/// a byte (strided views of one buffer interleave even when their elements
/// do not) are merged into one HostView, so that writing one back never
/// puts stale bytes over another's. Usage: add() each range, stage(), use
/// host(i), finish() (or the destructor) writes the written ones back.
class HostSpans {
public:
  /// [p, p + bytes); `written`: the host writes it. Returns its index.
  int add(const void *p, size_t bytes, bool written) {
    ranges_.push_back({reinterpret_cast<uintptr_t>(p), bytes, written, 0});
    return int(ranges_.size()) - 1;
  }
  void stage() {
    std::vector<size_t> order(ranges_.size());
    for (size_t i = 0; i < order.size(); ++i)
      order[i] = i;
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      return ranges_[a].lo < ranges_[b].lo;
    });
    struct Group {
      uintptr_t lo, hi;
      bool written;
    };
    std::vector<Group> groups;
    for (size_t i : order) {
      Range &r = ranges_[i];
      if (r.bytes == 0) {
        r.group = -1;
        continue;
      }
      uintptr_t hi = r.lo + r.bytes;
      if (!groups.empty() && r.lo < groups.back().hi) {
        groups.back().hi = std::max(groups.back().hi, hi);
        groups.back().written |= r.written;
      } else {
        groups.push_back({r.lo, hi, r.written});
      }
      r.group = int(groups.size()) - 1;
    }
    for (const Group &g : groups) {
      los_.push_back(g.lo);
      views_.push_back(std::make_unique<HostView>(
          reinterpret_cast<void *>(g.lo), size_t(g.hi - g.lo), /*in=*/true,
          g.written));
    }
  }
  /// The host address of range i's first byte.
  char *host(int i) {
    const Range &r = ranges_[size_t(i)];
    if (r.group < 0)
      return reinterpret_cast<char *>(r.lo);
    return static_cast<char *>(views_[size_t(r.group)]->data()) +
           (r.lo - los_[size_t(r.group)]);
  }
  void finish() {
    for (auto &v : views_)
      v->finish();
  }

private:
  struct Range {
    uintptr_t lo;
    size_t bytes;
    bool written;
    int group;
  };
  std::vector<Range> ranges_;
  std::vector<uintptr_t> los_;
  std::vector<std::unique_ptr<HostView>> views_;
};

/// Reads a whole (small) file. Returns 0 or an errno value.
int readFile(const std::string &path, std::string &out);

/// A read-only memory map of a whole regular file.
struct MappedFile {
  void *addr = nullptr;
  size_t size = 0;
  MappedFile() = default;
  MappedFile(const MappedFile &) = delete;
  MappedFile &operator=(const MappedFile &) = delete;
  ~MappedFile();
  const uint8_t *bytes() const { return static_cast<const uint8_t *>(addr); }
};

/// Maps `path`. On failure returns a TRX status and writes
/// "<path>: cannot open: ..." / "<path>: not a regular file".
int mapFile(const std::string &path, MappedFile &out, char *err, size_t errlen);

/// trx_ckpt_save, with `files` (name, content) written into the step
/// directory beside the others before it is renamed into place.
int saveCheckpoint(
    const char *ckptDir, const trx_ckpt_state *state, int64_t n,
    const trx_tensor *params, const float *const *expAvg,
    const float *const *expAvgSq, const char *extraJson,
    const std::vector<std::pair<std::string, std::string>> &files, char *err,
    size_t errlen);

/// "[256, 64]".
std::string shapeStr(int32_t rank, const int64_t *shape);

/// Whether `path` is a directory / a regular file.
bool isDir(const std::string &path);
bool isFile(const std::string &path);

/// --init-from: the model's tensors (specs: name, dtype, shape; dst: where
/// each goes) from a Hugging Face checkpoint as transformers writes it (a
/// file, a directory, a sharded index), by the name table of the model's
/// architecture (hf_import.cpp). Writes the mapping to `explain` when not
/// null. Returns "" or the message listing every missing, unexpected and
/// mis-shaped tensor.
std::string readHuggingFace(const std::string &path, int64_t n,
                            const trx_tensor *specs, void *const *dst,
                            FILE *explain);

namespace json {

enum class Kind { Null, Bool, Number, String, Array, Object };

/// A parsed JSON value. Numbers keep their source text so that 64-bit
/// integers are read back exactly.
struct Value {
  Kind kind = Kind::Null;
  bool boolean = false;
  std::string text; // String: decoded UTF-8; Number: the literal.
  std::vector<Value> items;
  std::vector<std::pair<std::string, Value>> members;

  /// Member `key` of an object, or nullptr.
  const Value *get(std::string_view key) const;
  bool isString() const { return kind == Kind::String; }
  bool isObject() const { return kind == Kind::Object; }
  bool isArray() const { return kind == Kind::Array; }
  bool isNumber() const { return kind == Kind::Number; }
  /// Integer numbers only (no fraction or exponent), range-checked.
  bool toInt64(int64_t &out) const;
  bool toUInt64(uint64_t &out) const;
  /// Any number; null reads as NaN.
  bool toFloat(float &out) const;
  bool toDouble(double &out) const;
};

/// Parses exactly one JSON value (surrounded by optional whitespace).
/// Rejects duplicate object keys, invalid UTF-8, control characters in
/// strings and nesting deeper than 256. On failure `error` is
/// "at byte N: <what>".
bool parse(std::string_view text, Value &out, std::string &error);

/// Appends `s` as a quoted, escaped JSON string.
void appendString(std::string &out, std::string_view s);

/// Appends a double (shortest round-trip-safe "%.17g"; non-finite as null).
void appendDouble(std::string &out, double v);
/// Appends a float ("%.9g", exact round trip; non-finite as null).
void appendFloat(std::string &out, float v);

/// Parses a JSON object whose values are all strings. Returns false with
/// `error` set otherwise.
bool parseStringMap(std::string_view text,
                    std::vector<std::pair<std::string, std::string>> &out,
                    std::string &error);

} // namespace json
} // namespace triax::rt

#endif // TRIAX_RT_LIB_CPU_INTERNAL_H
