"""Inputs and outputs of several dtypes: float16 and bfloat16 results, a bool mask, int64 argmax."""

from typing import Tuple

import torch
from torch import nn

LEGACY = "script"


class Mixed(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(6, 6)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        h = self.lin(x).masked_fill(mask, 0.0)
        return h.to(torch.float16), (h * 0.5).to(torch.bfloat16), h > 0, h.argmax(dim=-1)


def build():
    torch.manual_seed(8)
    model = Mixed().eval()
    x = torch.randn(3, 6)
    return model, (x, x > 0.5), ["float32[B=1..8,6]", "bool[B,6]"]
