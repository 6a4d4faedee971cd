//===- nccl.cpp - The NCCL transport of the distributed runtime -----------===//
//
// The CUDA runtime's Transport (lib/cpu/transport.h): the collectives of
// comm.cpp's front on NCCL, registered from a global constructor (the
// archive is linked whole), so a CUDA binary uses it unless TRX_COMM=mpi.
//
// Communicators. One world communicator, from a unique id made on world
// rank 0 and sent to the others with MPI_Bcast (a single rank without a
// launcher runs without MPI: its own id, a world of one). Each mesh axis
// gets its communicator at trx_dist_init with ncclCommSplit(world, color,
// key), color and key from splitKeyOf, the rule MPI_Comm_split uses on the
// MPI side, so that a group position is the same rank under both. A set of
// several axes is made on its first use, which only its members reach: the
// whole mesh is the world communicator itself; any other set is
// ncclCommInitRank over its members with an id sent over the set's MPI
// communicator (ncclCommSplit is collective over the whole world, which a
// lazily made set cannot ask for).
//
// Streams. The compiled code's collectives (tensor-parallel all-reduce,
// ZeRO gathers and reduce-scatters, expert parallelism's all-to-all,
// send/recv) run on the compute stream:
// in order with the kernels, without a host synchronization. Gradient
// buckets (trx_all_reduce_bucket) run on the communication stream after an
// event of the compute stream, so backward goes on while a bucket reduces;
// trx_comm_wait_grads (the driver, before the optimizer step) makes the
// compute stream wait for them. A gradient region (trx_comm_grads_begin/
// end: ZeRO-2's reduce-scatter of one gradient and the accumulation of its
// chunk) runs on the communication stream too: begin makes it wait for the
// compute stream, the compiled kernels between begin and end are launched
// on it (launchStream), a reduce-scatter of device buffers runs on it, and
// the buffers it read or wrote, and those freed inside, are handed out
// again only behind it (deferReuse); trx_comm_wait_grads joins it like a
// bucket. A compute-stream collective on a communicator with bucket or
// region work in flight waits for it first, so the two streams never run
// one communicator at once. The ring shifts of context parallelism
// (trx_shift_start/wait) run on a stream of their own, the shift stream:
// the start makes it wait for the compute stream and queues ncclSend and
// ncclRecv there as one group, then records the slot's event; the wait
// makes the compute stream wait for that event, so the exchange overlaps
// the compute work queued between the two (and no shift queues behind the
// gradient buckets of the communication stream). Other work on a
// communicator with a shift in flight waits for the shift stream first.
// Called from the host runtime (no StreamOrderedScope), or on host memory
// (staged through a device scratch), a collective returns with its result
// in place.
//
// Failures. Every NCCL call is checked; a failure ends the job with the
// call, ncclGetErrorString, ncclGetLastError and the rank, after
// ncclCommAbort of every communicator (trx_dist_abort calls abort()). The
// communicators are non-blocking (config.blocking = 0; TRX_NCCL_BLOCKING=1
// makes them blocking): every call that returns ncclInProgress, and every
// wait for the device, polls ncclCommGetAsyncError with a timeout
// (TRX_NCCL_TIMEOUT seconds, default 600), so a dead peer aborts the job
// instead of hanging it. The driver's --comm-timeout sets that timeout
// (Transport::setTimeout; TRX_NCCL_TIMEOUT until it does), and the front's
// watchdog (comm.cpp), which ends a rank whose call waits past it, aborts
// the communicators first.
//
//===----------------------------------------------------------------------===//

#include "../cpu/internal.h"
#include "../cpu/transport.h"
#include "cuda_internal.h"
#include "triax_rt.h"
#include "triax_rt_cuda.h"

// The C API only (no C++ bindings, whatever the MPI build has).
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>
#include <nccl.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <thread>
#include <vector>

using namespace triax::rt;
using namespace triax::rt::cuda;

