//===- TriaxAttrs.td - Triax attributes --------------------*- tablegen -*-===//

#ifndef TRIAX_DIALECT_TRIAX_IR_TRIAXATTRS_TD
#define TRIAX_DIALECT_TRIAX_IR_TRIAXATTRS_TD

include "triax/Dialect/Triax/IR/TriaxBase.td"

def Triax_InitAttr : Triax_Attr<"Init", "init"> {
  let summary = "How a parameter is initialized";
  let description = [{
    `#triax.init<normal, std = 0.02>` draws from N(0, std^2);
    `#triax.init<zeros>` and `#triax.init<ones>` fill with a constant.

    ```mlir
    triax.param @wte : tensor<256x64xf32> init <normal, std = 2.000000e-02> decay
    triax.param @ln_f.bias : tensor<64xf32> init <zeros>
    ```
  }];
  let parameters = (ins "::mlir::triax::InitKind":$kind,
                        APFloatParameter<"standard deviation">:$std);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let builders = [
    AttrBuilder<(ins "::mlir::triax::InitKind":$kind, "double":$std), [{
      return $_get($_ctxt, kind, ::llvm::APFloat(std));
    }]>
  ];
  let extraClassDeclaration = [{
    double getStdValue() const { return getStd().convertToDouble(); }
  }];
}

def Triax_TrainConfigAttr : Triax_Attr<"TrainConfig", "train_config"> {
  let summary = "Training configuration: optimizer, batch, sequence, dtypes";
  let description = [{
    The configuration a model trains with. Every key is optional in the
    textual form and takes the default shown:

    ```mlir
    #triax.train_config<optimizer = adamw, lr = 6.000000e-04, beta1 = 9.000000e-01,
                        beta2 = 9.500000e-01, eps = 1.000000e-08,
                        weight_decay = 1.000000e-01, grad_clip = 1.000000e+00,
                        global_batch = 1, micro_batch = 1, seq = 1024,
                        compute = f32, master = f32>
    ```

    `global_batch` and `micro_batch` count sequences (`global_batch`
    defaults to `micro_batch`); `global_batch` must be
    a multiple of `micro_batch` (the quotient is the number of micro-batches
    a step accumulates over, times the data-parallel degree). `grad_clip = 0`
    turns global-norm clipping off. `compute` is f32 or bf16; `master` (the
    dtype of the optimizer's copy of the weights) is f32.
  }];
  let parameters = (ins
    StringRefParameter<"optimizer">:$optimizer,
    APFloatParameter<"learning rate">:$lr,
    APFloatParameter<"Adam beta1">:$beta1,
    APFloatParameter<"Adam beta2">:$beta2,
    APFloatParameter<"Adam epsilon">:$eps,
    APFloatParameter<"decoupled weight decay">:$weight_decay,
    APFloatParameter<"global-norm gradient clip (0: off)">:$grad_clip,
    "int64_t":$global_batch,
    "int64_t":$micro_batch,
    "int64_t":$seq,
    "::mlir::Type":$compute_type,
    "::mlir::Type":$master_type);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    double getLrValue() const { return getLr().convertToDouble(); }
    double getBeta1Value() const { return getBeta1().convertToDouble(); }
    double getBeta2Value() const { return getBeta2().convertToDouble(); }
    double getEpsValue() const { return getEps().convertToDouble(); }
    double getWeightDecayValue() const {
      return getWeightDecay().convertToDouble();
    }
    double getGradClipValue() const { return getGradClip().convertToDouble(); }
  }];
}

#endif // TRIAX_DIALECT_TRIAX_IR_TRIAXATTRS_TD
