//===- context.cpp - CUDA context, stream and the mgpu* entry points ------===//
//
// The host code of `triaxc --target cuda` calls the mgpu* functions of the
// upstream GPU lowering (gpu.launch_func -> mgpuModuleGetFunction +
// mgpuLaunchKernel, the embedded fatbin -> mgpuModuleLoad from a global
// constructor). Debian ships no MLIR CUDA runtime: these are Triax's, on the
// CUDA driver API, with the signatures of MLIR 22's CudaRuntimeWrappers.
//
// Streams: the lowering creates a stream per launch, synchronizes and
// destroys it. Here every "created" stream is the runtime's compute stream,
// so kernels, cuBLAS GEMMs, memsets and copies run in program order;
// destroy is a no-op, and the lowering's synchronize after each launch is a
// no-op too (unless TRX_CUDA_SYNC=1): launches are asynchronous. The host
// waits only where it needs device memory's bytes: the compiled code calls
// trx_cuda_host_sync before its host-side loads and stores
// (triax-insert-host-syncs), and the CPU runtime's trx_copy_to_host
// (copy.cpp) waits before it copies; its other copies and memsets are
// stream-ordered. A kernel's error
// then surfaces at the next synchronization (or the next CUDA call); the
// message says so, and TRX_CUDA_SYNC=1 restores a synchronization after
// every launch and GEMM to find the kernel. A second, communication stream
// (commStream) carries DP gradient buckets.
//
// CUDA starts lazily, at the first kernel, allocation or GEMM, on the device
// chosen by trx_cuda_init; module loads (global constructors) only record
// the embedded binary.
//
//===----------------------------------------------------------------------===//

#include "cuda_internal.h"
#include "triax_rt.h"
#include "triax_rt_cuda.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

using namespace triax::rt::cuda;

namespace {

struct Context {
  CUdevice device = 0;
  CUcontext context = nullptr;
  CUstream stream = nullptr;
  CUstream comm = nullptr;
  bool syncEveryLaunch = false;
  int ordinal = -1;
  char name[256] = {0};
  size_t memory = 0;
};

Context ctx;
std::once_flag initOnce, commOnce;
std::atomic<uint64_t> launches{0};
std::atomic<uint64_t> hostSyncs{0};

int envInt(const char *name, int fallback) {
  const char *v = std::getenv(name);
  if (!v || !*v)
    return fallback;
  char *end = nullptr;
  long n = std::strtol(v, &end, 10);
  return (end && *end == 0 && n >= 0) ? int(n) : fallback;
}

void initialize() {
  TRX_CU(cuInit(0));
  int count = 0;
  TRX_CU(cuDeviceGetCount(&count));
  if (count < 1)
    fail("cuDeviceGetCount", "no CUDA device is visible");
  int ordinal = envInt("TRX_CUDA_DEVICE", -1);
  if (ordinal < 0)
    ordinal = envInt("OMPI_COMM_WORLD_LOCAL_RANK",
                     envInt("MPI_LOCALRANKID", envInt("SLURM_LOCALID", 0))) %
              count;
  if (ordinal >= count) {
    char what[128];
    snprintf(what, sizeof(what), "TRX_CUDA_DEVICE=%d but %d device(s) exist",
             ordinal, count);
    fail("trx_cuda_init", what);
  }
  TRX_CU(cuDeviceGet(&ctx.device, ordinal));
  TRX_CU(cuDevicePrimaryCtxRetain(&ctx.context, ctx.device));
  TRX_CU(cuCtxSetCurrent(ctx.context));
  TRX_CU(cuStreamCreate(&ctx.stream, CU_STREAM_NON_BLOCKING));
  const char *sync = std::getenv("TRX_CUDA_SYNC");
  ctx.syncEveryLaunch = sync && *sync && std::strcmp(sync, "0") != 0;
  TRX_CU(cuDeviceGetName(ctx.name, int(sizeof(ctx.name)), ctx.device));
  TRX_CU(cuDeviceTotalMem(&ctx.memory, ctx.device));
  ctx.ordinal = ordinal;
}

} // namespace

/// Errors a kernel leaves behind: with asynchronous launches they surface
/// at a later call, not at the launch of the kernel that caused them.
static bool asyncKernelError(CUresult rc) {
  switch (rc) {
  case CUDA_ERROR_ILLEGAL_ADDRESS:
  case CUDA_ERROR_LAUNCH_FAILED:
  case CUDA_ERROR_LAUNCH_TIMEOUT:
  case CUDA_ERROR_MISALIGNED_ADDRESS:
  case CUDA_ERROR_ILLEGAL_INSTRUCTION:
  case CUDA_ERROR_INVALID_ADDRESS_SPACE:
  case CUDA_ERROR_INVALID_PC:
  case CUDA_ERROR_HARDWARE_STACK_ERROR:
  case CUDA_ERROR_ASSERT:
    return true;
  default:
    return false;
  }
}