namespace {

using Clock = std::chrono::steady_clock;

double envSeconds(const char *name, double fallback) {
  const char *v = std::getenv(name);
  if (!v || !*v)
    return fallback;
  char *end = nullptr;
  double s = std::strtod(v, &end);
  if (!end || *end || !(s > 0))
    commAbortf("%s='%s' is not a number of seconds > 0", name, v);
  return s;
}

/// BF16 is NCCL's ncclBfloat16 (the same 2-byte layout): its reductions
/// combine in f32 and round each partial result to bf16 (nearest even), as
/// the MPI rings do.
ncclDataType_t ncclType(CommDType t) {
  switch (t) {
  case CommDType::F32:
    return ncclFloat32;
  case CommDType::I32:
    return ncclInt32;
  case CommDType::BF16:
    return ncclBfloat16;
  }
  commAbortf("internal error: collective of unknown element type %d", int(t));
}

ncclRedOp_t ncclOp(int32_t op) {
  switch (op) {
  case TRX_REDUCE_SUM:
    return ncclSum;
  case TRX_REDUCE_AVG:
    // NCCL averages floating types by pre-multiplying each input by 1/p in
    // the element type and summing, where the MPI rings sum, then divide:
    // the two agree to rounding. In bf16, 1/p is exact only for p a power
    // of two; otherwise its rounding (1/3 -> 0.333984375, +0.2%) biases a
    // bf16 average by up to about half an ulp of the result.
    return ncclAvg;
  case TRX_REDUCE_MAX:
    return ncclMax;
  default:
    return ncclMin;
  }
}

/// Whether the device can address `p` (device or managed memory); host
/// memory that CUDA does not know is staged.
bool deviceAccessible(const void *p) {
  CUmemorytype type = CU_MEMORYTYPE_HOST;
  unsigned managed = 0;
  void *data[] = {&type, &managed};
  CUpointer_attribute attrs[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                 CU_POINTER_ATTRIBUTE_IS_MANAGED};
  CUresult rc =
      cuPointerGetAttributes(2, attrs, data, reinterpret_cast<CUdeviceptr>(p));
  return rc == CUDA_SUCCESS && (managed || type == CU_MEMORYTYPE_DEVICE);
}

CUdeviceptr dptr(const void *p) { return reinterpret_cast<CUdeviceptr>(p); }

/// One communicator of the transport.
struct Comm {
  ncclComm_t comm = nullptr;
  uint32_t mask = 0; // 0: the world
  int size = 1, rank = 0;
  bool gradsInFlight = false; // bucket work on the comm stream not waited for
  int shiftsInFlight = 0;     // ring shifts on the shift stream not waited for
};

class NcclTransport final : public Transport {
public:
  const char *name() const override { return "nccl"; }

  std::string describe() const override {
    int v = 0;
    ncclGetVersion(&v);
    char buf[256];
    snprintf(buf, sizeof(buf),
             "nccl %d.%d.%d, world %d, %zu communicator%s (%.1f MiB of device "
             "memory at creation), %s",
             v / 10000, (v / 100) % 100, v % 100, worldSize_, comms_.size(),
             comms_.size() == 1 ? "" : "s", double(commBytes_) / (1 << 20),
             blocking_ ? "blocking" : "non-blocking");
    return buf;
  }

  void initWorld(const CommWorld &w) override {
    worldRank_ = w.rank;
    worldSize_ = w.size;
    timeout_ = envSeconds("TRX_NCCL_TIMEOUT", 600);
    const char *b = std::getenv("TRX_NCCL_BLOCKING");
    blocking_ = b && !strcmp(b, "1");
    trx_cuda_init(); // the device and its primary context, current
    ncclUniqueId id;
    memset(&id, 0, sizeof(id));
    if (w.rank == 0)
      check(ncclGetUniqueId(&id), "ncclGetUniqueId", nullptr, "trx_dist_init");
    if (w.mpi)
      trx_dist_check_mpi(
          MPI_Bcast(&id, int(sizeof(id)), MPI_BYTE, 0, MPI_COMM_WORLD),
          "MPI_Bcast (the NCCL unique id)");
    world_ = initRank(id, w.size, w.rank, 0, "trx_dist_init");
  }

  void *setComm(uint32_t mask, const SplitKey &key, int size,
                const void *mpiComm, const char *fn) override {
    if ((mask & (mask - 1)) == 0) {
      // One axis, at trx_dist_init, on every rank in axis order.
      size_t before = freeDeviceMemory();
      ncclConfig_t config = makeConfig();
      auto c = std::make_unique<Comm>();
      c->mask = mask;
      check(ncclCommSplit(world_->comm, key.color, key.key, &c->comm, &config),
            "ncclCommSplit", world_->comm, fn);
      // The parent first: a non-blocking split fills in the child's handle
      // only once the parent's state is ncclSuccess (NCCL 2.23 and later;
      // NVIDIA/nccl#1472), then the child finishes its own initialization.
      settle(world_->comm, "ncclCommSplit", fn);
      if (!c->comm)
        commAbortf("%s: nccl: ncclCommSplit gave no communicator for axis set "
                   "0x%x (color %d, key %d)",
                   fn, mask, key.color, key.key);
      settle(c->comm, "ncclCommSplit", fn);
      return adopt(std::move(c), size, key.key, before, fn);
    }
    // Several axes, on first use, by the members only. The whole mesh is
    // the world (the same ranks in the same order).
    if (size == worldSize_ && key.key == worldRank_)
      return world_;
    ncclUniqueId id;
    memset(&id, 0, sizeof(id));
    if (key.key == 0)
      check(ncclGetUniqueId(&id), "ncclGetUniqueId", nullptr, fn);
    if (mpiComm)
      trx_dist_check_mpi(MPI_Bcast(&id, int(sizeof(id)), MPI_BYTE, 0,
                                   *static_cast<const MPI_Comm *>(mpiComm)),
                         "MPI_Bcast (the NCCL unique id of an axis set)");
    else if (size != 1)
      commAbortf("%s: nccl: a set of %d members without MPI", fn, size);
    return initRank(id, size, key.key, mask, fn);
  }

