"""Detection heads that return their outputs as a named tuple."""
from typing import NamedTuple

import torch
from torch import nn


class HeadOutputs(NamedTuple):
    scores: torch.Tensor
    boxes: torch.Tensor


torch.utils._pytree._register_namedtuple(HeadOutputs, serialized_type_name=f"{HeadOutputs.__module__}.{HeadOutputs.__qualname__}")


class Heads(nn.Module):
    def __init__(self, channels: int = 6, classes: int = 3):
        super().__init__()
        self.cls = nn.Linear(channels, classes)
        self.box = nn.Linear(channels, 4)

    def forward(self, features: torch.Tensor) -> HeadOutputs:
        return HeadOutputs(self.cls(features).softmax(-1), self.box(features).sigmoid())
