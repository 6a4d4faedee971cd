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
//                               stream, the all-to-all and the ring shift
//                               (copies in a group of one); exact
//                               values. The test reads and
//                               writes device buffers only through the
//                               copy hooks, and checks device memory,
//                               zeroing, TRX_ALLOC_POISON and the copies
//   triax-rt-nccl-test abort    trx_dist_abort after init: the
//                               communicators are aborted and the process
//                               ends with status 1 and the message
//
//===----------------------------------------------------------------------===//

#include "check.h"
#include "transport.h"
#include "triax_rt.h"
#include "triax_rt_cuda.h"

#include <cuda.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

namespace {

float valueF(int64_t j) { return float(int(j * 37 % 101) - 50) * 0.25f; }
int32_t valueI(int64_t j) { return int32_t(j * 7919 % 100003) - 50000; }

template <typename T> T *deviceBuffer(int64_t n) {
  void *p = trx_alloc(size_t(n) * sizeof(T) + 1, TRX_MEM_OTHER);
  CHECK(p != nullptr);
  return static_cast<T *>(p);
}

/// n elements for a collective: a device buffer (trx_alloc, device memory)
/// with a host copy the test fills and checks, moved with the copy hooks
/// (up: trx_copy_to_device, down: trx_copy_to_host), or a host buffer
/// (up and down do nothing).
template <typename T> struct Buffer {
  std::vector<T> host;
  bool device;
  T *dev;
  Buffer(int64_t n, bool onDevice)
      : host(size_t(n) + 1), device(onDevice),
        dev(onDevice ? deviceBuffer<T>(n) : host.data()) {}
  ~Buffer() {
    if (device)
      trx_free(dev);
  }
  Buffer(const Buffer &) = delete;
  Buffer &operator=(const Buffer &) = delete;
  T &operator[](int64_t j) { return host[size_t(j)]; }
  size_t bytes() const { return (host.size() - 1) * sizeof(T); }
  void up() {
    if (device)
      trx_copy_to_device(dev, host.data(), bytes());
  }
  void down() {
    if (device)
      trx_copy_to_host(host.data(), dev, bytes());
  }
};

/// One axis list of the mesh dp=1 x tp=1: every collective is a group of
/// one, so each result is known exactly; the gathers and scatters write a
/// buffer that starts different from the answer, so a call that moved
/// nothing fails.
void checkList(const std::vector<int32_t> &axes, bool device) {
  const int32_t *ax = axes.data();
  const int32_t na = int32_t(axes.size());
  for (int64_t n : {int64_t(0), int64_t(1), int64_t(1003), int64_t(1) << 20}) {
    Buffer<float> f(n, device), out(n, device);
    Buffer<int32_t> i(n, device);
    for (int32_t op = 0; op < 4; ++op) {
      for (int64_t j = 0; j < n; ++j) {
        f[j] = valueF(j);
        i[j] = valueI(j);
        out[j] = -1.0f;
      }
      f.up();
      i.up();
      out.up();
      trx_all_reduce(f.dev, n, op, ax, na);
      trx_all_reduce_i32(i.dev, n, op, ax, na);
      trx_all_gather(f.dev, n, out.dev, ax, na);
      f.down();
      i.down();
      out.down();
      bool ok = true;
      for (int64_t j = 0; j < n; ++j)
        ok =
            ok && f[j] == valueF(j) && i[j] == valueI(j) && out[j] == valueF(j);
      CHECK(ok);
      // reduce_scatter into another buffer, then aliased (recv == send).
      for (int64_t j = 0; j < n; ++j)
        out[j] = 0.5f;
      out.up();
      trx_reduce_scatter(f.dev, n, out.dev, op, ax, na);
      trx_reduce_scatter_i32(i.dev, n, i.dev, op, ax, na);
      out.down();
      i.down();
      ok = true;
      for (int64_t j = 0; j < n; ++j)
        ok = ok && out[j] == valueF(j) && i[j] == valueI(j);
      CHECK(ok);
    }
    // In-place all_gather (send = recv + position * n) and broadcast.
    trx_all_gather(f.dev, n, f.dev, ax, na);
    trx_broadcast(f.dev, n, 0, ax, na);
    trx_broadcast_i32(i.dev, n, 0, ax, na);
    f.down();
    i.down();
    bool ok = true;
    for (int64_t j = 0; j < n; ++j)
      ok = ok && f[j] == valueF(j) && i[j] == valueI(j);
    CHECK(ok);
    if (device) {
      // Stream-ordered (as the compiled code calls it): the result is there
      // once the compute stream is (trx_copy_to_host waits for it).
      for (int64_t j = 0; j < n; ++j)
        out[j] = 2.0f;
      out.up();
      {
        triax::rt::StreamOrderedScope scope;
        trx_all_gather(f.dev, n, out.dev, ax, na);
        trx_all_reduce(out.dev, n, TRX_REDUCE_AVG, ax, na);
      }
      out.down();
      ok = true;
      for (int64_t j = 0; j < n; ++j)
        ok = ok && out[j] == valueF(j);
      CHECK(ok);
    }
  }
}

/// The all-to-all and the ring shift over a group of one (a copy: the
/// all-to-all's own chunk is a device copy, the shift's a copy on the
/// compute stream): device and host buffers, f32 and i32, host-synchronous
/// and stream-ordered (as the compiled code calls them, through its
/// entries), the same buffer, and the calls counted with 0 bytes.
void checkAllToAllShift(const std::vector<int32_t> &axes, bool device) {
  const int32_t *ax = axes.data();
  const int32_t na = int32_t(axes.size());
  uint32_t mask = 0;
  for (int32_t a : axes)
    mask |= 1u << a;
  for (int64_t n : {int64_t(0), int64_t(1), int64_t(1003), int64_t(1) << 20}) {
    Buffer<float> f(n, device), out(n, device);
    Buffer<int32_t> i(n, device), outI(n, device);
    for (int64_t j = 0; j < n; ++j) {
      f[j] = valueF(j);
      i[j] = valueI(j);
      out[j] = -1.0f;
      outI[j] = -1;
    }
    f.up();
    i.up();
    out.up();
    outI.up();
    const uint64_t calls = trx_comm_calls(TRX_COMM_ALL_TO_ALL, mask);
    trx_all_to_all(f.dev, n, out.dev, ax, na);
    trx_all_to_all_i32(i.dev, n, outI.dev, ax, na);
    CHECK_EQ(trx_comm_calls(TRX_COMM_ALL_TO_ALL, mask), calls + 2);
    out.down();
    outI.down();
    bool ok = true;
    for (int64_t j = 0; j < n; ++j)
      ok = ok && out[j] == valueF(j) && outI[j] == valueI(j);
    CHECK(ok);
    // The same buffer: nothing moves.
    trx_all_to_all(f.dev, n, f.dev, ax, na);
    f.down();
    ok = true;
    for (int64_t j = 0; j < n; ++j)
      ok = ok && f[j] == valueF(j);
    CHECK(ok);

    // The ring shift: recv gets send (the previous position is this rank).
    for (int64_t j = 0; j < n; ++j)
      out[j] = -2.0f;
    out.up();
    const uint64_t sends = trx_comm_calls(TRX_COMM_SEND, mask);
    trx_shift_start(f.dev, out.dev, n, ax, na, 3);
    trx_shift_wait_slot(3);
    CHECK_EQ(trx_comm_calls(TRX_COMM_SEND, mask), sends + 1);
    out.down();
    ok = true;
    for (int64_t j = 0; j < n; ++j)
      ok = ok && out[j] == valueF(j);
    CHECK(ok);

    if (device && std::is_sorted(axes.begin(), axes.end())) {
      // Stream-ordered, through the compiled code's entries: an
      // all-to-all, then a shift of its result, then an all-reduce of
      // that (each reads what the one before wrote on the device).
      Buffer<float> mid(n, true);
      for (int64_t j = 0; j < n; ++j)
        out[j] = 3.0f;
      out.up();
      trx_memref_f32_1d mf = {f.dev, f.dev, 0, {n}, {1}};
      trx_memref_f32_1d mm = {mid.dev, mid.dev, 0, {n}, {1}};
      trx_memref_f32_1d mo = {out.dev, out.dev, 0, {n}, {1}};
      _mlir_ciface_trx_all_to_all_f32(&mf, &mm, int64_t(mask));
      _mlir_ciface_trx_shift_start_f32(&mm, &mo, int64_t(mask), 5);
      trx_shift_wait(5);
      _mlir_ciface_trx_all_reduce_f32(&mo, TRX_REDUCE_AVG, int64_t(mask));
      out.down();
      ok = true;
      for (int64_t j = 0; j < n; ++j)
        ok = ok && out[j] == valueF(j);
      CHECK(ok);
    }
  }
}

/// A gradient bucket on the communication stream (device buffers, as the
/// compiled code's trx_all_reduce_grads calls it), then the wait.
void checkBucket() {
  const int64_t counts[] = {5, 0, 70000, 1};
  std::vector<std::unique_ptr<Buffer<float>>> bufs;
  std::vector<float *> devs;
  for (size_t b = 0; b < 4; ++b) {
    bufs.push_back(std::make_unique<Buffer<float>>(counts[b], true));
    for (int64_t j = 0; j < counts[b]; ++j)
      (*bufs[b])[j] = valueF(j + int64_t(b));
    bufs[b]->up();
    devs.push_back(bufs[b]->dev);
  }
  int32_t ax[] = {0};
  uint64_t calls = trx_comm_calls(TRX_COMM_ALL_REDUCE, 1u);
  {
    triax::rt::StreamOrderedScope scope;
    trx_all_reduce_bucket(devs.data(), counts, 4, TRX_REDUCE_AVG, ax, 1);
  }
  trx_comm_wait_grads();
  CHECK_EQ(trx_comm_calls(TRX_COMM_ALL_REDUCE, 1u), calls + 1);
  bool ok = true;
  for (size_t b = 0; b < bufs.size(); ++b) {
    for (int64_t j = 0; j < counts[b]; ++j)
      (*bufs[b])[j] = -7.0f;
    bufs[b]->down();
    for (int64_t j = 0; j < counts[b]; ++j)
      ok = ok && (*bufs[b])[j] == valueF(j + int64_t(b));
  }
  CHECK(ok);
}

/// `n` floats of device buffer `p` on the host.
std::vector<float> download(const float *p, int64_t n) {
  std::vector<float> v(static_cast<size_t>(n));
  trx_copy_to_host(v.data(), p, size_t(n) * sizeof(float));
  return v;
}

/// A gradient region in ZeRO-2's shape: a device gradient reduce-scattered
/// into a fresh chunk on the communication stream. The gradient is freed
/// after the region, a second chunk inside a second region; each freed
/// block comes back from the cache (behind the region's event) to the next
/// allocation of its size, which must read zeros (TRX_MEM_OTHER is zeroed
/// on the device), and the chunks hold the result after
/// trx_comm_wait_grads.
void checkGradsRegion() {
  const int64_t n = 70000;
  int32_t ax[] = {0};
  float *grad = deviceBuffer<float>(n);
  float *chunk = deviceBuffer<float>(n);
  std::vector<float> values(static_cast<size_t>(n));
  for (int64_t j = 0; j < n; ++j)
    values[size_t(j)] = valueF(j);
  trx_copy_to_device(grad, values.data(), size_t(n) * sizeof(float));
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
  std::vector<float> c2 = download(chunk2, n), r1 = download(reused, n),
                     r2 = download(reused2, n);
  // Each buffer on its own, with its first wrong element: the second
  // region's chunk, and the two blocks handed out again, zeroed.
  auto firstWrong = [&](const std::vector<float> &got, bool zero) {
    for (int64_t j = 0; j < n; ++j)
      if (got[size_t(j)] != (zero ? 0.0f : valueF(j)))
        return j;
    return int64_t(-1);
  };
  std::vector<std::string> wrong;
  for (auto [name, got, zero] :
       {std::tuple<const char *, const std::vector<float> *, bool>{
            "chunk2 (the second region's reduce-scatter)", &c2, false},
        {"reused (the gradient's block after the first region)", &r1, true},
        {"reused2 (the chunk freed inside the second region)", &r2, true}}) {
    int64_t j = firstWrong(*got, zero);
    if (j >= 0)
      wrong.push_back(std::string(name) + ": element " + std::to_string(j) +
                      " is " + std::to_string((*got)[size_t(j)]) +
                      ", expected " + std::to_string(zero ? 0.0f : valueF(j)));
    ++trxtest::checkCount();
  }
  for (const std::string &w : wrong) // all of them before the first fails
    fprintf(stderr, "checkGradsRegion: %s\n", w.c_str());
  if (!wrong.empty())
    trxtest::failed(__FILE__, __LINE__, wrong.front());
  for (float *p : {reused, chunk2, reused2})
    trx_free(p);
}

/// Device memory, zeroing and the copy hooks: no managed memory (the
/// pointer is CU_MEMORYTYPE_DEVICE); state categories come zeroed,
/// activations are not zeroed (TRX_ALLOC_POISON=1 fills them with 0xFF);
/// copies, device-to-device copies and memsets land in order.
void checkMemory() {
  void *p = trx_alloc(4096, TRX_MEM_PARAMS);
  CUmemorytype type = CU_MEMORYTYPE_HOST;
  unsigned managed = 1;
  CHECK_EQ(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                 reinterpret_cast<CUdeviceptr>(p)),
           CUDA_SUCCESS);
  CHECK_EQ(cuPointerGetAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED,
                                 reinterpret_cast<CUdeviceptr>(p)),
           CUDA_SUCCESS);
  CHECK(type == CU_MEMORYTYPE_DEVICE);
  CHECK_EQ(managed, 0u);
  std::vector<unsigned char> bytes(4096, 0xAB);
  trx_copy_to_host(bytes.data(), p, bytes.size());
  bool zero = true;
  for (unsigned char b : bytes)
    zero = zero && b == 0;
  CHECK(zero);
  size_t zeroedActiv = trx_mem_zeroed_bytes(TRX_MEM_ACTIV);
  setenv("TRX_ALLOC_POISON", "1", 1);
  void *a = trx_alloc(1000, TRX_MEM_ACTIV);
  unsetenv("TRX_ALLOC_POISON");
  trx_copy_to_host(bytes.data(), a, 1000);
  bool poisoned = true;
  for (size_t k = 0; k < 1000; ++k)
    poisoned = poisoned && bytes[k] == 0xFF;
  CHECK(poisoned);
  CHECK_EQ(trx_mem_zeroed_bytes(TRX_MEM_ACTIV), zeroedActiv);
  // A copy larger than the staging ring (4 x 4 MiB), twice in a row from
  // the same host buffer, then a device-to-device copy and a memset.
  const int64_t n = (int64_t(24) << 20) / 4;
  std::vector<float> host(static_cast<size_t>(n));
  for (int64_t j = 0; j < n; ++j)
    host[size_t(j)] = valueF(j);
  float *d = deviceBuffer<float>(n), *e = deviceBuffer<float>(n);
  trx_copy_to_device(d, host.data(), size_t(n) * sizeof(float));
  for (float &x : host)
    x = -x;
  trx_copy_to_device(e, host.data(), size_t(n) * sizeof(float));
  trx_copy_on_device(d + n / 2, e, size_t(n / 4) * sizeof(float));
  trx_device_memset(e, 0, size_t(n / 2) * sizeof(float));
  std::vector<float> dv = download(d, n), ev = download(e, n);
  bool ok = true;
  for (int64_t j = 0; j < n; ++j) {
    float wantD =
        j >= n / 2 && j < n / 2 + n / 4 ? -valueF(j - n / 2) : valueF(j);
    float wantE = j < n / 2 ? 0.0f : -valueF(j);
    ok = ok && dv[size_t(j)] == wantD && ev[size_t(j)] == wantE;
  }
  CHECK(ok);
  for (void *q : {p, a, static_cast<void *>(d), static_cast<void *>(e)})
    trx_free(q);
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
  for (bool device : {true, false})
    for (std::vector<int32_t> axes :
         {std::vector<int32_t>{0}, std::vector<int32_t>{1},
          std::vector<int32_t>{0, 1}, std::vector<int32_t>{1, 0}})
      checkAllToAllShift(axes, device);
  checkBucket();
  checkGradsRegion();
  checkMemory();
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
