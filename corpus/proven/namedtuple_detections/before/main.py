import sys
import tempfile
from pathlib import Path

import torch

from export_head import export


def main(out):
    with tempfile.TemporaryDirectory() as tmp:
        path = export(Path(tmp))
        served = torch.jit.load(str(path))
        g = torch.Generator().manual_seed(3)
        dets = served(torch.randn(5, 8, generator=g))
        keep = dets.scores > 0.5
        torch.save({"boxes": dets.boxes, "scores": dets.scores, "kept": dets.boxes[keep], "first": dets[0]}, out)


if __name__ == "__main__":
    main(sys.argv[1])