  void finalize() override {
    // Whatever is queued finishes first (bounded by the timeout).
    waitDevice(stream(), "trx_dist_finalize");
    if (commStreamUsed_)
      waitDevice(commStream(), "trx_dist_finalize");
    if (shiftStream_)
      waitDevice(shiftStream_, "trx_dist_finalize");
    for (Comm *&c : shiftComm_)
      c = nullptr;
    // Finalize every communicator before waiting for any: a blocking wait
    // on one while a peer finalizes another in a different order would
    // deadlock.
    for (auto &c : comms_)
      check(ncclCommFinalize(c->comm), "ncclCommFinalize", c->comm,
            "trx_dist_finalize");
    for (auto &c : comms_)
      settle(c->comm, "ncclCommFinalize", "trx_dist_finalize");
    for (auto &c : comms_)
      check(ncclCommDestroy(c->comm), "ncclCommDestroy", c->comm,
            "trx_dist_finalize");
    comms_.clear();
    world_ = nullptr;
    gradsInFlight_ = false;
    aborted_ = false;
    for (int slot = 0; slot < 2; ++slot) {
      if (scratch_[slot])
        trx_free(scratch_[slot]);
      scratch_[slot] = nullptr;
      scratchBytes_[slot] = 0;
    }
  }

  void setTimeout(double seconds) override {
    timeout_ = seconds > 0 ? seconds : std::numeric_limits<double>::infinity();
  }

  void abort() override {
    if (aborted_.exchange(true))
      return;
    for (auto &c : comms_)
      if (c->comm)
        ncclCommAbort(c->comm); // its result cannot change what happens next
  }

  uint64_t allReduce(const CommGroup &g, void *buf, int64_t n, CommDType t,
                     int32_t op, const char *fn) override {
    Comm &c = comm(g);
    const int64_t es = commDTypeSize(t);
    Staged s(*this, buf, n * es, /*in=*/true, /*out=*/true, fn);
    CUstream st = computeOn(c);
    call(ncclAllReduce(s.dev, s.dev, size_t(n), ncclType(t), ncclOp(op), c.comm,
                       st),
         "ncclAllReduce", c, fn);
    s.finish(st);
    finishCompute(s.host, fn);
    return ringAllReduceBytes(n, g.size, g.position, es);
  }

  uint64_t allReduceBucket(const CommGroup &g, void *const *bufs,
                           const int64_t *counts, int32_t nbufs, CommDType t,
                           int32_t op, CommQueue q, const char *fn) override {
    Comm &c = comm(g);
    const int64_t es = commDTypeSize(t);
    int64_t total = 0;
    bool device = true;
    for (int32_t b = 0; b < nbufs; ++b) {
      total += counts[b];
      device = device && (counts[b] == 0 || deviceAccessible(bufs[b]));
    }
    const bool async =
        q == CommQueue::Grads && device && StreamOrderedScope::active();
    if (!async) {
      // In order on the compute stream: the buffers in one NCCL group when
      // the device can address them all, else one staged call each.
      CUstream st = computeOn(c);
      if (device) {
        groupStart(fn);
        for (int32_t b = 0; b < nbufs; ++b)
          call(ncclAllReduce(bufs[b], bufs[b], size_t(counts[b]), ncclType(t),
                             ncclOp(op), c.comm, st),
               "ncclAllReduce", c, fn);
        groupEnd(c, fn);
      } else {
        for (int32_t b = 0; b < nbufs; ++b) {
          Staged s(*this, bufs[b], counts[b] * es, true, true, fn);
          call(ncclAllReduce(s.dev, s.dev, size_t(counts[b]), ncclType(t),
                             ncclOp(op), c.comm, st),
               "ncclAllReduce", c, fn);
          s.finish(st);
          waitDevice(st, fn); // the scratch is reused by the next buffer
        }
      }
      finishCompute(!device, fn);
      return ringAllReduceBytes(total, g.size, g.position, es);
    }
    // On the communication stream, behind the compute work so far.
    CUstream cs = commStream();
    commStreamUsed_ = true;
    streamWaits(cs, stream());
    afterShifts(cs, c);
    groupStart(fn);
    for (int32_t b = 0; b < nbufs; ++b)
      call(ncclAllReduce(bufs[b], bufs[b], size_t(counts[b]), ncclType(t),
                         ncclOp(op), c.comm, cs),
           "ncclAllReduce (gradient bucket)", c, fn);
    groupEnd(c, fn);
    c.gradsInFlight = true;
    gradsInFlight_ = true;
    return ringAllReduceBytes(total, g.size, g.position, es);
  }

