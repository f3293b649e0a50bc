"""A gate that routes each batch through one of two heads, decided by the batch's mean activation."""
import torch
from torch import nn


class Gate(nn.Module):
    def __init__(self, width: int = 8):
        super().__init__()
        self.low = nn.Linear(width, width)
        self.high = nn.Linear(width, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.mean() > 0:
            y = self.high(x)
        else:
            y = self.low(x) * 0.5
        return torch.relu(y)
