"""Compiles the refiner with TorchScript and runs it eagerly and scripted; saves both outputs."""
import sys

import torch

from model import build, inputs


def main(out):
    eager, scripted = build(), torch.jit.script(build())
    outputs = []
    with torch.no_grad():
        for x, steps in inputs():
            outputs.append((eager(x, steps), scripted(x, steps)))
    outputs.append((eager.overflows, scripted.overflows))
    torch.save(outputs, out)


if __name__ == "__main__":
    main(sys.argv[1])
