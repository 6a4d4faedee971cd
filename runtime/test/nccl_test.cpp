//===- nccl_test.cpp - The NCCL transport on one GPU ----------------------===//
//
// Linked with libtriax_rt_cuda.a (whole), so the NCCL transport is the
// default, exactly as in a `triaxc --target cuda` binary. Needs a GPU;
// bench/gpu/run.sh runs it on the H200 (one rank, no launcher, no MPI).
// Multi-rank NCCL cannot run on one GPU: the CPU tests of comm.cpp cover the
// logic shared with the MPI transport (groups, split rule, counters).
//
//   triax-rt-nccl-test          one-rank NCCL communicators (a world from
//                               its own unique id, ncclCommSplit per axis,
//                               the whole mesh as the world) and every
//                               collective through the trx_* API over every
//                               axis list: device and host buffers, f32 and
//                               i32, in place and aliased, stream-ordered
//                               and host-synchronous, a gradient bucket and
//                               a gradient region on the communication
//                               stream; exact values
//   triax-rt-nccl-test abort    trx_dist_abort after init: the
//                               communicators are aborted and the process
//                               ends with status 1 and the message
//
//===----------------------------------------------------------------------===//

#include "check.h"
#include "transport.h"
#include "triax_rt.h"
#include "triax_rt_cuda.h"

#include <cstring>
#include <string>
#include <vector>

