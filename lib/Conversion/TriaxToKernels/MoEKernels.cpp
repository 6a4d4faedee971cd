//===- MoEKernels.cpp - mixture-of-experts routing, dispatch, experts -----===//
//
// The router is three small kernels: per token (softmax over the experts,
// top-k by repeated arg-max, the gates), per sequence (the capacity rows
// handed out in order: first choices, then second ones; and the sequence's
// load-balancing term), and one iteration summing the terms. The dispatch,
// the combine and their gradients are gathers through the routing's two
// index maps (TriaxMoEOps.td): every iteration writes its own element, so
// they are parallel loops on any target, and a sum over a token's choices is
// taken in choice order (the same bits on every run). The experts' matrix
// products are the runtime's batched GEMM, one batch entry per expert.
//
//===----------------------------------------------------------------------===//

#include "KernelBuilder.h"
#include "triax/Conversion/RuntimeABI.h"

#include "triax/Dialect/Triax/IR/Triax.h"

#include <limits>

using namespace mlir;
using namespace mlir::triax;
using namespace mlir::triax::kernels;

namespace {

Value toI32(KernelBuilder &k, Value index) {
  return arith::IndexCastOp::create(k.builder(), k.getLoc(),
                                    k.builder().getI32Type(), index);
}

Value isNonNegative(KernelBuilder &k, Value i32) {
  return k.cmpi(arith::CmpIPredicate::sge, i32, k.i32(0));
}

Value remui(KernelBuilder &k, Value x, Value y) {
  return arith::RemUIOp::create(k.builder(), k.getLoc(), x, y);
}

/// A routed row `slot` = e*C + c of sequence b (an i32, -1 when dropped):
/// whether it is a row, and its indices [e, b*C + c] in the expert buffer
/// (row 0 of expert 0 when it is not).
struct Row {
  Value valid, expert, row;
};
Row bufferRow(KernelBuilder &k, Value slot, Value b, int64_t capacity) {
  Value valid = isNonNegative(k, slot);
  Value index = k.toIndex(k.select(valid, slot, k.i32(0)));
  Value c = k.index(capacity);
  return {valid, k.divui(index, c), k.addi(k.muli(b, c), remui(k, index, c))};
}

/// The softmax of logits[b, s, :] over `experts`: its maximum and the sum
/// of exp(l - max), and p(e).
struct Softmax {
  Value max, sum;
  Value prob(KernelBuilder &k, Value logits, ValueRange bs, Value e) const {
    Value l = k.load(logits, {bs[0], bs[1], e});
    return k.div(k.exp(k.sub(l, max)), sum);
  }
};
Softmax softmax(KernelBuilder &k, Value logits, ValueRange bs,
                int64_t experts) {
  Value max =
      k.reduce(experts, {k.f32(-std::numeric_limits<float>::infinity())},
               [&](KernelBuilder &k, Value e, ValueRange acc) {
                 return SmallVector<Value>{
                     k.max(acc[0], k.load(logits, {bs[0], bs[1], e}))};
               })[0];
  Value sum = k.reduce(
      experts, {k.f32(0.0)}, [&](KernelBuilder &k, Value e, ValueRange acc) {
        Value l = k.load(logits, {bs[0], bs[1], e});
        return SmallVector<Value>{k.add(acc[0], k.exp(k.sub(l, max)))};
      })[0];
  return {max, sum};
}

/// Per token: the top-k experts by repeated arg-max over the logits (the
/// strictly larger wins: the lower index on a tie), their probabilities as
/// gates (renormalized over the k), every probability into `probs` for the
/// balancing term. Per sequence: the rows, in choice-then-token order, and
/// E/(S*k) sum_e n_e P_e. Then aux = coeff * mean over the sequences.
struct MoERouteLowering : OpConversionPattern<MoERouteOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(MoERouteOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    KernelBuilder k(rewriter, op.getLoc());
    ArrayRef<int64_t> shape = op.getLogits().getType().getShape();
    int64_t batch = shape[0], seq = shape[1], experts = shape[2];
    int64_t topK = op.getTopK(), capacity = op.getCapacity();
    Value logits = adaptor.getLogits();
    Value gates = k.alloc(op.getGates().getType());
    Value chosen = k.alloc(op.getExperts().getType());
    Value slots = k.alloc(op.getSlots().getType());
    Value assign = k.alloc(op.getAssign().getType());
    Value aux = k.alloc(op.getAux().getType());
    Type f32 = rewriter.getF32Type();
    Value probs = memref::AllocOp::create(
        rewriter, op.getLoc(), MemRefType::get({batch, seq, experts}, f32));
    Value routed = memref::AllocOp::create(
        rewriter, op.getLoc(),
        MemRefType::get({batch, experts}, rewriter.getI32Type()));
    Value terms = memref::AllocOp::create(rewriter, op.getLoc(),
                                          MemRefType::get({batch}, f32));

    k.parallel({batch, seq}, [&](KernelBuilder &k, ValueRange bs) {
      Softmax sm = softmax(k, logits, bs, experts);
      k.loop({experts}, [&](KernelBuilder &k, ValueRange e) {
        k.store(sm.prob(k, logits, bs, e[0]), probs, {bs[0], bs[1], e[0]});
      });
      SmallVector<Value> picks, picked;
      for (int64_t j = 0; j < topK; ++j) {
        auto best = k.reduce(
            experts, {k.f32(0.0), k.i32(-1)},
            [&](KernelBuilder &k, Value e, ValueRange acc) {
              Value l = k.load(logits, {bs[0], bs[1], e});
              Value e32 = toI32(k, e);
              Value better = arith::OrIOp::create(
                  k.builder(), k.getLoc(),
                  k.cmpi(arith::CmpIPredicate::slt, acc[1], k.i32(0)),
                  arith::CmpFOp::create(k.builder(), k.getLoc(),
                                        arith::CmpFPredicate::OGT, l, acc[0]));
              for (Value p : picks)
                better = arith::AndIOp::create(
                    k.builder(), k.getLoc(), better,
                    k.cmpi(arith::CmpIPredicate::ne, e32, p));
              return SmallVector<Value>{k.select(better, l, acc[0]),
                                        k.select(better, e32, acc[1])};
            });
        picks.push_back(best[1]);
        picked.push_back(k.load(probs, {bs[0], bs[1], k.toIndex(best[1])}));
      }
      Value total = picked[0];
      for (int64_t j = 1; j < topK; ++j)
        total = k.add(total, picked[j]);
      for (int64_t j = 0; j < topK; ++j) {
        Value gate = op.getRenormalize() ? k.div(picked[j], total) : picked[j];
        k.store(gate, gates, {bs[0], bs[1], k.index(j)});
        k.store(picks[j], chosen, {bs[0], bs[1], k.index(j)});
      }
    });

    double termScale =
        double(experts) / (double(seq) * double(topK) * double(seq));
    k.parallel({batch}, [&](KernelBuilder &k, ValueRange b) {
      k.loop({experts * capacity}, [&](KernelBuilder &k, ValueRange r) {
        k.store(k.i32(-1), assign, {b[0], r[0]});
      });
      k.loop({experts}, [&](KernelBuilder &k, ValueRange e) {
        k.store(k.i32(0), routed, {b[0], e[0]});
      });
      k.loop({topK, seq}, [&](KernelBuilder &k, ValueRange js) {
        Value j = js[0], s = js[1];
        Value e = k.toIndex(k.load(chosen, {b[0], s, j}));
        Value c = k.load(routed, {b[0], e});
        k.store(arith::AddIOp::create(k.builder(), k.getLoc(), c, k.i32(1)),
                routed, {b[0], e});
        Value keep = k.cmpi(arith::CmpIPredicate::slt, c, k.i32(capacity));
        Value row = k.addi(k.muli(e, k.index(capacity)), k.toIndex(c));
        k.store(k.select(keep, toI32(k, row), k.i32(-1)), slots, {b[0], s, j});
        auto ifKeep = scf::IfOp::create(k.builder(), k.getLoc(), keep,
                                        /*withElseRegion=*/false);
        OpBuilder::InsertionGuard guard(k.builder());
        k.builder().setInsertionPointToStart(ifKeep.thenBlock());
        Value choice = k.addi(k.muli(s, k.index(topK)), j);
        k.store(toI32(k, choice), assign, {b[0], row});
      });
      Value term = k.reduce(
          experts, {k.f32(0.0)},
          [&](KernelBuilder &k, Value e, ValueRange acc) {
            Value mean = k.reduce(seq, {k.f32(0.0)},
                                  [&](KernelBuilder &k, Value s, ValueRange p) {
                                    return SmallVector<Value>{k.add(
                                        p[0], k.load(probs, {b[0], s, e}))};
                                  })[0];
            Value n = arith::SIToFPOp::create(k.builder(), k.getLoc(),
                                              k.builder().getF32Type(),
                                              k.load(routed, {b[0], e}));
            return SmallVector<Value>{k.add(acc[0], k.mul(n, mean))};
          })[0];
      k.store(k.mul(term, k.f32(termScale)), terms, b[0]);
    });

    double coeff = op.getAuxCoeff().convertToDouble() / double(batch);
    // One iteration, storing through the 0-d result's one-element view at
    // the nest's variable (each iteration its own element: a GPU kernel).
    Value auxElement = k.flat(aux);
    k.parallel({1}, [&](KernelBuilder &k, ValueRange one) {
      Value sum = k.reduce(
          batch, {k.f32(0.0)}, [&](KernelBuilder &k, Value b, ValueRange acc) {
            return SmallVector<Value>{k.add(acc[0], k.load(terms, b))};
          })[0];
      k.store(k.mul(sum, k.f32(coeff)), auxElement, one);
    });
    // The runtime's counters (trx_moe_counters): the choices the capacity
    // dropped, sum over (b, e) of max(n[b, e] - C, 0), and all B S k. A
    // route whose balancing loss nothing reads is a recomputation's copy
    // (triax-recompute reruns it in the backward for its slots): it repeats
    // a counted decision and adds nothing.
    if (!op.getAux().use_empty()) {
      Value counters = memref::CastOp::create(
          rewriter, op.getLoc(), MemRefType::get({TRX_MOE_NCOUNTERS}, f32),
          func::CallOp::create(
              rewriter, op.getLoc(), ::triax::rt::kMoECounters,
              TypeRange{MemRefType::get({ShapedType::kDynamic}, f32)},
              ValueRange{})
              .getResult(0));
      // One iteration per counter, each adding to its own element.
      k.parallel({TRX_MOE_NCOUNTERS}, [&](KernelBuilder &k, ValueRange c) {
        Value dropped = k.reduce(
            batch, {k.i32(0)}, [&](KernelBuilder &k, Value b, ValueRange acc) {
              return k.reduce(
                  experts, {acc[0]},
                  [&](KernelBuilder &k, Value e, ValueRange acc) {
                    Value over = arith::SubIOp::create(k.builder(), k.getLoc(),
                                                       k.load(routed, {b, e}),
                                                       k.i32(capacity));
                    return SmallVector<Value>{arith::AddIOp::create(
                        k.builder(), k.getLoc(), acc[0],
                        arith::MaxSIOp::create(k.builder(), k.getLoc(), over,
                                               k.i32(0)))};
                  });
            })[0];
        Value droppedF = arith::SIToFPOp::create(
            k.builder(), k.getLoc(), k.builder().getF32Type(), dropped);
        Value isDropped =
            k.cmpi(arith::CmpIPredicate::eq, c[0], k.index(TRX_MOE_DROPPED));
        Value add =
            k.select(isDropped, droppedF, k.f32(double(batch * seq * topK)));
        k.store(k.add(k.load(counters, c[0]), add), counters, c[0]);
      });
    }
    rewriter.replaceOp(op, {gates, chosen, slots, assign, aux});
    return success();
  }
};

