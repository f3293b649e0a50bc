"""Deploys the detector, then serves batches of several sizes from the saved file."""

import sys

import torch

from export_model import export


def main(out: str) -> None:
    export("detector.pt")
    served = torch.jit.load("detector.pt")
    torch.manual_seed(1)
    results = []
    for batch in (1, 2, 4):
        boxes, logits = served(torch.rand(batch, 3, 64, 64))
        results += [boxes, logits]
    torch.save(results, out)


if __name__ == "__main__":
    main(sys.argv[1])
