//===- transport.h - The data movement under the collectives ----*- C++ -*-===//
//
// comm.cpp is the front of the distributed runtime: the mesh, the groups of
// axis lists and their communicators, the argument checks, the byte
// counters and the --trace events. The bytes themselves move through a
// Transport:
//  - "mpi": ring algorithms over MPI_Sendrecv on host memory (the
//    all-to-all a pairwise exchange over it), the ring shift over
//    MPI_Isend/MPI_Irecv (comm.cpp; the CPU target's and the default).
//    On the CUDA target (TRX_COMM=mpi) the device buffers are staged
//    through host copies (HostView, internal.h);
//  - "nccl": NCCL on device memory (lib/cuda/nccl.cpp), registered by the
//    CUDA runtime from a global constructor.
// trx_dist_init picks the registered device transport when there is one,
// the MPI one otherwise; the environment variable TRX_COMM=mpi|nccl
// overrides the choice (an unavailable transport is an error).
//
// Both transports see the same groups: a group's members, positions and
// the rank of each position in the communicator of its axis set come from
// comm.cpp, and a set's communicator is made with splitKeyOf's color and
// key on either side, so a position is the same rank under MPI and NCCL.
//
// Not installed and not part of the ABI.
//
//===----------------------------------------------------------------------===//

#ifndef TRIAX_RT_LIB_CPU_TRANSPORT_H
#define TRIAX_RT_LIB_CPU_TRANSPORT_H

#include <cstdint>
#include <string>
#include <vector>

namespace triax::rt {

/// The element types of the collectives. BF16 is bfloat16 in its uint16_t
/// storage (the top 16 bits of an f32, bf16.h): the "true bf16" models'
/// gradients. Its reductions widen each element to f32 (exactly), combine
/// there and round the result to nearest even; TRX_REDUCE_AVG divides the
/// bf16 sum by the group size the same way (widened, divided in f32,
/// rounded). Data movement (gathers, broadcast, all-to-all, send/recv)
/// moves the 2-byte elements as they are.
enum class CommDType { F32, I32, BF16 };

inline int64_t commDTypeSize(CommDType t) {
  return t == CommDType::BF16 ? 2 : 4;
}

/// Where a collective runs on a device transport.
enum class CommQueue {
  /// In order with the compute stream: the compiled code uses the result
  /// next (tensor-parallel all-reduce, ZeRO gathers, send/recv).
  Compute,
  /// Gradient buckets: may run on a communication stream, behind the
  /// compute work that produced them, until trx_comm_wait_grads.
  Grads,
};

/// A group as the transports see it (trx_dist_group in comm.cpp adds the
/// axis list and the MPI communicator).
struct CommGroup {
  uint32_t mask = 0; // the axis set
  int32_t size = 1;
  int32_t position = 0;
  std::vector<int> posToCommRank; // position -> rank in the set's communicator
  std::vector<int> posToWorld;    // position -> world rank
  void *handle = nullptr;         // the transport's communicator of the set
};

/// The world as comm.cpp set it up.
struct CommWorld {
  int rank = 0, size = 1;
  bool mpi = false; // MPI is running (false: one rank without a launcher)
  std::vector<int64_t> sizes, coords;
};

/// The split rule shared by MPI_Comm_split / MPI_Comm_create_group and
/// ncclCommSplit: the members of axis set `mask` are the ranks that agree
/// on every axis outside it (color = those coordinates linearized in mesh
/// order), ranked by their coordinates on the set's axes linearized in mesh
/// order, first axis major (key = the rank in the set's communicator).
struct SplitKey {
  int color = 0;
  int key = 0;
};
SplitKey splitKeyOf(uint32_t mask, const std::vector<int64_t> &coords,
                    const std::vector<int64_t> &sizes);

/// The bytes one rank sends in the ring algorithms of comm.cpp, the
/// counters' value for a transport whose library does not report them
/// (chunk c of n elements over p members is [n*c/p, n*(c+1)/p)).
uint64_t ringAllReduceBytes(int64_t n, int64_t p, int64_t pos,
                            int64_t elemSize);
uint64_t ringAllGatherBytes(int64_t nPerRank, int64_t p, int64_t elemSize);
uint64_t ringReduceScatterBytes(int64_t nPerRank, int64_t p, int64_t elemSize);
uint64_t chainBroadcastBytes(int64_t n, int64_t p, int64_t distFromRoot,
                             int64_t elemSize);
/// The pairwise all-to-all: every chunk but the own one,
/// (p - 1) * nPerRank * elemSize.
uint64_t allToAllBytes(int64_t nPerRank, int64_t p, int64_t elemSize);

class Transport {
public:
  virtual ~Transport() = default;
  /// "mpi", "nccl".
  virtual const char *name() const = 0;
  /// One line for -v: "nccl 2.28.9, world 4".
  virtual std::string describe() const = 0;

  /// After comm.cpp set up the world (MPI running when world.mpi).
  /// Collective over the world.
  virtual void initWorld(const CommWorld &world) = 0;
  /// The communicator of axis set `mask` for this rank (`key` in
  /// splitKeyOf's rule, `size` members). Called for each single axis at
  /// trx_dist_init (collective over the world, in axis order), and on first
  /// use for a set of several axes (collective over its members only;
  /// `mpiComm` points at the set's MPI_Comm when MPI runs).
  virtual void *setComm(uint32_t mask, const SplitKey &key, int size,
                        const void *mpiComm, const char *fn) = 0;
  /// Frees every communicator (trx_dist_finalize, MPI still running).
  virtual void finalize() = 0;
  /// From trx_dist_abort, before the job ends: abort what is in flight
  /// without waiting for peers.
  virtual void abort() {}
  /// --comm-timeout (trx_comm_set_timeout): how long the transport's own
  /// waits for the device may last (NCCL's polls of a non-blocking
  /// communicator); <= 0: no limit. The front's watchdog covers the calls
  /// themselves whatever the transport.
  virtual void setTimeout(double seconds) {}

