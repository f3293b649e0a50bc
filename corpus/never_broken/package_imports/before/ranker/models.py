import torch
from torch import nn


class Scorer(nn.Module):
    def __init__(self, dim: int, hidden: int):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(dim, hidden), nn.ReLU(), nn.Linear(hidden, 1))

    def forward(self, feats: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(self.body(feats)).squeeze(-1)


def build(cfg: dict) -> nn.Module:
    torch.manual_seed(cfg["seed"])
    return Scorer(cfg["dim"], cfg["hidden"]).eval()
