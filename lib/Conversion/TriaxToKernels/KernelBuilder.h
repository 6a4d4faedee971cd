//===- KernelBuilder.h - Building loop kernels on buffers --------*- C++
//-*-===//
//
// A thin layer over OpBuilder for the kernels of TriaxToKernels: buffers,
// parallel and sequential loops, scalar arithmetic and the runtime's GEMM.
// Every kernel is written with these so that they read like the math.
//
//===----------------------------------------------------------------------===//

#ifndef TRIAX_LIB_CONVERSION_TRIAXTOKERNELS_KERNELBUILDER_H
#define TRIAX_LIB_CONVERSION_TRIAXTOKERNELS_KERNELBUILDER_H

#include "triax/Dialect/Dist/IR/Dist.h"
#include "triax/Dialect/Triax/IR/Triax.h"
#include "triax_abi.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/Transforms/DialectConversion.h"

#include "llvm/ADT/StringSet.h"
#include <limits>

namespace mlir::triax::kernels {

/// Maps parameter symbols to their index in the model (the runtime's key),
/// and names those whose state ZeRO shards (`dist.zero`): the kernels of
/// those work on chunks. `localTypes`: each parameter's type on one rank
/// (its shape divided by the mesh axes `dist.sharding` splits it over).
struct ParamIndex : llvm::StringMap<int64_t> {
  llvm::StringSet<> zeroSharded;
  llvm::StringMap<RankedTensorType> localTypes;
};

/// How KernelBuilder::columnSums walks a [rows, cols] matrix
/// (convert-triax-to-kernels{column-sums}).
enum class ColumnSumForm {
  /// One parallel iteration per column, walking down it in row order.
  Columns,
  /// One parallel iteration per block of up to 64 columns (the largest
  /// divisor of cols), walking down the rows and adding each row's block
  /// with an inner loop along the row (contiguous, which LLVM vectorizes):
  /// the same additions in the same order as Columns, the same bits.
  Rows,
  /// Two nests: one parallel iteration per (chunk of rows, column), each
  /// summing its chunk in row order into a [chunks, cols] scratch buffer
  /// (consecutive iterations, consecutive columns: coalesced on a GPU, and
  /// enough of them to fill one), then one per column adding its chunks'
  /// sums in order. Another order of the same additions.
  Chunks,
};

/// The form named `name` (columns, rows, chunks), or none.
std::optional<ColumnSumForm> parseColumnSumForm(llvm::StringRef name);

class KernelBuilder {
public:
  KernelBuilder(OpBuilder &builder, Location loc) : b(builder), loc(loc) {}

  OpBuilder &builder() { return b; }
  Location getLoc() const { return loc; }

  //===--- constants ------------------------------------------------------===//
  Value index(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
  Value f32(double v) {
    return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(v));
  }
  Value f64(double v) {
    return arith::ConstantOp::create(b, loc, b.getF64FloatAttr(v));
  }
  Value i32(int64_t v) {
    return arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(v));
  }
  Value i64(int64_t v) {
    return arith::ConstantOp::create(b, loc, b.getI64IntegerAttr(v));
  }

  //===--- buffers --------------------------------------------------------===//
  /// A new buffer of the given tensor's shape and element type.
  Value alloc(ShapedType type) {
    return memref::AllocOp::create(
        b, loc, MemRefType::get(type.getShape(), type.getElementType()));
  }
  /// Whether `buffer` is one the kernels allocated (not a function's
  /// argument, a view or the runtime's state), with an identity layout: a
  /// kernel may write a result over it where nothing reads it afterwards.
  static bool isOwnBuffer(Value buffer) {
    return buffer.getDefiningOp<memref::AllocOp>() &&
           cast<MemRefType>(buffer.getType()).getLayout().isIdentity();
  }
  /// A new buffer filled with `value`.
  Value allocFilled(ShapedType type, double value);
  /// A view of a contiguous buffer as [rows, last dim] (rank >= 1).
  Value rows(Value buffer);
  /// A view of a contiguous buffer as one dimension.
  Value flat(Value buffer);
  /// Number of rows and columns of rows(buffer).
  static std::pair<int64_t, int64_t> rowsCols(Value buffer);
  /// The [rows, cols] block at [row, col] of a 2-D buffer (a strided view).
  Value block(Value buffer2d, Value row, Value col, int64_t rows, int64_t cols);

