from typing import NamedTuple

import torch
from torch import nn


class Detections(NamedTuple):
    boxes: torch.Tensor
    scores: torch.Tensor


torch.utils._pytree._register_namedtuple(Detections, serialized_type_name=f"{Detections.__module__}.{Detections.__qualname__}")


class DetectionHead(nn.Module):
    def __init__(self, channels: int = 8):
        super().__init__()
        self.box = nn.Linear(channels, 4)
        self.cls = nn.Linear(channels, 1)

    def forward(self, feats: torch.Tensor) -> Detections:
        return Detections(self.box(feats), self.cls(feats).sigmoid().squeeze(-1))
