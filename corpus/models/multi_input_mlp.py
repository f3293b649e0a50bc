"""An MLP over two inputs that share a dynamic batch dim."""

import torch
from torch import nn

LEGACY = "script"


class TwoInputMLP(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Linear(16, 32)
        self.b = nn.Linear(8, 32)
        self.out = nn.Sequential(nn.GELU(), nn.Linear(32, 32), nn.Tanh(), nn.Linear(32, 4))

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return self.out(self.a(x) + self.b(y))


def build():
    torch.manual_seed(1)
    model = TwoInputMLP().eval()
    return model, (torch.randn(3, 16), torch.randn(3, 8)), ["float32[B=1..32,16]", "float32[B,8]"]
