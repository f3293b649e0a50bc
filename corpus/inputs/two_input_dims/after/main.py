"""A two-input model traced once, called with each input varying in a different dim."""
import sys

import torch
from torch import nn
from torch.export import Dim


class Matcher(nn.Module):
    def __init__(self):
        super().__init__()
        self.q = nn.Linear(8, 8)
        self.k = nn.Linear(8, 8)

    def forward(self, queries: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
        return torch.einsum("bd,nd->bn", self.q(queries), self.k(keys)).softmax(-1)


def main(out):
    torch.manual_seed(0)
    model = Matcher().eval()
    traced = torch.export.export(model, (torch.rand(2, 8), torch.rand(3, 8)), dynamic_shapes=({0: Dim.DYNAMIC, 1: Dim.AUTO}, {0: Dim.DYNAMIC, 1: Dim.AUTO})).module()
    torch.manual_seed(1)
    results = []
    for nq, nk in ((2, 3), (5, 3), (2, 11)):
        results.append(traced(torch.rand(nq, 8), torch.rand(nk, 8)))
    torch.save(results, out)


if __name__ == "__main__":
    main(sys.argv[1])