/// dlogits[b, s, :] = p * (dp - sum_e p_e dp_e) with dp_e the gradient
/// reaching p_e: from the gates (through the renormalization:
/// dp_sel_m = (dg_m - sum_j dg_j g_j) / sum_j p_sel_j) and from the
/// balancing term (daux * coeff * E / (B S k S) * n[b, e]).
struct MoERouteGradLowering : OpConversionPattern<MoERouteGradOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(MoERouteGradOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    KernelBuilder k(rewriter, op.getLoc());
    ArrayRef<int64_t> shape = op.getLogits().getType().getShape();
    int64_t batch = shape[0], seq = shape[1], experts = shape[2];
    int64_t topK = op.getExperts().getType().getDimSize(2);
    Value logits = adaptor.getLogits(), chosen = adaptor.getExperts();
    Value dgates = adaptor.getGatesGrad();
    Value out = k.alloc(op.getType());
    Value routed = memref::AllocOp::create(
        rewriter, op.getLoc(),
        MemRefType::get({batch, experts}, rewriter.getF32Type()));
    // n[b, e]: one iteration per (sequence, expert) counting its choices
    // (each writes its own element: parallel on any target).
    k.parallel({batch, experts}, [&](KernelBuilder &k, ValueRange be) {
      Value e32 = toI32(k, be[1]);
      Value n = k.reduce(seq * topK, {k.f32(0.0)},
                         [&](KernelBuilder &k, Value sj, ValueRange acc) {
                           Value kk = k.index(topK);
                           Value e = k.load(chosen, {be[0], k.divui(sj, kk),
                                                     remui(k, sj, kk)});
                           Value hit = k.cmpi(arith::CmpIPredicate::eq, e, e32);
                           return SmallVector<Value>{k.add(
                               acc[0], k.select(hit, k.f32(1.0), k.f32(0.0)))};
                         })[0];
      k.store(n, routed, be);
    });
    double auxScale =
        op.getAuxCoeff().convertToDouble() * double(experts) /
        (double(batch) * double(seq) * double(topK) * double(seq));
    Value daux = adaptor.getAuxGrad();
    k.parallel({batch, seq}, [&](KernelBuilder &k, ValueRange bs) {
      Softmax sm = softmax(k, logits, bs, experts);
      SmallVector<Value> picks, picked, dg;
      Value total = k.f32(0.0);
      for (int64_t j = 0; j < topK; ++j) {
        Value jj = k.index(j);
        picks.push_back(k.load(chosen, {bs[0], bs[1], jj}));
        picked.push_back(sm.prob(k, logits, bs, k.toIndex(picks.back())));
        dg.push_back(k.load(dgates, {bs[0], bs[1], jj}));
        total = j == 0 ? picked[0] : k.add(total, picked[j]);
      }
      SmallVector<Value> dpicked(dg);
      if (op.getRenormalize()) {
        Value inner = k.f32(0.0);
        for (int64_t j = 0; j < topK; ++j)
          inner = k.add(inner, k.mul(dg[j], k.div(picked[j], total)));
        for (int64_t j = 0; j < topK; ++j)
          dpicked[j] = k.div(k.sub(dg[j], inner), total);
      }
      Value scale = k.mul(k.load(daux, {}), k.f32(auxScale));
      auto dprob = [&](KernelBuilder &k, Value e) {
        Value d = k.mul(scale, k.load(routed, {bs[0], e}));
        Value e32 = toI32(k, e);
        for (int64_t j = 0; j < topK; ++j)
          d = k.add(d, k.select(k.cmpi(arith::CmpIPredicate::eq, e32, picks[j]),
                                dpicked[j], k.f32(0.0)));
        return d;
      };
      Value dot = k.reduce(experts, {k.f32(0.0)},
                           [&](KernelBuilder &k, Value e, ValueRange acc) {
                             Value p = sm.prob(k, logits, bs, e);
                             return SmallVector<Value>{
                                 k.add(acc[0], k.mul(p, dprob(k, e)))};
                           })[0];
      k.loop({experts}, [&](KernelBuilder &k, ValueRange e) {
        Value p = sm.prob(k, logits, bs, e[0]);
        k.store(k.mul(p, k.sub(dprob(k, e[0]), dot)), out,
                {bs[0], bs[1], e[0]});
      });
    });
    rewriter.replaceOp(op, out);
    return success();
  }
};

