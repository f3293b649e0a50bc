import torch
from torch import nn

from layout import is_wide


class Threshold(nn.Module):
    """Shifts narrow rows, doubles wide ones: a branch on the row's width, in a helper of another file."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if is_wide(x):
            return x * 2
        return x - 1


class Scale(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.proj(x) * 3