  /// An element of `buffer` in its compute type: a bf16 element is
  /// extended to f32, so kernels compute in f32 whatever the storage type.
  Value load(Value buffer, ValueRange indices) {
    Value v = memref::LoadOp::create(b, loc, buffer, indices);
    if (v.getType().isBF16())
      return arith::ExtFOp::create(b, loc, b.getF32Type(), v);
    return v;
  }
  /// Copies element `from`[i] to `to`[j] as it is (same element type: no
  /// widening and rounding of a bf16 element on the way).
  void move(Value from, ValueRange i, Value to, ValueRange j);
  /// Stores `value` into `buffer`, converted to its element type: an f32
  /// value into a bf16 buffer is rounded to nearest even (arith.truncf), a
  /// bf16 value into an f32 buffer extended.
  void store(Value value, Value buffer, ValueRange indices) {
    Type elt = cast<MemRefType>(buffer.getType()).getElementType();
    Type from = value.getType();
    if (from != elt && isa<FloatType>(from) && isa<FloatType>(elt))
      value = from.getIntOrFloatBitWidth() > elt.getIntOrFloatBitWidth()
                  ? arith::TruncFOp::create(b, loc, elt, value).getResult()
                  : arith::ExtFOp::create(b, loc, elt, value).getResult();
    memref::StoreOp::create(b, loc, value, buffer, indices);
  }

  //===--- loops ----------------------------------------------------------===//
  using BodyFn = function_ref<void(KernelBuilder &, ValueRange)>;
  /// An `scf.parallel` nest over [0, ub) per dimension: iterations are
  /// independent (each writes its own outputs).
  void parallel(ArrayRef<int64_t> upperBounds, BodyFn body);
  /// One `scf.parallel` over the concatenation of ranges of `sizes`
  /// iterations: iteration e belongs to range m when offset_m <= e <
  /// offset_m + sizes[m] (offset_m the sum of the sizes before m), found by
  /// a binary tree of `scf.if e < offset` (depth log2 of sizes.size()), and
  /// runs body(k, m, e - offset_m, e). Ranges that would each be a loop of
  /// their own become one loop (one GPU launch).
  using ConcatBodyFn =
      function_ref<void(KernelBuilder &, size_t, Value local, Value global)>;
  void parallelConcat(ArrayRef<int64_t> sizes, ConcatBodyFn body);
  /// Runs body(k, m, e - offset_m) for the range m of the concatenation of
  /// ranges of `sizes` that holds `e` (the binary tree of `scf.if e <
  /// offset` parallelConcat dispatches by).
  using RangeBodyFn = function_ref<void(KernelBuilder &, size_t, Value local)>;
  void dispatchRanges(Value e, ArrayRef<int64_t> sizes, RangeBodyFn body);
  /// A sequential `scf.for` over [0, ub) (nests for several bounds).
  void loop(ArrayRef<int64_t> upperBounds, BodyFn body);
  /// Column sums outs[i][c] = the sum over the rows r of terms(r, c)[i]
  /// (f32, into the 1-D buffers `outs`; with `accumulate`, added to what
  /// they hold), in the form `form` (ColumnSumForm).
  using TermsFn =
      function_ref<SmallVector<Value>(KernelBuilder &, Value r, Value c)>;
  void columnSums(int64_t rows, int64_t cols, ColumnSumForm form,
                  ArrayRef<Value> outs, TermsFn terms, bool accumulate = false);
  /// A sequential loop from `lower` to `upper` carrying `init`; the body
  /// returns the next values. Returns the final values.
  using ReduceFn =
      function_ref<SmallVector<Value>(KernelBuilder &, Value, ValueRange)>;
  SmallVector<Value> reduce(Value lower, Value upper, ValueRange init,
                            ReduceFn body);
  SmallVector<Value> reduce(int64_t upper, ValueRange init, ReduceFn body) {
    return reduce(index(0), index(upper), init, body);
  }