/// buffer[e, b*C + c, h] = tokens[b, s, h] (* gates[b, s, j]) for
/// assign[b, e*C + c] = s*k + j, 0 for an empty row.
struct MoEDispatchLowering : OpConversionPattern<MoEDispatchOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(MoEDispatchOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    KernelBuilder k(rewriter, op.getLoc());
    ArrayRef<int64_t> buf = op.getType().getShape();
    int64_t batch = op.getInput().getType().getDimSize(0);
    int64_t experts = buf[0], capacity = buf[1] / batch, hidden = buf[2];
    int64_t topK = op.getSlots().getType().getDimSize(2);
    Value x = adaptor.getInput(), assign = adaptor.getAssign();
    Value gates = adaptor.getGates();
    Value out = k.alloc(op.getType());
    k.parallel(
        {experts, buf[1], hidden}, [&](KernelBuilder &k, ValueRange erh) {
          Value c = k.index(capacity);
          Value b = k.divui(erh[1], c);
          Value row = k.addi(k.muli(erh[0], c), remui(k, erh[1], c));
          Value choice = k.load(assign, {b, row});
          Value valid = isNonNegative(k, choice);
          Value index = k.toIndex(k.select(valid, choice, k.i32(0)));
          Value s = k.divui(index, k.index(topK));
          Value v = k.load(x, {b, s, erh[2]});
          if (gates)
            v = k.mul(v, k.load(gates, {b, s, remui(k, index, k.index(topK))}));
          k.store(k.select(valid, v, k.f32(0.0)), out, erh);
        });
    rewriter.replaceOp(op, out);
    return success();
  }
};

