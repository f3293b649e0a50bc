"""Deploys the gated block the TorchScript way (script, save, load) and serves inputs that take
every branch at several batch sizes; saves the served outputs."""
import sys

import torch

from model import build, inputs


def main(out):
    model = build()
    example_input = torch.rand(3, 8)
    scripted = torch.jit.script(model)
    torch.jit.save(scripted, "gate.pt")
    served = torch.jit.load("gate.pt")
    outputs = {}
    with torch.no_grad():
        for name, x in inputs().items():
            if x.dim() == 2:
                outputs[name] = served(x)
    torch.save(outputs, out)


if __name__ == "__main__":
    main(sys.argv[1])