  //===--- scalar arithmetic (f32 unless noted) ---------------------------===//
  Value add(Value x, Value y) { return arith::AddFOp::create(b, loc, x, y); }
  Value sub(Value x, Value y) { return arith::SubFOp::create(b, loc, x, y); }
  Value mul(Value x, Value y) { return arith::MulFOp::create(b, loc, x, y); }
  Value div(Value x, Value y) { return arith::DivFOp::create(b, loc, x, y); }
  Value neg(Value x) { return arith::NegFOp::create(b, loc, x); }
  Value max(Value x, Value y) {
    return arith::MaximumFOp::create(b, loc, x, y);
  }
  Value exp(Value x) { return math::ExpOp::create(b, loc, x); }
  Value log(Value x) { return math::LogOp::create(b, loc, x); }
  Value tanh(Value x) { return math::TanhOp::create(b, loc, x); }
  Value cos(Value x) { return math::CosOp::create(b, loc, x); }
  Value sin(Value x) { return math::SinOp::create(b, loc, x); }
  Value sqrt(Value x) { return math::SqrtOp::create(b, loc, x); }
  Value rsqrt(Value x) { return math::RsqrtOp::create(b, loc, x); }
  Value pow(Value x, Value y) { return math::PowFOp::create(b, loc, x, y); }
  Value sigmoid(Value x) { return div(f32(1.0), add(f32(1.0), exp(neg(x)))); }
  Value select(Value cond, Value x, Value y) {
    return arith::SelectOp::create(b, loc, cond, x, y);
  }
  Value lessThan(Value x, Value y) {
    return arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLT, x, y);
  }
  /// |x| < inf: false for NaN and for either infinity.
  Value isFinite(Value x) {
    return lessThan(math::AbsFOp::create(b, loc, x),
                    f32(std::numeric_limits<float>::infinity()));
  }
  Value toF64(Value x) {
    return arith::ExtFOp::create(b, loc, b.getF64Type(), x);
  }
  Value toF32(Value x) {
    return arith::TruncFOp::create(b, loc, b.getF32Type(), x);
  }
  /// Index arithmetic.
  Value addi(Value x, Value y) { return arith::AddIOp::create(b, loc, x, y); }
  Value subi(Value x, Value y) { return arith::SubIOp::create(b, loc, x, y); }
  Value muli(Value x, Value y) { return arith::MulIOp::create(b, loc, x, y); }
  Value divui(Value x, Value y) { return arith::DivUIOp::create(b, loc, x, y); }
  Value cmpi(arith::CmpIPredicate p, Value x, Value y) {
    return arith::CmpIOp::create(b, loc, p, x, y);
  }
  /// An integer token id as an index.
  Value toIndex(Value integer) {
    return arith::IndexCastOp::create(b, loc, b.getIndexType(), integer);
  }
  Value indexToF32(Value idx);

  //===--- runtime calls --------------------------------------------------===//
  /// C = alpha * op(A) op(B) + beta * C through the runtime's GEMM, on 2-D
  /// buffers. The entry follows the element types of (A, B, C): f32 f32 f32
  /// -> trx_sgemm, bf16 bf16 bf16 -> trx_gemm_bf16, bf16 bf16 f32 ->
  /// trx_gemm_bf16_f32 (fp32 accumulation in all three). Any other
  /// combination, or operands that are not 2-D memrefs, is an error at the
  /// builder's location and a failure.
  LogicalResult gemm(Value a, Value bm, Value c, bool transA, bool transB,
                     double alpha = 1.0, double beta = 0.0);
  /// The strided-batched form on 3-D buffers [batch, rows, cols]:
  /// C[i] = alpha op(A[i]) op(B[i]) + beta C[i] for every i (a batch stride
  /// of 0 on A or B broadcasts it), with the same dispatch
  /// (trx_sgemm_batched, trx_gemm_bf16_batched, trx_gemm_bf16_f32_batched).
  LogicalResult gemmBatched(Value a, Value bm, Value c, bool transA,
                            bool transB, double alpha = 1.0, double beta = 0.0);
  /// The runtime GEMM entry for operands of these element types (`batched`:
  /// the 3-D form), or failure when the runtime has none.
  static FailureOr<StringRef> gemmEntry(Type a, Type b, Type c, bool batched);
  /// C = alpha * op(A) op(B) + bias (bias[n] on every row of C, beta 0)
  /// through the runtime's GEMM with a bias epilogue, on 2-D A, B, C and a
  /// 1-D contiguous (identity layout) bias: f32 f32 f32 f32 ->
  /// trx_sgemm_bias, bf16 bf16 bf16 bf16 -> trx_gemm_bf16_bias. Anything
  /// else is an error at the builder's location and a failure.
  LogicalResult gemmBias(Value a, Value bm, Value c, Value bias, bool transA,
                         bool transB, double alpha = 1.0);

  /// What a GEMM's epilogue does after the product P = alpha op(A) op(B).
  enum class Epilogue {
    Bias,     // C = P + bias
    BiasGelu, // aux = P + bias, C = gelu(aux)
    DGelu,    // C = gelu_grad(aux, P) = P * gelu'(aux)
  };
  /// The GEMM with an epilogue (RuntimeABI.h): 2-D A, B, C; `bias` 1-D
  /// contiguous (Bias, BiasGelu; else null); `aux` 2-D of C's shape
  /// (BiasGelu, DGelu; else null). All f32 or all bf16. Anything else is
  /// an error at the builder's location and a failure.
  LogicalResult gemmEpilogue(Epilogue kind, Value a, Value bm, Value c,
                             Value bias, Value aux, bool transA, bool transB,
                             double alpha = 1.0);
  /// The runtime entry of `kind` when A, B, C (and bias, aux) all have
  /// element type `t`, or failure when the runtime has none.
  static FailureOr<StringRef> gemmEpilogueEntry(Epilogue kind, Type t);
  /// A runtime-owned state buffer (parameter, AdamW moment) as `type`.
  Value state(trx_state_kind kind, int64_t param, MemRefType type);
  /// This rank's ZeRO chunk of a state buffer (1-D `type`).
  Value stateChunk(trx_state_kind kind, int64_t param, MemRefType type);
  /// A contiguous f32 buffer as memref<?xf32>, the runtime's collectives'
  /// operand type.
  Value dynamicFlat(Value buffer);
  /// A memref as the runtime's strided operand type of its rank and element
  /// (TRX_STRIDED: every size, stride and the offset dynamic), the GEMMs'
  /// and the fused attention's.
  Value stridedOperand(Value buffer);

