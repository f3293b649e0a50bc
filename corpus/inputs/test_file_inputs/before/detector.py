import torch
from torch import nn


class EdgeDetector(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3, padding=1)

    def forward(self, image: torch.Tensor) -> torch.Tensor:
        return self.conv(image).abs().amax(1)
