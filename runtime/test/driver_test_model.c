/*===- driver_test_model.c - A hand-written test model for the driver ---===*\
|*                                                                          *|
|* TEST HARNESS, not a Triax model: it stands in for the code the compiler  *|
|* generates, so that trx_train_main (the training driver) can be tested    *|
|* without the compiler. It plays the compiled code's part exactly: its     *|
|* parameters and AdamW moments are the runtime's buffers, reached only     *|
|* through _mlir_ciface_trx_state_1d/2d, and so are its gradient buffers;   *|
|* its matrix products go through _mlir_ciface_trx_sgemm; its temporaries  *|
|* come from                                                                *|
|* _mlir_memref_to_llvm_(aligned_)alloc/free (counted as "activ").          *|
|*                                                                          *|
|* The model is a byte-level bigram softmax regression:                     *|
|*   x[n]      = emb.weight[tok[n]] * emb.gain                  [N, D]      *|
|*   logits    = x @ head.weight + head.bias                    [N, V]      *|
|*   loss      = mean_n (logsumexp(logits[n]) - logits[n, tgt[n]])          *|
|* with N = micro_batch * seq, D = 32, V = 256, and the backward written by *|
|* hand. Like compiled code it is split in two entry points:                *|
|*  - forward_backward adds the gradients of one micro-batch to the         *|
|*    gradient buffers (zeroed by the driver before each step) and its      *|
|*    mean loss to *loss_acc (written by a step's first call instead:       *|
|*    trx_first_micro_batch());                                             *|
|*  - optimizer_step is the Triax AdamW (test/reference/README.md) on the   *|
|*    buffers times grad_scale: global norm n; if grad_clip > 0 and         *|
|*    n > grad_clip every gradient is scaled by grad_clip / (n + 1e-6);     *|
|*    m, v updates; bias correction with the 1-based step;                  *|
|*    p -= lr (mhat / (sqrt(vhat) + eps) + wd p), wd only for parameters    *|
|*    with decay. It writes n, before clipping, to *grad_norm.              *|
|* (On the CPU the runtime's buffers are host memory, so the harness reads  *|
|* and writes them directly, as the compiled CPU code does.)                *|
|*                                                                          *|
|* Usage: triax-rt-driver-test [training flags]   (see --help)              *|
|* For the driver's error tests, these environment variables change the     *|
|* descriptor before trx_train_main runs:                                   *|
|*   TRX_TEST_GLOBAL_BATCH=N   global_batch (default = micro_batch)         *|
|*   TRX_TEST_VOCAB=N          vocab (default 256; the shapes stay 256)     *|
|*   TRX_TEST_NO_FORWARD=1     no forward entry point                       *|
|*   TRX_TEST_HIDDEN=N         D (default 32): other parameter shapes       *|
|*   TRX_TEST_NO_BIAS=1        no head.bias parameter (3 parameters)        *|
\*===----------------------------------------------------------------------===*/

#include "triax_rt.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { V = 256, MICRO_BATCH = 4, SEQ = 32, MAX_PARAMS = 4 };
enum { P_EMB = 0, P_GAIN = 1, P_HEAD = 2, P_BIAS = 3 };

/* Filled in main(); read by the entry points below. */
static int64_t D = 32;
static int numParams = MAX_PARAMS; /* 3 without head.bias */
static trx_param_desc kParams[MAX_PARAMS];
static trx_model_desc desc;

/* A view of one state buffer of parameter p, whatever its rank. */
typedef struct {
  float *data;
  int64_t rows, cols; /* rows = 1 for rank 1 */
} View;

static View state(int32_t kind, int64_t p) {
  View v;
  if (kParams[p].rank == 2) {
    trx_memref_f32_2d m;
    _mlir_ciface_trx_state_2d(&m, kind, p);
    v.data = m.aligned + m.offset;
    v.rows = m.sizes[0];
    v.cols = m.sizes[1];
  } else {
    trx_memref_f32_1d m;
    _mlir_ciface_trx_state_1d(&m, kind, p);
    v.data = m.aligned + m.offset;
    v.rows = 1;
    v.cols = m.sizes[0];
  }
  return v;
}

static trx_memref_f32_2d matrix(float *data, int64_t rows, int64_t cols) {
  trx_memref_f32_2d m;
  m.allocated = data;
  m.aligned = data;
  m.offset = 0;
  m.sizes[0] = rows;
  m.sizes[1] = cols;
  m.strides[0] = cols;
  m.strides[1] = 1;
  return m;
}

static float *temp(size_t count) {
  return (float *)_mlir_memref_to_llvm_alloc(count * sizeof(float));
}

