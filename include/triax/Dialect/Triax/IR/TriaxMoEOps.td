//===- TriaxMoEOps.td - Mixture-of-experts ops -------------*- tablegen -*-===//
//
// A mixture-of-experts layer in the GShard form: a router picks each
// token's top-k experts, the tokens are dispatched into a buffer of E
// experts x capacity rows, every expert runs its MLP on its rows (a batched
// GEMM), and the results are combined back into the token order weighted
// by the router's gates. The buffer is what expert parallelism exchanges:
// split along the experts, it is one all_to_all away from the ranks that
// hold them.
//
// Capacity is per sequence: expert e takes at most C of the choices of one
// sequence (first choices first, in token order; then second choices), so
// the same tokens drop however the batch is split over ranks and
// micro-batches. The routing is two index maps of the same assignment:
// `slots[b, s, j]` is where token s's j-th choice went (row e*C + c of
// sequence b's part of the buffer, or -1 when dropped) and
// `assign[b, e*C + c]` which choice (s*k + j) fills a row (or -1). With
// both, the dispatch, the combine and their gradients are all gathers.
//
//===----------------------------------------------------------------------===//

#ifndef TRIAX_DIALECT_TRIAX_IR_TRIAXMOEOPS_TD
#define TRIAX_DIALECT_TRIAX_IR_TRIAXMOEOPS_TD

def Triax_I32Tensor : RankedTensorOf<[I32]>;

