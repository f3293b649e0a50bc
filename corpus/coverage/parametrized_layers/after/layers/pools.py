from typing import Optional

import torch
from torch import nn


class LsePlus2d(nn.Module):
    """Log-sum-exp pooling over the spatial dims."""

    def __init__(self, r: float = 10.0):
        super().__init__()
        self.r = r

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.logsumexp(x.flatten(2) * self.r, dim=-1) / self.r


class SimPool1d(nn.Module):
    """Similarity pooling over tokens."""

    def __init__(self, dim: int = 16):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def describe(self) -> str:
        return f"SimPool1d({self.proj.in_features})"

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q = self.proj(x.mean(1, keepdim=True))
        attn = (q @ x.transpose(1, 2)).softmax(-1)
        return (attn @ x).squeeze(1)


class AttentionPool(nn.Module):
    """Attention pooling with an optional learned query."""

    def __init__(self, dim: int = 16, num_heads: int = 2, query: Optional[torch.Tensor] = None):
        super().__init__()
        self.attn = nn.MultiheadAttention(dim, num_heads, batch_first=True)
        self.query = nn.Parameter(torch.zeros(1, 1, dim) if query is None else query)

    def extra_repr(self) -> str:
        return f"heads={self.attn.num_heads}"

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q = self.query.expand(x.shape[0], -1, -1)
        out, _ = self.attn(q, x, x, need_weights=False)
        return out.squeeze(1)
