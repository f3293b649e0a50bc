"""A base class that knows how to compile its instances; its subclasses keep debugging helpers."""
import torch
from torch import nn


class Compilable(nn.Module):
    def compiled(self):
        return torch.jit.script(self)


class Encoder(Compilable):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)

    @torch.jit.unused
    def describe(self, x: torch.Tensor) -> str:
        return f"mean {float(x.mean()):.3f}"

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.proj(x))


class Summary(nn.Module):
    """Not a Compilable: nothing here is ever compiled by TorchScript."""

    @torch.jit.unused
    def describe(self, x: torch.Tensor) -> str:
        return f"max {float(x.max()):.3f}"

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.sum(-1)
