"""A two-tower retriever: the service embeds queries and documents separately, then scores them."""
import torch
from torch import nn
from torch.nn import functional as F


class Retriever(nn.Module):
    def __init__(self, dim: int = 16, out: int = 8):
        super().__init__()
        self.query = nn.Linear(dim, out)
        self.doc = nn.Linear(dim, out)

    def forward(self, q: torch.Tensor, d: torch.Tensor) -> torch.Tensor:
        return self.score(self.encode_query(q), self.encode_doc(d))

    @torch.jit.export
    def encode_query(self, q: torch.Tensor) -> torch.Tensor:
        return F.normalize(self.query(q), dim=-1)

    @torch.jit.export
    def encode_doc(self, d: torch.Tensor) -> torch.Tensor:
        return F.normalize(self.doc(d), dim=-1)

    @torch.jit.export
    def score(self, qe: torch.Tensor, de: torch.Tensor) -> torch.Tensor:
        return qe @ de.t()
