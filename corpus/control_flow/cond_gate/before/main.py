"""Runs the gated block on inputs that take each branch; saves its outputs."""
import sys

import torch

from model import build, inputs


def main(out):
    model = build()
    outputs = {}
    with torch.no_grad():
        for name, x in inputs().items():
            outputs[name] = model(x)
    torch.save(outputs, out)


if __name__ == "__main__":
    main(sys.argv[1])
