"""A model whose layers choose how the framework compiles them."""
import torch
from torch import nn

from fwlib.jit import compile_mode


@compile_mode("trace")
class Radial(nn.Module):
    def __init__(self, width: int = 8):
        super().__init__()
        self.lin = nn.Linear(width, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(self.lin(x)) * x

    def _make_tracing_inputs(self):
        return (torch.randn(4, 8),)


@compile_mode("script")
class Gate(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.where(x > 0, x, 0.1 * x)


class Network(nn.Module):
    def __init__(self):
        super().__init__()
        self.radial = Radial()
        self.gate = Gate()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.gate(self.radial(x))