def Triax_MoERouteOp : Triax_Op<"moe_route", [Pure, DeclareOpInterfaceMethods<DifferentiableOpInterface>, DeclareOpInterfaceMethods<CostOpInterface, ["getForwardFlops"]>]> {
  let summary = "Top-k routing of tokens to experts, with capacity and the load-balancing loss";
  let description = [{
    For router logits `[B, S, E]` (E experts), each token's probabilities
    `p = softmax(logits[b, s, :])` and its `top_k` experts (the largest
    probabilities, the lower index first on a tie), in order:

    - `gates [B, S, k]`: the chosen experts' probabilities, divided by their
      sum with `renormalize` (Mixtral), as they are without (Switch);
    - `experts [B, S, k]` (i32): the chosen experts;
    - `slots [B, S, k]` (i32): `e*C + c` when the choice got row `c` of
      expert `e`'s `capacity` C rows for sequence b, -1 when it was dropped.
      Rows are handed out over the choices j = 0..k-1, and within a choice
      in token order, so first choices win over second ones;
    - `assign [B, E*C]` (i32): the inverse, `s*k + j` for the choice that
      holds row `e*C + c`, -1 for an empty row;
    - `aux` (f32 scalar): `aux_coeff` times Switch Transformer's
      load-balancing loss, per sequence and averaged over the batch:
      `mean over b of E / (S*k) * sum over e of n[b, e] * P[b, e]`, with
      `n[b, e]` the choices of sequence b routed to e (dropped or not) and
      `P[b, e]` the mean over its tokens of `p[b, s, e]`. It is 1 times the
      coefficient when routing is uniform.

    A capacity of S drops nothing (a token chooses an expert once).

    ```mlir
    %g, %e, %s, %a, %aux = triax.moe_route %logits {top_k = 2, capacity = 8, aux_coeff = 1.0e-02, renormalize} : (tensor<2x8x4xf32>) -> (tensor<2x8x2xf32>, tensor<2x8x2xi32>, tensor<2x8x2xi32>, tensor<2x32xi32>, tensor<f32>)
    ```
  }];
  let arguments = (ins Triax_FloatTensor:$logits, I64Attr:$top_k,
                       I64Attr:$capacity, F64Attr:$aux_coeff,
                       UnitAttr:$renormalize);
  let results = (outs Triax_FloatTensor:$gates, Triax_I32Tensor:$experts,
                      Triax_I32Tensor:$slots, Triax_I32Tensor:$assign,
                      0DTensorOf<[F32]>:$aux);
  let assemblyFormat = [{
    $logits attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Triax_MoEDispatchOp : Triax_Op<"moe_dispatch", [Pure, DeclareOpInterfaceMethods<DifferentiableOpInterface>]> {
  let summary = "Gathers each expert's tokens into its capacity rows";
  let description = [{
    For tokens `input [B, S, H]` and the routing of a `triax.moe_route`
    (`slots [B, S, k]`, `assign [B, E*C]`), the buffer `[E, B*C, H]`:
    `result[e, b*C + c, :] = input[b, s, :]` where `assign[b, e*C + c] =
    s*k + j`, zeros for an empty row (times `gates[b, s, j]` when `gates`
    is given: the gradient of a `triax.moe_combine`).

    ```mlir
    %buf = triax.moe_dispatch %x, %slots, %assign : (tensor<2x8x16xf32>, tensor<2x8x2xi32>, tensor<2x32xi32>) -> tensor<4x16x16xf32>
    ```
  }];
  let arguments = (ins Triax_FloatTensor:$input, Triax_I32Tensor:$slots,
                       Triax_I32Tensor:$assign,
                       Optional<Triax_FloatTensor>:$gates);
  let results = (outs Triax_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $slots `,` $assign (`gates` $gates^)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Triax_MoECombineOp : Triax_Op<"moe_combine", [Pure, DeclareOpInterfaceMethods<DifferentiableOpInterface>]> {
  let summary = "Sums each token's expert outputs back in token order";
  let description = [{
    The inverse of `triax.moe_dispatch`: for an expert buffer
    `input [E, B*C, H]`, `result[b, s, :] = sum over j with
    slots[b, s, j] = e*C + c >= 0 of gates[b, s, j] * input[e, b*C + c, :]`
    (gates 1 when not given: the gradient of a dispatch). A dropped choice
    adds nothing: the token's residual carries it.

    ```mlir
    %y = triax.moe_combine %buf, %slots, %assign gates %g : (tensor<4x16x16xf32>, tensor<2x8x2xi32>, tensor<2x32xi32>, tensor<2x8x2xf32>) -> tensor<2x8x16xf32>
    ```
  }];
  let arguments = (ins Triax_FloatTensor:$input, Triax_I32Tensor:$slots,
                       Triax_I32Tensor:$assign,
                       Optional<Triax_FloatTensor>:$gates);
  let results = (outs Triax_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $slots `,` $assign (`gates` $gates^)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Triax_ExpertLinearOp : Triax_Op<"expert_linear", [Pure, DeclareOpInterfaceMethods<DifferentiableOpInterface>, DeclareOpInterfaceMethods<CostOpInterface, ["getForwardFlops"]>]> {
  let summary = "One matrix product per expert: y[e] = x[e] W[e]";
  let description = [{
    For rows `input [E, N, in]` and weights `[E, in, out]` (`[E, out, in]`
    with `transpose_weight`), `result[e] = input[e] @ weight[e]`: `[E, N,
    out]`. A batched GEMM. The experts' MLPs have no biases (Mixtral's
    have none), so an empty row of the buffer stays zero through them.

    ```mlir
    %h = triax.expert_linear %buf, %w1 : (tensor<4x16x16xf32>, tensor<4x16x32xf32>) -> tensor<4x16x32xf32>
    ```
  }];
  let arguments = (ins Triax_FloatTensor:$input, Triax_FloatTensor:$weight,
                       UnitAttr:$transpose_weight);
  let results = (outs Triax_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Backward ops
//===----------------------------------------------------------------------===//

def Triax_MoERouteGradOp : Triax_Op<"moe_route_grad", [Pure]> {
  let summary = "Gradient of moe_route with respect to the router logits";
  let description = [{
    Recomputes the probabilities from `logits` and, with the forward's
    `experts`, takes the gradients of the gates (`gates_grad [B, S, k]`)
    and of the auxiliary loss (`aux_grad`, a scalar) back through the
    renormalization and the softmax. The routing itself (which experts,
    which rows) is piecewise constant: no gradient.
  }];
  let arguments = (ins Triax_FloatTensor:$logits, Triax_I32Tensor:$experts,
                       Triax_FloatTensor:$gates_grad,
                       0DTensorOf<[F32]>:$aux_grad, F64Attr:$aux_coeff,
                       UnitAttr:$renormalize);
  let results = (outs Triax_FloatTensor:$logits_grad);
  let assemblyFormat = [{
    $logits `,` $experts `,` $gates_grad `,` $aux_grad attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Triax_MoEGatesGradOp : Triax_Op<"moe_gates_grad", [Pure]> {
  let summary = "Gradient of the gates of a moe_combine or moe_dispatch";
  let description = [{
    `result[b, s, j] = sum over h of tokens[b, s, h] * buffer[e, b*C + c, h]`
    for `slots[b, s, j] = e*C + c`, 0 for a dropped choice. For a combine,
    `tokens` is the gradient of its result and `buffer` its input; for a
    weighted dispatch, `tokens` is its input and `buffer` the gradient of
    its result.
  }];
  let arguments = (ins Triax_FloatTensor:$tokens, Triax_FloatTensor:$buffer,
                       Triax_I32Tensor:$slots);
  let results = (outs Triax_FloatTensor:$result);
  let assemblyFormat = [{
    $tokens `,` $buffer `,` $slots attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Triax_ExpertLinearWeightGradOp : Triax_Op<"expert_linear_weight_grad", [Pure, DeclareOpInterfaceMethods<CostOpInterface, ["getResultStorage"]>]> {
  let summary = "Gradient of an expert_linear's weights: x[e]^T dy[e] per expert";
  let description = [{
    `dW[e] = input[e]^T @ result_grad[e]` (`[E, in, out]`), or its
    transpose per expert with `transpose_weight` (`[E, out, in]`). Where
    its only reader adds it to the parameter's gradient, the batched GEMM
    adds into the gradient buffer itself (beta = 1), as
    `triax.linear_weight_grad`'s does: no `[E, in, out]` buffer per linear
    until the backward's accumulation. `scale` (> 0, default 1) multiplies
    the product (the GEMM's alpha): expert parallelism's 1/ep
    (`dist.grad_scale`, which `triax-autodiff` folds in here rather than
    multiplying a copy of the gradient).
  }];
  let arguments = (ins Triax_FloatTensor:$input, Triax_FloatTensor:$result_grad,
                       UnitAttr:$transpose_weight, OptionalAttr<F64Attr>:$scale);
  let results = (outs Triax_FloatTensor:$weight_grad);
  let assemblyFormat = [{
    $input `,` $result_grad attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

#endif // TRIAX_DIALECT_TRIAX_IR_TRIAXMOEOPS_TD
