#!/usr/bin/env python3
"""Independent numpy forward of the Triax LLaMA family (float64).

Written from the model's definition (Touvron et al. 2023 and the
transformers LlamaForCausalLM it loads into), not from the compiler:

    x = embed_tokens[tokens]
    per layer i (names model.layers.i.*; the file holds each linear's
    weight as nn.Linear's [out, in], as transformers and Triax's LLaMA
    checkpoints do: y = h @ W^T):
        h = RMSNorm(x; input_layernorm)           x / sqrt(mean(x^2) + 1e-5) * w
        q, k, v = h Wq^T, h Wk^T, h Wv^T          (no biases)
        q, k = rope(q), rope(k)                   rotate-half layout, per head:
            pair (x_j, x_{j+d/2}), j < d/2, turned by the angle p * f_j,
            p the token's position, f_j = theta^(-2j/d)
        y = causal_softmax(q k^T / sqrt(d)) v     query head j reads kv head
                                                  j // (heads / kv_heads)
        x = x + y Wo^T
        h = RMSNorm(x; post_attention_layernorm)
        x = x + (silu(h Wgate^T) * (h Wup^T)) Wdown^T
    logits = RMSNorm(x; model.norm) @ lm_head^T   (untied)
    loss = mean cross-entropy over the B*T positions

The frequencies are rounded to float32 as transformers computes them
(1 / theta^(2j/d) in float32); everything else is float64.

Prints (or writes with --losses-out) {"losses": [...]} of batches 0..N-1 of
the llm.c .bin corpus (gpt_numpy.py's sequential batches), all with the
given parameters: a Triax run at lr 0 logs the same losses.
"""

import argparse
import json
import os
import sys

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_io  # noqa: E402
import llmc_bin  # noqa: E402
from gpt_numpy import Batches  # noqa: E402

EPS = 1e-5


def rms_norm(x, w):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + EPS) * w


def rope(x, heads, theta):
    B, T, F = x.shape
    d = F // heads
    half = d // 2
    j = np.arange(half, dtype=np.float32)
    freq = (np.float32(1.0) /
            (np.float32(theta) ** (np.float32(2.0) * j / np.float32(d))))
    angle = np.arange(T, dtype=np.float64)[:, None] * freq.astype(np.float64)
    c, s = np.cos(angle)[None, :, None, :], np.sin(angle)[None, :, None, :]
    xh = x.reshape(B, T, heads, d)
    x1, x2 = xh[..., :half], xh[..., half:]
    out = np.concatenate([x1 * c - x2 * s, x2 * c + x1 * s], axis=-1)
    return out.reshape(B, T, F)


def attention(q, k, v, heads, kv_heads):
    B, T, F = q.shape
    d = F // heads
    qh = q.reshape(B, T, heads, d).transpose(0, 2, 1, 3)
    kh = k.reshape(B, T, kv_heads, d).transpose(0, 2, 1, 3)
    vh = v.reshape(B, T, kv_heads, d).transpose(0, 2, 1, 3)
    group = heads // kv_heads
    kh, vh = np.repeat(kh, group, axis=1), np.repeat(vh, group, axis=1)
    s = (qh @ kh.transpose(0, 1, 3, 2)) / np.sqrt(d)
    s = np.where(np.tril(np.ones((T, T), dtype=bool)), s, -np.inf)
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    p /= p.sum(axis=-1, keepdims=True)
    return (p @ vh).transpose(0, 2, 1, 3).reshape(B, T, F)


def forward_loss(P, tokens, targets, layers, heads, kv_heads, theta):
    x = P["model.embed_tokens.weight"][tokens]
    for i in range(layers):
        n = f"model.layers.{i}."
        h = rms_norm(x, P[n + "input_layernorm.weight"])
        q = rope(h @ P[n + "self_attn.q_proj.weight"].T, heads, theta)
        k = rope(h @ P[n + "self_attn.k_proj.weight"].T, kv_heads, theta)
        v = h @ P[n + "self_attn.v_proj.weight"].T
        y = attention(q, k, v, heads, kv_heads)
        x = x + y @ P[n + "self_attn.o_proj.weight"].T
        h = rms_norm(x, P[n + "post_attention_layernorm.weight"])
        gate = h @ P[n + "mlp.gate_proj.weight"].T
        up = h @ P[n + "mlp.up_proj.weight"].T
        x = x + (gate / (1.0 + np.exp(-gate)) * up) @ P[n + "mlp.down_proj.weight"].T
    logits = rms_norm(x, P["model.norm.weight"]) @ P["lm_head.weight"].T
    logits -= logits.max(axis=-1, keepdims=True)
    logp = logits - np.log(np.exp(logits).sum(axis=-1, keepdims=True))
    return float(-np.take_along_axis(logp, targets[..., None], axis=-1).mean())


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--params", required=True,
                    help="safetensors with the LLaMA names (Triax's --save-init)")
    ap.add_argument("--data", required=True, help="llm.c .bin token file")
    ap.add_argument("--layers", type=int, required=True)
    ap.add_argument("--heads", type=int, required=True)
    ap.add_argument("--kv-heads", type=int)
    ap.add_argument("--seq", type=int, required=True)
    ap.add_argument("--batch", type=int, required=True)
    ap.add_argument("--theta", type=float, default=10000.0)
    ap.add_argument("--batches", type=int, default=1)
    ap.add_argument("--losses-out")
    a = ap.parse_args(argv)
    P = {name: np.asarray(t, dtype=np.float64)
         for name, t in safetensors_io.load(a.params).items()}
    batches = Batches(llmc_bin.read_tokens(a.data), a.batch, a.seq, a.data)
    losses = []
    for b in range(a.batches):
        tokens, targets = batches.get(b)
        losses.append(forward_loss(P, tokens, targets, a.layers, a.heads,
                                   a.kv_heads or a.heads, a.theta))
    text = json.dumps({"losses": losses})
    if a.losses_out:
        with open(a.losses_out, "w") as f:
            f.write(text + "\n")
    else:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
