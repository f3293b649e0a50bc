"""Scripts the heads, saves them, and reads both named outputs from the loaded file."""
import sys

import torch

from heads import Heads


def main(out):
    torch.manual_seed(0)
    torch.export.save(torch.export.export(Heads().eval(), (torch.ones(2, 6),), dynamic_shapes=({0: torch.export.Dim("features_dim0", max=64)},)), "heads.pt")
    heads = torch.export.load("heads.pt").module()
    results = []
    with torch.no_grad():
        for n in (2, 5):
            outputs = heads(torch.randn(n, 6))
            results.append((outputs.scores, outputs.boxes))
    torch.save(results, out)


if __name__ == "__main__":
    main(sys.argv[1])
