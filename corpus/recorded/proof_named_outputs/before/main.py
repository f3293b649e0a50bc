"""Scripts the heads, saves them, and reads both named outputs from the loaded file."""
import sys

import torch

from heads import Heads


def main(out):
    torch.manual_seed(0)
    torch.jit.script(Heads().eval()).save("heads.pt")
    heads = torch.jit.load("heads.pt")
    results = []
    with torch.no_grad():
        for n in (2, 5):
            outputs = heads(torch.randn(n, 6))
            results.append((outputs.scores, outputs.boxes))
    torch.save(results, out)


if __name__ == "__main__":
    main(sys.argv[1])
