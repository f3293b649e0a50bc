"""Traces the scorer with keyword example inputs, saves it, and calls the saved file by keyword."""
import sys

import torch

from scorer import MaskedScorer
from torch.export import Dim


def main(out):
    torch.manual_seed(0)
    features = torch.randn(2, 5, 6)
    mask = torch.zeros(2, 5, dtype=torch.bool)
    mask[:, 3:] = True
    traced = torch.export.export(MaskedScorer().eval(), (), kwargs={"features": features, "mask": mask}, dynamic_shapes={"features": {0: Dim.AUTO, 1: Dim.AUTO, 2: Dim.AUTO}, "mask": {0: Dim.AUTO, 1: Dim.AUTO}})
    torch.export.save(traced, "scorer.pt")
    scorer = torch.export.load("scorer.pt").module()
    with torch.no_grad():
        results = [scorer(features=features, mask=mask), scorer(features=torch.randn(2, 5, 6), mask=mask)]
    torch.save(results, out)


if __name__ == "__main__":
    main(sys.argv[1])
