import torch
from torch import nn

from .base import SelectOutput


class SelectTopK(nn.Module):
    def __init__(self, channels: int, ratio: float = 0.5):
        super().__init__()
        self.ratio = ratio
        self.weight = nn.Parameter(torch.linspace(-1.0, 1.0, channels))

    def forward(self, x: torch.Tensor) -> SelectOutput:
        score = torch.tanh(x @ self.weight)
        k = max(1, int(self.ratio * x.size(0)))
        top = score.topk(k).indices
        return SelectOutput(node_index=top, num_nodes=x.size(0), weight=score[top])
