#!/usr/bin/env python3
"""PyTorch reference for bench/gpu/run.sh: GPT-2 training steps on one GPU.

The model of `triax-model gpt2` (docs/cuda.md): 12 layers, hidden 768, 12
heads, vocabulary 50257, sequence 1024, learned positions, biases, GELU
(tanh), pre-LayerNorm, LM head tied to the token embedding; batch 16
(--batch; the issue's goal shape); AdamW (lr 6e-4, betas 0.9/0.95, eps
1e-8, weight decay 0.1 on matrices) with the gradient clipped to norm 1.
Random tokens (timing only).

Each (mode, dtype) is timed separately: mode eager or compile
(torch.compile), dtype fp32 (TF32 off: the numbers Triax's fp32 target
computes) or bf16 (autocast, fp32 master weights: what the issue's bf16
goal compares against); the bf16 ones first. One JSON object: per
configuration the median ms/step over the timed steps, tokens/s and MFU
(6 N tokens + the attention's 12 L T d per token, against --peak-tflops).

With --out the object is (re)written to that file before the first
configuration and after each one, "complete": false until the last is
done, through a rename: a run killed at bench/gpu/run.sh's deadline
leaves a whole file with what was measured before the kill (report.py
reads it as it is). Without --out it is printed at the end.

--dry-run lists the configurations without importing torch; with
--dry-run-exit-after K it ends at once, as a KILL would (os._exit, no
clean-up), in configuration K + 1 (test/cuda/bench-scripts.test).
"""

import argparse
import json
import os
import sys
import time


