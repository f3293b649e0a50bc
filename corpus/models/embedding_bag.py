"""Token embedding with int64 indices that must stay within the vocabulary (value range in the spec)."""

import torch
from torch import nn

LEGACY = "script"
VOCAB = 1000


class EmbedClassifier(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.emb = nn.Embedding(VOCAB, 16)
        self.proj = nn.Linear(16, 3)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.proj(self.emb(ids).mean(dim=1))


def build():
    torch.manual_seed(3)
    model = EmbedClassifier().eval()
    ids = torch.randint(0, VOCAB, (4, 7))
    return model, (ids,), [f"int64[B=1..16,7]{{0..{VOCAB - 1}}}"]
