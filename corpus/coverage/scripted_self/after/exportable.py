"""A base class that knows how to compile its instances; its subclasses keep debugging helpers."""
import torch
from torch import nn
from torch.export import Dim


class Compilable(nn.Module):
    def compiled(self):
        return torch.export.export(self, (torch.ones(3, 4),), dynamic_shapes=({0: Dim.AUTO, 1: Dim.AUTO},)).module()


class Encoder(Compilable):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)

    def describe(self, x: torch.Tensor) -> str:
        return f"mean {float(x.mean()):.3f}"

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.proj(x))


class Summary(nn.Module):
    """Not a Compilable: nothing here is ever compiled by TorchScript."""

    def describe(self, x: torch.Tensor) -> str:
        return f"max {float(x.max()):.3f}"

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.sum(-1)
