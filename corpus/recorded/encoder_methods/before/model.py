"""A sequence encoder-decoder served through several methods, the way translation toolkits script theirs."""
from typing import List, Tuple

import torch
from torch import nn


class Encoder(nn.Module):
    def __init__(self, vocab: int = 50, width: int = 16):
        super().__init__()
        self.embed = nn.Embedding(vocab, width)
        self.proj = nn.Linear(width, width)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.proj(self.embed(tokens)))

    @torch.jit.export
    def encode_pooled(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.forward(tokens).mean(dim=1)

    @torch.jit.export
    def reorder_encoder_out(self, encoded: torch.Tensor, order: torch.Tensor) -> torch.Tensor:
        return encoded.index_select(0, order)
