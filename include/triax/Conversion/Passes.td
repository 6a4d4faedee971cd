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

    `fuse-optimizer` (the CUDA pipeline sets it): a run of consecutive
    `triax.adamw` ops with the same learning rate, step and gradient scale
    (an optimizer step's updates) becomes one `scf.parallel` over their
    concatenated elements, each element dispatched to its parameter's
    update by a binary tree of `scf.if e < offset`: one GPU kernel launch
    per step instead of one per parameter. Each element is computed exactly
    as without the option. A run is cut where its launch would pass more
    than `kernel-param-bytes` of kernel parameters: each update passes four
    1-D buffers (memref descriptors of 40 bytes), and the step's learning
    rate, gradient scale and bias corrections are shared. PTX ISA 8.1 and
    later allow 32764 bytes, earlier versions 4352; `triax-lower-cuda`
    passes 4352 in both cases (27 updates per launch, a gpt2 step's 196 in
    eight), since NVPTX keeps every pointer parameter live from the
    kernel's entry: the 196-update launch took 127 registers on sm_90.
    The option also fuses the gradient
    norm's partial sums over all gradients (one row-wise nest, 40 bytes of
    parameters per gradient) and the bf16 copies of the parameters (below;
    80 bytes per copy) the same way.

    `fuse-bucket-copies` (the CUDA pipeline sets it; the CPU pipeline with
    `fuse-optimizer`): a ZeRO bucket's copies (`dist.reduce_scatter_bucket`'s
    chunks copied out or accumulated, `dist.all_gather_params`' and
    `dist.all_gather_bucket`'s chunks packed and results unpacked) become
    one parallel loop over the bucket's concatenated elements per launch of
    at most `kernel-param-bytes` (40 bytes per tensor's buffer and the
    bucket's shared one), not one loop per tensor. The reduce-scatter's
    packing stays one nest per tensor (its member-major stores). tiny on
    dp=2 for cuda: 141 launches in the ZeRO-1 step's code where one loop
    per tensor made 246.

    Parameter copies: every `triax.convert` of a `triax.get_param` (mixed
    precision's bf16 weights, read by the forward and again by the backward
    block of each layer) becomes one conversion per parameter and type at
    the start of its function, which every read shares: the weights change
    only in the optimizer step, so the values are the same, and the copies
    live for the whole call (2 bytes per parameter in bf16).

    `embedding-grad-threads` (the CUDA pipeline sets it): the embedding
    backward `dtable[ids[t], h] += dy[t, h]` cannot run its tokens in
    parallel (two tokens may share a row). On the CPU it is parallel over
    features with the tokens in order. With N > 0 the vocabulary is also
    cut into S = ceil(N / hidden) slices of W rows: one iteration per
    (slice, feature) scans the tokens in order and adds those whose row is
    in its slice, under `scf.if (row - s * W) < W`. Each element's sum is
    the same, in the same order (bit-identical results), and
    `triax-map-loops-to-gpu` proves the stores disjoint from that guard.

    `accumulate-in-gemm` (both pipelines set it): a weight gradient whose
    only user is its `triax.accumulate_grad` becomes one GEMM into the
    parameter's gradient buffer with beta = 1, instead of a GEMM into a new
    buffer plus an accumulation kernel (per weight: one launch, one
    allocation and three passes over the gradient fewer). cuBLASLt adds C
    once after the product, the sum the separate kernel made; OpenBLAS adds
    it into its partial sums, the same bits for a step's first micro-batch
    (C = 0) and a different rounding of the same sum for the later ones.
    Unless `column-sums=rows`, a bias gradient (a column sum) whose
    only user is its `triax.accumulate_grad` also adds its sum into the
    gradient buffer in its own kernel: the same single f32 addition, so
    the same bits; so do a LayerNorm's weight and bias gradients (both, or
    neither) and an RMSNorm's weight gradient. (By rows, the CPU's form,
    they keep their buffers.) An
    embedding gradient whose only user is its `triax.accumulate_grad`
    scatters its rows into the gradient buffer (no zeroed [V, d] table, no
    accumulation pass). And `accumulate_grad @p, (a + b)`, the sum's only
    use (a tied embedding: the LM head's dW plus the embedding's scatter),
    is accumulated term by term first, so that both terms go into the
    buffer where they are made: (g + a) + b where it was g + (a + b); gpt2's
    activation peak drops by two [V, d] buffers.

    `attention` (default `flash`): `triax.attention` is one parallel nest
    over (batch, head, query) with an online softmax over the visible keys
    (an f32 accumulator row per query, one exp per key), and
    `triax.attention_grad` two: one over query rows (log-sum-exp, the
    softmax backward's row sum D, dQ) and one over key rows (dK and dV,
    summed over a kv head's query heads in order). Nothing is T x T, each
    iteration writes only its own rows (no atomics; deterministic), and the
    GPU mapping runs one thread per row. `batched-gemm` is the earlier
    lowering: strided-batched GEMMs per batch index around a causal softmax
    over a materialized `[heads, S, S]` f32 scratch.
  }];
  let options = [
    Option<"fuseOptimizer", "fuse-optimizer", "bool", /*default=*/"false",
           "Lower consecutive triax.adamw ops of one step as one parallel "
           "loop over all their elements (one kernel on the GPU)">,
    Option<"fuseBucketCopies", "fuse-bucket-copies", "bool",
           /*default=*/"false",
           "Lower a ZeRO bucket's copies (its chunks packed, unpacked, "
           "accumulated) as one parallel loop over its tensors' elements "
           "per launch (at most kernel-param-bytes of kernel parameters), "
           "not one loop per tensor (the GPU: one launch where there were "
           "n)">,
    Option<"geluEpilogue", "gelu-epilogue", "bool", /*default=*/"true",
           "Fold a triax.gelu into the biased linear before it, and a "
           "triax.gelu_grad into the linear producing its upstream gradient "
           "(the runtime's GELU GEMM epilogues)">,
    Option<"kernelParamBytes", "kernel-param-bytes", "int64_t",
           /*default=*/"4352",
           "fuse-optimizer, fuse-bucket-copies: the most bytes of kernel "
           "parameters one fused launch may pass (4352 before PTX ISA 8.1, 32764 from 8.1; 0: "
           "no limit, as on the CPU)">,
    Option<"embeddingGradThreads", "embedding-grad-threads", "int64_t",
           /*default=*/"0",
           "Parallel iterations of the embedding backward: 0 runs one per "
           "feature (the CPU); N > 0 also cuts the vocabulary into "
           "ceil(N / hidden) slices, buckets the tokens by slice (chunks of "
           "256 tokens, in order), then runs one iteration per (slice, "
           "feature), each adding its slice's tokens in token order (the "
           "GPU: deterministic, proved race-free by the GPU mapping)">,
    Option<"attention", "attention", "std::string", /*default=*/"\"flash\"",
           "How triax.attention and its gradient are lowered: flash (fused "
           "kernels with an online softmax, no T x T buffer), flash-mma "
           "(the same on NVIDIA tensor cores, warps of mma.sync in "
           "gpu.launch ops, for bf16 operands with the head dimension and "
           "the sequence multiples of 16; flash for other shapes; the CUDA "
           "pipeline's choice for bf16), batched-gemm (strided-batched "
           "GEMMs around a materialized causal softmax) or cudnn (a call of "
           "the runtime's fused attention, cuDNN on CUDA, for bf16 "
           "operands without context parallelism, and the flash-mma "
           "kernels behind it for when it declines at run time; flash-mma "
           "elsewhere)">,
    Option<"accumulateInGemm", "accumulate-in-gemm", "bool",
           /*default=*/"false",
           "A weight gradient whose only user is its triax.accumulate_grad "
           "is one GEMM adding into the gradient buffer (beta = 1) instead "
           "of a GEMM into a new buffer and an accumulation kernel; an "
           "embedding gradient scatters into the buffer; an accumulated sum "
           "is accumulated term by term (both pipelines set it)">,
    Option<"columnSums", "column-sums", "std::string",
           /*default=*/"\"columns\"",
           "How the column sums of triax.bias_grad and of the LayerNorm and "
           "RMSNorm weight (and bias) gradients walk their [rows, cols] "
           "matrix: columns (one parallel iteration per column, walking "
           "down it), rows (one per block of up to 64 columns, walking down "
           "the rows and adding a row's block with one loop that LLVM "
           "vectorizes: the same additions in the same order, bit-identical; "
           "the CPU pipeline) or chunks (one per (chunk of rows, column) "
           "into a [chunks, cols] scratch, about 65536 of them, then one per "
           "column adding its chunks in order: coalesced and enough threads "
           "on a GPU, another summation order; the CUDA pipeline)">,
    Option<"scalarsBeforeNests", "scalars-before-nests", "bool",
           /*default=*/"false",
           "A scalar a loop nest of the step computed (the clipping scale) "
           "is read from its one-element buffer in front of each nest that "
           "uses it, instead of at the start of the nest's body: the loop "
           "then sees a value, not a load that may alias its stores, and "
           "LLVM vectorizes it (the CPU pipeline sets it; the GPU reads it "
           "in the kernel, device memory)">,
    Option<"vectorDots", "vector-dots", "bool", /*default=*/"false",
           "The flash attention kernels' dot products (head dimension a "
           "multiple of 8) as vector<8xf32> loads, multiplies and adds, "
           "then the lanes halved in the scalar form's order: one vector "
           "register where LLVM's SLP vectorizer made pairs and spills. "
           "Bit-identical (the CPU pipeline sets it; the GPU maps the "
           "kernels' loops to threads and keeps the scalar form)">,
    Option<"keyBlocks", "key-blocks", "bool", /*default=*/"false",
           "With vector-dots: the flash attention kernels' loops over keys "
           "(over queries, in the dK/dV kernel) take 8 at a time: the 8 "
           "scores one vector<8xf32>, one vector exp for their "
           "probabilities, the online softmax rescaled once per block, the "
           "row accumulators vector values carried by the loop (registers, "
           "not an f32 buffer row loaded and stored per key). Sums over keys "
           "in the same order; the last bits differ from the per-key form "
           "(the CPU pipeline sets it; AttentionBlocks.cpp)">,
    Option<"rowLanes", "row-lanes", "bool", /*default=*/"false",
           "The cross-entropy's row statistics (the online max and sum of "
           "exp) in 8 vector lanes, each its own online state over every "
           "eighth logit, combined after the row (a fixed tree) and the last "
           "V mod 8 logits taken one by one: one vector load and one vector "
           "exp per 8 logits where the scalar form chains a libm exp per "
           "logit. The last bits of the loss change (the CPU pipeline sets "
           "it; LossKernels.cpp)">,
    Option<"fuseProjectionsOption", "fuse-projections", "bool",
           /*default=*/"false",
           "The linears that read one input and whose results only "
           "attention, attention_grad, linear_weight_grad and bias_grad read "
           "(the query, key and value projections) become one GEMM over "
           "their weights side by side, read back as column views; the sum "
           "of their input gradients one GEMM over dq, dk, dv side by side, "
           "which the attention gradient writes into one buffer "
           "(FuseProjections.cpp; the CUDA pipeline sets it)">,
    Option<"lossGradInPlace", "loss-grad-in-place", "bool",
           /*default=*/"false",
           "The cross-entropy's gradient written over its logits' buffer "
           "(each element read, then overwritten, by the same iteration) "
           "when that buffer is the kernels' own and nothing after the "
           "gradient reads the logits (mayWriteOver, the elementwise "
           "rule): no second [tokens, V] buffer (gpt2: "
           "51 MB at 256 tokens). The same arithmetic, bit for bit (the CPU "
           "and CUDA pipelines set it; LossKernels.cpp)">,
    Option<"elementwiseInPlace", "elementwise-in-place", "bool",
           /*default=*/"false",
           "An elementwise op's result (triax.add, mul, silu_grad, "
           "gelu_grad outside a GEMM's epilogue; each result of a "
           "triax.fused_elementwise) written over an operand of its type "
           "that nothing reads afterwards and that is the kernels' own "
           "buffer (overwritableOperand: not a block argument, a view, the "
           "runtime's state or a dist op's result; no dist op reads it, a "
           "collective may still be reading): no new buffer beside the "
           "dying one (a layer backward's residual and q/k/v input gradient "
           "sums). Each element is loaded before it is stored, at the same "
           "index: the same arithmetic, bit for bit (the CPU and CUDA "
           "pipelines set it; ElementwiseKernels.cpp)">,
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::func::FuncDialect",
    "::mlir::math::MathDialect", "::mlir::memref::MemRefDialect",
    "::mlir::scf::SCFDialect", "::mlir::tensor::TensorDialect",
    "::mlir::gpu::GPUDialect", "::mlir::NVVM::NVVMDialect",
    "::mlir::LLVM::LLVMDialect", "::mlir::vector::VectorDialect"];
}