  uint64_t allGather(const CommGroup &g, const void *send, int64_t npr,
                     void *recv, CommDType t, const char *fn) override {
    Comm &c = comm(g);
    const int64_t es = commDTypeSize(t), bytes = npr * es;
    const int64_t p = g.size;
    // NCCL orders the blocks by communicator rank, the API by group
    // position: a permuted group gathers into scratch, then reorders. The
    // send block may lie in recv (in place): it is read before recv is
    // written only when NCCL sees the in-place form, so otherwise it goes
    // through scratch too.
    const bool permuted = !identity(g);
    const char *sb = static_cast<const char *>(send);
    const char *rb = static_cast<const char *>(recv);
    const bool inPlace = sb == rb + int64_t(c.rank) * bytes;
    const bool alias = rb < sb + bytes && sb < rb + p * bytes;
    Staged in(*this, send, bytes, true, false, fn, 0,
              alias && (permuted || !inPlace));
    Staged out(*this, recv, p * bytes, false, true, fn, 1, permuted,
               /*manual=*/permuted);
    CUstream st = computeOn(c);
    call(ncclAllGather(in.dev, out.dev, size_t(npr), ncclType(t), c.comm, st),
         "ncclAllGather", c, fn);
    if (permuted)
      for (int64_t pos = 0; pos < p; ++pos)
        TRX_CU(
            cuMemcpyAsync(dptr(static_cast<char *>(out.user) + pos * bytes),
                          dptr(static_cast<char *>(out.dev) +
                               int64_t(g.posToCommRank[size_t(pos)]) * bytes),
                          size_t(bytes), st));
    out.finish(st);
    finishCompute(in.host || out.host, fn);
    return ringAllGatherBytes(npr, p, es);
  }

  uint64_t reduceScatter(const CommGroup &g, const void *send, int64_t npr,
                         void *recv, CommDType t, int32_t op,
                         const char *fn) override {
    Comm &c = comm(g);
    const int64_t es = commDTypeSize(t), bytes = npr * es;
    const int64_t p = g.size;
    // The input's blocks go in communicator-rank order; a permuted group
    // reorders them into scratch.
    const bool permuted = !identity(g);
    if (inGrads_ && !permuted && StreamOrderedScope::active() &&
        deviceAccessible(send) && deviceAccessible(recv)) {
      const char *sb = static_cast<const char *>(send);
      const char *rb = static_cast<const char *>(recv);
      const bool overlap = rb < sb + p * bytes && sb < rb + bytes;
      if (!overlap || rb == sb + int64_t(c.rank) * bytes) {
        // In the gradient region, on the communication stream (which
        // waited for the compute stream at begin).
        afterShifts(commStream(), c);
        reduceScatterOn(send, recv, npr, t, op, c, commStream(),
                        "ncclReduceScatter (gradient region)", fn);
        c.gradsInFlight = true;
        regionBuffers_.push_back(send);
        regionBuffers_.push_back(recv);
        return ringReduceScatterBytes(npr, p, es);
      }
    }
    Staged in(*this, send, p * bytes, true, false, fn, 0, permuted,
              /*manual=*/permuted);
    CUstream st = computeOn(c);
    if (permuted)
      for (int64_t pos = 0; pos < p; ++pos)
        TRX_CU(cuMemcpyAsync(
            dptr(static_cast<char *>(in.dev) +
                 int64_t(g.posToCommRank[size_t(pos)]) * bytes),
            dptr(static_cast<const char *>(in.user) + pos * bytes),
            size_t(bytes), st));
    // recv may alias send (the API allows it); NCCL only the in-place form.
    const char *sb = static_cast<const char *>(in.dev);
    const char *rb = static_cast<const char *>(recv);
    const bool overlap = !in.staged && rb < sb + p * bytes && sb < rb + bytes &&
                         rb != sb + int64_t(c.rank) * bytes;
    Staged out(*this, recv, bytes, false, true, fn, 1, overlap);
    reduceScatterOn(in.dev, out.dev, npr, t, op, c, st, "ncclReduceScatter",
                    fn);
    out.finish(st);
    finishCompute(in.host || out.host, fn);
    return ringReduceScatterBytes(npr, p, es);
  }

  uint64_t broadcast(const CommGroup &g, void *buf, int64_t n, CommDType t,
                     int32_t root, const char *fn) override {
    Comm &c = comm(g);
    const int64_t es = commDTypeSize(t);
    Staged s(*this, buf, n * es, true, true, fn);
    CUstream st = computeOn(c);
    call(ncclBroadcast(s.dev, s.dev, size_t(n), ncclType(t),
                       g.posToCommRank[size_t(root)], c.comm, st),
         "ncclBroadcast", c, fn);
    s.finish(st);
    finishCompute(s.host, fn);
    const int64_t d = ((g.position - root) % g.size + g.size) % g.size;
    return chainBroadcastBytes(n, g.size, d, es);
  }

