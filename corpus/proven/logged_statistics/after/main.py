"""A normalizer that logs wide batches in Python; TorchScript never compiled the logging."""
import logging
import sys

import torch
from torch import nn
from torch.export import Dim

log = logging.getLogger("norm")
WIDE = 10.0


class RunningNorm(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("scale", torch.tensor(2.0))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = x / self.scale
        if not torch.compiler.is_exporting():
            spread = float(y.std())
            if spread > WIDE:
                log.warning("wide batch: %.2f", spread)
        return y * 3


def main(out):
    torch.manual_seed(0)
    norm = RunningNorm()
    scripted = torch.export.export(norm, (torch.ones(4, 5),), dynamic_shapes=({0: Dim.DYNAMIC, 1: Dim.AUTO},)).module()
    narrow = scripted(torch.randn(4, 5))
    wide = scripted(torch.randn(2, 5) * 50)
    torch.save([narrow, wide, norm(torch.ones(3, 5))], out)


if __name__ == "__main__":
    main(sys.argv[1])
