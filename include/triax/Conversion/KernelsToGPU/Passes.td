//===- Passes.td - Kernel loops to GPU kernels -------------*- tablegen -*-===//

#ifndef TRIAX_CONVERSION_KERNELSTOGPU_PASSES_TD
#define TRIAX_CONVERSION_KERNELSTOGPU_PASSES_TD

include "mlir/Pass/PassBase.td"

def TriaxMapLoopsToGPU : Pass<"triax-map-loops-to-gpu", "::mlir::func::FuncOp"> {
  let summary = "Turn each outermost scf.parallel nest of a kernel into a gpu.launch, one thread per iteration";
  let description = [{
    After `convert-triax-to-kernels` and `triax-outline-kernels`, every
    layer op is a `scf.parallel` nest on buffers (row-wise ops: a parallel
    loop over rows holding sequential `scf.for` loops over the row). This
    pass maps each outermost `scf.parallel` (one that is not inside another
    `scf.parallel`) to a `gpu.launch`: the iteration space is linearized,
    `block-size` threads per block, ceil(iterations / block-size) blocks
    along x, and each thread delinearizes its global id with the innermost
    loop dimension fastest (so that neighbouring threads touch neighbouring
    elements: coalesced loads and stores). A guard skips the ids past the
    end of the iteration space.

    With `rows=block` (the default), a row-wise kernel (layer_norm, softmax,
    cross-entropy and their backwards: a 1-D nest over rows whose body is
    scalar ops and `scf.for` loops over the row, each a reduction whose
    yielded values are `combine(%acc, x)` with add, mul, max or min, or an
    elementwise loop without results) becomes one block per row instead:
    thread t of B (B = the row length rounded up to a multiple of 32, at
    most `block-size`) takes elements t, t + B, ...; each reduction's
    partial results are combined with `gpu.all_reduce` (warp shuffles and
    shared memory after convert-gpu-to-nvvm), then with the loop's initial
    value; a `gpu.barrier` follows each elementwise loop. Scalar ops run in
    every thread. Summation order differs from the CPU's (fp32 rounding).
    `rows=warp` gives each row one warp instead (blocks of `block-size` / 32
    rows, threads (32, rows per block); a warp past the last row does
    nothing): lane t takes elements t, t + 32, ...; reductions are a
    butterfly of `gpu.shuffle xor` 16, 8, 4, 2, 1 (every lane ends with the
    same bits), barriers are `nvvm.bar.warp.sync`: no shared memory and no
    block barrier, for rows too short to keep a block busy (gpt2's 768).
    A row kernel with a reduction that is not f32 or i32 keeps a block.
    `rows=thread` keeps one thread per row (the mapping above).

    ```mlir
    gpu.launch blocks(%row, ...) in (%rows, 1, 1) threads(%t, ...) in (%B, 1, 1) {
      %p = scf.for %j = %t to %n step %B iter_args(%a = 0.0) -> f32 { ... }
      %s = gpu.all_reduce add %p uniform {} : (f32) -> f32
      %sum = arith.addf %init, %s : f32
      ...
    }
    ```

    **Race freedom.** A dimension runs in parallel only when the pass has
    proved that distinct iterations of it write distinct elements and read
    no element another iteration writes (index analysis of every
    `memref.store` and `memref.load` against the mapped induction
    variables: WriteDisjointness.cpp; docs/cuda.md section 1 gives the
    rules). A dimension it cannot prove runs as a sequential loop inside
    each thread, with a remark naming it and the store; a row kernel whose
    row loop cannot be split over a block's threads keeps one thread per
    row, with a remark; a nest with no provable dimension is an error that
    names the kernel, the store and two iterations that may write the same
    element. The embedding backward (a scatter-add over token rows) is
    proved through the vocabulary-slice guard that
    `convert-triax-to-kernels{embedding-grad-threads}` puts around its
    stores:

    ```mlir
    // Before: two tokens may share a row; %t cannot be split over threads.
    scf.parallel (%t, %h) = (%c0, %c0) to (%c512, %c64) step (%c1, %c1) {
      %id = <ids[%t]>
      %old = memref.load %table[%id, %h]
      memref.store <%old + dy[%t, %h]>, %table[%id, %h]
    }
    // After: one thread per %h, the tokens in order inside it
    // (remark: dimension 0 runs sequentially in each thread).
    gpu.launch ... {
      scf.if <%h in range> {
        scf.for %t = %c0 to %c512 step %c1 { ... }
      }
    }
    ```

    Nests the GPU cannot run stay on the host (a remark says which): those
    with reductions (`scf.reduce` with operands) and those whose body calls a
    function or allocates. Loops around runtime calls (the attention's
    per-head GEMMs) stay host loops; the nests inside them are mapped.

    The buffers are the runtime's: on the CUDA target `trx_alloc` hands out
    CUDA managed memory, so the same pointer is valid on the host (the
    runtime's driver, checkpoints) and in the kernels.

    Before:
    ```mlir
    scf.parallel (%i, %j) = (%c0, %c0) to (%c512, %c64) step (%c1, %c1) {
      %x = memref.load %a[%i, %j] : memref<512x64xf32>
      memref.store %x, %b[%i, %j] : memref<512x64xf32>
      scf.reduce
    }
    ```
    After (block-size=256: 32768 iterations, 128 blocks):
    ```mlir
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %c128, %gy = %c1, %gz = %c1)
               threads(%tx, %ty, %tz) in (%sx = %c256, %sy = %c1, %sz = %c1) {
      %id = <%bx * 256 + %tx>
      scf.if <%id < 32768> {
        %i = <%id / 64>  %j = <%id mod 64>
        %x = memref.load %a[%i, %j] : memref<512x64xf32>
        memref.store %x, %b[%i, %j] : memref<512x64xf32>
      }
      gpu.terminator
    }
    ```
  }];
  let options = [
    Option<"blockSize", "block-size", "int64_t", /*default=*/"256",
           "Threads per block (a multiple of 32, at most 1024)">,
    Option<"rows", "rows", "std::string", /*default=*/"\"block\"",
           "Row-wise kernels (a 1-D nest over rows holding loops over the "
           "row): block (one block per row, reductions through "
           "gpu.all_reduce; the default), warp (one warp per row, "
           "reductions through shuffles) or thread (one thread per row)">,
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::gpu::GPUDialect",
    "::mlir::NVVM::NVVMDialect", "::mlir::scf::SCFDialect"];
}

def TriaxInsertHostSyncs : Pass<"triax-insert-host-syncs", "::mlir::ModuleOp"> {
  let summary = "Synchronize with the device before host code touches memory";
  let description = [{
    After `triax-map-loops-to-gpu`, kernels and GEMMs run asynchronously on
    the runtime's compute stream, but some code stays on the host: nests
    with scalar reductions (the loss sum, the gradient norm), nests that
    call functions or allocate, and plain `memref.load`/`memref.store`
    (`memref.copy`, atomics: any op that reads or writes a memref) outside
    a `gpu.launch`. Such code must wait for the device first. This pass
    inserts `func.call @trx_cuda_host_sync()` (a plain C function of the
    CUDA runtime, declared here) before each of them, unless nothing that
    enqueues device work ran since the last sync on that path:

    - device work is a `gpu.launch`/`gpu.launch_func`, a call (a kernel
      function launches, a runtime call may run a GEMM; the runtime's view
      and position calls `trx_state_*` and `trx_group_position` are
      exempt), or a `memref.alloc` (the runtime zero-fills on the stream);
    - the sync goes before the outermost host op that accesses memory: a
      host `scf.for`/`scf.parallel`/`scf.if` whose regions access memory
      and enqueue nothing gets one sync in front, not one per iteration; a
      region that also enqueues work is handled inside, and its blocks
      start unsynchronized (a loop's next iteration follows its launches);
    - a function starts unsynchronized (its caller may have launched), and
      so does the code after a region that enqueued work.

    Consecutive host accesses with no device work in between get one sync.
    A buffer only host code touches (allocated in the function, used only
    by `memref.load`, `memref.store` and `memref.dealloc` outside launches:
    the loss scalar stored and read back at the end) needs no sync after
    the first one that follows its allocation.
    `gpu.launch` bodies are device code and are not looked at.

    ```mlir
    gpu.launch ... { ... }
    func.call @trx_cuda_host_sync() : () -> ()
    %s = scf.for %i = %c0 to %n step %c1 iter_args(%a = %z) -> f64 {
      %x = memref.load %buf[%i] : memref<?xf32>
      ...
    }
    ```
  }];
  let dependentDialects = ["::mlir::func::FuncDialect"];
}

def TriaxMergeGPUModules : Pass<"triax-merge-gpu-modules", "::mlir::ModuleOp"> {
  let summary = "Move the kernels of all gpu.modules into one gpu.module";
  let description = [{
    `gpu-kernel-outlining` puts every kernel in a `gpu.module` of its own. A
    model has about a thousand kernels (gpt2: 1103): one module each means
    a thousand device compilations, a thousand ptxas runs and a thousand
    module loads at start-up. This pass moves every `gpu.func` into one
    `gpu.module` (named by `module-name`) and points the `gpu.launch_func`
    ops at it. A module holding one kernel (what outlining makes) gives the
    kernel the module's name: outlining names a kernel after its host
    function, so a function with two launches yields two kernels of the
    same name in modules the symbol table named apart. Other clashes are
    an error. Every workgroup attribution (a kernel's shared memory) gets
    `llvm.align = 16`: the generated kernels store to it with 16-byte vectors
    and read it with `ldmatrix` (16-byte rows), and the NVVM lowering would
    otherwise align it to its element type only.

    Before:
    ```mlir
    gpu.module @k0_kernel { gpu.func @k0_kernel(...) kernel { ... } }
    gpu.module @k1_kernel { gpu.func @k1_kernel(...) kernel { ... } }
    gpu.launch_func @k0_kernel::@k0_kernel ...
    ```
    After:
    ```mlir
    gpu.module @triax_kernels {
      gpu.func @k0_kernel(...) kernel { ... }
      gpu.func @k1_kernel(...) kernel { ... }
    }
    gpu.launch_func @triax_kernels::@k0_kernel ...
    ```
  }];
  let options = [
    Option<"moduleName", "module-name", "std::string", /*default=*/"\"triax_kernels\"",
           "Name of the merged gpu.module">,
  ];
  let dependentDialects = ["::mlir::gpu::GPUDialect"];
}

#endif // TRIAX_CONVERSION_KERNELSTOGPU_PASSES_TD
