//===- KernelReport.h - What one training step runs, counted from its IR -*- C++
//-*-===//
//
// `triaxc --kernel-report`: a static account of one optimizer step of the
// compiled program, counted from the kernel-level IR (the last stage where
// launches, loops and runtime calls are all still visible), never entered
// by hand. Per kernel and per library call: calls per step, bytes read and
// written, FLOPs and the roofline time on a hardware description; then the
// step's totals: launches, GEMMs, collectives, host synchronizations, host
// accesses of device memory, allocations, memsets, predicted step time and
// MFU. docs/cuda.md "Kernel report" states every counting rule; the
// comments in KernelReport.cpp say where each is applied.
//
//===----------------------------------------------------------------------===//

#ifndef TRIAX_COSTMODEL_KERNELREPORT_H
#define TRIAX_COSTMODEL_KERNELREPORT_H

#include "triax/CostModel/CostModel.h"

#include <cstdint>
#include <string>
#include <vector>

namespace llvm {
class raw_ostream;
} // namespace llvm

namespace mlir {
class ModuleOp;
} // namespace mlir

namespace triax::cost {

/// Which lowering produced the kernel IR: on CUDA a kernel is a gpu.launch
/// (after triax-insert-host-syncs); on the CPU an outermost scf.parallel
/// (after triax-outline-kernels and its cleanup).
enum class KernelTarget { CPU, CUDA };

enum class ItemKind {
  Kernel,       ///< a gpu.launch, or an outermost scf.parallel on the CPU
  Gemm,         ///< a trx_sgemm* / trx_gemm_bf16* call
  Collective,   ///< all_reduce, reduce_scatter, all_gather (incl. ZeRO's)
  PointToPoint, ///< trx_send_f32 / trx_recv_f32
  Other,        ///< another external call (not timed)
};

/// One kernel or library call site of the program, with what one execution
/// of it does and how often a step executes it.
struct KernelItem {
  ItemKind kind = ItemKind::Kernel;
  /// A kernel: its function (`<entry>_kernelN`, "#i" when the function has
  /// several); a call: the callee.
  std::string name;
  /// The function the op is in, and the op's location.
  std::string function, location;
  /// A launch: "GxB" (grid and block sizes, x only when y = z = 1).
  std::string shape;
  double callsPerStep = 0;
  /// Per execution.
  int64_t bytesRead = 0, bytesWritten = 0;
  double flops = 0;
  /// Of `flops`, those of tensor-core products in a generated kernel
  /// (nvvm.mma.sync), rated at the dense peak rather than the FP32 one.
  double tensorFlops = 0;
  /// Collectives and point-to-point: bytes this rank sends (receives for a
  /// recv) per call, by the cost model's ring formulas [C1]/[C2].
  int64_t commBytes = 0;
  /// A collective's group: ranks, and consecutive ranks it spans.
  int64_t groupSize = 1, spanRanks = 1;
  /// A GEMM on the tensor cores (bf16 operands), rated at the dense peak.
  bool tensorCoreGemm = false;
  /// A GEMM the CUDA runtime runs on padded copies of its operands
  /// (unaligned rows, or M, N or K not whole 16-byte groups): the copies'
  /// bytes per execution (also in bytesRead / bytesWritten, and timed at
  /// HBM bandwidth after the product's roofline); its FLOPs are the padded
  /// product's.
  int64_t paddedCopyBytes = 0;
  /// Roofline time of one execution (kernels and GEMMs), seconds.
  double seconds = 0;
  double secondsPerStep() const { return seconds * callsPerStep; }
};

/// What one call of an entry point runs (counted in its body, with the
/// functions it calls, loops multiplied out).
struct EntryCounts {
  std::string name;
  double callsPerStep = 0;
  double launches = 0, gemms = 0, collectives = 0, hostSyncs = 0,
         allocations = 0, hostAccesses = 0;
  int64_t returnedValues = 0;
};

struct KernelReportTotals {
  double launches = 0;        ///< kernels launched (CPU: parallel loops run)
  double gemms = 0;           ///< GEMM calls
  double collectiveCalls = 0; ///< collectives and point-to-point calls
  double collectiveBytes = 0; ///< bytes this rank sends (and receives)
  double hostSyncs = 0;       ///< trx_cuda_host_sync calls + returned values
  double hostSyncCalls = 0;   ///< of which trx_cuda_host_sync calls
  double hostAccesses = 0;    ///< host loads/stores/copies of device memory
  double hostAccessBytes = 0;
  double allocations = 0; ///< memref.alloc executed
  double allocationBytes = 0;
  double memsetBytes = 0; ///< zero-filled allocations + the driver's zeroing
  double allocationMemsetBytes = 0;
  double gradientZeroBytes = 0;
  double scalarZeroBytes = 0; ///< the driver's loss accumulator, each step
  /// Host syncs of a logged step: hostSyncs + the driver's one read of the
  /// loss and the gradient norm (steps it does not log read nothing).
  double loggedStepHostSyncs = 0;
  /// Allocations that reach the device allocator after the first step: 0
  /// with the CUDA runtime's caching allocator (a step allocates the same
  /// sizes in the same order, so every block comes from its cache).
  double deviceAllocationsAfterFirstStep = 0;
  double hostDeviceBytes = 0;   ///< host accesses + tokens in + results out
  double kernelFlops = 0;       ///< counted in kernels and GEMMs
  double kernelSeconds = 0;     ///< roofline, kernels
  double gemmSeconds = 0;       ///< roofline, GEMMs
  double tensorGemmSeconds = 0; ///< of gemmSeconds, the bf16 GEMMs
  double collectiveSeconds = 0; ///< [T2] of the counted collectives
  double stepSeconds = 0;       ///< kernels + GEMMs + collectives
  double modelFlops = 0;        ///< [F1] per step, this rank's share
  double mfu = 0;
  /// The step with the bf16 GEMMs at the hardware's measured efficiency
  /// (Hardware::gemmEfficiency; 0 when it has none), and its MFU.
  double measuredGemmStepSeconds = 0;
  double measuredGemmMfu = 0;
};

struct KernelReport {
  KernelTarget target = KernelTarget::CUDA;
  std::string model, mesh, precision;
  Hardware hardware;
  /// The step: accum = global_batch / (micro_batch x dp) micro-batches.
  int64_t globalBatch = 0, microBatch = 0, dp = 1, accum = 1, seq = 0;
  std::vector<EntryCounts> entries;
  std::vector<KernelItem> items;
  KernelReportTotals totals;
};

/// Counts the step of `kernelIR`, the module after the target's structured
/// lowering (see KernelTarget), on rank 0. `facts` are the cost model's facts
/// of the same program before lowering (analyzeModule): the training
/// config, the mesh, the parameters and the model's shape, which the kernel
/// IR no longer carries. Errors name the op and its location.
llvm::Expected<KernelReport>
analyzeKernelModule(mlir::ModuleOp kernelIR, const ModuleFacts &facts,
                    const Hardware &hw, KernelTarget target,
                    llvm::StringRef modelName, llvm::StringRef precision);

/// The text report: header, the `top` items by time per step, totals.
void printKernelReport(llvm::raw_ostream &os, const KernelReport &report,
                       size_t top = 20);
/// The same, every item, as one JSON object.
void printKernelReportJSON(llvm::raw_ostream &os, const KernelReport &report);

} // namespace triax::cost

#endif // TRIAX_COSTMODEL_KERNELREPORT_H
