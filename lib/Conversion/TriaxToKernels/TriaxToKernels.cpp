//===- TriaxToKernels.cpp - Layer ops to loop kernels on buffers ----------===//
//
// The pass prepares the model (inlines blocks, moves the entry functions to
// the module, returns the loss as a scalar) and then runs one dialect
// conversion from tensors to memrefs with the kernel patterns of each op
// family (Linear/Elementwise/Embedding/Norm/Attention/Loss/Optimizer
// Kernels.cpp). Which kernel an op becomes is decided by its pattern, never
// by this file.
//
//===----------------------------------------------------------------------===//

#include "triax/Conversion/Passes.h"

#include "KernelBuilder.h"
#include "triax/Conversion/RuntimeABI.h"
#include "triax/Dialect/Dist/IR/Dist.h"
#include "triax/Dialect/Triax/IR/Triax.h"

#include "mlir/Dialect/Func/Transforms/FuncConversions.h"
#include "mlir/Dialect/SCF/Transforms/Patterns.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "mlir/Transforms/DialectConversion.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/SetVector.h"

namespace mlir::triax {
#define GEN_PASS_DEF_CONVERTTRIAXTOKERNELS
#define GEN_PASS_DEF_TRIAXOUTLINEKERNELS
#include "triax/Conversion/Passes.h.inc"
} // namespace mlir::triax

using namespace mlir;
using namespace mlir::triax;
using namespace mlir::triax::kernels;

void declareRuntimeFunctions(ModuleOp module);

/// Replaces each `triax.block` in `fn` by its body.
static void inlineBlocks(func::FuncOp fn) {
  SmallVector<BlockOp> blocks;
  fn.walk([&](BlockOp op) { blocks.push_back(op); });
  for (BlockOp op : blocks) {
    Block &body = op.getBody().front();
    auto yield = cast<YieldOp>(body.getTerminator());
    for (auto [arg, input] : llvm::zip(body.getArguments(), op.getInputs()))
      arg.replaceAllUsesWith(input);
    op->getBlock()->getOperations().splice(Block::iterator(op),
                                           body.getOperations(), body.begin(),
                                           Block::iterator(yield));
    op.replaceAllUsesWith(yield.getValues());
    op.erase();
  }
}

/// Moves `fn` to the module as `name` and makes it return its 0-d tensor
/// results as f32 scalars.
static void exportEntry(func::FuncOp fn, ModuleOp module, StringRef name) {
  inlineBlocks(fn);
  auto ret = cast<func::ReturnOp>(fn.front().getTerminator());
  OpBuilder b(ret);
  SmallVector<Value> scalars;
  for (Value v : ret.getOperands())
    scalars.push_back(
        isa<TensorType>(v.getType())
            ? tensor::ExtractOp::create(b, ret.getLoc(), v, ValueRange{})
                  .getResult()
            : v);
  ret->setOperands(scalars);
  fn.setFunctionType(
      b.getFunctionType(fn.getArgumentTypes(), ValueRange(scalars).getTypes()));
  fn->moveBefore(module.getBody(), module.getBody()->end());
  fn.setSymName(name);
  fn->setAttr("llvm.emit_c_interface", b.getUnitAttr());
}

/// Makes every buffer `fn` returns one it owns, so the caller can free it:
/// a returned value that is not a buffer allocated in `fn` (an argument, a
/// view of a runtime state buffer or of another buffer) or that is
/// returned twice is copied into a new buffer first. Entry points return
/// scalars and are left alone.
static void ownReturnedBuffers(func::FuncOp fn) {
  fn.walk([&](func::ReturnOp ret) {
    llvm::SmallPtrSet<Value, 8> seen;
    OpBuilder b(ret);
    for (OpOperand &operand : ret->getOpOperands()) {
      Value v = operand.get();
      auto type = dyn_cast<MemRefType>(v.getType());
      if (!type)
        continue;
      if (v.getDefiningOp<memref::AllocOp>() && seen.insert(v).second)
        continue;
      KernelBuilder k(b, ret.getLoc());
      Value copy = k.alloc(type);
      Value from = k.flat(v), to = k.flat(copy);
      k.parallel({type.getNumElements()}, [&](KernelBuilder &k, ValueRange i) {
        k.store(k.load(from, i), to, i);
      });
      operand.set(copy);
    }
  });
}

