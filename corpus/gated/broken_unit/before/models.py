import torch
from torch import nn


class Threshold(nn.Module):
    """Shifts small batches, doubles large ones: a branch on the batch's size, read into a local."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rows = x.shape[0]
        if rows > 3:
            return x * 2
        return x - 1


class Scale(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.proj(x) * 3
