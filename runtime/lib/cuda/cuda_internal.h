//===- cuda_internal.h - Shared by the CUDA runtime's files ---*- C++ -*-===//

#ifndef TRIAX_RT_CUDA_INTERNAL_H
#define TRIAX_RT_CUDA_INTERNAL_H

#include <cuda.h>

namespace triax::rt::cuda {

/// Ends the job (trx_dist_abort: the rank, then MPI_Abort or exit) with
/// "<call> failed: <CUDA error name>: <description>".
[[noreturn]] void failCU(const char *call, CUresult rc);

/// Ends the job with "<call> failed: <what>".
[[noreturn]] void fail(const char *call, const char *what);

/// The runtime's stream, after making sure CUDA is initialized.
CUstream stream();

} // namespace triax::rt::cuda

/// Runs a CUDA driver call; a failure ends the job naming the call.
#define TRX_CU(call)                                                           \
  do {                                                                         \
    CUresult trx_cu_rc_ = (call);                                              \
    if (trx_cu_rc_ != CUDA_SUCCESS)                                            \
      ::triax::rt::cuda::failCU(#call, trx_cu_rc_);                            \
  } while (0)

#endif // TRIAX_RT_CUDA_INTERNAL_H
