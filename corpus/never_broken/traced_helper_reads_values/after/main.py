"""Trace the head on one batch of boxes, then run it on boxes of other lengths."""
import sys

import torch

from roi import RoiHead


def main(out):
    torch.manual_seed(0)
    head = RoiHead().eval()
    feats = torch.randn(3, 10, 6)
    boxes = torch.tensor([[0, 4], [2, 9], [1, 3]])
    traced = torch.jit.trace(head, (feats, boxes))
    other = torch.tensor([[5, 10], [0, 1], [3, 8]])
    with torch.no_grad():
        torch.save({"example": traced(feats, boxes), "other": traced(feats, other)}, out)


if __name__ == "__main__":
    main(sys.argv[1])
