"""A module with an extra @torch.jit.export method (`encode`) next to forward."""

import torch
from torch import nn

LEGACY = "script"


class EncoderDecoder(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.enc = nn.Linear(10, 6)
        self.dec = nn.Linear(6, 10)

    @torch.jit.export
    def encode(self, x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.enc(x))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.dec(self.encode(x))


def build():
    torch.manual_seed(6)
    model = EncoderDecoder().eval()
    return model, (torch.randn(3, 10),), ["float32[B=1..8,10]"]