def TriaxOutlineKernels : Pass<"triax-outline-kernels", "::mlir::ModuleOp"> {
  let summary = "Move each kernel loop nest of the entry functions into a function of its own";
  let description = [{
    After `convert-triax-to-kernels`, every top-level loop nest (`scf.parallel`
    or `scf.for`) of a public function becomes a private function
    `@<entry>_kernel<N>` taking the buffers and scalars it uses (constants are
    re-created inside), and the loop is replaced by a call.

    Why: the entry functions of a 96-layer model hold thousands of loop nests.
    As one function, the later lowering (SCF to control flow) and LLVM's
    optimizer grow super-linearly with it: gpt3-175b's front half used over
    24 GB before it was killed; with kernels outlined it takes 28 s and 416
    MB on this machine. Each kernel is also the unit GPU outlining maps to a
    launch.

    Before:
    ```mlir
    func.func @triax_forward(...) -> f32 {
      scf.parallel (%i) = (%c0) to (%c64) step (%c1) { ... %buf ... }
      ...
    }
    ```
    After:
    ```mlir
    func.func @triax_forward(...) -> f32 {
      call @triax_forward_kernel0(%buf) : (memref<64xf32>) -> ()
      ...
    }
    func.func private @triax_forward_kernel0(%buf: memref<64xf32>) {
      %c0 = arith.constant 0 : index
      ...
      scf.parallel (%i) = (%c0) to (%c64) step (%c1) { ... }
      return
    }
    ```
  }];
  let dependentDialects = ["::mlir::func::FuncDialect", "::mlir::scf::SCFDialect"];
}

