#!/usr/bin/env python3
"""Independent numpy reference for the Triax GPT model and its AdamW training.

Written from the Triax model spec, not from the compiler, so the compiler's
output can be checked against it.  Forward and backward are hand-written
(no autograd); test_gradcheck.py checks the backward against central finite
differences.

Model (weights are [in, out], y = x @ W + b):
    x = wte[tokens] + wpe[0:T]
    per layer i:
        h = LN(x; h.i.ln_1)                       eps 1e-5, biased variance
        q, k, v = h @ Wq + bq, h @ Wk + bk, h @ Wv + bv
        heads: head j = columns j*d .. (j+1)*d, d = H / heads
        y = causal_softmax(q k^T / sqrt(d)) v, heads concatenated
        x = x + y @ W_attn_proj + b_attn_proj
        h = LN(x; h.i.ln_2)
        x = x + gelu_tanh(h @ W_fc + b_fc) @ W_mlp_proj + b_mlp_proj
            (with --experts E: x = x + MoE(h), moe_numpy.py, whose
            load-balancing loss aux_i is added to the loss)
    h = LN(x; ln_f);  logits = h @ wte^T (tied head, no bias)
    loss = mean over the B*T positions of cross-entropy(logits, targets)
           (+ the sum of the layers' aux_i)

AdamW (step t, 1-based): n = global L2 norm of all grads; if grad_clip > 0
and n > grad_clip all grads are scaled by grad_clip / (n + 1e-6);
m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2; mhat = m / (1-b1^t);
vhat = v / (1-b2^t); p -= lr * (mhat / (sqrt(vhat) + eps) + wd * p), with wd
only for parameters of rank >= 2 (wte, wpe, linear weights).  The reported
grad norm is n, before clipping.

Data: llm.c .bin token file.  Batch k starts at p = k*B*T, wrapping to 0
whenever p + B*T + 1 > ntokens (llm.c's sequential loader), i.e.
p_k = (k mod nb) * B*T with nb = floor((ntokens - 1) / (B*T)).

Run `gpt_numpy.py --help` for the CLI; see README.md.
"""

import argparse
import json
import math
import os
import sys
import tempfile
import time

# Single-threaded BLAS unless the caller says otherwise: these matrices are
# small, and on a busy 2-core machine threaded OpenBLAS was measured ~10x
# slower (281 vs 27 ms/step for the 2x64 byte model).  Must precede numpy.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_io  # noqa: E402
import llmc_bin  # noqa: E402
import moe_numpy  # noqa: E402

LN_EPS = 1e-5
GELU_C = math.sqrt(2.0 / math.pi)
CLIP_EPS = 1e-6


class RefError(Exception):
    """Reported as 'gpt_numpy: error: <message>' with exit code 1."""


# ------------------------------------------------------------------ config
class Config:
    def __init__(self, layers, hidden, heads, vocab, seq, ffn=None, experts=0,
                 top_k=2, capacity=None, aux_coeff=0.01):
        for name, val in (("layers", layers), ("hidden", hidden),
                          ("heads", heads), ("vocab", vocab), ("seq", seq)):
            if not isinstance(val, int) or val <= 0:
                raise RefError(f"--{name} must be a positive integer, got {val}")
        if hidden % heads:
            raise RefError(f"--hidden {hidden} is not divisible by --heads {heads}")
        self.layers, self.hidden, self.heads = layers, hidden, heads
        self.vocab, self.seq = vocab, seq
        self.ffn = ffn or 4 * hidden
        self.experts, self.top_k, self.aux_coeff = experts, top_k, aux_coeff
        self.capacity = capacity or seq
        if experts and not 1 <= top_k <= experts:
            raise RefError(f"--top-k must be between 1 and --experts {experts}")

    def __repr__(self):
        return (f"Config(layers={self.layers}, hidden={self.hidden}, "
                f"heads={self.heads}, vocab={self.vocab}, seq={self.seq})")