/// result[b, s, h] = sum over the choices j, in order, of
/// (gates[b, s, j] *) buffer[row of slots[b, s, j], h].
struct MoECombineLowering : OpConversionPattern<MoECombineOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(MoECombineOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    KernelBuilder k(rewriter, op.getLoc());
    ArrayRef<int64_t> shape = op.getType().getShape();
    int64_t capacity = op.getInput().getType().getDimSize(1) / shape[0];
    int64_t topK = op.getSlots().getType().getDimSize(2);
    Value buffer = adaptor.getInput(), slots = adaptor.getSlots();
    Value gates = adaptor.getGates();
    Value out = k.alloc(op.getType());
    k.parallel(shape, [&](KernelBuilder &k, ValueRange bsh) {
      Value sum = k.f32(0.0);
      for (int64_t j = 0; j < topK; ++j) {
        Value jj = k.index(j);
        Row r =
            bufferRow(k, k.load(slots, {bsh[0], bsh[1], jj}), bsh[0], capacity);
        Value v = k.load(buffer, {r.expert, r.row, bsh[2]});
        if (gates)
          v = k.mul(v, k.load(gates, {bsh[0], bsh[1], jj}));
        sum = k.add(sum, k.select(r.valid, v, k.f32(0.0)));
      }
      k.store(sum, out, bsh);
    });
    rewriter.replaceOp(op, out);
    return success();
  }
};

