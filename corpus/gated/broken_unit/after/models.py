import torch
from torch import nn


class Threshold(nn.Module):
    """Doubles positive batches, shifts the others: a branch on the batch's values."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.mean() > 0:
            return x * 2
        return x - 1


class Scale(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.proj(x) * 3