/* Forward pass: fills x [N, D] and logits [N, V]; returns the mean loss and,
 * when dlogits is not NULL, stores (softmax - onehot) / N there. */
static float forwardPass(const int32_t *tokens, const int32_t *targets,
                         int64_t N, float *x, float *logits, float *dlogits) {
  View emb = state(TRX_STATE_PARAM, P_EMB),
       gain = state(TRX_STATE_PARAM, P_GAIN),
       head = state(TRX_STATE_PARAM, P_HEAD);
  const float *bias =
      numParams > P_BIAS ? state(TRX_STATE_PARAM, P_BIAS).data : NULL;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t d = 0; d < D; ++d)
      x[n * D + d] = emb.data[tokens[n] * D + d] * gain.data[d];
  trx_memref_f32_2d X = matrix(x, N, D), W = matrix(head.data, D, V),
                    L = matrix(logits, N, V);
  _mlir_ciface_trx_sgemm(&X, &W, &L, 0, 0, 1.0f, 0.0f);
  double total = 0;
  for (int64_t n = 0; n < N; ++n) {
    float *row = logits + n * V;
    float mx = -INFINITY;
    for (int64_t v = 0; v < V; ++v) {
      if (bias)
        row[v] += bias[v];
      if (row[v] > mx)
        mx = row[v];
    }
    double sum = 0;
    for (int64_t v = 0; v < V; ++v)
      sum += exp((double)(row[v] - mx));
    double lse = (double)mx + log(sum);
    total += lse - (double)row[targets[n]];
    if (dlogits) {
      float *drow = dlogits + n * V;
      for (int64_t v = 0; v < V; ++v)
        drow[v] = (float)(exp((double)row[v] - lse) / (double)N);
      drow[targets[n]] -= 1.0f / (float)N;
    }
  }
  return (float)(total / (double)N);
}

static float testForward(const int32_t *tokens, const int32_t *targets) {
  int64_t N = desc.micro_batch * desc.seq;
  float *x = temp((size_t)(N * D));
  float *logits = temp((size_t)(N * V));
  float loss = forwardPass(tokens, targets, N, x, logits, NULL);
  _mlir_memref_to_llvm_free(logits);
  _mlir_memref_to_llvm_free(x);
  return loss;
}

/* forward_backward: the loss of one micro-batch is added to *loss_acc (the
 * step's first call, trx_first_micro_batch(), writes it); its gradients are
 * added to the gradient buffers (TRX_STATE_GRAD), which the driver zeroes
 * before the first micro-batch of a step. */
static void testForwardBackward(const int32_t *tokens, const int32_t *targets,
                                float *loss_acc) {
  int64_t N = desc.micro_batch * desc.seq;
  float *x = temp((size_t)(N * D));
  float *logits = (float *)_mlir_memref_to_llvm_aligned_alloc(
      128, (size_t)(N * V) * sizeof(float));
  float *dlogits = temp((size_t)(N * V));
  float *dx = temp((size_t)(N * D));

  float loss = forwardPass(tokens, targets, N, x, logits, dlogits);

  View emb = state(TRX_STATE_PARAM, P_EMB),
       gain = state(TRX_STATE_PARAM, P_GAIN),
       head = state(TRX_STATE_PARAM, P_HEAD);
  View gEmb = state(TRX_STATE_GRAD, P_EMB),
       gGain = state(TRX_STATE_GRAD, P_GAIN),
       gHead = state(TRX_STATE_GRAD, P_HEAD);
  /* grad head.weight [D, V] += x^T @ dlogits (beta 1 accumulates);
   * dx [N, D] = dlogits @ head^T. */
  trx_memref_f32_2d X = matrix(x, N, D), DL = matrix(dlogits, N, V),
                    GW = matrix(gHead.data, D, V), W = matrix(head.data, D, V),
                    DX = matrix(dx, N, D);
  _mlir_ciface_trx_sgemm(&X, &DL, &GW, 1, 0, 1.0f, 1.0f);
  _mlir_ciface_trx_sgemm(&DL, &W, &DX, 0, 1, 1.0f, 0.0f);
  if (numParams > P_BIAS) {
    View gBias = state(TRX_STATE_GRAD, P_BIAS);
    for (int64_t n = 0; n < N; ++n)
      for (int64_t v = 0; v < V; ++v)
        gBias.data[v] += dlogits[n * V + v];
  }
  for (int64_t n = 0; n < N; ++n)
    for (int64_t d = 0; d < D; ++d) {
      float e = emb.data[tokens[n] * D + d];
      gGain.data[d] += dx[n * D + d] * e;
      gEmb.data[tokens[n] * D + d] += dx[n * D + d] * gain.data[d];
    }

  _mlir_memref_to_llvm_free(dx);
  _mlir_memref_to_llvm_free(dlogits);
  _mlir_memref_to_llvm_free(logits);
  _mlir_memref_to_llvm_free(x);
  loss_acc[0] = (trx_first_micro_batch() ? 0.0f : loss_acc[0]) + loss;
}

