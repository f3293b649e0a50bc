import torch
from torch import nn


class MutualMatcher(nn.Module):
    """Pairs of keypoints whose similarity clears the threshold; an empty result is one zero row."""

    def __init__(self, threshold: float = 0.5):
        super().__init__()
        self.threshold = threshold

    def forward(self, sim: torch.Tensor) -> torch.Tensor:
        idx = torch.nonzero(sim > self.threshold)
        if idx.shape[0] == 0:
            return torch.zeros(1, 2, dtype=torch.long)
        return idx
