#!/usr/bin/env python3
"""Import a Hugging Face model directory into Triax, without PyTorch.

    triax-import.py HF_DIR -o OUT_DIR [--seq N] [--batch N] [--micro-batch N]
                    [--name NAME] [--no-weights] [--bin DIR]
    triax-import.py --torch MODULE:FACTORY -o OUT_DIR --seq N [--batch N]
                    [--micro-batch N] [--lr X] [--weight-decay X]
                    [--grad-clip X]

HF_DIR holds what transformers' save_pretrained writes: config.json and
model.safetensors (or a sharded model.safetensors.index.json). OUT_DIR gets

  model.mlir         the model as Triax IR: triax-model with the config's
                     shapes (GPT-2: n_layer, n_embd, n_head, n_inner,
                     vocab_size; LLaMA / Mistral: num_hidden_layers,
                     hidden_size, num_attention_heads, num_key_value_heads,
                     intermediate_size, vocab_size);
  model.safetensors  its weights under Triax's names (unless --no-weights):
                     the model is compiled (triaxc) and its binary reads
                     HF_DIR through --init-from, the runtime's Hugging Face
                     name table (runtime/lib/cpu/hf_import.cpp: prefixes,
                     tied heads, mask buffers, nn.Linear transposes, F32 /
                     BF16 / F16), and writes them with --save-init;
  import.txt         what was read from where (--explain-names).

--seq defaults to the config's positions, at most 1024 (GPT-2's learned
table is cut to it); --batch to 8, --micro-batch to --batch. A config Triax
cannot express is refused with the reason: another activation or norm
epsilon, a tied LLaMA head, biases in a LLaMA model, a rotary embedding other
than the plain one (rope scaling) or another head size.

With --torch MODULE:FACTORY (PyTorch needed), FACTORY() from MODULE (a
module name or a .py file) gives a user's nn.Module whose forward(tokens,
targets) returns the mean cross-entropy loss; it is exported with
torch.export on a [micro-batch, seq] example batch and translated op by op
(tools/triax_torch.py lists the operators): OUT_DIR gets model.mlir (its
training config: AdamW with --lr, betas 0.9/0.95, eps 1e-8, --weight-decay
on the matrices, --grad-clip) and model.safetensors (the module's weights,
PyTorch's names and layouts, for --init-from). An operator Triax cannot
express is an error naming it and the Python source line.

triax-model and triaxc are taken from --bin, else from next to this script's
build (build/bin), else from PATH.

Exit codes: 0 ok, 1 a config or file that cannot be imported, 2 usage.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile


class ImportError_(Exception):
    pass


def tool(name, bin_dir):
    for d in ([bin_dir] if bin_dir else []) + [
            os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                         "build", "bin")]:
        p = os.path.join(d, name)
        if os.access(p, os.X_OK):
            return p
    p = shutil.which(name)
    if not p:
        raise ImportError_(f"cannot find {name} (give --bin DIR)")
    return p


def get(cfg, key, default=None, required=True):
    if key in cfg and cfg[key] is not None:
        return cfg[key]
    if required and default is None:
        raise ImportError_(f"config.json has no '{key}'")
    return default


def model_args(cfg, seq):
    """triax-model's config and flags for an HF config."""
    kind = cfg.get("model_type")
    if kind == "gpt2":
        act = cfg.get("activation_function", "gelu_new")
        if act not in ("gelu_new", "gelu_pytorch_tanh"):
            raise ImportError_(
                f"activation_function '{act}': Triax's GELU is the tanh "
                "approximation (gelu_new)")
        eps = float(cfg.get("layer_norm_epsilon", 1e-5))
        if abs(eps - 1e-5) > 1e-12:
            raise ImportError_(f"layer_norm_epsilon {eps}: Triax's LayerNorm "
                               "uses 1e-5")
        hidden = int(get(cfg, "n_embd"))
        positions = int(get(cfg, "n_positions"))
        args = ["gpt2", "--layers", str(get(cfg, "n_layer")), "--hidden",
                str(hidden), "--heads", str(get(cfg, "n_head")), "--vocab",
                str(get(cfg, "vocab_size"))]
        inner = cfg.get("n_inner")
        if inner is not None:
            args += ["--ffn", str(inner)]
        return args, positions, []
    if kind in ("llama", "mistral", "mixtral"):
        if cfg.get("hidden_act", "silu") != "silu":
            raise ImportError_(f"hidden_act '{cfg['hidden_act']}': Triax's "
                               "LLaMA MLP is SwiGLU (silu)")
        if cfg.get("tie_word_embeddings", False):
            raise ImportError_("tie_word_embeddings: Triax's LLaMA model has "
                               "an untied head")
        if cfg.get("attention_bias", False) or cfg.get("mlp_bias", False):
            raise ImportError_("attention_bias / mlp_bias: Triax's LLaMA "
                               "model has no biases")
        eps = float(cfg.get("rms_norm_eps", 1e-5))
        if abs(eps - 1e-5) > 1e-12:
            raise ImportError_(f"rms_norm_eps {eps}: Triax's RMSNorm uses 1e-5")
        heads = int(get(cfg, "num_attention_heads"))
        args = ["llama2-7b", "--layers", str(get(cfg, "num_hidden_layers")),
                "--hidden", str(get(cfg, "hidden_size")), "--heads",
                str(heads), "--kv-heads",
                str(get(cfg, "num_key_value_heads", heads)), "--ffn",
                str(get(cfg, "intermediate_size")), "--vocab",
                str(get(cfg, "vocab_size"))]
        # The rotary embedding: rope_theta (transformers 5 also writes it in
        # rope_parameters), plain rotary only.
        rope = cfg.get("rope_parameters") or {}
        scaling = cfg.get("rope_scaling") or {}
        kind_of_rope = rope.get("rope_type", scaling.get("rope_type",
                                                         scaling.get("type")))
        if kind_of_rope not in (None, "default"):
            raise ImportError_(f"rope_type '{kind_of_rope}': Triax's rotary "
                               "embedding is the plain (default) one")
        head_dim = cfg.get("head_dim")
        if head_dim is not None and int(head_dim) * heads != int(
                get(cfg, "hidden_size")):
            raise ImportError_(f"head_dim {head_dim}: Triax's heads are "
                               "hidden_size / num_attention_heads")
        theta = float(rope.get("rope_theta", cfg.get("rope_theta", 10000.0)))
        if theta != 10000.0 or kind == "mixtral":  # (mixtral's preset: 1e6)
            args += ["--rope-theta", repr(theta)]
        if kind == "mixtral":
            # Mixtral's experts route dropless (no capacity), top-k
            # renormalized, with its load-balancing coefficient.
            args[0] = "mixtral-8x7b"
            args += ["--experts", str(get(cfg, "num_local_experts")),
                     "--top-k", str(get(cfg, "num_experts_per_tok")),
                     "--capacity-factor", "0", "--aux-loss-coeff",
                     repr(float(cfg.get("router_aux_loss_coef", 0.02)))]
            if cfg.get("sliding_window") not in (None, 0):
                raise ImportError_("sliding_window: Triax's attention is "
                                   "full causal")
        positions = int(get(cfg, "max_position_embeddings", 4096))
        return args, positions, []
    raise ImportError_(f"model_type '{kind}': triax-import reads gpt2, llama, "
                       "mistral and mixtral")


