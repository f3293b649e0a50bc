"""A scoring head whose forward decides on a tensor's value: dark crops are inverted first."""
import torch
from torch import nn


class ScoreHead(nn.Module):
    def __init__(self, dims: int = 16):
        super().__init__()
        self.proj = nn.Linear(3 * 8 * 8, dims)

    def forward(self, crops: torch.Tensor) -> torch.Tensor:
        if crops.mean() < 0:
            crops = -crops
        return self.proj(crops.flatten(1)).softmax(-1)