void triax::rt::cuda::failCU(const char *call, CUresult rc) {
  const char *name = nullptr, *text = nullptr;
  cuGetErrorName(rc, &name);
  cuGetErrorString(rc, &text);
  char msg[1024], device[32] = "no device chosen yet";
  if (ctx.ordinal >= 0)
    snprintf(device, sizeof(device), "device %d", ctx.ordinal);
  const char *hint =
      asyncKernelError(rc) && !ctx.syncEveryLaunch &&
              !std::strstr(call, "TRX_CUDA_SYNC")
          ? "; an earlier asynchronous launch failed; rerun with "
            "TRX_CUDA_SYNC=1 to find it"
          : "";
  snprintf(msg, sizeof(msg), "cuda: %s failed: %s (CUresult %d): %s (%s)%s",
           call, name ? name : "unknown error", int(rc),
           text ? text : "no description", device, hint);
  trx_dist_abort(msg);
  std::abort(); // trx_dist_abort does not return
}

void triax::rt::cuda::fail(const char *call, const char *what) {
  char msg[768], device[32] = "no device chosen yet";
  if (ctx.ordinal >= 0)
    snprintf(device, sizeof(device), "device %d", ctx.ordinal);
  snprintf(msg, sizeof(msg), "cuda: %s failed: %s (%s)", call, what, device);
  trx_dist_abort(msg);
  std::abort(); // trx_dist_abort does not return
}

CUstream triax::rt::cuda::stream() {
  trx_cuda_init();
  return ctx.stream;
}

CUstream triax::rt::cuda::commStream() {
  trx_cuda_init();
  std::call_once(commOnce, [] {
    CUstream s = nullptr;
    TRX_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    __atomic_store_n(&ctx.comm, s, __ATOMIC_RELEASE);
  });
  return ctx.comm;
}

namespace {
/// Set inside a gradient region (the compiled code runs on one thread).
std::atomic<CUstream> gLaunchStream{nullptr};
} // namespace

CUstream triax::rt::cuda::launchStream() {
  CUstream s = gLaunchStream.load(std::memory_order_acquire);
  return s ? s : stream();
}

void triax::rt::cuda::setLaunchStream(CUstream s) {
  gLaunchStream.store(s, std::memory_order_release);
}

CUevent triax::rt::cuda::newEvent() {
  trx_cuda_init();
  CUevent event = nullptr;
  TRX_CU(cuEventCreate(&event, CU_EVENT_DISABLE_TIMING));
  return event;
}

void triax::rt::cuda::streamWaits(CUstream waiter, CUstream producer) {
  // cuStreamWaitEvent waits for the event's state at the call: once the
  // wait is enqueued the event may be recorded again, so a small ring of
  // events serves every pair (one mutex: recording and waiting are
  // enqueues, cheap).
  static std::mutex m;
  static CUevent ring[16] = {};
  static unsigned next = 0;
  std::lock_guard<std::mutex> lock(m);
  CUevent &event = ring[next++ % 16];
  if (!event)
    event = newEvent();
  TRX_CU(cuEventRecord(event, producer));
  TRX_CU(cuStreamWaitEvent(waiter, event, 0));
}

bool triax::rt::cuda::syncEveryLaunch() {
  trx_cuda_init();
  return ctx.syncEveryLaunch;
}

void triax::rt::cuda::launched(const char *what) {
  if (!ctx.syncEveryLaunch)
    return;
  CUresult rc = cuStreamSynchronize(launchStream());
  if (rc != CUDA_SUCCESS) {
    char call[512];
    snprintf(call, sizeof(call), "%s (TRX_CUDA_SYNC=1: synchronized after it)",
             what);
    failCU(call, rc);
  }
}

void triax::rt::cuda::hostSync(const char *who) {
  trx_cuda_init();
  hostSyncs.fetch_add(1, std::memory_order_relaxed);
  CUstream streams[] = {ctx.stream,
                        __atomic_load_n(&ctx.comm, __ATOMIC_ACQUIRE)};
  for (CUstream s : streams) {
    if (!s)
      continue;
    CUresult rc = cuStreamSynchronize(s);
    if (rc != CUDA_SUCCESS) {
      char call[512];
      snprintf(call, sizeof(call),
               "cuStreamSynchronize (%s stream, before %s; an earlier "
               "asynchronous launch failed; rerun with TRX_CUDA_SYNC=1 to "
               "find it)",
               s == ctx.stream ? "compute" : "communication", who);
      failCU(call, rc);
    }
  }
}