/// Brackets each call of a stage function in the pipeline schedule `step`
/// with the runtime's trace calls (kind 0 for `@stage<s>_forward`, 1 for
/// `@stage<s>_backward`; the micro-batch is the call's rank among the calls
/// of that function, as both schedules run each stage's forwards, and its
/// backwards, in micro-batch order).
static void traceStageCalls(func::FuncOp step) {
  llvm::StringMap<int64_t> seen;
  step.walk([&](func::CallOp call) {
    StringRef callee = call.getCallee();
    if (!callee.starts_with("stage"))
      return;
    int64_t kind = callee.ends_with("_forward") ? 0 : 1;
    int64_t microBatch = seen[callee]++;
    OpBuilder b(call);
    Location loc = call.getLoc();
    auto i64 = [&](int64_t v) -> Value {
      return arith::ConstantOp::create(b, loc, b.getI64IntegerAttr(v));
    };
    func::CallOp::create(b, loc, ::triax::rt::kTraceBegin, TypeRange{},
                         ValueRange{i64(kind), i64(microBatch)});
    b.setInsertionPointAfter(call);
    func::CallOp::create(b, loc, ::triax::rt::kTraceEnd, TypeRange{},
                         ValueRange{});
  });
}

/// Frees each buffer right after its last use (through any view of it), so
/// a step holds only the activations still needed. The buffers are those
/// the kernels allocated and those a call of a model function returned
/// (owned by the caller, see ownReturnedBuffers); a buffer returned or
/// yielded out of its block is not freed there.
static void insertDeallocs(func::FuncOp fn) {
  SmallVector<Value> owned;
  fn.walk([&](Operation *op) {
    if (isa<memref::AllocOp>(op)) {
      owned.push_back(op->getResult(0));
    } else if (auto call = dyn_cast<func::CallOp>(op)) {
      auto callee = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
          call, call.getCalleeAttr());
      if (callee && !callee.isExternal())
        for (Value result : call.getResults())
          if (isa<MemRefType>(result.getType()))
            owned.push_back(result);
    }
  });
  for (Value buffer : owned) {
    Operation *def = buffer.getDefiningOp();
    Block *block = def->getBlock();
    Operation *last = def;
    bool escapes = false;
    SmallVector<Value> worklist = {buffer};
    while (!worklist.empty()) {
      Value value = worklist.pop_back_val();
      for (Operation *user : value.getUsers()) {
        if (isa<func::ReturnOp, scf::YieldOp>(user) &&
            user->getBlock() == block)
          escapes = true;
        if (auto view = dyn_cast<ViewLikeOpInterface>(user))
          if (view.getViewSource() == value)
            for (Value result : user->getResults())
              worklist.push_back(result);
        Operation *ancestor = block->findAncestorOpInBlock(*user);
        if (ancestor && last->isBeforeInBlock(ancestor))
          last = ancestor;
      }
    }
    if (escapes)
      continue;
    OpBuilder b(last->getContext());
    b.setInsertionPointAfter(last);
    memref::DeallocOp::create(b, def->getLoc(), buffer);
  }
}

/// Marks the functions outlineKernels made.
static constexpr llvm::StringLiteral kKernelAttr = "triax_kernel";

/// Moves each top-level loop nest of `fn` into a private function of its own
/// (`<fn>_kernel<N>`) and calls it. The entry functions of a 96-layer model
/// hold thousands of loop nests; as separate functions the later lowering
/// (SCF to CFG in particular) and LLVM's optimizer stay linear in the model
/// size, and each kernel is a unit the GPU outlining can take as it is.
/// Constants are re-created inside the kernel instead of passed.
static void outlineKernels(func::FuncOp fn) {
  SmallVector<Operation *> loops;
  for (Operation &op : fn.front())
    if (isa<scf::ParallelOp, scf::ForOp>(op))
      loops.push_back(&op);
  OpBuilder b(fn.getContext());
  b.setInsertionPointAfter(fn);
  for (auto [n, loop] : llvm::enumerate(loops)) {
    llvm::SetVector<Value> captures;
    for (Value v : loop->getOperands())
      captures.insert(v);
    getUsedValuesDefinedAbove(loop->getRegions(), captures);
    SmallVector<Value> args;
    SmallVector<Operation *> constants;
    for (Value v : captures) {
      Operation *def = v.getDefiningOp();
      if (def && def->hasTrait<OpTrait::ConstantLike>())
        constants.push_back(def);
      else
        args.push_back(v);
    }
    Location loc = loop->getLoc();
    auto kernel = func::FuncOp::create(
        b, loc, (fn.getName() + "_kernel" + Twine(n)).str(),
        b.getFunctionType(ValueRange(args).getTypes(), loop->getResultTypes()));
    kernel.setPrivate();
    kernel->setAttr(kKernelAttr, b.getUnitAttr());
    Block *entry = kernel.addEntryBlock();
    OpBuilder body = OpBuilder::atBlockBegin(entry);
    IRMapping mapping;
    mapping.map(args, entry->getArguments());
    for (Operation *constant : constants)
      body.clone(*constant, mapping);
    Operation *moved = body.clone(*loop, mapping);
    func::ReturnOp::create(body, loc, moved->getResults());
    OpBuilder call(loop);
    auto callOp = func::CallOp::create(call, loc, kernel, args);
    loop->replaceAllUsesWith(callOp.getResults());
    loop->erase();
  }
}

