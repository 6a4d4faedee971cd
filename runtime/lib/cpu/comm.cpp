//===- comm.cpp - The distributed runtime: mesh, groups, collectives ------===//
//
// World setup for a mesh with named axes (coordinates, one communicator per
// axis, communicators of axis sets on demand), the collectives of the dist
// dialect (the all-to-all of expert parallelism among them), point-to-point
// transfers and the ring shifts of context parallelism, per-kind and
// per-axis-set byte counters, --trace events, and the job-wide abort.
//
// The data movement goes through a Transport (transport.h): the MPI one
// here, ring algorithms (and the all-to-all's pairwise exchange) over
// MPI_Sendrecv, is the CPU target's; the CUDA runtime registers NCCL
// (lib/cuda/nccl.cpp). Everything else (argument checks, groups, counters,
// trace) is this front's, shared by both.
//
// Why our own rings rather than MPI_Allreduce and friends: the schedule is
// fixed here (chunk c = [n*c/p, n*(c+1)/p), reduced in ring order), so a
// result depends only on the inputs, p and n, whatever MPI library or
// algorithm selection runs underneath; and the byte counters count what the
// loops really hand to MPI, so "measured equals the analytic ring volume"
// is a real check (runtime/test/comm_test.cpp).
//
// Everything after trx_dist_init that goes wrong ends the job through
// trx_dist_abort (MPI_Abort), because a rank that returns an error while
// its peers wait in a collective would hang the job.
//
//===----------------------------------------------------------------------===//

#include "bf16.h"
#include "internal.h"
#include "transport.h"
#include "triax_rt.h"

// The C API only (no C++ bindings, whatever the MPI build has).
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <climits>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <type_traits>
#include <unistd.h>
#include <vector>

using namespace triax::rt;

/// One ordered axis list: the members' positions map to ranks of the
/// communicator of the (unordered) axis set.
struct trx_dist_group : triax::rt::CommGroup {
  std::vector<int32_t> axes;     // as listed
  MPI_Comm comm = MPI_COMM_NULL; // owned by DistState::setComms
};

namespace {

constexpr int kMaxAxes = TRX_DIST_MAX_AXES;
constexpr uint32_t kNumMasks = 1u << kMaxAxes;
// Internal tags: one per collective kind, above the user range.
constexpr int kTagBase = TRX_DIST_MAX_TAG + 1; // 32760 .. 32767
// The ring shifts (32767): the same tag for every slot. A pair's messages on
// one communicator and tag match in the order they were posted, and every
// member starts its shifts in the same order, so the k-th shift a rank
// sends to a peer is the k-th one that peer receives from it.
constexpr int kShiftTag = kTagBase + TRX_COMM_NKINDS;
static_assert(kShiftTag <= 32767, "MPI guarantees tags up to 32767 only");
// Largest message handed to MPI (counts are int): 1 GiB, or the value of
// the environment variable TRX_COMM_MAX_MESSAGE at trx_dist_init (a test
// hook: the tests use a few KiB to run the many-message paths).
int64_t gMaxPieceBytes = int64_t(1) << 30;
// Segment of the pipelined broadcast chain.
constexpr int64_t kBcastSegmentBytes = 256 * 1024;

/// A ring shift between trx_shift_start and its wait.
struct ShiftSlot {
  bool inFlight = false;
  const trx_dist_group *group = nullptr;
  uint64_t bytes = 0; // the counters' value (0 in a group of one)
  int32_t to = 0, from = 0;
  double traceStart = -1;
  const char *startFn = nullptr;
};

struct DistState {
  bool active = false;
  bool everStarted = false; // MPI cannot be initialized twice
  bool ownsMpi = false;
  int worldRank = 0, worldSize = 1;
  std::vector<std::string> names;
  std::vector<int64_t> sizes;
  std::vector<int64_t> coords;
  std::vector<int32_t> nodeOf;    // world rank -> node (trx_dist_node_of)
  std::vector<int32_t> nodeSizes; // node -> its number of ranks
  bool mpi = false;               // MPI runs (see trx_dist_init)
  Transport *transport = nullptr; // the data movement
  std::map<uint32_t, MPI_Comm> setComms; // axis set -> communicator
  std::map<uint32_t, void *> setHandles; // axis set -> transport's one
  std::map<std::vector<int32_t>, std::unique_ptr<trx_dist_group>> groups;
  ShiftSlot shifts[TRX_SHIFT_SLOTS];
};

DistState &state() {
  static DistState s;
  return s;
}

std::atomic<uint64_t> gBytes[TRX_COMM_NKINDS][kNumMasks];
std::atomic<uint64_t> gCalls[TRX_COMM_NKINDS][kNumMasks];

const char *const kKindNames[TRX_COMM_NKINDS] = {
    "all_reduce", "all_gather", "reduce_scatter", "broadcast",
    "send",       "recv",       "all_to_all"};

std::string vformat(const char *fmt, va_list ap) {
  char buf[1024];
  vsnprintf(buf, sizeof(buf), fmt, ap);
  return buf;
}

[[noreturn]] void abortf(const char *fmt, ...) TRX_PRINTF(1, 2);
[[noreturn]] void abortf(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  std::string msg = vformat(fmt, ap);
  va_end(ap);
  trx_dist_abort(msg.c_str());
  _Exit(1); // not reached: trx_dist_abort does not return
}

std::string mpiErrorString(int rc) {
  char buf[MPI_MAX_ERROR_STRING + 1];
  int len = 0;
  if (MPI_Error_string(rc, buf, &len) != MPI_SUCCESS)
    return "MPI error " + std::to_string(rc);
  buf[std::min(len, int(MPI_MAX_ERROR_STRING))] = '\0';
  return buf;
}

/// Aborts the job when an MPI call inside `fn` failed.
void checkMpi(int rc, const char *fn, const char *call) {
  if (rc != MPI_SUCCESS)
    abortf("%s: %s failed: %s", fn, call, mpiErrorString(rc).c_str());
}

/// "dp=2 x pp=2 x tp=2".
std::string meshString(const std::vector<std::string> &names,
                       const std::vector<int64_t> &sizes) {
  std::string s;
  for (size_t i = 0; i < names.size(); ++i) {
    if (i)
      s += " x ";
    s += names[i] + "=" + std::to_string(sizes[i]);
  }
  return s.empty() ? "without axes" : s;
}

/// Mixed-radix linearization of `coords` over `axes` (first major).
int64_t linearize(const std::vector<int64_t> &coords,
                  const std::vector<int32_t> &axes) {
  const DistState &st = state();
  int64_t r = 0;
  for (int32_t a : axes)
    r = r * st.sizes[size_t(a)] + coords[size_t(a)];
  return r;
}

/// The world rank of `coords` (all axes in mesh order).
int worldRankOf(const std::vector<int64_t> &coords) {
  const DistState &st = state();
  int64_t r = 0;
  for (size_t a = 0; a < st.sizes.size(); ++a)
    r = r * st.sizes[a] + coords[a];
  return int(r);
}

/// This rank's coordinates with those of `axes` replaced by position `pos`
/// in the group over `axes` (linearize's inverse on those axes).
std::vector<int64_t> coordsAtPosition(const std::vector<int32_t> &axes,
                                      int64_t pos) {
  const DistState &st = state();
  std::vector<int64_t> c = st.coords;
  for (size_t j = axes.size(); j-- > 0;) {
    int64_t s = st.sizes[size_t(axes[j])];
    c[size_t(axes[j])] = pos % s;
    pos /= s;
  }
  return c;
}

std::vector<int32_t> axesOfMask(uint32_t mask) {
  std::vector<int32_t> axes;
  for (int32_t a = 0; a < kMaxAxes; ++a)
    if (mask & (1u << a))
      axes.push_back(a);
  return axes;
}

/// Checks an axis list; returns the message of the first problem or "".
std::string checkAxes(const int32_t *axes, int32_t n) {
  const DistState &st = state();
  if (!st.active)
    return "the distributed runtime is not initialized (call trx_dist_init "
           "first)";
  int32_t k = int32_t(st.sizes.size());
  if (k == 0)
    return "the mesh has no axes to run over";
  if (n < 1 || n > k)
    return "an axis list needs 1.." + std::to_string(k) + " axes, got " +
           std::to_string(n);
  if (!axes)
    return "NULL axis list";
  uint32_t seen = 0;
  for (int32_t i = 0; i < n; ++i) {
    if (axes[i] < 0 || axes[i] >= k)
      return "axis " + std::to_string(axes[i]) + " is out of range (the mesh " +
             meshString(st.names, st.sizes) + " has " + std::to_string(k) +
             (k == 1 ? " axis)" : " axes)");
    if (seen & (1u << axes[i]))
      return "axis " + std::to_string(axes[i]) + " ('" +
             st.names[size_t(axes[i])] + "') is listed twice";
    seen |= 1u << axes[i];
  }
  return "";
}

/// The MPI communicator of axis set `mask` (MPI_COMM_NULL when MPI does
/// not run) and the transport's, created on first use (collective over the
/// members of this rank's group).
MPI_Comm commOfSet(uint32_t mask, const char *fn) {
  DistState &st = state();
  auto it = st.setComms.find(mask);
  if (it != st.setComms.end())
    return it->second;
  // Members in mesh order of the set's axes, so that the communicator rank
  // is the mesh-order position (as MPI_Comm_split gives for one axis).
  std::vector<int32_t> setAxes = axesOfMask(mask);
  int64_t p = 1;
  for (int32_t a : setAxes)
    p *= st.sizes[size_t(a)];
  MPI_Comm comm = MPI_COMM_NULL;
  if (st.mpi) {
    std::vector<int> members(static_cast<size_t>(p));
    for (int64_t i = 0; i < p; ++i)
      members[size_t(i)] = worldRankOf(coordsAtPosition(setAxes, i));
    MPI_Group world, group;
    checkMpi(MPI_Comm_group(MPI_COMM_WORLD, &world), fn, "MPI_Comm_group");
    checkMpi(MPI_Group_incl(world, int(p), members.data(), &group), fn,
             "MPI_Group_incl");
    // The tag (the mask) tells apart creations of different axis sets that a
    // rank's peers may be running at the same time.
    checkMpi(MPI_Comm_create_group(MPI_COMM_WORLD, group, int(mask), &comm), fn,
             "MPI_Comm_create_group");
    checkMpi(MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN), fn,
             "MPI_Comm_set_errhandler");
    MPI_Group_free(&group);
    MPI_Group_free(&world);
  }
  st.setComms[mask] = comm;
  if (!st.setHandles.count(mask))
    st.setHandles[mask] =
        st.transport->setComm(mask, splitKeyOf(mask, st.coords, st.sizes),
                              int(p), st.mpi ? &comm : nullptr, fn);
  return comm;
}

