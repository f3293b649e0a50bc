"""A patch classifier in the shape of an image-model zoo: features, then a head that can stop
before the logits (the pooled embedding), both served from the deployed artifact."""

import torch
from torch import nn


class PatchClassifier(nn.Module):
    def __init__(self, dim: int = 16, width: int = 32, classes: int = 5, pool: str = "avg"):
        super().__init__()
        self.pool = pool
        self.stem = nn.Linear(dim, width)
        self.blocks = nn.Sequential(nn.GELU(), nn.Linear(width, width), nn.GELU())
        self.norm = nn.LayerNorm(width)
        self.head = nn.Linear(width, classes)

    @torch.jit.export
    def forward_features(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(self.blocks(self.stem(x)))

    @torch.jit.export
    def forward_head(self, x: torch.Tensor, pre_logits: bool) -> torch.Tensor:
        if self.pool == "avg":
            x = x.mean(1)
        else:
            x = x[:, 0]
        if pre_logits:
            return x
        return self.head(x)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.forward_head(self.forward_features(x), False)
