"""Deploys the gated block the TorchScript way (script, save, load) and serves inputs that take
every branch at several batch sizes; saves the served outputs."""
import sys

import torch

from model import build, inputs
from torch.export import Dim


def main(out):
    model = build()
    example_input = torch.rand(3, 8)
    scripted = torch.export.export(model, (example_input,), dynamic_shapes=({0: Dim.AUTO, 1: Dim.AUTO},))
    torch.export.save(scripted, "gate.pt")
    served = torch.export.load("gate.pt").module()
    outputs = {}
    with torch.no_grad():
        for name, x in inputs().items():
            if x.dim() == 2:
                outputs[name] = served(x)
    torch.save(outputs, out)


if __name__ == "__main__":
    main(sys.argv[1])
