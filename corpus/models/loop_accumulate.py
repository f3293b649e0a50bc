"""A scripted loop whose trip count is an input size (`range(x.size(1))`): TS2EPConverter rejects
prim::Loop; the interpreter strategy unrolls it for a static sequence length."""

import torch
from torch import nn

LEGACY = "script"


class Accumulate(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.cell = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.zeros(x.size(0), 4)
        for t in range(x.size(1)):
            h = torch.tanh(self.cell(h) + x[:, t])
        return h


def build():
    torch.manual_seed(7)
    model = Accumulate().eval()
    return model, (torch.randn(2, 5, 4),), ["float32[2,5,4]"]
