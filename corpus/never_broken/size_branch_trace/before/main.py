import sys
import tempfile

import torch
from torch import nn


class Adaptive(nn.Module):
    def __init__(self):
        super().__init__()
        self.small = nn.Linear(4, 2)
        self.big = nn.Linear(4, 2)

    def forward(self, x):
        if x.shape[0] > 3:
            return self.big(x)
        return self.small(x)


def main(out):
    torch.manual_seed(0)
    model = Adaptive().eval()
    with tempfile.TemporaryDirectory() as d:
        traced = torch.jit.trace(model, torch.rand(2, 4))
        torch.jit.save(traced, f"{d}/m.pt")
        loaded = torch.jit.load(f"{d}/m.pt")
        res = [loaded(torch.rand(n, 4)) for n in (2, 3, 6)]
    torch.save(res, out)


if __name__ == "__main__":
    main(sys.argv[1])
