"""A TorchScript-era model: jit.annotate for empty containers, @torch.jit.ignore / unused helpers."""
import sys
from typing import List

import torch
from torch import nn


class Ensemble(nn.Module):
    def __init__(self):
        super().__init__()
        self.heads = nn.ModuleList([nn.Linear(8, 4) for _ in range(3)])

    @torch.jit.ignore
    def describe(self) -> str:
        return f"{len(self.heads)} heads"

    @torch.jit.unused
    def debug_dump(self, x):
        return x.detach().numpy()

    def forward(self, x):
        outs = torch.jit.annotate(List[torch.Tensor], [])
        for head in self.heads:
            outs.append(head(x))
        return torch.stack(outs).mean(0)


def main(out):
    torch.manual_seed(0)
    model = Ensemble().eval()
    x = torch.randn(5, 8)
    with torch.no_grad():
        y = model(x)
    torch.save({"y": y, "describe": model.describe()}, out)


if __name__ == "__main__":
    main(sys.argv[1])