/// The group of an ordered axis list, or nullptr with `error` set.
trx_dist_group *lookupGroup(const int32_t *axes, int32_t n, const char *fn,
                            std::string &error) {
  error = checkAxes(axes, n);
  if (!error.empty())
    return nullptr;
  DistState &st = state();
  std::vector<int32_t> key(axes, axes + n);
  auto it = st.groups.find(key);
  if (it != st.groups.end())
    return it->second.get();

  auto g = std::make_unique<trx_dist_group>();
  g->axes = key;
  for (int32_t a : key)
    g->mask |= 1u << a;
  g->comm = commOfSet(g->mask, fn);
  g->handle = st.setHandles[g->mask];
  int64_t p = 1;
  for (int32_t a : key)
    p *= st.sizes[size_t(a)];
  g->size = int32_t(p);
  g->position = int32_t(linearize(st.coords, key));
  std::vector<int32_t> setAxes = axesOfMask(g->mask);
  for (int64_t pos = 0; pos < p; ++pos) {
    std::vector<int64_t> c = coordsAtPosition(key, pos);
    g->posToWorld.push_back(worldRankOf(c));
    g->posToCommRank.push_back(int(linearize(c, setAxes)));
  }
  // The split rule gives this rank's place; MPI agrees (or is not running:
  // one rank).
  int commRank = splitKeyOf(g->mask, st.coords, st.sizes).key, commSize = 1;
  if (st.mpi) {
    checkMpi(MPI_Comm_rank(g->comm, &commRank), fn, "MPI_Comm_rank");
    checkMpi(MPI_Comm_size(g->comm, &commSize), fn, "MPI_Comm_size");
  }
  if (commSize != p || commRank != g->posToCommRank[size_t(g->position)])
    abortf("%s: internal error: communicator of mask 0x%x has rank %d of "
           "%d, expected %d of %" PRId64,
           fn, g->mask, commRank, commSize,
           g->posToCommRank[size_t(g->position)], p);
  trx_dist_group *raw = g.get();
  st.groups.emplace(std::move(key), std::move(g));
  return raw;
}

trx_dist_group &groupOrAbort(const int32_t *axes, int32_t n, const char *fn) {
  std::string error;
  trx_dist_group *g = lookupGroup(axes, n, fn, error);
  if (!g)
    abortf("%s: %s", fn, error.c_str());
  return *g;
}

/// The names of the axes in `mask`, comma-separated, in mesh order.
std::string axisList(uint32_t mask) {
  std::string out;
  for (int32_t i = 0; i < trx_dist_num_axes(); ++i)
    if (mask & (1u << i))
      out += std::string(out.empty() ? "" : ",") + trx_dist_axis_name(i);
  return out;
}

void count(int kind, uint32_t mask, uint64_t bytes, double start = -1) {
  gCalls[kind][mask].fetch_add(1, std::memory_order_relaxed);
  if (bytes)
    gBytes[kind][mask].fetch_add(bytes, std::memory_order_relaxed);
  // --trace: the call as an event (sends and recvs on their own threads).
  if (start >= 0 && traceOn()) {
    std::string name =
        std::string(trx_comm_kind_name(kind)) + " over " + axisList(mask);
    int tid = kind == TRX_COMM_SEND ? 2 : kind == TRX_COMM_RECV ? 3 : 4;
    traceRecord(std::move(name), tid == 4 ? "collective" : "p2p", tid, start);
  }
}

/// Sends `sendBytes` to comm rank `dst` while receiving `recvBytes` from
/// `src`. A transfer of b bytes is max(1, ceil(b / 1 GiB)) messages (MPI
/// counts are int); sender and receiver of a transfer agree on b, so they
/// agree on its messages. Returns the bytes sent.
uint64_t sendrecv(const trx_dist_group &g, const void *sendp, int64_t sendBytes,
                  int dst, void *recvp, int64_t recvBytes, int src, int tag,
                  const char *fn) {
  const char *s = static_cast<const char *>(sendp);
  char *r = static_cast<char *>(recvp);
  if (sendBytes <= gMaxPieceBytes && recvBytes <= gMaxPieceBytes) {
    checkMpi(MPI_Sendrecv(s, int(sendBytes), MPI_BYTE, dst, tag, r,
                          int(recvBytes), MPI_BYTE, src, tag, g.comm,
                          MPI_STATUS_IGNORE),
             fn, "MPI_Sendrecv");
    return uint64_t(sendBytes);
  }
  std::vector<MPI_Request> reqs;
  int64_t o = 0;
  do {
    int b = int(std::min(recvBytes - o, gMaxPieceBytes));
    reqs.emplace_back();
    checkMpi(MPI_Irecv(r + o, b, MPI_BYTE, src, tag, g.comm, &reqs.back()), fn,
             "MPI_Irecv");
    o += b;
  } while (o < recvBytes);
  o = 0;
  do {
    int b = int(std::min(sendBytes - o, gMaxPieceBytes));
    reqs.emplace_back();
    checkMpi(MPI_Isend(s + o, b, MPI_BYTE, dst, tag, g.comm, &reqs.back()), fn,
             "MPI_Isend");
    o += b;
  } while (o < sendBytes);
  checkMpi(MPI_Waitall(int(reqs.size()), reqs.data(), MPI_STATUSES_IGNORE), fn,
           "MPI_Waitall");
  return uint64_t(sendBytes);
}

void sendBytesTo(const trx_dist_group &g, const void *p, int64_t bytes, int dst,
                 int tag, const char *fn) {
  const char *s = static_cast<const char *>(p);
  int64_t o = 0;
  do {
    int b = int(std::min(bytes - o, gMaxPieceBytes));
    checkMpi(MPI_Send(s + o, b, MPI_BYTE, dst, tag, g.comm), fn, "MPI_Send");
    o += b;
  } while (o < bytes);
}

/// Receives exactly `bytes` (a different message size aborts).
void recvBytesFrom(const trx_dist_group &g, void *p, int64_t bytes, int src,
                   int tag, int32_t peerPos, const char *fn) {
  char *r = static_cast<char *>(p);
  int64_t o = 0;
  do {
    int b = int(std::min(bytes - o, gMaxPieceBytes));
    MPI_Status status;
    // Probe first so that a larger message gives our message rather than
    // MPI_ERR_TRUNCATE.
    checkMpi(MPI_Probe(src, tag, g.comm, &status), fn, "MPI_Probe");
    int got = 0;
    checkMpi(MPI_Get_count(&status, MPI_BYTE, &got), fn, "MPI_Get_count");
    if (got != b)
      abortf("%s: expected %" PRId64 " bytes from position %d (tag %d) but "
             "the message has %d bytes",
             fn, bytes, peerPos, tag, got);
    checkMpi(MPI_Recv(r + o, b, MPI_BYTE, src, tag, g.comm, MPI_STATUS_IGNORE),
             fn, "MPI_Recv");
    o += b;
  } while (o < bytes);
}

/// Scratch memory of the collectives, charged to TRX_MEM_OTHER.
struct Scratch {
  void *p = nullptr;
  Scratch(int64_t bytes, const char *fn) {
    p = trx_alloc(size_t(bytes), TRX_MEM_OTHER);
    if (!p)
      abortf("%s: %s", fn, trx_last_error());
  }
  ~Scratch() { trx_free(p); }
  Scratch(const Scratch &) = delete;
  Scratch &operator=(const Scratch &) = delete;
  template <typename T> T *as() { return static_cast<T *>(p); }
};

/// The arithmetic of an element type of the collectives: float and int32_t
/// compute as they are; uint16_t is bf16 (the runtime's storage of it,
/// bf16.h; no collective moves 16-bit integers), widened to f32 (exactly)
/// for the arithmetic and rounded back to nearest even.
template <typename T> struct Arith {
  using Wide = T;
  static Wide widen(T x) { return x; }
  static T narrow(Wide x) { return x; }
};
template <> struct Arith<uint16_t> {
  using Wide = float;
  static float widen(uint16_t x) { return bf16ToF32(x); }
  static uint16_t narrow(float x) { return f32ToBf16(x); }
};

/// acc[i] = in[i] (op) acc[i], with in the partial result that arrived. A
/// bf16 sum is rounded at every combine: the partial sums travel the ring
/// in bf16, as NCCL's bf16 reductions keep theirs. Max and min pick one of
/// the two elements (NaN first), so they round nothing.
template <typename T> void combine(T *acc, const T *in, int64_t n, int32_t op) {
  using A = Arith<T>;
  using W = typename A::Wide;
  switch (op) {
  case TRX_REDUCE_SUM:
  case TRX_REDUCE_AVG:
    for (int64_t i = 0; i < n; ++i)
      acc[i] = A::narrow(A::widen(in[i]) + A::widen(acc[i]));
    break;
  case TRX_REDUCE_MAX:
    for (int64_t i = 0; i < n; ++i) {
      T a = in[i], b = acc[i];
      W wa = A::widen(a), wb = A::widen(b);
      if constexpr (std::is_floating_point_v<W>)
        acc[i] = std::isnan(wa) ? a : (std::isnan(wb) || wb > wa ? b : a);
      else
        acc[i] = wb > wa ? b : a;
    }
    break;
  case TRX_REDUCE_MIN:
    for (int64_t i = 0; i < n; ++i) {
      T a = in[i], b = acc[i];
      W wa = A::widen(a), wb = A::widen(b);
      if constexpr (std::is_floating_point_v<W>)
        acc[i] = std::isnan(wa) ? a : (std::isnan(wb) || wb < wa ? b : a);
      else
        acc[i] = wb < wa ? b : a;
    }
    break;
  }
}

/// TRX_REDUCE_AVG after the sum: a bf16 sum is widened, divided by p in f32
/// and rounded to bf16 (the f32 quotient's rounding, then bf16's).
template <typename T> void divideBy(T *buf, int64_t n, int32_t p) {
  using A = Arith<T>;
  using W = typename A::Wide;
  for (int64_t i = 0; i < n; ++i)
    buf[i] = A::narrow(A::widen(buf[i]) / W(p));
}

void checkOp(int32_t op, const char *fn) {
  if (op < TRX_REDUCE_SUM || op > TRX_REDUCE_MIN)
    abortf("%s: invalid reduction %d (expected 0 sum, 1 avg, 2 max, 3 min)", fn,
           op);
}

void checkBuffer(const void *p, int64_t n, const char *what, const char *fn) {
  if (n < 0)
    abortf("%s: negative element count %" PRId64, fn, n);
  if (n > 0 && !p)
    abortf("%s: NULL %s buffer for %" PRId64 " elements", fn, what, n);
}

int nextRank(const trx_dist_group &g, int32_t delta) {
  return g
      .posToCommRank[size_t(((g.position + delta) % g.size + g.size) % g.size)];
}

