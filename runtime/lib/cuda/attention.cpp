//===- attention.cpp - Causal attention on cuDNN's fused SDPA -------------===//
//
// The CUDA device's attention library (lib/cpu/device.h;
// trx_attention_compute's contract in triax_rt.h), registered from a global
// constructor: this file is libtriax_rt_cudnn.a, which triaxc links whole
// into `--attention=cudnn` binaries only (the cudnn-frontend's code is
// about 1 MB; the other binaries never call it, and without it the CUDA
// device declines). The compiled code of `--attention=cudnn` calls
// trx_fused_attention / trx_fused_attention_grad (lib/cpu/kernel_abi.cpp
// checks the operands), and this file runs them as cuDNN 9's fused flash
// attention (the kernels PyTorch and JAX use), forward with its softmax
// statistics, backward from them. When cuDNN is not there or does not take
// a shape, cuda::attention declines, having written nothing, and the
// compiled code runs its own kernels: a binary runs the same with or
// without cuDNN, only slower without.
//
// cuDNN is reached through the cudnn-frontend header-only C++ graph API
// (graph.sdpa / graph.sdpa_backward), compiled with
// NV_CUDNN_FRONTEND_USE_DYNAMIC_LOADING: nothing links libcudnn. The first
// call dlopens libcudnn.so.9 (LD_LIBRARY_PATH: PyTorch's wheel has it in
// site-packages/nvidia/cudnn/lib) and hands the handle to the frontend
// (cudnn_frontend::cudnn_dlhandle); the frontend dlopens libcudart itself
// (libcudart.so.13 or .12) for the device's SM version and its memsets.
//
// Layout. The problem's q is rows [batch*S, heads*d] with row stride ldq:
// element (b, h, s, e) is q[(b*S + s)*ldq + h*d + e], so as cuDNN's
// [B, H, S, D] tensor its strides are [S*ldq, D, ldq, 1]; k, v (kv_heads
// heads, ldk, ldv), out, dout, dq, dk, dv the same with their own row
// strides. Stats, cuDNN's per-row softmax statistics, is our lse: [B, H, S,
// 1] f32 with strides [H*S, S, 1, 1] (packed BHSD, which cuDNN before
// 9.12 / 9.26 requires of the forward's output / the backward's input),
// L = m + ln(sum exp(s - m)) of the scaled scores s = scale q.k (natural
// log: stats_use_log2 is left off). The mask is causal, top-left aligned
// (S_q = S_kv): a query sees the keys at or before it (diagonal band,
// right bound 0). Grouped-query attention (kv_heads < heads) is cuDNN's
// own: K and V have kv_heads heads, and the backward sums dK, dV over a
// group's query heads. bf16 inputs and outputs, f32 softmax and
// accumulation (the intermediate and compute types).
//
// Backward deterministic (set_deterministic_algorithm): the same bits on
// every run, as the generated kernels give.
//
// Declines (non-zero, nothing written), each said once on stderr (rank 0):
//  - built without cuDNN's or the frontend's headers (TRIAX_RT_HAVE_CUDNN
//    is 0; runtime/CMakeLists.txt says which was missing);
//  - TRX_CUDNN=0 in the environment (read at the first call);
//  - libcudnn.so.9 cannot be loaded, or is older than 9.0;
//  - the graph of a shape fails validate, build_operation_graph,
//    create_execution_plans, check_support or build_plans (a head size
//    cuDNN has no kernel for, strides it cannot read, a pointer below 16-byte
//    alignment, ...): one line per distinct shape and direction with
//    cuDNN's reason; a supported one says so too, with cuDNN's version.
// Once a shape is supported, a failure of execute is a bug: the job ends
// naming the entry and cuDNN's message (cuda::fail).
//
// Plans: each distinct problem (direction, sizes, every row stride, each
// pointer's alignment up to 16 bytes, the scale's bits) gets its graph
// built once, kept for the run, with its workspace size; a declined one is
// kept too, so it is not tried again. One cudnnHandle_t, created at the
// first call after CUDA is initialized, is pointed at the launch stream
// (the compute stream, or the communication stream in a gradient region)
// before each execute: the attention is stream-ordered like the kernels and
// GEMMs, asynchronous, and TRX_CUDA_SYNC=1 waits after it. One workspace,
// a trx_alloc block (device memory, never managed), grows to the largest
// plan's need and is kept for the run, as blas.cpp keeps its workspace
// (the runtime has no teardown hook); the calls are serialized by a mutex
// and ordered on one stream, so they share it.
//
//===----------------------------------------------------------------------===//