namespace {

//===----------------------------------------------------------------------===//
// Structural patterns: parameters, constants, scalars, positions
//===----------------------------------------------------------------------===//

struct GetParamLowering : ParamPattern<GetParamOp> {
  using ParamPattern::ParamPattern;
  LogicalResult
  matchAndRewrite(GetParamOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    FailureOr<int64_t> index = paramIndex(op, op.getName());
    if (failed(index))
      return failure();
    KernelBuilder k(rewriter, op.getLoc());
    auto type = cast<MemRefType>(getTypeConverter()->convertType(op.getType()));
    if (type.getRank() > 2)
      return op.emitOpError("parameters of rank > 2 are not lowered yet");
    rewriter.replaceOp(op, k.state(::triax::rt::kParam, *index, type));
    return success();
  }
};

struct SplatConstantLowering : OpConversionPattern<arith::ConstantOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(arith::ConstantOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto splat = dyn_cast<SplatElementsAttr>(op.getValue());
    auto type = dyn_cast<RankedTensorType>(op.getType());
    if (!splat || !type || !isa<FloatType>(type.getElementType()))
      return rewriter.notifyMatchFailure(op, "not a float tensor splat");
    KernelBuilder k(rewriter, op.getLoc());
    double value = splat.getSplatValue<APFloat>().convertToDouble();
    rewriter.replaceOp(op, k.allocFilled(type, value));
    return success();
  }
};

struct ExtractLowering : OpConversionPattern<tensor::ExtractOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(tensor::ExtractOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOpWithNewOp<memref::LoadOp>(op, adaptor.getTensor(),
                                                adaptor.getIndices());
    return success();
  }
};

struct PositionIdsLowering : OpConversionPattern<PositionIdsOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(PositionIdsOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    KernelBuilder k(rewriter, op.getLoc());
    RankedTensorType type = op.getType();
    // Sequence-parallel: this rank's slice starts at its group position
    // times the local sequence length.
    Value offset;
    if (op.getMeshAttr()) {
      FailureOr<int64_t> mask =
          axisMask(op, op.getMeshAttr(), op.getAxesAttr());
      if (failed(mask))
        return failure();
      offset = k.muli(groupPosition(k, *mask), k.index(type.getDimSize(1)));
    }
    Value out = k.alloc(type);
    Type elt = type.getElementType();
    k.parallel(type.getShape(), [&](KernelBuilder &k, ValueRange ivs) {
      Value s = offset ? k.addi(offset, ivs[1]) : ivs[1];
      Value pos = arith::IndexCastOp::create(k.builder(), k.getLoc(), elt, s);
      k.store(pos, out, ivs);
    });
    rewriter.replaceOp(op, out);
    return success();
  }
};

struct ConvertTriaxToKernelsPass
    : public mlir::triax::impl::ConvertTriaxToKernelsBase<
          ConvertTriaxToKernelsPass> {
  using Base::Base;
  void runOnOperation() override;
};

struct TriaxOutlineKernelsPass
    : public mlir::triax::impl::TriaxOutlineKernelsBase<
          TriaxOutlineKernelsPass> {
  void runOnOperation() override {
    SmallVector<func::FuncOp> entries;
    for (func::FuncOp fn : getOperation().getOps<func::FuncOp>())
      if (!fn.isExternal() && !fn->hasAttr(kKernelAttr))
        entries.push_back(fn);
    for (func::FuncOp fn : entries)
      outlineKernels(fn);
  }
};

} // namespace

void mlir::triax::kernels::populateStructuralPatterns(
    TypeConverter &converter, RewritePatternSet &patterns,
    const ParamIndex &params) {
  MLIRContext *ctx = patterns.getContext();
  patterns.add<GetParamLowering>(converter, ctx, params);
  patterns.add<SplatConstantLowering, ExtractLowering, PositionIdsLowering>(
      converter, ctx);
}

