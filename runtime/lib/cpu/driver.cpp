//===- driver.cpp - The training program around a compiled model ----------===//
//
// trx_train_main: the main() of every Triax training binary. It parses the
// command line, opens the data, allocates and initializes (or loads) the
// parameters and AdamW moments, binds them for the compiled code's
// trx_state_* views, and runs the training loop with logging, evaluation
// and crash-safe checkpoints. Every input (data, init file, checkpoint,
// checkpoint directory) is checked before the first step, so a bad one
// stops the run with a message naming the file, before anything is written.
//
// A bf16 parameter (trx_param_desc::dtype) has bf16 parameter and gradient
// buffers and an f32 master copy beside its f32 moments. Initialization,
// --save-init, --init-from and checkpoints see its master copy as the
// parameter (checkpoints hold f32 master weights, so a resume is exact);
// writing it writes the master copy and its rounding into the bf16 buffer.
//
// The state, the token buffers and the step's scalars are trx_alloc blocks:
// device memory on the CUDA target. The driver never dereferences them: it
// works on host copies (the whole tensors of initialization and
// checkpoints, the loader's batches, the loss) and moves them with
// trx_copy_to_host / trx_copy_to_device / trx_device_memset. A training
// step queues its work without waiting for the device; the loss and the
// gradient norm stay on the device (one 2-float buffer) and are read, in
// one copy, only on the steps that need them (logged, checkpoint and last
// steps).
//
//===----------------------------------------------------------------------===//

#include "device.h"
#include "internal.h"
#include "triax_rt.h"

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <new>
#include <sched.h>
#include <string>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

using namespace triax::rt;