def param_shapes(cfg):
    """Canonical parameter names and shapes, in canonical order."""
    H, V, S = cfg.hidden, cfg.vocab, cfg.seq
    shapes = {"wte.weight": (V, H), "wpe.weight": (S, H)}
    for i in range(cfg.layers):
        p = f"h.{i}."
        shapes[p + "ln_1.weight"] = (H,)
        shapes[p + "ln_1.bias"] = (H,)
        for n in ("q", "k", "v"):
            shapes[p + f"attn.{n}.weight"] = (H, H)
            shapes[p + f"attn.{n}.bias"] = (H,)
        shapes[p + "attn.c_proj.weight"] = (H, H)
        shapes[p + "attn.c_proj.bias"] = (H,)
        shapes[p + "ln_2.weight"] = (H,)
        shapes[p + "ln_2.bias"] = (H,)
        F, E = cfg.ffn, cfg.experts
        if E:
            # Stacked expert weights [E, in, out], stored as their rows.
            shapes[p + "moe.router.weight"] = (H, E)
            shapes[p + "moe.experts.c_fc.weight"] = (E * H, F)
            shapes[p + "moe.experts.c_proj.weight"] = (E * F, H)
            continue
        shapes[p + "mlp.c_fc.weight"] = (H, F)
        shapes[p + "mlp.c_fc.bias"] = (F,)
        shapes[p + "mlp.c_proj.weight"] = (F, H)
        shapes[p + "mlp.c_proj.bias"] = (H,)
    shapes["ln_f.weight"] = (H,)
    shapes["ln_f.bias"] = (H,)
    return shapes


def init_params(cfg, seed):
    """Random init: N(0, 0.02) for rank>=2 tensors, ones for LayerNorm
    weights, zeros for biases.  Drawn in canonical order from
    numpy.random.default_rng(seed) in float64, returned as float32."""
    rng = np.random.default_rng(seed)
    params = {}
    for name, shape in param_shapes(cfg).items():
        if len(shape) >= 2:
            params[name] = (rng.standard_normal(shape) * 0.02).astype(np.float32)
        elif "ln_" in name and name.endswith(".weight"):
            params[name] = np.ones(shape, dtype=np.float32)
        else:
            params[name] = np.zeros(shape, dtype=np.float32)
    return params


def check_params(params, cfg, source, dtype):
    """Validate names/shapes against cfg and cast to `dtype` (new dict).

    wpe.weight may have more rows than cfg.seq (only rows 0..T-1 are used)."""
    shapes = param_shapes(cfg)
    missing = [n for n in shapes if n not in params]
    extra = sorted(n for n in params if n not in shapes)
    if missing:
        raise RefError(f"{source}: missing parameter(s) {', '.join(missing[:5])}"
                       + (" ..." if len(missing) > 5 else "")
                       + f" for {cfg}")
    if extra:
        raise RefError(f"{source}: unexpected parameter(s) {', '.join(extra[:5])}"
                       + (" ..." if len(extra) > 5 else "")
                       + f" for {cfg}")
    out = {}
    for name, shape in shapes.items():
        arr = np.asarray(params[name])
        ok = arr.shape == shape
        if name == "wpe.weight" and arr.ndim == 2:
            ok = arr.shape[1] == shape[1] and arr.shape[0] >= shape[0]
        if not ok:
            raise RefError(f"{source}: parameter {name} has shape "
                           f"{list(arr.shape)}, expected {list(shape)} for {cfg}")
        if not np.issubdtype(arr.dtype, np.floating):
            raise RefError(f"{source}: parameter {name} has non-float dtype "
                           f"{arr.dtype}")
        if not np.all(np.isfinite(arr)):
            raise RefError(f"{source}: parameter {name} contains NaN/Inf")
        out[name] = np.array(arr, dtype=dtype)
    return out


# ------------------------------------------------------------------ layers
def layernorm_fwd(x, w, b):
    mean = x.mean(axis=-1, keepdims=True)
    xc = x - mean
    var = (xc * xc).mean(axis=-1, keepdims=True)  # biased variance
    rstd = 1.0 / np.sqrt(var + LN_EPS)
    xhat = xc * rstd
    return xhat * w + b, (xhat, rstd)


