"""A TorchScript-era model that keeps a scriptable variant next to the Python one.

Each `torch.jit.is_scripting()` check picks an implementation that TorchScript could compile
(explicit loops, no `sum()` over a list); both variants compute the same values.
"""
import sys
from typing import List

import torch
from torch import nn
from torch.export import Dim


class Pool(nn.Module):
    def __init__(self, mode: str):
        super().__init__()
        self.mode = mode
        self.fast = False

    def forward(self, xs: List[torch.Tensor]) -> torch.Tensor:
        # sum of the head outputs
        if torch.compiler.is_exporting():
            total = torch.zeros_like(xs[0])
            for x in xs:
                total = total + x
        else:
            total = torch.stack(xs).sum(0)

        if self.mode == "max":
            out = torch.stack(xs).amax(0)
        elif torch.compiler.is_exporting():
            out = total / float(len(xs))
        elif self.mode == "mean":
            out = total / len(xs)
        else:
            out = total

        use_vectorised = torch.compiler.is_exporting() or self.fast
        if not use_vectorised:
            out = out.clone()
        return out


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.heads = nn.ModuleList([nn.Linear(6, 4) for _ in range(3)])
        self.pool = Pool("mean")
        self.scale = 2.0

    def scaled(self, y: torch.Tensor) -> torch.Tensor:
        if not torch.compiler.is_exporting():
            return y * self.scale
        return torch.mul(y, self.scale)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        ys = [head(x) for head in self.heads]
        y = self.pool(ys)
        y = self.scaled(y)
        bias = 0.5 if torch.compiler.is_exporting() else 0.5
        if not torch.compiler.is_exporting() and x.dim() == 2:
            y = y + bias
        else:
            y = y + 0.5
        return torch.relu(y)


def main(out):
    torch.manual_seed(0)
    model = Net().eval()
    scripted = torch.export.export(model, (torch.ones(5, 6),), dynamic_shapes=({0: Dim.AUTO, 1: Dim.AUTO},)).module()  # ts2export: inputs=(torch.ones(5, 6),)
    x = torch.randn(5, 6)
    with torch.no_grad():
        outputs = {"eager": model(x), "scripted": scripted(x)}
    torch.save(outputs, out)


if __name__ == "__main__":
    main(sys.argv[1])
