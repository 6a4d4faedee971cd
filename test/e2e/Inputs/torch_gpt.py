"""A small GPT written directly in PyTorch (not from transformers), the
user's model of test/e2e/torch-import.test: triax-import --torch
torch_gpt.py:make_model. make_erf_gelu and make_cumsum are the same model
with an operator Triax does not express."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, h, heads, gelu):
        super().__init__()
        self.heads, self.gelu = heads, gelu
        self.ln1 = nn.LayerNorm(h)
        self.q = nn.Linear(h, h)
        self.k = nn.Linear(h, h)
        self.v = nn.Linear(h, h)
        self.proj = nn.Linear(h, h)
        self.ln2 = nn.LayerNorm(h)
        self.fc = nn.Linear(h, 4 * h)
        self.out = nn.Linear(4 * h, h)

    def forward(self, x):
        B, T, H = x.shape
        d = H // self.heads
        y = self.ln1(x)
        q = self.q(y).view(B, T, self.heads, d).transpose(1, 2)
        k = self.k(y).view(B, T, self.heads, d).transpose(1, 2)
        v = self.v(y).view(B, T, self.heads, d).transpose(1, 2)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(a.transpose(1, 2).contiguous().view(B, T, H))
        return x + self.out(self.gelu(self.fc(self.ln2(x))))


class TorchGPT(nn.Module):
    def __init__(self, vocab=256, seq=32, h=64, heads=4, layers=2,
                 gelu=lambda x: F.gelu(x, approximate="tanh"), cumsum=False):
        super().__init__()
        self.cumsum = cumsum
        self.wte = nn.Embedding(vocab, h)
        self.wpe = nn.Embedding(seq, h)
        nn.init.normal_(self.wte.weight, std=0.02)
        nn.init.normal_(self.wpe.weight, std=0.01)
        self.blocks = nn.ModuleList(Block(h, heads, gelu)
                                    for _ in range(layers))
        self.ln_f = nn.LayerNorm(h)

    def forward(self, idx, targets):
        B, T = idx.shape
        x = self.wte(idx) + self.wpe(torch.arange(T, device=idx.device))
        if self.cumsum:
            x = torch.cumsum(x, dim=1)
        for block in self.blocks:
            x = block(x)
        logits = F.linear(self.ln_f(x), self.wte.weight)  # tied head
        return F.cross_entropy(logits.view(-1, logits.size(-1)),
                               targets.view(-1))


def make_model():
    torch.manual_seed(0)
    return TorchGPT()


def make_erf_gelu():
    return TorchGPT(gelu=F.gelu)


def make_cumsum():
    return TorchGPT(cumsum=True)