  // The all-to-all: NCCL has none of its own, so one NCCL group of an
  // ncclSend and an ncclRecv per peer on the compute stream (chunk j to and
  // from position j, through the group's position -> rank map, so a
  // permuted group needs no reordering), the own chunk a device copy. The
  // front allows overlapping buffers in a group of one only; there the
  // input goes through the scratch (a copy of overlapping ranges is
  // undefined), unless send == recv, which leaves nothing to do.
  uint64_t allToAll(const CommGroup &g, const void *send, int64_t npr,
                    void *recv, CommDType t, const char *fn) override {
    Comm &c = comm(g);
    const int64_t es = commDTypeSize(t), bytes = npr * es;
    const int64_t p = g.size, pos = g.position;
    if (p == 1 && send == recv)
      return 0;
    const char *sb = static_cast<const char *>(send);
    const char *rb = static_cast<const char *>(recv);
    const bool overlap = rb < sb + p * bytes && sb < rb + p * bytes;
    Staged in(*this, send, p * bytes, true, false, fn, 0, overlap);
    Staged out(*this, recv, p * bytes, false, true, fn, 1);
    CUstream st = computeOn(c);
    if (bytes > 0) {
      const char *sd = static_cast<const char *>(in.dev);
      char *rd = static_cast<char *>(out.dev);
      TRX_CU(cuMemcpyAsync(dptr(rd + pos * bytes), dptr(sd + pos * bytes),
                           size_t(bytes), st));
      if (p > 1) {
        groupStart(fn);
        for (int64_t j = 0; j < p; ++j) {
          if (j == pos)
            continue;
          const int peer = g.posToCommRank[size_t(j)];
          call(ncclSend(sd + j * bytes, size_t(npr), ncclType(t), peer, c.comm,
                        st),
               "ncclSend (all-to-all)", c, fn);
          call(ncclRecv(rd + j * bytes, size_t(npr), ncclType(t), peer, c.comm,
                        st),
               "ncclRecv (all-to-all)", c, fn);
        }
        groupEnd(c, fn);
      }
    }
    out.finish(st);
    finishCompute(in.host || out.host, fn);
    return allToAllBytes(npr, p, es);
  }

  // NCCL has no tags: a pair's messages match in the order they are issued,
  // which the compiled schedules keep the same on both sides.
  void send(const CommGroup &g, const void *buf, int64_t bytes, int32_t peer,
            int32_t, const char *fn) override {
    Comm &c = comm(g);
    Staged s(*this, buf, bytes, true, false, fn);
    CUstream st = computeOn(c);
    call(ncclSend(s.dev, size_t(bytes), ncclUint8,
                  g.posToCommRank[size_t(peer)], c.comm, st),
         "ncclSend", c, fn);
    s.finish(st);
    finishCompute(s.host, fn);
  }

  void recv(const CommGroup &g, void *buf, int64_t bytes, int32_t peer, int32_t,
            const char *fn) override {
    Comm &c = comm(g);
    Staged s(*this, buf, bytes, false, true, fn);
    CUstream st = computeOn(c);
    call(ncclRecv(s.dev, size_t(bytes), ncclUint8,
                  g.posToCommRank[size_t(peer)], c.comm, st),
         "ncclRecv", c, fn);
    s.finish(st);
    finishCompute(s.host, fn);
  }

  // The ring shift. Device buffers: on the shift stream, stream-ordered
  // (see the file comment); a host caller's wait also waits for the device.
  // A group of one is a copy on the compute stream. Host memory (the C
  // API's buffers) goes through the scratch on the compute stream and is
  // done when the start returns.
  void startShift(const CommGroup &g, const void *send, void *recv,
                  int64_t bytes, int32_t to, int32_t from, int32_t slot,
                  const char *fn) override {
    Comm &c = comm(g);
    shiftComm_[slot] = nullptr;
    const bool device =
        bytes == 0 || (deviceAccessible(send) && deviceAccessible(recv));
    if (g.size == 1) {
      if (send == recv || bytes == 0)
        return;
      if (!deviceAccessible(send) && !deviceAccessible(recv)) {
        memmove(recv, send, size_t(bytes));
        return;
      }
      CUstream st = computeOn(c);
      TRX_CU(cuMemcpyAsync(dptr(recv), dptr(send), size_t(bytes), st));
      finishCompute(!device, fn);
      return;
    }
    const int peerTo = g.posToCommRank[size_t(to)];
    const int peerFrom = g.posToCommRank[size_t(from)];
    if (!device) {
      Staged in(*this, send, bytes, /*in=*/true, /*out=*/false, fn, 0);
      Staged out(*this, recv, bytes, /*in=*/false, /*out=*/true, fn, 1);
      CUstream st = computeOn(c);
      groupStart(fn);
      call(ncclSend(in.dev, size_t(bytes), ncclUint8, peerTo, c.comm, st),
           "ncclSend (ring shift)", c, fn);
      call(ncclRecv(out.dev, size_t(bytes), ncclUint8, peerFrom, c.comm, st),
           "ncclRecv (ring shift)", c, fn);
      groupEnd(c, fn);
      out.finish(st);
      finishCompute(true, fn);
      return;
    }
    CUstream ss = shiftStream();
    // Behind the compute work that wrote send and last read recv; inside a
    // gradient region also behind its kernels, and behind this
    // communicator's bucket work in flight (never two streams on one
    // communicator at once), both on the communication stream.
    streamWaits(ss, stream());
    if (inGrads_ || c.gradsInFlight)
      streamWaits(ss, commStream());
    groupStart(fn);
    call(ncclSend(send, size_t(bytes), ncclUint8, peerTo, c.comm, ss),
         "ncclSend (ring shift)", c, fn);
    call(ncclRecv(recv, size_t(bytes), ncclUint8, peerFrom, c.comm, ss),
         "ncclRecv (ring shift)", c, fn);
    groupEnd(c, fn);
    // Recording the slot's event again is safe: the slot restarts only
    // after its wait, whose cuStreamWaitEvent took the event's state then.
    if (!shiftDone_[slot])
      shiftDone_[slot] = newEvent();
    TRX_CU(cuEventRecord(shiftDone_[slot], ss));
    ++c.shiftsInFlight;
    shiftComm_[slot] = &c;
  }