/// result[b, s, j] = tokens[b, s, :] . buffer[row of slots[b, s, j], :].
struct MoEGatesGradLowering : OpConversionPattern<MoEGatesGradOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(MoEGatesGradOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    KernelBuilder k(rewriter, op.getLoc());
    ArrayRef<int64_t> tokens = op.getTokens().getType().getShape();
    int64_t capacity = op.getBuffer().getType().getDimSize(1) / tokens[0];
    Value x = adaptor.getTokens(), buffer = adaptor.getBuffer();
    Value slots = adaptor.getSlots();
    Value out = k.alloc(op.getType());
    k.parallel(op.getType().getShape(), [&](KernelBuilder &k, ValueRange bsj) {
      Row r = bufferRow(k, k.load(slots, bsj), bsj[0], capacity);
      Value dot =
          k.reduce(tokens[2], {k.f32(0.0)},
                   [&](KernelBuilder &k, Value h, ValueRange acc) {
                     Value t = k.load(x, {bsj[0], bsj[1], h});
                     Value v = k.load(buffer, {r.expert, r.row, h});
                     return SmallVector<Value>{k.add(acc[0], k.mul(t, v))};
                   })[0];
      k.store(k.select(r.valid, dot, k.f32(0.0)), out, bsj);
    });
    rewriter.replaceOp(op, out);
    return success();
  }
};

