"""A scorer called with keyword arguments: the tokens' features and a mask of the padding."""
import torch
from torch import nn


class MaskedScorer(nn.Module):
    def __init__(self, width: int = 6):
        super().__init__()
        self.score = nn.Linear(width, 1)

    def forward(self, features: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        scores = self.score(features).squeeze(-1)
        return scores.masked_fill(mask, -1e4).softmax(-1)