  void waitShift(int32_t slot, const char *fn) override {
    if (Comm *c = shiftComm_[slot]) {
      TRX_CU(cuStreamWaitEvent(stream(), shiftDone_[slot], 0));
      // Inside a gradient region its later kernels run on the
      // communication stream: they may read recv too.
      if (inGrads_)
        TRX_CU(cuStreamWaitEvent(commStream(), shiftDone_[slot], 0));
      --c->shiftsInFlight;
      shiftComm_[slot] = nullptr;
    }
    if (!StreamOrderedScope::active())
      waitDevice(stream(), fn);
    else
      pollErrors(fn); // a failed peer surfaces here rather than later
  }

  void beginGrads(const char *fn) override {
    if (inGrads_)
      commAbortf("%s: a gradient region is already open (regions do not "
                 "nest)",
                 fn);
    CUstream cs = commStream();
    commStreamUsed_ = true;
    streamWaits(cs, stream()); // behind the compute work that made the input
    setLaunchStream(cs);
    inGrads_ = true;
    regionBuffers_.clear();
  }

  void endGrads(const char *fn) override {
    if (!inGrads_)
      commAbortf("%s: no gradient region is open", fn);
    setLaunchStream(nullptr);
    inGrads_ = false;
    CUstream cs = commStream();
    for (const void *p : regionBuffers_) {
      CUevent done = newEvent();
      TRX_CU(cuEventRecord(done, cs));
      deferReuse(p, done);
    }
    regionBuffers_.clear();
    gradsInFlight_ = true;
  }

  void waitGrads() override {
    if (!gradsInFlight_)
      return;
    streamWaits(stream(), commStream());
    for (auto &c : comms_)
      c->gradsInFlight = false;
    gradsInFlight_ = false;
    pollErrors("trx_comm_wait_grads");
  }

  /// A transport's view of one NCCL failure: ends the job.
  [[noreturn]] void failNccl(const char *fn, const char *call, ncclResult_t rc,
                             ncclComm_t comm) {
    const char *last = ncclGetLastError(comm);
    commAbortf("%s: nccl: %s failed on world rank %d: %s (ncclResult_t %d)%s%s",
               fn, call, worldRank_, ncclGetErrorString(rc), int(rc),
               last && *last ? ": " : "", last && *last ? last : "");
  }

private:
  /// A buffer as NCCL sees it: the user's pointer when the device can
  /// address it, else (host memory, or `scratch`) a slice of a device
  /// scratch, filled before (in) and copied back after (out) unless the
  /// caller copies itself (`manual`). cuMemcpyAsync takes host or device
  /// pointers alike (unified addressing).
  struct Staged {
    void *user;
    void *dev;
    int64_t bytes;
    bool out, manual, staged, host;
    Staged(NcclTransport &t, const void *p, int64_t bytes, bool in, bool out,
           const char *fn, int slot = 0, bool scratch = false,
           bool manual = false)
        : user(const_cast<void *>(p)), dev(user), bytes(bytes), out(out),
          manual(manual) {
      host = bytes > 0 && !deviceAccessible(p);
      staged = bytes > 0 && (host || scratch);
      if (!staged)
        return;
      dev = t.scratch(slot, bytes, fn);
      if (in && !manual)
        TRX_CU(cuMemcpyAsync(dptr(dev), dptr(p), size_t(bytes), stream()));
    }
    /// After the collective: the result back to the user's buffer.
    void finish(CUstream st) {
      if (staged && out && !manual)
        TRX_CU(cuMemcpyAsync(dptr(user), dptr(dev), size_t(bytes), st));
    }
    Staged(const Staged &) = delete;
    Staged &operator=(const Staged &) = delete;
  };

  /// Device scratch `slot` (0 or 1), at least `bytes` long, charged to
  /// TRX_MEM_OTHER. Only compute-stream work uses it, one collective at a
  /// time.
  void *scratch(int slot, int64_t bytes, const char *fn) {
    if (bytes > scratchBytes_[slot]) {
      if (scratch_[slot]) {
        waitDevice(stream(), fn); // earlier users are done with it
        trx_free(scratch_[slot]);
      }
      int64_t want = std::max(bytes, 2 * scratchBytes_[slot]);
      scratch_[slot] = trx_alloc(size_t(want), TRX_MEM_OTHER);
      if (!scratch_[slot])
        commAbortf("%s: nccl: no device memory for a %" PRId64
                   "-byte scratch: %s",
                   fn, want, trx_last_error());
      scratchBytes_[slot] = want;
    }
    return scratch_[slot];
  }

