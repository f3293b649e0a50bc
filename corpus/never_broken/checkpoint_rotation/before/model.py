"""A small regressor trained in a loop."""
import torch
from torch import nn


class Regressor(nn.Module):
    def __init__(self, width: int = 6):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(width, 12), nn.ReLU(), nn.Linear(12, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(x).squeeze(-1)