int64_t chunkBegin(int64_t n, int64_t c, int64_t p) { return n * c / p; }

//===----------------------------------------------------------------------===//
// The MPI transport: ring algorithms over MPI_Sendrecv on host memory
//===----------------------------------------------------------------------===//

template <typename T>
uint64_t ringAllReduce(const trx_dist_group &g, T *buf, int64_t n, int32_t op,
                       const char *fn) {
  const int64_t p = g.size, pos = g.position;
  const int tag = kTagBase + TRX_COMM_ALL_REDUCE;
  uint64_t sent = 0;
  if (p > 1 && n > 0) {
    const int next = nextRank(g, 1), prev = nextRank(g, -1);
    auto begin = [&](int64_t c) { return chunkBegin(n, (c % p + p) % p, p); };
    auto len = [&](int64_t c) {
      c = (c % p + p) % p;
      return chunkBegin(n, c + 1, p) - chunkBegin(n, c, p);
    };
    Scratch tmp(int64_t(sizeof(T)) * ((n + p - 1) / p), fn);
    // Reduce-scatter: at step s, send chunk pos-s, receive chunk pos-s-1
    // and fold it in; this rank ends with chunk pos+1 complete.
    for (int64_t s = 0; s < p - 1; ++s) {
      int64_t sc = pos - s, rc = pos - s - 1;
      sent +=
          sendrecv(g, buf + begin(sc), len(sc) * int64_t(sizeof(T)), next,
                   tmp.as<T>(), len(rc) * int64_t(sizeof(T)), prev, tag, fn);
      combine(buf + begin(rc), tmp.as<T>(), len(rc), op);
    }
    // All-gather: at step s, pass on chunk pos+1-s, receive chunk pos-s.
    for (int64_t s = 0; s < p - 1; ++s) {
      int64_t sc = pos + 1 - s, rc = pos - s;
      sent += sendrecv(g, buf + begin(sc), len(sc) * int64_t(sizeof(T)), next,
                       buf + begin(rc), len(rc) * int64_t(sizeof(T)), prev, tag,
                       fn);
    }
  }
  if (op == TRX_REDUCE_AVG && p > 1)
    divideBy(buf, n, int32_t(p));
  return sent;
}

template <typename T>
uint64_t ringAllGather(const trx_dist_group &g, const T *send, int64_t npr,
                       T *recv, const char *fn) {
  const int64_t p = g.size, pos = g.position;
  const int tag = kTagBase + TRX_COMM_ALL_GATHER;
  uint64_t sent = 0;
  if (npr > 0) {
    if (recv + pos * npr != send)
      memmove(recv + pos * npr, send, size_t(npr) * sizeof(T));
    const int next = nextRank(g, 1), prev = nextRank(g, -1);
    const int64_t bytes = npr * int64_t(sizeof(T));
    // Step s: pass on block pos-s, receive block pos-s-1.
    for (int64_t s = 0; s < p - 1; ++s) {
      int64_t sb = ((pos - s) % p + p) % p, rb = ((pos - s - 1) % p + p) % p;
      sent += sendrecv(g, recv + sb * npr, bytes, next, recv + rb * npr, bytes,
                       prev, tag, fn);
    }
  }
  return sent;
}

template <typename T>
uint64_t ringReduceScatter(const trx_dist_group &g, const T *send, int64_t npr,
                           T *recv, int32_t op, const char *fn) {
  const int64_t p = g.size, pos = g.position;
  const int tag = kTagBase + TRX_COMM_REDUCE_SCATTER;
  uint64_t sent = 0;
  if (npr > 0) {
    if (p == 1) {
      if (recv != send)
        memmove(recv, send, size_t(npr) * sizeof(T));
    } else {
      const int next = nextRank(g, 1), prev = nextRank(g, -1);
      const int64_t bytes = npr * int64_t(sizeof(T));
      auto block = [&](int64_t c) { return send + ((c % p + p) % p) * npr; };
      Scratch acc(2 * bytes, fn);
      T *partial = acc.as<T>(), *in = partial + npr;
      // Step s: send the partial of block pos-s-1 (at s = 0 the own input
      // block), receive the partial of block pos-s-2 and add the own input
      // block; this rank ends with block pos.
      for (int64_t s = 0; s < p - 1; ++s) {
        const T *out = s == 0 ? block(pos - 1) : partial;
        sent += sendrecv(g, out, bytes, next, in, bytes, prev, tag, fn);
        memcpy(partial, block(pos - s - 2), size_t(bytes));
        combine(partial, in, npr, op);
      }
      memcpy(recv, partial, size_t(bytes));
    }
    if (op == TRX_REDUCE_AVG && p > 1)
      divideBy(recv, npr, int32_t(p));
  }
  return sent;
}

uint64_t chainBroadcast(const trx_dist_group &g, void *buf, int64_t total,
                        int32_t root, const char *fn) {
  const int64_t p = g.size;
  const int64_t d = ((g.position - root) % p + p) % p; // place in the chain
  const int tag = kTagBase + TRX_COMM_BROADCAST;
  uint64_t sent = 0;
  if (p > 1 && total > 0) {
    const int next = nextRank(g, 1), prev = nextRank(g, -1);
    char *bytes = static_cast<char *>(buf);
    for (int64_t o = 0; o < total; o += kBcastSegmentBytes) {
      int seg = int(std::min(total - o, kBcastSegmentBytes));
      if (d > 0)
        checkMpi(MPI_Recv(bytes + o, seg, MPI_BYTE, prev, tag, g.comm,
                          MPI_STATUS_IGNORE),
                 fn, "MPI_Recv");
      if (d < p - 1) {
        checkMpi(MPI_Send(bytes + o, seg, MPI_BYTE, next, tag, g.comm), fn,
                 "MPI_Send");
        sent += uint64_t(seg);
      }
    }
  }
  return sent;
}

/// Pairwise exchange: at step k = 1..p-1 send chunk pos+k to position
/// pos+k and receive chunk pos-k from position pos-k (mod p), one
/// MPI_Sendrecv each (a pair exchanges once per call, in both directions
/// at steps k and p-k); the own chunk is copied. send and recv do not
/// overlap unless p == 1.
template <typename T>
uint64_t pairwiseAllToAll(const trx_dist_group &g, const T *send, int64_t npr,
                          T *recv, const char *fn) {
  const int64_t p = g.size, pos = g.position;
  const int tag = kTagBase + TRX_COMM_ALL_TO_ALL;
  uint64_t sent = 0;
  if (npr > 0) {
    const int64_t bytes = npr * int64_t(sizeof(T));
    if (recv != send)
      memmove(recv + pos * npr, send + pos * npr, size_t(bytes));
    for (int64_t k = 1; k < p; ++k) {
      const int64_t to = (pos + k) % p, from = (pos - k + p) % p;
      sent += sendrecv(g, send + to * npr, bytes, g.posToCommRank[size_t(to)],
                       recv + from * npr, bytes, g.posToCommRank[size_t(from)],
                       tag, fn);
    }
  }
  return sent;
}

const trx_dist_group &mpiGroup(const CommGroup &g) {
  return static_cast<const trx_dist_group &>(g);
}

/// f(T *) with a null pointer of the element type of `t` (uint16_t for
/// bf16): the typed ring for a CommDType.
template <typename F> uint64_t withElemType(CommDType t, F &&f) {
  switch (t) {
  case CommDType::F32:
    return f(static_cast<float *>(nullptr));
  case CommDType::I32:
    return f(static_cast<int32_t *>(nullptr));
  case CommDType::BF16:
    return f(static_cast<uint16_t *>(nullptr));
  }
  abortf("internal error: collective of unknown element type %d", int(t));
}

class MpiTransport final : public Transport {
public:
  const char *name() const override { return "mpi"; }
  std::string describe() const override {
    char version[MPI_MAX_LIBRARY_VERSION_STRING] = "";
    int len = 0;
    if (MPI_Get_library_version(version, &len) != MPI_SUCCESS)
      version[0] = '\0';
    std::string v(version, size_t(std::max(0, len)));
    v = v.substr(0, v.find_first_of(",\n"));
    return "mpi rings" + (v.empty() ? std::string() : " (" + v + ")") +
           ", world " + std::to_string(state().worldSize);
  }
  void initWorld(const CommWorld &) override {}
  void *setComm(uint32_t, const SplitKey &, int, const void *,
                const char *) override {
    return nullptr; // trx_dist_group::comm
  }

