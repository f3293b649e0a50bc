import torch
from torch import nn


def route(x: torch.Tensor) -> torch.Tensor:
    """Doubles positive batches, shifts the others: a branch on the batch's values."""
    if x.mean() > 0:
        return x * 2
    return x - 1


class Threshold(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return route(x)


class Scale(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.proj(x) * 3