def layernorm_bwd(dy, cache, w):
    xhat, rstd = cache
    dw = (dy * xhat).sum(axis=(0, 1))
    db = dy.sum(axis=(0, 1))
    dxhat = dy * w
    dx = rstd * (dxhat - dxhat.mean(axis=-1, keepdims=True)
                 - xhat * (dxhat * xhat).mean(axis=-1, keepdims=True))
    return dx, dw, db


def linear_bwd(dy, x, w):
    """y = x @ w + b  ->  (dx, dw, db)."""
    n_in, n_out = w.shape
    dw = x.reshape(-1, n_in).T @ dy.reshape(-1, n_out)
    db = dy.reshape(-1, n_out).sum(axis=0)
    dx = dy @ w.T
    return dx, dw, db


def gelu_fwd(x):
    t = np.tanh(GELU_C * (x + 0.044715 * x ** 3))
    return 0.5 * x * (1.0 + t), t


def gelu_bwd(dy, x, t):
    du = GELU_C * (1.0 + 3.0 * 0.044715 * x * x)
    return dy * (0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * du)


def split_heads(x, nh):
    B, T, H = x.shape
    return x.reshape(B, T, nh, H // nh).transpose(0, 2, 1, 3)  # B,nh,T,d


def merge_heads(x):
    B, nh, T, d = x.shape
    return x.transpose(0, 2, 1, 3).reshape(B, T, nh * d)


def attention_fwd(q, k, v, nh):
    qh, kh, vh = split_heads(q, nh), split_heads(k, nh), split_heads(v, nh)
    T, d = qh.shape[2], qh.shape[3]
    scale = 1.0 / math.sqrt(d)
    s = (qh @ kh.transpose(0, 1, 3, 2)) * scale
    causal = np.tril(np.ones((T, T), dtype=bool))
    s = np.where(causal, s, -np.inf)
    s = s - s.max(axis=-1, keepdims=True)
    p = np.exp(s)
    p = p / p.sum(axis=-1, keepdims=True)
    y = p @ vh
    return merge_heads(y), (qh, kh, vh, p, scale)


def attention_bwd(dy, cache, nh):
    qh, kh, vh, p, scale = cache
    dyh = split_heads(dy, nh)
    dp = dyh @ vh.transpose(0, 1, 3, 2)
    dvh = p.transpose(0, 1, 3, 2) @ dyh
    ds = p * (dp - (dp * p).sum(axis=-1, keepdims=True))  # masked: p == 0
    ds = ds * scale
    dqh = ds @ kh
    dkh = ds.transpose(0, 1, 3, 2) @ qh
    return merge_heads(dqh), merge_heads(dkh), merge_heads(dvh)


def moe_weights(params, cfg, i):
    """Layer i's router [H, E] and stacked expert weights, [E, H, F] and
    [E, F, H] (stored as their rows)."""
    E, H, F = cfg.experts, cfg.hidden, cfg.ffn
    p = f"h.{i}.moe."
    return (params[p + "router.weight"],
            params[p + "experts.c_fc.weight"].reshape(E, H, F),
            params[p + "experts.c_proj.weight"].reshape(E, F, H))


# ------------------------------------------------------------------ model
def forward(params, cfg, tokens, targets=None):
    """Return (loss or None, logits, cache).  tokens, targets: int [B, T]."""
    B, T = tokens.shape
    if T > params["wpe.weight"].shape[0]:
        raise RefError(f"sequence length {T} exceeds wpe rows "
                       f"{params['wpe.weight'].shape[0]}")
    nh = cfg.heads
    wte = params["wte.weight"]
    x = wte[tokens] + params["wpe.weight"][:T]
    layers = []
    aux_total = 0.0
    dropped = [0, 0]  # MoE choices dropped by capacity, of all choices
    for i in range(cfg.layers):
        P = lambda n: params[f"h.{i}.{n}"]  # noqa: E731
        c = {"x_in": x}
        h, c["ln1"] = layernorm_fwd(x, P("ln_1.weight"), P("ln_1.bias"))
        c["h1"] = h
        q = h @ P("attn.q.weight") + P("attn.q.bias")
        k = h @ P("attn.k.weight") + P("attn.k.bias")
        v = h @ P("attn.v.weight") + P("attn.v.bias")
        y, c["attn"] = attention_fwd(q, k, v, nh)
        c["y"] = y
        x = x + (y @ P("attn.c_proj.weight") + P("attn.c_proj.bias"))
        h, c["ln2"] = layernorm_fwd(x, P("ln_2.weight"), P("ln_2.bias"))
        c["h2"] = h
        if cfg.experts:
            y, aux, c["moe"] = moe_numpy.moe_fwd(
                h, *moe_weights(params, cfg, i), cfg.top_k, cfg.capacity,
                cfg.aux_coeff, GELU_C)
            x = x + y
            aux_total = aux_total + aux
            kept = c["moe"]["kept"]
            dropped[0] += int(kept.size - kept.sum())
            dropped[1] += int(kept.size)
            layers.append(c)
            continue
        f = h @ P("mlp.c_fc.weight") + P("mlp.c_fc.bias")
        g, t = gelu_fwd(f)
        c["f"], c["g"], c["t"] = f, g, t
        x = x + (g @ P("mlp.c_proj.weight") + P("mlp.c_proj.bias"))
        layers.append(c)
    hf, lnf_cache = layernorm_fwd(x, params["ln_f.weight"], params["ln_f.bias"])
    logits = hf @ wte.T
    cache = {"tokens": tokens, "layers": layers, "hf": hf, "lnf": lnf_cache,
             "B": B, "T": T, "dropped": dropped}
    if targets is None:
        return None, logits, cache
    m = logits.max(axis=-1, keepdims=True)
    e = np.exp(logits - m)
    se = e.sum(axis=-1, keepdims=True)
    lse = (m + np.log(se))[..., 0]
    picked = np.take_along_axis(logits, targets[..., None], axis=-1)[..., 0]
    loss = (lse - picked).mean() + aux_total
    cache["probs"] = e / se
    cache["targets"] = targets
    return loss, logits, cache


def backward(params, cfg, cache):
    """Gradients of the mean cross-entropy loss w.r.t. every parameter."""
    B, T = cache["B"], cache["T"]
    nh = cfg.heads
    grads = {n: np.zeros_like(p) for n, p in params.items()}
    wte = params["wte.weight"]

    dlogits = cache["probs"].copy()
    bi, ti = np.indices((B, T))
    dlogits[bi, ti, cache["targets"]] -= 1.0
    dlogits /= (B * T)
    V = wte.shape[0]
    grads["wte.weight"] += dlogits.reshape(-1, V).T @ cache["hf"].reshape(-1, wte.shape[1])
    dhf = dlogits @ wte
    dx, grads["ln_f.weight"], grads["ln_f.bias"] = layernorm_bwd(
        dhf, cache["lnf"], params["ln_f.weight"])

    for i in reversed(range(cfg.layers)):
        c = cache["layers"][i]
        pre = f"h.{i}."
        P = lambda n: params[pre + n]  # noqa: E731
        # MLP residual branch
        if cfg.experts:
            dh2, dwr, dwfc, dwproj = moe_numpy.moe_bwd(
                dx, 1.0, c["moe"], *moe_weights(params, cfg, i), cfg.top_k,
                cfg.aux_coeff, GELU_C)
            grads[pre + "moe.router.weight"] = dwr
            grads[pre + "moe.experts.c_fc.weight"] = dwfc.reshape(
                params[pre + "moe.experts.c_fc.weight"].shape)
            grads[pre + "moe.experts.c_proj.weight"] = dwproj.reshape(
                params[pre + "moe.experts.c_proj.weight"].shape)
        else:
            dg, grads[pre + "mlp.c_proj.weight"], grads[pre + "mlp.c_proj.bias"] = \
                linear_bwd(dx, c["g"], P("mlp.c_proj.weight"))
            df = gelu_bwd(dg, c["f"], c["t"])
            dh2, grads[pre + "mlp.c_fc.weight"], grads[pre + "mlp.c_fc.bias"] = \
                linear_bwd(df, c["h2"], P("mlp.c_fc.weight"))
        dxl, grads[pre + "ln_2.weight"], grads[pre + "ln_2.bias"] = \
            layernorm_bwd(dh2, c["ln2"], P("ln_2.weight"))
        dx = dx + dxl
        # attention residual branch
        dy, grads[pre + "attn.c_proj.weight"], grads[pre + "attn.c_proj.bias"] = \
            linear_bwd(dx, c["y"], P("attn.c_proj.weight"))
        dq, dk, dv = attention_bwd(dy, c["attn"], nh)
        dh1 = 0
        for n, dz in (("q", dq), ("k", dk), ("v", dv)):
            dhz, grads[pre + f"attn.{n}.weight"], grads[pre + f"attn.{n}.bias"] = \
                linear_bwd(dz, c["h1"], P(f"attn.{n}.weight"))
            dh1 = dh1 + dhz
        dxl, grads[pre + "ln_1.weight"], grads[pre + "ln_1.bias"] = \
            layernorm_bwd(dh1, c["ln1"], P("ln_1.weight"))
        dx = dx + dxl

    # embeddings
    grads["wpe.weight"][:T] += dx.sum(axis=0)
    np.add.at(grads["wte.weight"], cache["tokens"].reshape(-1),
              dx.reshape(-1, dx.shape[-1]))
    return grads


def loss_and_grads(params, cfg, tokens, targets, dropped=None):
    loss, _, cache = forward(params, cfg, tokens, targets)
    if dropped is not None:
        dropped[0] += cache["dropped"][0]
        dropped[1] += cache["dropped"][1]
    return loss, backward(params, cfg, cache)


# ------------------------------------------------------------------ AdamW
class AdamW:
    def __init__(self, params, lr, beta1=0.9, beta2=0.95, eps=1e-8,
                 weight_decay=0.1, grad_clip=1.0):
        self.lr, self.b1, self.b2, self.eps = lr, beta1, beta2, eps
        self.wd, self.clip = weight_decay, grad_clip
        self.m = {n: np.zeros_like(p) for n, p in params.items()}
        self.v = {n: np.zeros_like(p) for n, p in params.items()}
        self.t = 0

    def step(self, params, grads):
        """Update params in place; return the global grad norm (pre-clip)."""
        self.t += 1
        t = self.t
        names = list(params)
        sq = grads[names[0]].dtype.type(0)
        for n in names:
            sq = sq + np.sum(grads[n] * grads[n])
        norm = np.sqrt(sq)
        scale = None
        if self.clip > 0 and norm > self.clip:
            scale = self.clip / (norm + CLIP_EPS)
        bc1 = 1.0 - self.b1 ** t
        bc2 = 1.0 - self.b2 ** t
        for n in names:
            p, g = params[n], grads[n]
            if scale is not None:
                g = g * scale
            m = self.m[n] = self.b1 * self.m[n] + (1.0 - self.b1) * g
            v = self.v[n] = self.b2 * self.v[n] + (1.0 - self.b2) * (g * g)
            mhat = m / bc1
            vhat = v / bc2
            wd = self.wd if p.ndim >= 2 else 0.0
            p -= self.lr * (mhat / (np.sqrt(vhat) + self.eps) + wd * p)
        return float(norm)


# ------------------------------------------------------------------ data
class Batches:
    """llm.c-style sequential batches over a token array."""

    def __init__(self, tokens, B, T, source):
        self.tokens = tokens
        self.B, self.T = B, T
        n = int(tokens.shape[0])
        if n < B * T + 1:
            raise RefError(f"{source}: {n} tokens, need at least B*T+1 = "
                           f"{B * T + 1} for one batch")
        self.nb = (n - 1) // (B * T)

    def position(self, k):
        return (k % self.nb) * self.B * self.T

    def get(self, k):
        p = self.position(k)
        n = self.B * self.T
        buf = self.tokens[p:p + n + 1].astype(np.int64)
        return buf[:-1].reshape(self.B, self.T), buf[1:].reshape(self.B, self.T)


# ------------------------------------------------------------------ CLI
def write_json_atomic(path, obj):
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".",
                               suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(obj, f)
            f.write("\n")
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def parse_args(argv):
    p = argparse.ArgumentParser(
        prog="gpt_numpy",
        description="numpy reference for Triax GPT training (AdamW).")
    g = p.add_argument_group("model")
    g.add_argument("--layers", type=int, required=True)
    g.add_argument("--hidden", type=int, required=True)
    g.add_argument("--heads", type=int, required=True)
    g.add_argument("--vocab", type=int, required=True)
    g.add_argument("--seq", type=int, required=True, help="T, sequence length")
    g.add_argument("--ffn", type=int, help="MLP inner size (default 4 x hidden)")
    g.add_argument("--experts", type=int, default=0,
                   help="mixture of experts per block (0: dense MLP)")
    g.add_argument("--top-k", type=int, default=2)
    g.add_argument("--capacity", type=int,
                   help="MoE rows per expert and sequence (default: seq, dropless)")
    g.add_argument("--aux-loss-coeff", type=float, default=0.01)
    g = p.add_argument_group("training")
    g.add_argument("--init", help="initial parameters (.safetensors)")
    g.add_argument("--data", help="llm.c .bin token file")
    g.add_argument("--batch", type=int, help="B")
    g.add_argument("--steps", type=int, help="number of AdamW steps")
    g.add_argument("--lr", type=float, help="constant learning rate")
    g.add_argument("--beta1", type=float, default=0.9)
    g.add_argument("--beta2", type=float, default=0.95)
    g.add_argument("--eps", type=float, default=1e-8)
    g.add_argument("--weight-decay", type=float, default=0.1)
    g.add_argument("--grad-clip", type=float, default=1.0,
                   help="global-norm clip; <= 0 disables (default 1.0)")
    g.add_argument("--dtype", choices=["float64", "float32"], default="float64",
                   help="compute dtype (default float64)")
    g.add_argument("--losses-out", help="write {'losses': [...], 'grad_norms': [...]}")
    g.add_argument("--params-out", help="write final parameters (.safetensors)")
    g.add_argument("--params-out-dtype", choices=["same", "F32", "F64"],
                   default="same",
                   help="dtype of --params-out (default: the compute dtype)")
    g.add_argument("--log-every", type=int, default=1,
                   help="print a progress line every N steps (0: never)")
    g = p.add_argument_group("standalone init")
    g.add_argument("--write-init", metavar="FILE",
                   help="write a random init (F32 .safetensors); with --data "
                        "training then starts from it")
    g.add_argument("--init-seed", type=int, default=0)
    return p.parse_args(argv)


def split_c_attn(raw, cfg, source):
    """Hugging Face GPT-2 stores q, k and v as one fused projection,
    h.N.attn.c_attn.{weight [H, 3H], bias [3H]}; the model uses them apart.
    Accepts either naming and returns the separate one."""
    out = dict(raw)
    for i in range(cfg.layers):
        for kind in ("weight", "bias"):
            name = f"h.{i}.attn.c_attn.{kind}"
            if name in out:
                fused = out.pop(name)
                if fused.shape[-1] != 3 * cfg.hidden:
                    raise RefError(f"{source}: parameter {name} has shape {list(fused.shape)}, "
                                   f"expected a last dimension of 3 x hidden = {3 * cfg.hidden}")
                for part, value in zip("qkv", np.split(fused, 3, axis=-1)):
                    out[f"h.{i}.attn.{part}.{kind}"] = np.ascontiguousarray(value)
    return out


def fuse_c_attn(params, cfg):
    """The inverse of split_c_attn: the Hugging Face GPT-2 tensor names."""
    out = dict(params)
    for i in range(cfg.layers):
        for kind in ("weight", "bias"):
            parts = [out.pop(f"h.{i}.attn.{p}.{kind}") for p in "qkv"]
            out[f"h.{i}.attn.c_attn.{kind}"] = np.concatenate(parts, axis=-1)
    return out


def run(args):
    cfg = Config(args.layers, args.hidden, args.heads, args.vocab, args.seq,
                 args.ffn, args.experts, args.top_k, args.capacity,
                 args.aux_loss_coeff)
    dtype = np.float64 if args.dtype == "float64" else np.float32

    if args.write_init:
        init = init_params(cfg, args.init_seed)
        try:
            safetensors_io.save(args.write_init, fuse_c_attn(init, cfg), metadata={
                "format": "pt", "producer": "triax gpt_numpy.py --write-init",
                "init_seed": str(args.init_seed), "layers": str(cfg.layers),
                "hidden": str(cfg.hidden), "heads": str(cfg.heads),
                "vocab": str(cfg.vocab), "seq": str(cfg.seq)})
        except OSError as e:
            raise RefError(f"{args.write_init}: cannot write: {e.strerror}")
        print(f"wrote {args.write_init} (init seed {args.init_seed})", file=sys.stderr)
        if args.init is None:
            args.init = args.write_init
        if args.data is None:
            return 0

    missing = [f"--{n.replace('_', '-')}" for n in ("init", "data", "batch", "steps", "lr")
               if getattr(args, n) is None]
    if missing:
        raise RefError(f"training needs {', '.join(missing)}")
    if args.batch <= 0 or args.steps < 0:
        raise RefError("--batch must be > 0 and --steps >= 0")
    if not (0.0 <= args.beta1 < 1.0 and 0.0 <= args.beta2 < 1.0):
        raise RefError("--beta1/--beta2 must be in [0, 1)")

    try:
        raw = safetensors_io.load(args.init)
    except safetensors_io.SafetensorsError as e:
        raise RefError(str(e))
    params = check_params(split_c_attn(raw, cfg, args.init), cfg, args.init, dtype)

    try:
        tokens = llmc_bin.read_tokens(args.data)
    except llmc_bin.TokenFileError as e:
        raise RefError(str(e))
    if tokens.size and int(tokens.max()) >= cfg.vocab:
        raise RefError(f"{args.data}: token id {int(tokens.max())} >= --vocab {cfg.vocab}")
    batches = Batches(tokens, args.batch, cfg.seq, args.data)

    opt = AdamW(params, args.lr, args.beta1, args.beta2, args.eps,
                args.weight_decay, args.grad_clip)
    losses, norms = [], []
    dropped = [0, 0]
    t_start = time.perf_counter()
    for k in range(args.steps):
        t0 = time.perf_counter()
        x, y = batches.get(k)
        loss, grads = loss_and_grads(params, cfg, x, y, dropped)
        norm = opt.step(params, grads)
        losses.append(float(loss))
        norms.append(norm)
        if not math.isfinite(float(loss)):
            print(f"gpt_numpy: warning: non-finite loss at step {k + 1}", file=sys.stderr)
        if args.log_every and ((k + 1) % args.log_every == 0 or k + 1 == args.steps):
            print(f"step {k + 1:5d}/{args.steps} loss {float(loss):.6f} "
                  f"grad_norm {norm:.6f} ({(time.perf_counter() - t0) * 1e3:.1f} ms)",
                  flush=True)
    elapsed = time.perf_counter() - t_start
    if args.steps:
        print(f"done: {args.steps} steps in {elapsed:.2f} s "
              f"({elapsed / args.steps * 1e3:.1f} ms/step), first loss "
              f"{losses[0]:.6f}, last loss {losses[-1]:.6f}", file=sys.stderr)
    if cfg.experts:
        print(f"moe: {dropped[0]} of {dropped[1]} expert choices dropped "
              f"(capacity {cfg.capacity} per expert and sequence)")

    try:
        if args.losses_out:
            write_json_atomic(args.losses_out, {"losses": losses, "grad_norms": norms})
        if args.params_out:
            st = {"same": None, "F32": np.float32, "F64": np.float64}[args.params_out_dtype]
            out = {n: (p.astype(st) if st else p)
                   for n, p in fuse_c_attn(params, cfg).items()}
            safetensors_io.save(args.params_out, out, metadata={
                "format": "pt", "producer": "triax gpt_numpy.py",
                "steps": str(args.steps), "dtype": args.dtype})
    except OSError as e:
        raise RefError(f"{e.filename}: cannot write: {e.strerror}")
    return 0


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        return run(args)
    except RefError as e:
        print(f"gpt_numpy: error: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
