//===- comm_test.cpp - Tests of the distributed runtime (MPI) -------------===//
//
// Usage (MESH is "dp=2,pp=2,tp=2": axis names and sizes, major to minor):
//   triax-rt-comm-test              as a plain process (MPI singleton):
//                                   argument errors of trx_dist_init, a
//                                   one-device mesh and every collective
//                                   over a group of one
//   triax-rt-comm-test run MESH     under mpirun: layout and groups against
//                                   the formula, every collective over every
//                                   axis list (all subsets, and reordered
//                                   lists) with exact expected values, the
//                                   ring summation order bit for bit, and
//                                   the byte counters against the analytic
//                                   volumes; rank 0 prints the layout, the
//                                   groups and the counter table of a fixed
//                                   workload
//   triax-rt-comm-test init MESH    trx_dist_init only; "error: <message>"
//                                   and exit 1 when it fails
//   triax-rt-comm-test abort MESH R rank R calls trx_dist_abort while the
//                                   others wait in an all_reduce
//   triax-rt-comm-test mpi-error MESH
//                                   an MPI call with an invalid rank goes
//                                   through trx_dist_check_mpi
//   triax-rt-comm-test misuse MESH WHAT
//                                   a collective used wrongly (WHAT: axis,
//                                   dup, root, op, count, null, peer, self,
//                                   tag, size, uninit, shift-*, a2a-*,
//                                   bf16-*); it must abort with a message
//   triax-rt-comm-test shift MESH   the ring shift alone over every axis
//                                   list; rank 0 prints the counter table
//                                   of a shift over the last axis
//   triax-rt-comm-test shift-stop MESH
//                                   the last position of axis 0 never
//                                   starts its shift: the watchdog
//                                   (timeout 1 s) ends the job
//   triax-rt-comm-test nodes MESH   rank 0 prints the nodes and their
//                                   ranks (trx_dist_node_of), as MPI
//                                   reports them or as TRX_RANKS_PER_NODE
//                                   pretends
//
//===----------------------------------------------------------------------===//

#include "bf16.h"
#include "check.h"
#include "internal.h"
#include "transport.h"
#include "triax_rt.h"

#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstring>
#include <set>
#include <string>
#include <vector>

