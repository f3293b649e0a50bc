import sys
import tempfile

import torch

from blocks import build_block


def main(out):
    frozen = torch.jit.freeze(torch.jit.script(build_block()))
    with tempfile.TemporaryDirectory() as d:
        path = f"{d}/block_frozen.pt"
        torch.jit.save(frozen, path)
        served = torch.jit.load(path)
        g = torch.Generator().manual_seed(2)
        outputs = [served(torch.randn(2, 3, 8, 8, generator=g)), served(torch.randn(3, 3, 8, 8, generator=g))]
        torch.save(outputs, out)


if __name__ == "__main__":
    main(sys.argv[1])
