"""Traces the scorer with keyword example inputs, saves it, and calls the saved file by keyword."""
import sys

import torch

from scorer import MaskedScorer


def main(out):
    torch.manual_seed(0)
    features = torch.randn(2, 5, 6)
    mask = torch.zeros(2, 5, dtype=torch.bool)
    mask[:, 3:] = True
    traced = torch.jit.trace(MaskedScorer().eval(), example_kwarg_inputs={"features": features, "mask": mask})
    traced.save("scorer.pt")
    scorer = torch.jit.load("scorer.pt")
    with torch.no_grad():
        results = [scorer(features=features, mask=mask), scorer(features=torch.randn(2, 5, 6), mask=mask)]
    torch.save(results, out)


if __name__ == "__main__":
    main(sys.argv[1])
