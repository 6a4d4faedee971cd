//===- ModelDescriptor.cpp - The C side of a compiled model ---------------===//
//
// The compiled object exports `triax_forward_backward`,
// `triax_optimizer_step` and `triax_forward` with MLIR's C interface (memref
// descriptors; RuntimeABI.h gives their signatures). This file writes the
// small C translation unit that wraps them for the runtime (plain
// pointers: the training step's loss and gradient norm go to device
// scalars the driver owns), tables the parameters for initialization and
// checkpoints, and defines main: the runtime's training driver.
//
//===----------------------------------------------------------------------===//

#include "triax/Driver/Compiler.h"

#include "triax/Conversion/RuntimeABI.h"
#include "triax/CostModel/Planner.h"
#include "triax/Dialect/Dist/IR/Dist.h"
#include "triax/Dialect/Dist/IR/MeshShape.h"
#include "triax/Dialect/Triax/IR/Triax.h"

#include "llvm/Support/FormatVariadic.h"
#include <algorithm>

using namespace mlir;
using namespace mlir::triax;
namespace rt = ::triax::rt;

/// The vocabulary: the rows of the (whole) table the tokens are looked up
/// in (tensor parallelism may split the logits the loss reads), else the
/// last dimension of those logits.
static int64_t findVocab(ModelOp model) {
  int64_t vocab = 0;
  model.walk([&](CrossEntropyOp op) {
    // A padded vocabulary's classes (triax-pad-vocab), not its columns.
    vocab =
        op.getClasses().value_or(op.getLogits().getType().getShape().back());
  });
  auto forward = model.getForward();
  if (!forward || forward.getNumArguments() == 0)
    return vocab;
  // The token ids' lookups (context parallelism looks up its shard).
  SmallVector<Operation *> users(forward.getArgument(0).getUsers());
  for (size_t i = 0; i < users.size(); ++i)
    if (auto shard = dyn_cast<mlir::dist::ShardSequenceOp>(users[i]))
      users.append(shard->user_begin(), shard->user_end());
  for (Operation *user : users) {
    auto lookup = dyn_cast<EmbeddingOp>(user);
    if (!lookup)
      continue;
    // Mixed precision reads it through a conversion to bf16, ZeRO-3
    // gathers it from its chunks first.
    Value tableValue = lookup->getOperand(1);
    if (auto convert = tableValue.getDefiningOp<ConvertOp>())
      tableValue = convert.getInput();
    if (auto gather = tableValue.getDefiningOp<mlir::dist::AllGatherFlatOp>())
      tableValue = gather.getInput();
    else if (auto bucket =
                 tableValue.getDefiningOp<mlir::dist::AllGatherBucketOp>())
      tableValue =
          bucket.getInputs()[cast<OpResult>(tableValue).getResultNumber()];
    auto table = tableValue.getDefiningOp<GetParamOp>();
    if (!table)
      continue;
    if (auto param = model.lookupSymbol<ParamOp>(table.getNameAttr())) {
      // A padded table's tokens are its valid rows (triax-pad-vocab).
      if (auto valid = param->getAttrOfType<DenseI64ArrayAttr>(
              mlir::triax::TriaxDialect::kValidShapeAttrName))
        return valid[0];
      return param.getTensorType().getDimSize(0);
    }
  }
  return vocab;
}

/// The mask (bit i = axis i of `axes`) of the mesh axes `names`.
static uint32_t maskOf(ArrayRef<std::string> axes, ArrayRef<StringRef> names) {
  uint32_t mask = 0;
  for (StringRef name : names)
    for (auto [i, axis] : llvm::enumerate(axes))
      if (axis == name)
        mask |= uint32_t(1) << i;
  return mask;
}

/// The runtime's initializer (triax_abi.h) for a #triax.init kind.
static trx_param_init abiInit(mlir::triax::InitKind kind) {
  switch (kind) {
  case mlir::triax::InitKind::normal:
    return TRX_INIT_NORMAL;
  case mlir::triax::InitKind::zeros:
    return TRX_INIT_ZEROS;
  case mlir::triax::InitKind::ones:
    return TRX_INIT_ONES;
  }
  llvm_unreachable("unknown InitKind");
}

