import sys
import tempfile

import torch

from blocks import build_block
from torch.export import Dim


def main(out):
    frozen = torch.export.export(build_block(), (torch.ones(2, 3, 8, 8),), dynamic_shapes=({0: Dim.DYNAMIC, 1: Dim.AUTO, 2: Dim.AUTO, 3: Dim.AUTO},))
    with tempfile.TemporaryDirectory() as d:
        path = f"{d}/block_frozen.pt"
        torch.export.save(frozen, path)
        served = torch.export.load(path).module()
        g = torch.Generator().manual_seed(2)
        outputs = [served(torch.randn(2, 3, 8, 8, generator=g)), served(torch.randn(3, 3, 8, 8, generator=g))]
        torch.save(outputs, out)


if __name__ == "__main__":
    main(sys.argv[1])
