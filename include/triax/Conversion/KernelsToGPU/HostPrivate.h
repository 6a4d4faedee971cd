//===- HostPrivate.h - Buffers only host code touches ------------*- C++
//-*-===//
//
// One rule, used by triax-insert-host-syncs (no sync for such a buffer
// after the first) and by the kernel report (not a host access of device
// memory). Header-only, so the cost model needs no link to the GPU
// lowering's library.
//
//===----------------------------------------------------------------------===//

#ifndef TRIAX_CONVERSION_KERNELSTOGPU_HOSTPRIVATE_H
#define TRIAX_CONVERSION_KERNELSTOGPU_HOSTPRIVATE_H

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "llvm/ADT/STLExtras.h"

namespace triax {

/// A buffer only host code touches: allocated here and used only by
/// memref.load, memref.store and memref.dealloc outside any launch (a
/// scalar the host stores and reads back): the host's own memory, not
/// device memory.
inline bool isHostPrivate(mlir::Value buffer) {
  if (!buffer.getDefiningOp<mlir::memref::AllocOp>())
    return false;
  return llvm::all_of(buffer.getUsers(), [&](mlir::Operation *user) {
    if (user->getParentOfType<mlir::gpu::LaunchOp>())
      return false;
    if (auto load = llvm::dyn_cast<mlir::memref::LoadOp>(user))
      return load.getMemRef() == buffer;
    if (auto store = llvm::dyn_cast<mlir::memref::StoreOp>(user))
      return store.getMemRef() == buffer;
    return llvm::isa<mlir::memref::DeallocOp>(user);
  });
}

} // namespace triax

#endif // TRIAX_CONVERSION_KERNELSTOGPU_HOSTPRIVATE_H
