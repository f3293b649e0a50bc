"""Nested outputs: a dict of tensors and a tuple."""

from typing import Dict, Tuple

import torch
from torch import nn

LEGACY = "script"


class Heads(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Linear(12, 24)
        self.cls = nn.Linear(24, 5)

    def forward(self, x: torch.Tensor) -> Tuple[Dict[str, torch.Tensor], Tuple[torch.Tensor, torch.Tensor]]:
        h = torch.relu(self.body(x))
        logits = self.cls(h)
        outputs = {"logits": logits, "probs": torch.softmax(logits, dim=-1)}
        return outputs, (h, h.pow(2).sum(dim=-1))


def build():
    torch.manual_seed(2)
    model = Heads().eval()
    return model, (torch.randn(4, 12),), ["float32[B=1..16,12]"]