  static bool identity(const CommGroup &g) {
    for (int32_t i = 0; i < g.size; ++i)
      if (g.posToCommRank[size_t(i)] != i)
        return false;
    return true;
  }

  Comm &comm(const CommGroup &g) {
    if (!g.handle)
      commAbortf("nccl: internal error: no communicator for axis set 0x%x",
                 g.mask);
    return *static_cast<Comm *>(g.handle);
  }

  /// The stream of the ring shifts, created on first use.
  CUstream shiftStream() {
    if (!shiftStream_) {
      stream(); // CUDA initialized, its context current
      TRX_CU(cuStreamCreate(&shiftStream_, CU_STREAM_NON_BLOCKING));
    }
    return shiftStream_;
  }

  /// Orders `s` after the ring shifts in flight on `c` (other work on `c`).
  void afterShifts(CUstream s, Comm &c) {
    if (c.shiftsInFlight > 0)
      streamWaits(s, shiftStream_);
  }

  /// The compute stream, ordered after bucket work and ring shifts in flight
  /// on `c`.
  CUstream computeOn(Comm &c) {
    CUstream st = stream();
    afterShifts(st, c);
    // Inside a gradient region its earlier work comes first (the compiled
    // code may pass what the region's kernels wrote).
    if (inGrads_)
      streamWaits(st, commStream());
    if (c.gradsInFlight) {
      streamWaits(st, commStream());
      for (auto &other : comms_)
        other->gradsInFlight = false;
      gradsInFlight_ = false;
    }
    return st;
  }

  /// After a compute-stream collective: the host caller gets its result in
  /// place unless the compiled code asked for stream order.
  void finishCompute(bool staged, const char *fn) {
    // Inside a gradient region the region's later kernels come after it.
    if (inGrads_)
      streamWaits(commStream(), stream());
    if (staged || !StreamOrderedScope::active())
      waitDevice(stream(), fn);
  }

  ncclConfig_t makeConfig() const {
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = blocking_ ? 1 : 0;
    return config;
  }

  Comm *initRank(ncclUniqueId id, int size, int rank, uint32_t mask,
                 const char *fn) {
    size_t before = freeDeviceMemory();
    ncclConfig_t config = makeConfig();
    auto c = std::make_unique<Comm>();
    c->mask = mask;
    check(ncclCommInitRankConfig(&c->comm, size, id, rank, &config),
          "ncclCommInitRankConfig", c->comm, fn);
    settle(c->comm, "ncclCommInitRankConfig", fn);
    return adopt(std::move(c), size, rank, before, fn);
  }

  Comm *adopt(std::unique_ptr<Comm> c, int size, int rank, size_t before,
              const char *fn) {
    int n = 0, r = -1;
    check(ncclCommCount(c->comm, &n), "ncclCommCount", c->comm, fn);
    check(ncclCommUserRank(c->comm, &r), "ncclCommUserRank", c->comm, fn);
    if (n != size || r != rank)
      commAbortf("%s: nccl: internal error: communicator of axis set 0x%x has "
                 "rank %d of %d, expected %d of %d",
                 fn, c->mask, r, n, rank, size);
    c->size = n;
    c->rank = r;
    size_t after = freeDeviceMemory();
    if (before > after)
      commBytes_ += before - after;
    comms_.push_back(std::move(c));
    return comms_.back().get();
  }

  static size_t freeDeviceMemory() {
    size_t freeB = 0, total = 0;
    if (cuMemGetInfo(&freeB, &total) != CUDA_SUCCESS)
      return 0;
    return freeB;
  }

  /// ncclSuccess and ncclInProgress pass (the latter is settled by the
  /// caller); anything else ends the job.
  void check(ncclResult_t rc, const char *callName, ncclComm_t c,
             const char *fn) {
    if (rc != ncclSuccess && rc != ncclInProgress)
      failNccl(fn, callName, rc, c);
  }

  /// ncclReduceScatter of `npr` elements per rank on `st`, except on a
  /// one-rank communicator, where the result is the input: a device copy
  /// (none in place). NCCL before 2.29.7 leaves the last count % 32
  /// elements of a one-rank ncclAvg out of place unwritten
  /// (NVIDIA/nccl#1950; seen on the H200 with 2.28.9: the last 16 of
  /// 70,000, triax-rt-nccl-test's gradient region).
  void reduceScatterOn(const void *send, void *recv, int64_t npr, CommDType t,
                       int32_t op, Comm &c, CUstream st, const char *callName,
                       const char *fn) {
    if (c.size == 1) {
      if (send != recv)
        TRX_CU(cuMemcpyDtoDAsync(dptr(recv), dptr(send),
                                 size_t(npr * commDTypeSize(t)), st));
      return;
    }
    call(ncclReduceScatter(send, recv, size_t(npr), ncclType(t), ncclOp(op),
                           c.comm, st),
         callName, c, fn);
  }