extern "C" int trx_cuda_init(void) {
  std::call_once(initOnce, initialize);
  // Each thread that calls CUDA needs the context current.
  CUcontext current = nullptr;
  if (cuCtxGetCurrent(&current) == CUDA_SUCCESS && current != ctx.context)
    TRX_CU(cuCtxSetCurrent(ctx.context));
  return ctx.ordinal;
}

extern "C" void *trx_cuda_stream(void) { return stream(); }

extern "C" void trx_cuda_synchronize(void) { hostSync("trx_cuda_synchronize"); }

/// The compiled code's host-side loads and stores (the loss, the gradient
/// norm, scalar reductions): triax-insert-host-syncs calls this first.
extern "C" void trx_cuda_host_sync(void) {
  hostSync("a host-side access of the compiled code");
}

/// The CUDA device's wait for its queued work (trx_device_sync). The copy
/// hooks do their own waiting; this one serves timing and tests.
void triax::rt::cuda::sync() { hostSync("a host-side access of the runtime"); }

extern "C" uint64_t trx_cuda_kernel_launches(void) { return launches.load(); }

extern "C" uint64_t trx_cuda_host_syncs(void) {
  return hostSyncs.load(std::memory_order_relaxed);
}

extern "C" const char *trx_cuda_device_name(void) {
  trx_cuda_init();
  return ctx.name;
}

extern "C" size_t trx_cuda_device_memory(void) {
  trx_cuda_init();
  return ctx.memory;
}

//===----------------------------------------------------------------------===//
// The mgpu* entry points (MLIR 22, mlir/lib/ExecutionEngine/
// CudaRuntimeWrappers.cpp)
//===----------------------------------------------------------------------===//

