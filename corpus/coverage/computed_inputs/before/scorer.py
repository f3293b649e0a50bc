"""A gated scorer: features are scaled and masked before the linear head."""
import torch
from torch import nn


class GatedScorer(nn.Module):
    def __init__(self, features: int = 6, classes: int = 3):
        super().__init__()
        self.head = nn.Linear(features, classes)

    def forward(self, x: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
        return self.head(x * keep)
