"""Score batches whose tensors come out of arithmetic, comparisons and helpers, not factories alone."""
import sys

import torch

from scorer import GatedScorer
from torch.export import Dim


def keep_mask(rows: int, generator: torch.Generator) -> torch.Tensor:
    return (torch.rand(rows, 6, generator=generator) > 0.3).float()


def main(out: str) -> None:
    torch.manual_seed(0)
    scorer = torch.export.export(GatedScorer().eval(), (torch.ones(2, 6), torch.ones(2, 6)), dynamic_shapes=({0: Dim.DYNAMIC, 1: Dim.AUTO}, {0: Dim.DYNAMIC, 1: Dim.AUTO})).module()
    g = torch.Generator().manual_seed(1)
    results = []
    for rows in (3, 5, 2):
        x = 2 * torch.rand(rows, 6, generator=g) - 1
        results.append(scorer(-x, keep_mask(rows, g)))
    ramp = torch.linspace(-2, 2, 6, dtype=torch.float64)
    results.append(ramp)
    torch.save(results, out)


if __name__ == "__main__":
    main(sys.argv[1])
