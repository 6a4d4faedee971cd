/*===- triax_rt_cuda.h - The CUDA side of the Triax runtime ------*- C -*-===*|
|*                                                                          *|
|* Training binaries of `triaxc --target cuda` link libtriax_rt_cuda.a      *|
|* (whole) before libtriax_rt.a. It supplies, on the CUDA driver API:       *|
|*  - the mgpu* entry points the upstream GPU lowering calls (module load,  *|
|*    kernel launch, streams, events, device memory);                       *|
|*  - trx_alloc and its family (the same API and peak counters as the CPU   *|
|*    runtime's, see triax_rt.h) on CUDA device memory (never managed       *|
|*    memory), and the copy hooks through which the host runtime reads and  *|
|*    writes it (trx_copy_to_host, trx_copy_to_device, trx_copy_on_device,  *|
|*    trx_device_memset);                                                   *|
|*  - cblas_sgemm on cuBLAS, under the CPU runtime's trx_sgemm (its checks  *|
|*    stay, the product runs on the GPU).                                   *|
|* Every CUDA or cuBLAS failure ends the job through trx_dist_abort with    *|
|* the call, the error and the rank.                                        *|
|*                                                                          *|
|* No MLIR or LLVM header: a C ABI only.                                    *|
\*===----------------------------------------------------------------------===*/

#ifndef TRIAX_RT_CUDA_H
#define TRIAX_RT_CUDA_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Initializes CUDA on first use (idempotent): the device is
 * TRX_CUDA_DEVICE if set, else the local MPI rank (OMPI_COMM_WORLD_LOCAL_RANK)
 * modulo the number of devices, else 0; its primary context is made
 * current. Returns the device ordinal. */
int trx_cuda_init(void);

/* The compute stream every kernel, GEMM and memset of the runtime runs on
 * (a CUstream), created by trx_cuda_init. Launches are asynchronous
 * (TRX_CUDA_SYNC=1: a synchronization after each launch and GEMM). */
void *trx_cuda_stream(void);

/* Waits for all work on the compute and the communication stream. */
void trx_cuda_synchronize(void);

/* The same, called by the compiled code before its host-side loads and
 * stores (triax-insert-host-syncs; triax_entries.def). The CPU
 * runtime's hook, trx_device_sync (triax_rt.h), does the same on CUDA. */
void trx_cuda_host_sync(void);

/* Counters since start: kernels launched through mgpuLaunchKernel, GEMMs
 * run on cuBLAS, device allocations made (cuMemAlloc calls of the trx_alloc
 * family), allocations served from the cache, host synchronizations. */
uint64_t trx_cuda_kernel_launches(void);
uint64_t trx_cuda_gemms(void);
uint64_t trx_cuda_allocations(void);
uint64_t trx_cuda_cache_hits(void);
uint64_t trx_cuda_host_syncs(void);

/* The caching allocator (TRX_CUDA_ALLOC=cache, the default, or direct):
 * bytes held from CUDA (in use plus cached) now and at most, and the size
 * class a request of `bytes` is served from (multiples of 512 below 1 MiB,
 * then 2^k, 1.25, 1.5, 1.75 2^k). */
size_t trx_cuda_mem_reserved(void);
size_t trx_cuda_mem_reserved_peak(void);
size_t trx_cuda_size_class(size_t bytes);

/* The device's name and its memory in bytes (after trx_cuda_init). */
const char *trx_cuda_device_name(void);
size_t trx_cuda_device_memory(void);

/* The NCCL library's version code (NCCL_VERSION: 22809 for 2.28.9), from
 * the library loaded (a negative ncclResult_t on failure). The NCCL
 * transport itself (lib/cuda/nccl.cpp) is reached through the collectives
 * of triax_rt.h; see docs/cuda.md. */
int trx_nccl_version(void);

#ifdef __cplusplus
}
#endif

#endif /* TRIAX_RT_CUDA_H */
