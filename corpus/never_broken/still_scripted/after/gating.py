"""A mixture-of-experts gate that the C++ server still loads as TorchScript, and an encoder that
the Python service now serves through torch.export."""
from typing import List

import torch
from torch import nn


@torch.jit.interface
class ExpertInterface(nn.Module):
    def forward(self, input: torch.Tensor) -> torch.Tensor:
        pass


class Gate(nn.Module):
    expert: ExpertInterface

    def __init__(self, dim: int):
        super().__init__()
        self.expert = nn.Linear(dim, dim)
        self.last_norm = 0.0

    @torch.jit.unused
    def debug_stats(self, x: torch.Tensor) -> float:
        return float(x.detach().numpy().std())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not torch.jit.is_scripting():
            self.last_norm = float(x.norm())  # Python-side logging only
        sizes = torch.jit.annotate(List[int], [])
        for d in x.shape:
            sizes.append(d)
        if x.sum() > 0:
            y = self.expert(x)
        else:
            y = -x
        return y * len(sizes)


class Encoder(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        scale = 0.5
        if not torch.compiler.is_exporting():
            x = x.contiguous()
        return torch.tanh(self.proj(x)) * scale


def build(kind: str, dim: int) -> nn.Module:
    torch.manual_seed(0)
    return Gate(dim) if kind == "gate" else Encoder(dim)
