#!/usr/bin/env python3
"""The peers of bench/cpu/run.py: Triax's GPT trained by PyTorch eager,
torch.compile or JAX jit, one program per process (run with the Python of
bench/cpu/.venv; run.py starts it, nobody else needs to).

The model is Triax's GPT (lib/Models/GPT.cpp, test/reference/README.md):
learned positions, pre-LayerNorm blocks (eps 1e-5) with biases, causal
attention, GELU with the tanh approximation, LM head tied to the token
embedding, mean cross-entropy; AdamW with the model's train_config (lr,
betas, eps, weight decay on the tensors of rank >= 2 only) after clipping the
global gradient norm (factor clip / (norm + 1e-6) when norm > clip), constant
learning rate. All fp32. The parameters are read from the safetensors file
Triax's binary wrote with --save-init (q, k and v fused as attn.c_attn,
weights [in, out]) and the batches from the same llm.c .bin file, in the same
order (window k: tokens[k*B*T : (k+1)*B*T], targets one token later), so the
first steps' losses equal Triax's.

Protocol (JSON lines): argv[1] is a JSON object with the setup; the worker
builds the model, runs `first_steps` steps from the initial parameters
(this is where torch.compile and jax.jit compile) and answers
{"ready": ..., "params": N, "losses": [...], "setup_s": ...} or
{"error": "..."}. Then each line {"cmd": "run", "warmup": W, "steps": N} on
stdin runs W + N more steps and answers the end time of each step:
{"step_ms": [N values], "losses": [...], "cpu_s": ..., "wall_s": ...}
(cpu_s: the process's CPU time, all threads, over the N timed steps).
{"cmd": "quit"} ends it.
"""

import json
import math
import os
import struct
import sys
import time
import traceback


def log(msg):
    print("[%s] %s" % (os.environ.get("TRIAX_BENCH_PROGRAM", "peer"), msg),
          file=sys.stderr, flush=True)


def read_safetensors(path):
    import numpy as np
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        if info["dtype"] != "F32":
            raise ValueError("%s: dtype %s, expected F32" % (name, info["dtype"]))
        b, e = info["data_offsets"]
        out[name] = np.frombuffer(data[b:e], dtype="<f4").reshape(info["shape"]).copy()
    return out


def read_batches(path, batch, seq):
    """The windows of an llm.c .bin file in Triax's sequential order."""
    import numpy as np
    raw = open(path, "rb").read()
    header = np.frombuffer(raw[:1024], dtype="<i4")
    if header[0] != 20240520:
        raise ValueError("%s: bad magic %d" % (path, header[0]))
    tokens = np.frombuffer(raw[1024:1024 + 2 * int(header[2])], dtype="<u2").astype(np.int64)
    n = batch * seq
    windows = (len(tokens) - 1) // n
    return [(tokens[k * n:(k + 1) * n].reshape(batch, seq),
             tokens[k * n + 1:(k + 1) * n + 1].reshape(batch, seq))
            for k in range(windows)]


class Runner:
    """Runs steps, timing each from the end of the previous one to the moment
    its loss is on the host (Triax's logged per-step time measures the same
    interval: from one read of the loss to the next)."""

    def __init__(self, step_fn, batches):
        self.step_fn, self.batches, self.next = step_fn, batches, 0

    def run(self, count, timed):
        losses, ends = [], []
        cpu0, t0 = time.process_time(), time.perf_counter()
        for _ in range(count):
            x, y = self.batches[self.next % len(self.batches)]
            self.next += 1
            losses.append(self.step_fn(x, y))  # a Python float: the step is done
            ends.append(time.perf_counter())
        cpu_s, wall_s = time.process_time() - cpu0, time.perf_counter() - t0
        starts = [t0] + ends[:-1]
        ms = [1e3 * (e - s) for s, e in zip(starts, ends)]
        return {"step_ms": ms, "losses": losses, "cpu_s": cpu_s, "wall_s": wall_s} if timed \
            else {"losses": losses}


# --------------------------------------------------------------------------
# PyTorch (eager and torch.compile)
# --------------------------------------------------------------------------

