"""Color operations, written to be scriptable (the package's tests check that)."""
import torch
from torch import nn


def rgb_to_gray(image: torch.Tensor) -> torch.Tensor:
    if not torch.jit.is_scripting():
        if not isinstance(image, torch.Tensor):
            raise TypeError(f"expected a tensor, got {type(image)}")
    r, g, b = image.unbind(-3)
    return (0.299 * r + 0.587 * g + 0.114 * b).unsqueeze(-3)


class Normalize(nn.Module):
    def __init__(self, mean: float, std: float):
        super().__init__()
        self.mean = mean
        self.std = std

    def forward(self, image: torch.Tensor) -> torch.Tensor:
        return (image - self.mean) / self.std