  // The rings run on host memory. A buffer in device memory (the CUDA
  // target with TRX_COMM=mpi: the compiled code's buffers) is staged: a
  // HostView copies it to the host (trx_copy_to_host, which waits for the
  // device's queued work) when the collective reads it, and back
  // (trx_copy_to_device) when it writes it. Host buffers are used in place.
  uint64_t allReduce(const CommGroup &g, void *buf, int64_t n, CommDType t,
                     int32_t op, const char *fn) override {
    HostView b(buf, bytesOf(n, t), /*in=*/true, /*out=*/true);
    return withElemType(t, [&](auto *type) {
      using T = std::remove_pointer_t<decltype(type)>;
      return ringAllReduce(mpiGroup(g), static_cast<T *>(b.data()), n, op, fn);
    });
  }
  uint64_t allReduceBucket(const CommGroup &g, void *const *bufs,
                           const int64_t *counts, int32_t nbufs, CommDType t,
                           int32_t op, CommQueue, const char *fn) override {
    if (nbufs == 1)
      return allReduce(g, bufs[0], counts[0], t, op, fn);
    // One message: the buffers packed, reduced, unpacked.
    int64_t total = 0;
    for (int32_t b = 0; b < nbufs; ++b)
      total += counts[b];
    const size_t es = size_t(commDTypeSize(t));
    std::vector<char> packed(size_t(total) * es);
    int64_t at = 0;
    for (int32_t b = 0; b < nbufs; at += counts[b], ++b) {
      char *slot = packed.data() + size_t(at) * es;
      if (isDeviceMemory(bufs[b]))
        trx_copy_to_host(slot, bufs[b], size_t(counts[b]) * es);
      else
        memcpy(slot, bufs[b], size_t(counts[b]) * es);
    }
    uint64_t sent = allReduce(g, packed.data(), total, t, op, fn);
    at = 0;
    for (int32_t b = 0; b < nbufs; at += counts[b], ++b) {
      const char *slot = packed.data() + size_t(at) * es;
      if (isDeviceMemory(bufs[b]))
        trx_copy_to_device(bufs[b], slot, size_t(counts[b]) * es);
      else
        memcpy(bufs[b], slot, size_t(counts[b]) * es);
    }
    return sent;
  }
  uint64_t allGather(const CommGroup &g, const void *send, int64_t npr,
                     void *recv, CommDType t, const char *fn) override {
    HostView in(send, bytesOf(npr, t));
    HostView out(recv, bytesOf(npr * g.size, t), /*in=*/false, /*out=*/true);
    return withElemType(t, [&](auto *type) {
      using T = std::remove_pointer_t<decltype(type)>;
      return ringAllGather(mpiGroup(g), static_cast<const T *>(in.data()), npr,
                           static_cast<T *>(out.data()), fn);
    });
  }
  uint64_t reduceScatter(const CommGroup &g, const void *send, int64_t npr,
                         void *recv, CommDType t, int32_t op,
                         const char *fn) override {
    HostView in(send, bytesOf(npr * g.size, t));
    HostView out(recv, bytesOf(npr, t), /*in=*/false, /*out=*/true);
    return withElemType(t, [&](auto *type) {
      using T = std::remove_pointer_t<decltype(type)>;
      return ringReduceScatter(mpiGroup(g), static_cast<const T *>(in.data()),
                               npr, static_cast<T *>(out.data()), op, fn);
    });
  }
  uint64_t broadcast(const CommGroup &g, void *buf, int64_t n, CommDType t,
                     int32_t root, const char *fn) override {
    // Only the root's bytes are read; the others' are written.
    const bool root_ = g.position == root;
    HostView b(buf, bytesOf(n, t), /*in=*/root_, /*out=*/!root_);
    return chainBroadcast(mpiGroup(g), b.data(), n * commDTypeSize(t), root,
                          fn);
  }
  uint64_t allToAll(const CommGroup &g, const void *send, int64_t npr,
                    void *recv, CommDType t, const char *fn) override {
    if (g.size == 1 && send == recv)
      return 0; // nothing moves
    HostView in(send, bytesOf(npr * g.size, t));
    HostView out(recv, bytesOf(npr * g.size, t), /*in=*/false, /*out=*/true);
    return withElemType(t, [&](auto *type) {
      using T = std::remove_pointer_t<decltype(type)>;
      return pairwiseAllToAll(mpiGroup(g), static_cast<const T *>(in.data()),
                              npr, static_cast<T *>(out.data()), fn);
    });
  }
  void send(const CommGroup &g, const void *buf, int64_t bytes, int32_t peer,
            int32_t tag, const char *fn) override {
    HostView b(buf, size_t(bytes));
    sendBytesTo(mpiGroup(g), b.data(), bytes, g.posToCommRank[size_t(peer)],
                tag, fn);
  }
  void recv(const CommGroup &g, void *buf, int64_t bytes, int32_t peer,
            int32_t tag, const char *fn) override {
    HostView b(buf, size_t(bytes), /*in=*/false, /*out=*/true);
    recvBytesFrom(mpiGroup(g), b.data(), bytes, g.posToCommRank[size_t(peer)],
                  tag, peer, fn);
  }

  // The ring shift: the receives, then the sends, posted at the start (in
  // pieces of at most gMaxPieceBytes, as sendrecv cuts them) and completed
  // at the wait. Buffers in device memory are staged: send is copied to the
  // host at the start (nothing writes it before the wait), recv back to the
  // device at the wait.
  void startShift(const CommGroup &g, const void *send, void *recv,
                  int64_t bytes, int32_t to, int32_t from, int32_t slot,
                  const char *fn) override {
    if (g.size == 1) {
      if (send != recv && bytes > 0) {
        HostView in(send, size_t(bytes));
        HostView out(recv, size_t(bytes), /*in=*/false, /*out=*/true);
        memmove(out.data(), in.data(), size_t(bytes));
      }
      return;
    }
    Shift &s = shifts_[slot];
    s.from = from;
    s.in = std::make_unique<HostView>(send, size_t(bytes));
    s.out = std::make_unique<HostView>(recv, size_t(bytes), /*in=*/false,
                                       /*out=*/true);
    const MPI_Comm comm = mpiGroup(g).comm;
    const int dst = g.posToCommRank[size_t(to)];
    const int src = g.posToCommRank[size_t(from)];
    char *r = static_cast<char *>(s.out->data());
    int64_t o = 0;
    do {
      int b = int(std::min(bytes - o, gMaxPieceBytes));
      s.reqs.emplace_back();
      s.pieces.push_back(b);
      checkMpi(
          MPI_Irecv(r + o, b, MPI_BYTE, src, kShiftTag, comm, &s.reqs.back()),
          fn, "MPI_Irecv");
      o += b;
    } while (o < bytes);
    const char *d = static_cast<const char *>(s.in->data());
    o = 0;
    do {
      int b = int(std::min(bytes - o, gMaxPieceBytes));
      s.reqs.emplace_back();
      checkMpi(
          MPI_Isend(d + o, b, MPI_BYTE, dst, kShiftTag, comm, &s.reqs.back()),
          fn, "MPI_Isend");
      o += b;
    } while (o < bytes);
  }

  void waitShift(int32_t slot, const char *fn) override {
    Shift &s = shifts_[slot];
    if (s.reqs.empty())
      return; // a group of one: done at the start
    std::vector<MPI_Status> statuses(s.reqs.size());
    int rc = MPI_Waitall(int(s.reqs.size()), s.reqs.data(), statuses.data());
    // A receive of a message of another size: a larger one fails with
    // MPI_ERR_TRUNCATE in its status, a smaller one arrives short. Either
    // means the members disagree on the size (the message, as trx_recv's).
    for (size_t i = 0; i < s.pieces.size(); ++i) {
      int err = rc == MPI_ERR_IN_STATUS ? statuses[i].MPI_ERROR : rc;
      if (err == MPI_ERR_TRUNCATE)
        abortf("%s: expected %d bytes from position %d but the message is "
               "larger",
               fn, s.pieces[i], s.from);
      if (err != MPI_SUCCESS)
        continue;
      int got = 0;
      checkMpi(MPI_Get_count(&statuses[i], MPI_BYTE, &got), fn,
               "MPI_Get_count");
      if (got != s.pieces[i])
        abortf("%s: expected %d bytes from position %d but the message has "
               "%d bytes",
               fn, s.pieces[i], s.from, got);
    }
    checkMpi(rc, fn, "MPI_Waitall");
    s.out->finish();
    s = Shift();
  }

  void finalize() override {
    for (Shift &s : shifts_)
      s = Shift();
  }

private:
  /// A ring shift in flight.
  struct Shift {
    std::vector<MPI_Request> reqs; // the receives (pieces), then the sends
    std::vector<int> pieces;       // the bytes of each receive
    int32_t from = 0;
    std::unique_ptr<HostView> in, out; // send and recv on the host
  };
  Shift shifts_[TRX_SHIFT_SLOTS];

  static size_t bytesOf(int64_t n, CommDType t) {
    return size_t(n) * size_t(commDTypeSize(t));
  }
};

//===----------------------------------------------------------------------===//
// The front: checks, groups, counters, trace
//===----------------------------------------------------------------------===//

//===--- the collective watchdog (--comm-timeout) -------------------------===//
//
// A call in flight (a collective, a send, a recv, a ring shift's start or
// wait) is marked with its start; a thread checks it every 200 ms and, once
// it has waited past the timeout, prints what it waited on and ends this
// process, so that the launcher ends the job: a stopped or vanished rank is
// an error with a message, never a silent hang.

struct Watchdog {
  std::atomic<double> timeoutMs{0}; // 0: off
  std::atomic<double> sinceMs{-1};  // start of the call in flight, or -1
  std::atomic<const char *> fn{nullptr};
  std::atomic<const CommGroup *> group{nullptr};
  std::atomic<int32_t> peer{-1};
  std::atomic<int32_t> peer2{-1}; // a ring shift's source (peer: its target)
  std::atomic<int64_t> step{0};
  std::atomic<bool> started{false};
};

Watchdog &watchdog() {
  // Never destroyed: the watchdog thread may still read it while the
  // process exits.
  static Watchdog *w = new Watchdog;
  return *w;
}

[[noreturn]] void watchdogExpired(double waitedMs) {
  Watchdog &w = watchdog();
  const CommGroup *g = w.group.load();
  std::string axes = g ? axisList(g->mask) : "", ranks;
  for (size_t i = 0; g && i < g->posToWorld.size(); ++i)
    ranks += std::string(i ? "," : "") + std::to_string(g->posToWorld[i]);
  int32_t peer = w.peer.load(), peer2 = w.peer2.load();
  auto member = [&](int32_t pos) {
    return g && pos >= 0 && size_t(pos) < g->posToWorld.size()
               ? "rank " + std::to_string(g->posToWorld[size_t(pos)])
               : std::string();
  };
  std::string with =
      !member(peer).empty() && !member(peer2).empty() && peer != peer2
          ? "with " + member(peer) + " (send) and " + member(peer2) + " (recv)"
      : !member(peer).empty() ? "with " + member(peer)
      : g                     ? "with ranks " + ranks
                              : std::string("of this rank");
  fprintf(stderr,
          "error: rank %d: %s over %s %s at step %" PRId64
          " has waited %.1f s, past --comm-timeout %.0f s: a rank of the "
          "group is stopped, stuck or gone; ending the job\n",
          trx_dist_rank(), w.fn.load() ? w.fn.load() : "a collective",
          axes.empty() ? "their groups" : axes.c_str(), with.c_str(),
          w.step.load(), waitedMs / 1000.0, w.timeoutMs.load() / 1000.0);
  fflush(stderr);
  fflush(stdout);
  // NCCL: ncclCommAbort of every communicator first (it may be called from
  // another thread), so that this rank's kernels waiting on a peer end.
  if (Transport *t = state().transport)
    t->abort();
  // Not exit(): the main thread is inside MPI; the launcher sees this
  // rank end without finalizing and ends the others.
  _exit(1);
}

/// Marks a call in flight for the watchdog while it lives.
class InFlight {
public:
  /// A call over group `g` (null: the gradient reductions in flight, over
  /// their groups), with position `peer` for a send or recv, and positions
  /// `peer` and `peer2` it sends to and receives from for a ring shift.
  InFlight(const char *fn, const CommGroup *g, int32_t peer = -1,
           int32_t peer2 = -1) {
    Watchdog &w = watchdog();
    if (w.timeoutMs.load(std::memory_order_relaxed) <= 0)
      return;
    w.fn = fn;
    w.group = g;
    w.peer = peer;
    w.peer2 = peer2;
    w.sinceMs = trx_now_ms();
    armed = true;
  }
  ~InFlight() {
    if (armed)
      watchdog().sinceMs = -1;
  }
  InFlight(const InFlight &) = delete;
  InFlight &operator=(const InFlight &) = delete;

private:
  bool armed = false;
};

