"""A user's PyTorch nn.Module as Triax IR, through torch.export.

triax-import --torch MODULE:FACTORY calls FACTORY() (from MODULE, a module
name or a .py file) for an nn.Module whose forward(tokens, targets) takes
[batch, seq] integer token ids and targets and returns the mean
cross-entropy loss, exports it with torch.export on an example batch, and
translates the exported graph (ATen operators) op by op into triax ops:

  aten.embedding                 triax.embedding (of the tokens), or of
                                 aten.arange(seq): triax.position_ids and
                                 triax.embedding (added to the batch by
                                 broadcasting)
  aten.linear                    triax.linear {transpose_weight}: PyTorch's
                                 [out, in] weights stay as they are
  aten.layer_norm, aten.rms_norm triax.layer_norm, triax.rms_norm (eps kept)
  aten.gelu (tanh), aten.silu    triax.gelu, triax.silu
  aten.add, aten.mul (tensors)   triax.add, triax.mul
  aten.view + aten.transpose     the heads of a [batch, seq, heads*d] value
  around scaled_dot_product_     ([batch, heads, seq, d]) and back:
  attention (causal)             triax.attention
  aten.view(-1, V) +             triax.cross_entropy over [batch, seq]
  aten.cross_entropy_loss

Anything else (or these with other arguments: exact GELU, a mask, dropout,
a scale) is an error naming the operator and the Python source line it
came from. Parameters keep their state_dict names and layouts: the weights
file this writes is read by the compiled binary's --init-from as it is.
"""

import importlib
import importlib.util
import math
import os
import sys


class TorchImportError(Exception):
    pass


def load_factory(spec):
    if ":" not in spec:
        raise TorchImportError(f"--torch {spec}: expected MODULE:FACTORY")
    mod_name, fn = spec.rsplit(":", 1)
    if mod_name.endswith(".py"):
        path = os.path.abspath(mod_name)
        s = importlib.util.spec_from_file_location(
            os.path.splitext(os.path.basename(path))[0], path)
        if s is None or not os.path.exists(path):
            raise TorchImportError(f"--torch {spec}: no file {mod_name}")
        module = importlib.util.module_from_spec(s)
        sys.path.insert(0, os.path.dirname(path))
        s.loader.exec_module(module)
    else:
        module = importlib.import_module(mod_name)
    if not hasattr(module, fn):
        raise TorchImportError(f"--torch {spec}: {mod_name} has no {fn}")
    return getattr(module, fn)


def where(node):
    """The user's source line of an exported node, for messages."""
    trace = (node.meta.get("stack_trace") or "").strip().splitlines()
    for i in range(len(trace) - 1, -1, -1):
        line = trace[i].strip()
        if line.startswith("File "):
            code = trace[i + 1].strip() if i + 1 < len(trace) else ""
            loc = line.split(",")
            file = loc[0][len("File "):].strip('"')
            lineno = loc[1].strip() if len(loc) > 1 else ""
            return f"{os.path.basename(file)}:{lineno.replace('line ', '')}" + (
                f" `{code}`" if code else "")
    return "unknown source line"


def num(x):
    """A float as MLIR writes it (1e-05 is not MLIR: 1.0e-05 is)."""
    return f"{float(x):.17e}"


def ttype(shape, elt="f32"):
    if not shape:
        return f"tensor<{elt}>"
    return "tensor<" + "x".join(str(int(d)) for d in shape) + f"x{elt}>"


class Val:
    """A translated value: a triax SSA value (`name`, its `shape`), or a
    view of one the graph makes on its way to an op (kind: 'split' =
    [B, T, heads, d], 'heads' = [B, heads, T, d], 'flat' = [B*T, ...],
    'arange' = the positions 0..T-1)."""

    def __init__(self, kind, name=None, shape=None, elt="f32", base=None,
                 heads=None):
        self.kind, self.name, self.shape, self.elt = kind, name, shape, elt
        self.base, self.heads = base, heads