def build_torch(cfg, init, compiled):
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    n = cfg["threads"]
    torch.set_num_threads(n)
    torch.set_num_interop_threads(n)
    torch.manual_seed(0)
    d, heads, layers = cfg["hidden"], cfg["heads"], cfg["layers"]

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1 = nn.LayerNorm(d, eps=1e-5)
            self.c_attn = nn.Linear(d, 3 * d)   # q | k | v, as Triax's checkpoints hold them
            self.c_proj = nn.Linear(d, d)
            self.ln_2 = nn.LayerNorm(d, eps=1e-5)
            self.c_fc = nn.Linear(d, cfg["ffn"])
            self.mlp_proj = nn.Linear(cfg["ffn"], d)

        def forward(self, x):
            B, T, C = x.shape
            q, k, v = self.c_attn(self.ln_1(x)).split(C, dim=2)
            q = q.view(B, T, heads, C // heads).transpose(1, 2)
            k = k.view(B, T, heads, C // heads).transpose(1, 2)
            v = v.view(B, T, heads, C // heads).transpose(1, 2)
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.c_proj(y.transpose(1, 2).contiguous().view(B, T, C))
            return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte = nn.Embedding(cfg["vocab"], d)
            self.wpe = nn.Embedding(cfg["seq"], d)
            self.h = nn.ModuleList(Block() for _ in range(layers))
            self.ln_f = nn.LayerNorm(d, eps=1e-5)

        def forward(self, idx, targets):
            T = idx.shape[1]
            x = self.wte(idx) + self.wpe(torch.arange(T))
            for block in self.h:
                x = block(x)
            logits = self.ln_f(x) @ self.wte.weight.t()   # tied head, no bias
            return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))

    model = GPT()
    # Triax's [in, out] weights are nn.Linear's weight transposed.
    with torch.no_grad():
        def put(p, a, transpose=False):
            t = torch.from_numpy(a.T.copy() if transpose else a)
            assert tuple(p.shape) == tuple(t.shape), (p.shape, t.shape)
            p.copy_(t)
        put(model.wte.weight, init["wte.weight"])
        put(model.wpe.weight, init["wpe.weight"])
        for i, blk in enumerate(model.h):
            pre = "h.%d." % i
            put(blk.ln_1.weight, init[pre + "ln_1.weight"])
            put(blk.ln_1.bias, init[pre + "ln_1.bias"])
            put(blk.c_attn.weight, init[pre + "attn.c_attn.weight"], True)
            put(blk.c_attn.bias, init[pre + "attn.c_attn.bias"])
            put(blk.c_proj.weight, init[pre + "attn.c_proj.weight"], True)
            put(blk.c_proj.bias, init[pre + "attn.c_proj.bias"])
            put(blk.ln_2.weight, init[pre + "ln_2.weight"])
            put(blk.ln_2.bias, init[pre + "ln_2.bias"])
            put(blk.c_fc.weight, init[pre + "mlp.c_fc.weight"], True)
            put(blk.c_fc.bias, init[pre + "mlp.c_fc.bias"])
            put(blk.mlp_proj.weight, init[pre + "mlp.c_proj.weight"], True)
            put(blk.mlp_proj.bias, init[pre + "mlp.c_proj.bias"])
        put(model.ln_f.weight, init["ln_f.weight"])
        put(model.ln_f.bias, init["ln_f.bias"])
    params = list(model.parameters())
    n_params = sum(p.numel() for p in params)
    groups = [{"params": [p for p in params if p.dim() >= 2], "weight_decay": cfg["weight_decay"]},
              {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0}]
    hp = dict(lr=cfg["lr"], betas=(cfg["beta1"], cfg["beta2"]), eps=cfg["eps"])
    try:   # the fused CPU AdamW (torch >= 2.4), else the multi-tensor one
        opt = torch.optim.AdamW(groups, fused=True, **hp)
        variant = "fused"
    except (RuntimeError, TypeError, ValueError):
        opt = torch.optim.AdamW(groups, foreach=True, **hp)
        variant = "foreach"
    fwd = torch.compile(model) if compiled else model
    clip = cfg["grad_clip"]

    def step(x, y):
        loss = fwd(torch.from_numpy(x), torch.from_numpy(y))
        loss.backward()
        if clip > 0:
            torch.nn.utils.clip_grad_norm_(params, clip)
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss.item()

    info = {"framework": "torch " + torch.__version__, "adamw": variant,
            "torch_threads": torch.get_num_threads(),
            "torch_interop_threads": torch.get_num_interop_threads()}
    return step, n_params, info


# --------------------------------------------------------------------------
# JAX (jit of the whole step: forward, backward, clipping, AdamW)
# --------------------------------------------------------------------------

def build_jax(cfg, init):
    import jax
    import jax.numpy as jnp
    import numpy as np

    d, heads, layers = cfg["hidden"], cfg["heads"], cfg["layers"]
    hd = d // heads
    p0 = {k: jnp.asarray(v) for k, v in init.items()}

    def layer_norm(x, g, b):
        mu = jnp.mean(x, axis=-1, keepdims=True)
        var = jnp.mean(jnp.square(x - mu), axis=-1, keepdims=True)   # biased
        return (x - mu) * jax.lax.rsqrt(var + 1e-5) * g + b

    causal = jnp.tril(jnp.ones((cfg["seq"], cfg["seq"]), dtype=bool))

    def attention(q, k, v):   # [B, T, heads, hd]
        if hasattr(jax.nn, "dot_product_attention"):
            return jax.nn.dot_product_attention(q, k, v, is_causal=True)
        s = jnp.einsum("bqhd,bkhd->bhqk", q, k) / math.sqrt(hd)
        T = q.shape[1]
        s = jnp.where(causal[:T, :T], s, -jnp.inf)
        return jnp.einsum("bhqk,bkhd->bqhd", jax.nn.softmax(s, axis=-1), v)

    def loss_fn(p, x, y):
        B, T = x.shape
        h = p["wte.weight"][x] + p["wpe.weight"][:T]
        for i in range(layers):
            pre = "h.%d." % i
            a = layer_norm(h, p[pre + "ln_1.weight"], p[pre + "ln_1.bias"])
            qkv = a @ p[pre + "attn.c_attn.weight"] + p[pre + "attn.c_attn.bias"]
            q, k, v = jnp.split(qkv, 3, axis=-1)
            o = attention(q.reshape(B, T, heads, hd), k.reshape(B, T, heads, hd),
                          v.reshape(B, T, heads, hd)).reshape(B, T, d)
            h = h + o @ p[pre + "attn.c_proj.weight"] + p[pre + "attn.c_proj.bias"]
            a = layer_norm(h, p[pre + "ln_2.weight"], p[pre + "ln_2.bias"])
            m = jax.nn.gelu(a @ p[pre + "mlp.c_fc.weight"] + p[pre + "mlp.c_fc.bias"],
                            approximate=True)
            h = h + m @ p[pre + "mlp.c_proj.weight"] + p[pre + "mlp.c_proj.bias"]
        h = layer_norm(h, p["ln_f.weight"], p["ln_f.bias"])
        logits = h @ p["wte.weight"].T
        logp = jax.nn.log_softmax(logits, axis=-1)
        return -jnp.mean(jnp.take_along_axis(logp, y[..., None], axis=-1))

    lr, b1, b2, eps = cfg["lr"], cfg["beta1"], cfg["beta2"], cfg["eps"]
    wd, clip = cfg["weight_decay"], cfg["grad_clip"]

    def train_step(p, m, v, t, x, y):
        loss, g = jax.value_and_grad(loss_fn)(p, x, y)
        norm = jnp.sqrt(sum(jnp.sum(jnp.square(gi)) for gi in jax.tree_util.tree_leaves(g)))
        scale = jnp.where((clip > 0) & (norm > clip), clip / (norm + 1e-6), 1.0)
        t = t + 1.0
        c1, c2 = 1.0 - b1 ** t, 1.0 - b2 ** t
        new_p, new_m, new_v = {}, {}, {}
        for k in p:
            gk = g[k] * scale
            mk = b1 * m[k] + (1.0 - b1) * gk
            vk = b2 * v[k] + (1.0 - b2) * gk * gk
            upd = (mk / c1) / (jnp.sqrt(vk / c2) + eps)
            if p[k].ndim >= 2:
                upd = upd + wd * p[k]
            new_p[k], new_m[k], new_v[k] = p[k] - lr * upd, mk, vk
        return new_p, new_m, new_v, t, loss

    step_jit = jax.jit(train_step, donate_argnums=(0, 1, 2, 3))
    state = {"p": p0, "m": {k: jnp.zeros_like(a) for k, a in p0.items()},
             "v": {k: jnp.zeros_like(a) for k, a in p0.items()},
             "t": jnp.asarray(0.0, dtype=jnp.float32)}

    def step(x, y):
        s = state
        s["p"], s["m"], s["v"], s["t"], loss = step_jit(
            s["p"], s["m"], s["v"], s["t"], jnp.asarray(x.astype(np.int32)),
            jnp.asarray(y.astype(np.int32)))
        return float(loss)   # waits for the step

    n_params = sum(int(a.size) for a in p0.values())
    info = {"framework": "jax " + jax.__version__, "devices": str(jax.devices()),
            "XLA_FLAGS": os.environ.get("XLA_FLAGS", "")}
    return step, n_params, info


def main():
    cfg = json.loads(sys.argv[1])
    program = cfg["program"]
    os.environ["TRIAX_BENCH_PROGRAM"] = program
    t0 = time.perf_counter()
    try:
        init = read_safetensors(cfg["init"])
        batches = read_batches(cfg["data"], cfg["batch"], cfg["seq"])
        if program in ("eager", "compile"):
            step, n_params, info = build_torch(cfg, init, program == "compile")
        elif program == "jax":
            step, n_params, info = build_jax(cfg, init)
        else:
            raise ValueError("unknown program " + program)
        del init
        runner = Runner(step, batches)
        first = runner.run(cfg["first_steps"], timed=False)
        info["affinity"] = sorted(os.sched_getaffinity(0))
        reply = {"ready": True, "params": n_params, "losses": first["losses"],
                 "setup_s": time.perf_counter() - t0, "info": info}
    except Exception as e:  # reported as n/a by run.py
        traceback.print_exc()
        reply = {"error": "%s: %s" % (type(e).__name__, str(e).strip().splitlines()[0][:300]
                                      if str(e).strip() else type(e).__name__)}
        print(json.dumps(reply), flush=True)
        return 1
    print(json.dumps(reply), flush=True)
    for line in sys.stdin:
        msg = json.loads(line)
        if msg["cmd"] == "quit":
            break
        try:
            if msg["warmup"]:
                runner.run(msg["warmup"], timed=False)
            out = runner.run(msg["steps"], timed=True)
        except Exception as e:
            traceback.print_exc()
            out = {"error": "%s: %s" % (type(e).__name__, str(e)[:300])}
        print(json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