private:
  func::FuncOp declareRuntime(StringRef name, FunctionType type);
  LogicalResult callGemm(Value a, Value bm, Value c, bool transA, bool transB,
                         double alpha, double beta, int64_t rank);

  OpBuilder &b;
  Location loc;
};

/// A pattern for an op that names a parameter: it keeps the model's
/// parameter index, the key of the runtime's state buffers.
template <typename OpT> struct ParamPattern : OpConversionPattern<OpT> {
  ParamPattern(TypeConverter &converter, MLIRContext *ctx,
               const ParamIndex &params, PatternBenefit benefit = 1)
      : OpConversionPattern<OpT>(converter, ctx, benefit), params(params) {}

  /// The index of parameter `name`; an op error when the model has none.
  FailureOr<int64_t> paramIndex(Operation *op, StringRef name) const {
    auto it = params.find(name);
    if (it == params.end())
      return op->emitOpError("unknown parameter '") << name << "'";
    return it->second;
  }

  const ParamIndex &params;
};

/// Collectives inside kernels (CollectiveKernels.cpp), for the ops that work
/// on a vocabulary split over a group of mesh axes.
/// The axis mask (bit i = axis i of the module's mesh) of group `axes` of
/// mesh `mesh`; an op error when the mesh or an axis is unknown.
FailureOr<int64_t> axisMask(Operation *op, FlatSymbolRefAttr mesh,
                            ArrayAttr axes);
