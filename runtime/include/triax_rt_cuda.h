/*===- triax_rt_cuda.h - The CUDA side of the Triax runtime ------*- C -*-===*|
|*                                                                          *|
|* Training binaries of `triaxc --target cuda` link libtriax_rt_cuda.a      *|
|* (whole) before libtriax_rt.a. It supplies, on the CUDA driver API:       *|
|*  - the mgpu* entry points the upstream GPU lowering calls (module load,  *|
|*    kernel launch, streams, events, device memory);                       *|
|*  - trx_alloc and its family (the same API and peak counters as the CPU   *|
|*    runtime's, see triax_rt.h) on CUDA managed memory, so that a buffer   *|
|*    is one pointer for the host runtime and for the kernels;              *|
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

/* The stream every kernel, GEMM and copy of the runtime runs on (a
 * CUstream), created by trx_cuda_init. */
void *trx_cuda_stream(void);

/* Waits for all work on trx_cuda_stream(). */
void trx_cuda_synchronize(void);

/* Counters since start: kernels launched through mgpuLaunchKernel, GEMMs
 * run on cuBLAS, managed allocations made. */
uint64_t trx_cuda_kernel_launches(void);
uint64_t trx_cuda_gemms(void);
uint64_t trx_cuda_allocations(void);

/* The device's name and its memory in bytes (after trx_cuda_init). */
const char *trx_cuda_device_name(void);
size_t trx_cuda_device_memory(void);

#ifdef __cplusplus
}
#endif

#endif /* TRIAX_RT_CUDA_H */
