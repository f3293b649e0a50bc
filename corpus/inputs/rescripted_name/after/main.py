"""Test-style code (julius' tests script every module this way): one name scripted again for each
module, each followed by calls that show its inputs. Each binding is followed up to the next
assignment, so each script call gets the inputs of its own calls."""
import sys

import torch
from torch import nn
from torch.export import Dim


class LowPass(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return (x + x.roll(1, -1)) / 2


class Gain(nn.Module):
    def __init__(self, g: float):
        super().__init__()
        self.g = g

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.g


def check_scripted(out):
    torch.manual_seed(0)
    x = torch.randn(3, 64)
    jitted = torch.export.export(LowPass(), (x,), dynamic_shapes=({0: Dim.DYNAMIC, 1: Dim.AUTO},)).module()
    low = jitted(x)
    jitted = torch.export.export(Gain(0.5), (x,), dynamic_shapes=({0: Dim.DYNAMIC, 1: Dim.AUTO},)).module()
    gain = jitted(x)
    more = jitted(torch.randn(5, 64))
    torch.save({"low": low, "gain": gain, "more": more}, out)


if __name__ == "__main__":
    check_scripted(sys.argv[1])
