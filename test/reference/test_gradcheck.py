#!/usr/bin/env python3
"""Central finite-difference check of gpt_numpy's analytic backward.

Tiny float64 config (V=16, H=8, heads=2, T=5, B=2, L=2) with random
parameters of order 1 (so every code path, including the LayerNorm affine
parameters and biases, carries a non-trivial gradient).  For every parameter
tensor P the numerical gradient uses
    (loss(P + h e_i) - loss(P - h e_i)) / (2 h),   h = 1e-5,
for every element i, and the tensor's relative error is
    max_i |num_i - ana_i| / max(max_i |num_i|, max_i |ana_i|, 1e-3).
The check fails (exit 1) if any tensor's relative error is >= 1e-6.
The 1e-3 floor matters only for attn.k.bias, whose exact gradient is zero
(adding q.b_k to every score of a softmax row does not change the row); for
it the check also requires the analytic gradient to be below 1e-12.

Also checks, in the same run:
  * the AdamW update against a direct scalar transcription of the formula
    (clipping on and off, weight decay only on rank >= 2 parameters);
  * that the float32 forward/backward agrees with float64 to float32 accuracy;
  * a safetensors F32/F64/BF16/I32 round trip.
"""

import math
import os
import sys
import tempfile

# Single-threaded BLAS unless the caller says otherwise: these matrices are
# small, and on a busy 2-core machine threaded OpenBLAS was measured ~10x
# slower (281 vs 27 ms/step for the 2x64 byte model).  Must precede numpy.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpt_numpy as G  # noqa: E402
import safetensors_io  # noqa: E402

TOL = 1e-6
STEP = 1e-5
FLOOR = 1e-3


def random_params(cfg, rng, dtype=np.float64):
    params = {}
    for name, shape in G.param_shapes(cfg).items():
        if len(shape) >= 2:
            a = rng.standard_normal(shape) * 0.5
        elif "ln_" in name and name.endswith(".weight"):
            a = 1.0 + 0.3 * rng.standard_normal(shape)
        else:
            a = 0.3 * rng.standard_normal(shape)
        params[name] = a.astype(dtype)
    return params


def gradcheck(cfg=None):
    cfg = cfg or G.Config(layers=2, hidden=8, heads=2, vocab=16, seq=5)
    B, T = 2, 5
    rng = np.random.default_rng(1234)
    params = random_params(cfg, rng)
    tokens = rng.integers(0, cfg.vocab, size=(B, T))
    targets = rng.integers(0, cfg.vocab, size=(B, T))
    # make one token repeat so wte gets two scatter-adds to the same row
    tokens[1, 3] = tokens[0, 1]

    loss, grads = G.loss_and_grads(params, cfg, tokens, targets)
    moe = (f" experts={cfg.experts} top_k={cfg.top_k} capacity={cfg.capacity}"
           if cfg.experts else "")
    print(f"gradcheck: config {cfg}{moe} B={B} T={T}, loss {loss:.6f}, "
          f"h={STEP}, tolerance {TOL}")
    worst_all = 0.0
    failed = []
    for name, p in params.items():
        num = np.zeros_like(p)
        flat = p.reshape(-1)
        nflat = num.reshape(-1)
        for i in range(flat.size):
            old = flat[i]
            flat[i] = old + STEP
            lp, _, _ = G.forward(params, cfg, tokens, targets)
            flat[i] = old - STEP
            lm, _, _ = G.forward(params, cfg, tokens, targets)
            flat[i] = old
            nflat[i] = (lp - lm) / (2 * STEP)
        ana = grads[name]
        denom = max(np.abs(num).max(), np.abs(ana).max(), FLOOR)
        rel = float(np.abs(num - ana).max() / denom)
        worst_all = max(worst_all, rel)
        status = "ok" if rel < TOL else "FAIL"
        print(f"  {name:28s} {str(list(p.shape)):10s} max|g| {np.abs(ana).max():.3e}"
              f"  rel err {rel:.3e}  {status}")
        if rel >= TOL:
            failed.append(name)
        if name.endswith("attn.k.bias") and np.abs(ana).max() >= 1e-12:
            print(f"  {name}: analytic gradient {np.abs(ana).max():.3e} should be 0")
            failed.append(name + " (not zero)")
    print(f"gradcheck: worst relative error {worst_all:.3e} over "
          f"{len(params)} tensors")
    return failed


