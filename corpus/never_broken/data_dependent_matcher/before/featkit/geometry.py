"""Nearest-neighbour helpers shared by the matchers."""

import torch


def mutual_nn(dists: torch.Tensor, th: float) -> torch.Tensor:
    """Index pairs (i, j) whose distance is the row minimum and under `th`: as many rows as match."""
    vals, idx = dists.min(1)
    keep = vals < th
    src = torch.nonzero(keep).squeeze(1)
    return torch.stack([src, idx[keep]], 1)