namespace {
/// A module handed out by mgpuModuleLoad: the embedded binary, loaded into
/// the context on its first mgpuModuleGetFunction. The load runs from a
/// global constructor; deferring it lets a binary start (--help, argument
/// errors) where there is no GPU, and CUDA errors then name the kernel.
struct LazyModule {
  void *data;
  bool jit;
  int optLevel;
  CUmodule module = nullptr;
};

CUmodule loaded(LazyModule *m) {
  if (m->module)
    return m->module;
  trx_cuda_init();
  if (!m->jit) {
    TRX_CU(cuModuleLoadData(&m->module, m->data));
    return m->module;
  }
  // The `isa` format embeds PTX, compiled by the driver here.
  char log[4096] = {0};
  CUjit_option options[] = {CU_JIT_OPTIMIZATION_LEVEL, CU_JIT_ERROR_LOG_BUFFER,
                            CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void *values[] = {reinterpret_cast<void *>(intptr_t(m->optLevel)), log,
                    reinterpret_cast<void *>(sizeof(log))};
  CUresult rc = cuModuleLoadDataEx(&m->module, m->data, 3, options, values);
  if (rc != CUDA_SUCCESS) {
    fprintf(stderr, "triax runtime: cuda: PTX JIT log:\n%s\n", log);
    failCU("cuModuleLoadDataEx (PTX JIT)", rc);
  }
  return m->module;
}
} // namespace

extern "C" void *mgpuModuleLoad(void *data, size_t /*gpuBlobSize*/) {
  return new LazyModule{data, /*jit=*/false, 0};
}

extern "C" void *mgpuModuleLoadJIT(void *data, int optLevel,
                                   size_t /*assemblySize*/) {
  return new LazyModule{data, /*jit=*/true, optLevel};
}

extern "C" void mgpuModuleUnload(void *handle) {
  auto *m = static_cast<LazyModule *>(handle);
  if (!m)
    return;
  // Called from a global destructor: the context may already be gone at
  // exit, which is not an error worth reporting.
  if (m->module && ctx.context)
    cuModuleUnload(m->module);
  delete m;
}

extern "C" CUfunction mgpuModuleGetFunction(void *handle, const char *name) {
  CUfunction function = nullptr;
  CUresult rc = cuModuleGetFunction(
      &function, loaded(static_cast<LazyModule *>(handle)), name);
  if (rc != CUDA_SUCCESS) {
    char call[320];
    snprintf(call, sizeof(call), "cuModuleGetFunction(\"%s\")", name);
    failCU(call, rc);
  }
  return function;
}

extern "C" void mgpuLaunchKernel(CUfunction function, intptr_t gridX,
                                 intptr_t gridY, intptr_t gridZ,
                                 intptr_t blockX, intptr_t blockY,
                                 intptr_t blockZ, int32_t smem, CUstream s,
                                 void **params, void **extra,
                                 size_t /*paramsCount*/) {
  if (smem > 48 * 1024)
    TRX_CU(cuFuncSetAttribute(
        function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, smem));
  CUresult rc = cuLaunchKernel(
      function, unsigned(gridX), unsigned(gridY), unsigned(gridZ),
      unsigned(blockX), unsigned(blockY), unsigned(blockZ), unsigned(smem),
      s ? s : launchStream(), params, extra);
  if (rc != CUDA_SUCCESS) {
    const char *name = nullptr;
    cuFuncGetName(&name, function);
    char call[384];
    snprintf(call, sizeof(call),
             "cuLaunchKernel(%s, grid %ldx%ldx%ld, block %ldx%ldx%ld, smem %d)",
             name ? name : "?", long(gridX), long(gridY), long(gridZ),
             long(blockX), long(blockY), long(blockZ), int(smem));
    failCU(call, rc);
  }
  launches.fetch_add(1, std::memory_order_relaxed);
  if (ctx.syncEveryLaunch) {
    const char *name = nullptr;
    cuFuncGetName(&name, function);
    char what[320];
    snprintf(what, sizeof(what), "kernel %s", name ? name : "?");
    launched(what);
  }
}

/// The compute stream, or the communication stream inside a gradient
/// region (launchStream).
extern "C" CUstream mgpuStreamCreate() { return launchStream(); }

extern "C" void mgpuStreamDestroy(CUstream /*s*/) {}

/// The lowering synchronizes after every launch_func. On the compute stream
/// that is a no-op (launches are asynchronous; the host syncs where it
/// touches memory), except with TRX_CUDA_SYNC=1, where mgpuLaunchKernel
/// already synchronized. Another stream is synchronized.
extern "C" void mgpuStreamSynchronize(CUstream s) {
  if (!s || s == stream() || s == launchStream())
    return;
  CUresult rc = cuStreamSynchronize(s);
  if (rc != CUDA_SUCCESS)
    failCU("cuStreamSynchronize (an earlier asynchronous launch failed; "
           "rerun with TRX_CUDA_SYNC=1 to find it)",
           rc);
}

extern "C" void mgpuStreamWaitEvent(CUstream s, CUevent event) {
  TRX_CU(cuStreamWaitEvent(s ? s : stream(), event, 0));
}

extern "C" CUevent mgpuEventCreate() {
  trx_cuda_init();
  CUevent event = nullptr;
  TRX_CU(cuEventCreate(&event, CU_EVENT_DISABLE_TIMING));
  return event;
}

extern "C" void mgpuEventDestroy(CUevent event) {
  TRX_CU(cuEventDestroy(event));
}

extern "C" void mgpuEventSynchronize(CUevent event) {
  TRX_CU(cuEventSynchronize(event));
}

extern "C" void mgpuEventRecord(CUevent event, CUstream s) {
  TRX_CU(cuEventRecord(event, s ? s : stream()));
}

/// gpu.alloc: device memory, stream ordered. The runtime hands out no
/// managed memory (asking for more than is free can hang the GPU), so a
/// host-shared gpu.alloc (which the Triax lowering does not emit) is
/// refused.
extern "C" void *mgpuMemAlloc(uint64_t sizeBytes, CUstream s,
                              bool isHostShared) {
  trx_cuda_init();
  if (isHostShared)
    fail("mgpuMemAlloc",
         "a host-shared (managed) gpu.alloc: the Triax runtime allocates "
         "device memory only (docs/cuda.md, section 2)");
  if (sizeBytes == 0)
    return nullptr;
  CUdeviceptr ptr = 0;
  TRX_CU(cuMemAllocAsync(&ptr, sizeBytes, s ? s : stream()));
  return reinterpret_cast<void *>(ptr);
}

extern "C" void mgpuMemFree(void *ptr, CUstream s) {
  if (!ptr)
    return;
  TRX_CU(cuMemFreeAsync(reinterpret_cast<CUdeviceptr>(ptr), s ? s : stream()));
}

extern "C" void mgpuMemcpy(void *dst, void *src, size_t sizeBytes, CUstream s) {
  TRX_CU(cuMemcpyAsync(reinterpret_cast<CUdeviceptr>(dst),
                       reinterpret_cast<CUdeviceptr>(src), sizeBytes,
                       s ? s : stream()));
}

extern "C" void mgpuMemset32(void *dst, unsigned int value, size_t count,
                             CUstream s) {
  TRX_CU(cuMemsetD32Async(reinterpret_cast<CUdeviceptr>(dst), value, count,
                          s ? s : stream()));
}

extern "C" void mgpuMemset16(void *dst, unsigned short value, size_t count,
                             CUstream s) {
  TRX_CU(cuMemsetD16Async(reinterpret_cast<CUdeviceptr>(dst), value, count,
                          s ? s : stream()));
}

extern "C" void mgpuSetDefaultDevice(int32_t device) {
  // Only before the first use: the runtime runs on one device per rank.
  if (ctx.ordinal < 0) {
    char value[16];
    snprintf(value, sizeof(value), "%d", int(device));
    setenv("TRX_CUDA_DEVICE", value, 1);
  }
}