namespace {

float valueF(int64_t j) { return float(int(j * 37 % 101) - 50) * 0.25f; }
int32_t valueI(int64_t j) { return int32_t(j * 7919 % 100003) - 50000; }

template <typename T> T *deviceBuffer(int64_t n) {
  void *p = trx_alloc(size_t(n) * sizeof(T) + 1, TRX_MEM_OTHER);
  CHECK(p != nullptr);
  return static_cast<T *>(p);
}

/// One axis list of the mesh dp=1 x tp=1: every collective is a group of
/// one, so each result is known exactly; the gathers and scatters write a
/// buffer that starts different from the answer, so a call that moved
/// nothing fails.
void checkList(const std::vector<int32_t> &axes, bool device) {
  const int32_t *ax = axes.data();
  const int32_t na = int32_t(axes.size());
  for (int64_t n : {int64_t(0), int64_t(1), int64_t(1003), int64_t(1) << 20}) {
    std::vector<float> hf(size_t(n) + 1), hout(size_t(n) + 1);
    std::vector<int32_t> hi(size_t(n) + 1);
    float *f = device ? deviceBuffer<float>(n) : hf.data();
    float *out = device ? deviceBuffer<float>(n) : hout.data();
    int32_t *i = device ? deviceBuffer<int32_t>(n) : hi.data();
    for (int32_t op = 0; op < 4; ++op) {
      trx_device_sync(); // the host writes device buffers next
      for (int64_t j = 0; j < n; ++j) {
        f[j] = valueF(j);
        i[j] = valueI(j);
        out[j] = -1.0f;
      }
      trx_all_reduce(f, n, op, ax, na);
      trx_all_reduce_i32(i, n, op, ax, na);
      trx_all_gather(f, n, out, ax, na);
      bool ok = true;
      for (int64_t j = 0; j < n; ++j)
        ok =
            ok && f[j] == valueF(j) && i[j] == valueI(j) && out[j] == valueF(j);
      CHECK(ok);
      // reduce_scatter into another buffer, then aliased (recv == send).
      for (int64_t j = 0; j < n; ++j)
        out[j] = 0.5f;
      trx_reduce_scatter(f, n, out, op, ax, na);
      trx_reduce_scatter_i32(i, n, i, op, ax, na);
      ok = true;
      for (int64_t j = 0; j < n; ++j)
        ok = ok && out[j] == valueF(j) && i[j] == valueI(j);
      CHECK(ok);
    }
    // In-place all_gather (send = recv + position * n) and broadcast.
    trx_all_gather(f, n, f, ax, na);
    trx_broadcast(f, n, 0, ax, na);
    trx_broadcast_i32(i, n, 0, ax, na);
    bool ok = true;
    for (int64_t j = 0; j < n; ++j)
      ok = ok && f[j] == valueF(j) && i[j] == valueI(j);
    CHECK(ok);
    if (device) {
      // Stream-ordered (as the compiled code calls it): the result is there
      // once the compute stream is.
      for (int64_t j = 0; j < n; ++j)
        out[j] = 2.0f;
      {
        triax::rt::StreamOrderedScope scope;
        trx_all_gather(f, n, out, ax, na);
        trx_all_reduce(out, n, TRX_REDUCE_AVG, ax, na);
      }
      trx_device_sync();
      ok = true;
      for (int64_t j = 0; j < n; ++j)
        ok = ok && out[j] == valueF(j);
      CHECK(ok);
      trx_free(f);
      trx_free(out);
      trx_free(i);
    }
  }
}

/// A gradient bucket on the communication stream (device buffers, as the
/// compiled code's trx_all_reduce_grads calls it), then the wait.
void checkBucket() {
  const int64_t counts[] = {5, 0, 70000, 1};
  std::vector<float *> bufs;
  for (int64_t c : counts)
    bufs.push_back(deviceBuffer<float>(c));
  trx_device_sync();
  for (size_t b = 0; b < bufs.size(); ++b)
    for (int64_t j = 0; j < counts[b]; ++j)
      bufs[b][j] = valueF(j + int64_t(b));
  int32_t ax[] = {0};
  uint64_t calls = trx_comm_calls(TRX_COMM_ALL_REDUCE, 1u);
  {
    triax::rt::StreamOrderedScope scope;
    trx_all_reduce_bucket(bufs.data(), counts, 4, TRX_REDUCE_AVG, ax, 1);
  }
  trx_comm_wait_grads();
  trx_device_sync();
  CHECK_EQ(trx_comm_calls(TRX_COMM_ALL_REDUCE, 1u), calls + 1);
  bool ok = true;
  for (size_t b = 0; b < bufs.size(); ++b)
    for (int64_t j = 0; j < counts[b]; ++j)
      ok = ok && bufs[b][j] == valueF(j + int64_t(b));
  CHECK(ok);
  for (float *p : bufs)
    trx_free(p);
}

/// A gradient region in ZeRO-2's shape: a device gradient reduce-scattered
/// into a fresh chunk on the communication stream. The gradient is freed
/// after the region, a second chunk inside a second region; each freed
/// block comes back from the cache (behind the region's event) to the next
/// allocation of its size, which must read zeros, and the chunks hold the
/// result after trx_comm_wait_grads.
void checkGradsRegion() {
  const int64_t n = 70000;
  int32_t ax[] = {0};
  float *grad = deviceBuffer<float>(n);
  float *chunk = deviceBuffer<float>(n);
  trx_device_sync();
  for (int64_t j = 0; j < n; ++j)
    grad[j] = valueF(j);
  uint64_t hits = trx_cuda_cache_hits();
  {
    triax::rt::StreamOrderedScope scope;
    trx_comm_grads_begin();
    trx_reduce_scatter(grad, n, chunk, TRX_REDUCE_AVG, ax, 1);
    trx_comm_grads_end();
  }
  trx_free(grad); // after the region: its block waits for the region
  float *reused = deviceBuffer<float>(n);
  CHECK_EQ(trx_cuda_cache_hits(), hits + 1);
  CHECK(reused == grad); // the last freed block of the size class
  float *chunk2 = nullptr;
  {
    triax::rt::StreamOrderedScope scope;
    trx_comm_grads_begin();
    chunk2 = deviceBuffer<float>(n); // zeroed, then the region's work
    trx_reduce_scatter(chunk, n, chunk2, TRX_REDUCE_SUM, ax, 1);
    trx_free(chunk); // inside the region
    trx_comm_grads_end();
  }
  hits = trx_cuda_cache_hits();
  float *reused2 = deviceBuffer<float>(n);
  CHECK_EQ(trx_cuda_cache_hits(), hits + 1);
  CHECK(reused2 == chunk);
  trx_comm_wait_grads();
  trx_device_sync();
  bool ok = true;
  for (int64_t j = 0; j < n; ++j)
    ok =
        ok && chunk2[j] == valueF(j) && reused[j] == 0.0f && reused2[j] == 0.0f;
  CHECK(ok);
  for (float *p : {reused, chunk2, reused2})
    trx_free(p);
}

int cmdRun() {
  int v = trx_nccl_version();
  CHECK(v >= 22800);
  printf("nccl: library %d.%d.%d\n", v / 10000, (v / 100) % 100, v % 100);
  const char *names[] = {"dp", "tp"};
  int64_t sizes[] = {1, 1};
  char err[512];
  CHECK_EQ(trx_dist_init(nullptr, nullptr, names, sizes, 2, err, sizeof(err)),
           TRX_OK);
  CHECK_STREQ(trx_comm_transport_name(), "nccl");
  char line[256];
  trx_comm_describe(line, sizeof(line));
  printf("comm: %s\n", line);
  printf("device: %s\n", trx_cuda_device_name());
  for (bool device : {true, false})
    for (std::vector<int32_t> axes :
         {std::vector<int32_t>{0}, std::vector<int32_t>{1},
          std::vector<int32_t>{0, 1}, std::vector<int32_t>{1, 0}})
      checkList(axes, device);
  checkBucket();
  checkGradsRegion();
  // A group of one still counts its calls and sends nothing.
  CHECK(trx_comm_calls(TRX_COMM_ALL_GATHER, TRX_COMM_ANY_AXES) > 0);
  CHECK_EQ(trx_comm_bytes(TRX_COMM_ANY_KIND, TRX_COMM_ANY_AXES), 0u);
  trx_dist_finalize();
  CHECK_EQ(trx_dist_initialized(), 0);
  trxtest::done("nccl");
  return 0;
}

int cmdAbort() {
  const char *names[] = {"dp"};
  int64_t sizes[] = {1};
  char err[512];
  CHECK_EQ(trx_dist_init(nullptr, nullptr, names, sizes, 1, err, sizeof(err)),
           TRX_OK);
  float *x = deviceBuffer<float>(16);
  int32_t ax[] = {0};
  trx_all_reduce(x, 16, TRX_REDUCE_SUM, ax, 1);
  fflush(stdout);
  trx_dist_abort("injected failure after a NCCL all_reduce");
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  setvbuf(stdout, nullptr, _IOLBF, 0);
  if (argc == 1)
    return cmdRun();
  if (argc == 2 && !strcmp(argv[1], "abort"))
    return cmdAbort();
  fprintf(stderr, "usage: triax-rt-nccl-test [abort]\n");
  return 2;
}