/// y[e] = x[e] W[e]: the runtime's batched GEMM over the experts.
struct ExpertLinearLowering : OpConversionPattern<ExpertLinearOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(ExpertLinearOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    KernelBuilder k(rewriter, op.getLoc());
    Value out = k.alloc(op.getType());
    if (failed(k.gemmBatched(adaptor.getInput(), adaptor.getWeight(), out,
                             /*transA=*/false,
                             /*transB=*/op.getTransposeWeight())))
      return failure();
    rewriter.replaceOp(op, out);
    return success();
  }
};

/// dW[e] = scale x[e]^T dy[e] ([in, out]) or scale dy[e]^T x[e] ([out,
/// in]), scale the GEMM's alpha. With `params` (accumulate-in-gemm), when
/// dW's only user adds it to the parameter's gradient buffer, the batched
/// GEMM adds into that buffer (beta = 1), as LinearWeightGradLowering does.
struct ExpertLinearWeightGradLowering
    : OpConversionPattern<ExpertLinearWeightGradOp> {
  ExpertLinearWeightGradLowering(TypeConverter &converter, MLIRContext *ctx,
                                 const ParamIndex *params)
      : OpConversionPattern(converter, ctx), params(params) {}

  LogicalResult
  matchAndRewrite(ExpertLinearWeightGradOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    KernelBuilder k(rewriter, op.getLoc());
    Value x = adaptor.getInput(), dy = adaptor.getResultGrad();
    bool transposed = op.getTransposeWeight();
    GradientBuffers made(k, *getTypeConverter(), params, {op});
    Value dw = made.buffers[0];
    if (failed(k.gemmBatched(transposed ? dy : x, transposed ? x : dy, dw,
                             /*transA=*/true, /*transB=*/false,
                             /*alpha=*/op.getScaleAttr()
                                 ? op.getScaleAttr().getValueAsDouble()
                                 : 1.0,
                             /*beta=*/made.accumulate() ? 1.0 : 0.0)))
      return failure();
    made.eraseAccumulations(rewriter);
    rewriter.replaceOp(op, dw);
    return success();
  }

  const ParamIndex *params;
};

} // namespace

void mlir::triax::kernels::populateMoEPatterns(TypeConverter &converter,
                                               RewritePatternSet &patterns,
                                               const ParamIndex *params) {
  patterns.add<MoERouteLowering, MoERouteGradLowering, MoEDispatchLowering,
               MoECombineLowering, MoEGatesGradLowering, ExpertLinearLowering>(
      converter, patterns.getContext());
  patterns.add<ExpertLinearWeightGradLowering>(converter, patterns.getContext(),
                                               params);
}
