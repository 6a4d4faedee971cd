"""transformers' side of the Hugging Face round trips (needs PyTorch and
transformers: utils/setup.sh installs them into the test venv).

  hf_transformers.py make --family gpt2|llama|mixtral OUT [--layers L
        --hidden H --heads A --kv-heads K --ffn F --vocab V --positions P
        --theta T --experts E --seed S --dtype float32|bfloat16
        --shard-size BYTES]
      A GPT2LMHeadModel, LlamaForCausalLM or MixtralForCausalLM (top-2) with
      transformers' own random
      initialization, written by save_pretrained (one file, or shards of at
      most BYTES with model.safetensors.index.json; bfloat16 weights with
      --dtype bfloat16).
  hf_transformers.py loss MODEL_DIR DATA.bin --batch B --seq T --index K
      AutoModelForCausalLM.from_pretrained(MODEL_DIR) in float32 (no other
      code), eval mode, its mean cross-entropy on batch K of the llm.c .bin
      corpus (the sequential batches Triax's loader takes), as JSON
      {"losses": [loss]}.
  hf_transformers.py train-torch MODULE:FACTORY WEIGHTS DATA.bin --batch B
        --seq T --steps N [--lr X --weight-decay X --grad-clip X]
      PyTorch's own training of a user's module (the reference for
      triax-import --torch): its weights from WEIGHTS, torch.optim.AdamW
      (betas 0.9/0.95, eps 1e-8, the weight decay on parameters of rank >= 2
      only, as Triax decays), clip_grad_norm_, a constant lr, the corpus's
      sequential batches; {"losses": [...], "grad_norms": [...]} (the norm
      before clipping).
"""

import argparse
import json
import os
import sys

import torch
import transformers

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "reference"))
import llmc_bin  # noqa: E402
from gpt_numpy import Batches  # noqa: E402


def make(a):
    torch.manual_seed(a.seed)
    if a.family == "gpt2":
        cfg = transformers.GPT2Config(
            n_layer=a.layers, n_embd=a.hidden, n_head=a.heads,
            n_inner=a.ffn, vocab_size=a.vocab, n_positions=a.positions,
            activation_function="gelu_new", layer_norm_epsilon=1e-5)
        model = transformers.GPT2LMHeadModel(cfg)
    else:
        # The LLaMA family's shapes; Mixtral adds its experts.
        llama = dict(
            num_hidden_layers=a.layers, hidden_size=a.hidden,
            num_attention_heads=a.heads,
            num_key_value_heads=a.kv_heads or a.heads,
            intermediate_size=a.ffn, vocab_size=a.vocab,
            max_position_embeddings=a.positions, rms_norm_eps=1e-5,
            rope_theta=a.theta, tie_word_embeddings=False)
        if a.family == "mixtral":
            model = transformers.MixtralForCausalLM(transformers.MixtralConfig(
                **llama, num_local_experts=a.experts, num_experts_per_tok=2,
                sliding_window=None, router_aux_loss_coef=a.aux_coef))
        else:
            model = transformers.LlamaForCausalLM(
                transformers.LlamaConfig(**llama))
    model = model.to(getattr(torch, a.dtype))
    kw = {"max_shard_size": a.shard_size} if a.shard_size else {}
    model.save_pretrained(a.out, **kw)


def loss(a):
    model = transformers.AutoModelForCausalLM.from_pretrained(
        a.model, dtype=torch.float32)
    model.eval()
    tokens, targets = Batches(llmc_bin.read_tokens(a.data), a.batch, a.seq,
                              a.data).get(a.index)
    with torch.no_grad():
        logits = model(torch.tensor(tokens)).logits.float()
        value = torch.nn.functional.cross_entropy(
            logits.reshape(-1, logits.shape[-1]),
            torch.tensor(targets).reshape(-1))
    print(json.dumps({"losses": [float(value)]}))


def train_torch(a):
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(
        __file__)), "..", "..", "..", "tools"))
    import triax_torch
    from safetensors.torch import load_file
    torch.manual_seed(0)
    model = triax_torch.load_factory(a.module)()
    missing, unexpected = model.load_state_dict(load_file(a.weights),
                                                strict=False)
    if unexpected:
        raise SystemExit(f"unexpected tensors {unexpected}")
    params = [p for p in model.parameters()]
    groups = [{"params": [p for p in params if p.dim() >= 2],
               "weight_decay": a.weight_decay},
              {"params": [p for p in params if p.dim() < 2],
               "weight_decay": 0.0}]
    opt = torch.optim.AdamW(groups, lr=a.lr, betas=(0.9, 0.95), eps=1e-8)
    batches = Batches(llmc_bin.read_tokens(a.data), a.batch, a.seq, a.data)
    losses, norms = [], []
    model.train()
    for step in range(a.steps):
        tokens, targets = batches.get(step)
        opt.zero_grad()
        value = model(torch.tensor(tokens), torch.tensor(targets))
        value.backward()
        norm = torch.nn.utils.clip_grad_norm_(params, a.grad_clip)
        opt.step()
        losses.append(value.item())
        norms.append(float(norm))
    print(json.dumps({"losses": losses, "grad_norms": norms}))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("make")
    m.add_argument("out")
    m.add_argument("--family", choices=["gpt2", "llama", "mixtral"],
                   required=True)
    for name, default in [("layers", 2), ("hidden", 64), ("heads", 4),
                          ("kv-heads", 0), ("ffn", 128), ("vocab", 256),
                          ("positions", 64), ("seed", 0), ("shard-size", 0),
                          ("experts", 4)]:
        m.add_argument("--" + name, type=int, default=default)
    m.add_argument("--theta", type=float, default=10000.0)
    # (0: the loss Triax logs is the cross-entropy alone, as `loss` computes)
    m.add_argument("--aux-coef", type=float, default=0.0)
    m.add_argument("--dtype", choices=["float32", "bfloat16"],
                   default="float32")
    l = sub.add_parser("loss")
    l.add_argument("model")
    l.add_argument("data")
    l.add_argument("--batch", type=int, required=True)
    l.add_argument("--seq", type=int, required=True)
    l.add_argument("--index", type=int, default=0)
    t = sub.add_parser("train-torch")
    t.add_argument("module")
    t.add_argument("weights")
    t.add_argument("data")
    t.add_argument("--batch", type=int, required=True)
    t.add_argument("--seq", type=int, required=True)
    t.add_argument("--steps", type=int, required=True)
    t.add_argument("--lr", type=float, default=1e-3)
    t.add_argument("--weight-decay", type=float, default=0.1)
    t.add_argument("--grad-clip", type=float, default=1.0)
    a = p.parse_args()
    {"make": make, "loss": loss, "train-torch": train_torch}[a.cmd](a)


if __name__ == "__main__":
    main()