#include "cuda_internal.h"
#include "triax_rt.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <string>

#ifndef TRIAX_RT_HAVE_CUDNN
#define TRIAX_RT_HAVE_CUDNN 0
#endif

#if TRIAX_RT_HAVE_CUDNN
#include <cudnn_frontend.h>
#include <dlfcn.h>

#include <array>
#include <exception>
#include <map>
#include <memory>
#include <unordered_map>

// The frontend's dlsym handle (NV_CUDNN_FRONTEND_USE_DYNAMIC_LOADING
// declares it and leaves its definition, and the dlopen, to the program).
namespace cudnn_frontend {
void *cudnn_dlhandle = nullptr;
} // namespace cudnn_frontend
#endif

namespace {

/// Says `line` on stderr once per process (rank 0 only: the ranks run the
/// same shapes), "triax runtime: " first.
void sayOnce(const std::string &line) {
  static std::mutex mutex;
  static std::set<std::string> said;
  if (trx_dist_rank() != 0)
    return;
  std::lock_guard<std::mutex> lock(mutex);
  if (said.insert(line).second)
    fprintf(stderr, "triax runtime: %s\n", line.c_str());
}

#if TRIAX_RT_HAVE_CUDNN
const char *direction(int32_t backward) {
  return backward ? "backward" : "forward";
}

std::string shapeOf(const trx_attention_problem &p, int32_t backward) {
  char s[160];
  snprintf(s, sizeof(s),
           "attention %s [B %lld, S %lld, heads %lld, kv %lld, d %lld]",
           direction(backward), (long long)p.batch, (long long)p.seq,
           (long long)p.heads, (long long)p.kv_heads, (long long)p.head_dim);
  return s;
}
#endif

} // namespace

#if !TRIAX_RT_HAVE_CUDNN

namespace {

int32_t cudnnAttention(const trx_attention_problem *, int32_t /*backward*/) {
  sayOnce("attention by cuDNN unavailable: built without cuDNN (its or the "
          "cudnn-frontend's headers were not found); the generated kernels "
          "run");
  return 1;
}

} // namespace

#else // TRIAX_RT_HAVE_CUDNN

