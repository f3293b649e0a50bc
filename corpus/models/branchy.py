"""An `if` on a tensor value. Traced with an example that takes the first branch, the trace bakes it
in; scripted, TS2EPConverter turns it into torch.cond."""

import torch
from torch import nn

LEGACY = "trace"


class Branchy(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.lin(x)
        if x.mean() > 1.0:
            return h * 2.0
        return h - 1.0


def build():
    torch.manual_seed(4)
    model = Branchy().eval()
    # The example takes the `mean > 1` branch; random inputs almost never do.
    return model, (torch.full((2, 8), 2.0),), ["float32[2,8]"]