def build_model(torch, nn, F, cfg):
    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            d = cfg["hidden"]
            self.ln_1 = nn.LayerNorm(d)
            self.qkv = nn.Linear(d, 3 * d)
            self.proj = nn.Linear(d, d)
            self.ln_2 = nn.LayerNorm(d)
            self.fc = nn.Linear(d, 4 * d)
            self.fc_proj = nn.Linear(4 * d, d)

        def forward(self, x):
            B, T, C = x.shape
            h = cfg["heads"]
            q, k, v = self.qkv(self.ln_1(x)).split(C, dim=2)
            q = q.view(B, T, h, C // h).transpose(1, 2)
            k = k.view(B, T, h, C // h).transpose(1, 2)
            v = v.view(B, T, h, C // h).transpose(1, 2)
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.proj(y.transpose(1, 2).contiguous().view(B, T, C))
            return x + self.fc_proj(F.gelu(self.fc(self.ln_2(x)),
                                           approximate="tanh"))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte = nn.Embedding(cfg["vocab"], cfg["hidden"])
            self.wpe = nn.Embedding(cfg["seq"], cfg["hidden"])
            self.h = nn.ModuleList(Block() for _ in range(cfg["layers"]))
            self.ln_f = nn.LayerNorm(cfg["hidden"])

        def forward(self, idx, targets):
            T = idx.shape[1]
            pos = torch.arange(T, device=idx.device)
            x = self.wte(idx) + self.wpe(pos)
            for block in self.h:
                x = block(x)
            logits = self.ln_f(x) @ self.wte.weight.t()
            return F.cross_entropy(logits.view(-1, logits.size(-1)).float(),
                                   targets.view(-1))

    return GPT()


def run_config(torch, nn, F, cfg, mode, dtype, steps, warmup, peak):
    torch.manual_seed(1)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    model = build_model(torch, nn, F, cfg).cuda()
    n_params = sum(p.numel() for p in model.parameters())
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=6e-4, betas=(0.9, 0.95), eps=1e-8, fused=True)
    step_model = torch.compile(model) if mode == "compile" else model
    B, T = cfg["batch"], cfg["seq"]
    x = torch.randint(0, cfg["vocab"], (B, T), device="cuda")
    y = torch.randint(0, cfg["vocab"], (B, T), device="cuda")

    def step():
        with torch.autocast("cuda", dtype=torch.bfloat16,
                            enabled=(dtype == "bf16")):
            loss = step_model(x, y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss

    t0 = time.time()
    for _ in range(warmup):
        step()
    torch.cuda.synchronize()
    warm_s = time.time() - t0
    times = []
    for _ in range(steps):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        loss = step()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    times.sort()
    ms = times[len(times) // 2]
    tokens = B * T
    flops = tokens * (6 * n_params + 12 * cfg["layers"] * T * cfg["hidden"])
    result = {"mode": mode, "dtype": dtype, "params": n_params,
              "ms_per_step": ms, "tokens_per_s": tokens / (ms / 1e3),
              "flops_per_step": flops,
              "mfu": flops / (ms / 1e3) / (peak * 1e12),
              "warmup_s": warm_s, "timed_steps": steps,
              "last_loss": float(loss.item()),
              "peak_mem_bytes": torch.cuda.max_memory_allocated()}
    del model, opt, step_model
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    return result


class Results:
    """The output object, written whole after each change when --out is
    given (a temporary file renamed over the old one: a kill at any point
    leaves the last whole version)."""

    def __init__(self, path, head):
        self.path, self.out = path, dict(head, runs=[], complete=False)
        self.write()

    def write(self):
        if not self.path:
            return
        tmp = self.path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(self.out, f)
            f.write("\n")
        os.replace(tmp, self.path)

    def set(self, **fields):
        self.out.update(fields)
        self.write()

    def add(self, run):
        self.out["runs"].append(run)
        self.write()

    def finish(self):
        self.out.pop("running", None)
        self.set(complete=True)
        if not self.path:
            print(json.dumps(self.out))


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--modes", default="eager,compile")
    p.add_argument("--dtypes", default="bf16,fp32")
    p.add_argument("--peak-tflops", type=float, default=989.4,
                   help="bf16 dense peak of the GPU (H100/H200 SXM: 989.4)")
    p.add_argument("--layers", type=int, default=12)
    p.add_argument("--hidden", type=int, default=768)
    p.add_argument("--heads", type=int, default=12)
    p.add_argument("--vocab", type=int, default=50257)
    p.add_argument("--seq", type=int, default=1024)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--out", help="the JSON file, rewritten after each "
                   "configuration (default: print it at the end)")
    p.add_argument("--dry-run", action="store_true",
                   help="list the configurations without running them")
    p.add_argument("--dry-run-exit-after", type=int, default=-1, metavar="K",
                   help="with --dry-run: end as if killed in configuration "
                   "K + 1")
    a = p.parse_args()
    cfg = {k: getattr(a, k) for k in
           ("layers", "hidden", "heads", "vocab", "seq", "batch")}
    # dtype-major: both bf16 runs (the comparison) before fp32.
    configs = [(m, d) for d in a.dtypes.split(",") if d
               for m in a.modes.split(",") if m]
    res = Results(a.out, {"config": cfg, "peak_tflops": a.peak_tflops,
                          "steps": a.steps, "dry_run": a.dry_run})
    if not a.dry_run:
        import torch
        import torch.nn as nn
        import torch.nn.functional as F
        res.set(torch=torch.__version__, gpu=torch.cuda.get_device_name(0))
    for i, (mode, dtype) in enumerate(configs):
        res.set(running="%s %s" % (mode, dtype))
        if a.dry_run:
            if i == a.dry_run_exit_after:
                os._exit(137)
            res.add({"mode": mode, "dtype": dtype})
            continue
        try:
            r = run_config(torch, nn, F, cfg, mode, dtype, a.steps, a.warmup,
                           a.peak_tflops)
        except Exception as e:  # report and go on with the next one
            r = {"mode": mode, "dtype": dtype, "error": repr(e)[:500]}
        print("torch %-7s %-4s %s" % (mode, dtype,
              "error" if "error" in r else
              "%.1f ms/step, %.0f tok/s, MFU %.1f%%" % (
                  r["ms_per_step"], r["tokens_per_s"], 100 * r["mfu"])),
              file=sys.stderr, flush=True)
        res.add(r)
    res.finish()
    return 0


if __name__ == "__main__":
    sys.exit(main())