void ConvertTriaxToKernelsPass::runOnOperation() {
  ModuleOp module = getOperation();
  SmallVector<ModelOp> models = llvm::to_vector(module.getOps<ModelOp>());
  if (models.size() != 1) {
    module.emitError("convert-triax-to-kernels expects exactly one "
                     "triax.model, found ")
        << models.size();
    return signalPassFailure();
  }
  ModelOp model = models.front();
  ParamIndex params;
  for (auto [i, param] : llvm::enumerate(model.getParams())) {
    params[param.getSymName()] = i;
    if (param->hasAttr(dist::DistDialect::kZeroAttrName))
      params.zeroSharded.insert(param.getSymName());
  }
  // With pipeline parallelism (dist-pipeline ran), @pipeline_step is the
  // training step: each rank runs its stage's part of the micro-batch
  // schedule. @forward and @forward_backward read every stage's
  // parameters, which a rank no longer holds: they are not exported.
  auto pipelineStep = model.lookupSymbol<func::FuncOp>("pipeline_step");
  if (!pipelineStep)
    exportEntry(model.getForward(), module, ::triax::rt::kForwardEntry);
  std::pair<StringRef, StringRef> entries[] = {
      {pipelineStep ? "pipeline_step" : "forward_backward",
       ::triax::rt::kForwardBackwardEntry},
      {"optimizer_step", ::triax::rt::kOptimizerStepEntry}};
  for (auto [name, entry] : entries)
    if (auto fn = model.lookupSymbol<func::FuncOp>(name))
      exportEntry(fn, module, entry);
  // The functions the entries call (the pipeline's stage functions) move
  // to the module too, private; the buffers they return belong to the
  // caller.
  SmallVector<func::FuncOp> callees;
  if (pipelineStep)
    for (func::FuncOp fn : model.getOps<func::FuncOp>())
      if (fn.getSymName().starts_with("stage"))
        callees.push_back(fn);
  for (func::FuncOp fn : callees) {
    inlineBlocks(fn);
    fn->moveBefore(module.getBody(), module.getBody()->end());
    fn.setPrivate();
  }
  if (pipelineStep)
    traceStageCalls(pipelineStep);
  // What stays in the model is not part of the program (the whole-model
  // functions a pipeline replaced): it goes now, before the conversion.
  for (func::FuncOp fn : llvm::to_vector(model.getOps<func::FuncOp>()))
    fn.erase();
  // Parameter reads keep referring to the model's symbols until they are
  // rewritten; the model goes once the conversion is done.
  declareRuntimeFunctions(module);

  MLIRContext *ctx = &getContext();
  TypeConverter converter;
  converter.addConversion([](Type type) { return type; });
  converter.addConversion([](RankedTensorType type) -> Type {
    return MemRefType::get(type.getShape(), type.getElementType());
  });

  ConversionTarget target(*ctx);
  target.addLegalDialect<arith::ArithDialect, math::MathDialect,
                         memref::MemRefDialect, scf::SCFDialect>();
  target.addIllegalDialect<TriaxDialect, tensor::TensorDialect>();
  target.addLegalOp<ModelOp, ParamOp>();
  // Collectives become runtime calls; the mesh stays until they are
  // lowered (they look up its axis order) and goes with the model.
  target.addIllegalDialect<dist::DistDialect>();
  target.addLegalOp<dist::MeshOp>();
  target.addDynamicallyLegalOp<arith::ConstantOp>(
      [](arith::ConstantOp op) { return !isa<TensorType>(op.getType()); });
  target.addDynamicallyLegalOp<func::FuncOp>([&](func::FuncOp op) {
    return converter.isSignatureLegal(op.getFunctionType());
  });
  target.addDynamicallyLegalOp<func::ReturnOp, func::CallOp>(
      [&](Operation *op) { return converter.isLegal(op); });

  RewritePatternSet patterns(ctx);
  populateFunctionOpInterfaceTypeConversionPattern<func::FuncOp>(patterns,
                                                                 converter);
  populateReturnOpTypeConversionPattern(patterns, converter);
  populateCallOpTypeConversionPattern(patterns, converter);
  scf::populateSCFStructuralTypeConversionsAndLegality(converter, patterns,
                                                       target);
  populateStructuralPatterns(converter, patterns, params);
  populateLinearPatterns(converter, patterns, geluEpilogue, &params,
                         accumulateInGemm);
  populateElementwisePatterns(converter, patterns);
  populateEmbeddingPatterns(converter, patterns, embeddingGradThreads);
  populateNormPatterns(converter, patterns);
  populateAttentionPatterns(converter, patterns);
  populateLossPatterns(converter, patterns);
  populateOptimizerPatterns(converter, patterns, params, fuseOptimizer,
                            kernelParamBytes);
  populateCollectivePatterns(converter, patterns);
  populateZeroPatterns(converter, patterns, params);
  populatePipelinePatterns(converter, patterns);
  if (failed(applyPartialConversion(module, target, std::move(patterns))))
    return signalPassFailure();
  model.erase();
  for (dist::MeshOp mesh : llvm::to_vector(module.getOps<dist::MeshOp>()))
    mesh.erase();
  SmallVector<func::FuncOp> lowered;
  for (func::FuncOp fn : module.getOps<func::FuncOp>())
    if (!fn.isExternal())
      lowered.push_back(fn);
  for (func::FuncOp fn : lowered) {
    ownReturnedBuffers(fn);
    insertDeallocs(fn);
  }
}