/// The CommDType of a front's element type: float, int32_t, and uint16_t
/// for bf16 (its storage; no front moves 16-bit integers).
template <typename T> constexpr CommDType dtypeOf() {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, int32_t> ||
                    std::is_same_v<T, uint16_t>,
                "f32, i32 and bf16 (uint16_t) elements only");
  if constexpr (std::is_same_v<T, float>)
    return CommDType::F32;
  else if constexpr (std::is_same_v<T, int32_t>)
    return CommDType::I32;
  else
    return CommDType::BF16;
}

Transport &transportOf(const char *fn) {
  Transport *t = state().transport;
  if (!t)
    abortf("%s: the distributed runtime is not initialized", fn);
  return *t;
}

template <typename T>
void allReduce(T *buf, int64_t n, int32_t op, const int32_t *axes,
               int32_t naxes, const char *fn) {
  const double traceStart = traceOn() ? traceNow() : -1;
  checkBuffer(buf, n, "data", fn);
  checkOp(op, fn);
  trx_dist_group &g = groupOrAbort(axes, naxes, fn);
  InFlight watched(fn, &g);
  uint64_t sent = transportOf(fn).allReduce(g, buf, n, dtypeOf<T>(), op, fn);
  count(TRX_COMM_ALL_REDUCE, g.mask, sent, traceStart);
}

template <typename T>
void allGather(const T *send, int64_t npr, T *recv, const int32_t *axes,
               int32_t naxes, const char *fn) {
  const double traceStart = traceOn() ? traceNow() : -1;
  checkBuffer(send, npr, "send", fn);
  checkBuffer(recv, npr, "recv", fn);
  trx_dist_group &g = groupOrAbort(axes, naxes, fn);
  InFlight watched(fn, &g);
  uint64_t sent =
      transportOf(fn).allGather(g, send, npr, recv, dtypeOf<T>(), fn);
  count(TRX_COMM_ALL_GATHER, g.mask, sent, traceStart);
}

template <typename T>
void reduceScatter(const T *send, int64_t npr, T *recv, int32_t op,
                   const int32_t *axes, int32_t naxes, const char *fn) {
  const double traceStart = traceOn() ? traceNow() : -1;
  checkBuffer(send, npr, "send", fn);
  checkBuffer(recv, npr, "recv", fn);
  checkOp(op, fn);
  trx_dist_group &g = groupOrAbort(axes, naxes, fn);
  InFlight watched(fn, &g);
  uint64_t sent =
      transportOf(fn).reduceScatter(g, send, npr, recv, dtypeOf<T>(), op, fn);
  count(TRX_COMM_REDUCE_SCATTER, g.mask, sent, traceStart);
}

template <typename T>
void broadcast(T *buf, int64_t n, int32_t root, const int32_t *axes,
               int32_t naxes, const char *fn) {
  const double traceStart = traceOn() ? traceNow() : -1;
  checkBuffer(buf, n, "data", fn);
  trx_dist_group &g = groupOrAbort(axes, naxes, fn);
  if (root < 0 || root >= g.size)
    abortf("%s: root %d is out of range (the group has %d member%s)", fn, root,
           g.size, g.size == 1 ? "" : "s");
  InFlight watched(fn, &g);
  uint64_t sent = transportOf(fn).broadcast(g, buf, n, dtypeOf<T>(), root, fn);
  count(TRX_COMM_BROADCAST, g.mask, sent, traceStart);
}

template <typename T>
void allToAll(const T *send, int64_t npr, T *recv, const int32_t *axes,
              int32_t naxes, const char *fn) {
  const double traceStart = traceOn() ? traceNow() : -1;
  checkBuffer(send, npr, "send", fn);
  checkBuffer(recv, npr, "recv", fn);
  trx_dist_group &g = groupOrAbort(axes, naxes, fn);
  // A chunk is sent while another one arrives: recv must not be written
  // while send is still read (a group of one only copies).
  const int64_t bytes = npr * g.size * int64_t(sizeof(T));
  const char *sb = reinterpret_cast<const char *>(send);
  const char *rb = reinterpret_cast<const char *>(recv);
  if (g.size > 1 && bytes > 0 && sb < rb + bytes && rb < sb + bytes)
    abortf("%s: send and recv overlap (an all-to-all over %d members needs "
           "two buffers)",
           fn, g.size);
  InFlight watched(fn, &g);
  uint64_t sent =
      transportOf(fn).allToAll(g, send, npr, recv, dtypeOf<T>(), fn);
  count(TRX_COMM_ALL_TO_ALL, g.mask, sent, traceStart);
}

trx_dist_group &p2pGroup(const void *buf, int64_t n, int32_t peer,
                         const int32_t *axes, int32_t naxes, int32_t tag,
                         const char *fn) {
  checkBuffer(buf, n, "data", fn);
  trx_dist_group &g = groupOrAbort(axes, naxes, fn);
  if (tag < 0 || tag > TRX_DIST_MAX_TAG)
    abortf("%s: tag %d is out of range (0..%d)", fn, tag, TRX_DIST_MAX_TAG);
  if (peer < 0 || peer >= g.size)
    abortf("%s: peer %d is out of range (the group has %d member%s)", fn, peer,
           g.size, g.size == 1 ? "" : "s");
  if (peer == g.position)
    abortf("%s: peer %d is this rank's own position", fn, peer);
  return g;
}

template <typename T>
void sendTo(const T *buf, int64_t n, int32_t peer, const int32_t *axes,
            int32_t naxes, int32_t tag, const char *fn) {
  const double traceStart = traceOn() ? traceNow() : -1;
  trx_dist_group &g = p2pGroup(buf, n, peer, axes, naxes, tag, fn);
  int64_t bytes = n * int64_t(sizeof(T));
  InFlight watched(fn, &g, peer);
  transportOf(fn).send(g, buf, bytes, peer, tag, fn);
  count(TRX_COMM_SEND, g.mask, uint64_t(bytes), traceStart);
}

template <typename T>
void recvFrom(T *buf, int64_t n, int32_t peer, const int32_t *axes,
              int32_t naxes, int32_t tag, const char *fn) {
  const double traceStart = traceOn() ? traceNow() : -1;
  trx_dist_group &g = p2pGroup(buf, n, peer, axes, naxes, tag, fn);
  int64_t bytes = n * int64_t(sizeof(T));
  InFlight watched(fn, &g, peer);
  transportOf(fn).recv(g, buf, bytes, peer, tag, fn);
  count(TRX_COMM_RECV, g.mask, uint64_t(bytes), traceStart);
}

bool validAxisName(const char *s) {
  size_t len = strlen(s);
  if (len == 0 || len > 31)
    return false;
  for (size_t i = 0; i < len; ++i) {
    char c = s[i];
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
          (c >= '0' && c <= '9') || c == '_'))
      return false;
  }
  return true;
}

/// Whether this process was started by a launcher (mpirun, srun) rather
/// than as an MPI singleton.
bool underLauncher() {
  for (const char *v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK",
                        "PMI_RANK", "MPI_LOCALNRANKS"})
    if (getenv(v))
      return true;
  return false;
}

void freeComms() {
  DistState &st = state();
  st.groups.clear();
  if (st.transport)
    st.transport->finalize();
  st.setHandles.clear();
  for (auto &entry : st.setComms)
    if (entry.second != MPI_COMM_NULL)
      MPI_Comm_free(&entry.second);
  st.setComms.clear();
}

// Transports: the MPI one, and at most a few registered by other runtime
// parts before main (constant-initialized, so registration order against
// other constructors does not matter).
constexpr int kMaxTransports = 4;
struct Registered {
  const char *name;
  Transport *(*factory)();
};
Registered gRegistered[kMaxTransports];
int gNumRegistered = 0;
thread_local int gStreamOrderedDepth = 0;

/// The transport trx_dist_init uses: TRX_COMM if set, else the last one
/// registered, else MPI. nullptr with `error` set for an unknown or
/// unavailable name.
Transport *chooseTransport(std::string &error) {
  static MpiTransport mpiTransport;
  const char *want = getenv("TRX_COMM");
  if (!want || !*want)
    return gNumRegistered ? gRegistered[gNumRegistered - 1].factory()
                          : &mpiTransport;
  if (!strcmp(want, "mpi"))
    return &mpiTransport;
  std::string known = "mpi";
  for (int i = gNumRegistered; i-- > 0;) {
    if (!strcmp(want, gRegistered[i].name))
      return gRegistered[i].factory();
    known += std::string(", ") + gRegistered[i].name;
  }
  error = std::string("TRX_COMM='") + want +
          "' is not a transport of this binary (it has " + known + ")";
  return nullptr;
}

/// The node of every world rank, numbered in the order of each node's
/// lowest rank: the pretend nodes of TRX_RANKS_PER_NODE=K (ranks [0,K) node
/// 0, [K,2K) node 1, ...) when `ranksPerNode` > 0, else the ranks that
/// share memory (MPI_Comm_split_type MPI_COMM_TYPE_SHARED, collective over
/// the world).
void setNodes(DistState &st, int32_t ranksPerNode) {
  const int size = st.worldSize;
  st.nodeOf.assign(size_t(size), 0);
  if (ranksPerNode > 0) {
    for (int r = 0; r < size; ++r)
      st.nodeOf[size_t(r)] = int32_t(r / ranksPerNode);
  } else if (st.mpi && size > 1) {
    MPI_Comm local = MPI_COMM_NULL;
    checkMpi(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED,
                                 st.worldRank, MPI_INFO_NULL, &local),
             "trx_dist_init", "MPI_Comm_split_type");
    checkMpi(MPI_Comm_set_errhandler(local, MPI_ERRORS_RETURN), "trx_dist_init",
             "MPI_Comm_set_errhandler");
    // The node's leader: its lowest world rank.
    int leader = st.worldRank;
    checkMpi(MPI_Allreduce(MPI_IN_PLACE, &leader, 1, MPI_INT, MPI_MIN, local),
             "trx_dist_init", "MPI_Allreduce");
    MPI_Comm_free(&local);
    std::vector<int> leaders(size_t(size), 0);
    checkMpi(MPI_Allgather(&leader, 1, MPI_INT, leaders.data(), 1, MPI_INT,
                           MPI_COMM_WORLD),
             "trx_dist_init", "MPI_Allgather");
    // A rank's leader is at most the rank itself, so the leaders come in
    // increasing order of their first appearance.
    std::map<int, int32_t> index;
    for (int r = 0; r < size; ++r) {
      auto it = index.emplace(leaders[size_t(r)], int32_t(index.size())).first;
      st.nodeOf[size_t(r)] = it->second;
    }
  }
  st.nodeSizes.clear();
  for (int32_t n : st.nodeOf) {
    if (size_t(n) >= st.nodeSizes.size())
      st.nodeSizes.resize(size_t(n) + 1, 0);
    ++st.nodeSizes[size_t(n)];
  }
}

} // namespace

