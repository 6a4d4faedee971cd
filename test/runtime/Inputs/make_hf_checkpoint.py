"""Writes a Triax model's weights (a Triax safetensors file, e.g. from
--save-init) as Hugging Face's transformers would save them, to test
--init-from on checkpoints as they come. No PyTorch: the layouts are
transformers' (GPT2LMHeadModel / LlamaForCausalLM state dicts):

  gpt2    "transformer." before every name, lm_head.weight (the tied head,
          a copy of wte), h.N.attn.bias and h.N.attn.masked_bias (the causal
          mask buffers), wpe with --positions rows (extra rows random);
  llama   the names and layouts as they are ("model." ...; Triax writes
          the *_proj.weight and lm_head.weight as nn.Linear's [out, in]),
          model.layers.N.self_attn.rotary_emb.inv_freq buffers.

usage: make_hf_checkpoint.py TRIAX.safetensors OUT --family gpt2|llama
       [--dtype F32|BF16|F16] [--shards N] [--positions P]
       [--drop NAME] [--rename OLD=NEW] [--reshape NAME]
OUT is a directory: model.safetensors, or with --shards N > 1
model-0000i-of-0000N.safetensors and model.safetensors.index.json.
--drop, --rename and --reshape (one extra row) break it on purpose;
--heads H also writes config.json (as transformers would for the shapes).
Also writes OUT/expected.safetensors: the model's tensors as Triax should
read them back (the stored values, converted to f32).
"""
import argparse
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..",
                                "reference"))
import safetensors_io  # noqa: E402

p = argparse.ArgumentParser()
p.add_argument("src")
p.add_argument("out")
p.add_argument("--family", choices=["gpt2", "llama"], required=True)
p.add_argument("--dtype", default="F32", choices=["F32", "BF16", "F16"])
p.add_argument("--shards", type=int, default=1)
p.add_argument("--positions", type=int, default=0)
p.add_argument("--drop", action="append", default=[])
p.add_argument("--rename", action="append", default=[])
p.add_argument("--reshape", action="append", default=[])
p.add_argument("--heads", type=int, default=0,
               help="also write the config.json transformers would (the "
               "attention heads are not in the tensors' shapes)")
a = p.parse_args()

triax = safetensors_io.load(a.src)
rng = np.random.default_rng(0)
hf = {}
expected = {}


def stored(x):
    """x as the file stores it, back in f32."""
    x = np.asarray(x, dtype=np.float32)
    if a.dtype == "F16":
        return x.astype(np.float16).astype(np.float32)
    if a.dtype == "BF16":
        return safetensors_io.bf16_to_f32(safetensors_io.f32_to_bf16(x))
    return x


for name, x in triax.items():
    if a.family == "gpt2":
        if name == "wpe.weight" and a.positions > x.shape[0]:
            extra = rng.standard_normal(
                (a.positions - x.shape[0], x.shape[1])).astype(np.float32)
            hf["transformer." + name] = np.concatenate([x, extra])
        else:
            hf["transformer." + name] = x
        expected[name] = stored(x)
        if name == "wte.weight":
            hf["lm_head.weight"] = x
        if name.endswith(".attn.c_attn.weight"):
            layer = name[: -len(".attn.c_attn.weight")]
            n = 8
            hf["transformer." + layer + ".attn.bias"] = np.tril(
                np.ones((n, n), np.float32))[None, None]
            hf["transformer." + layer + ".attn.masked_bias"] = np.array(
                -1e4, np.float32)
    else:
        # (Triax's LLaMA checkpoints hold the linear weights as nn.Linear's
        # [out, in] already: trx_param_desc::ckpt_transposed.)
        hf[name] = x
        expected[name] = stored(x)
        if name.endswith(".self_attn.q_proj.weight"):
            layer = name[: -len(".q_proj.weight")]
            hf[layer + ".rotary_emb.inv_freq"] = np.ones(4, np.float32)

for name in a.drop:
    del hf[name]
for pair in a.rename:
    old, new = pair.split("=", 1)
    hf[new] = hf.pop(old)
for name in a.reshape:
    x = hf[name]
    hf[name] = np.concatenate([x, x[:1]])

os.makedirs(a.out, exist_ok=True)
dtypes = {k: a.dtype for k in hf}
names = sorted(hf)
if a.shards <= 1:
    safetensors_io.save(os.path.join(a.out, "model.safetensors"), hf,
                        metadata={"format": "pt"}, dtypes=dtypes)
else:
    weight_map = {}
    for i in range(a.shards):
        part = names[i::a.shards]
        fname = "model-%05d-of-%05d.safetensors" % (i + 1, a.shards)
        safetensors_io.save(os.path.join(a.out, fname),
                            {k: hf[k] for k in part},
                            metadata={"format": "pt"},
                            dtypes={k: a.dtype for k in part})
        weight_map.update({k: fname for k in part})
    with open(os.path.join(a.out, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": 0}, "weight_map": weight_map},
                  f, indent=2)
safetensors_io.save(os.path.join(a.out, "expected.safetensors"), expected)

if a.heads:
    layers = len({n.split(".")[1] for n in triax if n.startswith("h.")} |
                 {n.split(".")[2] for n in triax
                  if n.startswith("model.layers.")})
    if a.family == "gpt2":
        vocab, hidden = triax["wte.weight"].shape
        inner = triax["h.0.mlp.c_fc.weight"].shape[1]
        config = {"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"],
                  "n_layer": layers, "n_embd": int(hidden), "n_head": a.heads,
                  "n_positions": max(a.positions,
                                     int(triax["wpe.weight"].shape[0])),
                  "vocab_size": int(vocab),
                  "n_inner": None if inner == 4 * hidden else int(inner),
                  "activation_function": "gelu_new",
                  "layer_norm_epsilon": 1e-05, "tie_word_embeddings": True}
    else:
        vocab, hidden = triax["model.embed_tokens.weight"].shape
        # (nn.Linear's [out, in]: the output features first.)
        kv = triax["model.layers.0.self_attn.k_proj.weight"].shape[0]
        config = {"model_type": "llama", "architectures": ["LlamaForCausalLM"],
                  "num_hidden_layers": layers, "hidden_size": int(hidden),
                  "num_attention_heads": a.heads,
                  "num_key_value_heads": int(kv // (hidden // a.heads)),
                  "intermediate_size": int(
                      triax["model.layers.0.mlp.gate_proj.weight"].shape[0]),
                  "vocab_size": int(vocab), "max_position_embeddings": 2048,
                  "rms_norm_eps": 1e-05, "hidden_act": "silu",
                  "tie_word_embeddings": False}
    with open(os.path.join(a.out, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
