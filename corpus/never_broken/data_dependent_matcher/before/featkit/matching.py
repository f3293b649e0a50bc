"""Descriptor matching in the shape of a feature-matching library: a matcher whose number of
matches depends on the data, and a gate that branches on a score read out of a tensor."""

import torch
from torch import nn

from featkit.geometry import mutual_nn


class DescriptorMatcher(nn.Module):
    def __init__(self, th: float = 0.9):
        super().__init__()
        self.th = th

    def forward(self, desc1: torch.Tensor, desc2: torch.Tensor) -> torch.Tensor:
        dists = torch.cdist(desc1, desc2)
        matches = mutual_nn(dists, self.th)
        if matches.size(0) == 0:
            return torch.full((1, 2), -1, dtype=torch.long)
        return matches


class ScoreGate(nn.Module):
    def forward(self, scores: torch.Tensor) -> torch.Tensor:
        if scores.max().item() > 0.5:
            return scores * 2
        return scores