/* optimizer_step: AdamW from the gradient buffers scaled by grad_scale, with
 * global-norm clipping; writes the norm of the scaled gradients to
 * *grad_norm. */
static void testOptimizerStep(float lr, int64_t step, float grad_scale,
                              float *grad_norm) {
  double sq = 0;
  for (int p = 0; p < numParams; ++p) {
    View g = state(TRX_STATE_GRAD, p);
    for (int64_t i = 0; i < g.rows * g.cols; ++i) {
      double gi = (double)(g.data[i] * grad_scale);
      sq += gi * gi;
    }
  }
  float norm = (float)sqrt(sq);
  float scale = grad_scale;
  if (desc.grad_clip > 0 && norm > desc.grad_clip)
    scale *= desc.grad_clip / (norm + 1e-6f);
  float b1 = desc.beta1, b2 = desc.beta2;
  float c1 = 1.0f - powf(b1, (float)step), c2 = 1.0f - powf(b2, (float)step);
  for (int p = 0; p < numParams; ++p) {
    View w = state(TRX_STATE_PARAM, p), m = state(TRX_STATE_EXP_AVG, p),
         v = state(TRX_STATE_EXP_AVG_SQ, p), g = state(TRX_STATE_GRAD, p);
    float wd = kParams[p].decay ? desc.weight_decay : 0.0f;
    for (int64_t i = 0; i < w.rows * w.cols; ++i) {
      float gi = g.data[i] * scale;
      m.data[i] = b1 * m.data[i] + (1.0f - b1) * gi;
      v.data[i] = b2 * v.data[i] + (1.0f - b2) * gi * gi;
      float mhat = m.data[i] / c1, vhat = v.data[i] / c2;
      w.data[i] -= lr * (mhat / (sqrtf(vhat) + desc.eps) + wd * w.data[i]);
    }
  }
  grad_norm[0] = norm;
}

static int64_t envInt(const char *name, int64_t dflt) {
  const char *s = getenv(name);
  return s && *s ? (int64_t)strtoll(s, NULL, 10) : dflt;
}

static void setParam(int i, const char *name, int32_t rank, int64_t d0,
                     int64_t d1, int32_t init, float std, int32_t decay) {
  trx_param_desc *p = &kParams[i];
  p->name = name;
  p->rank = rank;
  p->shape[0] = d0;
  p->shape[1] = d1;
  p->init = init;
  p->init_std = std;
  p->decay = decay;
}

int main(int argc, char **argv) {
  D = envInt("TRX_TEST_HIDDEN", 32);
  if (D < 1 || D > 4096) {
    fprintf(stderr, "TRX_TEST_HIDDEN must be in [1, 4096]\n");
    return 2;
  }
  numParams = envInt("TRX_TEST_NO_BIAS", 0) ? 3 : 4;
  setParam(P_EMB, "emb.weight", 2, V, D, TRX_INIT_NORMAL, 0.02f, 1);
  setParam(P_GAIN, "emb.gain", 1, D, 0, TRX_INIT_ONES, 0.0f, 0);
  setParam(P_HEAD, "head.weight", 2, D, V, TRX_INIT_NORMAL, 0.02f, 1);
  setParam(P_BIAS, "head.bias", 1, V, 0, TRX_INIT_ZEROS, 0.0f, 0);
  desc.model_name = "driver-test-bigram";
  desc.num_params = numParams;
  desc.params = kParams;
  desc.micro_batch = MICRO_BATCH;
  desc.global_batch = envInt("TRX_TEST_GLOBAL_BATCH", MICRO_BATCH);
  desc.seq = SEQ;
  desc.vocab = envInt("TRX_TEST_VOCAB", V);
  desc.lr = 1e-2f;
  desc.beta1 = 0.9f;
  desc.beta2 = 0.95f;
  desc.eps = 1e-8f;
  desc.weight_decay = 0.1f;
  desc.grad_clip = 1.0f;
  desc.forward_backward = testForwardBackward;
  desc.optimizer_step = testOptimizerStep;
  desc.forward = envInt("TRX_TEST_NO_FORWARD", 0) ? NULL : testForward;
  return trx_train_main(argc, argv, &desc);
}
