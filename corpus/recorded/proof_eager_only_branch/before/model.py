"""A regression head that checks its inputs in eager Python (the check reads tensor values and
formats a message, which TorchScript cannot compile, so the scripted model skips it)."""
import torch
from torch import nn


class CheckedRegressor(nn.Module):
    def __init__(self, features: int, limit: float = 1e4) -> None:
        super().__init__()
        self.limit = limit
        self.body = nn.Sequential(nn.Linear(features, 16), nn.GELU(), nn.Linear(16, 1))
        self.checked = 0

    @torch.jit.unused
    def _check(self, x: torch.Tensor) -> None:
        self.checked += 1
        largest = float(x.abs().max())
        if largest > self.limit:
            raise ValueError(f"input magnitude {largest:.1f} is above {self.limit}")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not torch.jit.is_scripting():
            self._check(x)
        return self.body(x).squeeze(-1)
