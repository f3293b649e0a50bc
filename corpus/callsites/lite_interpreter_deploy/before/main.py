"""Write the mobile program, then run it from Python the way the app's tests do."""
import sys

import torch
from torch.jit.mobile import _load_for_lite_interpreter

import deploy


def main(out):
    deploy.deploy("spotter.ptl")
    spotter = _load_for_lite_interpreter("spotter.ptl")
    torch.manual_seed(1)
    results = {}
    for batch, frames in [(2, 20), (5, 20), (3, 33)]:
        results[f"{batch}x{frames}"] = spotter(torch.randn(batch, frames, 4))
    torch.save(results, out)


if __name__ == "__main__":
    main(sys.argv[1])
