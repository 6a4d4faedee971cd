"""Independent numpy reference for Triax's mixture-of-experts MLP.

Written from the layer's definition (docs/moe.md), one expert at a time, not
from the compiler's dispatch buffers:

    logits = h @ W_router                       [B, S, E], no bias
    p = softmax(logits)
    experts[b, s] = the top_k largest logits, in order (lower index first on
                    a tie)
    gates = p at those experts, divided by their sum when top_k >= 2
    capacity: per sequence b, expert e accepts its first C choices, taken
              over j = 0..k-1 and, within a choice, in token order
    y[b, s] = sum over kept choices j of gates[b, s, j] * MLP_e(h[b, s])
              MLP_e(x) = gelu(x @ W_fc[e]) @ W_proj[e]  (no biases)
    aux = coeff * mean over b of E / (S * k) * sum_e n[b, e] * mean_s p[b, s, e]
          n[b, e]: choices of sequence b routed to e, kept or dropped

The checkpoint holds the stacked expert weights [E, in, out] as their rows
[E * in, out]; this module takes the 3-D arrays.
"""

import numpy as np


def gelu(x, c):
    t = np.tanh(c * (x + 0.044715 * x ** 3))
    return 0.5 * x * (1.0 + t), t


def gelu_grad(dy, x, t, c):
    du = c * (1.0 + 3.0 * 0.044715 * x * x)
    return dy * (0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * du)


def route(logits, top_k, capacity):
    """Experts [B, S, k], kept [B, S, k] and routed counts n [B, E]."""
    B, S, E = logits.shape
    experts = np.argsort(-logits, axis=-1, kind="stable")[..., :top_k]
    kept = np.zeros(experts.shape, dtype=bool)
    routed = np.zeros((B, E), dtype=np.int64)
    for b in range(B):
        for j in range(top_k):
            for s in range(S):
                e = experts[b, s, j]
                kept[b, s, j] = routed[b, e] < capacity
                routed[b, e] += 1
    return experts, kept, routed


def moe_fwd(h, w_router, w_fc, w_proj, top_k, capacity, aux_coeff, gelu_c):
    """Returns (y, aux, cache)."""
    B, S, _ = h.shape
    E = w_router.shape[1]
    logits = h @ w_router
    z = logits - logits.max(axis=-1, keepdims=True)
    p = np.exp(z)
    p = p / p.sum(axis=-1, keepdims=True)
    experts, kept, routed = route(logits, top_k, capacity)
    picked = np.take_along_axis(p, experts, axis=-1)
    total = picked.sum(axis=-1, keepdims=True)
    gates = picked / total if top_k >= 2 else picked
    y = np.zeros_like(h)
    per_expert = []
    for e in range(E):
        b, s, j = np.nonzero((experts == e) & kept)
        x = h[b, s]
        f = x @ w_fc[e]
        g, t = gelu(f, gelu_c)
        o = g @ w_proj[e]
        np.add.at(y, (b, s), gates[b, s, j][:, None] * o)
        per_expert.append((b, s, j, x, f, g, t, o))
    mean_p = p.mean(axis=1)                          # [B, E]
    terms = E / (S * top_k) * (routed * mean_p).sum(axis=-1)
    aux = aux_coeff * terms.mean()
    cache = dict(h=h, p=p, experts=experts, picked=picked, total=total,
                 gates=gates, routed=routed, kept=kept, per_expert=per_expert)
    return y, aux, cache


def moe_bwd(dy, daux, cache, w_router, w_fc, w_proj, top_k, aux_coeff,
            gelu_c):
    """Gradients (dh, dW_router, dW_fc, dW_proj) for dy = dL/dy and
    daux = dL/daux."""
    h, p, experts = cache["h"], cache["p"], cache["experts"]
    B, S, _ = h.shape
    E = w_router.shape[1]
    dh = np.zeros_like(h)
    dgates = np.zeros(experts.shape, dtype=h.dtype)
    dw_fc, dw_proj = np.zeros_like(w_fc), np.zeros_like(w_proj)
    for e, (b, s, j, x, f, g, t, o) in enumerate(cache["per_expert"]):
        dyo = dy[b, s]
        dgates[b, s, j] = (dyo * o).sum(axis=-1)
        do = cache["gates"][b, s, j][:, None] * dyo
        dw_proj[e] = g.T @ do
        df = gelu_grad(do @ w_proj[e].T, f, t, gelu_c)
        dw_fc[e] = x.T @ df
        np.add.at(dh, (b, s), df @ w_fc[e].T)
    if top_k >= 2:
        gates, total = cache["gates"], cache["total"]
        dpicked = (dgates - (dgates * gates).sum(-1, keepdims=True)) / total
    else:
        dpicked = dgates
    dp = np.zeros_like(p)
    bi, si = np.indices((B, S))
    for j in range(top_k):
        dp[bi, si, experts[..., j]] += dpicked[..., j]
    # aux = coeff / B * sum_b E / (S k) * sum_e n[b, e] * (1/S) sum_s p
    dp += (daux * aux_coeff / B * E / (S * top_k) / S
           * cache["routed"][:, None, :])
    dlogits = p * (dp - (p * dp).sum(axis=-1, keepdims=True))
    dw_router = h.reshape(-1, h.shape[-1]).T @ dlogits.reshape(-1, E)
    dh += dlogits @ w_router.T
    return dh, dw_router, dw_fc, dw_proj