//===----------------------------------------------------------------------===//
// World setup
//===----------------------------------------------------------------------===//

extern "C" int trx_dist_init(int *argc, char ***argv,
                             const char *const *axis_names,
                             const int64_t *axis_sizes, int32_t naxes,
                             char *err, size_t errlen) {
  DistState &st = state();
  if (st.active)
    return fail(TRX_ERR_ARG, err, errlen, "trx_dist_init: already initialized");
  if (st.everStarted)
    return fail(TRX_ERR_ARG, err, errlen,
                "trx_dist_init: MPI was already finalized and cannot be "
                "started again");
  if (naxes < 0 || naxes > kMaxAxes)
    return fail(TRX_ERR_ARG, err, errlen,
                "trx_dist_init: %d mesh axes (expected 0..%d)", naxes,
                kMaxAxes);
  if (naxes > 0 && (!axis_names || !axis_sizes))
    return fail(TRX_ERR_ARG, err, errlen,
                "trx_dist_init: NULL axis names or sizes");
  std::vector<std::string> names;
  std::vector<int64_t> sizes;
  int64_t devices = 1;
  for (int32_t i = 0; i < naxes; ++i) {
    const char *name = axis_names[i];
    if (!name || !validAxisName(name))
      return fail(TRX_ERR_ARG, err, errlen,
                  "trx_dist_init: axis %d: invalid name %s%s%s (expected "
                  "[A-Za-z0-9_]+, at most 31 characters)",
                  i, name ? "'" : "", name ? name : "NULL", name ? "'" : "");
    if (std::find(names.begin(), names.end(), name) != names.end())
      return fail(TRX_ERR_ARG, err, errlen,
                  "trx_dist_init: axis '%s' is listed twice", name);
    if (axis_sizes[i] < 1)
      return fail(TRX_ERR_ARG, err, errlen,
                  "trx_dist_init: axis '%s' has size %" PRId64
                  " (must be >= 1)",
                  name, axis_sizes[i]);
    if (axis_sizes[i] > INT_MAX / devices)
      return fail(TRX_ERR_ARG, err, errlen,
                  "trx_dist_init: the mesh has more than %d devices", INT_MAX);
    devices *= axis_sizes[i];
    names.push_back(name);
    sizes.push_back(axis_sizes[i]);
  }

  gMaxPieceBytes = int64_t(1) << 30;
  if (const char *v = getenv("TRX_COMM_MAX_MESSAGE")) {
    char *end = nullptr;
    long long b = strtoll(v, &end, 10);
    if (!*v || *end || b < 1 || b > (1ll << 30))
      return fail(TRX_ERR_ARG, err, errlen,
                  "TRX_COMM_MAX_MESSAGE='%s' is not a byte count in 1..%lld", v,
                  1ll << 30);
    gMaxPieceBytes = b;
  }
  // Pretend nodes for tests of the topology check on one machine.
  int32_t ranksPerNode = 0;
  if (const char *v = getenv("TRX_RANKS_PER_NODE")) {
    char *end = nullptr;
    errno = 0;
    long long k = strtoll(v, &end, 10);
    if (!(*v >= '0' && *v <= '9') || *end || errno || k < 1 || k > INT_MAX)
      return fail(TRX_ERR_ARG, err, errlen,
                  "TRX_RANKS_PER_NODE='%s' is not a number of ranks per node "
                  "(an integer >= 1)",
                  v);
    ranksPerNode = int32_t(k);
  }
  std::string transportError;
  Transport *transport = chooseTransport(transportError);
  if (!transport)
    return fail(TRX_ERR_ARG, err, errlen, "trx_dist_init: %s",
                transportError.c_str());
  // Before MPI_Init: a singleton's MPI sets these variables itself.
  const bool launched = underLauncher();
  // A device transport on a one-device mesh without a launcher needs no
  // MPI (the GPU benchmark's machine has none): a world of one rank.
  const bool withoutMpi =
      !launched && devices == 1 && strcmp(transport->name(), "mpi") != 0;
  int already = 0;
  MPI_Initialized(&already);
  if (withoutMpi) {
    st.worldRank = 0;
    st.worldSize = 1;
  } else if (!already) {
    int provided = 0;
    int rc = MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided);
    if (rc != MPI_SUCCESS)
      return fail(TRX_ERR_IO, err, errlen, "MPI_Init_thread failed: %s",
                  mpiErrorString(rc).c_str());
    st.everStarted = true;
    st.ownsMpi = true;
    if (provided < MPI_THREAD_FUNNELED) {
      MPI_Finalize();
      return fail(TRX_ERR_IO, err, errlen,
                  "MPI provides thread level %d, below MPI_THREAD_FUNNELED",
                  provided);
    }
  }
  // From here on MPI errors come back as codes; checkMpi turns them into
  // trx_dist_abort with the call's name.
  int rank = 0, size = 1;
  if (!withoutMpi) {
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
  }

  if (devices != size) {
    std::string mesh = meshString(names, sizes);
    if (size == 1 && !launched)
      setErr(err, errlen,
             "mesh %s needs %" PRId64 " ranks but the program runs as one "
             "process without mpirun (start it with mpirun -np %" PRId64 ")",
             mesh.c_str(), devices, devices);
    else
      setErr(err, errlen,
             "mesh %s needs %" PRId64 " rank%s but mpirun "
             "started %d",
             mesh.c_str(), devices, devices == 1 ? "" : "s", size);
    // Every rank sees the same sizes, so all of them get here.
    if (st.ownsMpi) {
      MPI_Finalize();
      st.ownsMpi = false;
    }
    return TRX_ERR_ARG;
  }

  st.worldRank = rank;
  st.worldSize = size;
  st.names = names;
  st.sizes = sizes;
  st.coords.assign(size_t(naxes), 0);
  for (int32_t a = naxes, rem = rank; a-- > 0;) {
    st.coords[size_t(a)] = rem % sizes[size_t(a)];
    rem = int32_t(rem / sizes[size_t(a)]);
  }
  st.mpi = !withoutMpi;
  st.transport = transport;
  st.active = true;

  CommWorld world;
  world.rank = rank;
  world.size = size;
  world.mpi = st.mpi;
  world.sizes = st.sizes;
  world.coords = st.coords;
  transport->initWorld(world);

  // One communicator per axis: the ranks that agree on every other axis
  // (color) ordered by their coordinate on this one (key); the transport's
  // from the same color and key, in axis order on every rank.
  for (int32_t a = 0; a < naxes; ++a) {
    const uint32_t mask = 1u << a;
    SplitKey key = splitKeyOf(mask, st.coords, st.sizes);
    MPI_Comm comm = MPI_COMM_NULL;
    if (st.mpi) {
      checkMpi(MPI_Comm_split(MPI_COMM_WORLD, key.color, key.key, &comm),
               "trx_dist_init", "MPI_Comm_split");
      checkMpi(MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN),
               "trx_dist_init", "MPI_Comm_set_errhandler");
    }
    st.setComms[mask] = comm;
    st.setHandles[mask] =
        transport->setComm(mask, key, int(sizes[size_t(a)]),
                           st.mpi ? &comm : nullptr, "trx_dist_init");
  }
  setNodes(st, ranksPerNode);
  return TRX_OK;
}

extern "C" void trx_dist_finalize(void) {
  DistState &st = state();
  if (!st.active)
    return;
  // A shift in flight still has the peers' messages and its buffers.
  for (int32_t i = 0; i < TRX_SHIFT_SLOTS; ++i)
    if (const ShiftSlot &s = st.shifts[i]; s.inFlight)
      abortf("trx_dist_finalize: the ring shift of slot %d (%s over %s) was "
             "not waited for",
             i, s.startFn, axisList(s.group->mask).c_str());
  freeComms();
  st.transport = nullptr;
  st.active = false;
  st.names.clear();
  st.sizes.clear();
  st.coords.clear();
  st.nodeOf.clear();
  st.nodeSizes.clear();
  st.worldRank = 0;
  st.worldSize = 1;
  if (st.ownsMpi) {
    MPI_Finalize();
    st.ownsMpi = false;
  }
}

extern "C" int trx_dist_initialized(void) { return state().active ? 1 : 0; }
extern "C" int trx_dist_rank(void) { return state().worldRank; }
extern "C" int trx_dist_world_size(void) { return state().worldSize; }

extern "C" int32_t trx_dist_num_axes(void) {
  return state().active ? int32_t(state().sizes.size()) : 0;
}

extern "C" const char *trx_dist_axis_name(int32_t axis) {
  const DistState &st = state();
  if (axis < 0 || size_t(axis) >= st.names.size())
    return nullptr;
  return st.names[size_t(axis)].c_str();
}

extern "C" int64_t trx_dist_axis_size(int32_t axis) {
  const DistState &st = state();
  if (axis < 0 || size_t(axis) >= st.sizes.size())
    return -1;
  return st.sizes[size_t(axis)];
}

extern "C" int64_t trx_dist_coord(int32_t axis) {
  const DistState &st = state();
  if (axis < 0 || size_t(axis) >= st.coords.size())
    return -1;
  return st.coords[size_t(axis)];
}

extern "C" int32_t trx_dist_axis_index(const char *name) {
  const DistState &st = state();
  if (!name)
    return -1;
  for (size_t i = 0; i < st.names.size(); ++i)
    if (st.names[i] == name)
      return int32_t(i);
  return -1;
}

extern "C" int32_t trx_dist_num_nodes(void) {
  return state().active ? int32_t(state().nodeSizes.size()) : 0;
}

extern "C" int32_t trx_dist_node_of(int32_t rank) {
  const DistState &st = state();
  if (!st.active || rank < 0 || size_t(rank) >= st.nodeOf.size())
    return -1;
  return st.nodeOf[size_t(rank)];
}

extern "C" int32_t trx_dist_node_size(int32_t node) {
  const DistState &st = state();
  if (!st.active || node < 0 || size_t(node) >= st.nodeSizes.size())
    return -1;
  return st.nodeSizes[size_t(node)];
}

extern "C" char *trx_dist_coord_str(char *buf, size_t len) {
  if (!buf || len == 0)
    return buf;
  const DistState &st = state();
  std::string s;
  for (size_t i = 0; i < st.coords.size(); ++i) {
    if (i)
      s += ' ';
    s += st.names[i] + "=" + std::to_string(st.coords[i]);
  }
  snprintf(buf, len, "%s", s.c_str());
  return buf;
}

extern "C" const trx_dist_group *trx_dist_comm(const int32_t *axes, int32_t n) {
  std::string error;
  trx_dist_group *g = lookupGroup(axes, n, "trx_dist_comm", error);
  if (!g)
    setLastError("trx_dist_comm: %s", error.c_str());
  return g;
}

