"""Region pooling as detection code wrote it for torch.jit.trace: the per-box loop lives in a
helper scripted while tracing, so the trace keeps the loop instead of baking the example's boxes."""
import torch
from torch import nn


@torch.jit.script_if_tracing
def pool_rows(feats: torch.Tensor, boxes: torch.Tensor) -> torch.Tensor:
    pooled = []
    for i in range(boxes.shape[0]):
        start, end = int(boxes[i, 0]), int(boxes[i, 1])
        pooled.append(feats[i, start:end].mean(0))
    return torch.stack(pooled)


class RoiHead(nn.Module):
    def __init__(self, dim: int = 6):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, feats: torch.Tensor, boxes: torch.Tensor) -> torch.Tensor:
        return pool_rows(self.proj(feats), boxes)
