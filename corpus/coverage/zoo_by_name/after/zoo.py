"""A small model zoo: families registered by name, built by a factory, each with TorchScript-only
annotations its authors added so that `torch.jit.script` would accept the models."""
from typing import Callable, Dict, List

import torch
from torch import nn

_REGISTRY: Dict[str, Callable[[], nn.Module]] = {}


def register(name: str):
    def wrap(fn):
        _REGISTRY[name] = fn
        return fn
    return wrap


def list_models() -> List[str]:
    return sorted(_REGISTRY)


def create_model(name: str, **kwargs) -> nn.Module:
    return _REGISTRY[name](**kwargs)


class ConvNet(nn.Module):
    def __init__(self, width: int = 8, classes: int = 5):
        super().__init__()
        self.stem = nn.Conv2d(3, width, 3, padding=1)
        self.head = nn.Linear(width, classes)
        self.grad_checkpointing = False

    def set_grad_checkpointing(self, enable: bool = True):
        self.grad_checkpointing = enable

    def feature_info(self) -> str:
        return f"stem {self.stem.out_channels}"

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.stem(x))
        return self.head(h.mean((2, 3)))


class MixerNet(nn.Module):
    def __init__(self, patch: int = 4, dim: int = 16, classes: int = 5):
        super().__init__()
        self.patch = patch
        self.embed = nn.Linear(3 * patch * patch, dim)
        self.mix = nn.Linear(dim, dim)
        self.head = nn.Linear(dim, classes)

    def no_weight_decay(self) -> set:
        return {"embed.bias"}

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, c, h, w = x.shape
        p = self.patch
        tokens = x.reshape(b, c, h // p, p, w // p, p).permute(0, 2, 4, 1, 3, 5).reshape(b, (h // p) * (w // p), c * p * p)
        t = torch.relu(self.embed(tokens))
        t = t + self.mix(t)
        return self.head(t.mean(1))


@register("convnet_small")
def convnet_small(**kwargs) -> nn.Module:
    return ConvNet(width=8, **kwargs)


@register("convnet_wide")
def convnet_wide(**kwargs) -> nn.Module:
    return ConvNet(width=16, **kwargs)


@register("mixer_tiny")
def mixer_tiny(**kwargs) -> nn.Module:
    return MixerNet(**kwargs)