def adamw_check():
    """Compare G.AdamW with an element-by-element transcription."""
    failed = []
    rng = np.random.default_rng(7)
    for clip in (0.0, 0.5, 100.0):
        params = {"w": rng.standard_normal((3, 4)), "b": rng.standard_normal(4)}
        ref = {n: p.copy() for n, p in params.items()}
        mref = {n: np.zeros_like(p) for n, p in params.items()}
        vref = {n: np.zeros_like(p) for n, p in params.items()}
        lr, b1, b2, eps, wd = 3e-3, 0.9, 0.95, 1e-8, 0.1
        opt = G.AdamW(params, lr, b1, b2, eps, wd, clip)
        for t in range(1, 4):
            grads = {n: rng.standard_normal(p.shape) for n, p in params.items()}
            n_ref = math.sqrt(sum(float(x) ** 2 for g in grads.values()
                                  for x in g.reshape(-1)))
            s = clip / (n_ref + 1e-6) if (clip > 0 and n_ref > clip) else 1.0
            for n in ref:
                pf, mf, vf = ref[n].reshape(-1), mref[n].reshape(-1), vref[n].reshape(-1)
                gf = grads[n].reshape(-1)
                for i in range(pf.size):
                    g = float(gf[i]) * s
                    mf[i] = b1 * mf[i] + (1 - b1) * g
                    vf[i] = b2 * vf[i] + (1 - b2) * g * g
                    mh = mf[i] / (1 - b1 ** t)
                    vh = vf[i] / (1 - b2 ** t)
                    dec = wd if ref[n].ndim >= 2 else 0.0
                    pf[i] = pf[i] - lr * (mh / (math.sqrt(vh) + eps) + dec * pf[i])
            norm = opt.step(params, grads)
            if abs(norm - n_ref) > 1e-12 * max(1.0, n_ref):
                failed.append(f"adamw clip={clip} step {t}: norm {norm} != {n_ref}")
            for n in ref:
                err = np.abs(params[n] - ref[n]).max()
                if err > 1e-14:
                    failed.append(f"adamw clip={clip} step {t} {n}: max err {err:.3e}")
    print(f"adamw: {'ok' if not failed else 'FAIL'} (clip 0 / 0.5 / 100, 3 steps each)")
    return failed


def float32_check():
    cfg = G.Config(layers=2, hidden=8, heads=2, vocab=16, seq=5)
    rng = np.random.default_rng(99)
    p64 = random_params(cfg, rng)
    p32 = {n: p.astype(np.float32) for n, p in p64.items()}
    p64 = {n: p.astype(np.float64) for n, p in p32.items()}  # same values
    tokens = rng.integers(0, cfg.vocab, size=(2, 5))
    targets = rng.integers(0, cfg.vocab, size=(2, 5))
    l64, g64 = G.loss_and_grads(p64, cfg, tokens, targets)
    l32, g32 = G.loss_and_grads(p32, cfg, tokens, targets)
    failed = []
    if np.asarray(l32).dtype != np.float32:
        failed.append(f"float32 loss has dtype {np.asarray(l32).dtype}")
    worst = abs(float(l32) - float(l64)) / abs(float(l64))
    for n in g64:
        if g32[n].dtype != np.float32:
            failed.append(f"float32 grad {n} has dtype {g32[n].dtype}")
        d = np.abs(g32[n] - g64[n]).max() / max(np.abs(g64[n]).max(), FLOOR)
        worst = max(worst, float(d))
    if worst > 1e-4:
        failed.append(f"float32 vs float64 relative difference {worst:.3e} > 1e-4")
    print(f"float32: worst relative difference vs float64 {worst:.3e} "
          f"{'ok' if not failed else 'FAIL'}")
    return failed


