import os
import sys
import tempfile

import torch
from torch import nn


@torch.jit.script
def swish(x: torch.Tensor) -> torch.Tensor:
    return x * torch.sigmoid(x)


class Block(nn.Module):
    def __init__(self, c: int):
        super().__init__()
        self.conv = nn.Conv2d(c, c, 3, padding=1)
        self.norm = nn.BatchNorm2d(c)

    def forward(self, x):
        return swish(self.norm(self.conv(x))) + x


def build():
    torch.manual_seed(3)
    return nn.Sequential(Block(4), Block(4), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(4, 2)).eval()


def publish(root):
    net = build()
    example = torch.rand(1, 4, 16, 16)
    traced = torch.jit.trace(net, example, check_trace=False, strict=False)
    frozen = torch.jit.freeze(traced)
    path = os.path.join(root, "net.pt")
    frozen.save(path)
    return path


def main(out):
    torch.manual_seed(0)
    with tempfile.TemporaryDirectory() as root:
        net = torch.jit.load(publish(root))
        outs = [net(torch.rand(b, 4, s, s)) for b, s in ((1, 16), (3, 16), (2, 24))]
    torch.save(outs, out)


if __name__ == "__main__":
    main(sys.argv[1])