  /// The collectives on `g`; each returns the bytes this rank sent (the
  /// counters' value). Reductions include the division of TRX_REDUCE_AVG.
  virtual uint64_t allReduce(const CommGroup &g, void *buf, int64_t n,
                             CommDType t, int32_t op, const char *fn) = 0;
  /// In-place all-reduce of several buffers as one message of their
  /// concatenation (sum of counts elements).
  virtual uint64_t allReduceBucket(const CommGroup &g, void *const *bufs,
                                   const int64_t *counts, int32_t nbufs,
                                   CommDType t, int32_t op, CommQueue q,
                                   const char *fn) = 0;
  virtual uint64_t allGather(const CommGroup &g, const void *send,
                             int64_t nPerRank, void *recv, CommDType t,
                             const char *fn) = 0;
  virtual uint64_t reduceScatter(const CommGroup &g, const void *send,
                                 int64_t nPerRank, void *recv, CommDType t,
                                 int32_t op, const char *fn) = 0;
  virtual uint64_t broadcast(const CommGroup &g, void *buf, int64_t n,
                             CommDType t, int32_t root, const char *fn) = 0;
  /// send and recv hold g.size chunks of nPerRank elements in position
  /// order: chunk j of send goes to position j, chunk i of recv comes from
  /// position i (its chunk g.position). The front checked that the two do
  /// not overlap unless g.size == 1 (then a copy, none when send == recv).
  /// In order on the compute queue, like allGather.
  virtual uint64_t allToAll(const CommGroup &g, const void *send,
                            int64_t nPerRank, void *recv, CommDType t,
                            const char *fn) = 0;
  virtual void send(const CommGroup &g, const void *buf, int64_t bytes,
                    int32_t peer, int32_t tag, const char *fn) = 0;
  /// Receives exactly `bytes` (another size aborts where the transport can
  /// tell).
  virtual void recv(const CommGroup &g, void *buf, int64_t bytes, int32_t peer,
                    int32_t tag, const char *fn) = 0;
  /// The ring shift (trx_shift_start / trx_shift_wait_slot, the front
  /// checked the arguments): starts sending `bytes` of `send` to position
  /// `to` and receiving as many into `recv` from position `from`, in `slot`
  /// (0..TRX_SHIFT_SLOTS-1, not in flight), and returns without waiting for
  /// the peers; the front touches neither buffer until waitShift(slot).
  /// Shifts of several slots may be in flight, on one group or several; the
  /// members start theirs in the same order. In a group of one (to == from
  /// == the position) it copies send to recv, which may alias it.
  virtual void startShift(const CommGroup &g, const void *send, void *recv,
                          int64_t bytes, int32_t to, int32_t from, int32_t slot,
                          const char *fn) = 0;
  /// Returns when the shift of `slot` is done: recv holds the data and
  /// send may be written again. Under a StreamOrderedScope, on device
  /// memory, when the compute stream has it (work queued later runs after
  /// the shift) rather than the host.
  virtual void waitShift(int32_t slot, const char *fn) = 0;
  /// The compute side waits for every CommQueue::Grads collective so far,
  /// and for every gradient region.
  virtual void waitGrads() {}
  /// A gradient region (trx_comm_grads_begin/end): the work between may run
  /// behind the compute work before it until waitGrads. A no-op where
  /// everything runs in order.
  virtual void beginGrads(const char *fn) {}
  virtual void endGrads(const char *fn) {}
};

/// A device transport for trx_dist_init to choose (the CUDA runtime's NCCL).
/// Called from a global constructor: keeps the pointer only.
void registerTransport(const char *name, Transport *(*factory)());

/// The transport in use (nullptr before trx_dist_init).
Transport *activeTransport();

/// While one lives on this thread, collectives on device memory may return
/// before they finish (stream-ordered with the compute stream): the
/// compiled code's entry points use it. Without it a collective's result is
/// in the buffer, for the host, when the call returns.
class StreamOrderedScope {
public:
  StreamOrderedScope();
  ~StreamOrderedScope();
  StreamOrderedScope(const StreamOrderedScope &) = delete;
  StreamOrderedScope &operator=(const StreamOrderedScope &) = delete;
  static bool active();
};

/// The ring shift's front (comm.cpp) behind trx_shift_start /
/// trx_shift_wait_slot and the compiled code's trx_shift_start_f32 / _bf16
/// / trx_shift_wait (kernel_abi.cpp): the checks, the transport call, the
/// counters, --trace and the watchdog; its errors name `fn`. `n` elements
/// of `elemBytes` bytes each (4: f32, 2: bf16).
void shiftStart(const void *send, void *recv, int64_t n, int64_t elemBytes,
                const int32_t *axes, int32_t naxes, int64_t slot,
                const char *fn);
void shiftWait(int64_t slot, const char *fn);

/// The group of an ordered axis list as the transports see it (the one
/// trx_dist_comm returns), for a direct Transport call (the tests'); nullptr
/// with trx_last_error set for a bad list, as trx_dist_comm.
const CommGroup *commGroup(const int32_t *axes, int32_t naxes);

/// Ends the job through trx_dist_abort with a formatted message.
[[noreturn]] void commAbortf(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;

} // namespace triax::rt

#endif // TRIAX_RT_LIB_CPU_TRANSPORT_H