def safetensors_check():
    rng = np.random.default_rng(3)
    tensors = {"a": rng.standard_normal((2, 3)).astype(np.float32),
               "b": rng.standard_normal(5),
               "c": np.arange(-3, 4, dtype=np.int32),
               "d": np.array([1.0, -2.5, 3.140625, 1e-3, 65280.0], dtype=np.float32),
               "e": np.float32(7.0).reshape(())}
    failed = []
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "x.safetensors")
        safetensors_io.save(path, tensors, metadata={"k": "v"}, dtypes={"d": "BF16"})
        back, meta = safetensors_io.load_with_metadata(path)
        with open(path, "rb") as f:
            hlen = int.from_bytes(f.read(8), "little")
        if hlen % 8:
            failed.append(f"header length {hlen} not 8-aligned")
    if meta != {"k": "v"}:
        failed.append(f"metadata {meta}")
    for n in ("a", "b", "c", "e"):
        if back[n].dtype != tensors[n].dtype or back[n].shape != tensors[n].shape \
                or not np.array_equal(back[n], tensors[n]):
            failed.append(f"round trip of {n} differs")
    bf = back["d"]
    want = np.array([1.0, -2.5, 3.140625, 0.00099945068359375, 65280.0], dtype=np.float32)
    if bf.dtype != np.float32 or not np.array_equal(bf, want):
        failed.append(f"bf16 round trip {bf} != {want}")
    print(f"safetensors: {'ok' if not failed else 'FAIL'}")
    return failed


def data_check():
    """Batch windows: p_k = (k mod nb) * B*T, nb = (ntok - 1) // (B*T)."""
    failed = []
    B, T = 2, 3
    for ntok, want in ((2 * B * T + 1, [0, 6, 0, 6]), (2 * B * T, [0, 0, 0]),
                       (3 * B * T + 5, [0, 6, 12, 0])):
        toks = np.arange(ntok, dtype=np.uint16)
        bt = G.Batches(toks, B, T, "synthetic")
        got = [bt.position(k) for k in range(len(want))]
        if got != want:
            failed.append(f"batch positions for {ntok} tokens {got} != {want}")
        for k in range(len(want)):
            x, y = bt.get(k)
            p = want[k]
            if not (np.array_equal(x.reshape(-1), np.arange(p, p + B * T)) and
                    np.array_equal(y.reshape(-1), np.arange(p + 1, p + B * T + 1))):
                failed.append(f"batch {k} for {ntok} tokens has wrong tokens")
    try:
        G.Batches(np.arange(B * T, dtype=np.uint16), B, T, "short")
        failed.append("B*T tokens (< B*T+1) were accepted")
    except G.RefError:
        pass
    print(f"data: {'ok' if not failed else 'FAIL'}")
    return failed


def main():
    failed = gradcheck()
    # Mixture of experts (moe_numpy.py): renormalized top-2 of 3 experts and
    # top-1 of 3, each with a capacity below the sequence (choices drop) and
    # a large balancing weight. Steps of 1e-5 in float64 move no token to
    # another expert: the routing is constant around these parameters.
    for top_k, capacity in ((2, 3), (1, 1)):
        failed += gradcheck(G.Config(layers=2, hidden=8, heads=2, vocab=16,
                                     seq=5, ffn=12, experts=3, top_k=top_k,
                                     capacity=capacity, aux_coeff=0.5))
    failed += data_check()
    failed += adamw_check()
    failed += float32_check()
    failed += safetensors_check()
    if failed:
        print("FAILED: " + "; ".join(failed))
        return 1
    print("PASSED")
    return 0


if __name__ == "__main__":
    sys.exit(main())
