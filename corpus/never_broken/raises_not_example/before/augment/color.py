from typing import List

import torch
from torch import nn


class Normalize(nn.Module):
    """Normalizes a batch of images (B, C, H, W) per channel."""

    def __init__(self, mean: List[float], std: List[float]):
        super().__init__()
        self.register_buffer("mean", torch.tensor(mean).view(1, -1, 1, 1))
        self.register_buffer("std", torch.tensor(std).view(1, -1, 1, 1))

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        if images.dim() != 4:
            raise ValueError(f"expected (B, C, H, W), got {images.dim()} dims")
        return (images - self.mean) / self.std


class RandomGamma(nn.Module):
    def __init__(self, gamma: float):
        super().__init__()
        self.gamma = gamma

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        if not images.is_floating_point():
            raise TypeError("RandomGamma takes floating-point images")
        return images.clamp(min=0.0) ** self.gamma


class Posterize(nn.Module):
    """Keeps the top ``bits`` of each 8-bit channel value."""

    def __init__(self, bits: int):
        super().__init__()
        self.shift = 8 - bits

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        if images.dtype != torch.uint8:
            raise TypeError("Posterize takes uint8 images")
        return (images >> self.shift) << self.shift
