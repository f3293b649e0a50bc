"""Traces the block, saves the trace, and runs the saved file on a few batches."""
import sys

import torch

from blocks import Block


def main(out):
    torch.manual_seed(0)
    block = Block().eval()
    example = torch.randn(4, 8)
    traced = torch.jit.trace(block, example)
    torch.jit.save(traced, "block.pt")
    loaded = torch.jit.load("block.pt")
    with torch.no_grad():
        torch.save([loaded(torch.randn(4, 8)) for _ in range(3)], out)


if __name__ == "__main__":
    main(sys.argv[1])