class Translator:
    def __init__(self, ep, batch, seq):
        self.ep, self.B, self.T = ep, batch, seq
        self.lines, self.count, self.vals = [], 0, {}
        self.params = {}  # placeholder name -> (state_dict name, shape)

    def fresh(self):
        self.count += 1
        return f"%v{self.count}"

    def emit(self, text):
        self.lines.append("    " + text)

    def fail(self, node, what):
        raise TorchImportError(f"{node.target} at {where(node)}: {what}")

    def tensor(self, node, arg):
        v = self.vals.get(getattr(arg, "name", None))
        if v is None or v.kind != "tensor":
            self.fail(node, f"operand {arg} is not a tensor Triax holds "
                      "(a view the translation does not follow)")
        return v

    def new(self, text, shape, elt="f32"):
        name = self.fresh()
        self.emit(f"{name} = {text}")
        return Val("tensor", name, list(shape), elt)

    def run(self):
        sig = self.ep.graph_signature
        to_param = dict(sig.inputs_to_parameters)
        inputs = [s.arg.name for s in sig.input_specs
                  if s.kind.name == "USER_INPUT"]
        if len(inputs) != 2:
            raise TorchImportError(
                "forward must take (tokens, targets), got "
                f"{len(inputs)} inputs")
        state = self.ep.state_dict
        for node in self.ep.graph.nodes:
            if node.op == "placeholder":
                if node.name in to_param:
                    pname = to_param[node.name]
                    shape = list(state[pname].shape)
                    self.params[node.name] = (pname, shape)
                    self.vals[node.name] = self.new(
                        f"triax.get_param @{pname} : {ttype(shape)}", shape)
                elif node.name == inputs[0]:
                    self.vals[node.name] = Val("tensor", "%tokens",
                                               [self.B, self.T], "i32")
                elif node.name == inputs[1]:
                    self.vals[node.name] = Val("tensor", "%targets",
                                               [self.B, self.T], "i32")
                else:
                    self.fail(node, "buffers and constants are not supported")
            elif node.op == "call_function":
                self.vals[node.name] = self.op(node)
            elif node.op == "output":
                out = node.args[0]
                out = out[0] if isinstance(out, (tuple, list)) else out
                v = self.tensor(node, out)
                if v.shape != []:
                    self.fail(node, "forward must return the scalar loss")
                self.emit(f"return {v.name} : tensor<f32>")
        return self.lines

    def op(self, n):
        t = str(n.target)
        a = n.args
        kw = n.kwargs
        if t == "aten.arange.default" or t == "aten.arange.start":
            start, end = (0, a[0]) if t.endswith("default") else a[:2]
            if start != 0 or end != self.T:
                self.fail(n, f"positions other than arange({self.T})")
            return Val("arange")
        if t == "aten.embedding.default":
            w, idx = self.tensor(n, a[0]), self.vals.get(a[1].name)
            if len(a) > 2 and a[2] not in (-1, None):
                self.fail(n, "padding_idx is not supported")
            out = [self.B, self.T, w.shape[1]]
            if idx is not None and idx.kind == "arange":
                pos = self.new(
                    f"triax.position_ids : {ttype([self.B, self.T], 'i32')}",
                    [self.B, self.T], "i32")
                # (torch's [seq, h], added to [batch, seq, h] by
                # broadcasting: Triax's lookup is [batch, seq, h] already.)
                return self.new(
                    f"triax.embedding {pos.name}, {w.name} : "
                    f"({ttype(pos.shape, 'i32')}, {ttype(w.shape)}) -> "
                    f"{ttype(out)}", out)
            idx = self.tensor(n, a[1])
            return self.new(
                f"triax.embedding {idx.name}, {w.name} : "
                f"({ttype(idx.shape, 'i32')}, {ttype(w.shape)}) -> "
                f"{ttype(out)}", out)
        if t in ("aten.add.Tensor", "aten.mul.Tensor"):
            if kw.get("alpha", 1) != 1 or len(a) > 2:
                self.fail(n, "alpha is not supported")
            x, y = self.tensor(n, a[0]), self.tensor(n, a[1])
            if x.shape != y.shape:
                self.fail(n, f"shapes {x.shape} and {y.shape}: Triax's "
                          "elementwise ops take equal shapes")
            op = "triax.add" if t.startswith("aten.add") else "triax.mul"
            return self.new(f"{op} {x.name}, {y.name} : {ttype(x.shape)}",
                            x.shape)
        if t == "aten.linear.default":
            x, w = self.tensor(n, a[0]), self.tensor(n, a[1])
            b = self.tensor(n, a[2]) if len(a) > 2 and a[2] is not None \
                else None
            out = x.shape[:-1] + [w.shape[0]]
            ops = f"{x.name}, {w.name}" + (f", {b.name}" if b else "")
            types = f"{ttype(x.shape)}, {ttype(w.shape)}" + (
                f", {ttype(b.shape)}" if b else "")
            return self.new(f"triax.linear {ops} {{transpose_weight}} : "
                            f"({types}) -> {ttype(out)}", out)
        if t in ("aten.layer_norm.default", "aten.rms_norm.default"):
            x = self.tensor(n, a[0])
            if list(a[1]) != x.shape[-1:]:
                self.fail(n, "normalization over the last dimension only")
            if t.startswith("aten.layer_norm"):
                w, b = a[2], a[3]
                eps = a[4] if len(a) > 4 else 1e-5
                if w is None or b is None:
                    self.fail(n, "layer_norm needs its weight and bias")
                w, b = self.tensor(n, w), self.tensor(n, b)
                return self.new(
                    f"triax.layer_norm {x.name}, {w.name}, {b.name} "
                    f"{{eps = {num(eps)} : f64}} : ({ttype(x.shape)}, "
                    f"{ttype(w.shape)}, {ttype(b.shape)}) -> {ttype(x.shape)}",
                    x.shape)
            w = a[2] if len(a) > 2 else None
            eps = a[3] if len(a) > 3 else None
            if w is None or eps is None:
                self.fail(n, "rms_norm needs its weight and an explicit eps")
            w = self.tensor(n, w)
            return self.new(
                f"triax.rms_norm {x.name}, {w.name} {{eps = {num(eps)} : "
                f"f64}} : ({ttype(x.shape)}, {ttype(w.shape)}) -> "
                f"{ttype(x.shape)}", x.shape)
        if t == "aten.gelu.default":
            if kw.get("approximate", "none") != "tanh":
                self.fail(n, "exact (erf) GELU: Triax's triax.gelu is the "
                          "tanh approximation (approximate='tanh')")
            x = self.tensor(n, a[0])
            return self.new(f"triax.gelu {x.name} : {ttype(x.shape)}", x.shape)
        if t == "aten.silu.default":
            x = self.tensor(n, a[0])
            return self.new(f"triax.silu {x.name} : {ttype(x.shape)}", x.shape)
        if t in ("aten.view.default", "aten.reshape.default",
                 "aten._unsafe_view.default"):
            return self.view(n)
        if t == "aten.transpose.int":
            return self.transpose(n)
        if t in ("aten.contiguous.default", "aten.clone.default"):
            return self.vals[a[0].name]
        if t == "aten.scaled_dot_product_attention.default":
            return self.attention(n)
        if t == "aten.cross_entropy_loss.default":
            logits, targets = self.vals[a[0].name], self.vals[a[1].name]
            rest = list(a[2:]) + [None] * 4
            weight, reduction, ignore, smoothing = rest[:4]
            if weight is not None or reduction not in (None, 1) or \
                    ignore not in (None, -100) or smoothing not in (None, 0.0):
                self.fail(n, "cross_entropy with a weight, another reduction "
                          "or label smoothing")
            if logits.kind != "flat" or targets.kind != "flat":
                self.fail(n, "cross_entropy over logits.view(-1, V) and "
                          "targets.view(-1) of [batch, seq] tokens")
            lo, ta = logits.base, targets.base
            return self.new(
                f"triax.cross_entropy {lo.name}, {ta.name} : "
                f"({ttype(lo.shape)}, {ttype(ta.shape, 'i32')}) -> tensor<f32>",
                [])
        self.fail(n, "has no Triax op (docs: tools/triax_torch.py lists the "
                  "operators triax-import translates)")

    def view(self, n):
        src = self.vals[n.args[0].name]
        shape = [int(d) for d in n.args[1]]
        if src.kind == "tensor" and len(src.shape) == 3 and len(shape) == 4 \
                and shape[:2] == src.shape[:2] and \
                shape[2] * shape[3] == src.shape[2]:
            return Val("split", base=src, heads=shape[2])
        if src.kind == "split2" and shape == src.base.shape:
            return src.base
        if src.kind == "tensor" and -1 in shape and len(shape) <= 2 and \
                len(src.shape) >= 2 and src.shape[:2] == [self.B, self.T]:
            return Val("flat", base=src)
        self.fail(n, f"a view of {src.kind} {src.shape} as {shape} the "
                  "translation does not follow (heads views around "
                  "scaled_dot_product_attention and the loss's flattening)")

    def transpose(self, n):
        src = self.vals[n.args[0].name]
        dims = sorted(int(d) % 4 for d in n.args[1:3])
        if dims == [1, 2] and src.kind == "split":
            return Val("heads", base=src.base, heads=src.heads)
        if dims == [1, 2] and src.kind == "heads":
            return Val("split2", base=src.base, heads=src.heads)
        self.fail(n, "a transpose other than the heads' (dimensions 1 and 2 "
                  "around scaled_dot_product_attention)")

    def attention(self, n):
        a = list(n.args) + [None] * 6
        q, k, v = (self.vals[x.name] for x in a[:3])
        mask, dropout, causal = a[3], a[4] or 0.0, a[5]
        causal = n.kwargs.get("is_causal", causal)
        scale = n.kwargs.get("scale")
        if mask is not None or dropout != 0.0 or not causal or \
                n.kwargs.get("enable_gqa", False):
            self.fail(n, "scaled_dot_product_attention without a mask or "
                      "dropout, is_causal=True")
        if any(x.kind != "heads" for x in (q, k, v)):
            self.fail(n, "query, key and value as [batch, heads, seq, d] "
                      "views of [batch, seq, heads*d] values")
        d = q.base.shape[2] // q.heads
        if scale is not None and abs(scale - 1 / math.sqrt(d)) > 1e-12:
            self.fail(n, "a scale other than 1/sqrt(d)")
        kv = "" if k.heads == q.heads else f" kv_heads = {k.heads}"
        out = self.new(
            f"triax.attention {q.base.name}, {k.base.name}, {v.base.name} "
            f"heads = {q.heads}{kv} : ({ttype(q.base.shape)}, "
            f"{ttype(k.base.shape)}, {ttype(v.base.shape)}) -> "
            f"{ttype(q.base.shape)}", q.base.shape)
        return Val("heads", base=out, heads=q.heads)


