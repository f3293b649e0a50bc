import torch
from torch import nn


class Tagger(nn.Module):
    """Per-token tags for a batch of token-id sequences."""

    def __init__(self, vocab: int = 40, dim: int = 12, tags: int = 5):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.mix = nn.Linear(dim, dim)
        self.out = nn.Linear(dim, tags)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        h = self.embed(ids)
        h = h + torch.tanh(self.mix(h.mean(1, keepdim=True)))
        return self.out(h).log_softmax(-1)
