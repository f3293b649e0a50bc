from typing import Tuple

import torch
from torch import Tensor, nn

from asrkit.scaling import ActivationBalancer, ScaledLinear


class ConvEncoder(nn.Module):
    def __init__(self, feat_dim: int, dim: int):
        super().__init__()
        self.inp = ScaledLinear(feat_dim, dim, initial_scale=0.5)
        self.balancer = ActivationBalancer(dim)
        self.out = ScaledLinear(dim, dim)

    def forward(self, x: Tensor, x_lens: Tensor) -> Tuple[Tensor, Tensor]:
        x = self.balancer(self.inp(x).relu())
        return self.out(x), x_lens


class Transducer(nn.Module):
    def __init__(self, encoder: nn.Module, encoder_dim: int, vocab_size: int):
        super().__init__()
        self.encoder = encoder
        self.joiner = nn.Linear(encoder_dim, vocab_size)

    def forward(self, x: Tensor, x_lens: Tensor) -> Tuple[Tensor, Tensor]:
        enc, enc_lens = self.encoder(x, x_lens)
        return self.joiner(enc).log_softmax(-1), enc_lens