extern "C" int32_t trx_dist_group_size(const trx_dist_group *g) {
  return g ? g->size : 0;
}
extern "C" int32_t trx_dist_group_position(const trx_dist_group *g) {
  return g ? g->position : -1;
}
extern "C" int32_t trx_dist_group_member(const trx_dist_group *g, int32_t pos) {
  if (!g || pos < 0 || pos >= g->size)
    return -1;
  return g->posToWorld[size_t(pos)];
}
extern "C" uint32_t trx_dist_group_mask(const trx_dist_group *g) {
  return g ? g->mask : 0;
}

extern "C" void trx_dist_barrier(void) {
  if (!state().active)
    abortf("trx_dist_barrier: the distributed runtime is not initialized");
  if (!state().mpi)
    return; // one rank
  checkMpi(MPI_Barrier(MPI_COMM_WORLD), "trx_dist_barrier", "MPI_Barrier");
}

//===----------------------------------------------------------------------===//
// Failure handling
//===----------------------------------------------------------------------===//

extern "C" void trx_dist_abort(const char *message) {
  if (!message)
    message = "(no message)";
  // A device transport first aborts its communicators (in-flight work of a
  // dead peer would otherwise keep this process waiting); only once, should
  // the abort itself fail.
  static std::atomic<bool> aborting{false};
  if (Transport *t = state().transport; t && !aborting.exchange(true))
    t->abort();
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  fflush(stdout);
  if (!initialized || finalized) {
    fprintf(stderr, "triax runtime: %s\n", message);
    fflush(stderr);
    exit(1);
  }
  const DistState &st = state();
  int rank = st.worldRank;
  if (!st.active)
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  char coords[512];
  trx_dist_coord_str(coords, sizeof(coords));
  if (st.active && !st.coords.empty())
    fprintf(stderr, "rank %d (%s): %s\n", rank, coords, message);
  else
    fprintf(stderr, "rank %d: %s\n", rank, message);
  fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, 1);
  // MPI_Abort does not return; should an MPI let it, still end this rank.
  _Exit(1);
}

extern "C" void trx_dist_check_mpi(int mpi_rc, const char *call) {
  if (mpi_rc != MPI_SUCCESS)
    abortf("%s failed: %s", call ? call : "MPI call",
           mpiErrorString(mpi_rc).c_str());
}

//===----------------------------------------------------------------------===//
// Collectives and point-to-point
//===----------------------------------------------------------------------===//

extern "C" void trx_all_reduce(float *buf, int64_t n, int32_t op,
                               const int32_t *axes, int32_t naxes) {
  allReduce(buf, n, op, axes, naxes, "trx_all_reduce");
}
extern "C" void trx_all_gather(const float *send, int64_t n_per_rank,
                               float *recv, const int32_t *axes,
                               int32_t naxes) {
  allGather(send, n_per_rank, recv, axes, naxes, "trx_all_gather");
}
extern "C" void trx_reduce_scatter(const float *send, int64_t n_per_rank,
                                   float *recv, int32_t op, const int32_t *axes,
                                   int32_t naxes) {
  reduceScatter(send, n_per_rank, recv, op, axes, naxes, "trx_reduce_scatter");
}
extern "C" void trx_broadcast(float *buf, int64_t n, int32_t root,
                              const int32_t *axes, int32_t naxes) {
  broadcast(buf, n, root, axes, naxes, "trx_broadcast");
}
extern "C" void trx_send(const float *buf, int64_t n, int32_t peer,
                         const int32_t *axes, int32_t naxes, int32_t tag) {
  sendTo(buf, n, peer, axes, naxes, tag, "trx_send");
}
extern "C" void trx_recv(float *buf, int64_t n, int32_t peer,
                         const int32_t *axes, int32_t naxes, int32_t tag) {
  recvFrom(buf, n, peer, axes, naxes, tag, "trx_recv");
}

extern "C" void trx_all_to_all(const float *send, int64_t n_per_rank,
                               float *recv, const int32_t *axes,
                               int32_t naxes) {
  allToAll(send, n_per_rank, recv, axes, naxes, "trx_all_to_all");
}

extern "C" void trx_all_reduce_i32(int32_t *buf, int64_t n, int32_t op,
                                   const int32_t *axes, int32_t naxes) {
  allReduce(buf, n, op, axes, naxes, "trx_all_reduce_i32");
}
extern "C" void trx_all_gather_i32(const int32_t *send, int64_t n_per_rank,
                                   int32_t *recv, const int32_t *axes,
                                   int32_t naxes) {
  allGather(send, n_per_rank, recv, axes, naxes, "trx_all_gather_i32");
}
extern "C" void trx_reduce_scatter_i32(const int32_t *send, int64_t n_per_rank,
                                       int32_t *recv, int32_t op,
                                       const int32_t *axes, int32_t naxes) {
  reduceScatter(send, n_per_rank, recv, op, axes, naxes,
                "trx_reduce_scatter_i32");
}
extern "C" void trx_broadcast_i32(int32_t *buf, int64_t n, int32_t root,
                                  const int32_t *axes, int32_t naxes) {
  broadcast(buf, n, root, axes, naxes, "trx_broadcast_i32");
}
extern "C" void trx_send_i32(const int32_t *buf, int64_t n, int32_t peer,
                             const int32_t *axes, int32_t naxes, int32_t tag) {
  sendTo(buf, n, peer, axes, naxes, tag, "trx_send_i32");
}
extern "C" void trx_recv_i32(int32_t *buf, int64_t n, int32_t peer,
                             const int32_t *axes, int32_t naxes, int32_t tag) {
  recvFrom(buf, n, peer, axes, naxes, tag, "trx_recv_i32");
}
extern "C" void trx_all_to_all_i32(const int32_t *send, int64_t n_per_rank,
                                   int32_t *recv, const int32_t *axes,
                                   int32_t naxes) {
  allToAll(send, n_per_rank, recv, axes, naxes, "trx_all_to_all_i32");
}

extern "C" void trx_all_reduce_bf16(uint16_t *buf, int64_t n, int32_t op,
                                    const int32_t *axes, int32_t naxes) {
  allReduce(buf, n, op, axes, naxes, "trx_all_reduce_bf16");
}
extern "C" void trx_all_gather_bf16(const uint16_t *send, int64_t n_per_rank,
                                    uint16_t *recv, const int32_t *axes,
                                    int32_t naxes) {
  allGather(send, n_per_rank, recv, axes, naxes, "trx_all_gather_bf16");
}
extern "C" void trx_reduce_scatter_bf16(const uint16_t *send,
                                        int64_t n_per_rank, uint16_t *recv,
                                        int32_t op, const int32_t *axes,
                                        int32_t naxes) {
  reduceScatter(send, n_per_rank, recv, op, axes, naxes,
                "trx_reduce_scatter_bf16");
}
extern "C" void trx_send_bf16(const uint16_t *buf, int64_t n, int32_t peer,
                              const int32_t *axes, int32_t naxes, int32_t tag) {
  sendTo(buf, n, peer, axes, naxes, tag, "trx_send_bf16");
}
extern "C" void trx_recv_bf16(uint16_t *buf, int64_t n, int32_t peer,
                              const int32_t *axes, int32_t naxes, int32_t tag) {
  recvFrom(buf, n, peer, axes, naxes, tag, "trx_recv_bf16");
}
extern "C" void trx_all_to_all_bf16(const uint16_t *send, int64_t n_per_rank,
                                    uint16_t *recv, const int32_t *axes,
                                    int32_t naxes) {
  allToAll(send, n_per_rank, recv, axes, naxes, "trx_all_to_all_bf16");
}

const CommGroup *triax::rt::commGroup(const int32_t *axes, int32_t naxes) {
  return trx_dist_comm(axes, naxes);
}

//===----------------------------------------------------------------------===//
// The ring shifts of context parallelism
//===----------------------------------------------------------------------===//

namespace {
ShiftSlot &shiftSlot(int64_t slot, const char *fn) {
  if (slot < 0 || slot >= TRX_SHIFT_SLOTS)
    abortf("%s: slot %" PRId64 " is out of range (0..%d)", fn, slot,
           TRX_SHIFT_SLOTS - 1);
  return state().shifts[slot];
}
} // namespace

void triax::rt::shiftStart(const void *send, void *recv, int64_t n,
                           int64_t elemBytes, const int32_t *axes,
                           int32_t naxes, int64_t slot, const char *fn) {
  const double traceStart = traceOn() ? traceNow() : -1;
  ShiftSlot &s = shiftSlot(slot, fn);
  checkBuffer(send, n, "send", fn);
  checkBuffer(recv, n, "recv", fn);
  trx_dist_group &g = groupOrAbort(axes, naxes, fn);
  if (s.inFlight)
    abortf("%s: slot %" PRId64 " is already in flight (%s over %s, not "
           "waited for yet)",
           fn, slot, s.startFn, axisList(s.group->mask).c_str());
  const int64_t bytes = n * elemBytes;
  // Both transfers run at once: recv must not be written while send is
  // being read (a group of one only copies).
  const char *sb = reinterpret_cast<const char *>(send);
  const char *rb = reinterpret_cast<const char *>(recv);
  if (g.size > 1 && bytes > 0 && sb < rb + bytes && rb < sb + bytes)
    abortf("%s: send and recv overlap (a shift over %d members needs two "
           "buffers)",
           fn, g.size);
  const int32_t to = (g.position + 1) % g.size;
  const int32_t from = (g.position + g.size - 1) % g.size;
  {
    InFlight watched(fn, &g, to, from);
    transportOf(fn).startShift(g, send, recv, bytes, to, from, int32_t(slot),
                               fn);
  }
  s.inFlight = true;
  s.group = &g;
  s.bytes = g.size > 1 ? uint64_t(bytes) : 0;
  s.to = to;
  s.from = from;
  s.traceStart = traceStart;
  s.startFn = fn;
}

void triax::rt::shiftWait(int64_t slot, const char *fn) {
  ShiftSlot &s = shiftSlot(slot, fn);
  Transport &t = transportOf(fn);
  if (!s.inFlight)
    abortf("%s: slot %" PRId64 " is not in flight (never started, or "
           "waited for already)",
           fn, slot);
  {
    InFlight watched(fn, s.group, s.to, s.from);
    t.waitShift(int32_t(slot), fn);
  }
  s.inFlight = false;
  // One send and one recv of the buffer; --trace shows them from the start
  // to the wait, over the compute work between.
  count(TRX_COMM_SEND, s.group->mask, s.bytes, s.traceStart);
  count(TRX_COMM_RECV, s.group->mask, s.bytes, s.traceStart);
}