namespace {

struct Mesh {
  std::vector<std::string> names;
  std::vector<int64_t> sizes;
  std::string text;
};

Mesh parseMesh(const char *text) {
  Mesh m;
  m.text = text;
  std::string s = text;
  size_t start = 0;
  while (start < s.size()) {
    size_t comma = s.find(',', start);
    std::string item = s.substr(start, comma - start);
    size_t eq = item.find('=');
    if (eq == std::string::npos) {
      fprintf(stderr, "bad mesh '%s' (expected dp=2,tp=2)\n", text);
      exit(2);
    }
    m.names.push_back(item.substr(0, eq));
    m.sizes.push_back(atoll(item.c_str() + eq + 1));
    if (comma == std::string::npos)
      break;
    start = comma + 1;
  }
  return m;
}

int initMesh(const Mesh &m, int *argc, char ***argv, char *err, size_t errlen) {
  std::vector<const char *> names;
  for (const std::string &n : m.names)
    names.push_back(n.c_str());
  return trx_dist_init(argc, argv, names.data(), m.sizes.data(),
                       int32_t(m.names.size()), err, errlen);
}

void initOrExit(const Mesh &m, int *argc, char ***argv) {
  char err[512];
  if (initMesh(m, argc, argv, err, sizeof(err)) != TRX_OK) {
    fprintf(stderr, "error: %s\n", err);
    exit(1);
  }
}

/// A failed CHECK exits; make sure the whole job ends at once.
void abortJobIfStillRunning() {
  if (trx_dist_initialized())
    trx_dist_abort("exited without trx_dist_finalize (a check failed?)");
}

/// Test inputs: functions of (world rank, index) so that any rank can
/// compute any member's input. Sums of up to 8 of them are exact.
float valueF(int rank, int64_t j) {
  return float(int((rank * 37 + j * 11) % 23) - 11) + 0.25f * float(rank % 4);
}
int32_t valueI(int rank, int64_t j) {
  return int32_t((rank * 37 + j * 11) % 23) - 11 + rank * 1000;
}
/// Arbitrary floats (inexact sums) for the summation-order checks.
float noiseF(int rank, int64_t j) {
  uint64_t z = uint64_t(rank) * 0x9E3779B97F4A7C15ULL +
               uint64_t(j) * 0xBF58476D1CE4E5B9ULL + 1;
  z = (z ^ (z >> 31)) * 0x94D049BB133111EBULL;
  z ^= z >> 29;
  return float(int64_t(z % 2000001) - 1000000) * 1.0e-3f / 7.0f;
}

template <typename T> T reduce2(T a, T b, int32_t op) {
  switch (op) {
  case TRX_REDUCE_MAX:
    return b > a ? b : a;
  case TRX_REDUCE_MIN:
    return b < a ? b : a;
  default:
    return a + b;
  }
}

/// Axis list bookkeeping of the test, from the layout formula alone.
struct ListInfo {
  std::vector<int32_t> axes;
  uint32_t mask = 0;
  int p = 1, pos = 0;
  std::vector<int> members; // world rank of each position
  std::string label;
};

ListInfo describe(const Mesh &m, const std::vector<int32_t> &axes) {
  ListInfo li;
  li.axes = axes;
  int rank = trx_dist_rank();
  size_t k = m.sizes.size();
  std::vector<int64_t> coords(k);
  int64_t rem = rank;
  for (size_t a = k; a-- > 0;) {
    coords[a] = rem % m.sizes[a];
    rem /= m.sizes[a];
  }
  for (int32_t a : axes) {
    li.mask |= 1u << a;
    li.p *= int(m.sizes[size_t(a)]);
    li.pos = li.pos * int(m.sizes[size_t(a)]) + int(coords[size_t(a)]);
    li.label += (li.label.empty() ? "" : ",") + m.names[size_t(a)];
  }
  for (int q = 0; q < li.p; ++q) {
    std::vector<int64_t> c = coords;
    int64_t left = q;
    for (size_t j = axes.size(); j-- > 0;) {
      c[size_t(axes[j])] = left % m.sizes[size_t(axes[j])];
      left /= m.sizes[size_t(axes[j])];
    }
    int64_t r = 0;
    for (size_t a = 0; a < k; ++a)
      r = r * m.sizes[a] + c[a];
    li.members.push_back(int(r));
  }
  return li;
}

/// Every non-empty subset of the axes in mesh order, then each subset of
/// two or more axes reversed, and one rotation of a three-axis subset.
std::vector<std::vector<int32_t>> axisLists(size_t k) {
  std::vector<std::vector<int32_t>> lists;
  for (uint32_t mask = 1; mask < (1u << k); ++mask) {
    std::vector<int32_t> l;
    for (int32_t a = 0; a < int32_t(k); ++a)
      if (mask & (1u << a))
        l.push_back(a);
    lists.push_back(l);
  }
  size_t n = lists.size();
  for (size_t i = 0; i < n; ++i)
    if (lists[i].size() >= 2)
      lists.push_back(std::vector<int32_t>(lists[i].rbegin(), lists[i].rend()));
  for (size_t i = 0; i < n; ++i)
    if (lists[i].size() == 3) {
      lists.push_back({lists[i][2], lists[i][0], lists[i][1]});
      break;
    }
  return lists;
}

/// Counter deltas of one (kind, axis set).
struct Delta {
  int kind;
  uint32_t mask;
  uint64_t bytes0, calls0;
  Delta(int k, uint32_t m)
      : kind(k), mask(m), bytes0(trx_comm_bytes(k, m)),
        calls0(trx_comm_calls(k, m)) {}
  uint64_t bytes() const { return trx_comm_bytes(kind, mask) - bytes0; }
  uint64_t calls() const { return trx_comm_calls(kind, mask) - calls0; }
};

int64_t chunkLen(int64_t n, int64_t c, int64_t p) {
  c = (c % p + p) % p;
  return n * (c + 1) / p - n * c / p;
}

/// The analytic ring volume of one member's all_reduce, in bytes.
uint64_t allReduceBytes(int64_t n, int p, int pos, size_t elem) {
  if (p == 1)
    return 0;
  return uint64_t(2 * n - chunkLen(n, pos + 1, p) - chunkLen(n, pos + 2, p)) *
         elem;
}

/// The group-wide sum of a per-member count (over the list's group).
uint64_t groupSum(uint64_t v, const ListInfo &li) {
  std::vector<int32_t> all(static_cast<size_t>(li.p));
  int32_t mine = int32_t(v);
  trx_all_gather_i32(&mine, 1, all.data(), li.axes.data(),
                     int32_t(li.axes.size()));
  uint64_t s = 0;
  for (int32_t x : all)
    s += uint64_t(x);
  return s;
}

void checkGroup(const ListInfo &li) {
  const trx_dist_group *g =
      trx_dist_comm(li.axes.data(), int32_t(li.axes.size()));
  CHECK(g != nullptr);
  CHECK_EQ(trx_dist_group_size(g), li.p);
  CHECK_EQ(trx_dist_group_position(g), li.pos);
  CHECK_EQ(trx_dist_group_mask(g), li.mask);
  for (int q = 0; q < li.p; ++q)
    CHECK_EQ(trx_dist_group_member(g, q), li.members[size_t(q)]);
  CHECK_EQ(trx_dist_group_member(g, li.p), -1);
  CHECK_EQ(trx_dist_group_member(g, li.pos), trx_dist_rank());
  // The same list again is the cached group.
  CHECK(trx_dist_comm(li.axes.data(), int32_t(li.axes.size())) == g);
  // Data goes where the positions say: gather the world ranks.
  std::vector<int32_t> ranks(static_cast<size_t>(li.p), -1);
  int32_t me = trx_dist_rank();
  trx_all_gather_i32(&me, 1, ranks.data(), li.axes.data(),
                     int32_t(li.axes.size()));
  for (int q = 0; q < li.p; ++q)
    CHECK_EQ(ranks[size_t(q)], li.members[size_t(q)]);
}

void checkAllReduce(const ListInfo &li) {
  const int32_t *ax = li.axes.data();
  const int32_t na = int32_t(li.axes.size());
  const int rank = trx_dist_rank();
  for (int64_t n :
       {int64_t(0), int64_t(1), int64_t(5), int64_t(64), int64_t(1003)}) {
    for (int32_t op = 0; op < 4; ++op) {
      std::vector<float> f(static_cast<size_t>(n));
      std::vector<int32_t> i(static_cast<size_t>(n));
      for (int64_t j = 0; j < n; ++j) {
        f[size_t(j)] = valueF(rank, j);
        i[size_t(j)] = valueI(rank, j);
      }
      Delta df(TRX_COMM_ALL_REDUCE, li.mask);
      trx_all_reduce(f.data(), n, op, ax, na);
      CHECK_EQ(df.calls(), 1u);
      CHECK_EQ(df.bytes(), allReduceBytes(n, li.p, li.pos, 4));
      // The formula the NCCL transport reports (transport.h).
      CHECK_EQ(df.bytes(), triax::rt::ringAllReduceBytes(n, li.p, li.pos, 4));
      if (n % li.p == 0) // the textbook 2(p-1)/p * bytes
        CHECK_EQ(df.bytes(), uint64_t(2 * (li.p - 1) * (n / li.p) * 4));
      trx_all_reduce_i32(i.data(), n, op, ax, na);
      bool ok = true;
      for (int64_t j = 0; j < n; ++j) {
        float ef = valueF(li.members[0], j);
        int32_t ei = valueI(li.members[0], j);
        for (int q = 1; q < li.p; ++q) {
          ef = reduce2(ef, valueF(li.members[size_t(q)], j), op);
          ei = reduce2(ei, valueI(li.members[size_t(q)], j), op);
        }
        if (op == TRX_REDUCE_AVG) {
          ef = ef / float(li.p);
          ei = ei / int32_t(li.p);
        }
        if (f[size_t(j)] != ef || i[size_t(j)] != ei) {
          fprintf(stderr,
                  "all_reduce over %s op %d n %" PRId64 " [%" PRId64
                  "]: %g/%d, expected %g/%d\n",
                  li.label.c_str(), op, n, j, double(f[size_t(j)]),
                  i[size_t(j)], double(ef), ei);
          ok = false;
        }
      }
      CHECK(ok);
    }
  }
  // Uneven chunks: the group together sends exactly 2(p-1) * bytes.
  std::vector<float> f(1003, 1.0f);
  Delta d(TRX_COMM_ALL_REDUCE, li.mask);
  trx_all_reduce(f.data(), 1003, TRX_REDUCE_SUM, ax, na);
  CHECK_EQ(groupSum(d.bytes(), li), uint64_t(2 * (li.p - 1) * 1003 * 4));
}

void checkGatherScatter(const ListInfo &li) {
  const int32_t *ax = li.axes.data();
  const int32_t na = int32_t(li.axes.size());
  const int rank = trx_dist_rank();
  const int p = li.p;
  for (int64_t npr : {int64_t(0), int64_t(1), int64_t(7)}) {
    // all_gather: the blocks of every member in group order.
    std::vector<float> send(static_cast<size_t>(npr)),
        recv(static_cast<size_t>(p * npr), -1.0f);
    for (int64_t j = 0; j < npr; ++j)
      send[size_t(j)] = valueF(rank, j);
    Delta dg(TRX_COMM_ALL_GATHER, li.mask);
    trx_all_gather(send.data(), npr, recv.data(), ax, na);
    CHECK_EQ(dg.calls(), 1u);
    CHECK_EQ(dg.bytes(), uint64_t((p - 1) * npr * 4));
    CHECK_EQ(dg.bytes(), triax::rt::ringAllGatherBytes(npr, p, 4));
    bool ok = true;
    for (int q = 0; q < p; ++q)
      for (int64_t j = 0; j < npr; ++j)
        ok =
            ok && recv[size_t(q * npr + j)] == valueF(li.members[size_t(q)], j);
    CHECK(ok);
    // In place: the own block already sits at position pos.
    std::vector<int32_t> inPlace(static_cast<size_t>(p * npr), -1);
    for (int64_t j = 0; j < npr; ++j)
      inPlace[size_t(li.pos * npr + j)] = valueI(rank, j);
    trx_all_gather_i32(inPlace.data() + li.pos * npr, npr, inPlace.data(), ax,
                       na);
    for (int q = 0; q < p; ++q)
      for (int64_t j = 0; j < npr; ++j)
        ok = ok &&
             inPlace[size_t(q * npr + j)] == valueI(li.members[size_t(q)], j);
    CHECK(ok);

    // reduce_scatter: block pos of the reduction.
    for (int32_t op = 0; op < 4; ++op) {
      std::vector<float> in(static_cast<size_t>(p * npr)),
          out(static_cast<size_t>(npr), -1.0f);
      std::vector<int32_t> inI(static_cast<size_t>(p * npr));
      for (int64_t j = 0; j < p * npr; ++j) {
        in[size_t(j)] = valueF(rank, j);
        inI[size_t(j)] = valueI(rank, j);
      }
      Delta dr(TRX_COMM_REDUCE_SCATTER, li.mask);
      trx_reduce_scatter(in.data(), npr, out.data(), op, ax, na);
      CHECK_EQ(dr.calls(), 1u);
      CHECK_EQ(dr.bytes(), uint64_t((p - 1) * npr * 4));
      CHECK_EQ(dr.bytes(), triax::rt::ringReduceScatterBytes(npr, p, 4));
      // i32 with recv aliasing the start of send.
      trx_reduce_scatter_i32(inI.data(), npr, inI.data(), op, ax, na);
      for (int64_t j = 0; j < npr; ++j) {
        int64_t g = li.pos * npr + j;
        float ef = valueF(li.members[0], g);
        int32_t ei = valueI(li.members[0], g);
        for (int q = 1; q < p; ++q) {
          ef = reduce2(ef, valueF(li.members[size_t(q)], g), op);
          ei = reduce2(ei, valueI(li.members[size_t(q)], g), op);
        }
        if (op == TRX_REDUCE_AVG) {
          ef = ef / float(p);
          ei = ei / int32_t(p);
        }
        CHECK_EQ(out[size_t(j)], ef);
        CHECK_EQ(inI[size_t(j)], ei);
      }
    }
  }
}

void checkBroadcastP2P(const ListInfo &li) {
  const int32_t *ax = li.axes.data();
  const int32_t na = int32_t(li.axes.size());
  const int rank = trx_dist_rank();
  const int p = li.p;
  const int64_t n = 37;
  for (int32_t root = 0; root < p; ++root) {
    std::vector<float> buf(static_cast<size_t>(n), -5.0f);
    std::vector<int32_t> bufI(static_cast<size_t>(n), -5);
    if (li.pos == root)
      for (int64_t j = 0; j < n; ++j) {
        buf[size_t(j)] = valueF(rank, j);
        bufI[size_t(j)] = valueI(rank, j);
      }
    Delta db(TRX_COMM_BROADCAST, li.mask);
    trx_broadcast(buf.data(), n, root, ax, na);
    CHECK_EQ(db.calls(), 1u);
    // Every member but the last of the chain (position root-1) sends n.
    bool last = (li.pos - root + p) % p == p - 1;
    CHECK_EQ(db.bytes(), last ? uint64_t(0) : uint64_t(n * 4));
    CHECK_EQ(db.bytes(),
             triax::rt::chainBroadcastBytes(n, p, (li.pos - root + p) % p, 4));
    trx_broadcast_i32(bufI.data(), n, root, ax, na);
    bool ok = true;
    for (int64_t j = 0; j < n; ++j)
      ok = ok && buf[size_t(j)] == valueF(li.members[size_t(root)], j) &&
           bufI[size_t(j)] == valueI(li.members[size_t(root)], j);
    CHECK(ok);
  }
  if (p == 1)
    return;
  // A ring shift: position q sends to q+1 and receives from q-1; even
  // positions send first, odd ones receive first.
  int to = (li.pos + 1) % p, from = (li.pos - 1 + p) % p;
  std::vector<float> out(19), in(19, 0.0f);
  std::vector<int32_t> outI(19), inI(19, 0);
  for (int64_t j = 0; j < 19; ++j) {
    out[size_t(j)] = valueF(rank, j);
    outI[size_t(j)] = valueI(rank, j);
  }
  Delta ds(TRX_COMM_SEND, li.mask), dr(TRX_COMM_RECV, li.mask);
  auto sendAll = [&] {
    trx_send(out.data(), 19, to, ax, na, 7);
    trx_send_i32(outI.data(), 19, to, ax, na, TRX_DIST_MAX_TAG);
  };
  auto recvAll = [&] {
    trx_recv(in.data(), 19, from, ax, na, 7);
    trx_recv_i32(inI.data(), 19, from, ax, na, TRX_DIST_MAX_TAG);
  };
  if (li.pos % 2 == 0) {
    sendAll();
    recvAll();
  } else {
    recvAll();
    sendAll();
  }
  bool ok = true;
  for (int64_t j = 0; j < 19; ++j)
    ok = ok && in[size_t(j)] == valueF(li.members[size_t(from)], j) &&
         inI[size_t(j)] == valueI(li.members[size_t(from)], j);
  CHECK(ok);
  CHECK_EQ(ds.calls(), 2u);
  CHECK_EQ(ds.bytes(), uint64_t(2 * 19 * 4));
  CHECK_EQ(dr.calls(), 2u);
  CHECK_EQ(dr.bytes(), uint64_t(2 * 19 * 4));
}

/// Inexact float sums in the documented ring order, bit for bit: chunk c
/// of an all_reduce is ((x_c + x_{c+1}) + ...) + x_{c-1} (positions mod
/// p); block c of a reduce_scatter is ((x_{c+1} + x_{c+2}) + ...) + x_c.
void checkSummationOrder(const ListInfo &li) {
  const int32_t *ax = li.axes.data();
  const int32_t na = int32_t(li.axes.size());
  const int p = li.p, rank = trx_dist_rank();
  const int64_t n = 1000;
  std::vector<float> buf(static_cast<size_t>(n));
  for (int64_t j = 0; j < n; ++j)
    buf[size_t(j)] = noiseF(rank, j);
  std::vector<float> again = buf;
  trx_all_reduce(buf.data(), n, TRX_REDUCE_SUM, ax, na);
  trx_all_reduce(again.data(), n, TRX_REDUCE_SUM, ax, na);
  CHECK(memcmp(buf.data(), again.data(), size_t(n) * 4) == 0);
  bool orderOk = true;
  for (int64_t c = 0; c < p; ++c)
    for (int64_t j = n * c / p; j < n * (c + 1) / p; ++j) {
      float acc = noiseF(li.members[size_t(c)], j);
      for (int s = 1; s < p; ++s)
        acc = acc + noiseF(li.members[size_t((c + s) % p)], j);
      orderOk = orderOk && memcmp(&acc, &buf[size_t(j)], 4) == 0;
    }
  CHECK(orderOk);

  const int64_t npr = 100;
  std::vector<float> in(static_cast<size_t>(p * npr)),
      out(static_cast<size_t>(npr));
  for (int64_t j = 0; j < p * npr; ++j)
    in[size_t(j)] = noiseF(rank, j);
  trx_reduce_scatter(in.data(), npr, out.data(), TRX_REDUCE_SUM, ax, na);
  orderOk = true;
  for (int64_t j = 0; j < npr; ++j) {
    int64_t g = li.pos * npr + j;
    int c = li.pos;
    float acc = noiseF(li.members[size_t((c + 1) % p)], g);
    for (int s = 2; s <= p; ++s)
      acc = acc + noiseF(li.members[size_t((c + s) % p)], g);
    orderOk = orderOk && memcmp(&acc, &out[size_t(j)], 4) == 0;
  }
  CHECK(orderOk);
}

/// Buffers larger than a broadcast segment and many ring chunks.
void checkLarge(const ListInfo &li) {
  const int32_t *ax = li.axes.data();
  const int32_t na = int32_t(li.axes.size());
  const int rank = trx_dist_rank();
  const int64_t n = 3 * (int64_t(1) << 18) + 5; // 3 MiB of floats
  std::vector<float> buf(static_cast<size_t>(n));
  for (int64_t j = 0; j < n; ++j)
    buf[size_t(j)] = valueF(rank, j);
  Delta d(TRX_COMM_ALL_REDUCE, li.mask);
  trx_all_reduce(buf.data(), n, TRX_REDUCE_SUM, ax, na);
  CHECK_EQ(d.bytes(), allReduceBytes(n, li.p, li.pos, 4));
  bool ok = true;
  for (int64_t j = 0; j < n; ++j) {
    float e = 0.0f;
    for (int m : li.members)
      e += valueF(m, j);
    ok = ok && buf[size_t(j)] == e;
  }
  CHECK(ok);
  const int64_t nb = 200003; // four segments of 256 KiB
  std::vector<float> b(static_cast<size_t>(nb), 0.0f);
  int32_t root = li.p - 1;
  if (li.pos == root)
    for (int64_t j = 0; j < nb; ++j)
      b[size_t(j)] = valueF(rank, j);
  trx_broadcast(b.data(), nb, root, ax, na);
  ok = true;
  for (int64_t j = 0; j < nb; ++j)
    ok = ok && b[size_t(j)] == valueF(li.members[size_t(root)], j);
  CHECK(ok);
}

/// Rank 0 prints every rank's coordinates (gathered) and the groups of
/// every axis list in mesh order.
void printLayout(const Mesh &m) {
  const int world = trx_dist_world_size(), rank = trx_dist_rank();
  const int k = int(m.sizes.size());
  std::vector<int32_t> all(static_cast<size_t>(k));
  for (int32_t a = 0; a < k; ++a)
    all[size_t(a)] = a;
  std::vector<int32_t> mine(static_cast<size_t>(k)),
      coords(static_cast<size_t>(world * k));
  for (int32_t a = 0; a < k; ++a)
    mine[size_t(a)] = int32_t(trx_dist_coord(a));
  trx_all_gather_i32(mine.data(), k, coords.data(), all.data(), k);
  if (rank == 0) {
    printf("mesh %s: %d ranks\n", m.text.c_str(), world);
    for (int r = 0; r < world; ++r) {
      printf("rank %d:", r);
      for (int a = 0; a < k; ++a)
        printf(" %s=%d", m.names[size_t(a)].c_str(), coords[size_t(r * k + a)]);
      printf("\n");
    }
  }
  // The axis sets in mesh order, fewer axes first.
  std::vector<std::vector<int32_t>> sets;
  for (const std::vector<int32_t> &l : axisLists(static_cast<size_t>(k)))
    if (std::is_sorted(l.begin(), l.end()))
      sets.push_back(l);
  std::stable_sort(sets.begin(), sets.end(), [](const auto &a, const auto &b) {
    return a.size() < b.size() || (a.size() == b.size() && a < b);
  });
  for (const std::vector<int32_t> &l : sets) {
    ListInfo li = describe(m, l);
    std::vector<int32_t> members(li.members.begin(), li.members.end());
    std::vector<int32_t> gathered(static_cast<size_t>(world * li.p));
    trx_all_gather_i32(members.data(), li.p, gathered.data(), all.data(), k);
    if (rank != 0)
      continue;
    std::set<std::vector<int32_t>> seen;
    printf("groups %s:", li.label.c_str());
    for (int r = 0; r < world; ++r) {
      std::vector<int32_t> grp(gathered.begin() + r * li.p,
                               gathered.begin() + (r + 1) * li.p);
      if (!seen.insert(grp).second)
        continue;
      printf(" [");
      for (size_t i = 0; i < grp.size(); ++i)
        printf(i ? " %d" : "%d", grp[i]);
      printf("]");
    }
    printf("\n");
  }
}

/// A fixed workload over each single axis and over all axes; rank 0 prints
/// its counter table. Every count is also checked against the formulas.
void workloadTable(const Mesh &m) {
  const int k = int(m.sizes.size());
  std::vector<std::vector<int32_t>> lists;
  for (int32_t a = 0; a < k; ++a)
    lists.push_back({a});
  if (k > 1) {
    std::vector<int32_t> all;
    for (int32_t a = 0; a < k; ++a)
      all.push_back(a);
    lists.push_back(all);
  }
  trx_dist_barrier();
  trx_comm_reset_counters();
  uint64_t expectTotal = 0, expectCalls = 0;
  for (const std::vector<int32_t> &l : lists) {
    ListInfo li = describe(m, l);
    const int32_t *ax = l.data();
    int32_t na = int32_t(l.size());
    std::vector<float> a(1024, 1.0f), g(static_cast<size_t>(256 * li.p)),
        s(256);
    trx_all_reduce(a.data(), 1024, TRX_REDUCE_AVG, ax, na);
    trx_all_gather(a.data(), 256, g.data(), ax, na);
    trx_reduce_scatter(g.data(), 256, s.data(), TRX_REDUCE_SUM, ax, na);
    trx_broadcast(a.data(), 1000, 0, ax, na);
    std::vector<float> x(static_cast<size_t>(64 * li.p), 2.0f),
        y(static_cast<size_t>(64 * li.p));
    trx_all_to_all(x.data(), 64, y.data(), ax, na);
    // A ring shift of 100 f32 (even positions send first).
    std::vector<float> in(100);
    int32_t to = (li.pos + 1) % li.p, from = (li.pos + li.p - 1) % li.p;
    if (li.p > 1 && li.pos % 2 == 0) {
      trx_send(a.data(), 100, to, ax, na, 1);
      trx_recv(in.data(), 100, from, ax, na, 1);
    } else if (li.p > 1) {
      trx_recv(in.data(), 100, from, ax, na, 1);
      trx_send(a.data(), 100, to, ax, na, 1);
    }
    uint64_t ar = allReduceBytes(1024, li.p, li.pos, 4);
    uint64_t ag = uint64_t((li.p - 1) * 256 * 4);
    uint64_t bc = li.pos == li.p - 1 ? 0 : 4000;
    CHECK_EQ(trx_comm_bytes(TRX_COMM_ALL_REDUCE, li.mask), ar);
    CHECK_EQ(trx_comm_bytes(TRX_COMM_ALL_GATHER, li.mask), ag);
    CHECK_EQ(trx_comm_bytes(TRX_COMM_REDUCE_SCATTER, li.mask), ag);
    CHECK_EQ(trx_comm_bytes(TRX_COMM_BROADCAST, li.mask), bc);
    uint64_t p2p = li.p > 1 ? 400 : 0;
    CHECK_EQ(trx_comm_bytes(TRX_COMM_SEND, li.mask), p2p);
    CHECK_EQ(trx_comm_bytes(TRX_COMM_RECV, li.mask), p2p);
    uint64_t a2a = uint64_t((li.p - 1) * 64 * 4);
    CHECK_EQ(trx_comm_bytes(TRX_COMM_ALL_TO_ALL, li.mask), a2a);
    CHECK_EQ(trx_comm_calls(TRX_COMM_ALL_TO_ALL, li.mask), 1u);
    CHECK_EQ(trx_comm_calls(TRX_COMM_ANY_KIND, li.mask), li.p > 1 ? 7u : 5u);
    expectTotal += ar + 2 * ag + bc + 2 * p2p + a2a;
    expectCalls += li.p > 1 ? 7 : 5;
  }
  CHECK_EQ(trx_comm_bytes(TRX_COMM_ANY_KIND, TRX_COMM_ANY_AXES), expectTotal);
  CHECK_EQ(trx_comm_calls(TRX_COMM_ANY_KIND, TRX_COMM_ANY_AXES), expectCalls);
  if (trx_dist_rank() == 0) {
    printf("workload per axis list: all_reduce avg 1024 f32, all_gather 256 "
           "f32/rank, reduce_scatter 256 f32/rank, broadcast 1000 f32 from "
           "position 0, send/recv 100 f32 to the next position, all_to_all "
           "64 f32 per member\n");
    trx_comm_print_table(stdout);
    fflush(stdout);
  }
}

/// The color/key rule both transports split with (transport.h): the
/// members of the list's group are exactly the ranks of this rank's color,
/// and for a list in mesh order a member's key is its position (its rank
/// in the set's communicator).
void checkSplitKey(const Mesh &m, const ListInfo &li) {
  auto coordsOf = [&](int rank) {
    std::vector<int64_t> c(m.sizes.size());
    for (size_t a = c.size(); a-- > 0;) {
      c[a] = rank % m.sizes[a];
      rank = int(rank / m.sizes[a]);
    }
    return c;
  };
  const int world = trx_dist_world_size();
  triax::rt::SplitKey mine =
      triax::rt::splitKeyOf(li.mask, coordsOf(trx_dist_rank()), m.sizes);
  std::set<int> sameColor, keys;
  for (int r = 0; r < world; ++r) {
    triax::rt::SplitKey k =
        triax::rt::splitKeyOf(li.mask, coordsOf(r), m.sizes);
    if (k.color == mine.color) {
      sameColor.insert(r);
      keys.insert(k.key);
    }
  }
  CHECK(sameColor == std::set<int>(li.members.begin(), li.members.end()));
  CHECK_EQ(int(keys.size()), li.p); // distinct keys 0..p-1
  CHECK_EQ(*keys.rbegin(), li.p - 1);
  if (std::is_sorted(li.axes.begin(), li.axes.end()))
    for (int q = 0; q < li.p; ++q)
      CHECK_EQ(triax::rt::splitKeyOf(li.mask, coordsOf(li.members[size_t(q)]),
                                     m.sizes)
                   .key,
               q);
}

/// trx_all_reduce_bucket: bit for bit the all_reduce of the concatenation,
/// counted as one all_reduce call of the summed size.
void checkBucket(const ListInfo &li) {
  const int rank = trx_dist_rank();
  const int64_t counts[] = {7, 0, 1003, 64};
  int64_t total = 0;
  for (int64_t c : counts)
    total += c;
  std::vector<float> whole(static_cast<size_t>(total));
  for (int64_t j = 0; j < total; ++j)
    whole[size_t(j)] = noiseF(rank, j);
  std::vector<std::vector<float>> parts;
  int64_t at = 0;
  for (int64_t c : counts) {
    parts.emplace_back(whole.begin() + at, whole.begin() + at + c);
    at += c;
  }
  std::vector<float *> bufs;
  for (auto &part : parts)
    bufs.push_back(part.data());
  for (int32_t op : {TRX_REDUCE_SUM, TRX_REDUCE_AVG}) {
    std::vector<float> ref = whole;
    trx_all_reduce(ref.data(), total, op, li.axes.data(),
                   int32_t(li.axes.size()));
    Delta d(TRX_COMM_ALL_REDUCE, li.mask);
    trx_all_reduce_bucket(bufs.data(), counts, 4, op, li.axes.data(),
                          int32_t(li.axes.size()));
    CHECK_EQ(d.calls(), 1u);
    CHECK_EQ(d.bytes(), allReduceBytes(total, li.p, li.pos, 4));
    at = 0;
    bool same = true;
    for (size_t b = 0; b < parts.size(); at += counts[b], ++b)
      same = same && std::memcmp(parts[b].data(), ref.data() + at,
                                 size_t(counts[b]) * sizeof(float)) == 0;
    CHECK(same);
    // Reset for the next op.
    at = 0;
    for (size_t b = 0; b < parts.size(); at += counts[b], ++b)
      std::copy(whole.begin() + at, whole.begin() + at + counts[b],
                parts[b].begin());
  }
  trx_comm_wait_grads(); // a no-op with MPI
}

/// Stands in for the CUDA runtime's gDeviceMemoryHook: the blocks that
/// checkStaging allocated are "device memory".
std::set<const void *> &deviceBlocks() {
  static std::set<const void *> blocks;
  return blocks;
}
bool allocBlock(const void *ptr) { return deviceBlocks().count(ptr) > 0; }

/// TRX_COMM=mpi on the CUDA target: the MPI transport stages buffers in
/// device memory through the copy hooks (trx_copy_to_host in, then
/// trx_copy_to_device out). Here trx_alloc blocks stand in for device memory
/// (gDeviceMemoryHook, which the CUDA runtime sets): every collective gives
/// bit for bit its result on host buffers, and costs one copy per staged
/// buffer it reads and one per staged buffer it writes.
void checkStaging(const ListInfo &li) {
  const int rank = trx_dist_rank();
  const int32_t *ax = li.axes.data();
  const int32_t na = int32_t(li.axes.size());
  const int64_t n = 1001, k = 67, p = li.p;
  auto fill = [&](std::vector<float> &v, int64_t salt) {
    for (size_t j = 0; j < v.size(); ++j)
      v[j] = noiseF(rank, int64_t(j) * 7 + salt);
  };
  auto onDevice = [](const std::vector<float> &v) {
    auto *d = static_cast<float *>(
        trx_alloc(v.size() * sizeof(float) + 1, TRX_MEM_OTHER));
    CHECK(d != nullptr);
    std::memcpy(d, v.data(), v.size() * sizeof(float));
    deviceBlocks().insert(d);
    return d;
  };
  auto same = [](const float *d, const std::vector<float> &v) {
    return std::memcmp(d, v.data(), v.size() * sizeof(float)) == 0;
  };
  std::vector<float> a(static_cast<size_t>(n)), agIn(static_cast<size_t>(k)),
      agOut(static_cast<size_t>(k * p)), rsIn(static_cast<size_t>(k * p)),
      rsOut(static_cast<size_t>(k)), bc(static_cast<size_t>(n)), b0(9), b1(33);
  fill(a, 1);
  fill(agIn, 2);
  fill(rsIn, 3);
  fill(bc, 4);
  fill(b0, 5);
  fill(b1, 6);
  float *dA = onDevice(a), *dAgIn = onDevice(agIn), *dAgOut = onDevice(agOut),
        *dRsIn = onDevice(rsIn), *dRsOut = onDevice(rsOut), *dBc = onDevice(bc),
        *dB0 = onDevice(b0), *dB1 = onDevice(b1);
  // The host results.
  trx_all_reduce(a.data(), n, TRX_REDUCE_SUM, ax, na);
  trx_all_gather(agIn.data(), k, agOut.data(), ax, na);
  trx_reduce_scatter(rsIn.data(), k, rsOut.data(), TRX_REDUCE_AVG, ax, na);
  trx_broadcast(bc.data(), n, int32_t(p - 1), ax, na);
  float *hostBufs[] = {b0.data(), b1.data()};
  const int64_t counts[] = {9, 33};
  trx_all_reduce_bucket(hostBufs, counts, 2, TRX_REDUCE_SUM, ax, na);

  triax::rt::gDeviceMemoryHook = allocBlock;
  trx_copy_reset_counters();
  trx_all_reduce(dA, n, TRX_REDUCE_SUM, ax, na);
  trx_all_gather(dAgIn, k, dAgOut, ax, na);
  trx_reduce_scatter(dRsIn, k, dRsOut, TRX_REDUCE_AVG, ax, na);
  trx_broadcast(dBc, n, int32_t(p - 1), ax, na);
  float *devBufs[] = {dB0, dB1};
  trx_all_reduce_bucket(devBufs, counts, 2, TRX_REDUCE_SUM, ax, na);
  uint64_t toHost = trx_copy_calls(TRX_COPY_TO_HOST);
  uint64_t toDevice = trx_copy_calls(TRX_COPY_TO_DEVICE);
  uint64_t hostBytes = trx_copy_bytes(TRX_COPY_TO_HOST);
  triax::rt::gDeviceMemoryHook = nullptr;
  CHECK(same(dA, a));
  CHECK(same(dAgOut, agOut));
  CHECK(same(dRsOut, rsOut));
  CHECK(same(dBc, bc));
  CHECK(same(dB0, b0));
  CHECK(same(dB1, b1));
  // In: all_reduce, all_gather's and reduce_scatter's inputs, the root's
  // broadcast buffer, the bucket's two buffers; out: the same less the
  // inputs, and the non-roots' broadcast buffer.
  const bool root = li.pos == p - 1;
  CHECK_EQ(toHost, uint64_t(1 + 1 + 1 + (root ? 1 : 0) + 2));
  CHECK_EQ(toDevice, uint64_t(1 + 1 + 1 + (root ? 0 : 1) + 2));
  CHECK_EQ(hostBytes, uint64_t((n + k + k * p + (root ? n : 0) + 9 + 33) *
                               int64_t(sizeof(float))));
  // Point to point, positions 0 and 1.
  if (p > 1 && li.pos < 2) {
    std::vector<float> msg(50);
    fill(msg, 8);
    float *dMsg = onDevice(msg);
    triax::rt::gDeviceMemoryHook = allocBlock;
    trx_copy_reset_counters();
    if (li.pos == 0)
      trx_send(dMsg, 50, 1, ax, na, 5);
    else
      trx_recv(dMsg, 50, 0, ax, na, 5);
    CHECK_EQ(
        trx_copy_calls(li.pos == 0 ? TRX_COPY_TO_HOST : TRX_COPY_TO_DEVICE),
        uint64_t(1));
    CHECK_EQ(
        trx_copy_calls(li.pos == 0 ? TRX_COPY_TO_DEVICE : TRX_COPY_TO_HOST),
        uint64_t(0));
    triax::rt::gDeviceMemoryHook = nullptr;
    if (li.pos == 1) {
      // What position 0 sent: its noise.
      bool ok = true;
      for (int64_t j = 0; j < 50; ++j)
        ok = ok && dMsg[j] == noiseF(li.members[0], j * 7 + 8);
      CHECK(ok);
    }
    trx_free(dMsg);
  }
  for (float *d : {dA, dAgIn, dAgOut, dRsIn, dRsOut, dBc, dB0, dB1})
    trx_free(d);
  deviceBlocks().clear();
}

/// The ring shift of context parallelism (trx_shift_start /
/// trx_shift_wait_slot and the compiled code's entries): position q gets
/// position q-1's buffer, counted at the wait as one send and one recv over
/// the list's axis set (0 bytes in a group of one); every slot in flight at
/// once, waited for in another order; device buffers staged by the MPI
/// transport (send at the start, recv at the wait).
void checkShift(const ListInfo &li) {
  const int32_t *ax = li.axes.data();
  const int32_t na = int32_t(li.axes.size());
  const int rank = trx_dist_rank(), p = li.p;
  const int prev = li.members[size_t((li.pos + p - 1) % p)];
  auto filled = [&](int64_t n, int64_t salt) {
    std::vector<float> v(static_cast<size_t>(n));
    for (int64_t j = 0; j < n; ++j)
      v[size_t(j)] = valueF(rank, j + salt);
    return v;
  };
  auto fromPrev = [&](const float *v, int64_t n, int64_t salt) {
    bool ok = true;
    for (int64_t j = 0; j < n; ++j)
      ok = ok && v[j] == valueF(prev, j + salt);
    return ok;
  };
  const uint64_t others = trx_comm_calls(TRX_COMM_ALL_REDUCE, li.mask) +
                          trx_comm_calls(TRX_COMM_ALL_GATHER, li.mask);

  // One slot; 1003 floats are several messages under
  // TRX_COMM_MAX_MESSAGE=1000.
  for (int64_t n : {int64_t(0), int64_t(1), int64_t(1003)}) {
    std::vector<float> send = filled(n, 0), recv(static_cast<size_t>(n), -1.0f);
    Delta ds(TRX_COMM_SEND, li.mask), dr(TRX_COMM_RECV, li.mask);
    trx_shift_start(send.data(), recv.data(), n, ax, na, 0);
    CHECK_EQ(ds.calls(), 0u); // counted at the wait
    trx_shift_wait_slot(0);
    CHECK_EQ(ds.calls(), 1u);
    CHECK_EQ(dr.calls(), 1u);
    CHECK_EQ(ds.bytes(), p > 1 ? uint64_t(n * 4) : uint64_t(0));
    CHECK_EQ(dr.bytes(), p > 1 ? uint64_t(n * 4) : uint64_t(0));
    CHECK(fromPrev(recv.data(), n, 0));
    CHECK(send == filled(n, 0));
  }

  // Every slot in flight, of different sizes, waited for in reverse order.
  {
    std::vector<std::vector<float>> sends, recvs;
    Delta ds(TRX_COMM_SEND, li.mask), dr(TRX_COMM_RECV, li.mask);
    uint64_t bytes = 0;
    for (int32_t slot = 0; slot < TRX_SHIFT_SLOTS; ++slot) {
      int64_t n = 5 + 97 * slot;
      sends.push_back(filled(n, 1000 * slot));
      recvs.emplace_back(static_cast<size_t>(n), -1.0f);
      bytes += p > 1 ? uint64_t(n * 4) : 0;
    }
    for (int32_t slot = 0; slot < TRX_SHIFT_SLOTS; ++slot)
      trx_shift_start(sends[size_t(slot)].data(), recvs[size_t(slot)].data(),
                      int64_t(sends[size_t(slot)].size()), ax, na, slot);
    for (int32_t slot = TRX_SHIFT_SLOTS; slot-- > 0;)
      trx_shift_wait_slot(slot);
    bool ok = true;
    for (int32_t slot = 0; slot < TRX_SHIFT_SLOTS; ++slot)
      ok = ok && fromPrev(recvs[size_t(slot)].data(),
                          int64_t(recvs[size_t(slot)].size()), 1000 * slot);
    CHECK(ok);
    CHECK_EQ(ds.calls(), uint64_t(TRX_SHIFT_SLOTS));
    CHECK_EQ(dr.calls(), uint64_t(TRX_SHIFT_SLOTS));
    CHECK_EQ(ds.bytes(), bytes);
    CHECK_EQ(dr.bytes(), bytes);
  }

  // Two shifts of the same slot in a row, and two slots that finish in
  // the order they started.
  for (int round = 0; round < 2; ++round) {
    std::vector<float> k = filled(64, 7 + round), v = filled(65, 9 + round);
    std::vector<float> kIn(64, -1.0f), vIn(65, -1.0f);
    trx_shift_start(k.data(), kIn.data(), 64, ax, na, 0);
    trx_shift_start(v.data(), vIn.data(), 65, ax, na, 1);
    trx_shift_wait_slot(0);
    trx_shift_wait_slot(1);
    CHECK(fromPrev(kIn.data(), 64, 7 + round));
    CHECK(fromPrev(vIn.data(), 65, 9 + round));
  }

  if (p == 1) {
    // A group of one: the same buffer is left as it is.
    std::vector<float> b = filled(7, 3);
    trx_shift_start(b.data(), b.data(), 7, ax, na, 2);
    trx_shift_wait_slot(2);
    CHECK(b == filled(7, 3));
  }

  // The compiled code's entries take the axis mask, whose group orders its
  // members in mesh order: lists in mesh order only. Views at an offset.
  if (std::is_sorted(li.axes.begin(), li.axes.end())) {
    CHECK_EQ(trx_group_position(int64_t(li.mask)), int64_t(li.pos));
    std::vector<float> send = filled(36, 5), recv(36, -1.0f);
    trx_memref_f32_1d ms = {send.data(), send.data(), 3, {33}, {1}};
    trx_memref_f32_1d mr = {recv.data(), recv.data(), 2, {33}, {1}};
    Delta ds(TRX_COMM_SEND, li.mask), dr(TRX_COMM_RECV, li.mask);
    _mlir_ciface_trx_shift_start_f32(&ms, &mr, int64_t(li.mask), 6);
    trx_shift_wait(6);
    CHECK(fromPrev(recv.data() + 2, 33, 5 + 3));
    CHECK_EQ(recv[0], -1.0f);
    CHECK_EQ(recv[35], -1.0f);
    CHECK_EQ(ds.calls(), 1u);
    CHECK_EQ(dr.bytes(), p > 1 ? uint64_t(33 * 4) : uint64_t(0));
  }

  // TRX_COMM=mpi on the CUDA target (see checkStaging): send is copied to
  // the host at the start, recv to the device at the wait (a group of one
  // copies both at the start).
  {
    const int64_t n = 301;
    std::vector<float> send = filled(n, 11);
    auto *dSend = static_cast<float *>(
        trx_alloc(size_t(n) * sizeof(float) + 1, TRX_MEM_OTHER));
    auto *dRecv = static_cast<float *>(
        trx_alloc(size_t(n) * sizeof(float) + 1, TRX_MEM_OTHER));
    CHECK(dSend != nullptr && dRecv != nullptr);
    std::memcpy(dSend, send.data(), size_t(n) * sizeof(float));
    deviceBlocks().insert(dSend);
    deviceBlocks().insert(dRecv);
    triax::rt::gDeviceMemoryHook = allocBlock;
    trx_copy_reset_counters();
    trx_shift_start(dSend, dRecv, n, ax, na, 7);
    CHECK_EQ(trx_copy_calls(TRX_COPY_TO_HOST), uint64_t(1));
    CHECK_EQ(trx_copy_calls(TRX_COPY_TO_DEVICE), uint64_t(p > 1 ? 0 : 1));
    trx_shift_wait_slot(7);
    CHECK_EQ(trx_copy_calls(TRX_COPY_TO_HOST), uint64_t(1));
    CHECK_EQ(trx_copy_calls(TRX_COPY_TO_DEVICE), uint64_t(1));
    CHECK_EQ(trx_copy_bytes(TRX_COPY_TO_DEVICE), uint64_t(n * 4));
    triax::rt::gDeviceMemoryHook = nullptr;
    CHECK(fromPrev(dRecv, n, 11));
    deviceBlocks().clear();
    trx_free(dSend);
    trx_free(dRecv);
  }
  // No other kind was counted.
  CHECK_EQ(trx_comm_calls(TRX_COMM_ALL_REDUCE, li.mask) +
               trx_comm_calls(TRX_COMM_ALL_GATHER, li.mask),
           others);
}

/// A value that names its sender, the chunk it is in (the receiver's
/// position) and its index in the chunk; exact in f32 for the meshes here.
float a2aF(int rank, int64_t chunk, int64_t j) {
  return float((rank * 64 + chunk) * 2048 + j);
}
int32_t a2aI(int rank, int64_t chunk, int64_t j) {
  return -int32_t((rank * 64 + chunk) * 4096 + j) - 1;
}

/// trx_all_to_all (and _i32, and the compiled code's
/// trx_all_to_all_f32): chunk j of a member's send goes to position j, so
/// chunk i of this rank's recv is position i's chunk number pos; counted as
/// one all_to_all of (p-1) chunks over the list's axis set (0 bytes in a
/// group of one); device buffers staged by the MPI transport.
void checkAllToAll(const ListInfo &li) {
  const int32_t *ax = li.axes.data();
  const int32_t na = int32_t(li.axes.size());
  const int rank = trx_dist_rank(), p = li.p;
  // Calls of the other kinds (groupSum below adds all_gathers).
  auto others = [&] {
    return trx_comm_calls(TRX_COMM_ANY_KIND, li.mask) -
           trx_comm_calls(TRX_COMM_ALL_TO_ALL, li.mask) -
           trx_comm_calls(TRX_COMM_ALL_GATHER, li.mask);
  };
  const uint64_t othersBefore = others();
  // 1003 floats per chunk are several messages under
  // TRX_COMM_MAX_MESSAGE=1000.
  for (int64_t npr :
       {int64_t(0), int64_t(1), int64_t(7), int64_t(64), int64_t(1003)}) {
    std::vector<float> send(static_cast<size_t>(p * npr)),
        recv(static_cast<size_t>(p * npr), -1.0f);
    std::vector<int32_t> sendI(static_cast<size_t>(p * npr)),
        recvI(static_cast<size_t>(p * npr), 7);
    for (int64_t c = 0; c < p; ++c)
      for (int64_t j = 0; j < npr; ++j) {
        send[size_t(c * npr + j)] = a2aF(rank, c, j);
        sendI[size_t(c * npr + j)] = a2aI(rank, c, j);
      }
    const std::vector<float> sent = send;
    Delta d(TRX_COMM_ALL_TO_ALL, li.mask);
    trx_all_to_all(send.data(), npr, recv.data(), ax, na);
    CHECK_EQ(d.calls(), 1u);
    CHECK_EQ(d.bytes(), uint64_t((p - 1) * npr * 4));
    CHECK_EQ(d.bytes(), triax::rt::allToAllBytes(npr, p, 4));
    trx_all_to_all_i32(sendI.data(), npr, recvI.data(), ax, na);
    CHECK_EQ(d.calls(), 2u);
    CHECK_EQ(d.bytes(), uint64_t(2 * (p - 1) * npr * 4));
    bool ok = true;
    for (int64_t i = 0; i < p; ++i)
      for (int64_t j = 0; j < npr; ++j) {
        const int from = li.members[size_t(i)];
        const size_t at = size_t(i * npr + j);
        if (recv[at] != a2aF(from, li.pos, j) ||
            recvI[at] != a2aI(from, li.pos, j)) {
          fprintf(stderr,
                  "all_to_all over %s npr %" PRId64 " chunk %" PRId64
                  " [%" PRId64 "]: %g/%d, expected %g/%d\n",
                  li.label.c_str(), npr, i, j, double(recv[at]), recvI[at],
                  double(a2aF(from, li.pos, j)), a2aI(from, li.pos, j));
          ok = false;
        }
      }
    CHECK(ok);
    CHECK(send == sent); // send is only read
    // The group-wide volume: every member sends all chunks but its own.
    CHECK_EQ(groupSum(d.bytes(), li), uint64_t(2 * p * (p - 1) * npr * 4));
  }

  if (p == 1) {
    // A group of one: the same buffer is left as it is.
    std::vector<float> b(9, 4.5f);
    trx_all_to_all(b.data(), 9, b.data(), ax, na);
    CHECK(b == std::vector<float>(9, 4.5f));
  }

  // The compiled code's entry takes the axis mask, whose group orders its
  // members in mesh order: lists in mesh order only. Views at an offset,
  // 5 elements per chunk.
  if (std::is_sorted(li.axes.begin(), li.axes.end())) {
    const int64_t n = 5 * p;
    std::vector<float> send(static_cast<size_t>(n + 3)),
        recv(static_cast<size_t>(n + 4), -1.0f);
    for (int64_t c = 0; c < p; ++c)
      for (int64_t j = 0; j < 5; ++j)
        send[size_t(3 + c * 5 + j)] = a2aF(rank, c, j);
    trx_memref_f32_1d ms = {send.data(), send.data(), 3, {n}, {1}};
    trx_memref_f32_1d mr = {recv.data(), recv.data(), 2, {n}, {1}};
    Delta d(TRX_COMM_ALL_TO_ALL, li.mask);
    _mlir_ciface_trx_all_to_all_f32(&ms, &mr, int64_t(li.mask));
    CHECK_EQ(d.calls(), 1u);
    CHECK_EQ(d.bytes(), uint64_t((p - 1) * 5 * 4));
    bool ok = recv[0] == -1.0f && recv[1] == -1.0f &&
              recv[size_t(n + 2)] == -1.0f && recv[size_t(n + 3)] == -1.0f;
    for (int64_t i = 0; i < p; ++i)
      for (int64_t j = 0; j < 5; ++j)
        ok = ok && recv[size_t(2 + i * 5 + j)] ==
                       a2aF(li.members[size_t(i)], li.pos, j);
    CHECK(ok);
  }

  // TRX_COMM=mpi on the CUDA target (see checkStaging): send is copied to
  // the host, recv back to the device, once each.
  {
    const int64_t npr = 33, n = p * npr;
    auto *dSend = static_cast<float *>(
        trx_alloc(size_t(n) * sizeof(float) + 1, TRX_MEM_OTHER));
    auto *dRecv = static_cast<float *>(
        trx_alloc(size_t(n) * sizeof(float) + 1, TRX_MEM_OTHER));
    CHECK(dSend != nullptr && dRecv != nullptr);
    for (int64_t c = 0; c < p; ++c)
      for (int64_t j = 0; j < npr; ++j)
        dSend[c * npr + j] = a2aF(rank, c, j + 100);
    deviceBlocks().insert(dSend);
    deviceBlocks().insert(dRecv);
    triax::rt::gDeviceMemoryHook = allocBlock;
    trx_copy_reset_counters();
    trx_all_to_all(dSend, npr, dRecv, ax, na);
    CHECK_EQ(trx_copy_calls(TRX_COPY_TO_HOST), uint64_t(1));
    CHECK_EQ(trx_copy_calls(TRX_COPY_TO_DEVICE), uint64_t(1));
    CHECK_EQ(trx_copy_bytes(TRX_COPY_TO_HOST), uint64_t(n * 4));
    CHECK_EQ(trx_copy_bytes(TRX_COPY_TO_DEVICE), uint64_t(n * 4));
    triax::rt::gDeviceMemoryHook = nullptr;
    bool ok = true;
    for (int64_t i = 0; i < p; ++i)
      for (int64_t j = 0; j < npr; ++j)
        ok = ok &&
             dRecv[i * npr + j] == a2aF(li.members[size_t(i)], li.pos, j + 100);
    CHECK(ok);
    deviceBlocks().clear();
    trx_free(dSend);
    trx_free(dRecv);
  }
  // No other kind was counted.
  CHECK_EQ(others(), othersBefore);
}

/// bf16 inputs: halves in [-11, 11.5]. Sums of up to 8 of them, and every
/// partial sum on the way, are multiples of 0.5 below 128 in magnitude:
/// exact in bf16's 8 significant bits, whatever order the ring adds in.
float valueBF(int rank, int64_t j) {
  return float(int((rank * 37 + j * 11) % 23) - 11) + 0.5f * float(rank % 2);
}
uint16_t valueB(int rank, int64_t j) {
  return triax::rt::f32ToBf16(valueBF(rank, j));
}

/// bf16 (CommDType::BF16) collectives: trx_all_reduce_bf16 against the f32
/// reduction of exact inputs, rounded to bf16 (AVG: the f32 sum divided in
/// f32, then rounded), and round to nearest even where a sum is not a bf16
/// value; the compiled code's trx_reduce_scatter_bf16 / trx_all_gather_bf16
/// with and without padding; the compiled code's trx_all_reduce_bf16,
/// trx_all_to_all_bf16 and trx_send_bf16 / trx_recv_bf16;
/// trx_all_gather_bf16 and trx_all_reduce_bucket_bf16; broadcast and
/// all_to_all on BF16 through the transport; 2 bytes per element in the
/// counters and in the staging copies.
void checkBf16(const ListInfo &li) {
  using triax::rt::bf16ToF32;
  using triax::rt::CommDType;
  using triax::rt::f32ToBf16;
  const int32_t *ax = li.axes.data();
  const int32_t na = int32_t(li.axes.size());
  const int rank = trx_dist_rank(), p = li.p;

  for (int64_t n :
       {int64_t(0), int64_t(1), int64_t(5), int64_t(64), int64_t(1003)}) {
    for (int32_t op = 0; op < 4; ++op) {
      std::vector<uint16_t> b(static_cast<size_t>(n));
      for (int64_t j = 0; j < n; ++j)
        b[size_t(j)] = valueB(rank, j);
      Delta d(TRX_COMM_ALL_REDUCE, li.mask);
      trx_all_reduce_bf16(b.data(), n, op, ax, na);
      CHECK_EQ(d.calls(), 1u);
      CHECK_EQ(d.bytes(), allReduceBytes(n, p, li.pos, 2));
      CHECK_EQ(d.bytes(), triax::rt::ringAllReduceBytes(n, p, li.pos, 2));
      bool ok = true;
      for (int64_t j = 0; j < n; ++j) {
        float e = valueBF(li.members[0], j);
        for (int q = 1; q < p; ++q)
          e = reduce2(e, valueBF(li.members[size_t(q)], j), op);
        if (op == TRX_REDUCE_AVG)
          e = e / float(p);
        if (b[size_t(j)] != f32ToBf16(e)) {
          fprintf(stderr,
                  "all_reduce_bf16 over %s op %d n %" PRId64 " [%" PRId64
                  "]: %g (0x%04x), expected %g (0x%04x)\n",
                  li.label.c_str(), op, n, j, double(bf16ToF32(b[size_t(j)])),
                  b[size_t(j)], double(e), f32ToBf16(e));
          ok = false;
        }
      }
      CHECK(ok);
    }
  }

  if (p > 1) {
    // Position 0 holds a, position 1 b, the others 0: one inexact addition
    // whatever the ring order, rounded to nearest even (truncation would
    // give another value in the 2nd, 3rd and 6th case, rounding ties away
    // from zero in the 1st, 4th and 5th).
    struct Case {
      float a, b;
      uint16_t sum;
    };
    const Case cases[] = {
        {1.0f, 0x1p-8f, 0x3f80},           // 1 + 2^-8: a tie, to 1 (even)
        {1.0f + 0x1p-7f, 0x1p-8f, 0x3f82}, // 1 + 3*2^-8: a tie, to 1 + 2^-6
        {1.0f, 0x1.8p-8f, 0x3f81},         // 1 + 3*2^-9: nearer 1 + 2^-7
        {-1.0f, -0x1p-8f, 0xbf80},         // -(1 + 2^-8): a tie, to -1
        {256.0f, 1.0f, 0x4380},            // 257: a tie, to 256
        {256.0f, 3.0f, 0x4382},            // 259: a tie, to 260
    };
    const size_t nc = sizeof(cases) / sizeof(cases[0]);
    std::vector<uint16_t> b(nc, 0);
    for (size_t i = 0; i < nc; ++i) {
      CHECK_EQ(bf16ToF32(f32ToBf16(cases[i].a)), cases[i].a); // exact inputs
      CHECK_EQ(bf16ToF32(f32ToBf16(cases[i].b)), cases[i].b);
      if (li.pos < 2)
        b[i] = f32ToBf16(li.pos == 0 ? cases[i].a : cases[i].b);
    }
    trx_all_reduce_bf16(b.data(), int64_t(nc), TRX_REDUCE_SUM, ax, na);
    for (size_t i = 0; i < nc; ++i) {
      CHECK_EQ(b[i], cases[i].sum);
      CHECK_EQ(b[i], f32ToBf16(cases[i].a + cases[i].b));
    }
    // AVG: 1 at position 0: 1/p rounded (1/3 = 0x3eaaaaab in f32: 0x3eab,
    // up; truncation gives 0x3eaa).
    uint16_t one = li.pos == 0 ? f32ToBf16(1.0f) : uint16_t(0);
    trx_all_reduce_bf16(&one, 1, TRX_REDUCE_AVG, ax, na);
    CHECK_EQ(one, f32ToBf16(1.0f / float(p)));
    if (p == 3)
      CHECK_EQ(one, uint16_t(0x3eab));
  }

  // The compiled code's flat entries take the axis mask, whose group orders
  // its members in mesh order: lists in mesh order only. Views at an
  // offset, between sentinels; n = g*k, then n padded (5p + 1 is not a
  // multiple of p > 1).
  if (std::is_sorted(li.axes.begin(), li.axes.end())) {
    const uint16_t kSentinel = 0xffff; // a NaN
    for (int64_t n : {int64_t(4 * p), int64_t(5 * p + 1)}) {
      const int64_t k = trx_zero_chunk(n, p);
      for (int32_t op : {TRX_REDUCE_SUM, TRX_REDUCE_AVG}) {
        std::vector<uint16_t> in(static_cast<size_t>(n + 3), kSentinel),
            out(static_cast<size_t>(k + 4), kSentinel);
        for (int64_t j = 0; j < n; ++j)
          in[size_t(3 + j)] = valueB(rank, j);
        const std::vector<uint16_t> given = in;
        trx_memref_bf16_1d mi = {in.data(), in.data(), 3, {n}, {1}};
        trx_memref_bf16_1d mo = {out.data(), out.data(), 2, {k}, {1}};
        Delta d(TRX_COMM_REDUCE_SCATTER, li.mask);
        _mlir_ciface_trx_reduce_scatter_bf16(&mi, &mo, op, int64_t(li.mask));
        CHECK_EQ(d.calls(), 1u);
        CHECK_EQ(d.bytes(), uint64_t((p - 1) * k * 2));
        CHECK_EQ(d.bytes(), triax::rt::ringReduceScatterBytes(k, p, 2));
        CHECK(in == given);
        bool ok = out[0] == kSentinel && out[1] == kSentinel &&
                  out[size_t(k + 2)] == kSentinel &&
                  out[size_t(k + 3)] == kSentinel;
        for (int64_t j = 0; j < k; ++j) {
          const int64_t g = li.pos * k + j;
          float e = 0.0f; // the padding
          if (g < n) {
            e = valueBF(li.members[0], g);
            for (int q = 1; q < p; ++q)
              e += valueBF(li.members[size_t(q)], g);
            if (op == TRX_REDUCE_AVG)
              e = e / float(p);
          }
          ok = ok && out[size_t(2 + j)] == f32ToBf16(e);
        }
        CHECK(ok);
      }
      // all_gather: k elements in, the n of out = the blocks cut to n.
      std::vector<uint16_t> in(static_cast<size_t>(k + 1), kSentinel),
          out(static_cast<size_t>(n + 4), kSentinel);
      for (int64_t j = 0; j < k; ++j)
        in[size_t(1 + j)] = valueB(rank, 100 + j);
      trx_memref_bf16_1d mi = {in.data(), in.data(), 1, {k}, {1}};
      trx_memref_bf16_1d mo = {out.data(), out.data(), 2, {n}, {1}};
      Delta d(TRX_COMM_ALL_GATHER, li.mask);
      _mlir_ciface_trx_all_gather_bf16(&mi, &mo, int64_t(li.mask));
      CHECK_EQ(d.calls(), 1u);
      CHECK_EQ(d.bytes(), uint64_t((p - 1) * k * 2));
      CHECK_EQ(d.bytes(), triax::rt::ringAllGatherBytes(k, p, 2));
      bool ok = out[0] == kSentinel && out[1] == kSentinel &&
                out[size_t(n + 2)] == kSentinel &&
                out[size_t(n + 3)] == kSentinel;
      for (int64_t i = 0; i < n; ++i)
        ok = ok && out[size_t(2 + i)] ==
                       valueB(li.members[size_t(i / k)], 100 + i % k);
      CHECK(ok);
    }
  }

  // The compiled code's bf16 entries of dist.all_reduce, dist.all_to_all
  // and dist.send / dist.recv (a bf16 model's tensor-parallel sums, expert
  // tokens and pipeline activations), on the mask's group (lists in mesh
  // order): views at an offset between sentinels, exact sums (valueB), the
  // moved elements bit for bit, 2 bytes an element in the counters.
  if (std::is_sorted(li.axes.begin(), li.axes.end())) {
    const uint16_t kSentinel = 0xffff; // a NaN
    const int64_t n = 5 * p;
    const int64_t mask = int64_t(li.mask);
    auto word = [](int from, int64_t j) {
      return uint16_t(0x8000u ^ uint32_t(from * 256 + j));
    };
    {
      std::vector<uint16_t> b(static_cast<size_t>(n + 3), kSentinel);
      for (int64_t j = 0; j < n; ++j)
        b[size_t(2 + j)] = valueB(rank, j);
      trx_memref_bf16_1d mb = {b.data(), b.data(), 2, {n}, {1}};
      Delta d(TRX_COMM_ALL_REDUCE, li.mask);
      _mlir_ciface_trx_all_reduce_bf16(&mb, TRX_REDUCE_SUM, mask);
      CHECK_EQ(d.calls(), 1u);
      CHECK_EQ(d.bytes(), allReduceBytes(n, p, li.pos, 2));
      bool ok = b[0] == kSentinel && b[1] == kSentinel &&
                b[size_t(n + 2)] == kSentinel;
      for (int64_t j = 0; j < n; ++j) {
        float e = 0.0f;
        for (int q = 0; q < p; ++q)
          e += valueBF(li.members[size_t(q)], j);
        ok = ok && b[size_t(2 + j)] == f32ToBf16(e);
      }
      CHECK(ok);
    }
    {
      // Chunk c (5 elements) of `send` goes to position c.
      std::vector<uint16_t> send(static_cast<size_t>(n + 3), kSentinel),
          recv(static_cast<size_t>(n + 4), kSentinel);
      for (int64_t c = 0; c < p; ++c)
        for (int64_t j = 0; j < 5; ++j)
          send[size_t(3 + c * 5 + j)] = word(rank, c * 8 + j);
      trx_memref_bf16_1d ms = {send.data(), send.data(), 3, {n}, {1}};
      trx_memref_bf16_1d mr = {recv.data(), recv.data(), 2, {n}, {1}};
      Delta d(TRX_COMM_ALL_TO_ALL, li.mask);
      _mlir_ciface_trx_all_to_all_bf16(&ms, &mr, mask);
      CHECK_EQ(d.calls(), 1u);
      CHECK_EQ(d.bytes(), triax::rt::allToAllBytes(5, p, 2));
      bool ok = recv[0] == kSentinel && recv[1] == kSentinel &&
                recv[size_t(n + 2)] == kSentinel &&
                recv[size_t(n + 3)] == kSentinel;
      for (int64_t i = 0; i < p; ++i)
        for (int64_t j = 0; j < 5; ++j)
          ok = ok && recv[size_t(2 + i * 5 + j)] ==
                         word(li.members[size_t(i)], li.pos * 8 + j);
      CHECK(ok);
    }
    if (p > 1) {
      // A ring: position q sends to q+1 and receives from q-1; even
      // positions send first, odd ones receive first.
      const int to = (li.pos + 1) % p, from = (li.pos - 1 + p) % p;
      std::vector<uint16_t> out(static_cast<size_t>(n + 1)),
          in(static_cast<size_t>(n + 3), kSentinel);
      for (int64_t j = 0; j < n; ++j)
        out[size_t(1 + j)] = word(rank, j);
      trx_memref_bf16_1d mo = {out.data(), out.data(), 1, {n}, {1}};
      trx_memref_bf16_1d mi = {in.data(), in.data(), 2, {n}, {1}};
      Delta ds(TRX_COMM_SEND, li.mask), dr(TRX_COMM_RECV, li.mask);
      auto sendOut = [&] { _mlir_ciface_trx_send_bf16(&mo, to, 11, mask); };
      auto recvIn = [&] { _mlir_ciface_trx_recv_bf16(&mi, from, 11, mask); };
      if (li.pos % 2 == 0) {
        sendOut();
        recvIn();
      } else {
        recvIn();
        sendOut();
      }
      CHECK_EQ(ds.calls(), 1u);
      CHECK_EQ(ds.bytes(), uint64_t(n * 2));
      CHECK_EQ(dr.calls(), 1u);
      CHECK_EQ(dr.bytes(), uint64_t(n * 2));
      bool ok = in[0] == kSentinel && in[1] == kSentinel &&
                in[size_t(n + 2)] == kSentinel;
      for (int64_t j = 0; j < n; ++j)
        ok = ok && in[size_t(2 + j)] == word(li.members[size_t(from)], j);
      CHECK(ok);
    }
  }

  // trx_all_gather_bf16 in place (the own block already at position pos),
  // and trx_all_reduce_bucket_bf16: bit for bit the all_reduce of the
  // concatenation, one all_reduce call of its ring volume at 2 bytes an
  // element.
  {
    const int64_t npr = 7;
    std::vector<uint16_t> b(static_cast<size_t>(p * npr), 0xffff);
    for (int64_t j = 0; j < npr; ++j)
      b[size_t(li.pos * npr + j)] = valueB(rank, j);
    Delta d(TRX_COMM_ALL_GATHER, li.mask);
    trx_all_gather_bf16(b.data() + li.pos * npr, npr, b.data(), ax, na);
    CHECK_EQ(d.calls(), 1u);
    CHECK_EQ(d.bytes(), uint64_t((p - 1) * npr * 2));
    bool ok = true;
    for (int q = 0; q < p; ++q)
      for (int64_t j = 0; j < npr; ++j)
        ok = ok && b[size_t(q * npr + j)] == valueB(li.members[size_t(q)], j);
    CHECK(ok);
  }
  {
    const int64_t counts[] = {7, 0, 1003, 64};
    const int64_t total = 7 + 0 + 1003 + 64;
    std::vector<uint16_t> whole(static_cast<size_t>(total));
    for (int64_t j = 0; j < total; ++j)
      whole[size_t(j)] = f32ToBf16(noiseF(rank, j));
    for (int32_t op : {TRX_REDUCE_SUM, TRX_REDUCE_AVG}) {
      std::vector<uint16_t> ref = whole;
      trx_all_reduce_bf16(ref.data(), total, op, ax, na);
      std::vector<std::vector<uint16_t>> parts;
      std::vector<uint16_t *> bufs;
      int64_t at = 0;
      for (int64_t c : counts) {
        parts.emplace_back(whole.begin() + at, whole.begin() + at + c);
        at += c;
      }
      for (auto &part : parts)
        bufs.push_back(part.data());
      Delta d(TRX_COMM_ALL_REDUCE, li.mask);
      trx_all_reduce_bucket_bf16(bufs.data(), counts, 4, op, ax, na);
      trx_comm_wait_grads();
      CHECK_EQ(d.calls(), 1u);
      CHECK_EQ(d.bytes(), allReduceBytes(total, p, li.pos, 2));
      std::vector<uint16_t> joined;
      for (auto &part : parts)
        joined.insert(joined.end(), part.begin(), part.end());
      CHECK(joined == ref);
    }
  }

  // Through the transport (broadcast has no bf16 C front; all_to_all's is
  // checked through its compiled entry above): broadcast and all_to_all
  // move the 2-byte elements as they are (bit patterns that are no
  // particular numbers) and send 2 bytes an element.
  triax::rt::Transport *t = triax::rt::activeTransport();
  const triax::rt::CommGroup *g = triax::rt::commGroup(ax, na);
  CHECK(t != nullptr && g != nullptr);
  {
    const int64_t n = 37;
    const int32_t root = p - 1;
    std::vector<uint16_t> b(static_cast<size_t>(n), 0);
    if (li.pos == root)
      for (int64_t j = 0; j < n; ++j)
        b[size_t(j)] = uint16_t(0x8000u + uint32_t(rank * 64 + j));
    uint64_t sent =
        t->broadcast(*g, b.data(), n, CommDType::BF16, root, "bf16");
    const int64_t dist = (li.pos - root + p) % p;
    CHECK_EQ(sent, triax::rt::chainBroadcastBytes(n, p, dist, 2));
    bool ok = true;
    for (int64_t j = 0; j < n; ++j)
      ok = ok &&
           b[size_t(j)] ==
               uint16_t(0x8000u + uint32_t(li.members[size_t(root)] * 64 + j));
    CHECK(ok);
  }
  {
    const int64_t npr = 5;
    auto word = [](int from, int64_t chunk, int64_t j) {
      return uint16_t(0xff00u ^ uint32_t((from * 64 + chunk) * 8 + j));
    };
    std::vector<uint16_t> send(static_cast<size_t>(p * npr)),
        recv(static_cast<size_t>(p * npr), 0);
    for (int64_t c = 0; c < p; ++c)
      for (int64_t j = 0; j < npr; ++j)
        send[size_t(c * npr + j)] = word(rank, c, j);
    uint64_t sent =
        t->allToAll(*g, send.data(), npr, recv.data(), CommDType::BF16, "bf16");
    CHECK_EQ(sent, triax::rt::allToAllBytes(npr, p, 2));
    bool ok = true;
    for (int64_t i = 0; i < p; ++i)
      for (int64_t j = 0; j < npr; ++j)
        ok = ok && recv[size_t(i * npr + j)] ==
                       word(li.members[size_t(i)], li.pos, j);
    CHECK(ok);
  }

  // TRX_COMM=mpi on the CUDA target (see checkStaging): a bf16 buffer in
  // "device memory" is staged at 2 bytes an element, with the host result.
  {
    const int64_t n = 301;
    std::vector<uint16_t> host(static_cast<size_t>(n));
    for (int64_t j = 0; j < n; ++j)
      host[size_t(j)] = f32ToBf16(noiseF(rank, j + 7));
    auto *dev = static_cast<uint16_t *>(
        trx_alloc(size_t(n) * sizeof(uint16_t) + 1, TRX_MEM_OTHER));
    CHECK(dev != nullptr);
    std::memcpy(dev, host.data(), size_t(n) * sizeof(uint16_t));
    trx_all_reduce_bf16(host.data(), n, TRX_REDUCE_AVG, ax, na);
    deviceBlocks().insert(dev);
    triax::rt::gDeviceMemoryHook = allocBlock;
    trx_copy_reset_counters();
    trx_all_reduce_bf16(dev, n, TRX_REDUCE_AVG, ax, na);
    CHECK_EQ(trx_copy_calls(TRX_COPY_TO_HOST), uint64_t(1));
    CHECK_EQ(trx_copy_calls(TRX_COPY_TO_DEVICE), uint64_t(1));
    CHECK_EQ(trx_copy_bytes(TRX_COPY_TO_HOST), uint64_t(n * 2));
    CHECK_EQ(trx_copy_bytes(TRX_COPY_TO_DEVICE), uint64_t(n * 2));
    triax::rt::gDeviceMemoryHook = nullptr;
    CHECK(std::memcmp(dev, host.data(), size_t(n) * sizeof(uint16_t)) == 0);
    deviceBlocks().clear();
    trx_free(dev);
  }
}

std::vector<int32_t> allAxes(const Mesh &m) {
  std::vector<int32_t> all;
  for (int32_t a = 0; a < int32_t(m.sizes.size()); ++a)
    all.push_back(a);
  return all;
}

int cmdRun(const Mesh &m, int *argc, char ***argv) {
  initOrExit(m, argc, argv);
  atexit(abortJobIfStillRunning);
  const int k = int(m.sizes.size());
  const int rank = trx_dist_rank(), world = trx_dist_world_size();
  int64_t prod = 1;
  for (int64_t s : m.sizes)
    prod *= s;
  CHECK_EQ(int64_t(world), prod);
  CHECK_EQ(trx_dist_num_axes(), k);
  // The layout formula: rank = ((c0*s1 + c1)*s2 + c2)...
  int64_t r = 0;
  for (int32_t a = 0; a < k; ++a) {
    CHECK_STREQ(trx_dist_axis_name(a), m.names[size_t(a)].c_str());
    CHECK_EQ(trx_dist_axis_size(a), m.sizes[size_t(a)]);
    CHECK_EQ(trx_dist_axis_index(m.names[size_t(a)].c_str()), a);
    CHECK(trx_dist_coord(a) >= 0 && trx_dist_coord(a) < m.sizes[size_t(a)]);
    r = r * m.sizes[size_t(a)] + trx_dist_coord(a);
  }
  CHECK_EQ(r, int64_t(rank));
  CHECK_EQ(trx_dist_coord(k), int64_t(-1));
  CHECK_EQ(trx_dist_axis_index("nope"), -1);
  // One machine: every rank on node 0 (unless the test pretends).
  if (!getenv("TRX_RANKS_PER_NODE")) {
    CHECK_EQ(trx_dist_num_nodes(), 1);
    CHECK_EQ(trx_dist_node_size(0), world);
    for (int32_t q = 0; q < world; ++q)
      CHECK_EQ(trx_dist_node_of(q), 0);
  }
  CHECK_EQ(trx_dist_node_of(world), -1);
  CHECK_EQ(trx_dist_node_size(trx_dist_num_nodes()), -1);

  printLayout(m);
  CHECK_STREQ(trx_comm_transport_name(), "mpi");
  for (const std::vector<int32_t> &l : axisLists(static_cast<size_t>(k))) {
    ListInfo li = describe(m, l);
    checkGroup(li);
    checkAllReduce(li);
    checkGatherScatter(li);
    checkBroadcastP2P(li);
    checkSummationOrder(li);
    checkSplitKey(m, li);
    checkBucket(li);
    checkStaging(li);
    checkShift(li);
    checkAllToAll(li);
    checkBf16(li);
  }
  checkLarge(describe(m, allAxes(m)));
  workloadTable(m);
  // Every rank got here: add up the check counts.
  int32_t checks = trxtest::checkCount();
  std::vector<int32_t> axes = allAxes(m);
  trx_all_reduce_i32(&checks, 1, TRX_REDUCE_SUM, axes.data(), k);
  trx_dist_finalize();
  CHECK(!trx_dist_initialized());
  if (rank == 0)
    printf("comm %s: all %d checks passed on %d ranks\n", m.text.c_str(),
           checks, world);
  return 0;
}

/// As a plain process: argument errors, then a one-device mesh.
int cmdSingleton(int *argc, char ***argv) {
  char err[512];
  const char *names[] = {"dp", "tp", "pp"};
  int64_t sizes[] = {1, 1, 1};
  // Queries before init.
  CHECK_EQ(trx_dist_initialized(), 0);
  CHECK_EQ(trx_dist_rank(), 0);
  CHECK_EQ(trx_dist_world_size(), 1);
  CHECK_EQ(trx_dist_num_axes(), 0);
  CHECK_EQ(trx_dist_coord(0), int64_t(-1));
  CHECK_EQ(trx_dist_axis_size(0), int64_t(-1));
  CHECK(trx_dist_axis_name(0) == nullptr);
  CHECK_EQ(trx_dist_num_nodes(), 0);
  CHECK_EQ(trx_dist_node_of(0), -1);
  CHECK_EQ(trx_dist_node_size(0), -1);
  int32_t ax0 = 0;
  CHECK(trx_dist_comm(&ax0, 1) == nullptr);
  CHECK_STREQ(trx_last_error(),
              "trx_dist_comm: the distributed runtime is not initialized "
              "(call trx_dist_init first)");
  // Argument errors come before MPI starts.
  CHECK_ERR(trx_dist_init(argc, argv, names, sizes, -1, err, sizeof(err)),
            TRX_ERR_ARG, err, "trx_dist_init: -1 mesh axes (expected 0..8)");
  CHECK_ERR(trx_dist_init(argc, argv, names, sizes, 9, err, sizeof(err)),
            TRX_ERR_ARG, err, "trx_dist_init: 9 mesh axes (expected 0..8)");
  CHECK_ERR(trx_dist_init(argc, argv, nullptr, sizes, 1, err, sizeof(err)),
            TRX_ERR_ARG, err, "trx_dist_init: NULL axis names or sizes");
  {
    const char *bad[] = {"dp", "t p"};
    CHECK_ERR(trx_dist_init(argc, argv, bad, sizes, 2, err, sizeof(err)),
              TRX_ERR_ARG, err,
              "trx_dist_init: axis 1: invalid name 't p' (expected "
              "[A-Za-z0-9_]+, at most 31 characters)");
    const char *empty[] = {""};
    CHECK_ERR(trx_dist_init(argc, argv, empty, sizes, 1, err, sizeof(err)),
              TRX_ERR_ARG, err,
              "trx_dist_init: axis 0: invalid name '' (expected "
              "[A-Za-z0-9_]+, at most 31 characters)");
    const char *null[] = {nullptr};
    CHECK_ERR(trx_dist_init(argc, argv, null, sizes, 1, err, sizeof(err)),
              TRX_ERR_ARG, err,
              "trx_dist_init: axis 0: invalid name NULL (expected "
              "[A-Za-z0-9_]+, at most 31 characters)");
    const char *dup[] = {"dp", "tp", "dp"};
    CHECK_ERR(trx_dist_init(argc, argv, dup, sizes, 3, err, sizeof(err)),
              TRX_ERR_ARG, err, "trx_dist_init: axis 'dp' is listed twice");
    int64_t zero[] = {1, 0};
    CHECK_ERR(trx_dist_init(argc, argv, names, zero, 2, err, sizeof(err)),
              TRX_ERR_ARG, err,
              "trx_dist_init: axis 'tp' has size 0 (must be >= 1)");
    int64_t huge[] = {65536, 65536};
    CHECK_ERR(trx_dist_init(argc, argv, names, huge, 2, err, sizeof(err)),
              TRX_ERR_ARG, err,
              "trx_dist_init: the mesh has more than 2147483647 devices");
    // The pretend nodes' variable is checked before MPI starts.
    for (const char *v :
         {"0", "abc", "-2", "+2", " 2", "2x", "", "2147483648"}) {
      setenv("TRX_RANKS_PER_NODE", v, 1);
      CHECK_ERR(trx_dist_init(argc, argv, names, sizes, 2, err, sizeof(err)),
                TRX_ERR_ARG, err,
                (std::string("TRX_RANKS_PER_NODE='") + v +
                 "' is not a number of ranks per node (an integer >= 1)")
                    .c_str());
    }
    unsetenv("TRX_RANKS_PER_NODE");
  }
  CHECK_EQ(trx_dist_initialized(), 0);

  // The split rule on explicit values: mesh 2 x 3 x 2 at (1, 0, 1).
  {
    std::vector<int64_t> c = {1, 0, 1}, z = {2, 3, 2};
    triax::rt::SplitKey k = triax::rt::splitKeyOf(0b101, c, z);
    CHECK_EQ(k.color, 0); // axis 1's coordinate
    CHECK_EQ(k.key, 3);   // (1, 1) over 2 x 2
    k = triax::rt::splitKeyOf(0b010, c, z);
    CHECK_EQ(k.color, 3); // (1, 1) over 2 x 2
    CHECK_EQ(k.key, 0);
    k = triax::rt::splitKeyOf(0b111, c, z);
    CHECK_EQ(k.color, 0);
    CHECK_EQ(k.key, 7); // the world rank
  }
  // The ring volumes the NCCL transport reports: 1003 floats over 3
  // members, chunks 334, 334, 335.
  CHECK_EQ(triax::rt::ringAllReduceBytes(1003, 3, 0, 4),
           uint64_t((2 * 1003 - 334 - 335) * 4));
  CHECK_EQ(triax::rt::ringAllReduceBytes(1003, 1, 0, 4), 0u);
  CHECK_EQ(triax::rt::chainBroadcastBytes(10, 4, 3, 4), 0u);
  CHECK_EQ(triax::rt::chainBroadcastBytes(10, 4, 2, 4), 40u);
  CHECK_EQ(triax::rt::allToAllBytes(10, 4, 4), 120u);
  CHECK_EQ(triax::rt::allToAllBytes(10, 1, 4), 0u);
  CHECK_EQ(triax::rt::allToAllBytes(0, 4, 4), 0u);
  CHECK_STREQ(trx_comm_transport_name(), "none");

  // Counters start at 0; names.
  CHECK_EQ(trx_comm_bytes(TRX_COMM_ANY_KIND, TRX_COMM_ANY_AXES), 0u);
  CHECK_STREQ(trx_comm_kind_name(TRX_COMM_ALL_REDUCE), "all_reduce");
  CHECK_STREQ(trx_comm_kind_name(TRX_COMM_RECV), "recv");
  CHECK_STREQ(trx_comm_kind_name(TRX_COMM_ALL_TO_ALL), "all_to_all");
  CHECK_EQ(TRX_COMM_NKINDS, 7);
  CHECK_STREQ(trx_comm_kind_name(7), "invalid");
  CHECK_STREQ(trx_comm_kind_name(-1), "invalid");

  // A mesh of one device runs without mpirun.
  CHECK_EQ(trx_dist_init(argc, argv, names, sizes, 2, err, sizeof(err)),
           TRX_OK);
  atexit(abortJobIfStillRunning);
  CHECK_EQ(trx_dist_initialized(), 1);
  CHECK_EQ(trx_dist_world_size(), 1);
  CHECK_EQ(trx_dist_rank(), 0);
  CHECK_EQ(trx_dist_num_axes(), 2);
  CHECK_EQ(trx_dist_coord(1), int64_t(0));
  CHECK_EQ(trx_dist_axis_index("tp"), 1);
  CHECK_EQ(trx_dist_axis_index("pp"), -1);
  CHECK_EQ(trx_dist_axis_index(nullptr), -1);
  char cs[64];
  CHECK_STREQ(trx_dist_coord_str(cs, sizeof(cs)), "dp=0 tp=0");
  CHECK_EQ(trx_dist_num_nodes(), 1);
  CHECK_EQ(trx_dist_node_of(0), 0);
  CHECK_EQ(trx_dist_node_of(1), -1);
  CHECK_EQ(trx_dist_node_of(-1), -1);
  CHECK_EQ(trx_dist_node_size(0), 1);
  CHECK_EQ(trx_dist_node_size(1), -1);
  CHECK_ERR(trx_dist_init(argc, argv, names, sizes, 2, err, sizeof(err)),
            TRX_ERR_ARG, err, "trx_dist_init: already initialized");
  // Bad axis lists through trx_dist_comm.
  int32_t bad2[] = {2};
  CHECK(trx_dist_comm(bad2, 1) == nullptr);
  CHECK_STREQ(trx_last_error(), "trx_dist_comm: axis 2 is out of range (the "
                                "mesh dp=1 x tp=1 has 2 axes)");
  int32_t dup[] = {1, 1};
  CHECK(trx_dist_comm(dup, 2) == nullptr);
  CHECK_STREQ(trx_last_error(), "trx_dist_comm: axis 1 ('tp') is listed twice");
  CHECK(trx_dist_comm(dup, 0) == nullptr);
  CHECK_STREQ(trx_last_error(),
              "trx_dist_comm: an axis list needs 1..2 axes, got 0");
  CHECK(trx_dist_comm(nullptr, 1) == nullptr);
  CHECK_STREQ(trx_last_error(), "trx_dist_comm: NULL axis list");

  // Every collective over a group of one: values unchanged, 0 bytes, calls
  // counted.
  Mesh m = parseMesh("dp=1,tp=1");
  for (const std::vector<int32_t> &l : axisLists(2)) {
    ListInfo li = describe(m, l);
    checkGroup(li);
    checkAllReduce(li);
    checkGatherScatter(li);
    checkBroadcastP2P(li);
    checkSummationOrder(li);
    checkSplitKey(m, li);
    checkBucket(li);
    checkStaging(li);
    checkShift(li);
    checkAllToAll(li);
    checkBf16(li);
  }
  CHECK_STREQ(trx_comm_transport_name(), "mpi");
  {
    char line[128];
    CHECK(trx_comm_describe(line, sizeof(line)) > 0);
    CHECK(std::string(line).rfind("mpi rings", 0) == 0);
  }
  CHECK_EQ(trx_comm_bytes(TRX_COMM_ANY_KIND, TRX_COMM_ANY_AXES), 0u);
  CHECK(trx_comm_calls(TRX_COMM_ALL_REDUCE, 1u) > 0);
  CHECK(trx_comm_calls(TRX_COMM_ALL_REDUCE, 3u) > 0);
  CHECK_EQ(trx_comm_bytes(-2, 1u), 0u);
  CHECK_EQ(trx_comm_calls(TRX_COMM_NKINDS, 1u), 0u);
  CHECK_EQ(trx_comm_calls(TRX_COMM_ALL_REDUCE, 1u << 8), 0u);
  trx_comm_reset_counters();
  CHECK_EQ(trx_comm_calls(TRX_COMM_ANY_KIND, TRX_COMM_ANY_AXES), 0u);

  trx_dist_finalize();
  CHECK_EQ(trx_dist_initialized(), 0);
  CHECK_EQ(trx_dist_num_axes(), 0);
  CHECK_EQ(trx_dist_num_nodes(), 0);
  trx_dist_finalize(); // a no-op now
  CHECK_ERR(trx_dist_init(argc, argv, names, sizes, 2, err, sizeof(err)),
            TRX_ERR_ARG, err,
            "trx_dist_init: MPI was already finalized and cannot be started "
            "again");
  trxtest::done("comm");
  return 0;
}

/// The ring shift alone over every axis list, then rank 0 prints the
/// counter table after a shift of 100 f32 over the last axis.
int cmdShift(const Mesh &m, int *argc, char ***argv) {
  initOrExit(m, argc, argv);
  atexit(abortJobIfStillRunning);
  const int k = int(m.sizes.size());
  for (const std::vector<int32_t> &l : axisLists(static_cast<size_t>(k)))
    checkShift(describe(m, l));
  // Counted on the shift's axis only.
  trx_dist_barrier();
  trx_comm_reset_counters();
  int32_t last = k - 1;
  std::vector<float> send(100, 1.0f), recv(100);
  trx_shift_start(send.data(), recv.data(), 100, &last, 1, 0);
  trx_shift_wait_slot(0);
  CHECK_EQ(trx_comm_calls(TRX_COMM_ANY_KIND, 1u << last), 2u);
  CHECK_EQ(trx_comm_calls(TRX_COMM_ANY_KIND, TRX_COMM_ANY_AXES), 2u);
  if (trx_dist_rank() == 0)
    trx_comm_print_table(stdout);
  int32_t checks = trxtest::checkCount();
  std::vector<int32_t> axes = allAxes(m);
  trx_all_reduce_i32(&checks, 1, TRX_REDUCE_SUM, axes.data(), k);
  const int rank = trx_dist_rank(), world = trx_dist_world_size();
  trx_dist_finalize();
  if (rank == 0)
    printf("shift %s: all %d checks passed on %d ranks\n", m.text.c_str(),
           checks, world);
  return 0;
}

/// --comm-timeout on a ring shift: the last position of axis 0 never
/// starts its shift, so position 0 waits for its message until the
/// watchdog ends the job.
int cmdShiftStop(const Mesh &m, int *argc, char ***argv) {
  initOrExit(m, argc, argv);
  trx_comm_set_timeout(1.0);
  trx_comm_set_step(3);
  int32_t ax0 = 0;
  std::vector<float> send(64, 1.0f), recv(64);
  if (trx_dist_coord(0) == m.sizes[0] - 1) {
    sleep(30); // stuck: the launcher ends this rank with the job
  } else {
    trx_shift_start(send.data(), recv.data(), 64, &ax0, 1, 0);
    trx_shift_wait_slot(0);
  }
  trx_dist_barrier();
  printf("rank %d: the shift returned without its peer\n", trx_dist_rank());
  return 0;
}

int cmdInit(const Mesh &m, int *argc, char ***argv) {
  initOrExit(m, argc, argv);
  char cs[256];
  printf("rank %d of %d: %s\n", trx_dist_rank(), trx_dist_world_size(),
         trx_dist_coord_str(cs, sizeof(cs)));
  trx_dist_finalize();
  return 0;
}

int cmdNodes(const Mesh &m, int *argc, char ***argv) {
  initOrExit(m, argc, argv);
  atexit(abortJobIfStillRunning);
  const int world = trx_dist_world_size();
  const int32_t nodes = trx_dist_num_nodes();
  CHECK(nodes >= 1 && nodes <= world);
  CHECK_EQ(trx_dist_node_size(nodes), -1);
  std::string line = "nodes " + std::to_string(nodes) + ":";
  int32_t total = 0;
  for (int32_t n = 0; n < nodes; ++n) {
    line += " [";
    int32_t count = 0;
    for (int32_t r = 0; r < world; ++r)
      if (trx_dist_node_of(r) == n)
        line += (count++ ? " " : "") + std::to_string(r);
    line += "]";
    CHECK_EQ(trx_dist_node_size(n), count);
    total += count;
  }
  CHECK_EQ(total, world);
  // Every rank holds the same map.
  std::vector<int32_t> all = allAxes(m);
  std::vector<int32_t> mine(static_cast<size_t>(world)),
      gathered(static_cast<size_t>(world) * static_cast<size_t>(world));
  for (int32_t r = 0; r < world; ++r)
    mine[size_t(r)] = trx_dist_node_of(r);
  trx_all_gather_i32(mine.data(), world, gathered.data(), all.data(),
                     int32_t(all.size()));
  for (size_t i = 0; i < gathered.size(); ++i)
    CHECK_EQ(gathered[i], mine[i % size_t(world)]);
  if (trx_dist_rank() == 0)
    printf("%s\n", line.c_str());
  trx_dist_finalize();
  return 0;
}

int cmdAbort(const Mesh &m, int failing, int *argc, char ***argv) {
  initOrExit(m, argc, argv);
  trx_dist_barrier();
  std::vector<int32_t> all = allAxes(m);
  if (trx_dist_rank() == failing)
    trx_dist_abort("injected failure at step 7");
  // The others wait for the failing rank, which never comes.
  std::vector<float> buf(16, 1.0f);
  trx_all_reduce(buf.data(), 16, TRX_REDUCE_SUM, all.data(),
                 int32_t(all.size()));
  printf("rank %d: the all_reduce returned without the failing rank\n",
         trx_dist_rank());
  return 0;
}

int cmdMpiError(const Mesh &m, int *argc, char ***argv) {
  initOrExit(m, argc, argv);
  // An invalid destination rank: with MPI_ERRORS_RETURN the call returns
  // the code and trx_dist_check_mpi ends the job with our message.
  float x = 1.0f;
  int rc =
      MPI_Send(&x, 1, MPI_FLOAT, trx_dist_world_size() + 5, 0, MPI_COMM_WORLD);
  printf("rank %d: MPI_Send returned %s\n", trx_dist_rank(),
         rc == MPI_SUCCESS ? "success" : "an error code");
  fflush(stdout);
  trx_dist_check_mpi(rc, "MPI_Send");
  return 0;
}

int cmdMisuse(const Mesh &m, const std::string &what, int *argc, char ***argv) {
  if (what == "uninit") {
    float x = 0;
    int32_t a = 0;
    trx_all_reduce(&x, 1, TRX_REDUCE_SUM, &a, 1);
    return 0;
  }
  initOrExit(m, argc, argv);
  std::vector<float> buf(8, 1.0f);
  int32_t ax0[] = {0};
  int32_t k = int32_t(m.sizes.size());
  if (what == "axis") {
    trx_all_reduce(buf.data(), 8, TRX_REDUCE_SUM, &k, 1);
  } else if (what == "dup") {
    int32_t d[] = {0, 0};
    trx_all_gather(buf.data(), 1, buf.data(), d, 2);
  } else if (what == "root") {
    trx_broadcast(buf.data(), 8, int32_t(m.sizes[0]), ax0, 1);
  } else if (what == "op") {
    trx_reduce_scatter(buf.data(), 1, buf.data(), 4, ax0, 1);
  } else if (what == "count") {
    trx_all_reduce(buf.data(), -3, TRX_REDUCE_SUM, ax0, 1);
  } else if (what == "null") {
    trx_all_reduce(nullptr, 8, TRX_REDUCE_SUM, ax0, 1);
  } else if (what == "peer") {
    trx_send(buf.data(), 8, int32_t(m.sizes[0]), ax0, 1, 0);
  } else if (what == "self") {
    trx_send(buf.data(), 8, int32_t(trx_dist_coord(0)), ax0, 1, 0);
  } else if (what == "tag") {
    trx_recv(buf.data(), 8, 0, ax0, 1, TRX_DIST_MAX_TAG + 1);
  } else if (what == "shift-slot") {
    trx_shift_start(buf.data(), buf.data() + 4, 4, ax0, 1, TRX_SHIFT_SLOTS);
  } else if (what == "shift-wait-slot") {
    trx_shift_wait(-1);
  } else if (what == "shift-twice") {
    std::vector<float> recv(8);
    trx_shift_start(buf.data(), recv.data(), 8, ax0, 1, 2);
    trx_shift_start(buf.data(), recv.data(), 8, ax0, 1, 2);
  } else if (what == "shift-wait") {
    trx_shift_wait_slot(3);
  } else if (what == "shift-waited") {
    std::vector<float> recv(8);
    trx_shift_start(buf.data(), recv.data(), 8, ax0, 1, 5);
    trx_shift_wait_slot(5);
    trx_shift_wait_slot(5);
  } else if (what == "shift-overlap") {
    trx_shift_start(buf.data(), buf.data() + 2, 4, ax0, 1, 0);
  } else if (what == "shift-count") {
    std::vector<float> recv(8);
    trx_shift_start(buf.data(), recv.data(), -1, ax0, 1, 0);
  } else if (what == "shift-memref-sizes") {
    std::vector<float> recv(8);
    trx_memref_f32_1d s = {buf.data(), buf.data(), 0, {8}, {1}};
    trx_memref_f32_1d r = {recv.data(), recv.data(), 0, {4}, {1}};
    _mlir_ciface_trx_shift_start_f32(&s, &r, 1, 0);
  } else if (what == "shift-stride") {
    std::vector<float> recv(8);
    trx_memref_f32_1d s = {buf.data(), buf.data(), 0, {4}, {2}};
    trx_memref_f32_1d r = {recv.data(), recv.data(), 0, {4}, {1}};
    _mlir_ciface_trx_shift_start_f32(&s, &r, 1, 0);
  } else if (what == "shift-mask") {
    std::vector<float> recv(8);
    trx_memref_f32_1d s = {buf.data(), buf.data(), 0, {8}, {1}};
    trx_memref_f32_1d r = {recv.data(), recv.data(), 0, {8}, {1}};
    _mlir_ciface_trx_shift_start_f32(&s, &r, int64_t(1) << k, 0);
  } else if (what == "shift-finalize") {
    std::vector<float> recv(8);
    trx_shift_start(buf.data(), recv.data(), 8, ax0, 1, 4);
    trx_dist_finalize();
  } else if (what == "shift-size") {
    // Position 0 shifts 8 floats, position 1 4.
    std::vector<float> recv(8);
    int64_t n = trx_dist_coord(0) == 0 ? 8 : 4;
    trx_shift_start(buf.data(), recv.data(), n, ax0, 1, 0);
    trx_shift_wait_slot(0);
    trx_dist_barrier();
  } else if (what == "a2a-sizes") {
    std::vector<float> recv(8);
    trx_memref_f32_1d s = {buf.data(), buf.data(), 0, {8}, {1}};
    trx_memref_f32_1d r = {recv.data(), recv.data(), 0, {4}, {1}};
    _mlir_ciface_trx_all_to_all_f32(&s, &r, 1);
  } else if (what == "a2a-chunks") {
    // 5 elements over the group of axis 0.
    std::vector<float> recv(5);
    trx_memref_f32_1d s = {buf.data(), buf.data(), 0, {5}, {1}};
    trx_memref_f32_1d r = {recv.data(), recv.data(), 0, {5}, {1}};
    _mlir_ciface_trx_all_to_all_f32(&s, &r, 1);
  } else if (what == "a2a-stride") {
    std::vector<float> recv(8);
    trx_memref_f32_1d s = {buf.data(), buf.data(), 0, {4}, {1}};
    trx_memref_f32_1d r = {recv.data(), recv.data(), 0, {4}, {2}};
    _mlir_ciface_trx_all_to_all_f32(&s, &r, 1);
  } else if (what == "a2a-mask") {
    std::vector<float> recv(8);
    trx_memref_f32_1d s = {buf.data(), buf.data(), 0, {8}, {1}};
    trx_memref_f32_1d r = {recv.data(), recv.data(), 0, {8}, {1}};
    _mlir_ciface_trx_all_to_all_f32(&s, &r, int64_t(1) << k);
  } else if (what == "bf16-pad") {
    // 8 elements over the group of axis 0 need out of ceil(8 / g).
    std::vector<uint16_t> in(8), out(8);
    trx_memref_bf16_1d i = {in.data(), in.data(), 0, {8}, {1}};
    trx_memref_bf16_1d o = {out.data(), out.data(), 0, {8}, {1}};
    _mlir_ciface_trx_reduce_scatter_bf16(&i, &o, TRX_REDUCE_SUM, 1);
  } else if (what == "bf16-stride") {
    std::vector<uint16_t> in(8), out(8);
    trx_memref_bf16_1d i = {in.data(), in.data(), 0, {4}, {2}};
    trx_memref_bf16_1d o = {out.data(), out.data(), 0, {4}, {1}};
    _mlir_ciface_trx_all_gather_bf16(&i, &o, 1);
  } else if (what == "a2a-count") {
    std::vector<float> recv(8);
    trx_all_to_all(buf.data(), -2, recv.data(), ax0, 1);
  } else if (what == "a2a-overlap") {
    // The chunks of 4 floats: recv starts inside send.
    std::vector<float> big(static_cast<size_t>(8 * m.sizes[0]), 1.0f);
    trx_all_to_all(big.data(), 4, big.data() + 1, ax0, 1);
  } else if (what == "size") {
    // Position 0 sends 8 floats; position 1 expects 4.
    if (trx_dist_coord(0) == 0)
      trx_send(buf.data(), 8, 1, ax0, 1, 3);
    else if (trx_dist_coord(0) == 1)
      trx_recv(buf.data(), 4, 0, ax0, 1, 3);
    trx_dist_barrier();
  } else {
    fprintf(stderr, "unknown misuse '%s'\n", what.c_str());
    return 2;
  }
  printf("misuse %s: no abort\n", what.c_str());
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  setvbuf(stdout, nullptr, _IOLBF, 0);
  if (argc == 1)
    return cmdSingleton(&argc, &argv);
  std::string cmd = argv[1];
  if (argc >= 3) {
    Mesh m = parseMesh(argv[2]);
    if (cmd == "run" && argc == 3)
      return cmdRun(m, &argc, &argv);
    if (cmd == "init" && argc == 3)
      return cmdInit(m, &argc, &argv);
    if (cmd == "abort" && argc == 4)
      return cmdAbort(m, atoi(argv[3]), &argc, &argv);
    if (cmd == "mpi-error" && argc == 3)
      return cmdMpiError(m, &argc, &argv);
    if (cmd == "misuse" && argc == 4)
      return cmdMisuse(m, argv[3], &argc, &argv);
    if (cmd == "shift" && argc == 3)
      return cmdShift(m, &argc, &argv);
    if (cmd == "shift-stop" && argc == 3)
      return cmdShiftStop(m, &argc, &argv);
    if (cmd == "nodes" && argc == 3)
      return cmdNodes(m, &argc, &argv);
  }
  fprintf(stderr, "usage: triax-rt-comm-test [run|init|mpi-error|shift|"
                  "shift-stop|nodes MESH | abort MESH RANK | misuse MESH "
                  "WHAT]\n");
  return 2;
}