/// The runtime's reduction (triax_abi.h) for the dist dialect's `kind`.
trx_reduce_op abiReduction(dist::ReductionKind kind);
/// The runtime's entry `f32` or `bf16` of a collective or point-to-point
/// op on tensors of `element` (a bf16 tensor moves 2 bytes per element), or
/// an error on `op` for another element type.
FailureOr<StringRef> collectiveEntry(Operation *op, Type element, StringRef f32,
                                     StringRef bf16);
/// In-place all_reduce of the contiguous f32 buffer `buffer` over the group
/// `mask`.
void allReduceInPlace(KernelBuilder &k, Value buffer, trx_reduce_op kind,
                      int64_t mask);
/// This rank's position in group `mask`, as an index.
Value groupPosition(KernelBuilder &k, int64_t mask);
/// The position in the whole sequence of element `j` of member `member`'s
/// shard under context parallelism's load-balanced split
/// (dist.shard_sequence): `members` members, 2 * members chunks of `chunk`
/// elements, member c holding chunks c and 2 * members - 1 - c.
Value loadBalancedPosition(KernelBuilder &k, Value j, Value member,
                           int64_t members, int64_t chunk);
/// The first global vocabulary entry of this rank's block of `localVocab`
/// entries of a vocab-parallel op (`vocab_parallel over @mesh [axes]`), or
/// null when `mesh` is null (the op is not vocab-parallel).
FailureOr<Value> vocabOffset(KernelBuilder &k, Operation *op,
                             FlatSymbolRefAttr mesh, ArrayAttr axes,
                             int64_t localVocab);
/// The local entry of global vocabulary index `id` (clamped to 0 when the
/// rank does not hold it) and an i1 saying whether it does; (id, null) when
/// `offset` is null.
std::pair<Value, Value> localRow(KernelBuilder &k, Value id, Value offset,
                                 int64_t localVocab);

/// The pattern sets, one per family of ops.
void populateStructuralPatterns(TypeConverter &converter,
                                RewritePatternSet &patterns,
                                const ParamIndex &params);
/// geluEpilogue: a GELU after a biased linear, and a GELU gradient after a
/// linear, go into the GEMM's epilogue.
/// accumulateInGemm: a weight gradient whose only user is its
/// accumulate_grad is a GEMM into the gradient buffer with beta 1 (`params`
/// names the buffers).
/// columnSums: the form of the bias gradients' column sums; by rows (the
/// CPU's), a bias gradient keeps its own buffer (no accumulation in its
/// kernel).
void populateLinearPatterns(TypeConverter &converter,
                            RewritePatternSet &patterns,
                            bool geluEpilogue = true,
                            const ParamIndex *params = nullptr,
                            bool accumulateInGemm = false,
                            ColumnSumForm columnSums = ColumnSumForm::Columns);
/// Marks the conversions of parameter reads that convert-triax-to-kernels
/// hoisted to the start of a function (one per parameter and type).
inline constexpr llvm::StringLiteral kParamCopyAttr = "triax.param_copy";
/// elementwise-in-place and loss-grad-in-place: on an elementwise op, a
/// fused group or a loss gradient, for each result the operand it is
/// written over, or -1 (DenseI32ArrayAttr; marked by
/// convert-triax-to-kernels before it inlines the blocks).
inline constexpr llvm::StringLiteral kOverwritesAttr = "triax.overwrites";
/// fuseParamCopies: a run of consecutive conversions of parameter reads
/// (the bf16 weight copies) is one loop, cut where the launch would pass
/// more than kernelParamBytes of kernel parameters.
void populateElementwisePatterns(TypeConverter &converter,
                                 RewritePatternSet &patterns,
                                 bool fuseParamCopies = false,
                                 int64_t kernelParamBytes = 4352);
