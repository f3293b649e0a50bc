"""A diffusion-style sampler over a frozen trace of its denoiser."""
import os

import torch
from torch import nn


class Denoiser(nn.Module):
    def __init__(self, dim: int = 16):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(dim + 1, 32), nn.SiLU(), nn.Linear(32, dim))

    def forward(self, x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        return self.net(torch.cat([x, t.expand(x.shape[0], 1)], dim=1))


def export_denoiser(model: nn.Module, folder: str) -> torch.jit.ScriptModule:
    example = (torch.randn(4, 16), torch.tensor([[0.5]]))
    with torch.no_grad():
        traced = torch.jit.trace(model, example)
    frozen = torch.jit.freeze(traced.eval())
    torch.jit.save(frozen, os.path.join(folder, "denoiser.pt"))
    return frozen


def sample(denoiser, steps: int = 5, batch: int = 3) -> torch.Tensor:
    x = torch.randn(batch, 16)
    for i in range(steps):
        t = torch.full((1, 1), 1.0 - i / steps)
        x = x - 0.1 * denoiser(x, t)
    return x
