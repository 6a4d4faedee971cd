//===- TriaxBase.td - Triax dialect definition -------------*- tablegen -*-===//
//
// The `triax` dialect describes a model at the level a user thinks about it:
// parameters as symbols, layer ops on tensors, transformer blocks as regions
// and a training configuration.
//
//===----------------------------------------------------------------------===//

#ifndef TRIAX_DIALECT_TRIAX_IR_TRIAXBASE_TD
#define TRIAX_DIALECT_TRIAX_IR_TRIAXBASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

def Triax_Dialect : Dialect {
  let name = "triax";
  let cppNamespace = "::mlir::triax";
  let summary = "Model-level ops: parameters, transformer layers, training config";
  let description = [{
    The `triax` dialect holds a model as a user writes it. Parameters are
    symbols (`triax.param`) inside a `triax.model`, read with
    `triax.get_param`; the forward graph is a `func.func @forward` taking
    integer tokens and targets and returning the scalar mean loss. Layer ops
    (`embedding`, `linear`, `layer_norm`, `rms_norm`, `attention`, `gelu`,
    `silu`, `mul`, `add`, `cross_entropy`) work on f32 or bf16 tensors.
    `triax.block` groups the ops of one transformer block: it is the unit
    pipeline stages are cut along. The training configuration (AdamW
    hyper-parameters, batch sizes, sequence length and dtypes) is a
    `#triax.train_config` attribute on the model.
  }];
  let dependentDialects = ["::mlir::func::FuncDialect"];
  let useDefaultAttributePrinterParser = 1;
  let hasOperationAttrVerify = 1;
  let extraClassDeclaration = [{
    /// On a `triax.param`: the checkpoint tensor it is stored in. Parameters
    /// sharing one are concatenated along their last dimension, in order
    /// (GPT-2's q, k and v as Hugging Face's fused `h.N.attn.c_attn`).
    static constexpr ::llvm::StringLiteral kCheckpointNameAttrName =
        "triax.checkpoint_name";
    /// On a 2-D `triax.param` (unit): checkpoints hold it transposed, as
    /// PyTorch's nn.Linear holds a weight ([out, in]; Triax's linears read
    /// [in, out]). The LLaMA family's linear weights, so that its
    /// checkpoints are Hugging Face's layout. On a 3-D one (stacked experts
    /// [E, in, out]) whose `triax.checkpoint_name` has one `*`: each expert
    /// is its own checkpoint tensor [out, in], named with its index for the
    /// `*` (Mixtral's `experts.N.w1.weight`).
    static constexpr ::llvm::StringLiteral kCheckpointTransposedAttrName =
        "triax.checkpoint_transposed";
    /// On a `triax.param` whose shape is padded (triax-pad-vocab): the
    /// leading block of its shape that holds its values (`array<i64: V, d>`
    /// of a [Vp, d] table). The rest is zero and stays zero; checkpoints and
    /// initialization see this block only.
    static constexpr ::llvm::StringLiteral kValidShapeAttrName =
        "triax.valid_shape";
    /// On a backward `triax.block`: "selective" or "full", the
    /// recomputation triax-recompute built into it.
    static constexpr ::llvm::StringLiteral kRecomputeAttrName =
        "triax.recompute";
  }];
}

class Triax_Op<string mnemonic, list<Trait> traits = []>
    : Op<Triax_Dialect, mnemonic, traits>;

class Triax_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<Triax_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

// Float tensors: the layer ops compute in f32 or bf16.
def Triax_FloatTensor : RankedTensorOf<[F32, BF16]>;
// Token ids and targets.
def Triax_IndexTensor : RankedTensorOf<[I32, I64]>;

// An op on the fp32 master state of the parameters (their values, gradient
// buffers and optimizer moments): under mixed precision its float tensors
// stay f32 (`triax-mixed-precision` converts what reaches it).
def Triax_MasterPrecision : NativeOpTrait<"MasterPrecision"> {
  let cppNamespace = "::mlir::triax";
}

// An op whose kernel lowering reads its float tensor operands as strided
// rows: an operand that is a column slice of a wider tensor (the one GEMM of
// fused projections, convert-triax-to-kernels{fuse-projections}) reaches it
// as a view of that tensor's buffer, not as a copy.
def Triax_ReadsRowViews : NativeOpTrait<"ReadsRowViews"> {
  let cppNamespace = "::mlir::triax";
}

def Triax_InitKind : I32EnumAttr<"InitKind", "parameter initializer", [
    I32EnumAttrCase<"normal", 0>,
    I32EnumAttrCase<"zeros", 1>,
    I32EnumAttrCase<"ones", 2>
  ]> {
  let cppNamespace = "::mlir::triax";
  let genSpecializedAttr = 0;
}

#endif // TRIAX_DIALECT_TRIAX_IR_TRIAXBASE_TD