/// embeddingGradThreads: see convert-triax-to-kernels' option.
/// With `params` (accumulate-in-gemm), an embedding gradient that only its
/// accumulate_grad reads scatters into the gradient buffer.
void populateEmbeddingPatterns(TypeConverter &converter,
                               RewritePatternSet &patterns,
                               int64_t embeddingGradThreads = 0,
                               const ParamIndex *params = nullptr);
/// The accumulate_grad that is `gradient`'s only user (in its producer's
/// block), when the producer can add into the gradient buffer itself
/// (`params` given and naming the parameter; an f32 buffer, or a bf16
/// parameter's bf16 one, into which the producer's f32 sum is rounded once
/// as it is added); null otherwise.
triax::AccumulateGradOp accumulatedInto(Value gradient,
                                        const ParamIndex *params);
/// The gradient buffer of `into`'s parameter (found by accumulatedInto) as
/// `gradient`'s converted type: where the producer adds its result.
Value accumulationBuffer(KernelBuilder &k, const TypeConverter &converter,
                         Value gradient, triax::AccumulateGradOp into,
                         const ParamIndex &params);
/// The buffers one kernel (a GEMM, a column sum) makes `grads` in: with
/// `params`, where every one of them is read only by its accumulate_grad
/// (accumulatedInto), their parameters' gradient buffers, which the kernel
/// adds into (beta = 1, or g + sum: the single f32 addition the
/// accumulation kernel made; a bf16 buffer gets the f32 result rounded
/// once), else a new buffer each. All or none, since one kernel makes them
/// all; eraseAccumulations then drops the accumulate_grads it replaces.
struct GradientBuffers {
  GradientBuffers(KernelBuilder &k, const TypeConverter &converter,
                  const ParamIndex *params, ArrayRef<Value> grads);
  /// Whether the kernel adds into the gradient buffers.
  bool accumulate() const { return !into.empty(); }
  void eraseAccumulations(ConversionPatternRewriter &rewriter);
  SmallVector<triax::AccumulateGradOp> into;
  SmallVector<Value> buffers;
};
/// columnSums: the form of the weight and bias gradients' column sums.
/// With `params` (accumulate-in-gemm, a form other than rows), a norm's
/// weight and bias gradients that only their accumulate_grads read are
/// added into their gradient buffers by the column sums.
void populateNormPatterns(TypeConverter &converter, RewritePatternSet &patterns,
                          ColumnSumForm columnSums = ColumnSumForm::Columns,
                          const ParamIndex *params = nullptr);
/// `attention`: flash (fused kernels with an online softmax, no T x T
/// buffer), flash-mma (the same on NVIDIA tensor cores where the shapes
/// allow, AttentionMMA.cpp) or batched-gemm (GEMMs around a materialized
/// softmax). vectorDots: the flash kernels' dot products as vector<8xf32>
/// operations (the CPU; bit-identical). keyBlocks (with vectorDots): the
/// flash kernels take 8 keys at a time (AttentionBlocks.cpp).
void populateAttentionPatterns(TypeConverter &converter,
                               RewritePatternSet &patterns,
                               StringRef attention = "flash",
                               bool vectorDots = false, bool keyBlocks = false);
/// rowLanes: the cross-entropy's row statistics in 8 vector lanes (the
/// CPU; LossKernels.cpp, rowMaxSumExp). The gradient goes over the logits'
/// buffer where convert-triax-to-kernels marked it to (kOverwritesAttr).
void populateLossPatterns(TypeConverter &converter, RewritePatternSet &patterns,
                          bool rowLanes = false);
