"""Builds the detector, ships it as TorchScript, and serves the shipped file on two image batches."""
import sys

import torch

from detector import Detector


def main(out):
    torch.manual_seed(0)
    model = Detector().eval()
    scripted = torch.jit.script(model)
    scripted.save("detector.pt")
    served = torch.jit.load("detector.pt")
    outputs = []
    with torch.no_grad():
        outputs.append(served(torch.rand(2, 3, 64, 64)))
        outputs.append(served(torch.rand(1, 3, 48, 80)))
    torch.save(outputs, out)


if __name__ == "__main__":
    main(sys.argv[1])