def TriaxExpandMath : Pass<"triax-expand-math", "::mlir::ModuleOp"> {
  let summary = "Expand math.tanh into Triax's f32 formula of plain arithmetic, which LLVM vectorizes";
  let description = [{
    The CPU pipeline runs this before the LLVM conversions. Without it
    `math.tanh` becomes a call to libm's `tanhf` (and its `expm1f`). A loop
    with a call in it is not vectorized, and on the CPU that made the GELU
    and its gradient about 17% of a training step.

    This pass replaces each f32 `math.tanh` with Triax's own formula. It
    uses only operations LLVM maps to SIMD instructions: `absf`, compare
    and select, `mulf`/`addf`/`subf`/`divf`, `fptosi`/`sitofp`, `shli`,
    `bitcast` and `copysign`. With `a = min(|x|, 9)` and `y = -2a`:

    ```
    n  = fptosi(y log2(e) - 1/2)            nearest integer to y / ln 2
    r  = (y - n ln2_hi) - n ln2_lo          |r| <= ln(2) / 2 (Cody-Waite)
    p  = r + r^2 (1/2! + r (1/3! + ... + r / 7!))
                                            expm1(r), Taylor to degree 7
    s  = bitcast((n + 127) << 23)           2^n
    e  = s p + (s - 1)                      expm1(y) = exp(-2a) - 1
    tanh(x) = copysign(-e / (2 + e), x)
    ```

    The error is within 3 f32 ulps of tanh over the whole line: the
    runtime's copy is within 2.49 ulps of the double `tanh`
    (runtime/test/kernel_test.cpp), and the generated formula, run, within
    2 ulps of the double tanh rounded to f32
    (test/Conversion/TriaxToKernels/expand-math-accuracy.mlir). The formula
    has no cancellation near 0, where `e` is expm1 itself, so
    `tanh(x) ~ x` keeps its relative accuracy. NaN stays NaN (the clamp
    is a select on `a > 9`). Past |x| = 9, tanh rounds to +-1 in f32.

    The runtime's CPU GELU epilogue (`runtime/lib/cpu/kernel_abi.cpp`,
    `trxTanh`) evaluates the same operations in the same order, with
    `-ffp-contract=off`. So a GELU in a GEMM's epilogue is bit for bit the
    GELU of a generated kernel (`test/e2e/gelu-epilogue.test`). Other
    element types and the GPU's device code keep `math.tanh`; the GPU uses
    libdevice's `__nv_tanhf`.

    Before:
    ```mlir
    %t = math.tanh %x : f32
    ```
    After: the arithmetic above, with no call left.

    Each `math.exp` of a vector of f32 (the CPU flash attention kernels'
    8 probabilities of a key block, `convert-triax-to-kernels{key-blocks}`)
    becomes arithmetic on its lanes too; LLVM's lowering of a vector exp is
    one libm call per lane. With `c = x` clamped to [-104, 89]:

    ```
    n  = (c log2(e) + 1.5 2^23) - 1.5 2^23  nearest integer (even), exact
    r  = (c - n ln2_hi) - n ln2_lo          |r| <= ln(2) / 2
    p  = 1 + r q(r)                          exp(r), Taylor to degree 7:
         q(r) = (1 + r/2!) + r^2 (1/3! + r/4!) + r^4 (1/5! + r/6! + r^2/7!)
                                            (Estrin's scheme, fused
                                            multiply-adds: three levels of
                                            independent operations)
    h  = n >> 1
    exp(x) = (p 2^h) 2^(n - h)              2^m from its exponent bits
    ```

    Both powers of two are normal numbers for every n of the clamped range,
    so the first product is exact and the second rounds once: results
    that are subnormal, 0 (x below about -103.97, and -inf) or +inf (x
    above about 88.72, and +inf) come out right. NaN stays NaN. Within 1
    f32 ulp of the double exp rounded to f32 over [-87, 88]
    (test/Conversion/TriaxToKernels/expand-math-accuracy.mlir). A scalar
    `math.exp` stays libm's `expf`: every other kernel keeps its bits.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect", "::mlir::math::MathDialect"];
}

def TriaxLaneReductions : Pass<"triax-lane-reductions", "::mlir::ModuleOp"> {
  let summary = "Split the scalar sums and maxima of the CPU kernels' sequential loops into interleaved lanes";
  let description = [{
    A sequential `scf.for` whose loop-carried values are scalar sums or
    maxima (a row's LayerNorm mean and variance, a gradient's square sum
    for the global norm, a column of a bias gradient) runs one dependent
    `addf` per element: on the CPU, one element per add latency (4
    cycles), and LLVM may not reorder floating-point adds to hide it. The
    CPU pipeline runs this pass on the outlined kernels (functions with
    the `triax_kernel` attribute) before the LLVM conversions.

    A loop qualifies when its bounds and step are constants, its trip count
    is a multiple of `lanes` and at least twice it, its body has at most 64
    operations, and each of its (at most 4) iteration arguments is an f32
    or f64 scalar used once, by an `arith.addf` or `arith.maximumf` whose
    result is yielded in its place and used by nothing else. Such a loop is
    unrolled by `lanes`: copy u of the body runs iteration j * lanes + u and
    folds into accumulator u, which starts from the identity (-0 for a sum,
    -inf for a maximum; accumulator 0 from the loop's initial value). After
    the loop the accumulators are combined in a fixed tree, lanes l and
    l + w/2 while w halves: for 8 lanes,
    `((a0 + a4) + (a2 + a6)) + ((a1 + a5) + (a3 + a7))`.

    The body's side effects run in the original order (the copies of one
    iteration run one after the other), so only the association of the
    sums changes: a maximum is unchanged bit for bit; a sum differs from
    the sequential one in the last bits. The order is fixed by the pass and
    `lanes`, not by the machine or LLVM (the CUDA target sums rows in its
    own fixed tree of threads).

    Before:
    ```mlir
    %s = scf.for %i = %c0 to %c256 step %c1 iter_args(%acc = %zero) -> (f32) {
      %x = memref.load %row[%i] : memref<256xf32>
      %n = arith.addf %acc, %x : f32
      scf.yield %n : f32
    }
    ```
    After (`lanes=2`, for brevity):
    ```mlir
    %neg0 = arith.constant -0.000000e+00 : f32
    %s:2 = scf.for %j = %c0 to %c256 step %c2 iter_args(%a0 = %zero, %a1 = %neg0) -> (f32, f32) {
      %x0 = memref.load %row[%j] : memref<256xf32>
      %n0 = arith.addf %a0, %x0 : f32
      %j1 = arith.addi %j, %c1 : index
      %x1 = memref.load %row[%j1] : memref<256xf32>
      %n1 = arith.addf %a1, %x1 : f32
      scf.yield %n0, %n1 : f32, f32
    }
    %sum = arith.addf %s#0, %s#1 : f32
    ```
  }];
  let options = [
    Option<"lanes", "lanes", "int64_t", /*default=*/"8",
           "Accumulators per reduction (a power of two, at least 2)">,
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect", "::mlir::scf::SCFDialect"];
}

def TriaxDedupeKernels : Pass<"triax-dedupe-kernels", "::mlir::ModuleOp"> {
  let summary = "Keep one function per distinct kernel and call it wherever a copy was called";
  let description = [{
    `triax-outline-kernels` gives every loop nest its own function. Every
    layer of a model has the same nests with the same shapes, so most of
    those functions are copies: gpt2's 12 layers repeat each layer kernel
    12 times. This pass keeps the first function of each group of identical
    kernels (`triax_kernel` functions whose printed bodies and types are
    the same, symbol name aside), points every `func.call` of the others at
    it, and erases the others.

    Kernels take their buffers as arguments, so two functions that print
    the same compute the same thing wherever they are called. The
    canonicalizer and CSE run first so that copies print identically. What
    follows (the LLVM conversion, LLVM's -O3 and code generation) then
    works in proportion to the number of distinct kernels, which does not
    grow with the depth of the model.

    Before:
    ```mlir
    call @triax_forward_kernel3(%a) : (memref<64xf32>) -> ()
    call @triax_forward_kernel9(%b) : (memref<64xf32>) -> ()
    func.func private @triax_forward_kernel3(%x: memref<64xf32>) attributes {triax_kernel} { <body> }
    func.func private @triax_forward_kernel9(%x: memref<64xf32>) attributes {triax_kernel} { <body> }
    ```
    After:
    ```mlir
    call @triax_forward_kernel3(%a) : (memref<64xf32>) -> ()
    call @triax_forward_kernel3(%b) : (memref<64xf32>) -> ()
    func.func private @triax_forward_kernel3(%x: memref<64xf32>) attributes {triax_kernel} { <body> }
    ```
  }];
}

#endif // TRIAX_CONVERSION_PASSES_TD
