//===- copy.cpp - The copy hooks on the CUDA driver API -------------------===//
//
// The CUDA device's copies (lib/cpu/device.h) under trx_copy_to_host,
// trx_copy_to_device, trx_copy_on_device and trx_device_memset (triax_rt.h,
// lib/cpu/copy.cpp, which counts them), where every trx_alloc block is
// device memory: the only way the runtime reads or writes one on the host.
//
//  - trx_copy_to_host waits for the compute and the communication stream
//    (hostSync: every earlier write is visible; an asynchronous kernel's
//    error surfaces here with the usual hint), then copies with cuMemcpy,
//    which infers the direction through unified addressing (the source may
//    be device memory or host memory). A host synchronization: the driver
//    calls it only where it needs the bytes.
//  - trx_copy_to_device returns without waiting for the device. The source
//    is first copied into a pinned staging buffer (a ring of kSlots buffers
//    of kSlotBytes; a larger copy goes through them piece by piece), from
//    which cuMemcpyHtoDAsync copies on the launch stream (the compute
//    stream, or inside a gradient region the communication stream, as the
//    compiled work); an event per buffer says when its copy is done, and a
//    buffer is refilled only after that (cuEventSynchronize on the host: it
//    waits only when the host runs kSlots copies ahead). So the caller may
//    reuse the source at once, and the copy is ordered after the work
//    queued before it on that stream and before the work queued after it.
//  - trx_copy_on_device (cuMemcpyDtoDAsync) and trx_device_memset
//    (cuMemsetD8Async) are stream-ordered the same way, no host wait.
//
// Also the device-memory test the CPU runtime's staging uses
// (gDeviceMemoryHook: the MPI transport under TRX_COMM=mpi, the bucket's
// index list): a trx_alloc block, or memory CUDA reports as device memory.
//
//===----------------------------------------------------------------------===//

#include "../cpu/internal.h"
#include "cuda_internal.h"
#include "triax_rt.h"
#include "triax_rt_cuda.h"

#include <algorithm>
#include <cstring>
#include <mutex>

using namespace triax::rt;
using namespace triax::rt::cuda;

namespace {

constexpr size_t kSlotBytes = size_t(4) << 20;
constexpr int kSlots = 4;

CUdeviceptr dptr(const void *p) { return reinterpret_cast<CUdeviceptr>(p); }

/// The pinned staging ring of trx_copy_to_device.
struct Staging {
  std::mutex mutex;
  void *buffer[kSlots] = {};
  CUevent done[kSlots] = {};
  bool pending[kSlots] = {};
  int next = 0;
};

Staging &staging() {
  static Staging s;
  return s;
}

/// Whether the device owns `p`: a trx_alloc block, or (gpu.alloc, NCCL's
/// buffers) memory CUDA reports as device memory. Host memory CUDA does
/// not know, and anything before CUDA started, is host memory.
bool deviceMemory(const void *p) {
  if (ownsPointer(p))
    return true;
  CUmemorytype type = CU_MEMORYTYPE_HOST;
  CUresult rc =
      cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, dptr(p));
  return rc == CUDA_SUCCESS && type == CU_MEMORYTYPE_DEVICE;
}

struct Registration {
  Registration() { gDeviceMemoryHook = &deviceMemory; }
} registration;

} // namespace

void triax::rt::cuda::copyToHost(void *dst, const void *device_src,
                                 size_t bytes) {
  hostSync("trx_copy_to_host");
  TRX_CU(cuMemcpy(dptr(dst), dptr(device_src), bytes));
}

void triax::rt::cuda::copyToDevice(void *device_dst, const void *src,
                                   size_t bytes) {
  CUstream s = launchStream(); // CUDA up, context current
  Staging &st = staging();
  std::lock_guard<std::mutex> lock(st.mutex);
  const char *from = static_cast<const char *>(src);
  for (size_t done = 0; done < bytes;) {
    const int slot = st.next;
    st.next = (st.next + 1) % kSlots;
    if (!st.buffer[slot]) {
      TRX_CU(cuMemAllocHost(&st.buffer[slot], kSlotBytes));
      st.done[slot] = newEvent();
    }
    // The buffer's previous copy has read it (the device's progress: a
    // wait only when the host is kSlots copies ahead).
    if (st.pending[slot])
      TRX_CU(cuEventSynchronize(st.done[slot]));
    const size_t piece = std::min(kSlotBytes, bytes - done);
    std::memcpy(st.buffer[slot], from + done, piece);
    TRX_CU(cuMemcpyHtoDAsync(dptr(static_cast<char *>(device_dst) + done),
                             st.buffer[slot], piece, s));
    TRX_CU(cuEventRecord(st.done[slot], s));
    st.pending[slot] = true;
    done += piece;
  }
  launched("trx_copy_to_device");
}

void triax::rt::cuda::copyOnDevice(void *device_dst, const void *device_src,
                                   size_t bytes) {
  if (device_dst == device_src)
    return;
  TRX_CU(cuMemcpyDtoDAsync(dptr(device_dst), dptr(device_src), bytes,
                           launchStream()));
  launched("trx_copy_on_device");
}

void triax::rt::cuda::fill(void *device_dst, int byte, size_t bytes) {
  TRX_CU(cuMemsetD8Async(dptr(device_dst), static_cast<unsigned char>(byte),
                         bytes, launchStream()));
  launched("trx_device_memset");
}
