//===- cuda_internal.h - Shared by the CUDA runtime's files ---*- C++ -*-===//

#ifndef TRIAX_RT_CUDA_INTERNAL_H
#define TRIAX_RT_CUDA_INTERNAL_H

#include "triax_rt.h"

#include <cuda.h>

#include <cstddef>

namespace triax::rt::cuda {

/// Ends the job (trx_dist_abort: the rank, then MPI_Abort or exit) with
/// "<call> failed: <CUDA error name>: <description>". An error that an
/// earlier asynchronous kernel left behind (illegal address, launch
/// failure, ...) says so and names TRX_CUDA_SYNC=1 to find the kernel.
[[noreturn]] void failCU(const char *call, CUresult rc);

/// Ends the job with "<call> failed: <what>".
[[noreturn]] void fail(const char *call, const char *what);

/// The compute stream, after making sure CUDA is initialized: every
/// kernel, GEMM, memset and stream-ordered collective runs on it, in
/// program order, without host synchronization.
CUstream stream();

/// The communication stream (created on first use): DP gradient buckets
/// run on it while backward computes on stream(). Order it against the
/// compute stream with streamWaits.
CUstream commStream();

/// The stream compiled work goes on (kernel launches, GEMMs): the compute
/// stream, or inside a gradient region (trx_comm_grads_begin/end with
/// NCCL) the communication stream.
CUstream launchStream();

/// Sends compiled work to `s` (nullptr: back to the compute stream).
void setLaunchStream(CUstream s);

/// The allocator hands the block holding `p` out again only behind `done`
/// (the next user's stream waits for it): for a buffer that work off the
/// compute stream may still use when it is freed. Takes `done`; nothing
/// when `p` is in no live block.
void deferReuse(const void *p, CUevent done);

/// The CUDA device's table (lib/cpu/device.h, registered by device.cpp):
/// blocks of device memory (mem.cpp), the copies (copy.cpp), the wait for
/// both streams (context.cpp) and the GEMM on cuBLASLt (blas.cpp).
void *alloc(const char *fn, size_t bytes, size_t align, int category);
bool release(void *p, size_t *bytes, int *category);
int category(const void *p);
void copyToHost(void *dst, const void *src, size_t bytes);
void copyToDevice(void *dst, const void *src, size_t bytes);
void copyOnDevice(void *dst, const void *src, size_t bytes);
void fill(void *dst, int byte, size_t bytes);
void sync();
void gemm(const trx_gemm_problem *problem);
/// The CUDA device's attention (trx_attention_compute's contract): the
/// registered library's, or a decline when none is (device.cpp).
int32_t attention(const trx_attention_problem *problem, int32_t backward);
/// An attention library: cuDNN's (attention.cpp, in libtriax_rt_cudnn.a,
/// which registers it from a global constructor; triaxc links that archive
/// whole only into `--attention=cudnn` binaries, the only ones that call
/// it: the cudnn-frontend's code is 1 MB).
using AttentionFn = int32_t (*)(const trx_attention_problem *problem,
                                int32_t backward);
void registerAttention(AttentionFn fn);

/// Whether `p` points into a live trx_alloc block (device memory).
bool ownsPointer(const void *p);

/// A new event without timing (checked).
CUevent newEvent();

/// Makes `waiter` wait (on the device) for the work enqueued on `producer`
/// so far: an event recorded on producer, waited on by waiter. The events
/// come from a small pool (safe to reuse once the wait is enqueued).
void streamWaits(CUstream waiter, CUstream producer);

/// Whether TRX_CUDA_SYNC=1: every launch and GEMM synchronizes, so that an
/// asynchronous error names its kernel.
bool syncEveryLaunch();

/// After enqueuing `what` (a kernel, a GEMM) on the compute stream: with
/// TRX_CUDA_SYNC=1, waits for it and fails naming `what`; else nothing.
void launched(const char *what);

/// Waits for the compute stream and the communication stream before the
/// host reads or writes memory the device may be using; `who` names the
/// caller in the error ("an earlier asynchronous launch failed ...").
void hostSync(const char *who);

} // namespace triax::rt::cuda

/// Runs a CUDA driver call; a failure ends the job naming the call.
#define TRX_CU(call)                                                           \
  do {                                                                         \
    CUresult trx_cu_rc_ = (call);                                              \
    if (trx_cu_rc_ != CUDA_SUCCESS)                                            \
      ::triax::rt::cuda::failCU(#call, trx_cu_rc_);                            \
  } while (0)

#endif // TRIAX_RT_CUDA_INTERNAL_H
