"""Models that hold TorchScript parts: a factory that scripts one of its layers, and a module that
loads a TorchScript head in its constructor. Neither whole model can be exported while its part
stays TorchScript (torch.export cannot trace through a ScriptModule), so each script or trace of a
whole model migrates together with its part, or stays with it."""
import os
import sys
import tempfile

import torch

from layers import WithFrozenHead, build
from torch.export import Dim


def main(out):
    torch.manual_seed(0)
    model = build()
    scripted = torch.export.export(model, (torch.ones(2, 3, 8, 8),), dynamic_shapes=({0: Dim.AUTO, 1: Dim.AUTO, 2: Dim.AUTO, 3: Dim.AUTO},)).module()
    x = torch.randn(2, 3, 8, 8)
    with tempfile.TemporaryDirectory() as tmp:
        head_path = os.path.join(tmp, "head.pt")
        torch.jit.script(torch.nn.Linear(8, 3)).save(head_path)
        frozen = WithFrozenHead(head_path)
        y = torch.randn(4, 8)
        traced = torch.jit.trace(frozen, y)
        outputs = {"scripted": scripted(x), "traced": traced(torch.randn(5, 8)), "eager": model(x)}
    torch.save(outputs, out)


if __name__ == "__main__":
    main(sys.argv[1])