/// The placement fields of a parameter's descriptor, as designated
/// initializers: ".split_rank = ..., ..., .stage_axes = ..." (see
/// trx_param_desc).
static std::string placement(ParamOp param, ArrayRef<std::string> axes) {
  // The split dimensions: the declared shape and each dimension's axes.
  std::string split = ".split_rank = 0";
  if (auto sharding = param->getAttrOfType<mlir::dist::ShardingAttr>(
          mlir::dist::DistDialect::kShardingAttrName)) {
    std::string shape, masks;
    for (unsigned d = 0; d < sharding.getRank(); ++d) {
      shape +=
          (d ? ", " : "") + std::to_string(param.getTensorType().getDimSize(d));
      masks += (d ? ", " : "") +
               std::to_string(maskOf(axes, sharding.getDimAxes(d))) + "u";
    }
    split = llvm::formatv(".split_rank = {0}, .split_shape = {{{1}}, "
                          ".split_axes = {{{2}}",
                          sharding.getRank(), shape, masks)
                .str();
  }
  uint32_t zeroAxes = 0;
  int64_t zeroStage = 0;
  if (auto zero = param->getAttrOfType<mlir::dist::ZeroAttr>(
          mlir::dist::DistDialect::kZeroAttrName)) {
    zeroStage = zero.getStage();
    SmallVector<StringRef> names;
    for (Attribute axis : zero.getAxes())
      names.push_back(cast<StringAttr>(axis).getValue());
    zeroAxes = maskOf(axes, names);
  }
  // Pipeline stages (dist-pipeline): the stage reading it, or the tied
  // stages sharing it.
  uint32_t stages = 0, stageAxes = 0;
  if (auto tied = param->getAttrOfType<DenseI64ArrayAttr>(
          mlir::dist::DistDialect::kTiedStagesAttrName)) {
    for (int64_t s : tied.asArrayRef())
      stages |= uint32_t(1) << s;
  } else if (auto stage = param->getAttrOfType<IntegerAttr>(
                 mlir::dist::DistDialect::kStageAttrName)) {
    stages = uint32_t(1) << stage.getInt();
  }
  if (stages)
    stageAxes = maskOf(axes, {mlir::dist::axisName(TRX_AXIS_PIPELINE)});
  return llvm::formatv("{0}, .zero_stage = {1}, .zero_axes = {2}u, .stages = "
                       "{3}u, .stage_axes = {4}u",
                       split, zeroStage, zeroAxes, stages, stageAxes)
      .str();
}

/// `text` as a C string literal.
static std::string cString(llvm::StringRef text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\')
      out += '\\';
    if (c == '\n') {
      out += "\\n\"\n    \"";
      continue;
    }
    out += c;
  }
  return out + "\"";
}

