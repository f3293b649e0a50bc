"""A small layer library: every layer is meant to be scriptable, and the test helper checks that."""
from typing import List

import torch
from torch import nn


class Gate(nn.Module):
    def __init__(self, width: int) -> None:
        super().__init__()
        self.proj = nn.Linear(width, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.sigmoid(self.proj(x))


class Residual(nn.Module):
    def __init__(self, width: int) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Linear(width, width), nn.Tanh())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.body(x)


class Pooler(nn.Module):
    """Used eagerly by the data pipeline; never compiled."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.scale = nn.Parameter(torch.ones(width))

    @torch.jit.ignore
    def describe(self, x: torch.Tensor) -> str:
        return f"pooled {tuple(x.shape)}"

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        sizes = torch.jit.annotate(List[int], [])
        for row in x:
            sizes.append(row.shape[0])
        return (x * self.scale).mean(dim=1) * len(sizes)
