"""A model built by a factory from a config, scripted, and called only after the scripting."""
import sys

import torch
from torch import nn
from torch.export import Dim


class Mlp(nn.Module):
    def __init__(self, sizes):
        super().__init__()
        layers = []
        for a, b in zip(sizes[:-1], sizes[1:]):
            layers += [nn.Linear(a, b), nn.GELU()]
        self.body = nn.Sequential(*layers[:-1])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(x)


def build_model(cfg):
    torch.manual_seed(0)
    return Mlp(cfg["sizes"]).eval()


def main(out):
    cfg = {"sizes": [12, 24, 6]}
    scripted = torch.export.export(build_model(cfg), (torch.ones(2, 12),), dynamic_shapes=({0: Dim.DYNAMIC, 1: Dim.AUTO},)).module()
    results = []
    for batch in (2, 5, 11):
        x = torch.randn(batch, 12)
        results.append(scripted(x))
    torch.save(results, out)


if __name__ == "__main__":
    main(sys.argv[1])