  /// A collective call on `c`: checked, and settled when non-blocking.
  void call(ncclResult_t rc, const char *callName, Comm &c, const char *fn) {
    check(rc, callName, c.comm, fn);
    if (rc == ncclInProgress && !inGroup_)
      settle(c.comm, callName, fn);
  }

  void groupStart(const char *fn) {
    check(ncclGroupStart(), "ncclGroupStart", nullptr, fn);
    inGroup_ = true;
  }

  void groupEnd(Comm &c, const char *fn) {
    inGroup_ = false;
    ncclResult_t rc = ncclGroupEnd();
    check(rc, "ncclGroupEnd", c.comm, fn);
    if (rc == ncclInProgress)
      settle(c.comm, "ncclGroupEnd", fn);
  }

  /// Polls a non-blocking communicator until its last call finished.
  void settle(ncclComm_t c, const char *callName, const char *fn) {
    const auto start = Clock::now();
    for (int spins = 0;; ++spins) {
      ncclResult_t state = ncclSuccess;
      ncclResult_t rc = ncclCommGetAsyncError(c, &state);
      if (rc != ncclSuccess)
        failNccl(fn, "ncclCommGetAsyncError", rc, c);
      if (state == ncclSuccess)
        return;
      if (state != ncclInProgress)
        failNccl(fn, callName, state, c);
      timeoutCheck(start, callName, fn);
      pause(spins);
    }
  }

  /// Waits until `s` ran everything queued, checking every communicator
  /// for asynchronous errors and the timeout meanwhile.
  void waitDevice(CUstream s, const char *fn) {
    const auto start = Clock::now();
    for (int spins = 0;; ++spins) {
      CUresult rc = cuStreamQuery(s);
      if (rc == CUDA_SUCCESS)
        return;
      if (rc != CUDA_ERROR_NOT_READY)
        failCU("cuStreamQuery (waiting for a NCCL collective)", rc);
      pollErrors(fn);
      timeoutCheck(start, "the device (a collective in flight)", fn);
      pause(spins);
    }
  }

  void pollErrors(const char *fn) {
    for (auto &c : comms_) {
      ncclResult_t state = ncclSuccess;
      ncclResult_t rc = ncclCommGetAsyncError(c->comm, &state);
      if (rc != ncclSuccess)
        failNccl(fn, "ncclCommGetAsyncError", rc, c->comm);
      if (state != ncclSuccess && state != ncclInProgress)
        failNccl(fn, "a NCCL collective (asynchronous error)", state, c->comm);
    }
  }

  void timeoutCheck(Clock::time_point start, const char *what, const char *fn) {
    double s = std::chrono::duration<double>(Clock::now() - start).count();
    if (s > timeout_)
      commAbortf("%s: nccl: world rank %d waited %.0f s for %s "
                 "(--comm-timeout %.0f): a peer is gone or stuck; aborting "
                 "the communicators",
                 fn, worldRank_, s, what, timeout_);
  }

  static void pause(int spins) {
    if (spins < 64)
      std::this_thread::yield();
    else
      std::this_thread::sleep_for(std::chrono::microseconds(50));
  }

  std::vector<std::unique_ptr<Comm>> comms_;
  Comm *world_ = nullptr;
  int worldRank_ = 0, worldSize_ = 1;
  double timeout_ = 600;
  bool blocking_ = false;
  bool inGroup_ = false;
  bool gradsInFlight_ = false;
  bool commStreamUsed_ = false;
  bool inGrads_ = false;                    // inside a gradient region
  std::vector<const void *> regionBuffers_; // its collectives' buffers
  size_t commBytes_ = 0;
  CUstream shiftStream_ = nullptr;          // the ring shifts
  CUevent shiftDone_[TRX_SHIFT_SLOTS] = {}; // a slot's end on it
  Comm *shiftComm_[TRX_SHIFT_SLOTS] = {};   // in flight there (else null)
  void *scratch_[2] = {nullptr, nullptr};
  int64_t scratchBytes_[2] = {0, 0};
  std::atomic<bool> aborted_{false};
};

NcclTransport *gNccl = nullptr;

Transport *makeNccl() {
  if (!gNccl)
    gNccl = new NcclTransport(); // lives until exit (abort may need it)
  return gNccl;
}

// (The MPI transport, TRX_COMM=mpi, stages device buffers itself through
// the copy hooks: comm.cpp's HostView.)
struct Registration {
  Registration() { registerTransport("nccl", &makeNccl); }
} registration;

} // namespace

extern "C" int trx_nccl_version(void) {
  int v = 0;
  ncclResult_t rc = ncclGetVersion(&v);
  return rc == ncclSuccess ? v : -int(rc);
}