def translate(spec, batch, micro_batch, seq, name, lr, weight_decay,
              grad_clip):
    """Returns (MLIR text, {name: float32 numpy array}) for the module."""
    import torch
    model = load_factory(spec)()
    if not isinstance(model, torch.nn.Module):
        raise TorchImportError(f"--torch {spec}: the factory did not return "
                               "an nn.Module")
    model.eval()
    tokens = torch.zeros(micro_batch, seq, dtype=torch.long)
    targets = torch.ones(micro_batch, seq, dtype=torch.long)
    try:
        ep = torch.export.export(model, (tokens, targets))
    except Exception as e:  # noqa: BLE001 - torch.export's own message
        raise TorchImportError(f"torch.export failed: {e}")
    tr = Translator(ep, micro_batch, seq)
    body = tr.run()
    cfg = (f"#triax.train_config<optimizer = adamw, lr = {num(lr)}, beta1 = "
           f"0.9, beta2 = 0.95, eps = 1.0e-08, weight_decay = "
           f"{num(weight_decay)}, grad_clip = {num(grad_clip)}, global_batch = "
           f"{batch}, micro_batch = "
           f"{micro_batch}, seq = {seq}, compute = f32, master = f32>")
    lines = [f"triax.model @{name} config = {cfg} {{"]
    weights = {}
    for pname, shape in tr.params.values():
        decay = " decay" if len(shape) >= 2 else ""
        lines.append(f"  triax.param @{pname} : {ttype(shape)} init <normal, "
                     f"std = 0.02>{decay}")
        weights[pname] = ep.state_dict[pname].detach().float().contiguous()
    ids = ttype([micro_batch, seq], "i32")
    lines.append(f"  func.func @forward(%tokens: {ids}, %targets: {ids}) -> "
                 "tensor<f32> {")
    lines += body
    lines += ["  }", "}", ""]
    return "\n".join(lines), weights