namespace {

namespace fe = cudnn_frontend;

/// The variant pack's tensor ids (set on the graph's tensors).
enum Uid : int64_t { kQ = 1, kK, kV, kO, kStats, kDO, kDQ, kDK, kDV };

/// The first version of cuDNN that this file asks for: 9 (the soname it
/// loads; SDPA forward and backward with statistics and grouped-query
/// attention are older, the frontend checks finer points itself).
constexpr int64_t kMinVersion = 90000;

/// The soname loaded: cuDNN 9's (the headers' major version).
constexpr const char *kLibrary = "libcudnn.so.9";

/// The alignment the frontend assumes of a pointer by default (and checks
/// at execute): a pointer below it is declared with its own alignment, and
/// cuDNN may then decline the shape.
constexpr int64_t kAlignment = 16;

/// The problem's cache key: everything the graph depends on.
using PlanKey = std::array<int64_t, 24>;

struct Plan {
  std::shared_ptr<fe::graph::Graph> graph; // null: cuDNN declined
  int64_t workspace = 0;
};

struct Library {
  bool tried = false, loaded = false;
  std::string unusable; // why not, once tried and not loaded
  cudnnHandle_t handle = nullptr;
  std::string version; // "9.19.0"
  void *workspace = nullptr;
  int64_t workspaceBytes = 0;
  std::map<PlanKey, Plan> plans;
};

std::mutex libraryMutex;

/// One line of a message (cuDNN's can hold several), at most 240 chars.
std::string oneLine(std::string s) {
  for (char &c : s)
    if (c == '\n' || c == '\r' || c == '\t')
      c = ' ';
  while (!s.empty() && s.back() == ' ')
    s.pop_back();
  if (s.size() > 240)
    s = s.substr(0, 237) + "...";
  return s.empty() ? "no reason given" : s;
}

/// Whether TRX_CUDNN=0 turns the library off.
bool turnedOff() {
  const char *v = std::getenv("TRX_CUDNN");
  return v && std::strcmp(v, "0") == 0;
}

/// Loads cuDNN at the first call (with the lock held): the library, its
/// version, a handle. Null when usable, else why not.
const char *loadOnce(Library &lib) {
  if (lib.tried)
    return lib.loaded ? nullptr : lib.unusable.c_str();
  lib.tried = true;
  std::string &reason = lib.unusable;
  if (turnedOff()) {
    reason = "off (TRX_CUDNN=0)";
    return reason.c_str();
  }
  (void)triax::rt::cuda::stream(); // CUDA initialized, its context current
  dlerror();
  void *so = dlopen(kLibrary, RTLD_NOW | RTLD_LOCAL);
  if (!so) {
    const char *e = dlerror();
    reason = std::string(kLibrary) + " not loaded: " + (e ? e : "not found");
    return reason.c_str();
  }
  fe::cudnn_dlhandle = so;
  try {
    int64_t version = int64_t(fe::detail::get_backend_version());
    lib.version = fe::detail::get_backend_version_string();
    if (version < kMinVersion) {
      reason = "cuDNN " + lib.version + " is older than 9.0";
      return reason.c_str();
    }
    cudnnStatus_t status = fe::detail::create_handle(&lib.handle);
    if (status != CUDNN_STATUS_SUCCESS) {
      reason = std::string("cudnnCreate failed: ") +
               fe::detail::get_error_string(status);
      return reason.c_str();
    }
  } catch (const std::exception &e) {
    reason = std::string("cuDNN not usable: ") + e.what();
    return reason.c_str();
  }
  lib.loaded = true;
  return nullptr;
}

/// The largest power of two up to kAlignment that divides `p`'s address.
int64_t alignmentOf(const void *p) {
  uint64_t bits =
      uint64_t(reinterpret_cast<uintptr_t>(p)) | uint64_t(kAlignment);
  return int64_t(bits & (~bits + 1));
}

PlanKey keyOf(const trx_attention_problem &p, int32_t backward) {
  uint32_t scaleBits;
  std::memcpy(&scaleBits, &p.scale, sizeof(scaleBits));
  PlanKey key = {backward,
                 p.batch,
                 p.seq,
                 p.heads,
                 p.kv_heads,
                 p.head_dim,
                 p.ldq,
                 p.ldk,
                 p.ldv,
                 p.ldo,
                 int64_t(scaleBits),
                 alignmentOf(p.q),
                 alignmentOf(p.k),
                 alignmentOf(p.v),
                 alignmentOf(p.out),
                 alignmentOf(p.lse)};
  if (backward) {
    key[16] = p.lddo;
    key[17] = p.lddq;
    key[18] = p.lddk;
    key[19] = p.lddv;
    key[20] = alignmentOf(p.dout);
    key[21] = alignmentOf(p.dq);
    key[22] = alignmentOf(p.dk);
    key[23] = alignmentOf(p.dv);
  }
  return key;
}

/// Builds and checks the graph of `p`; on success plan.graph is set and
/// plan.workspace holds its size, else `why` says what cuDNN said.
void buildPlan(Library &lib, const trx_attention_problem &p, int32_t backward,
               Plan &plan, std::string &why) {
  using fe::graph::Tensor_attributes;
  const int64_t B = p.batch, S = p.seq, H = p.heads, KV = p.kv_heads,
                D = p.head_dim;
  // [B, heads, S, D] over rows [B*S, heads*D] of row stride ld.
  auto rows = [&](const char *name, Uid uid, int64_t heads, int64_t ld,
                  const void *ptr) {
    return Tensor_attributes()
        .set_name(name)
        .set_uid(uid)
        .set_dim({B, heads, S, D})
        .set_stride({S * ld, D, ld, 1})
        .set_alignment(alignmentOf(ptr));
  };
  auto setRows = [&](const std::shared_ptr<Tensor_attributes> &t, Uid uid,
                     int64_t heads, int64_t ld, const void *ptr) {
    t->set_output(true)
        .set_uid(uid)
        .set_dim({B, heads, S, D})
        .set_stride({S * ld, D, ld, 1})
        .set_alignment(alignmentOf(ptr));
  };
  // lse: [B, H, S, 1] f32, packed.
  auto stats = Tensor_attributes()
                   .set_name("stats")
                   .set_uid(kStats)
                   .set_dim({B, H, S, 1})
                   .set_stride({H * S, S, 1, 1})
                   .set_data_type(fe::DataType_t::FLOAT)
                   .set_alignment(alignmentOf(p.lse));

  auto graph = std::make_shared<fe::graph::Graph>();
  graph->set_io_data_type(fe::DataType_t::BFLOAT16)
      .set_intermediate_data_type(fe::DataType_t::FLOAT)
      .set_compute_data_type(fe::DataType_t::FLOAT);
  auto q = graph->tensor(rows("q", kQ, H, p.ldq, p.q));
  auto k = graph->tensor(rows("k", kK, KV, p.ldk, p.k));
  auto v = graph->tensor(rows("v", kV, KV, p.ldv, p.v));
  if (!backward) {
    fe::graph::SDPA_attributes attributes;
    attributes.set_name("triax_attention")
        .set_generate_stats(true)
        .set_diagonal_alignment(fe::DiagonalAlignment_t::TOP_LEFT)
        .set_diagonal_band_right_bound(0)
        .set_attn_scale(p.scale);
    auto [o, lse] = graph->sdpa(q, k, v, attributes);
    setRows(o, kO, H, p.ldo, p.out);
    lse->set_output(true)
        .set_uid(kStats)
        .set_dim({B, H, S, 1})
        .set_stride({H * S, S, 1, 1})
        .set_data_type(fe::DataType_t::FLOAT)
        .set_alignment(alignmentOf(p.lse));
  } else {
    auto o = graph->tensor(rows("o", kO, H, p.ldo, p.out));
    auto dO = graph->tensor(rows("dO", kDO, H, p.lddo, p.dout));
    auto lse = graph->tensor(stats);
    // Deterministic: dQ (and dK, dV under grouped-query heads) summed in a
    // fixed order, not by atomics, so a step's gradients are the same bits
    // on every run, as the generated kernels' are.
    fe::graph::SDPA_backward_attributes attributes;
    attributes.set_name("triax_attention_backward")
        .set_deterministic_algorithm(true)
        .set_diagonal_alignment(fe::DiagonalAlignment_t::TOP_LEFT)
        .set_diagonal_band_right_bound(0)
        .set_attn_scale(p.scale);
    auto [dQ, dK, dV] = graph->sdpa_backward(q, k, v, o, dO, lse, attributes);
    setRows(dQ, kDQ, H, p.lddq, p.dq);
    setRows(dK, kDK, KV, p.lddk, p.dk);
    setRows(dV, kDV, KV, p.lddv, p.dv);
  }

  // Each stage's error_t says what cuDNN did not take.
  auto stage = [&](const char *name, fe::error_t e) {
    if (e.is_good())
      return true;
    why = std::string(name) + ": " + oneLine(e.get_message());
    return false;
  };
  try {
    if (!stage("validate", graph->validate()) ||
        !stage("build_operation_graph",
               graph->build_operation_graph(lib.handle)) ||
        !stage("create_execution_plans",
               graph->create_execution_plans(
                   {fe::HeurMode_t::A, fe::HeurMode_t::FALLBACK})) ||
        !stage("check_support", graph->check_support()) ||
        !stage("build_plans",
               graph->build_plans(fe::BuildPlanPolicy_t::HEURISTICS_CHOICE)))
      return;
    int64_t workspace = 0;
    if (!stage("get_workspace_size", graph->get_workspace_size(workspace)))
      return;
    plan.graph = std::move(graph);
    plan.workspace = workspace;
  } catch (const std::exception &e) {
    why = oneLine(e.what());
  }
}

/// The workspace, grown to `bytes` (the old block freed in stream order).
void *workspaceFor(Library &lib, int64_t bytes, const char *fn) {
  if (bytes <= 0)
    return nullptr;
  if (bytes > lib.workspaceBytes) {
    trx_free(lib.workspace);
    lib.workspace = trx_alloc_aligned(size_t(bytes), 256, TRX_MEM_OTHER);
    lib.workspaceBytes = lib.workspace ? bytes : 0;
    if (!lib.workspace) {
      char what[160];
      snprintf(what, sizeof(what),
               "out of device memory for cuDNN's workspace (%lld bytes)",
               (long long)bytes);
      triax::rt::cuda::fail(fn, what);
    }
  }
  return lib.workspace;
}

int32_t cudnnAttention(const trx_attention_problem *p, int32_t backward) {
  using namespace triax::rt::cuda;
  static Library lib;
  std::lock_guard<std::mutex> lock(libraryMutex);
  if (const char *why = loadOnce(lib)) {
    sayOnce(std::string("attention by cuDNN unavailable: ") + why +
            "; the generated kernels run");
    return 1;
  }
  const char *fn =
      backward ? "trx_fused_attention_grad" : "trx_fused_attention";
  PlanKey key = keyOf(*p, backward);
  auto found = lib.plans.find(key);
  if (found == lib.plans.end()) {
    Plan plan;
    std::string why;
    buildPlan(lib, *p, backward, plan, why);
    if (plan.graph)
      sayOnce(shapeOf(*p, backward) + " by cuDNN " + lib.version);
    else
      sayOnce(shapeOf(*p, backward) + " declined by cuDNN " + lib.version +
              ": " + why + "; the generated kernels run");
    found = lib.plans.emplace(key, std::move(plan)).first;
  }
  const Plan &plan = found->second;
  if (!plan.graph)
    return 1;

  void *workspace = workspaceFor(lib, plan.workspace, fn);
  // CUstream and cudaStream_t are the same type (CUstream_st *).
  cudaStream_t s = launchStream();
  cudnnStatus_t status = fe::detail::set_stream(lib.handle, s);
  if (status != CUDNN_STATUS_SUCCESS)
    fail("cudnnSetStream", fe::detail::get_error_string(status));
  auto ptr = [](const void *x) { return const_cast<void *>(x); };
  std::unordered_map<int64_t, void *> pack = {{kQ, ptr(p->q)},
                                              {kK, ptr(p->k)},
                                              {kV, ptr(p->v)},
                                              {kO, ptr(p->out)},
                                              {kStats, ptr(p->lse)}};
  if (backward) {
    pack[kDO] = ptr(p->dout);
    pack[kDQ] = ptr(p->dq);
    pack[kDK] = ptr(p->dk);
    pack[kDV] = ptr(p->dv);
  }
  std::string error;
  try {
    fe::error_t e = plan.graph->execute(lib.handle, pack, workspace);
    if (e.is_bad())
      error = oneLine(e.get_message());
  } catch (const std::exception &e) {
    error = oneLine(e.what());
  }
  if (!error.empty()) {
    char call[128];
    snprintf(call, sizeof(call), "%s: cuDNN's SDPA %s (Graph::execute)", fn,
             direction(backward));
    fail(call, error.c_str());
  }
  launched(backward ? "cuDNN's attention backward"
                    : "cuDNN's attention forward");
  return 0;
}

} // namespace

#endif // TRIAX_RT_HAVE_CUDNN

namespace {

/// The CUDA device's attention from before main (device.cpp).
struct Registration {
  Registration() { triax::rt::cuda::registerAttention(cudnnAttention); }
} registration;

} // namespace
