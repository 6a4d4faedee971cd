//===- MergeGPUModules.cpp - All kernels into one gpu.module -------------===//
//
// gpu-kernel-outlining makes one gpu.module per kernel; a model has about a
// thousand. One module means one device compilation, one ptxas run and one
// module load at start-up. A module's lone kernel takes the module's name,
// which the symbol table made unique (two launches in one host function
// give two kernels of the same name).
//
// Shared memory (a kernel's workgroup attributions) is aligned to
// kSharedAlign bytes: the generated kernels access it with 16-byte vector
// stores and ldmatrix rows, and the NVVM lowering gives a workgroup
// buffer only its element type's alignment unless told otherwise.
//
//===----------------------------------------------------------------------===//

#include "triax/Conversion/KernelsToGPU/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/SymbolTable.h"

namespace mlir::triax {
#define GEN_PASS_DEF_TRIAXMERGEGPUMODULES
#include "triax/Conversion/KernelsToGPU/Passes.h.inc"
} // namespace mlir::triax

using namespace mlir;

namespace {

/// The alignment of every workgroup buffer: the widest access a thread
/// makes (128-bit vector loads and stores, ldmatrix's 16-byte rows).
constexpr int64_t kSharedAlign = 16;

struct TriaxMergeGPUModulesPass
    : public mlir::triax::impl::TriaxMergeGPUModulesBase<
          TriaxMergeGPUModulesPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto modules = llvm::to_vector(module.getOps<gpu::GPUModuleOp>());
    if (modules.empty())
      return;
    if (SymbolTable::lookupSymbolIn(module, moduleName)) {
      module.emitError() << "triax-merge-gpu-modules: a symbol named '"
                         << moduleName << "' exists already";
      return signalPassFailure();
    }
    OpBuilder b(modules.front());
    auto merged =
        gpu::GPUModuleOp::create(b, modules.front().getLoc(), moduleName);
    if (ArrayAttr targets = modules.front().getTargetsAttr())
      merged.setTargetsAttr(targets);
    SymbolTable mergedSymbols(merged);
    // (module, function) -> the function's name in the merged module.
    llvm::DenseMap<std::pair<StringAttr, StringAttr>, StringAttr> renamed;
    for (gpu::GPUModuleOp from : modules) {
      auto funcs = llvm::to_vector(from.getOps<gpu::GPUFuncOp>());
      // Outlining names a kernel after its host function; two launches in
      // one function give two modules (uniqued names) holding kernels of
      // the same name. Such a lone kernel takes its module's unique name.
      bool takeModuleName =
          funcs.size() == 1 &&
          llvm::range_size(from.getBody()->getOperations()) == 1;
      for (Operation &op :
           llvm::make_early_inc_range(from.getBody()->getOperations())) {
        auto symbol = dyn_cast<SymbolOpInterface>(&op);
        if (symbol && takeModuleName) {
          renamed[{from.getNameAttr(), symbol.getNameAttr()}] =
              from.getNameAttr();
          SymbolTable::setSymbolName(&op, from.getNameAttr());
        }
        if (symbol && mergedSymbols.lookup(symbol.getName())) {
          op.emitError() << "triax-merge-gpu-modules: two kernels are named '"
                         << symbol.getName() << "'";
          return signalPassFailure();
        }
        op.moveBefore(merged.getBody(), merged.getBody()->end());
        if (symbol)
          mergedSymbols.insert(symbol);
      }
    }
    // Point the launches at the merged module.
    module.walk([&](gpu::LaunchFuncOp launch) {
      StringAttr name = launch.getKernelName();
      auto it = renamed.find({launch.getKernelModuleName(), name});
      if (it != renamed.end())
        name = it->second;
      launch.setKernelAttr(SymbolRefAttr::get(merged.getNameAttr(),
                                              {FlatSymbolRefAttr::get(name)}));
    });
    for (gpu::GPUModuleOp from : modules)
      from.erase();
    Builder builder(module.getContext());
    merged.walk([&](gpu::GPUFuncOp fn) {
      for (unsigned i = 0; i < fn.getNumWorkgroupAttributions(); ++i)
        if (!fn.getWorkgroupAttributionAttr(
                i, LLVM::LLVMDialect::getAlignAttrName()))
          fn.setWorkgroupAttributionAttr(
              i, LLVM::LLVMDialect::getAlignAttrName(),
              builder.getI64IntegerAttr(kSharedAlign));
    });
  }
};

} // namespace
