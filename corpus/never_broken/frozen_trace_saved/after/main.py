import os
import sys
import tempfile

import torch
from torch import nn
from torch.export import Dim


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
    # ts2export: example doubled where it has size 1, which export would fix, while the model is called at other sizes (dim 0: sizes 1, 2, 3; main.py:43)
    traced = torch.export.export(net, (torch.cat([example] * 2),), dynamic_shapes=({0: Dim.DYNAMIC, 1: Dim.AUTO, 2: Dim.DYNAMIC, 3: Dim.DYNAMIC},))
    frozen = traced
    path = os.path.join(root, "net.pt")
    torch.export.save(frozen, path)
    return path


def main(out):
    torch.manual_seed(0)
    with tempfile.TemporaryDirectory() as root:
        net = torch.export.load(publish(root)).module()
        outs = [net(torch.rand(b, 4, s, s)) for b, s in ((1, 16), (3, 16), (2, 24))]
    torch.save(outs, out)


if __name__ == "__main__":
    main(sys.argv[1])
