"""A small CNN: conv-bn-relu twice, global pool, linear. Batch is dynamic."""

import torch
from torch import nn

LEGACY = "script"


class SmallCNN(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
            nn.Conv2d(8, 16, 3, stride=2, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
        )
        self.head = nn.Linear(16, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(x).mean(dim=(2, 3)))


def build():
    torch.manual_seed(0)
    model = SmallCNN().eval()
    return model, (torch.randn(2, 3, 16, 16),), ["float32[B=1..8,3,16,16]"]