namespace {

constexpr const char *kBuiltinCorpus = "<built-in corpus>";
constexpr int64_t kByteVocab = 256;

//===----------------------------------------------------------------------===//
// Initialization PRNG (documented with trx_init_normal in triax_rt.h)
//===----------------------------------------------------------------------===//

uint64_t splitmix64Next(uint64_t &state) {
  state += 0x9E3779B97F4A7C15ULL;
  uint64_t z = state;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

struct Xoshiro256 {
  uint64_t s[4];
  explicit Xoshiro256(uint64_t seed) {
    for (uint64_t &w : s)
      w = splitmix64Next(seed);
  }
  uint64_t next() {
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
  }
};

//===----------------------------------------------------------------------===//
// Messages
//===----------------------------------------------------------------------===//

void printError(const char *fmt, ...) TRX_PRINTF(1, 2);
void printError(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("error: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  fflush(stderr);
}

void printNote(const char *fmt, ...) TRX_PRINTF(1, 2);
void printNote(const char *fmt, ...) {
  fflush(stdout);
  va_list ap;
  va_start(ap, fmt);
  fputs("note: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  fflush(stderr);
}

void printWarning(const char *fmt, ...) TRX_PRINTF(1, 2);
void printWarning(const char *fmt, ...) {
  fflush(stdout);
  va_list ap;
  va_start(ap, fmt);
  fputs("warning: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  fflush(stderr);
}

int64_t numel(const trx_param_desc &p) {
  return p.rank == 2 ? p.shape[0] * p.shape[1] : p.shape[0];
}

bool padded(const trx_param_desc &p) {
  return p.valid_shape[0] != 0 || p.valid_shape[1] != 0;
}

/// The vocabulary as computed: the padded dimension of a padded parameter
/// whose valid size is the model's vocabulary (its shape there), or the
/// vocabulary.
int64_t paddedVocab(const trx_model_desc *m) {
  for (int64_t i = 0; i < m->num_params; ++i) {
    const trx_param_desc &p = m->params[i];
    if (padded(p))
      for (int32_t d = 0; d < p.rank; ++d)
        if (p.valid_shape[d] == m->vocab && p.shape[d] != m->vocab)
          return p.shape[d];
  }
  return m->vocab;
}

bool badModel(std::string &msg, const char *fmt, ...) TRX_PRINTF(2, 3);
/// Sets msg to "model descriptor: <formatted>" and returns false.
bool badModel(std::string &msg, const char *fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  msg = std::string("model descriptor: ") + buf;
  return false;
}

/// Checks the descriptor the compiler generated. Messages start with
/// "model descriptor: ".
bool validateModel(const trx_model_desc *m, std::string &msg) {
#define bad(...) badModel(msg, __VA_ARGS__)
  if (!m)
    return bad("%s", "no model descriptor (NULL)");
  if (!m->model_name || !*m->model_name)
    return bad("%s", "the model has no name");
  if (m->num_params < 1 || !m->params)
    return bad("model '%s' has no parameters", m->model_name);
  const char *device = m->device ? m->device : "cpu";
  if (std::strcmp(device, triax::rt::activeDevice().name) != 0)
    return bad("model '%s' was compiled for the %s device, but this "
               "binary's runtime runs on the %s device (a CUDA binary links "
               "libtriax_rt_cuda.a whole, as triaxc --target cuda does)",
               m->model_name, device, triax::rt::activeDevice().name);
  for (int64_t i = 0; i < m->num_params; ++i) {
    const trx_param_desc &p = m->params[i];
    if (!p.name || !*p.name)
      return bad("parameter %" PRId64 " has no name", i);
    for (int64_t j = 0; j < i; ++j)
      if (std::strcmp(m->params[j].name, p.name) == 0)
        return bad("parameter name '%s' is used twice", p.name);
    if (p.rank != 1 && p.rank != 2)
      return bad("parameter '%s' has rank %" PRId32 " (expected 1 or 2)",
                 p.name, p.rank);
    for (int32_t d = 0; d < p.rank; ++d)
      if (p.shape[d] <= 0 || p.shape[d] > (int64_t(1) << 31))
        return bad("parameter '%s' has invalid dimension %" PRId64, p.name,
                   p.shape[d]);
    if (numel(p) > (int64_t(1) << 36))
      return bad("parameter '%s' has %" PRId64 " elements, too many", p.name,
                 numel(p));
    if (p.init != TRX_INIT_NORMAL && p.init != TRX_INIT_ZEROS &&
        p.init != TRX_INIT_ONES)
      return bad("parameter '%s' has unknown init %" PRId32
                 " (0 normal, 1 zeros, 2 ones)",
                 p.name, p.init);
    if (!std::isfinite(p.init_std) || p.init_std < 0)
      return bad("parameter '%s' has invalid init_std %g", p.name,
                 double(p.init_std));
    if (padded(p)) {
      for (int32_t d = 0; d < 2; ++d)
        if (d < p.rank ? p.valid_shape[d] < 1 || p.valid_shape[d] > p.shape[d]
                       : p.valid_shape[d] != 0)
          return bad("parameter '%s' has valid shape [%" PRId64 ", %" PRId64
                     "], not a leading block of its shape",
                     p.name, p.valid_shape[0], p.valid_shape[1]);
      if (p.ckpt_name || p.ckpt_slices)
        return bad("parameter '%s' is padded and shares a checkpoint tensor",
                   p.name);
    }
  }
  if (m->micro_batch <= 0 || m->global_batch <= 0 || m->seq <= 0 ||
      m->vocab <= 0)
    return bad("model '%s' has invalid sizes micro_batch %" PRId64
               ", global_batch %" PRId64 ", seq %" PRId64 ", vocab %" PRId64,
               m->model_name, m->micro_batch, m->global_batch, m->seq,
               m->vocab);
  if (m->micro_batch > (int64_t(1) << 20) || m->seq > (int64_t(1) << 24) ||
      m->micro_batch * m->seq > (int64_t(1) << 30))
    return bad("model '%s' has a too large batch %" PRId64 "x%" PRId64,
               m->model_name, m->micro_batch, m->seq);
  if (!std::isfinite(m->lr) || m->lr < 0)
    return bad("model '%s' has invalid lr %g", m->model_name, double(m->lr));
  if (!m->forward_backward || !m->optimizer_step)
    return bad("model '%s' has no %s entry point", m->model_name,
               m->forward_backward ? "optimizer_step" : "forward_backward");
  return true;
#undef bad
}

//===----------------------------------------------------------------------===//
// The run
//===----------------------------------------------------------------------===//

/// Everything a run owns; released in the destructor on every path.
/// The tensors checkpoints hold. Parameters sharing a checkpoint name are
/// concatenated along their last dimension, in parameter order (see
/// trx_param_desc::ckpt_name); a parameter with ckpt_transposed is held
/// transposed, one with ckpt_slices as that many tensors (a slice of its
/// rows each); every other parameter is its own tensor and is read and
/// written in place.
struct CheckpointLayout {
  struct Group {
    std::string name;
    int32_t rank = 0;
    int64_t rows = 1, cols = 0; // rows x cols, cols = the concatenated dim
    std::vector<int64_t> members;
    std::vector<float> packed[3]; // parameter, exp_avg, exp_avg_sq
    bool transposed = false;      // held as cols x rows (one member)
    int64_t slice = -1;           // rows [slice*rows, ...) of the member
    // The member's row length (one member): more than cols for a padded
    // parameter whose columns are padded (trx_param_desc::valid_shape).
    int64_t stride = 0;
  };
  std::vector<Group> groups;
  std::vector<trx_tensor> specs; // one per group; data = the parameter data

  /// Builds the groups; false with a message if members disagree in shape.
  bool build(const trx_model_desc *m, std::string &msg) {
    std::map<std::string, size_t> index;
    for (int64_t i = 0; i < m->num_params; ++i) {
      const trx_param_desc &p = m->params[i];
      std::string name = p.ckpt_name ? p.ckpt_name : p.name;
      int64_t cols = p.shape[p.rank - 1];
      int64_t rows = p.rank == 2 ? p.shape[0] : 1;
      if (p.ckpt_slices != 0) {
        // Each slice its own tensor, named with its index for the '*'.
        size_t star = name.find('*');
        if (p.rank != 2 || p.ckpt_slices < 0 || rows % p.ckpt_slices != 0 ||
            star == std::string::npos) {
          msg = "parameter '" + std::string(p.name) +
                "': " + std::to_string(p.ckpt_slices) +
                " checkpoint slices of its rows, named by a '*' in '" + name +
                "'";
          return false;
        }
        for (int64_t s = 0; s < p.ckpt_slices; ++s) {
          std::string sliceName =
              name.substr(0, star) + std::to_string(s) + name.substr(star + 1);
          if (!index.emplace(sliceName, groups.size()).second) {
            msg = "checkpoint tensor '" + sliceName + "' named twice";
            return false;
          }
          groups.push_back(
              Group{sliceName, 2, rows / p.ckpt_slices, cols, {i}, {}});
          groups.back().transposed = p.ckpt_transposed != 0;
          groups.back().slice = s;
        }
        continue;
      }
      auto [it, fresh] = index.emplace(name, groups.size());
      if (padded(p)) {
        // The leading block only: its rows (a prefix of the parameter's
        // array) or, with padded columns, a packed copy.
        if (!fresh) {
          msg = "parameter '" + std::string(p.name) +
                "': a padded parameter is its own checkpoint tensor";
          return false;
        }
        groups.push_back(Group{name,
                               p.rank,
                               p.rank == 2 ? p.valid_shape[0] : 1,
                               p.valid_shape[p.rank - 1],
                               {i},
                               {}});
        groups.back().transposed = p.ckpt_transposed != 0;
        groups.back().stride = cols;
        continue;
      }
      if (p.ckpt_transposed && (p.rank != 2 || !fresh)) {
        msg = "parameter '" + std::string(p.name) +
              "': a transposed checkpoint tensor is a 2-D parameter's own";
        return false;
      }
      if (fresh) {
        groups.push_back(Group{name, p.rank, rows, 0, {}, {}});
        groups.back().transposed = p.ckpt_transposed != 0;
      } else if (groups[it->second].transposed ||
                 groups[it->second].rank != p.rank ||
                 groups[it->second].rows != rows) {
        msg = "parameter '" + std::string(p.name) +
              "' cannot join checkpoint "
              "tensor '" +
              name + "': its leading dimensions differ";
        return false;
      }
      Group &g = groups[it->second];
      g.cols += cols;
      g.members.push_back(i);
    }
    return true;
  }
  /// Whether the checkpoint tensor is a packed copy (concatenated or
  /// transposed) rather than the parameter's own array.
  bool packed(const Group &g) const {
    return g.members.size() > 1 || g.transposed || g.slice >= 0 ||
           (g.stride != 0 && g.stride != g.cols);
  }

  /// Points the specs at the parameters (single members) or at the packed
  /// buffers (fused groups), allocating those. `params` are host copies.
  void bind(const std::vector<float *> &params) {
    specs.clear();
    for (Group &g : groups) {
      if (packed(g))
        for (auto &buf : g.packed)
          buf.assign(size_t(g.rows * g.cols), 0.0f);
      trx_tensor t{};
      t.name = g.name.c_str();
      t.dtype = TRX_F32;
      t.rank = g.rank;
      t.shape[0] = g.rank == 2 ? (g.transposed ? g.cols : g.rows) : g.cols;
      t.shape[1] = g.rank == 2 ? (g.transposed ? g.rows : g.cols) : 0;
      t.data = packed(g) ? g.packed[0].data() : params[size_t(g.members[0])];
      specs.push_back(t);
    }
  }
  /// Copies (pack) or splits (unpack) buffers of `kind` between the
  /// per-parameter arrays and the fused tensors.
  void transfer(const trx_model_desc *m, std::vector<float *> &perParam,
                int kind, bool pack) {
    for (Group &g : groups) {
      if (!this->packed(g))
        continue;
      float *packed = g.packed[kind].data();
      if (g.members.size() == 1) {
        // One member: a slice of its rows, its leading block (padded), or
        // either transposed; its rows are `stride` apart.
        int64_t stride = g.stride ? g.stride : g.cols;
        float *own = perParam[size_t(g.members[0])] +
                     std::max<int64_t>(g.slice, 0) * g.rows * stride;
        for (int64_t r = 0; r < g.rows; ++r) {
          float *row = own + r * stride;
          if (!g.transposed) {
            float *slot = packed + r * g.cols;
            if (pack)
              std::copy(row, row + g.cols, slot);
            else
              std::copy(slot, slot + g.cols, row);
            continue;
          }
          for (int64_t c = 0; c < g.cols; ++c) {
            if (pack)
              packed[c * g.rows + r] = row[c];
            else
              row[c] = packed[c * g.rows + r];
          }
        }
        continue;
      }
      for (int64_t r = 0; r < g.rows; ++r) {
        int64_t offset = 0;
        for (int64_t i : g.members) {
          const trx_param_desc &p = m->params[i];
          int64_t cols = p.shape[p.rank - 1];
          float *row = perParam[size_t(i)] + r * cols;
          float *slot = packed + r * g.cols + offset;
          if (pack)
            std::copy(row, row + cols, slot);
          else
            std::copy(slot, slot + cols, row);
          offset += cols;
        }
      }
    }
  }
  /// Frees the packed buffers (after a checkpoint or a load).
  void release() {
    for (Group &g : groups)
      for (auto &buf : g.packed)
        std::vector<float>().swap(buf);
    specs.clear();
  }
  /// The data pointers of `kind` per checkpoint tensor.
  std::vector<float *> pointers(std::vector<float *> &perParam, int kind) {
    std::vector<float *> out;
    for (Group &g : groups)
      out.push_back(packed(g) ? g.packed[kind].data()
                              : perParam[size_t(g.members[0])]);
    return out;
  }
};

/// The mesh axis of `role` in `model`'s mesh, or -1 (defined below).
int32_t meshAxisWithRole(const trx_model_desc *model, trx_axis_role role);

struct Run {
  const trx_model_desc *model = nullptr;
  trx_train_args args{};
  std::string dataName;
  // The run this process continues, as its checkpoints record it: an id
  // drawn when a run starts from step 0 (or from another run's checkpoint
  // with --resume-from-other) and kept by --resume, and where the run
  // started: its first step and the loader batches drawn before it.
  std::string runId;
  int64_t runStartStep = 0;
  uint64_t runStartBatch = 0;
  trx_loader *train = nullptr;
  trx_loader *val = nullptr;
  trx_logger *logger = nullptr;
  // The state buffers, per parameter: the parameter and its gradient in
  // the parameter's dtype (f32 or bf16: ParamLayout::elementSize), the
  // moments f32, and a bf16 parameter's f32 master copy (nullptr for an
  // f32 parameter). nullptr too where this rank's pipeline stage does not
  // hold the parameter.
  std::vector<void *> params, grads;
  std::vector<float *> expAvg, expAvgSq, masters;
  // Where each parameter's pieces live on this rank (tensor-parallel
  // blocks, ZeRO chunks); `distributed` when any is not whole.
  std::vector<ParamLayout> layouts;
  bool distributed = false;
  // Host copies of the whole f32 tensors of parameter (a bf16 parameter's
  // master copy), exp_avg and exp_avg_sq that initialization and
  // checkpoints read and write (copied from this rank's buffers, or
  // assembled by gatherWhole, and back): made by hostWhole when needed and
  // freed by releaseWhole.
  std::vector<float *> whole[3];
  std::vector<std::vector<float>> wholeStore[3];
  CheckpointLayout layout; // what checkpoints, --save-init, --init-from hold
  // One trx_alloc block for a call's tokens: inputs at `tokens`, targets
  // at `tokens + targetOffset` (256-byte aligned), filled from hostTokens
  // (the same layout) with one copy per call.
  int32_t *tokens = nullptr;
  int32_t *inputs = nullptr;
  int32_t *targets = nullptr;
  int64_t targetOffset = 0;
  std::vector<int32_t> hostTokens;
  // The step's scalars on the device: [loss_acc, grad_norm x kNormSlots].
  // Each optimizer step writes its gradient norm into the next slot, so
  // that a read (every logged step, and at least every kNormSlots steps)
  // sees the norm of every step since the last one: a step whose gradients
  // were not finite (it updated nothing, see triax.adamw) stops the run at
  // the next read even when later steps' norms are finite.
  static constexpr int64_t kNormSlots = 64;
  // After the norms: the mixture-of-experts counters the kernels add to
  // (trx_moe_counters: dropped choices, all choices), and their sums over
  // the reads since the last logged step (every rank's, after a read).
  static constexpr int64_t kMoESlot = 1 + kNormSlots;
  float *scalars = nullptr;
  double moeCounts[TRX_MOE_NCOUNTERS] = {0, 0};
  int64_t normsPending = 0; // slots written since the last read
  bool bound = false;
  float lrMax = 0;
  // Data parallelism: this rank's position among the ranks that train on
  // different sequences (the data axis of the mesh, and the expert axis:
  // expert-parallel ranks take their own sequences too), their number, and
  // those axes' indices (dataAxes[0..numDataAxes)).
  int64_t dpRank = 0, dpSize = 1;
  int32_t dataAxes[2] = {-1, -1};
  int32_t numDataAxes = 0;
  // Pipeline parallelism: the pipeline axis (-1 without one) and the
  // micro-batches one forward_backward call takes (1 without a pipeline).
  int32_t ppAxis = -1;
  int64_t callMicroBatches = 1;
  bool leader = true; // world rank 0: logs, writes checkpoints
  std::vector<int32_t> skipInputs, skipTargets; // other dp ranks' batches

  ~Run() {
    trx_moe_counters_bind(nullptr);
    if (bound)
      trx_state_bind(0, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
                     nullptr, 0);
    for (auto *v : {&params, &grads})
      for (void *p : *v)
        trx_free(p);
    for (auto *v : {&expAvg, &expAvgSq, &masters})
      for (float *p : *v)
        trx_free(p);
    trx_free(tokens);
    trx_free(scalars);
    trx_loader_close(train);
    trx_loader_close(val);
    trx_logger_close(logger);
  }

  int64_t n() const { return model->num_params; }
  int64_t tokensPerStep() const { return model->micro_batch * model->seq; }
  /// Zeroes the gradient buffers on the device, in stream order after the
  /// last optimizer step's kernels (which read them): no host wait.
  void zeroGrads() {
    for (int64_t i = 0; i < n(); ++i)
      if (size_t bytes = layouts[size_t(i)].allocBytes(TRX_STATE_GRAD))
        trx_device_memset(grads[size_t(i)], 0, bytes);
  }
  bool isBf16(int64_t i) const { return layouts[size_t(i)].dtype == TRX_BF16; }
  /// The f32 buffer (trx_state_kind, and the buffer) of parameter i that
  /// holds the whole tensors' `kind` (0 parameter, 1 exp_avg, 2
  /// exp_avg_sq): a bf16 parameter's master copy for 0.
  int f32Kind(int kind, int64_t i) const {
    return kind == 0 && isBf16(i) ? TRX_STATE_MASTER : kind;
  }
  float *f32Buffer(int kind, int64_t i) const {
    switch (f32Kind(kind, i)) {
    case TRX_STATE_PARAM:
      return static_cast<float *>(params[size_t(i)]);
    case TRX_STATE_EXP_AVG:
      return expAvg[size_t(i)];
    case TRX_STATE_EXP_AVG_SQ:
      return expAvgSq[size_t(i)];
    default:
      return masters[size_t(i)];
    }
  }
  /// Allocates the host copies of the whole tensors of `kind` (zeros) if
  /// they are not there, and points the checkpoint layout at the
  /// parameters'.
  void hostWhole(int kind) {
    if (whole[kind].empty())
      for (int64_t i = 0; i < n(); ++i) {
        wholeStore[kind].emplace_back(size_t(numel(model->params[i])), 0.0f);
        whole[kind].push_back(wholeStore[kind].back().data());
      }
    if (kind == 0)
      layout.bind(whole[0]);
  }
  /// Frees the host copies (they are only needed while initializing and
  /// checkpointing).
  void releaseWhole() {
    for (int kind = 0; kind < 3; ++kind) {
      whole[kind].clear();
      std::vector<std::vector<float>>().swap(wholeStore[kind]);
    }
    layout.release();
  }
  /// Assembles the whole tensors of `kind` (0 parameter, 1 exp_avg, 2
  /// exp_avg_sq; a bf16 parameter's parameter is its f32 master copy) in
  /// their host copies from the ranks' pieces: collective, every rank calls
  /// it.
  void gather(int kind) {
    hostWhole(kind);
    for (int64_t i = 0; i < n(); ++i) {
      if (distributed)
        gatherWhole(layouts[size_t(i)], f32Kind(kind, i), f32Buffer(kind, i),
                    whole[kind][size_t(i)]);
      else
        trx_copy_to_host(whole[kind][size_t(i)], f32Buffer(kind, i),
                         size_t(numel(model->params[i])) * sizeof(float));
    }
  }
  /// Copies this rank's pieces of the whole tensors of `kind` (host
  /// copies) into its buffers; for a bf16 parameter's parameter, into its
  /// master copy and, rounded to nearest even, into its bf16 parameter
  /// buffer (no communication either).
  void scatter(int kind) {
    for (int64_t i = 0; i < n(); ++i) {
      const ParamLayout &l = layouts[size_t(i)];
      const float *w = whole[kind][size_t(i)];
      if (distributed)
        scatterWhole(l, f32Kind(kind, i), w, f32Buffer(kind, i));
      else
        trx_copy_to_device(f32Buffer(kind, i), w,
                           size_t(numel(model->params[i])) * sizeof(float));
      if (kind == 0 && isBf16(i))
        scatterWhole(l, TRX_STATE_PARAM, w,
                     static_cast<uint16_t *>(params[size_t(i)]));
    }
  }
  /// Copies the host batch (hostTokens) into the device token buffers: one
  /// copy, queued behind the last call's kernels that read them.
  void uploadTokens() {
    trx_copy_to_device(
        tokens, hostTokens.data(),
        size_t(targetOffset + callMicroBatches * tokensPerStep()) *
            sizeof(int32_t));
  }
  /// Reads loss_acc and the pending gradient norms into `out` (one copy; a
  /// host synchronization on the GPU) and frees the slots. Returns the
  /// number of norms read (out[1..]).
  int64_t readScalars(float out[1 + kNormSlots]) {
    int64_t norms = normsPending;
    // (A MoE model's counters come back in the same copy.)
    if (model->has_moe)
      collectMoE(out);
    else
      trx_copy_to_host(out, scalars, size_t(1 + norms) * sizeof(float));
    normsPending = 0;
    return norms;
  }
  /// Where the next optimizer step writes its gradient norm.
  float *nextNormSlot() { return scalars + 1 + normsPending++; }
  /// Zeroes the MoE counters on the device (stream-ordered).
  void zeroMoE() {
    trx_device_memset(scalars + kMoESlot, 0, TRX_MOE_NCOUNTERS * sizeof(float));
  }
  /// Adds the MoE counters to moeCounts and zeroes them (a copy: a host
  /// synchronization on the GPU, as readScalars). Collective: the counts
  /// are summed over the ranks that route different tokens or layers,
  /// every axis but the tensor-parallel one (its members route the same
  /// tokens alike). `scalarsOut`, when given (1 + kNormSlots floats), gets
  /// the loss and the norms of the same copy.
  void collectMoE(float *scalarsOut = nullptr) {
    float all[kMoESlot + TRX_MOE_NCOUNTERS];
    trx_copy_to_host(all, scalars, sizeof(all));
    if (scalarsOut)
      std::copy(all, all + kMoESlot, scalarsOut);
    float *counts = all + kMoESlot;
    zeroMoE();
    if (trx_dist_world_size() > 1) {
      const int32_t tpAxis = meshAxisWithRole(model, TRX_AXIS_TENSOR);
      std::vector<int32_t> axes;
      for (int32_t i = 0; i < trx_dist_num_axes(); ++i)
        if (i != tpAxis)
          axes.push_back(i);
      if (!axes.empty())
        trx_all_reduce(counts, TRX_MOE_NCOUNTERS, TRX_REDUCE_SUM, axes.data(),
                       int32_t(axes.size()));
    }
    for (int i = 0; i < TRX_MOE_NCOUNTERS; ++i)
      moeCounts[i] += double(counts[i]);
  }

  int computeLayouts();

  int openData();
  int allocate();
  int nextCall();
  int loadBatch(trx_loader *from);
  int initialize(int64_t &startStep, std::string &source);
  int resume(const char *stepDir, int64_t &startStep);
  void initFromSeed();
  int saveInit(const std::string &source);
  int checkpoint(int64_t step, float loss);
  float evaluate(int &rc);
  int gradcheck(int64_t samples, float tol);
  std::string extraJson() const;
  /// Whether checkpoints hold some weight transposed (ckpt_transposed).
  bool transposedCheckpoint() const {
    for (int64_t i = 0; i < model->num_params; ++i)
      if (model->params[i].ckpt_transposed)
        return true;
    return false;
  }
};

/// Checks the compiled backward against central finite differences of the
/// compiled forward on the first batch. Per parameter tensor it compares a
/// directional derivative: with g the tensor's gradient and r a fixed
/// pseudo-random +-1 vector, u = (g/|g| + r/|r|) normalized (u = r/|r| when
/// g = 0), the finite difference (L(p + h u) - L(p - h u)) / 2h against
/// g . u, with h = 1e-2 * max(1, rms(p)). Mixing g and r checks the
/// gradient's magnitude and, through r, its direction; a whole-tensor
/// direction keeps the signal well above f32 rounding of the loss even
/// where single elements have gradients near 1e-5 (attention at init).
/// It passes when the relative error |fd - g.u| / |g.u| is below `tol`, or
/// when the absolute error is below 2e-5, the rounding floor of an f32 loss
/// (~5 * 6e-8) divided by 2h: below it a finite difference cannot tell
/// (a key bias's gradient is exactly zero under softmax; its computed |g|
/// is ~1e-11). `samples` > 1 repeats the check with that many r.
///
/// The host works on copies: each tensor's parameter and gradient are
/// copied to the host once, each perturbed parameter is copied to the
/// device before its forward, and the saved one back after. Every
/// parameter is f32 (trainMain refuses a model with a bf16 one).
int Run::gradcheck(int64_t samples, float tol) {
  if (loadBatch(train) != 0)
    return 1;
  zeroGrads();
  trx_set_first_micro_batch(1); // loss_acc = this call's loss
  model->forward_backward(inputs, targets, scalars);
  float scalarsHost[1 + kNormSlots];
  readScalars(scalarsHost);
  const float loss = scalarsHost[0];
  printf("gradcheck: loss %.6f, %" PRId64 " directions per parameter, "
         "tolerance %.1e\n",
         double(loss), samples, double(tol));
  constexpr double kNoiseFloor = 2e-5;
  int failures = 0;
  double worst = 0;
  for (int64_t i = 0; i < n(); ++i) {
    const trx_param_desc &p = model->params[i];
    const int64_t count = numel(p);
    const size_t bytes = size_t(count) * sizeof(float);
    std::vector<float> saved(static_cast<size_t>(count)), w(saved.size()),
        gCopy(saved.size());
    trx_copy_to_host(saved.data(), params[size_t(i)], bytes);
    trx_copy_to_host(gCopy.data(), grads[size_t(i)], bytes);
    const float *g = gCopy.data();
    double gNorm = 0, pSq = 0;
    for (int64_t k = 0; k < count; ++k) {
      gNorm += double(g[k]) * double(g[k]);
      pSq += double(saved[size_t(k)]) * double(saved[size_t(k)]);
    }
    gNorm = std::sqrt(gNorm);
    double h = 1e-2 * std::max(1.0, std::sqrt(pSq / double(count)));
    double tensorWorst = 0, tensorAbs = 0;
    bool ok = true;
    for (int64_t trial = 0; trial < samples; ++trial) {
      uint64_t state =
          0x9E3779B97F4A7C15ULL * uint64_t(i + 1) + uint64_t(trial);
      std::vector<double> u(static_cast<size_t>(count));
      double uNorm = 0;
      for (int64_t k = 0; k < count; ++k) {
        double r = (splitmix64Next(state) >> 63) ? 1.0 : -1.0;
        u[size_t(k)] = r / std::sqrt(double(count)) +
                       (gNorm > 0 ? double(g[k]) / gNorm : 0.0);
        uNorm += u[size_t(k)] * u[size_t(k)];
      }
      uNorm = std::sqrt(uNorm);
      double expected = 0;
      for (int64_t k = 0; k < count; ++k) {
        u[size_t(k)] /= uNorm;
        expected += double(g[k]) * u[size_t(k)];
      }
      for (int64_t k = 0; k < count; ++k)
        w[size_t(k)] = float(double(saved[size_t(k)]) + h * u[size_t(k)]);
      trx_copy_to_device(params[size_t(i)], w.data(), bytes);
      double plus = model->forward(inputs, targets);
      for (int64_t k = 0; k < count; ++k)
        w[size_t(k)] = float(double(saved[size_t(k)]) - h * u[size_t(k)]);
      trx_copy_to_device(params[size_t(i)], w.data(), bytes);
      double minus = model->forward(inputs, targets);
      trx_copy_to_device(params[size_t(i)], saved.data(), bytes);
      double fd = (plus - minus) / (2.0 * h);
      double absErr = std::fabs(fd - expected);
      double err = expected != 0 ? absErr / std::fabs(expected) : absErr;
      ok &= err < double(tol) || absErr < kNoiseFloor;
      tensorWorst = std::max(tensorWorst, err);
      tensorAbs = std::max(tensorAbs, absErr);
    }
    if (tensorAbs >= kNoiseFloor)
      worst = std::max(worst, tensorWorst);
    failures += !ok;
    printf("gradcheck %-40s |g| %.3e  rel error %.3e  abs error %.1e  %s\n",
           p.name, gNorm, tensorWorst, tensorAbs,
           !ok                         ? "FAIL"
           : tensorWorst < double(tol) ? "ok"
                                       : "ok (noise floor)");
  }
  printf("gradcheck: %d of %" PRId64 " tensors over tolerance, worst "
         "relative error above the noise floor %.3e\n",
         failures, n(), worst);
  return failures ? 1 : 0;
}

/// The next micro-batch of this rank. The loader reads the data in one
/// sequential order; dp rank r of R keeps batch r of every R consecutive
/// ones, so micro-batch k of optimizer step s (from 0, accum micro-batches
/// per rank and step) is global batch (s*accum + k)*R + r, and the dp ranks
/// together see exactly the batches one rank with R*accum micro-batches
/// per step sees. Every rank reads all R batches, so the loader position
/// (the one checkpoints save) is the same on every rank.
///
/// A pipeline's call takes several micro-batches stacked: its
/// callMicroBatches micro-batches fill the call's token buffers in order.
/// The loader writes the host copy; one trx_copy_to_device per call moves
/// it to the device token buffers (queued behind the last call's kernels,
/// which may still read them).
int Run::nextCall() {
  int32_t *hostInputs = hostTokens.data();
  int32_t *hostTargets = hostTokens.data() + targetOffset;
  for (int64_t slot = 0; slot < callMicroBatches; ++slot) {
    const int64_t offset = slot * tokensPerStep();
    for (int64_t j = 0; j < dpSize; ++j) {
      bool mine = j == dpRank;
      if (!mine && skipInputs.empty()) {
        skipInputs.resize(size_t(tokensPerStep()));
        skipTargets.resize(size_t(tokensPerStep()));
      }
      if (trx_loader_next(train, mine ? hostInputs + offset : skipInputs.data(),
                          mine ? hostTargets + offset : skipTargets.data()) !=
          TRX_OK) {
        printError("%s: %s", dataName.c_str(), trx_last_error());
        return 1;
      }
    }
  }
  uploadTokens();
  return 0;
}

/// The next batch of `from` (one micro-batch, this rank's only) into the
/// token buffers: evaluation and --gradcheck.
int Run::loadBatch(trx_loader *from) {
  if (trx_loader_next(from, hostTokens.data(),
                      hostTokens.data() + targetOffset) != TRX_OK) {
    printError("%s: %s", from == train ? dataName.c_str() : args.val_data,
               trx_last_error());
    return 1;
  }
  uploadTokens();
  return 0;
}

int Run::openData() {
  char err[1024];
  const int64_t B = model->micro_batch, T = model->seq;
  if (args.data) {
    dataName = args.data;
    train = trx_loader_open(args.data, B, T, args.shuffle, args.seed, err,
                            sizeof(err));
  } else {
    dataName = kBuiltinCorpus;
    if (model->vocab < kByteVocab) {
      printError("the built-in corpus has byte tokens (vocab %" PRId64
                 ") but model '%s' has vocab %" PRId64 "; pass --data FILE",
                 kByteVocab, model->model_name, model->vocab);
      return 1;
    }
    train = trx_loader_open_memory(
        trx_default_corpus, size_t(trx_default_corpus_size), kBuiltinCorpus, B,
        T, args.shuffle, args.seed, err, sizeof(err));
  }
  if (!train ||
      trx_loader_check_vocab(train, model->vocab, err, sizeof(err)) != TRX_OK) {
    printError("%s", err);
    return 1;
  }
  if (args.val_data) {
    val = trx_loader_open(args.val_data, B, T, 0, args.seed, err, sizeof(err));
    if (!val ||
        trx_loader_check_vocab(val, model->vocab, err, sizeof(err)) != TRX_OK) {
      printError("%s", err);
      return 1;
    }
  }
  return 0;
}

int Run::computeLayouts() {
  for (int64_t i = 0; i < n(); ++i) {
    ParamLayout l;
    std::string msg;
    if (!computeParamLayout(model->params[i], l, msg)) {
      printError("model '%s': %s", model->model_name, msg.c_str());
      return 1;
    }
    distributed |=
        !l.splits.empty() || l.zeroStage != 0 || !l.stageAxes.empty();
    layouts.push_back(std::move(l));
  }
  return 0;
}

int Run::allocate() {
  char err[512];
  for (int64_t i = 0; i < n(); ++i) {
    const trx_param_desc &p = model->params[i];
    // Each buffer in bytes of its element type (ParamLayout::elementSize):
    // the parameter and the gradient bf16 for a bf16 parameter, the rest
    // f32. A bf16 parameter's master copy counts with the optimizer's state
    // (the ZeRO paper's K = 12 bytes per element: master, two moments).
    void *buf[TRX_STATE_NKINDS] = {};
    const int category[TRX_STATE_NKINDS] = {TRX_MEM_PARAMS, TRX_MEM_OPTIM,
                                            TRX_MEM_OPTIM, TRX_MEM_GRADS,
                                            TRX_MEM_OPTIM};
    for (int kind = 0; kind < TRX_STATE_NKINDS; ++kind) {
      // Zero-filled at allocation (on the device on CUDA): the moments and
      // gradient buffers start at 0; the parameters (and master copies)
      // are written below. Nothing of a parameter another pipeline stage
      // holds, no master copy of an f32 parameter.
      size_t bytes = layouts[size_t(i)].allocBytes(kind);
      buf[kind] = bytes ? trx_alloc(bytes, category[kind]) : nullptr;
      if (bytes && !buf[kind]) {
        std::string why = trx_last_error();
        for (void *b : buf)
          trx_free(b);
        printError("parameter '%s': %s", p.name, why.c_str());
        return 1;
      }
    }
    params.push_back(buf[TRX_STATE_PARAM]);
    expAvg.push_back(static_cast<float *>(buf[TRX_STATE_EXP_AVG]));
    expAvgSq.push_back(static_cast<float *>(buf[TRX_STATE_EXP_AVG_SQ]));
    grads.push_back(buf[TRX_STATE_GRAD]);
    masters.push_back(static_cast<float *>(buf[TRX_STATE_MASTER]));
  }
  std::string msg;
  if (!layout.build(model, msg)) {
    printError("model '%s': %s", model->model_name, msg.c_str());
    return 1;
  }
  // The token buffers: inputs, then targets at the next 256-byte boundary,
  // in one block so that a call's batch is one copy.
  const int64_t callTokens = callMicroBatches * tokensPerStep();
  targetOffset = (callTokens + 63) / 64 * 64;
  hostTokens.assign(size_t(targetOffset + callTokens), 0);
  tokens = static_cast<int32_t *>(
      trx_alloc(hostTokens.size() * sizeof(int32_t), TRX_MEM_OTHER));
  scalars = static_cast<float *>(
      trx_alloc((kMoESlot + TRX_MOE_NCOUNTERS) * sizeof(float), TRX_MEM_OTHER));
  if (!tokens || !scalars) {
    printError("%s: %s", tokens ? "step scalars" : "token buffers",
               trx_last_error());
    return 1;
  }
  if (model->has_moe)
    zeroMoE();
  trx_moe_counters_bind(scalars + kMoESlot);
  inputs = tokens;
  targets = tokens + targetOffset;
  if (trx_state_bind(n(), model->params, params.data(), expAvg.data(),
                     expAvgSq.data(), grads.data(), masters.data(), err,
                     sizeof(err)) != TRX_OK) {
    printError("%s", err);
    return 1;
  }
  bound = true;
  return 0;
}

void Run::initFromSeed() {
  hostWhole(0);
  for (int64_t i = 0; i < n(); ++i) {
    const trx_param_desc &p = model->params[i];
    float *w = whole[0][size_t(i)];
    int64_t count = numel(p);
    // A padded parameter: its leading block drawn as the unpadded
    // parameter would be (the same values), placed row by row; the padding
    // stays zero (hostWhole's).
    std::vector<float> block;
    if (padded(p)) {
      count = p.valid_shape[0] * (p.rank == 2 ? p.valid_shape[1] : 1);
      block.resize(size_t(count));
      w = block.data();
    }
    switch (p.init) {
    case TRX_INIT_NORMAL:
      trx_init_normal(w, count, p.init_std, args.seed, i);
      break;
    case TRX_INIT_ZEROS:
      std::memset(w, 0, size_t(count) * sizeof(float));
      break;
    default:
      for (int64_t k = 0; k < count; ++k)
        w[k] = 1.0f;
      break;
    }
    if (padded(p)) {
      int64_t rows = p.rank == 2 ? p.valid_shape[0] : 1;
      int64_t cols = p.valid_shape[p.rank - 1];
      for (int64_t r = 0; r < rows; ++r)
        std::copy(block.data() + r * cols, block.data() + (r + 1) * cols,
                  whole[0][size_t(i)] + r * p.shape[p.rank - 1]);
    }
  }
  scatter(0);
  releaseWhole();
}

std::string Run::extraJson() const {
  std::string j = "{\"model\":";
  json::appendString(j, model->model_name);
  j += ",\"micro_batch\":\"" + std::to_string(model->micro_batch) + "\"";
  j += ",\"seq\":\"" + std::to_string(model->seq) + "\"";
  j += ",\"data\":";
  json::appendString(j, dataName);
  j += ",\"global_batch\":\"" + std::to_string(model->global_batch) + "\"";
  j += ",\"run_id\":";
  json::appendString(j, runId);
  j += ",\"run_start_step\":\"" + std::to_string(runStartStep) + "\"";
  j += ",\"run_start_batch\":\"" + std::to_string(runStartBatch) + "\"";
  if (transposedCheckpoint())
    j += ",\"linear_layout\":\"out_in\"";
  j += "}";
  return j;
}

/// A fresh run id: 16 hex digits from the kernel's random source (the
/// clock and pid where there is none), world rank 0's on every rank.
static std::string newRunId() {
  uint64_t x = 0;
  if (FILE *f = std::fopen("/dev/urandom", "rb")) {
    if (std::fread(&x, sizeof(x), 1, f) != 1)
      x = 0;
    std::fclose(f);
  }
  if (x == 0)
    x = uint64_t(trx_now_ms() * 1e3) ^ (uint64_t(getpid()) << 32);
  if (trx_dist_initialized() && trx_dist_world_size() > 1) {
    std::vector<int32_t> axes(static_cast<size_t>(trx_dist_num_axes()));
    for (size_t i = 0; i < axes.size(); ++i)
      axes[i] = int32_t(i);
    int32_t words[2];
    std::memcpy(words, &x, sizeof(x));
    trx_broadcast_i32(words, 2, 0, axes.data(), int32_t(axes.size()));
    std::memcpy(&x, words, sizeof(x));
  }
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016" PRIx64, x);
  return buf;
}

/// The unsigned integer of a checkpoint's extra string `key` (false when
/// missing or not a plain decimal number).
static bool extraU64(const trx_ckpt *ck, const char *key, uint64_t &out) {
  const char *s = trx_ckpt_extra(ck, key);
  if (!s || !*s)
    return false;
  char *end = nullptr;
  errno = 0;
  unsigned long long v = std::strtoull(s, &end, 10);
  if (errno || *end || *s == '-')
    return false;
  out = uint64_t(v);
  return true;
}

int Run::resume(const char *stepDir, int64_t &startStep) {
  char err[1024];
  std::unique_ptr<trx_ckpt, void (*)(trx_ckpt *)> ck(
      trx_ckpt_open(stepDir, err, sizeof(err)), trx_ckpt_close);
  if (!ck) {
    printError("%s", err);
    return 1;
  }
  trx_ckpt_state st{};
  trx_ckpt_get_state(ck.get(), &st);
  // The run configuration: what decides which run this is (the model, the
  // batches, the data and the seed; not the lr schedule, which a run may
  // extend or change when it resumes). A checkpoint of another
  // configuration is another run's: refused unless --resume-from-other.
  const char *name = trx_ckpt_extra(ck.get(), "model");
  const char *mb = trx_ckpt_extra(ck.get(), "micro_batch");
  const char *sq = trx_ckpt_extra(ck.get(), "seq");
  const char *gb = trx_ckpt_extra(ck.get(), "global_batch");
  const char *data = trx_ckpt_extra(ck.get(), "data");
  const char *ckRun = trx_ckpt_extra(ck.get(), "run_id");
  const bool sameBatches = (!mb || std::to_string(model->micro_batch) == mb) &&
                           (!sq || std::to_string(model->seq) == sq);
  const bool sameData = !data || dataName == data;
  std::string diffs;
  auto differs = [&](const std::string &what) {
    diffs += (diffs.empty() ? "" : "; ") + what;
  };
  if (name && std::strcmp(name, model->model_name) != 0)
    differs(std::string("model '") + name + "' (this program trains '" +
            model->model_name + "')");
  if (!sameBatches)
    differs(std::string("batches of ") + (mb ? mb : "?") + "x" +
            (sq ? sq : "?") +
            " (this program: " + std::to_string(model->micro_batch) + "x" +
            std::to_string(model->seq) + ")");
  if (gb && std::to_string(model->global_batch) != gb)
    differs(std::string("a global batch of ") + gb +
            " (this program: " + std::to_string(model->global_batch) + ")");
  if (!sameData)
    differs(std::string("data ") + data + " (this run: " + dataName + ")");
  if (st.seed != args.seed)
    differs("seed " + std::to_string(st.seed) +
            " (this run: " + std::to_string(args.seed) + ")");
  const std::string other =
      ckRun ? std::string("run ") + ckRun : std::string("a run");
  if (!diffs.empty() && !args.resume_from_other) {
    printError("%s was written by %s of another configuration: %s; pass "
               "--resume-from-other to continue from it as a new run",
               stepDir, other.c_str(), diffs.c_str());
    return 1;
  }
  // Checkpoints of the LLaMA family written before its linear weights were
  // stored as nn.Linear's [out, in] hold [in, out]: a square weight would
  // load transposed without a word.
  const char *linearLayout = trx_ckpt_extra(ck.get(), "linear_layout");
  if (transposedCheckpoint() &&
      (!linearLayout || std::strcmp(linearLayout, "out_in") != 0)) {
    printError("%s holds this model's linear weights as [in, out] (written "
               "before Triax checkpointed them as nn.Linear's [out, in]); "
               "this program reads [out, in] and cannot resume from it",
               stepDir);
    return 1;
  }
  for (int kind = 0; kind < 3; ++kind)
    hostWhole(kind);
  std::vector<float *> p = layout.pointers(whole[0], 0);
  std::vector<float *> m = layout.pointers(whole[1], 1);
  std::vector<float *> v = layout.pointers(whole[2], 2);
  std::vector<void *> dst(p.begin(), p.end());
  if (trx_ckpt_load(ck.get(), int64_t(layout.specs.size()), layout.specs.data(),
                    dst.data(), m.data(), v.data(), err,
                    sizeof(err)) != TRX_OK) {
    printError("%s", err);
    return 1;
  }
  for (int kind = 0; kind < 3; ++kind) {
    layout.transfer(model, whole[kind], kind, /*pack=*/false);
    scatter(kind);
  }
  releaseWhole();
  // The loader's position. The checkpoint says where its run started and
  // how many micro-batches a step draws, so its loader state must be the
  // batch that many steps reach: anything else is a state.json edited or
  // written by another program (checked where the run records it). The
  // position carries over only to the same data in the same batches.
  const bool keepPosition = sameData && sameBatches;
  const int64_t nb = trx_loader_num_batches(train);
  const uint64_t epoch = st.loader_state >> 32;
  const uint64_t next = st.loader_state & 0xffffffffULL;
  const unsigned __int128 position =
      (unsigned __int128)epoch * uint64_t(nb) + next;
  uint64_t recordedStep = 0, recordedBatch = 0, gbCk = 0;
  const bool recorded = extraU64(ck.get(), "run_start_step", recordedStep) &&
                        extraU64(ck.get(), "run_start_batch", recordedBatch);
  if (keepPosition && recorded && extraU64(ck.get(), "global_batch", gbCk) &&
      model->micro_batch > 0 && recordedStep <= uint64_t(st.step)) {
    const unsigned __int128 drawn =
        (unsigned __int128)recordedBatch +
        (unsigned __int128)(uint64_t(st.step) - recordedStep) *
            (gbCk / uint64_t(model->micro_batch));
    if (position != drawn) {
      printError("%s: loader state %" PRIu64 " (epoch %" PRIu64
                 ", batch %" PRIu64 ") is not where %" PRId64
                 " steps of this run leave %s (epoch %" PRIu64
                 ", batch %" PRIu64 "): state.json was edited or the data "
                 "changed",
                 stepDir, st.loader_state, epoch, next, st.step,
                 dataName.c_str(), uint64_t(drawn / uint64_t(nb)),
                 uint64_t(drawn % uint64_t(nb)));
      return 1;
    }
  } else if (keepPosition &&
             epoch > uint64_t(st.step) *
                         uint64_t(std::max<int64_t>(model->global_batch, 1))) {
    // An older checkpoint without its run's record: at least no more
    // epochs than batches drawn.
    printError("%s: loader state %" PRIu64 " says epoch %" PRIu64
               " after %" PRId64 " steps: state.json was edited",
               stepDir, st.loader_state, epoch, st.step);
    return 1;
  }
  if (keepPosition && trx_loader_set_state(train, st.loader_state, err,
                                           sizeof(err)) != TRX_OK) {
    printError("%s: loader state does not fit %s: %s", stepDir,
               dataName.c_str(), err);
    return 1;
  }
  if (diffs.empty()) {
    // The same run, continued (an older checkpoint's run starts here).
    if (ckRun && *ckRun)
      runId = ckRun;
    runStartStep = recorded ? int64_t(recordedStep) : st.step;
    runStartBatch = recorded ? recordedBatch : uint64_t(position);
  } else {
    // --resume-from-other: a new run (a fresh id) that starts at the
    // checkpoint's step, on the checkpoint's loader position where the
    // data and batches are the same, else at the start of the data.
    runStartStep = st.step;
    runStartBatch = keepPosition ? uint64_t(position) : 0;
    printNote("--resume-from-other: continuing %s's %s (%s) as run %s%s",
              other.c_str(), stepDir, diffs.c_str(), runId.c_str(),
              keepPosition ? "" : ", from the start of the data");
  }
  if (st.total_steps != args.steps || st.lr_max != lrMax ||
      st.warmup != args.warmup || st.lr_schedule != args.lr_schedule ||
      st.min_lr_ratio != args.min_lr_ratio)
    printNote("%s was written by a run with a different lr schedule (steps "
              "%" PRId64 ", lr %g, warmup %" PRId64 ", %s, min-lr-ratio %g); "
              "this run uses steps %" PRId64 ", lr %g, warmup %" PRId64
              ", %s, min-lr-ratio %g",
              stepDir, st.total_steps, double(st.lr_max), st.warmup,
              st.lr_schedule == TRX_LR_CONSTANT ? "constant" : "cosine",
              double(st.min_lr_ratio), args.steps, double(lrMax), args.warmup,
              args.lr_schedule == TRX_LR_CONSTANT ? "constant" : "cosine",
              double(args.min_lr_ratio));
  startStep = st.step;
  return 0;
}

int Run::initialize(int64_t &startStep, std::string &source) {
  char err[1024];
  startStep = 0;
  runId = newRunId(); // --resume of this run's checkpoint takes its id
  if (args.resume) {
    char stepDir[4096];
    int rc = trx_ckpt_latest(args.ckpt_dir, stepDir, sizeof(stepDir), err,
                             sizeof(err));
    if (rc == TRX_OK) {
      // Say why a newer step directory was passed over (a writer killed
      // before it finished, files removed by hand).
      char skipped[2048];
      if (trx_ckpt_skipped(args.ckpt_dir, stepDir, skipped, sizeof(skipped)))
        printNote("--resume takes %s: the newer %s", stepDir, skipped);
      if (resume(stepDir, startStep) != 0)
        return 1;
      source = std::string("resumed from ") + stepDir + " (step " +
               std::to_string(startStep) + ")";
      return 0;
    }
    if (rc != TRX_ERR_NOT_FOUND) {
      printError("%s", err);
      return 1;
    }
    printNote("no checkpoint in %s yet; starting from step 0", args.ckpt_dir);
  } else if (args.ckpt_dir) {
    char stepDir[4096];
    if (trx_ckpt_latest(args.ckpt_dir, stepDir, sizeof(stepDir), nullptr, 0) ==
        TRX_OK)
      printNote("%s already holds checkpoints (latest %s); without --resume "
                "this run starts over and replaces them as it saves",
                args.ckpt_dir, stepDir);
  }
  if (args.init_from) {
    // A Triax file, or a Hugging Face checkpoint as it comes (hf_import.cpp).
    hostWhole(0);
    std::vector<float *> p = layout.pointers(whole[0], 0);
    std::vector<void *> dst(p.begin(), p.end());
    std::string problem = readHuggingFace(
        args.init_from, int64_t(layout.specs.size()), layout.specs.data(),
        dst.data(), args.explain_names && leader ? stdout : nullptr);
    if (!problem.empty()) {
      printError("%s", problem.c_str());
      return 1;
    }
    layout.transfer(model, whole[0], 0, /*pack=*/false);
    scatter(0);
    releaseWhole();
    source = std::string("loaded from ") + args.init_from;
    return 0;
  }
  initFromSeed();
  source = "seed " + std::to_string(args.seed);
  return 0;
}

/// "nan", "inf" or "-inf": a loss that stops the run.
static const char *nonFiniteName(float x) {
  return std::isnan(x) ? "nan" : (x > 0 ? "inf" : "-inf");
}

/// Whether `path` (the value of `flag`) can be written: not a directory,
/// in a directory that exists and is writable. Prints the error.
static bool checkOutputFile(const char *flag, const char *path) {
  struct stat st;
  if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
    printError("%s %s: is a directory", flag, path);
    return false;
  }
  std::string dir = dirName(path);
  if (stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    printError("%s %s: the directory %s does not exist", flag, path,
               dir.c_str());
    return false;
  }
  if (access(dir.c_str(), W_OK) != 0) {
    printError("%s %s: cannot write in %s", flag, path, dir.c_str());
    return false;
  }
  return true;
}

int Run::saveInit(const std::string &source) {
  char err[1024];
  std::string meta = "{\"format\":\"triax\",\"model\":";
  json::appendString(meta, model->model_name);
  meta += ",\"init\":";
  json::appendString(meta, source);
  meta += "}";
  gather(0);
  if (!leader) {
    releaseWhole();
    return 0;
  }
  layout.transfer(model, whole[0], 0, /*pack=*/true);
  int rc = trx_safetensors_write(args.save_init, int64_t(layout.specs.size()),
                                 layout.specs.data(), meta.c_str(), err,
                                 sizeof(err));
  releaseWhole();
  if (rc != TRX_OK) {
    printError("%s", err);
    return 1;
  }
  printf("wrote the initial parameters to %s\n", args.save_init);
  return 0;
}

int Run::checkpoint(int64_t step, float loss) {
  char err[1024];
  trx_ckpt_state st{};
  st.step = step;
  st.total_steps = args.steps;
  st.seed = args.seed;
  st.loader_state = trx_loader_state(train);
  st.rng_state = 0; // The loop draws no random numbers.
  st.lr_max = lrMax;
  st.min_lr_ratio = args.min_lr_ratio;
  st.warmup = args.warmup;
  st.lr_schedule = args.lr_schedule;
  st.loss = loss;
  for (int kind = 0; kind < 3; ++kind)
    gather(kind);
  if (!leader) {
    releaseWhole();
    return 0;
  }
  for (int kind = 0; kind < 3; ++kind)
    layout.transfer(model, whole[kind], kind, /*pack=*/true);
  std::vector<float *> mp = layout.pointers(whole[1], 1);
  std::vector<float *> vp = layout.pointers(whole[2], 2);
  std::vector<const float *> m(mp.begin(), mp.end());
  std::vector<const float *> v(vp.begin(), vp.end());
  // A GPT-2 checkpoint opens in transformers (from_pretrained) with its
  // config.json beside it.
  std::vector<std::pair<std::string, std::string>> files;
  if (model->hf_config)
    files.push_back({"config.json", model->hf_config});
  int rc = saveCheckpoint(args.ckpt_dir, &st, int64_t(layout.specs.size()),
                          layout.specs.data(), m.data(), v.data(),
                          extraJson().c_str(), files, err, sizeof(err));
  releaseWhole();
  if (rc != TRX_OK) {
    printError("%s", err);
    return 1;
  }
  if (args.log_every > 0)
    printf("step %5" PRId64 " | checkpoint %s/step-%08" PRId64 "\n", step,
           args.ckpt_dir, step);
  return 0;
}

/// Mean of forward() over the first min(--val-batches, batches in the file)
/// batches of the validation data, always the same ones.
float Run::evaluate(int &rc) {
  char err[512];
  rc = 0;
  if (trx_loader_set_state(val, 0, err, sizeof(err)) != TRX_OK) {
    printError("%s", err);
    rc = 1;
    return NAN;
  }
  int64_t nb = trx_loader_num_batches(val);
  if (nb > args.val_batches)
    nb = args.val_batches;
  // The training steps' MoE counts so far, kept; the evaluation's routes
  // are not training's and are zeroed after it.
  if (model->has_moe)
    collectMoE();
  double sum = 0;
  for (int64_t k = 0; k < nb; ++k) {
    if (loadBatch(val) != 0) {
      rc = 1;
      return NAN;
    }
    sum += double(model->forward(inputs, targets));
  }
  if (model->has_moe)
    zeroMoE();
  return float(sum / double(nb));
}

void printPeaks() {
  char buf[32];
  printf("peak memory:");
  for (int c = 0; c < TRX_MEM_NCAT; ++c)
    printf(" %s %s |", trx_mem_category_name(c),
           trx_format_mib(trx_mem_peak(c), buf, sizeof(buf)));
  printf(" total %s\n", trx_format_mib(trx_mem_peak_total(), buf, sizeof(buf)));
}

/// The exact peaks in bytes (-v), for tests and reports.
void printPeakBytes(FILE *out = stdout, const char *prefix = "") {
  std::string line = std::string(prefix) + "peak bytes:";
  for (int c = 0; c < TRX_MEM_NCAT; ++c)
    line += " " + std::string(trx_mem_category_name(c)) + " " +
            std::to_string(trx_mem_peak(c));
  fprintf(out, "%s\n", line.c_str());
}

/// The threads of one process: --threads, else OMP_NUM_THREADS, else the
/// CPUs it may run on shared among the ranks mpirun started on this machine
/// (torchrun likewise gives each of several processes one thread); 0 keeps
/// the default of the OpenMP runtime (or OpenBLAS's).
int64_t defaultThreads(int64_t requested) {
  if (requested > 0 || std::getenv("OMP_NUM_THREADS"))
    return requested;
  const char *local = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
  if (!local)
    local = std::getenv("MPI_LOCALNRANKS");
  int64_t ranks = local ? std::atoll(local) : 1;
  if (ranks <= 1)
    return 0;
  cpu_set_t set;
  int64_t cpus = sched_getaffinity(0, sizeof(set), &set) == 0
                     ? CPU_COUNT(&set)
                     : sysconf(_SC_NPROCESSORS_ONLN);
  return std::max<int64_t>(1, cpus / ranks);
}

/// The index in trx_dist's axes (the descriptor's order) of the mesh axis
/// with `role`; -1 without one, or without trx_dist (one device).
int32_t meshAxisWithRole(const trx_model_desc *model, trx_axis_role role) {
  for (int32_t i = 0; i < model->num_mesh_axes; ++i)
    if (model->mesh_axis_roles && model->mesh_axis_roles[i] == role)
      return trx_dist_axis_size(i) > 0 ? i : -1;
  return -1;
}

/// "1 rank per node", "2 ranks per node", "1 to 2 ranks per node".
std::string ranksPerNode() {
  int32_t lo = INT32_MAX, hi = 0;
  for (int32_t n = 0; n < trx_dist_num_nodes(); ++n) {
    lo = std::min(lo, trx_dist_node_size(n));
    hi = std::max(hi, trx_dist_node_size(n));
  }
  if (lo > hi)
    lo = hi;
  return (lo == hi ? std::to_string(hi)
                   : std::to_string(lo) + " to " + std::to_string(hi)) +
         (hi == 1 ? " rank per node" : " ranks per node");
}

/// "a", "a and b", "a, b and c".
std::string listWithAnd(const std::vector<int64_t> &v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i)
    s += (i == 0              ? ""
          : i + 1 == v.size() ? " and "
                              : ", ") +
         std::to_string(v[i]);
  return s;
}

/// trainMain's status when every rank found the same reason to stop (after
/// a barrier, rank 0's error printed): the job ends without an abort.
constexpr int kEveryRankStops = -1;

/// A placement problem found on every rank (`msg`, printed by rank 0 only:
/// the others pass ""): a warning, or under --strict-topology an error.
/// Returns false on every rank when the run must stop, after a barrier so
/// that rank 0's error is out before any rank ends the job.
bool placementProblem(const char *msg, const trx_train_args &a) {
  if (trx_dist_rank() == 0) {
    if (a.strict_topology)
      printError("%s (--strict-topology)", msg);
    else
      printWarning("%s. --strict-topology makes this an error", msg);
  }
  if (!a.strict_topology)
    return true;
  trx_dist_barrier();
  return false;
}

/// Tensor parallelism against the nodes (docs/launch.md): the
/// tensor-parallel all-reduces run in every layer and need the links
/// inside a node. When a tensor-parallel group's ranks are on more than one
/// node, rank 0 prints a warning, or under --strict-topology an error, for
/// the first such group (with the count of the others). Every rank computes
/// the same answer from the node map; returns false (on every rank, after
/// rank 0 has printed the error) when the run must stop.
bool checkTopology(const trx_model_desc *model, const trx_train_args &a) {
  if (!trx_dist_initialized() || trx_dist_world_size() <= 1)
    return true;
  const int32_t tpAxis = meshAxisWithRole(model, TRX_AXIS_TENSOR);
  if (tpAxis < 0 || trx_dist_axis_size(tpAxis) <= 1)
    return true;
  const int64_t tp = trx_dist_axis_size(tpAxis);
  // The members of a tensor-parallel group are `stride` ranks apart.
  int64_t stride = 1;
  for (int32_t i = tpAxis + 1; i < trx_dist_num_axes(); ++i)
    stride *= trx_dist_axis_size(i);
  const int world = trx_dist_world_size();
  int64_t groups = 0, spanning = 0;
  std::vector<int64_t> firstMembers, firstNodes;
  for (int64_t r = 0; r < world; ++r) {
    if ((r / stride) % tp != 0)
      continue; // not the group's first member
    ++groups;
    std::vector<int64_t> members, nodes;
    for (int64_t k = 0; k < tp; ++k) {
      members.push_back(r + k * stride);
      nodes.push_back(trx_dist_node_of(int32_t(r + k * stride)));
    }
    std::sort(nodes.begin(), nodes.end());
    nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
    if (nodes.size() > 1 && spanning++ == 0) {
      firstMembers = members;
      firstNodes = nodes;
    }
  }
  if (spanning == 0)
    return true;
  if (trx_dist_rank() == 0) {
    std::string ranks = stride == 1
                            ? std::to_string(firstMembers.front()) + "-" +
                                  std::to_string(firstMembers.back())
                            : listWithAnd(firstMembers);
    std::string others =
        spanning == 1 ? ""
        : spanning == groups
            ? "; all " + std::to_string(groups) + " groups span nodes"
            : "; " + std::to_string(spanning) + " of the " +
                  std::to_string(groups) + " groups span nodes";
    const char *axis = model->mesh_axis_names[tpAxis];
    char msg[2048];
    snprintf(msg, sizeof(msg),
             "the tensor-parallel group of ranks %s spans nodes %s (%s=%" PRId64
             " with %s%s); tensor parallelism's all-reduces belong inside a "
             "node (NVLink): %sstart consecutive ranks on one node (mpirun "
             "--map-by slot, srun --distribution=block) with a multiple of "
             "%s ranks per node, or lower %s",
             ranks.c_str(), listWithAnd(firstNodes).c_str(), axis, tp,
             ranksPerNode().c_str(), others.c_str(),
             stride == 1 ? "" : "put it innermost in the mesh, ", axis, axis);
    return placementProblem(msg, a);
  }
  return placementProblem("", a);
}

/// The plan against the nodes (docs/launch.md): a program compiled from
/// a plan (triaxc --plan ... --apply) records the GPUs per node it
/// assumed; its ranks are meant to fill nodes of that many in order (ranks
/// [k g, (k + 1) g) on node k). When the job's nodes differ, rank 0 warns
/// (an error under --strict-topology): the plan's choice and its estimates
/// (NVLink inside a node, the network between nodes) were made for other
/// nodes. Every rank computes the same answer; returns false when the run
/// must stop.
bool checkPlanNodes(const trx_model_desc *model, const trx_train_args &a) {
  const int64_t g = model->plan_gpus_per_node;
  if (g <= 0 || !trx_dist_initialized())
    return true;
  const int world = trx_dist_world_size();
  int firstOff = -1;
  for (int r = 0; r < world && firstOff < 0; ++r) {
    // Same plan node as rank 0 of its plan node, and a new node where the
    // plan starts one.
    int64_t leader = r / g * g;
    bool same = trx_dist_node_of(r) == trx_dist_node_of(int32_t(leader));
    bool apart =
        r % g != 0 || r == 0 || trx_dist_node_of(r) != trx_dist_node_of(r - 1);
    if (!same || !apart)
      firstOff = r;
  }
  if (firstOff < 0)
    return true;
  if (trx_dist_rank() == 0) {
    char msg[1024];
    snprintf(msg, sizeof(msg),
             "the plan this program was compiled from (triaxc --plan ... "
             "--apply) assumed %" PRId64 " GPUs per node, ranks %d-%" PRId64
             " on one node, but this job runs %s (rank %d is the first "
             "placed otherwise): the plan's choice and its communication "
             "estimates were made for other nodes; launch %" PRId64
             " ranks per node (docs/launch.md), or plan again for these "
             "nodes (--plan ...,gpus-per-node=%d)",
             g, 0, std::min<int64_t>(g, world) - 1, ranksPerNode().c_str(),
             firstOff, g, trx_dist_node_size(0));
    return placementProblem(msg, a);
  }
  return placementProblem("", a);
}

int trainMain(int argc, char **argv, const trx_model_desc *model) {
  const char *prog = "train";
  if (argc > 0 && argv && argv[0] && *argv[0]) {
    prog =
        std::strrchr(argv[0], '/') ? std::strrchr(argv[0], '/') + 1 : argv[0];
  }
  Run run;
  run.model = model;
  trx_train_args &a = run.args;
  char err[1024];
  if (trx_parse_train_args(argc, argv, &a, err, sizeof(err)) != TRX_OK) {
    printError("%s", err);
    fprintf(stderr, "run '%s --help' for the options\n", prog);
    return 2;
  }
  if (a.help) {
    trx_print_train_usage(stdout, prog);
    return 0;
  }
  // Before anything else runs: a CPU newer than OpenBLAS may need its
  // kernels named and the program started again (the note with -v).
  trx_blas_select_core(argv, a.verbose == 0);
  const char *blas = a.blas ? a.blas : std::getenv("TRIAX_BLAS");
  if (blas && *blas && trx_blas_load(blas, err, sizeof(err)) != TRX_OK) {
    printError("%s%s", a.blas ? "--blas " : "TRIAX_BLAS=", err);
    return 2;
  }
  std::string msg;
  if (!validateModel(model, msg)) {
    printError("%s", msg.c_str());
    return 1;
  }
  if (model->global_batch % model->micro_batch != 0) {
    printError("global_batch %" PRId64 " is not a multiple of micro_batch "
               "%" PRId64,
               model->global_batch, model->micro_batch);
    return 1;
  }
  if (a.gradcheck > 0 && !model->forward) {
    printError("model '%s' has no forward entry point; --gradcheck needs it",
               model->model_name);
    return 2;
  }
  // Finite differences of a bf16 forward drown in its rounding.
  for (int64_t i = 0; a.gradcheck > 0 && i < model->num_params; ++i)
    if (model->params[i].dtype == TRX_BF16) {
      printError("--gradcheck: model '%s' holds parameter '%s' in bf16, whose "
                 "rounding is above the finite differences; check the same "
                 "model built with triax-model --dtype f32",
                 model->model_name, model->params[i].name);
      return 1;
    }
  if (a.eval_every > 0 && !a.val_data) {
    printError("--eval-every requires --val-data");
    return 2;
  }
  if (a.val_data && !model->forward) {
    printError("model '%s' has no forward entry point; --val-data cannot be "
               "used",
               model->model_name);
    return 1;
  }
  if (a.stop_at > a.steps) {
    printError("--stop-at %" PRId64 " is after the last step (--steps %" PRId64
               ")",
               a.stop_at, a.steps);
    return 2;
  }
  run.lrMax = a.lr > 0 ? a.lr : model->lr;
  trx_blas_set_threads(int(defaultThreads(a.threads)));

  // The mesh the model was compiled for: one process per device (MPI; a
  // one-device mesh also runs without mpirun).
  if (model->num_mesh_axes < 0 || model->num_mesh_axes > TRX_DIST_MAX_AXES ||
      (model->num_mesh_axes > 0 &&
       (!model->mesh_axis_names || !model->mesh_axis_sizes))) {
    printError("model '%s': bad mesh description (%" PRId32 " axes)",
               model->model_name, model->num_mesh_axes);
    return 1;
  }
  // MPI starts for a mesh of several devices, or under mpirun (so that a
  // one-device binary started on several ranks is refused). A plain run of
  // a one-device mesh skips it: nothing to communicate, and many MPI
  // singletons starting at once on one machine can fail in OpenMPI's
  // session-directory setup.
  int64_t devices = 1;
  for (int32_t i = 0; i < model->num_mesh_axes; ++i)
    devices *= model->mesh_axis_sizes[i];
  bool underMpirun = std::getenv("OMPI_COMM_WORLD_SIZE") ||
                     std::getenv("PMI_SIZE") || std::getenv("PMIX_RANK");
  if ((devices != 1 || underMpirun) &&
      trx_dist_init(nullptr, nullptr, model->mesh_axis_names,
                    model->mesh_axis_sizes, model->num_mesh_axes, err,
                    sizeof(err)) != TRX_OK) {
    printError("%s", err);
    return 1;
  }
  // Several ranks: a stopped or vanished one must not hang the others.
  if (trx_dist_initialized() && trx_dist_world_size() > 1)
    trx_comm_set_timeout(a.comm_timeout);
  if (!checkTopology(model, a) || !checkPlanNodes(model, a))
    return kEveryRankStops;
  // The data rank: dp major, ep minor.
  for (trx_axis_role role : {TRX_AXIS_DATA, TRX_AXIS_EXPERT}) {
    const int32_t axis = meshAxisWithRole(model, role);
    if (axis < 0)
      continue;
    run.dataAxes[run.numDataAxes++] = axis;
    run.dpRank = run.dpRank * trx_dist_axis_size(axis) + trx_dist_coord(axis);
    run.dpSize *= trx_dist_axis_size(axis);
  }
  if (model->pipeline_microbatches > 0) {
    run.callMicroBatches = model->pipeline_microbatches;
    run.ppAxis = meshAxisWithRole(model, TRX_AXIS_PIPELINE);
  }
  run.leader = trx_dist_rank() == 0;
  if (run.computeLayouts() != 0)
    return 1;
  if (a.verbose > 0) {
    char coords[256];
    std::string mesh;
    for (int32_t i = 0; i < model->num_mesh_axes; ++i)
      mesh += std::string(i ? " x " : "") + model->mesh_axis_names[i] + "=" +
              std::to_string(model->mesh_axis_sizes[i]);
    printf("mesh %s (%d ranks); rank %d: %s\n",
           mesh.empty() ? "of one device" : mesh.c_str(), trx_dist_world_size(),
           trx_dist_rank(),
           trx_dist_initialized() ? trx_dist_coord_str(coords, sizeof(coords))
                                  : "all coordinates 0");
    if (trx_dist_initialized()) {
      const int32_t node = trx_dist_node_of(trx_dist_rank());
      const char *pretend = std::getenv("TRX_RANKS_PER_NODE");
      printf("rank %d: node %d of %d (%s%s)\n", trx_dist_rank(), node,
             trx_dist_num_nodes(), ranksPerNode().c_str(),
             pretend ? ", from TRX_RANKS_PER_NODE" : "");
    }
    if (trx_dist_initialized() && trx_comm_describe(coords, sizeof(coords)))
      printf("comm: %s\n", coords);
    printf("blas: %s\n", trx_blas_describe());
    // This rank's pieces of the distributed parameters, in one write so
    // that the ranks' lines do not interleave.
    std::string pieces;
    auto shape = [](int32_t rank, const int64_t *d) {
      std::string text = "[";
      for (int32_t i = 0; i < rank; ++i)
        text += (i ? ", " : "") + std::to_string(d[i]);
      return text + "]";
    };
    for (int64_t i = 0; i < run.n(); ++i) {
      const ParamLayout &l = run.layouts[size_t(i)];
      if (l.splits.empty() && l.zeroStage == 0 && l.stageAxes.empty())
        continue;
      // A split parameter in its declared shape (the experts' [E, in, out]).
      const int32_t lead = 3 - l.splitRank;
      std::string block =
          shape(l.rank, l.local) + " of " + shape(l.rank, l.global);
      if (!l.splits.empty())
        block = shape(l.splitRank, l.blockDims + lead) + " of " +
                shape(l.splitRank, l.dims + lead);
      pieces += "  rank " + std::to_string(trx_dist_rank()) + ": " +
                model->params[i].name + " " + block;
      for (const ParamLayout::Split &split : l.splits)
        pieces += " (dim " + std::to_string(split.dim - lead) + " block " +
                  std::to_string(split.pos) + " of " +
                  std::to_string(split.parts) + ")";
      if (l.zeroStage)
        pieces += ", ZeRO-" + std::to_string(l.zeroStage) + " chunk " +
                  std::to_string(l.zeroPos) + " of " +
                  std::to_string(l.zeroParts) + " = " +
                  std::to_string(l.chunk) + " elements";
      if (!l.stageAxes.empty())
        pieces += l.present ? ", on this stage"
                            : ", not on this stage (held by stage " +
                                  std::to_string(l.stageRoot) + ")";
      pieces += "\n";
    }
    fputs(pieces.c_str(), stdout);
    fflush(stdout);
  }
  if (model->global_batch % (model->micro_batch * run.dpSize) != 0) {
    printError("global_batch %" PRId64 " is not a multiple of micro_batch "
               "%" PRId64 " x dp %" PRId64,
               model->global_batch, model->micro_batch, run.dpSize);
    return 1;
  }
  if (model->pipeline_microbatches > 0 &&
      model->global_batch !=
          model->pipeline_microbatches * model->micro_batch * run.dpSize) {
    printError("the pipeline schedule takes %" PRId64 " micro-batches of "
               "%" PRId64 " per step and dp rank, but global_batch %" PRId64
               " / dp %" PRId64 " makes %" PRId64,
               model->pipeline_microbatches, model->micro_batch,
               model->global_batch, run.dpSize,
               model->global_batch / (model->micro_batch * run.dpSize));
    return 1;
  }
  if (a.gradcheck > 0 && trx_dist_world_size() > 1) {
    printError("--gradcheck runs on one rank only (this job has %d)",
               trx_dist_world_size());
    return 2;
  }
  // Only rank 0 logs and writes (checkpoints, --save-init, --log-json);
  // every rank computes the same parameters.
  if (!run.leader) {
    a.log_json = nullptr;
    if (!std::freopen("/dev/null", "w", stdout)) {
      printError("cannot silence stdout of rank %d", trx_dist_rank());
      return 1;
    }
  }

  // Check every input before anything is allocated, trained or written:
  // the files written at the end (--trace) or early (--save-init) too, so
  // that a bad path is reported now, not after the training it records.
  for (auto [flag, path] :
       {std::pair{"--trace", a.trace}, std::pair{"--save-init", a.save_init}})
    if (run.leader && path && !checkOutputFile(flag, path))
      return 1;
  // A checkpoint directory belongs to one run: two jobs writing into it
  // would interleave their steps (trx_ckpt_lock).
  if (run.leader && a.ckpt_dir &&
      (trx_ckpt_check_writable(a.ckpt_dir, err, sizeof(err)) != TRX_OK ||
       trx_ckpt_lock(a.ckpt_dir, err, sizeof(err)) != TRX_OK)) {
    printError("%s", err);
    return 1;
  }
  if (run.openData() != 0 || run.allocate() != 0)
    return 1;
  int64_t startStep = 0;
  std::string source;
  if (run.initialize(startStep, source) != 0)
    return 1;
  run.logger = trx_logger_open(stdout, a.log_json, err, sizeof(err));
  if (!run.logger) {
    printError("%s", err);
    return 1;
  }
  if (a.save_init && run.saveInit(source) != 0)
    return 1;

  // The model's parameters; a padded one's valid block (the padding is
  // computed, and said, but not the model's).
  int64_t total = 0, computed = 0;
  for (int64_t i = 0; i < run.n(); ++i) {
    const trx_param_desc &p = model->params[i];
    computed += numel(p);
    total += padded(p) ? p.valid_shape[0] * (p.rank == 2 ? p.valid_shape[1] : 1)
                       : numel(p);
  }
  std::string padding;
  if (computed != total)
    padding = " (" + std::to_string(computed) +
              " computed: the vocabulary padded to " +
              std::to_string(paddedVocab(model)) + ")";
  printf("model %s: %" PRId64 " parameter tensors, %" PRId64
         " parameters%s; init: %s\n",
         model->model_name, run.n(), total, padding.c_str(), source.c_str());
  printf("data %s: %" PRId64 " tokens, %" PRId64 " batches of %" PRId64
         "x%" PRId64 "\n",
         run.dataName.c_str(), trx_loader_num_tokens(run.train),
         trx_loader_num_batches(run.train), model->micro_batch, model->seq);
  if (run.val)
    printf("val data %s: %" PRId64 " tokens, %" PRId64
           " batches per evaluation\n",
           a.val_data, trx_loader_num_tokens(run.val),
           std::min(a.val_batches, trx_loader_num_batches(run.val)));
  printf("training steps %" PRId64 "..%" PRId64 " of %" PRId64
         ", lr %.3e %s, warmup %" PRId64 "\n",
         startStep + 1, a.stop_at > 0 ? a.stop_at : a.steps, a.steps,
         double(run.lrMax),
         a.lr_schedule == TRX_LR_CONSTANT ? "constant" : "cosine", a.warmup);
  if (a.verbose > 0)
    for (int64_t i = 0; i < run.n(); ++i) {
      const trx_param_desc &p = model->params[i];
      const char *bf16 = p.dtype == TRX_BF16 ? " bf16" : "";
      if (p.rank == 2)
        printf("  param %" PRId64 " %s [%" PRId64 ", %" PRId64 "]%s\n", i,
               p.name, p.shape[0], p.shape[1], bf16);
      else
        printf("  param %" PRId64 " %s [%" PRId64 "]%s\n", i, p.name,
               p.shape[0], bf16);
    }
  fflush(stdout);

  const int64_t endStep = a.stop_at > 0 ? a.stop_at : a.steps;
  int64_t step = startStep;
  int64_t lastSaved = a.resume && startStep > 0 ? startStep : -1;
  int64_t lastEval = -1;
  float loss = NAN;
  if (startStep >= endStep)
    printf("nothing to train: already at step %" PRId64 "\n", startStep);
  if (a.gradcheck > 0)
    return run.gradcheck(a.gradcheck, a.gradcheck_tol);
  // Micro-batches per optimizer step and rank: the gradient buffers sum them
  // and the optimizer scales by 1 / accum; with dp ranks the compiled step
  // averages the buffers over dp first (dist-data-parallel), so the update
  // equals one global batch.
  const int64_t accum = model->global_batch / (model->micro_batch * run.dpSize);
  // The traffic of one step per axis set and kind, for -v on the first
  // step: what the compiled step itself moves (not the logged loss's
  // average).
  struct Traffic {
    uint64_t bytes[TRX_COMM_NKINDS], calls[TRX_COMM_NKINDS];
  };
  const uint32_t nmasks =
      trx_dist_initialized() ? uint32_t(1) << trx_dist_num_axes() : 1u;
  auto traffic = [&](uint32_t mask) {
    Traffic t{};
    for (int32_t kind = 0; kind < TRX_COMM_NKINDS; ++kind) {
      t.bytes[kind] = trx_comm_bytes(kind, mask);
      t.calls[kind] = trx_comm_calls(kind, mask);
    }
    return t;
  };
  if (a.trace)
    traceEnable();
  // The time of the steps since the scalars were last read (minus the
  // evaluations and checkpoints in between): steps that do not read them
  // only queue work, so a logged step reports the mean over its interval.
  double intervalStart = trx_now_ms(), intervalExcluded = 0;
  int64_t intervalSteps = 0;
  // The step's loss, the mean over the global batch, from the device (one
  // copy, which waits for the step; collectives, so on every rank alike),
  // and the gradient norm of the last optimizer step. The norms of the
  // steps since the last read are checked: the first that is not finite
  // (the global norm: the same on every rank) is returned in badNormStep
  // (0: none).
  int64_t normsFirstStep = startStep + 1; // the step of the first slot
  auto readLoss = [&](float &gradNorm, int64_t &badNormStep) {
    float scalars[1 + Run::kNormSlots];
    const int64_t norms = run.readScalars(scalars);
    // loss_acc sums the calls' mean losses (each the mean of perCall
    // micro-batches): the step's loss is their mean over accum. A
    // pipeline's loss is on its last stage (0 on the others).
    float l = float(double(scalars[0]) * double(run.callMicroBatches) /
                    double(accum));
    badNormStep = 0;
    for (int64_t j = 0; j < norms && !badNormStep; ++j)
      if (!std::isfinite(scalars[1 + j])) {
        badNormStep = normsFirstStep + j;
        gradNorm = scalars[1 + j];
      }
    if (!badNormStep)
      gradNorm = norms ? scalars[norms] : NAN;
    normsFirstStep += norms;
    if (run.ppAxis >= 0)
      trx_all_reduce(&l, 1, TRX_REDUCE_SUM, &run.ppAxis, 1);
    if (run.dpSize > 1)
      trx_all_reduce(&l, 1, TRX_REDUCE_AVG, run.dataAxes, run.numDataAxes);
    return l;
  };
  // A step whose gradient norm is not finite updated nothing (triax.adamw);
  // the run stops at the read that finds it, writing nothing.
  auto badNorm = [&](int64_t bad, float norm) {
    printError("step %" PRId64 ": the gradient norm is %s; that step updated "
               "nothing (parameters and moments as they were); stopping "
               "without writing a checkpoint",
               bad, nonFiniteName(norm));
    return 1;
  };
  // --max-loss-ratio: the recent losses the guard compares with.
  std::vector<float> recentLosses;
  constexpr size_t kLossWindow = 10;
  while (step < endStep) {
    ++step;
    ++intervalSteps;
    trx_comm_set_step(step);
    const bool report = a.verbose > 0 && step == startStep + 1;
    std::vector<Traffic> before;
    for (uint32_t mask = 1; report && mask < nmasks; ++mask)
      before.push_back(traffic(mask));
    run.zeroGrads();
    // The step's first forward_backward writes its mean loss into loss_acc,
    // the others add theirs (trx_set_first_micro_batch below): no memset.
    // A pipeline's call takes all the step's micro-batches at once (its
    // schedule traces each stage function itself).
    const int64_t perCall = run.callMicroBatches;
    for (int64_t k = 0; k < accum; k += perCall) {
      if (run.nextCall() != 0)
        return 1;
      // Gradient buckets reduce after the last micro-batch only.
      trx_set_accumulation_boundary(k + perCall == accum);
      trx_set_first_micro_batch(k == 0);
      double start = traceNow();
      model->forward_backward(run.inputs, run.targets, run.scalars);
      if (perCall == 1)
        traceRecord("FB" + std::to_string(k), "forward_backward", 1, start, k);
    }
    if (a.max_loss_ratio > 0) {
      // The divergence guard: the loss before the update it would apply.
      float norm;
      int64_t bad;
      float l = readLoss(norm, bad);
      if (bad)
        return badNorm(bad, norm);
      double mean = 0;
      for (float x : recentLosses)
        mean += double(x) / double(recentLosses.size());
      if (!std::isfinite(l) ||
          (!recentLosses.empty() && double(l) > a.max_loss_ratio * mean)) {
        if (std::isfinite(l))
          printError("step %" PRId64 ": the loss %g is %.3g times the mean "
                     "%g of the last %zu steps (--max-loss-ratio %g); "
                     "stopping before this step's update, writing nothing",
                     step, double(l), double(l) / mean, mean,
                     recentLosses.size(), double(a.max_loss_ratio));
        else
          printError("step %" PRId64 ": the loss is %s; stopping before "
                     "this step's update, writing nothing",
                     step, nonFiniteName(l));
        return 1;
      }
      if (recentLosses.size() == kLossWindow)
        recentLosses.erase(recentLosses.begin());
      recentLosses.push_back(l);
    }
    double optimizerStart = traceNow();
    float lr = trx_lr_at(step - 1, a.steps, run.lrMax, a.warmup, a.lr_schedule,
                         a.min_lr_ratio);
    trx_comm_wait_grads(); // NCCL: the optimizer reads the reduced grads
    model->optimizer_step(lr, step, 1.0f / float(accum), run.nextNormSlot());
    traceRecord("optimizer", "optimizer", 1, optimizerStart);
    for (uint32_t mask = 1; report && mask < nmasks; ++mask) {
      Traffic now = traffic(mask);
      std::string axes;
      for (int32_t i = 0; i < trx_dist_num_axes(); ++i)
        if (mask & (1u << i))
          axes += std::string(axes.empty() ? "" : ",") + trx_dist_axis_name(i);
      for (int32_t kind = 0; kind < TRX_COMM_NKINDS; ++kind)
        if (now.calls[kind] != before[mask - 1].calls[kind])
          printf("step %5" PRId64 " | %s over %s: %" PRIu64
                 " bytes %s by this rank in %" PRIu64 " calls\n",
                 step, trx_comm_kind_name(kind), axes.c_str(),
                 now.bytes[kind] - before[mask - 1].bytes[kind],
                 kind == TRX_COMM_RECV ? "received" : "sent",
                 now.calls[kind] - before[mask - 1].calls[kind]);
    }
    // The loss and the gradient norm stay on the device; they are read
    // (one copy, which waits for the step) only on the steps that need
    // them: logged steps, checkpoint steps, the last step, and when the
    // norms' slots are full. The same on every rank (the averages below
    // are collectives).
    const bool logged =
        a.log_every > 0 && (step % a.log_every == 0 || step == endStep);
    const bool ckptStep =
        a.ckpt_dir && a.ckpt_every > 0 && step % a.ckpt_every == 0;
    loss = NAN;
    float gradNorm = NAN;
    if (logged || ckptStep || step == endStep ||
        run.normsPending == Run::kNormSlots) {
      int64_t bad;
      loss = readLoss(gradNorm, bad);
      // The loss is checked on these steps only (a divergence shows at the
      // next one); every step's gradient norm is. An earlier step's norm
      // names the step where it started.
      if (bad && (bad < step || std::isfinite(loss)))
        return badNorm(bad, gradNorm);
      if (!std::isfinite(loss)) {
        printError("step %" PRId64 ": the loss is %s; training diverged, "
                   "stopping without writing a checkpoint",
                   step, nonFiniteName(loss));
        return 1;
      }
    }
    if (logged) {
      double ms = (trx_now_ms() - intervalStart - intervalExcluded) /
                  double(intervalSteps);
      if (trx_logger_step(run.logger, step, loss, lr, gradNorm,
                          run.tokensPerStep() * accum * run.dpSize,
                          ms) != TRX_OK) {
        printError("%s", trx_last_error());
        return 1;
      }
      // A mixture-of-experts model: its routing since the last line.
      if (run.moeCounts[TRX_MOE_CHOICES] > 0 &&
          trx_logger_moe(run.logger, step, run.moeCounts[TRX_MOE_DROPPED],
                         run.moeCounts[TRX_MOE_CHOICES]) != TRX_OK) {
        printError("%s", trx_last_error());
        return 1;
      }
      run.moeCounts[TRX_MOE_DROPPED] = run.moeCounts[TRX_MOE_CHOICES] = 0;
      intervalStart = trx_now_ms();
      intervalExcluded = 0;
      intervalSteps = 0;
    }
    const double asideStart = trx_now_ms();
    if (run.val && a.eval_every > 0 && step % a.eval_every == 0) {
      int rc;
      float vl = run.evaluate(rc);
      if (rc != 0)
        return 1;
      lastEval = step;
      if (trx_logger_eval(run.logger, step, vl) != TRX_OK) {
        printError("%s", trx_last_error());
        return 1;
      }
    }
    if (ckptStep) {
      if (run.checkpoint(step, loss) != 0)
        return 1;
      lastSaved = step;
    }
    intervalExcluded += trx_now_ms() - asideStart;
  }
  if (run.val && lastEval != step) {
    int rc;
    float vl = run.evaluate(rc);
    if (rc != 0)
      return 1;
    if (trx_logger_eval(run.logger, step, vl) != TRX_OK) {
      printError("%s", trx_last_error());
      return 1;
    }
  }
  if (a.ckpt_dir && lastSaved != step && run.checkpoint(step, loss) != 0)
    return 1;
  if (a.trace) {
    std::string error;
    if (!traceWrite(a.trace, error)) {
      printError("%s", error.c_str());
      return 1;
    }
  }
  printf("done: step %" PRId64, step);
  if (std::isfinite(loss))
    printf(", last loss %.6f", double(loss));
  printf("\n");
  printPeaks();
  if (a.verbose > 0)
    printPeakBytes();
  // -vv: every rank's peaks (on stderr: the other ranks' stdout is
  // silenced), one line each, "rank 3: peak bytes: ...".
  if (a.verbose > 1 && trx_dist_world_size() > 1)
    printPeakBytes(stderr,
                   ("rank " + std::to_string(trx_dist_rank()) + ": ").c_str());
  if (a.verbose > 0 && trx_dist_world_size() > 1)
    trx_comm_print_table(stdout);
  fflush(stdout);
  return 0;
}

} // namespace

extern "C" void trx_init_normal(float *dst, int64_t n, float std, uint64_t seed,
                                int64_t index) {
  if (!dst || n <= 0)
    return;
  constexpr double kTwoPi = 6.28318530717958647692;
  constexpr double k2m53 = 1.0 / 9007199254740992.0; // 2^-53
  Xoshiro256 rng(seed ^ (0xD1B54A32D192ED03ULL * uint64_t(index + 1)));
  for (int64_t i = 0; i < n; i += 2) {
    uint64_t x = rng.next(), y = rng.next();
    double u1 = double((x >> 11) + 1) * k2m53;
    double u2 = double(y >> 11) * k2m53;
    double r = std::sqrt(-2.0 * std::log(u1));
    dst[i] = float(double(std) * r * std::cos(kTwoPi * u2));
    if (i + 1 < n)
      dst[i + 1] = float(double(std) * r * std::sin(kTwoPi * u2));
  }
}

extern "C" int trx_train_main(int argc, char **argv,
                              const trx_model_desc *model) {
  int rc;
  try {
    rc = trainMain(argc, argv, model);
  } catch (const std::bad_alloc &) {
    printError("out of memory");
    rc = 1;
  }
  // A rank that fails alone ends the whole job (the others would wait
  // forever in the next collective); the message names the rank. When every
  // rank decided to stop together, each ends normally instead: an abort
  // from one rank could make mpirun kill the others before it has
  // forwarded what rank 0 printed (the error itself).
  if (rc == kEveryRankStops)
    rc = 1;
  else if (rc != 0 && trx_dist_initialized() && trx_dist_world_size() > 1)
    trx_dist_abort("training failed (the error is above)");
  fflush(stdout);
  trx_dist_finalize();
  return rc;
}
