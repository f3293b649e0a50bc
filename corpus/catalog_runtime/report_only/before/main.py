"""Deployment helpers of the TorchScript era that need a person to migrate them."""
import os
import sys
from typing import List

import torch
from torch import nn

# Helpers compiled from source strings, shared with the C++ server.
HELPERS = torch.jit.CompilationUnit(
    """
def normalise(x: torch.Tensor) -> torch.Tensor:
    return (x - x.mean()) / (x.std() + 1e-5)
"""
)

if os.path.exists("libqueue.so"):  # optional native batching queue
    torch.ops.load_library("libqueue.so")
    QUEUE = torch.classes.batching.Queue(16)


def gather(futs: List[torch.jit.Future[torch.Tensor]]) -> List[torch.Tensor]:
    return [torch.jit.wait(f) for f in futs]


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3)
        self.bn = nn.BatchNorm2d(4)

    def forward(self, x):
        if torch._C._get_tracing_state() is not None:
            x = x.contiguous()
        return torch.relu(self.bn(self.conv(x)))


def main(out):
    torch.manual_seed(0)
    model = Net().eval()
    x = torch.randn(2, 3, 8, 8)
    scripted = torch.jit.script(model)
    fast = torch.jit.optimize_for_inference(torch.jit.script(model))
    ops = sorted(torch.jit.export_opnames(scripted))
    futs = [torch.jit.fork(HELPERS.normalise, t) for t in (x, 2 * x)]
    with torch.no_grad():
        results = {
            "eager": model(x),
            "traced": torch.jit.trace(model, (x,))(x),
            "fast": fast(x),
            "normalised": gather(futs),
            "uses_conv": any("conv" in op for op in ops),
        }
    torch.save(results, out)


if __name__ == "__main__":
    main(sys.argv[1])
