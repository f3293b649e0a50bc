"""A small model zoo: families registered by name, built by a factory, with TorchScript-era
decorators on their Python-only helpers."""
from typing import Callable, Dict

import torch
from torch import nn

_REGISTRY: Dict[str, Callable[..., nn.Module]] = {}


def register(fn):
    _REGISTRY[fn.__name__] = fn
    return fn


def create(name: str, **kwargs) -> nn.Module:
    return _REGISTRY[name](**kwargs)


class MlpNet(nn.Module):
    def __init__(self, width: int = 6, classes: int = 3):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(5, width), nn.GELU(), nn.Linear(width, classes))

    @torch.jit.ignore
    def group_matcher(self, coarse: bool = False):
        return {"stem": r"^body\.0", "blocks": r"^body\.[12]"}

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(x)


class GatedNet(nn.Module):
    def __init__(self, width: int = 6, classes: int = 3):
        super().__init__()
        self.proj = nn.Linear(5, width)
        self.gate = nn.Linear(5, width)
        self.head = nn.Linear(width, classes)

    @torch.jit.unused
    def summary(self) -> str:
        return f"{sum(p.numel() for p in self.parameters())} parameters"

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.proj(x) * torch.sigmoid(self.gate(x)))


class ScaledNet(nn.Module):
    """Halves its input until it is small: a loop on the data, which torch.export cannot trace."""

    def __init__(self, classes: int = 3):
        super().__init__()
        self.head = nn.Linear(5, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        while bool(x.abs().max() > 1.0):
            x = x / 2
        return self.head(x)


@register
def mlp_small(**kwargs):
    return MlpNet(width=6, **kwargs)


@register
def gated_small(**kwargs):
    return GatedNet(width=8, **kwargs)


@register
def scaled_small(**kwargs):
    return ScaledNet(**kwargs)