def run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        raise ImportError_(" ".join(os.path.basename(c) if i == 0 else c
                                    for i, c in enumerate(cmd)) +
                           " failed:\n" + (r.stderr or r.stdout).strip())
    return r


def import_torch(a):
    """--torch: a user's nn.Module through torch.export (triax_torch.py)."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    try:
        import torch  # noqa: F401
        import triax_torch
    except ImportError as e:
        print(f"triax-import: error: --torch needs PyTorch: {e}",
              file=sys.stderr)
        return 1
    try:
        if not a.seq:
            raise triax_torch.TorchImportError("--torch needs --seq")
        micro = a.micro_batch or a.batch
        if a.batch % micro:
            raise triax_torch.TorchImportError(
                f"--batch {a.batch} is not a multiple of --micro-batch {micro}")
        text, weights = triax_torch.translate(
            a.torch, a.batch, micro, a.seq, a.name or "model", a.lr,
            a.weight_decay, a.grad_clip)
        os.makedirs(a.out, exist_ok=True)
        mlir = os.path.join(a.out, "model.mlir")
        with open(mlir + ".tmp", "w") as f:
            f.write(text)
        os.replace(mlir + ".tmp", mlir)
        # The IR must be Triax's: checked by triax-opt before it is kept.
        run([tool("triax-opt", a.bin), mlir, "-o", os.devnull])
        from safetensors.torch import save_file
        st = os.path.join(a.out, "model.safetensors")
        save_file(weights, st + ".tmp")
        os.replace(st + ".tmp", st)
        print(f"triax-import: {mlir}: {a.torch} through torch.export "
              f"({len(weights)} parameters)")
        print(f"triax-import: {st}: its initial weights (PyTorch's names "
              "and layouts; --init-from reads them)")
        return 0
    except (triax_torch.TorchImportError, ImportError_) as e:
        print(f"triax-import: error: {e}", file=sys.stderr)
        return 1


def main():
    p = argparse.ArgumentParser(prog="triax-import", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("hf_dir", nargs="?")
    p.add_argument("-o", "--out", required=True)
    p.add_argument("--torch", metavar="MODULE:FACTORY")
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--weight-decay", type=float, default=0.1)
    p.add_argument("--grad-clip", type=float, default=1.0)
    p.add_argument("--seq", type=int)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--micro-batch", type=int)
    p.add_argument("--name")
    p.add_argument("--no-weights", action="store_true")
    p.add_argument("--bin")
    a = p.parse_args()
    if bool(a.hf_dir) == bool(a.torch):
        p.error("give a Hugging Face directory or --torch MODULE:FACTORY")
    if a.torch:
        return import_torch(a)
    try:
        cfg_path = os.path.join(a.hf_dir, "config.json")
        try:
            with open(cfg_path) as f:
                cfg = json.load(f)
        except OSError as e:
            raise ImportError_(f"{cfg_path}: {e.strerror}")
        except json.JSONDecodeError as e:
            raise ImportError_(f"{cfg_path}: invalid JSON: {e}")
        args, positions, notes = model_args(cfg, a.seq)
        seq = a.seq or min(positions, 1024)
        if seq > positions:
            raise ImportError_(f"--seq {seq} is longer than the model's "
                               f"{positions} positions")
        args += ["--seq", str(seq), "--batch", str(a.batch), "--micro-batch",
                 str(a.micro_batch or a.batch)]
        if a.name:
            args += ["--name", a.name]
        os.makedirs(a.out, exist_ok=True)
        mlir = os.path.join(a.out, "model.mlir")
        run([tool("triax-model", a.bin)] + args + ["-o", mlir])
        print(f"triax-import: {mlir}: triax-model {' '.join(args)}")
        for n in notes:
            print(f"triax-import: warning: {n}", file=sys.stderr)
        if a.no_weights:
            return 0
        with tempfile.TemporaryDirectory() as tmp:
            binary = os.path.join(tmp, "train")
            run([tool("triaxc", a.bin), mlir, "-o", binary])
            weights = os.path.join(a.out, "model.safetensors")
            r = run([binary, "--steps", "0", "--init-from", a.hf_dir,
                     "--explain-names", "--save-init", weights])
            with open(os.path.join(a.out, "import.txt"), "w") as f:
                f.write(r.stdout)
        print(f"triax-import: {weights}: the weights of {a.hf_dir} under "
              "Triax's names (import.txt: from where)")
        return 0
    except ImportError_ as e:
        print(f"triax-import: error: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
