import torch
from torch import nn


class RepeatHalf(nn.Module):
    """Halves its input as many times as its sum says: a loop count read from data, which
    torch.export cannot trace. No test or program scripts it."""

    def describe(self) -> str:
        return "RepeatHalf"

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for _ in range(int(x.abs().sum().item()) % 3):
            x = x * 0.5
        return x