void populateCollectivePatterns(TypeConverter &converter,
                                RewritePatternSet &patterns);
/// The mixture-of-experts ops (MoEKernels.cpp); with `params`
/// (accumulate-in-gemm) an expert weight gradient only accumulated is
/// computed into its gradient buffer.
void populateMoEPatterns(TypeConverter &converter, RewritePatternSet &patterns,
                         const ParamIndex *params = nullptr);
/// fuseBucketCopies: a ZeRO bucket's copies (packing, unpacking,
/// accumulating its chunks) as one parallel loop over its tensors'
/// concatenated elements per launch of at most kernelParamBytes of kernel
/// parameters (0: no limit), not one loop per tensor.
void populateZeroPatterns(TypeConverter &converter, RewritePatternSet &patterns,
                          const ParamIndex &params,
                          bool fuseBucketCopies = false,
                          int64_t kernelParamBytes = 4352);
/// fuseOptimizer: a run of consecutive triax.adamw ops of one step becomes
/// one parallel loop over their concatenated elements (one GPU launch),
/// and the global norm's partial sums over all gradients one loop over
/// their concatenated rows, each cut where the launch would pass more than
/// kernelParamBytes of kernel parameters.
void populateOptimizerPatterns(TypeConverter &converter,
                               RewritePatternSet &patterns,
                               const ParamIndex &params,
                               bool fuseOptimizer = false,
                               int64_t kernelParamBytes = 4352);
/// grad[index] += g (`g` a converted buffer of the gradient buffer's
/// shape): one parallel loop into the runtime's gradient buffer.
void accumulateGrad(KernelBuilder &k, int64_t index, Value g);
void populatePipelinePatterns(TypeConverter &converter,
                              RewritePatternSet &patterns);

/// fuse-projections (FuseProjections.cpp): the linears of `fn` that read
/// one input, and whose results only ops with Triax_ReadsRowViews read,
/// become one linear over their weights side by side and column slices of
/// its result; the sum of their input gradients one transposed linear over
/// the gradients side by side.
void fuseProjections(func::FuncOp fn);
/// The lowering of those slices (a strided view of the wider buffer) and
/// concatenations (the buffer whose column views they are, else a copy).
void populateViewPatterns(TypeConverter &converter,
                          RewritePatternSet &patterns);
/// `value` (an operand of a Triax_ReadsRowViews op's lowering) as the view
/// a column slice became, looking through the materialization the
/// conversion put between the view and the operand's identity-layout type;
/// `value` itself otherwise.
Value rowView(Value value);
/// When the results of `op` are exactly the operands, in order, of one
/// concatenation along their last dimension: that concatenation's result
/// type (their gradients written side by side into one buffer); null
/// otherwise.
RankedTensorType sideBySideResults(Operation *op);
/// Columns [offset, offset + width) of every row of `buffer` (any rank): a
/// strided view (memref.subview).
Value columnView(KernelBuilder &k, Value buffer, int64_t offset, int64_t width);

/// Lanes l and l + w/2 of the w-lane vector `v` (w even) combined: a
/// vector of w/2 lanes.
Value halveLanes(KernelBuilder &k, Value v,
                 function_ref<Value(KernelBuilder &, Value, Value)> combine);
/// The lanes of `v` (a power of two, at least 2) combined pairwise by
/// halveLanes down to 2 lanes, then lane 0 with lane 1: for 8 lanes
/// ((0 + 4) + (2 + 6)) + ((1 + 5) + (3 + 7)), the order of the flash
/// kernels' dot products (headDot).
Value halvingSum(KernelBuilder &k, Value v,
                 function_ref<Value(KernelBuilder &, Value, Value)> combine);

} // namespace mlir::triax::kernels

#endif // TRIAX_LIB_CONVERSION_TRIAXTOKERNELS_KERNELBUILDER_H
