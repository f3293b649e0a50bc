"""Trace the head with a bright example, save it, serve it on bright and dark crops. The trace kept
the branch its example took (no inversion) for every input; a torch.cond rewrite would invert the
dark crops and change what the served program answers, so the trace and its unit stay."""
import os
import sys
import tempfile

import torch

from heads import ScoreHead


def main(out):
    torch.manual_seed(0)
    head = ScoreHead().eval()
    example = torch.rand(4, 3, 8, 8)
    traced = torch.jit.trace(head, example)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "head.pt")
        torch.jit.save(traced, path)
        served = torch.jit.load(path)
        bright, dark = torch.rand(2, 3, 8, 8), -torch.rand(5, 3, 8, 8)
        outputs = {"bright": served(bright), "dark": served(dark), "eager_dark": head(dark)}
    torch.save(outputs, out)


if __name__ == "__main__":
    main(sys.argv[1])
