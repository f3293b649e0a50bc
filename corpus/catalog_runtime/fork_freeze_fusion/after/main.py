"""Serving code of the TorchScript era: a forked ensemble, frozen, with hand-tuned fuser settings."""
import math
import sys
from typing import List

import torch
from torch import nn
from torch.export import Dim


class Head(nn.Module):
    def __init__(self, scale: float):
        super().__init__()
        self.proj = nn.Linear(8, 8)
        self.norm = nn.LayerNorm(8)
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.norm(self.proj(x))) * self.scale


class Ensemble(nn.Module):
    def __init__(self):
        super().__init__()
        self.heads = nn.ModuleList([Head(1.0 + i) for i in range(3)])
        self.out = nn.Linear(8, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        futures: List[torch.Tensor] = []
        for head in self.heads:
            futures.append(head(x))
        total = torch.zeros_like(x)
        for fut in futures:
            total = total + fut
        side = torch.sigmoid(total)
        return self.out(total) + side.mean()


class Attention(nn.Module):
    def forward(self, q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
        d = q.shape[-1]
        if torch.compiler.is_exporting():
            scale = torch.tensor(float(d)).rsqrt()
        else:
            scale = 1.0 / math.sqrt(d)
        return torch.softmax(q @ k.transpose(-2, -1) * scale, dim=-1)


def check_batch(x: torch.Tensor) -> None:
    if x.dim() != 2:
        raise RuntimeError(f"expected a batch of vectors, got {x.dim()} dims")


@torch.jit.script
def checked_sum(x: torch.Tensor) -> torch.Tensor:
    assert bool(x.sum() > 0), "sum must be positive"
    return x.sum()


def main(out):
    torch.manual_seed(0)
    model = Ensemble().eval()
    frozen = torch.jit.script(model)
    x = torch.randn(4, 8)
    results = {}
    with torch.no_grad():
        results["frozen"] = frozen(x)
        with torch.no_grad():
            results["scripted"] = torch.jit.script(model)(x)
        results["eager"] = model(x)

    q, k = torch.randn(3, 5, 4), torch.randn(3, 6, 4)
    attn = Attention()
    results["traced"] = torch.export.export(attn, (q, k), dynamic_shapes=({i: Dim.AUTO for i in range(q.dim())}, {i: Dim.AUTO for i in range(k.dim())})).module()(q, k)
    results["exported"] = torch.export.export(attn, (q, k)).module()(q, k)

    errors = []
    try:
        check_batch(torch.ones(2, 3, 4))
    except Exception as e:
        errors.append(str(e))
    try:
        checked_sum(-torch.ones(3))
    except torch.jit.Error:
        errors.append("scripted assertion failed")
    results["errors"] = errors
    torch.save(results, out)


if __name__ == "__main__":
    main(sys.argv[1])
