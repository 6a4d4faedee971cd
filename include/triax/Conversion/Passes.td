//===- Passes.td - Triax conversion passes -----------------*- tablegen -*-===//

#ifndef TRIAX_CONVERSION_PASSES_TD
#define TRIAX_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def ConvertTriaxToKernels : Pass<"convert-triax-to-kernels", "::mlir::ModuleOp"> {
  let summary = "Lower a model's layer ops to loop kernels and runtime calls on buffers";
  let description = [{
    Turns the model's `@forward` and `@train_step` (after `triax-autodiff`)
    into module-level functions `@triax_forward` and `@triax_train_step`
    on memrefs, target-neutral:

    - every layer op becomes one `scf.parallel` loop nest (row-wise ops such
      as layer_norm, softmax or cross-entropy are one nest per op: the
      statistics, the normalization and the affine part are fused), or a
      call to the runtime's GEMM (`trx_sgemm`: OpenBLAS on CPU, cuBLAS on
      GPU) for the matrix products of linear and attention;
    - parameters and AdamW state are runtime-owned buffers read with
      `trx_state_1d/2d(kind, index)`, the index being the parameter's
      position in the model;
    - `triax.adamw` becomes one fused elementwise update of parameter and
      moments, in place;
    - `triax.block` regions are inlined (blocks matter to the parallel
      passes, not to the kernels);
    - the loss (and the gradient norm) are returned as f32 scalars.

    The result feeds the CPU pipeline (`triax-lower-cpu`: loops to OpenMP
    and LLVM) or, later, GPU outlining: the loop nests are what gets mapped
    to GPU blocks and threads.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::func::FuncDialect",
    "::mlir::math::MathDialect", "::mlir::memref::MemRefDialect",
    "::mlir::scf::SCFDialect", "::mlir::tensor::TensorDialect"];
}

#endif // TRIAX_CONVERSION_PASSES_TD