extern "C" void trx_shift_start(const float *send, float *recv, int64_t n,
                                const int32_t *axes, int32_t naxes,
                                int32_t slot) {
  shiftStart(send, recv, n, int64_t(sizeof(float)), axes, naxes, slot,
             "trx_shift_start");
}

extern "C" void trx_shift_wait_slot(int32_t slot) {
  shiftWait(slot, "trx_shift_wait_slot");
}

//===----------------------------------------------------------------------===//
// Counters
//===----------------------------------------------------------------------===//

namespace {
uint64_t sumCounter(std::atomic<uint64_t> (&table)[TRX_COMM_NKINDS][kNumMasks],
                    int32_t kind, uint32_t mask) {
  if (kind < TRX_COMM_ANY_KIND || kind >= TRX_COMM_NKINDS || mask >= kNumMasks)
    return 0;
  uint64_t total = 0;
  for (int32_t k = 0; k < TRX_COMM_NKINDS; ++k) {
    if (kind != TRX_COMM_ANY_KIND && k != kind)
      continue;
    if (mask != TRX_COMM_ANY_AXES) {
      total += table[k][mask].load(std::memory_order_relaxed);
      continue;
    }
    for (uint32_t m = 0; m < kNumMasks; ++m)
      total += table[k][m].load(std::memory_order_relaxed);
  }
  return total;
}
} // namespace

extern "C" uint64_t trx_comm_bytes(int32_t kind, uint32_t axis_mask) {
  return sumCounter(gBytes, kind, axis_mask);
}

extern "C" uint64_t trx_comm_calls(int32_t kind, uint32_t axis_mask) {
  return sumCounter(gCalls, kind, axis_mask);
}

extern "C" const char *trx_comm_kind_name(int32_t kind) {
  if (kind < 0 || kind >= TRX_COMM_NKINDS)
    return "invalid";
  return kKindNames[kind];
}

extern "C" void trx_comm_reset_counters(void) {
  for (int k = 0; k < TRX_COMM_NKINDS; ++k)
    for (uint32_t m = 0; m < kNumMasks; ++m) {
      gBytes[k][m].store(0, std::memory_order_relaxed);
      gCalls[k][m].store(0, std::memory_order_relaxed);
    }
}

extern "C" void trx_comm_print_table(FILE *out) {
  if (!out)
    return;
  const DistState &st = state();
  char coords[512];
  trx_dist_coord_str(coords, sizeof(coords));
  fprintf(out,
          "comm of rank %d (%s): bytes sent (calls); recv: bytes "
          "received\n",
          st.worldRank, coords);
  // Rows: the axis sets used, fewer axes first, then in mesh order.
  std::vector<std::pair<std::vector<int32_t>, uint32_t>> sets;
  for (uint32_t m = 1; m < kNumMasks; ++m)
    if (trx_comm_calls(TRX_COMM_ANY_KIND, m))
      sets.emplace_back(axesOfMask(m), m);
  std::sort(sets.begin(), sets.end(), [](const auto &a, const auto &b) {
    if (a.first.size() != b.first.size())
      return a.first.size() < b.first.size();
    return a.first < b.first;
  });
  std::vector<std::string> labels;
  int width = 12;
  for (const auto &set : sets) {
    std::string label;
    for (int32_t a : set.first) {
      if (!label.empty())
        label += ',';
      label += size_t(a) < st.names.size() ? st.names[size_t(a)]
                                           : "axis" + std::to_string(a);
    }
    width = std::max(width, int(label.size()));
    labels.push_back(label);
  }
  fprintf(out, "%-*s", width, "axes");
  for (int k = 0; k < TRX_COMM_NKINDS; ++k)
    fprintf(out, " %20s", kKindNames[k]);
  fprintf(out, "\n");
  auto row = [&](const std::string &label, uint32_t mask) {
    fprintf(out, "%-*s", width, label.c_str());
    for (int k = 0; k < TRX_COMM_NKINDS; ++k) {
      char cell[64];
      snprintf(cell, sizeof(cell), "%" PRIu64 " (%" PRIu64 ")",
               trx_comm_bytes(k, mask), trx_comm_calls(k, mask));
      fprintf(out, " %20s", cell);
    }
    fprintf(out, "\n");
  };
  for (size_t i = 0; i < sets.size(); ++i)
    row(labels[i], sets[i].second);
  row("total", TRX_COMM_ANY_AXES);
}

//===----------------------------------------------------------------------===//
// Gradient buckets, the transport, the shared split rule
//===----------------------------------------------------------------------===//

namespace {
/// trx_all_reduce_bucket and _bf16: one all_reduce of the buffers'
/// concatenation, on the communication stream where the transport has one.
template <typename T>
void allReduceBucket(T *const *bufs, const int64_t *counts, int32_t nbufs,
                     int32_t op, const int32_t *axes, int32_t naxes,
                     const char *fn) {
  const double traceStart = traceOn() ? traceNow() : -1;
  if (nbufs < 1 || !bufs || !counts)
    abortf("%s: no buffers in the bucket", fn);
  for (int32_t b = 0; b < nbufs; ++b)
    checkBuffer(bufs[b], counts[b], "data", fn);
  checkOp(op, fn);
  trx_dist_group &g = groupOrAbort(axes, naxes, fn);
  std::vector<void *> raw(bufs, bufs + nbufs);
  InFlight watched(fn, &g);
  uint64_t sent = transportOf(fn).allReduceBucket(
      g, raw.data(), counts, nbufs, dtypeOf<T>(), op, CommQueue::Grads, fn);
  count(TRX_COMM_ALL_REDUCE, g.mask, sent, traceStart);
}
} // namespace

extern "C" void trx_all_reduce_bucket(float *const *bufs, const int64_t *counts,
                                      int32_t nbufs, int32_t op,
                                      const int32_t *axes, int32_t naxes) {
  allReduceBucket(bufs, counts, nbufs, op, axes, naxes,
                  "trx_all_reduce_bucket");
}

extern "C" void trx_all_reduce_bucket_bf16(uint16_t *const *bufs,
                                           const int64_t *counts, int32_t nbufs,
                                           int32_t op, const int32_t *axes,
                                           int32_t naxes) {
  allReduceBucket(bufs, counts, nbufs, op, axes, naxes,
                  "trx_all_reduce_bucket_bf16");
}

extern "C" void trx_comm_wait_grads(void) {
  if (Transport *t = state().transport) {
    InFlight watched("trx_comm_wait_grads (the gradient reductions)", nullptr);
    t->waitGrads();
  }
}

extern "C" void trx_comm_grads_begin(void) {
  if (Transport *t = state().transport)
    t->beginGrads("trx_comm_grads_begin");
}

extern "C" void trx_comm_grads_end(void) {
  if (Transport *t = state().transport)
    t->endGrads("trx_comm_grads_end");
}

extern "C" const char *trx_comm_transport_name(void) {
  Transport *t = state().transport;
  return t ? t->name() : "none";
}

extern "C" size_t trx_comm_describe(char *buf, size_t len) {
  Transport *t = state().transport;
  std::string s = t ? t->describe() : "none (the distributed runtime is off)";
  if (buf && len)
    snprintf(buf, len, "%s", s.c_str());
  return s.size();
}

void triax::rt::registerTransport(const char *name, Transport *(*factory)()) {
  if (!name || !factory || gNumRegistered >= kMaxTransports)
    return;
  gRegistered[gNumRegistered++] = Registered{name, factory};
}

Transport *triax::rt::activeTransport() { return state().transport; }

triax::rt::StreamOrderedScope::StreamOrderedScope() { ++gStreamOrderedDepth; }
triax::rt::StreamOrderedScope::~StreamOrderedScope() { --gStreamOrderedDepth; }
bool triax::rt::StreamOrderedScope::active() { return gStreamOrderedDepth > 0; }

void triax::rt::commAbortf(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  std::string msg = vformat(fmt, ap);
  va_end(ap);
  trx_dist_abort(msg.c_str());
  _Exit(1); // not reached: trx_dist_abort does not return
}

SplitKey triax::rt::splitKeyOf(uint32_t mask,
                               const std::vector<int64_t> &coords,
                               const std::vector<int64_t> &sizes) {
  int64_t color = 0, key = 0;
  for (size_t a = 0; a < sizes.size() && a < coords.size(); ++a) {
    if (mask & (1u << a))
      key = key * sizes[a] + coords[a];
    else
      color = color * sizes[a] + coords[a];
  }
  return SplitKey{int(color), int(key)};
}

uint64_t triax::rt::ringAllReduceBytes(int64_t n, int64_t p, int64_t pos,
                                       int64_t elemSize) {
  if (p <= 1 || n <= 0)
    return 0;
  auto len = [&](int64_t c) {
    c = (c % p + p) % p;
    return chunkBegin(n, c + 1, p) - chunkBegin(n, c, p);
  };
  uint64_t sent = 0;
  for (int64_t s = 0; s < p - 1; ++s)
    sent += uint64_t((len(pos - s) + len(pos + 1 - s)) * elemSize);
  return sent;
}

uint64_t triax::rt::ringAllGatherBytes(int64_t npr, int64_t p,
                                       int64_t elemSize) {
  return npr > 0 && p > 1 ? uint64_t((p - 1) * npr * elemSize) : 0;
}

uint64_t triax::rt::ringReduceScatterBytes(int64_t npr, int64_t p,
                                           int64_t elemSize) {
  return npr > 0 && p > 1 ? uint64_t((p - 1) * npr * elemSize) : 0;
}

uint64_t triax::rt::allToAllBytes(int64_t npr, int64_t p, int64_t elemSize) {
  return npr > 0 && p > 1 ? uint64_t((p - 1) * npr * elemSize) : 0;
}

uint64_t triax::rt::chainBroadcastBytes(int64_t n, int64_t p,
                                        int64_t distFromRoot,
                                        int64_t elemSize) {
  return n > 0 && p > 1 && distFromRoot < p - 1 ? uint64_t(n * elemSize) : 0;
}

extern "C" void trx_comm_set_timeout(double seconds) {
  Watchdog &w = watchdog();
  w.timeoutMs = seconds > 0 ? seconds * 1000.0 : 0.0;
  if (Transport *t = state().transport)
    t->setTimeout(seconds);
  if (seconds <= 0 || w.started.exchange(true))
    return;
  std::thread([] {
    Watchdog &w = watchdog();
    while (true) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      double timeout = w.timeoutMs.load(), since = w.sinceMs.load();
      if (timeout > 0 && since >= 0) {
        double waited = trx_now_ms() - since;
        if (waited > timeout)
          watchdogExpired(waited);
      }
    }
  }).detach();
}

extern "C" void trx_comm_set_step(int64_t step) { watchdog().step = step; }