namespace triax {
/// LlamaForCausalLM's config.json for a LLaMA-family model (triax-model's
/// llama2-7b shapes: RMSNorm, SwiGLU, rotary positions, no biases, an
/// untied head), MixtralForCausalLM's with mixture-of-experts layers
/// (transformers' Mixtral routes without a capacity: a model trained with
/// one computes dropless there, as Mixtral does at inference), or "".
static std::string llamaConfig(mlir::triax::ModelOp model, ModuleOp module) {
  // (Its checkpoints must hold the linears as nn.Linear's [out, in].)
  auto head = model.lookupSymbol<mlir::triax::ParamOp>("lm_head.weight");
  if (!model.lookupSymbol("model.embed_tokens.weight") || !head ||
      !head->hasAttr(
          mlir::triax::TriaxDialect::kCheckpointTransposedAttrName) ||
      !model.lookupSymbol("model.norm.weight") ||
      model.lookupSymbol("model.norm.bias"))
    return "";
  mlir::triax::RopeOp rope;
  mlir::triax::MoERouteOp route;
  model.walk([&](Operation *op) {
    if (auto r = dyn_cast<mlir::triax::RopeOp>(op); r && !rope)
      rope = r;
    if (auto r = dyn_cast<mlir::triax::MoERouteOp>(op); r && !route)
      route = r;
  });
  if (!rope)
    return "";
  std::string kind = "llama", architecture = "LlamaForCausalLM", moe;
  if (route) {
    kind = "mixtral";
    architecture = "MixtralForCausalLM";
    moe = llvm::formatv(
              "  \"num_local_experts\": {0},\n"
              "  \"num_experts_per_tok\": {1},\n"
              "  \"router_aux_loss_coef\": {2},\n",
              route.getLogits().getType().getShape().back(), route.getTopK(),
              llvm::formatv("{0:e6}", route.getAuxCoeff().convertToDouble())
                  .str())
              .str();
  }
  llvm::Expected<cost::ModelShape> shape = cost::readModelShape(module);
  if (!shape) {
    llvm::consumeError(shape.takeError());
    return "";
  }
  return llvm::formatv(
             "{{\n"
             "  \"architectures\": [\"{9}\"],\n"
             "  \"model_type\": \"{10}\",\n"
             "{11}"
             "  \"num_hidden_layers\": {0},\n"
             "  \"hidden_size\": {1},\n"
             "  \"num_attention_heads\": {2},\n"
             "  \"num_key_value_heads\": {3},\n"
             "  \"head_dim\": {4},\n"
             "  \"intermediate_size\": {5},\n"
             "  \"max_position_embeddings\": {6},\n"
             "  \"vocab_size\": {7},\n"
             "  \"hidden_act\": \"silu\",\n"
             "  \"rms_norm_eps\": 1e-05,\n"
             "  \"rope_theta\": {8},\n"
             "  \"attention_bias\": false,\n"
             "  \"mlp_bias\": false,\n"
             "  \"attention_dropout\": 0.0,\n"
             "  \"tie_word_embeddings\": false\n"
             "}\n",
             shape->layers, shape->hidden, shape->heads, shape->kvHeads,
             shape->hidden / shape->heads, shape->ffn, shape->seq, shape->vocab,
             llvm::formatv("{0}", rope.getTheta().convertToDouble()).str(),
             architecture, kind, moe)
      .str();
}

std::string huggingFaceConfig(ModuleOp module) {
  mlir::triax::ModelOp model;
  for (auto m : module.getOps<mlir::triax::ModelOp>())
    model = m;
  if (model)
    if (std::string llama = llamaConfig(model, module); !llama.empty())
      return llama;
  if (!model || !model.lookupSymbol("wte.weight") ||
      !model.lookupSymbol("wpe.weight") || model.lookupSymbol("lm_head.weight"))
    return "";
  // transformers' GPT2LMHeadModel has no mixture-of-experts layer.
  if (model
          .walk([](mlir::triax::MoERouteOp) { return WalkResult::interrupt(); })
          .wasInterrupted())
    return "";
  llvm::Expected<cost::ModelShape> shape = cost::readModelShape(module);
  if (!shape) {
    llvm::consumeError(shape.takeError());
    return "";
  }
  return llvm::formatv("{{\n"
                       "  \"architectures\": [\"GPT2LMHeadModel\"],\n"
                       "  \"model_type\": \"gpt2\",\n"
                       "  \"n_layer\": {0},\n"
                       "  \"n_embd\": {1},\n"
                       "  \"n_head\": {2},\n"
                       "  \"n_inner\": {3},\n"
                       "  \"n_positions\": {4},\n"
                       "  \"vocab_size\": {5},\n"
                       "  \"activation_function\": \"gelu_new\",\n"
                       "  \"layer_norm_epsilon\": 1e-05,\n"
                       "  \"resid_pdrop\": 0.0,\n"
                       "  \"embd_pdrop\": 0.0,\n"
                       "  \"attn_pdrop\": 0.0,\n"
                       "  \"tie_word_embeddings\": true\n"
                       "}\n",
                       shape->layers, shape->hidden, shape->heads,
                       shape->ffn == 4 * shape->hidden
                           ? std::string("null")
                           : std::to_string(shape->ffn),
                       shape->seq, shape->vocab)
      .str();
}

std::string emitModelDescriptor(ModuleOp module, llvm::StringRef device,
                                int64_t planGpusPerNode,
                                llvm::StringRef hfConfig) {
  mlir::triax::ModelOp model = *module.getOps<mlir::triax::ModelOp>().begin();
  mlir::triax::TrainConfigAttr config = model.getConfig();
  std::string out;
  llvm::raw_string_ostream os(out);
  os << "/* Generated by triaxc for model @" << model.getSymName()
     << ": the runtime's view of the compiled model. */\n"
        "#include <stdint.h>\n#include \"triax_rt.h\"\n\n"
        "typedef struct { int32_t *allocated, *aligned; int64_t offset, "
        "sizes[2], strides[2]; } triax_i32_view;\n"
        "typedef struct { float *allocated, *aligned; int64_t offset; } "
        "triax_f32_scalar;\n"
        "float _mlir_ciface_"
     << rt::kForwardEntry
     << "(triax_i32_view *, triax_i32_view *);\n"
        "void _mlir_ciface_"
     << rt::kForwardBackwardEntry
     << "(triax_i32_view *, triax_i32_view *, triax_f32_scalar *);\n"
        "void _mlir_ciface_"
     << rt::kOptimizerStepEntry
     << "(float, int64_t, float, triax_f32_scalar *);\n\n";
  int64_t batch = config.getMicroBatch(), seq = config.getSeq();
  // With a pipeline (dist-pipeline's @pipeline_step), the training step's
  // entry takes its micro-batches stacked, and there is no whole-model
  // forward to evaluate with.
  int64_t pipelineMicroBatches = 0;
  if (auto step = model.getPipelineStep()) {
    auto tokens = cast<RankedTensorType>(step.getArgumentTypes().front());
    pipelineMicroBatches = tokens.getDimSize(0) / batch;
  }
  int64_t callRows =
      pipelineMicroBatches ? pipelineMicroBatches * batch : batch;
  // The training step's scalars are device memory the driver owns:
  // forward_backward adds its mean loss to loss_acc[0], optimizer_step
  // writes the global norm to grad_norm[0].
  os << llvm::formatv(
      "static triax_i32_view view(const int32_t *p, int64_t rows) {{\n"
      "  triax_i32_view v = {{(int32_t *)p, (int32_t *)p, 0, {{rows, {0}}, "
      "{{{0}, 1}};\n  return v;\n}\n"
      "static triax_f32_scalar scalar(float *p) {{\n"
      "  triax_f32_scalar s = {{p, p, 0};\n  return s;\n}\n"
      "static void forward_backward(const int32_t *tokens, const int32_t "
      "*targets, float *loss_acc) {{\n"
      "  triax_i32_view t = view(tokens, {1}), y = view(targets, {1});\n"
      "  triax_f32_scalar l = scalar(loss_acc);\n"
      "  _mlir_ciface_{2}(&t, &y, &l);\n}\n"
      "static void optimizer_step(float lr, int64_t step, float grad_scale, "
      "float *grad_norm) {{\n"
      "  triax_f32_scalar n = scalar(grad_norm);\n"
      "  _mlir_ciface_{3}(lr, step, grad_scale, &n);\n}\n\n",
      seq, callRows, rt::kForwardBackwardEntry, rt::kOptimizerStepEntry);
  if (!pipelineMicroBatches)
    os << llvm::formatv(
        "static float forward(const int32_t *tokens, const int32_t *targets) "
        "{{\n  triax_i32_view t = view(tokens, {0}), y = view(targets, "
        "{0});\n  return _mlir_ciface_{1}(&t, &y);\n}\n\n",
        batch, rt::kForwardEntry);
  // The mesh, axes in the order of the dist.mesh: the order the compiled
  // collectives number the axes in (their axis masks), so it is handed to
  // trx_dist_init as it is, with each axis's role (TRX_AXIS_NONE for a
  // name the axis-role table does not have). No mesh: one device on a
  // data axis.
  SmallVector<std::string> axisNames = {
      mlir::dist::axisName(TRX_AXIS_DATA).str()};
  SmallVector<int64_t> axisSizes = {1};
  auto meshes = llvm::to_vector(module.getOps<mlir::dist::MeshOp>());
  if (!meshes.empty()) {
    axisNames.clear();
    for (Attribute name : meshes.front().getAxisNames())
      axisNames.push_back(cast<StringAttr>(name).getValue().str());
    axisSizes.assign(meshes.front().getAxisSizes().begin(),
                     meshes.front().getAxisSizes().end());
  }
  os << "static const trx_param_desc params[] = {\n";
  for (mlir::triax::ParamOp param : model.getParams()) {
    RankedTensorType type = param.getTensorType();
    mlir::triax::InitAttr init = param.getInit();
    // The runtime's state is rank 1 or 2: a parameter of higher rank (the
    // experts' stacked weights [E, in, out]) is its rows [E*in, out], the
    // same elements in the same order (KernelBuilder::state views them back).
    int64_t rank = std::min<int64_t>(type.getRank(), 2);
    int64_t d0 = type.getRank() > 1
                     ? type.getNumElements() / type.getShape().back()
                     : type.getDimSize(0);
    int64_t d1 = type.getRank() > 1 ? type.getShape().back() : 0;
    auto ckpt = param->getAttrOfType<StringAttr>(
        mlir::triax::TriaxDialect::kCheckpointNameAttrName);
    std::string ckptName =
        ckpt ? ("\"" + ckpt.getValue() + "\"").str() : std::string("NULL");
    // A padded parameter (triax-pad-vocab): the block that holds values.
    std::string valid;
    if (auto shape = param->getAttrOfType<DenseI64ArrayAttr>(
            mlir::triax::TriaxDialect::kValidShapeAttrName))
      valid = llvm::formatv(", .valid_shape = {{{0}, {1}}", shape[0],
                            shape.size() > 1 ? shape[1] : 0)
                  .str();
    os << llvm::formatv(
        "  {{.name = \"{0}\", .rank = {1}, .shape = {{{2}, {3}}, .init = {4}, "
        ".init_std = {5}f, .decay = {6}, .ckpt_name = {7}, {8}{9}{10}{11}},\n",
        param.getSymName(), rank, d0, d1, int(abiInit(init.getKind())),
        llvm::formatv("{0:e9}", init.getStdValue()).str(),
        param.getDecay() ? 1 : 0, ckptName, placement(param, axisNames),
        param->hasAttr(mlir::triax::TriaxDialect::kCheckpointTransposedAttrName)
            ? (", .ckpt_transposed = 1" +
               (type.getRank() == 3
                    ? ", .ckpt_slices = " + std::to_string(type.getDimSize(0))
                    : std::string()))
            : std::string(),
        // A bf16 parameter: bf16 parameter and gradient buffers and an f32
        // master copy (an f32 one is the field's default).
        type.getElementType().isBF16() ? ", .dtype = TRX_BF16" : "", valid);
  }
  os << "};\n\n";
  os << "static const char *const mesh_axis_names[] = {";
  for (auto [i, name] : llvm::enumerate(axisNames))
    os << (i ? ", " : "") << "\"" << name << "\"";
  os << "};\nstatic const int64_t mesh_axis_sizes[] = {";
  for (auto [i, size] : llvm::enumerate(axisSizes))
    os << (i ? ", " : "") << size;
  os << "};\nstatic const int32_t mesh_axis_roles[] = {";
  for (auto [i, name] : llvm::enumerate(axisNames))
    os << (i ? ", " : "") << int(mlir::dist::axisRoleNamed(name));
  os << "};\n\n";
  auto num = [](double v) { return llvm::formatv("{0:e9}", v).str(); };
  bool hasMoE = false;
  model.walk([&](mlir::triax::MoERouteOp) { hasMoE = true; });
  os << llvm::formatv(
      "static const trx_model_desc model = {{\n"
      "  .model_name = \"{0}\",\n"
      "  .num_params = {1},\n"
      "  .params = params,\n"
      "  .micro_batch = {2},\n"
      "  .global_batch = {3},\n"
      "  .seq = {4},\n"
      "  .vocab = {5},\n"
      "  .lr = {6}f,\n"
      "  .beta1 = {7}f,\n"
      "  .beta2 = {8}f,\n"
      "  .eps = {9}f,\n"
      "  .weight_decay = {10}f,\n"
      "  .grad_clip = {11}f,\n"
      "  .forward_backward = forward_backward,\n"
      "  .optimizer_step = optimizer_step,\n"
      "  .forward = {13},\n"
      "  .num_mesh_axes = {12},\n"
      "  .mesh_axis_names = mesh_axis_names,\n"
      "  .mesh_axis_sizes = mesh_axis_sizes,\n"
      "  .mesh_axis_roles = mesh_axis_roles,\n"
      "  .pipeline_microbatches = {14},\n"
      "  .device = \"{15}\",\n"
      "  .plan_gpus_per_node = {16},\n"
      "  .hf_config = {17},\n"
      "  .has_moe = {18},\n};\n\n"
      "int main(int argc, char **argv) {{ return trx_train_main(argc, argv, "
      "&model); }\n",
      model.getSymName(), llvm::range_size(model.getParams()), batch,
      config.getGlobalBatch(), seq, findVocab(model), num(config.getLrValue()),
      num(config.getBeta1Value()), num(config.getBeta2Value()),
      num(config.getEpsValue()), num(config.getWeightDecayValue()),
      num(config.getGradClipValue()), axisNames.size(),
      pipelineMicroBatches ? "NULL" : "forward", pipelineMicroBatches, device,
      planGpusPerNode, hfConfig.empty() ? "NULL" : cString(hfConfig),
      hasMoE ? 1 : 0);
  return out;
}
} // namespace triax
